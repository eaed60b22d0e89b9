//! Every registered engine, built from a fuzzer-chosen table, must agree with
//! the reference trie on every range boundary and on random addresses, and
//! stay in agreement after a fuzzer-chosen batch of changes.
#![no_main]

mod common;

use fibkit::registry::EngineFamily;
use libfuzzer_sys::fuzz_target;

fn check<A: EngineFamily>(data: &[u8], width: usize, ipv6: bool) {
    let (rib, changes) = common::table_and_changes::<A>(data, width);
    // The default layouts build every table: any error is a finding.
    for info in common::fuzzed_engines(ipv6) {
        common::check_spec(info.name, &rib, &changes, false);
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&family, body)) = data.split_first() else { return };
    if family & 1 == 0 {
        check::<u32>(body, 4, false);
    } else {
        check::<u128>(body, 16, true);
    }
});
