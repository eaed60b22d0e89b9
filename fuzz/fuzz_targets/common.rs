//! What the targets that check engines against the reference table share:
//! reading a table and a batch of changes from fuzzer bytes, and the check
//! of one spec on them. Not every target uses every item.
#![allow(dead_code)]

use fibkit::{Addr, Change, LocalFib, Prefix, Rib};
use fibkit::engine::BuildError;
use fibkit::registry::{EngineFamily, EngineInfo, ENGINES};
use fibkit::verify::verify;

/// The prefix a record starts with: `width` address bytes, most
/// significant first, then a length byte (taken modulo the family's
/// bits + 1).
pub fn prefix<A: Addr>(record: &[u8], width: usize) -> Prefix<A> {
    let addr = record[..width].iter().fold(0u128, |acc, &b| acc << 8 | b as u128);
    Prefix::new_masked(A::from_u128(addr), record[width] % (A::BITS + 1))
}

/// Reads (address, length, label) records of `width` address bytes + 2.
pub fn records<A: Addr>(data: &[u8], width: usize) -> Vec<(Prefix<A>, u32)> {
    data.chunks_exact(width + 2)
        .map(|chunk| (prefix(chunk, width), chunk[width + 1] as u32))
        .collect()
}

/// The registered engines of a family under their default specs, but for
/// two that would starve the others: dir24-8 fills 64 MiB per build and
/// per `Fib` batch (a few a second under the fuzzer), and `auto` times its
/// candidates on every build (0.7 s for a table of five prefixes). The
/// property and hostile-input tests cover both, and `auto` builds one of
/// the engines fuzzed.
pub fn fuzzed_engines(ipv6: bool) -> impl Iterator<Item = &'static EngineInfo> {
    ENGINES
        .iter()
        .filter(move |info| if ipv6 { info.ipv6 } else { info.ipv4 })
        .filter(|info| !matches!(info.name, "dir24-8" | "auto"))
}

/// A table from the first half of `data` and a batch of changes from the
/// second (a label divisible by 3 withdraws its prefix).
pub fn table_and_changes<A: Addr>(data: &[u8], width: usize) -> (Rib<A>, Vec<Change<A>>) {
    let half = data.len() / 2;
    let rib = Rib::from_pairs(records::<A>(&data[..half], width));
    let changes = records::<A>(&data[half..], width)
        .into_iter()
        .map(|(prefix, label)| if label % 3 == 0 { Change::Withdraw(prefix) } else { Change::Announce(prefix, label) })
        .collect();
    (rib, changes)
}

/// `spec`, built from `rib`, agrees with it on every range boundary and on
/// random addresses, and still does after `changes`. With `limits_allowed`
/// a layout limit (the documented error of a layout too small for the
/// table) ends the check, and a batch it refuses must leave the reference
/// table as it was; any other error fails.
pub fn check_spec<A: EngineFamily>(spec: &str, rib: &Rib<A>, changes: &[Change<A>], limits_allowed: bool) {
    let allowed = |e: &BuildError| limits_allowed && matches!(e, BuildError::Limit { .. });
    let mut engine = match LocalFib::<A>::new(spec, rib.clone()) {
        Ok(engine) => engine,
        Err(e) if allowed(&e) => return,
        Err(e) => panic!("{spec}: {e}"),
    };
    let report = verify(&engine, rib, 64, 1);
    assert!(report.ok(), "{spec}: {:?}", report.mismatches);
    match engine.apply(changes) {
        Ok(_) => {}
        // All or nothing: the table answers as before the batch.
        Err(e) if allowed(&e) => assert_eq!(
            engine.rib().iter().collect::<Vec<_>>(),
            rib.iter().collect::<Vec<_>>(),
            "{spec}: a refused batch changed the reference table"
        ),
        Err(e) => panic!("{spec}: {e}"),
    }
    let report = verify(&engine, engine.rib(), 64, 2);
    assert!(report.ok(), "{spec} after changes: {:?}", report.mismatches);
}
