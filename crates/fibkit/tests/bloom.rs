//! Bloom-filter engine tests: random update sequences against the reference
//! table (both searches, small filters whose false positives abound), the
//! LINX IPv4 update stream and generated IPv6 change streams replayed onto
//! the DFZ tables, batch lookups of every length, the weighted tree, the
//! counters, and bad parameters.

mod common;

use common::*;
use fibkit::engine::{EngineConfig, Updater};
use fibkit::engines::bloom::{Bloom, BloomConfig, BloomUpdater};
use fibkit::registry::EngineFamily;
use fibkit::trace::{generate, generate_changes, TraceKind};
use fibkit::{build, Label, LocalFib, Lookup, Rib};
use proptest::prelude::*;

/// Both searches, at the default filter and at one block with few bits per
/// key (most filter tests are false positives there).
const UPDATE_SPECS: &[&str] = &[
    "bloom",
    "bloom:search=linear",
    "bloom:search=guided,bits=512,k=9",
    "bloom:search=linear,bits=1024,k=2",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn random_updates_v4(entries in random_table_v4(), batches in random_batches_v4(32)) {
        replay_batches(&rib_from_triples(&entries), &batches, UPDATE_SPECS);
    }

    #[test]
    fn random_updates_v6(entries in random_table_v6(), batches in random_batches_v6(128)) {
        replay_batches(&rib_from_triples(&entries), &batches, UPDATE_SPECS);
    }
}

/// The LINX IPv4 update stream, in per-second batches, onto the DFZ table:
/// the whole table is checked at a few points and at the end.
#[test]
fn linx_update_replay() {
    let table = shared_table("dfz-v4-nh.txt.gz");
    let updates = linx_updates(table);
    let batches = updates.v4_batches_by_time();
    assert!(batches.iter().map(Vec::len).sum::<usize>() > 20_000);
    let checkpoints = [batches.len() / 3, 2 * batches.len() / 3, batches.len() - 1];
    for spec in ["bloom", "bloom:search=linear"] {
        let mut fib = LocalFib::<u32>::new(spec, table.v4.clone()).unwrap();
        let mut rebuilds = 0;
        for (i, batch) in batches.iter().enumerate() {
            rebuilds += fib.apply(batch).unwrap().rebuilt.is_some() as usize;
            if checkpoints.contains(&i) {
                assert_verified(&fib, fib.rib(), 20_000, &format!("{spec} after batch {i}"));
            }
        }
        // Rebuilds are for new lengths and a filter grown too full, not the rule.
        assert!(rebuilds * 10 < batches.len(), "{spec}: {rebuilds} rebuilds");
    }
}

/// Generated IPv6 change streams (nested, covering, default and host routes,
/// relabels, withdrawals) onto the DFZ IPv6 table.
#[test]
fn ipv6_change_streams() {
    let rib = &shared_table("dfz-v6-nh.txt.gz").v6;
    let changes = generate_changes(rib, 1_500, 11);
    for spec in ["bloom", "bloom:search=linear", "bloom:bits=65536,k=9"] {
        let mut fib = LocalFib::<u128>::new(spec, rib.clone()).unwrap();
        for (i, batch) in changes.chunks(100).enumerate() {
            fib.apply(batch).unwrap();
            if i % 5 == 4 {
                assert_verified(&fib, fib.rib(), 2_000, &format!("{spec} after batch {i}"));
            }
        }
    }
}

/// Builds `spec` on `rib` and checks that `lookup_batch` over each slice
/// `(offset, len)` of `addrs` answers as the per-key lookups do.
fn batches_agree<A: EngineFamily>(
    spec: &str,
    rib: &Rib<A>,
    addrs: &[A],
    slices: impl Iterator<Item = (usize, usize)>,
) {
    let engine = build(spec, rib).unwrap();
    let want: Vec<Option<Label>> = addrs.iter().map(|&a| engine.lookup(a)).collect();
    for (offset, len) in slices {
        let mut out = vec![Some(u32::MAX); len];
        engine.lookup_batch(&addrs[offset..offset + len], &mut out);
        assert_eq!(
            out,
            want[offset..offset + len],
            "{spec}: batch of {len} at {offset}"
        );
    }
}

/// [`batches_agree`] for every spec of `specs` on dfz-v4-nh and dfz-v6-nh,
/// with `count` mixed keys of each family drawn with `seed`.
fn batches_agree_on_both<I: Iterator<Item = (usize, usize)>>(
    specs: &[&str],
    count: usize,
    seed: u64,
    slices: impl Fn() -> I,
) {
    let rib = &shared_table("dfz-v4-nh.txt.gz").v4;
    let addrs = generate(rib, &TraceKind::Mix, count, seed).unwrap();
    let rib6 = &shared_table("dfz-v6-nh.txt.gz").v6;
    let addrs6 = generate(rib6, &TraceKind::Mix, count, seed).unwrap();
    for spec in specs {
        batches_agree(spec, rib, &addrs, slices());
        batches_agree(spec, rib6, &addrs6, slices());
    }
}

/// Batch lookups of every length from 0 to 300 agree with per-key lookups,
/// on a table with false positives (small filter) and without.
#[test]
fn batches_of_every_length() {
    batches_agree_on_both(
        &["bloom", "bloom:search=linear", "bloom:bits=4096,k=9"],
        300,
        3,
        || (0..=300).map(|len| (0, len)),
    );
}

/// Batches longer than the chunk whose fallbacks run together (1,024
/// keys) agree with per-key lookups across the chunk boundaries, with
/// many fallbacks (a small filter) and few.
#[test]
fn long_batches_across_chunks() {
    batches_agree_on_both(
        &[
            "bloom",
            "bloom:search=linear",
            "bloom:bits=4096,k=9",
            "bloom:search=linear,bits=4096,k=2",
        ],
        5000,
        5,
        || {
            [1023, 1024, 1025, 2047, 2049, 4993]
                .into_iter()
                .flat_map(|len| [(0, len), (7, len)])
        },
    );
}

/// The bloom snapshot itself (for its counting path).
fn snapshot(spec: &str, rib: &Rib<u32>) -> Bloom<u32> {
    let config = BloomConfig::parse(spec).unwrap();
    BloomUpdater::<u32>::build(&config, rib).unwrap().1
}

/// The weighted tree verifies, and on the trace it was built for walks no
/// more filter bits than the balanced tree.
#[test]
fn weighted_tree_from_a_trace() {
    let rib = &shared_table("dfz-v4-nh.txt.gz").v4;
    let trace = generate(rib, &TraceKind::ByCount, 50_000, 5).unwrap();
    let path = std::env::temp_dir().join(format!("fibkit-bloom-trace-{}", std::process::id()));
    let mut file = std::fs::File::create(&path).unwrap();
    fibkit::trace::write_binary_trace(&mut file, &trace).unwrap();
    drop(file);
    let weighted_spec = format!("bloom:tree=trace:{}", path.display());
    let weighted = snapshot(&weighted_spec, rib);
    let balanced = snapshot("bloom", rib);
    assert_verified(&weighted, rib, 100_000, &weighted_spec);
    let (w, b) = (
        weighted.count_lookups(&trace),
        balanced.count_lookups(&trace),
    );
    assert!(w.hashes <= b.hashes, "weighted {w:?}, balanced {b:?}");
    // An IPv6 build from an IPv4 trace has no address to weigh.
    let err = build::<u128>(&weighted_spec, &shared_table("dfz-v6-nh.txt.gz").v6)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("no IPv6 address"), "{err}");
    std::fs::remove_file(&path).unwrap();
    let err = build::<u32>(&weighted_spec, rib).err().unwrap().to_string();
    assert!(err.contains("cannot read the trace"), "{err}");
}

/// The counters count what the paper counts: a linear lookup hashes at least
/// once per length down to its match, a guided one once per tree level.
#[test]
fn counters_count_the_work() {
    let rib = &shared_table("dfz-v4-nh.txt.gz").v4;
    let trace = generate(rib, &TraceKind::RandIp, 20_000, 9).unwrap();
    let linear = snapshot("bloom:search=linear", rib).count_lookups(&trace);
    let guided = snapshot("bloom", rib).count_lookups(&trace);
    assert_eq!(linear.lookups, 20_000);
    assert_eq!(linear.fallbacks, 0);
    assert!(linear.hashes_per_lookup() >= 1.0);
    assert!(linear.bit_lookups >= linear.hashes);
    assert!(guided.hashes_per_lookup() >= 4.0);
    assert!(guided.exact_lookups <= guided.lookups + guided.fallbacks * 32);
    assert!(guided.hashes < linear.hashes, "{guided:?} vs {linear:?}");
}

#[test]
fn bad_parameters_are_errors() {
    let rib = &shared_table("dfz-v4-nh.txt.gz").v4;
    for (spec, expected) in [
        ("bloom:k=0", "at least one hash function"),
        ("bloom:bits=0", "at least one bit"),
        ("bloom:fill=120", "below 100%"),
        ("bloom:k=5", "k must be at least 6"),
        (
            "bloom:tree=trace:/nonexistent/fibkit-trace",
            "cannot read the trace",
        ),
    ] {
        let err = build::<u32>(spec, rib).err().unwrap().to_string();
        assert!(err.contains(expected), "{spec}: {err}");
    }
}
