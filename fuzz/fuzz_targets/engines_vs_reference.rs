//! Every registered engine, built from a fuzzer-chosen table, must agree with
//! the reference trie on every range boundary and on random addresses, and
//! stay in agreement after a fuzzer-chosen batch of changes.
#![no_main]

use fibkit::{verify, Addr, Change, EngineFamily, LocalFib, Prefix, Rib, ENGINES};
use libfuzzer_sys::fuzz_target;

/// Reads (address, length, label) records of `width` address bytes + 2.
fn records<A: Addr>(data: &[u8], width: usize) -> Vec<(Prefix<A>, u32)> {
    data.chunks_exact(width + 2)
        .map(|chunk| {
            let addr = chunk[..width].iter().fold(0u128, |acc, &b| acc << 8 | b as u128);
            let plen = chunk[width] % (A::BITS + 1);
            (Prefix::new_masked(A::from_u128(addr), plen), chunk[width + 1] as u32)
        })
        .collect()
}

fn check<A: EngineFamily>(data: &[u8], width: usize, ipv6: bool) {
    let half = data.len() / 2;
    let rib = Rib::from_pairs(records::<A>(&data[..half], width));
    let changes: Vec<Change<A>> = records::<A>(&data[half..], width)
        .into_iter()
        .map(|(prefix, label)| if label % 3 == 0 { Change::Withdraw(prefix) } else { Change::Announce(prefix, label) })
        .collect();
    // dir24-8 fills 64 MiB per build (about 20 builds a second): fuzzing it
    // here would starve the others; the property tests cover it.
    let engines = ENGINES.iter().filter(|info| info.name != "dir24-8");
    for info in engines.filter(|info| if ipv6 { info.ipv6 } else { info.ipv4 }) {
        let mut engine = LocalFib::<A>::new(info.name, rib.clone())
            .unwrap_or_else(|e| panic!("{}: {e}", info.name));
        let report = verify(&engine, &rib, 64, 1);
        assert!(report.ok(), "{}: {:?}", info.name, report.mismatches);
        engine.apply(&changes).unwrap_or_else(|e| panic!("{}: {e}", info.name));
        let report = verify(&engine, engine.rib(), 64, 2);
        assert!(report.ok(), "{} after changes: {:?}", info.name, report.mismatches);
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
