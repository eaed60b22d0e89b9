//! The failed-update path of every engine: an engine built with a layout
//! too small for what a fuzzer-chosen batch adds (CPE tries of few levels
//! and short strides, DXR's and the LC-trie's layouts on whatever comes)
//! takes the batch through `LocalFib::apply` and `Fib::apply`. The batch either applies, and the engine answers the new
//! table everywhere, or fails, and the engine and the reference table
//! answer the old one everywhere: never a mix. "Everywhere" is every range
//! boundary (and its neighbours) of both tables plus random addresses.
#![no_main]

mod common;

use fibkit::verify::check_addresses;
use fibkit::{Addr, Change, Fib, LocalFib, Lookup, Rib};
use fibkit::registry::EngineFamily;
use libfuzzer_sys::fuzz_target;

/// Layouts with small limits, per family. dir24-8 (whose limit is its
/// group count) fills 64 MiB per build, a few builds a second under the
/// fuzzer: `tests/hostile.rs` pushes it past its limit instead.
const SPECS_V4: &[&str] = &[
    "cpe:levels=2,cap=12",
    "cpe:levels=2,cap=12,nopush",
    "cpe:levels=3,cap=8",
    "cpe:levels=3,cap=10,fixed",
    "cpe:levels=2,cap=16,packed",
    "dxr:k=16",
    "lctrie",
];
const SPECS_V6: &[&str] = &[
    "cpe:levels=4,cap=24",
    "cpe:levels=5,cap=20,nopush",
    "cpe:levels=6,cap=16,fixed",
    "lctrie",
];

fn records<A: Addr>(data: &[u8], width: usize) -> impl Iterator<Item = Change<A>> + '_ {
    data.chunks_exact(width + 2).map(move |chunk| {
        let prefix = common::prefix::<A>(chunk, width);
        match chunk[width + 1] {
            0 => Change::Withdraw(prefix),
            label => Change::Announce(prefix, label as u32),
        }
    })
}

/// Addresses where `engine` and `expected` disagree, among the boundaries
/// of `old` and `new` and random addresses.
fn disagreements<A: Addr>(
    engine: &impl Lookup<A>,
    expected: &Rib<A>,
    old: &Rib<A>,
    new: &Rib<A>,
) -> Vec<A> {
    let mut addrs = check_addresses(old, 32, 1);
    addrs.extend(check_addresses(new, 32, 2));
    addrs
        .into_iter()
        .filter(|&addr| engine.lookup(addr) != expected.lookup(addr))
        .take(5)
        .collect()
}

fn check<A: EngineFamily>(spec: &str, data: &[u8], width: usize) {
    let Some((&table_len, body)) = data.split_first() else { return };
    let split = (table_len as usize * (width + 2)).min(body.len());
    let old = Rib::from_pairs(records::<A>(&body[..split], width).filter_map(|c| match c {
        Change::Announce(prefix, label) => Some((prefix, label)),
        Change::Withdraw(_) => None,
    }));
    let batch: Vec<Change<A>> = records(&body[split..], width).collect();
    let mut new = old.clone();
    for &change in &batch {
        new.apply(change);
    }
    // A table the layout cannot take to begin with is not this test's case.
    let Ok(mut local) = LocalFib::<A>::new(spec, old.clone()) else { return };
    let expected = match local.apply(&batch) {
        Ok(_) => &new,
        Err(_) => {
            let rib: Vec<_> = local.rib().iter().collect();
            assert_eq!(rib, old.iter().collect::<Vec<_>>(), "{spec}: the failed batch changed the table");
            &old
        }
    };
    let wrong = disagreements(&local, expected, &old, &new);
    assert!(wrong.is_empty(), "{spec}: wrong answers after the batch at {wrong:?}");

    let Ok(shared) = Fib::<A>::new(spec, old.clone()) else { return };
    let expected = match shared.apply(&batch) {
        Ok(_) => &new,
        Err(_) => &old,
    };
    shared.with_rib(|rib| {
        assert_eq!(rib.iter().collect::<Vec<_>>(), expected.iter().collect::<Vec<_>>(), "{spec} (Fib)")
    });
    let wrong = disagreements(&*shared.snapshot(), expected, &old, &new);
    assert!(wrong.is_empty(), "{spec} (Fib): wrong answers after the batch at {wrong:?}");
}

fuzz_target!(|data: &[u8]| {
    let Some((&control, body)) = data.split_first() else { return };
    if control & 0x80 == 0 {
        check::<u32>(SPECS_V4[control as usize % SPECS_V4.len()], body, 4);
    } else {
        check::<u128>(SPECS_V6[control as usize % SPECS_V6.len()], body, 16);
    }
});
