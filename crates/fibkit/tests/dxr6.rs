//! `dxr6`-specific tests: the batch lookup at every slice length, labels
//! beyond 16 bits, generated update streams replayed through `LocalFib`,
//! bad specs and a table the layout cannot encode.

mod common;

use common::*;
use fibkit::engine::{EngineConfig, Updater};
use fibkit::engines::dxr6::{Dxr6Config, Dxr6Updater};
use fibkit::trace::generate_changes;
use fibkit::verify::check_addresses;
use fibkit::verify::verify;
use fibkit::{build, Label, LocalFib, Lookup, Prefix, Rib};

/// `lookup_batch` on every slice length 0..300, at several offsets, equals
/// the per-key lookup (groups of 32 keys, the next group's prefetch, and
/// the tail shorter than a group).
fn check_batch_lengths(spec: &str, rib: &Rib<u128>) {
    let engine = build(spec, rib).unwrap();
    let addrs = check_addresses(rib, 5_000, 11);
    let want: Vec<Option<Label>> = addrs.iter().map(|&a| engine.lookup(a)).collect();
    for (i, &addr) in addrs.iter().enumerate().step_by(7) {
        assert_eq!(want[i], rib.lookup(addr), "{spec} at {addr:#x}");
    }
    let mut out = vec![None; 300];
    for len in 0..300 {
        for offset in [0, 1, 33, addrs.len().saturating_sub(len + 1)] {
            let keys = &addrs[offset..offset + len];
            out.fill(Some(u32::MAX));
            engine.lookup_batch(keys, &mut out[..len]);
            assert_eq!(
                &out[..len],
                &want[offset..offset + len],
                "{spec}: length {len} at {offset}"
            );
        }
    }
}

#[test]
fn batch_matches_per_key_at_every_length() {
    for name in ["dfz-v6-nh.txt.gz", "dfz-v6-asn.txt.gz"] {
        let rib = &shared_table(name).v6;
        check_batch_lengths("dxr6", rib);
        check_batch_lengths("dxr6:k=8,stride=3,density=1", rib);
    }
}

/// More than 2^16 distinct labels: leaves whose label indices need u32.
#[test]
fn labels_beyond_16_bits_use_wide_leaves() {
    let base = 0x2001_0db8u128 << 96;
    let mut pairs = Vec::new();
    for i in 0..70_000u128 {
        let label = (i as u32).wrapping_mul(2_654_435_761);
        pairs.push((Prefix::new_masked(base | i << 72, 56), label));
        // Nested routes, so that chunks hold several ranges (leaves).
        pairs.push((Prefix::new_masked(base | i << 72 | 1 << 68, 60), label ^ 1));
        if i.is_multiple_of(5) {
            pairs.push((Prefix::new_masked(base | i << 72 | 3 << 40, 88), 7));
            pairs.push((Prefix::new_masked(base | i << 72 | 5, 128), 8));
        }
    }
    pairs.push((Prefix::default_route(), u32::MAX));
    let rib = Rib::from_pairs(pairs);
    for spec in ["dxr6", "dxr6:k=8,stride=4,density=8"] {
        let fib = LocalFib::<u128, Dxr6Updater>::with_spec(spec, rib.clone()).unwrap();
        let stats = fib.stats();
        assert!(stats.labels > 65_536, "{stats:?}");
        assert!(stats.wide_label_leaves > 0, "{stats:?}");
        let report = verify(fib.snapshot(), &rib, 100_000, 3);
        assert!(report.ok(), "{spec}: {}", report.mismatches[0]);
        check_batch_lengths(spec, &rib);
    }
}

#[test]
fn rejects_bad_specs_and_ipv4() {
    let rib = Rib::<u128>::new();
    for bad in [
        "dxr6:k=7",
        "dxr6:k=25",
        "dxr6:stride=0",
        "dxr6:stride=17",
        "dxr6:density=0",
        "dxr6:density=65",
        "dxr6:leaf=1",
        "dxr6:align=0",
        "dxr6:align=3",
        "dxr6:align=16",
    ] {
        assert!(build(bad, &rib).is_err(), "{bad}");
    }
    let err = build("dxr6", &Rib::<u32>::new()).err().unwrap().to_string();
    assert!(err.contains("does not support IPv4"), "{err}");
    assert_eq!(
        LocalFib::<u128>::new("dxr6:density=4,k=12", rib)
            .unwrap()
            .spec(),
        "dxr6:k=12,stride=16,density=4"
    );
}

/// Applies `changes` in batches of `batch` changes through `LocalFib`,
/// checking against the reference every `check_every` batches and at the
/// end.
fn replay(spec: &str, rib: &Rib<u128>, changes: &[fibkit::Change<u128>], batch: usize) {
    let mut fib = LocalFib::<u128, Dxr6Updater>::with_spec(spec, rib.clone()).unwrap();
    let batches = changes.len().div_ceil(batch);
    let check_every = (batches / 8).max(1);
    for (i, changes) in changes.chunks(batch).enumerate() {
        fib.apply(changes).unwrap();
        if i.is_multiple_of(check_every) {
            // The changed prefixes' own boundaries would miss stale chunks
            // elsewhere, so every range boundary of the table is checked.
            let report = verify(fib.snapshot(), fib.rib(), 2_000, i as u64);
            assert!(
                report.ok(),
                "{spec} after batch {i}: {}",
                report.mismatches[0]
            );
        }
    }
    let report = verify(fib.snapshot(), fib.rib(), 50_000, 99);
    assert!(report.ok(), "{spec} at the end: {}", report.mismatches[0]);
    // Free space is compacted by a rebuild past a quarter of an array, so
    // the patched snapshot stays near the size of a fresh build.
    let fresh = build(spec, fib.rib()).unwrap().memory_bytes();
    let patched = fib.snapshot().memory_bytes();
    assert!(
        patched <= 2 * fresh + (256 << 10),
        "{spec}: {patched} bytes patched, {fresh} fresh: {:?}",
        fib.stats()
    );
}

/// A generated stream (nested, covering, /0, /128, relabels, withdrawals)
/// onto the DFZ table, one change per batch and in batches of 100.
#[test]
fn generated_stream_on_dfz() {
    let rib = &shared_table("dfz-v6-nh.txt.gz").v6;
    let changes = generate_changes(rib, 4_000, 1);
    for spec in ["dxr6", "dxr6:k=8,stride=3"] {
        replay(spec, rib, &changes[..1_000], 1);
        replay(spec, rib, &changes, 100);
    }
}

/// Long streams on small tables: nearly every change reshapes nodes and
/// the free lists and compaction are exercised.
#[test]
fn generated_streams_on_small_tables() {
    for (seed, rib) in small_tables_v6().iter().enumerate() {
        let changes = generate_changes(rib, 3_000, seed as u64);
        for spec in ["dxr6", "dxr6:k=8,stride=2,density=1"] {
            replay(spec, rib, &changes, 1);
            replay(spec, rib, &changes, 17);
        }
    }
}

/// More leaf lines than the line field names at `align=1`: 600,000 host
/// routes, each a leaf filling its own line. Unless the spec states
/// `align`, the build raises it to 2 and says so in its layout; stated,
/// `align=1` is an error naming `align=2` and the spec without `align`.
#[test]
fn leaves_past_the_line_field_double_align() {
    let rib = host_routes_one_line_each_v6(600_000);
    let config = Dxr6Config::parse("dxr6").unwrap();
    let (updater, built) = Dxr6Updater::build(&config, &rib).expect("the default raises align");
    assert_eq!(
        updater.config().to_string(),
        "dxr6:k=16,stride=16,density=2,align=2"
    );
    assert_eq!(updater.stats(&built).align, 2);
    let report = verify(&built, &rib, 20_000, 3);
    assert!(report.ok(), "dxr6: {}", report.mismatches[0]);
    let stated = build("dxr6:k=16,stride=16,density=2,align=2", &rib).unwrap();
    let addrs = check_addresses(&rib, 20_000, 5);
    for &addr in addrs.iter().step_by(3) {
        assert_eq!(stated.lookup(addr), built.lookup(addr), "{addr:#x}");
    }
    let err = build("dxr6:align=1", &rib)
        .err()
        .expect("align=1 must not build")
        .to_string();
    assert!(
        err.contains("2^19 lines")
            && err.contains("`dxr6:k=16,stride=16,density=2,align=2` holds twice as many")
            && err.contains("`dxr6:k=16,stride=16,density=2` raises align"),
        "{err}"
    );
}

/// Updates that add leaves past the line field at `align=1`: patches of
/// host routes, each in a root chunk of its own and a line of its own,
/// the last of which finds no line to name, rebuild in place at
/// `align=2`; checked along the way and on every range boundary at the
/// end.
#[test]
fn updates_past_the_line_field_double_align() {
    let rib = host_routes_one_line_each_v6(500_000);
    let mut fib = LocalFib::<u128, Dxr6Updater>::with_spec("dxr6", rib).unwrap();
    assert_eq!(fib.spec(), "dxr6:k=16,stride=16,density=2");
    // Root entries 1.. hold nothing yet: each new route is one patched
    // chunk (2,000 per batch, a patch: fewer than a quarter of the root).
    let added: Vec<fibkit::Change<u128>> = (1..=30_000u128)
        .map(|i| fibkit::Change::Announce(Prefix::new_masked(i << 112 | 1, 128), i as u32 % 7))
        .collect();
    for (i, batch) in added.chunks(2_000).enumerate() {
        let compactions = fib.stats().compactions;
        fib.apply(batch).unwrap();
        if fib.stats().compactions > compactions {
            // The batch that outgrew the line field rebuilt at align=2.
            assert_eq!(fib.stats().align, 2, "batch {i}");
        }
        if i % 5 == 4 {
            let report = verify(fib.snapshot(), fib.rib(), 2_000, i as u64);
            assert!(report.ok(), "after batch {i}: {}", report.mismatches[0]);
        }
    }
    assert_eq!(fib.spec(), "dxr6:k=16,stride=16,density=2,align=2");
    assert_eq!(fib.stats().compactions, 1, "{:?}", fib.stats());
    let report = verify(fib.snapshot(), fib.rib(), 20_000, 7);
    assert!(report.ok(), "at the end: {}", report.mismatches[0]);
}
