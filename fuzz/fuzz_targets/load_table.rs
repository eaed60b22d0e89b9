//! Any bytes, as any table format, with any loader options: an error or a
//! table, never a panic.
#![no_main]

use fibkit::load::{read_table, Format, Input, LoadOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&control, body)) = data.split_first() else { return };
    let format = match control & 7 {
        0 => Some(Format::Table),
        1 => Some(Format::NextHop),
        2 => Some(Format::Mrt),
        3 => Some(Format::Updates),
        4 => Some(Format::Pfx2as),
        5 => Some(Format::Bgpdump),
        _ => None,
    };
    let options = LoadOptions {
        format,
        skip_bad: control & 8 != 0,
        lenient: control & 16 != 0,
        ..LoadOptions::default()
    };
    if let Ok(input) = Input::from_bytes(body.to_vec(), "fuzz") {
        if let Ok(table) = read_table(input, &options) {
            // A loaded table must be internally consistent.
            assert_eq!(table.v4.iter().count(), table.v4.len());
            assert_eq!(table.v6.iter().count(), table.v6.len());
        }
    }
});
