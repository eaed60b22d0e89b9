//! Any bytes as an update stream (text or MRT): an error or changes, never a
//! panic; the changes must apply to a table without a panic either.
#![no_main]

use fibkit::load::{read_updates, Format, Input, LoadOptions, NextHopTable};
use fibkit::Rib;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&control, body)) = data.split_first() else { return };
    let options = LoadOptions {
        format: match control & 3 {
            0 => Some(Format::Updates),
            1 => Some(Format::Mrt),
            _ => None,
        },
        skip_bad: control & 4 != 0,
        lenient: control & 8 != 0,
        ..LoadOptions::default()
    };
    let Ok(input) = Input::from_bytes(body.to_vec(), "fuzz") else { return };
    if let Ok(loaded) = read_updates(input, &options, NextHopTable::default()) {
        let (v4, v6) = loaded.changes_by_family();
        let mut rib4 = Rib::<u32>::new();
        let mut rib6 = Rib::<u128>::new();
        for change in v4 {
            rib4.apply(change);
        }
        for change in v6 {
            rib6.apply(change);
        }
    }
});
