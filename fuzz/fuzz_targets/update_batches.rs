//! Every registered engine, built from a fuzzer-chosen table and then fed
//! a fuzzer-chosen sequence of change batches, through `LocalFib` (patched
//! in place) and `Fib` (patched copies, published): after every batch both
//! agree with the reference table on every range boundary and on random
//! addresses.
#![no_main]

mod common;

use fibkit::{Addr, Change, Fib, LocalFib, Rib};
use fibkit::registry::EngineFamily;
use fibkit::verify::verify;
use libfuzzer_sys::fuzz_target;

/// A change record: address bytes, length, label, flags. Flags bit 0: a
/// withdrawal; bit 7: the last change of its batch.
fn change<A: Addr>(record: &[u8], width: usize) -> (Change<A>, bool) {
    let prefix = common::prefix::<A>(record, width);
    let flags = record[width + 2];
    let change = if flags & 1 == 1 {
        Change::Withdraw(prefix)
    } else {
        Change::Announce(prefix, record[width + 1] as u32)
    };
    (change, flags & 0x80 != 0)
}

fn check<A: EngineFamily>(data: &[u8], width: usize, ipv6: bool) {
    let Some((&table_len, records)) = data.split_first() else { return };
    let mut records = records.chunks_exact(width + 3).map(|r| change::<A>(r, width));
    let mut rib = Rib::new();
    for (change, _) in records.by_ref().take(table_len as usize) {
        rib.apply(change);
    }
    let mut batches = vec![Vec::new()];
    for (change, last) in records {
        batches.last_mut().unwrap().push(change);
        if last {
            batches.push(Vec::new());
        }
    }
    for info in common::fuzzed_engines(ipv6) {
        let mut local = LocalFib::<A>::new(info.name, rib.clone())
            .unwrap_or_else(|e| panic!("{}: {e}", info.name));
        let shared = Fib::<A>::new(info.name, rib.clone())
            .unwrap_or_else(|e| panic!("{}: {e}", info.name));
        for (index, batch) in batches.iter().enumerate() {
            local
                .apply(batch)
                .unwrap_or_else(|e| panic!("{} batch {index}: {e}", info.name));
            shared
                .apply(batch)
                .unwrap_or_else(|e| panic!("{} (Fib) batch {index}: {e}", info.name));
            let report = verify(&local, local.rib(), 32, index as u64);
            assert!(report.ok(), "{} batch {index}: {:?}", info.name, report.mismatches);
            let report = shared.with_rib(|rib| verify(&*shared.snapshot(), rib, 32, index as u64));
            assert!(report.ok(), "{} (Fib) batch {index}: {:?}", info.name, report.mismatches);
        }
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
