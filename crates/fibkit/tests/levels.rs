//! `levels` engine tests beyond the shared suite: trees weighted by a trace
//! summary (built from the shared tables and checked like any engine), the
//! LINX IPv4 update stream and generated change streams replayed through a
//! `LocalFib`, batch lookups of every length, and bad summaries.

mod common;

use common::*;
use fibkit::model::TraceSummary;
use fibkit::registry::{EngineFamily, StatsV4};
use fibkit::trace::{generate, generate_changes, TraceKind};
use fibkit::{build, Change, Label, LocalFib, Prefix, Rib};

/// A summary of a seeded `kind` trace against `rib`, written to a
/// temporary file whose path is returned.
fn summary_file<A: EngineFamily>(rib: &Rib<A>, kind: &str, name: &str) -> std::path::PathBuf {
    let trace = generate(rib, &kind.parse().unwrap(), 200_000, 7).unwrap();
    let summary = TraceSummary::from_trace(rib, &trace);
    let path = std::env::temp_dir().join(format!("fibkit-levels-{}-{name}", std::process::id()));
    summary.write(&path).unwrap();
    path
}

#[test]
fn weighted_trees_verify_on_the_shared_tables() {
    let v4 = &shared_table("dfz-v4-nh.txt.gz").v4;
    for kind in ["zipf:1.0", "randip"] {
        let path = summary_file(v4, kind, &format!("v4-{kind}"));
        for strides in ["16", "8+8", "20+4+4"] {
            let spec = format!("levels:strides={strides},weights={}", path.display());
            let engine = build(&spec, v4).unwrap();
            assert_verified(&engine, v4, 100_000, &spec);
        }
        std::fs::remove_file(path).unwrap();
    }
    let v6 = &shared_table("dfz-v6-nh.txt.gz").v6;
    let path = summary_file(v6, "randnet", "v6");
    let spec = format!("levels:strides=16+16,weights={}", path.display());
    let engine = build(&spec, v6).unwrap();
    assert_verified(&engine, v6, 100_000, &spec);
    std::fs::remove_file(path).unwrap();
}

#[test]
fn bad_summaries_are_named() {
    let v4 = &shared_table("dfz-v4-nh.txt.gz").v4;
    let missing = "levels:weights=/nonexistent/summary";
    let err = build(missing, v4).err().unwrap().to_string();
    assert!(err.contains("/nonexistent/summary"), "{err}");
    // A summary of another table matches nothing here.
    let other = Rib::<u32>::from_pairs([("192.0.2.0/24".parse().unwrap(), 1)]);
    let path = summary_file::<u32>(&other, "randip", "other");
    let spec = format!("levels:weights={}", path.display());
    let stranger = Rib::<u32>::from_pairs([("10.0.0.0/8".parse().unwrap(), 1)]);
    let err = build(&spec, &stranger).err().unwrap().to_string();
    assert!(err.contains("match no prefix"), "{err}");
    std::fs::remove_file(path).unwrap();
}

/// The LINX IPv4 update stream in per-second batches onto the DFZ table,
/// checked at a few points and at the end, unweighted and weighted.
#[test]
fn linx_update_replay() {
    let table = shared_table("dfz-v4-nh.txt.gz");
    let updates = linx_updates(table);
    let batches = updates.v4_batches_by_time();
    let checkpoints = [batches.len() / 3, 2 * batches.len() / 3, batches.len() - 1];
    let path = summary_file(&table.v4, "zipf:1.0", "linx");
    let weighted = format!("levels:strides=16+4+4,weights={}", path.display());
    for spec in ["levels", "levels:strides=20", weighted.as_str()] {
        let mut fib = LocalFib::<u32>::new(spec, table.v4.clone()).unwrap();
        let mut rebuilds = 0;
        for (i, batch) in batches.iter().enumerate() {
            rebuilds += fib.apply(batch).unwrap().rebuilt.is_some() as usize;
            if checkpoints.contains(&i) {
                assert_verified(&fib, fib.rib(), 20_000, &format!("{spec} after batch {i}"));
            }
        }
        assert!(rebuilds * 10 < batches.len(), "{spec}: {rebuilds} rebuilds");
    }
    std::fs::remove_file(path).unwrap();
}

/// Generated change streams (nested, covering, default and host routes,
/// withdrawals) onto both DFZ tables.
#[test]
fn generated_change_streams() {
    fn replay<A: EngineFamily>(spec: &str, rib: &Rib<A>) {
        let changes = generate_changes(rib, 1_500, 11);
        let mut fib = LocalFib::<A>::new(spec, rib.clone()).unwrap();
        for (i, batch) in changes.chunks(100).enumerate() {
            fib.apply(batch).unwrap();
            if i % 5 == 4 {
                assert_verified(&fib, fib.rib(), 2_000, &format!("{spec} after batch {i}"));
            }
        }
    }
    replay(
        "levels:strides=16+4+4",
        &shared_table("dfz-v4-nh.txt.gz").v4,
    );
    replay("levels:strides=8", &shared_table("dfz-v4-nh.txt.gz").v4);
    replay("levels:strides=16+16", &shared_table("dfz-v6-nh.txt.gz").v6);
}

#[test]
fn batches_of_every_length() {
    let rib = &shared_table("dfz-v4-nh.txt.gz").v4;
    let addrs = generate(rib, &TraceKind::Mix, 300, 3).unwrap();
    let engine = build("levels:strides=16+4+4", rib).unwrap();
    let want: Vec<Option<Label>> = addrs.iter().map(|&a| engine.lookup(a)).collect();
    for len in 0..=addrs.len() {
        let mut out = vec![None; len];
        engine.lookup_batch(&addrs[..len], &mut out);
        assert_eq!(out, want[..len], "length {len}");
    }
}

/// Host routes announced one by one into one first-level entry (each
/// change rebuilds that entry's tables, leaving the old ones behind) and
/// withdrawn again: the arrays fill with replaced tables and are compacted
/// in place, never by a rebuild of the engine, and stay bounded.
#[test]
fn host_route_storms_compact_in_place() {
    let mut rib = Rib::<u32>::new();
    rib.insert("10.0.0.0/8".parse().unwrap(), 1);
    rib.insert("10.1.0.0/16".parse().unwrap(), 2);
    for spec in ["levels", "levels:strides=16+8+8"] {
        let mut fib = LocalFib::<u32>::new(spec, rib.clone()).unwrap();
        let hosts: Vec<Prefix<u32>> = (0..3000u32)
            .map(|i| Prefix::new(0x0a01_0000 | (i * 7), 32).unwrap())
            .collect();
        let (mut most_entries, mut last_entries, mut compactions) = (0, 0, 0);
        for (i, host) in hosts.iter().enumerate() {
            let summary = fib
                .apply(&[Change::Announce(*host, 100 + i as u32 % 50)])
                .unwrap();
            assert_eq!(summary.rebuilt, None, "{spec}: announce {i}");
            let StatsV4::Levels(stats) = fib.stats() else {
                unreachable!("a levels spec")
            };
            most_entries = most_entries.max(stats.entries);
            compactions += (stats.entries < last_entries) as usize;
            last_entries = stats.entries;
        }
        assert!(compactions > 0, "{spec}: the storm never compacted");
        assert_verified(
            &fib,
            fib.rib(),
            5_000,
            &format!("{spec} after the announcements"),
        );
        for (i, host) in hosts.iter().enumerate() {
            let summary = fib.apply(&[Change::Withdraw(*host)]).unwrap();
            assert_eq!(summary.rebuilt, None, "{spec}: withdraw {i}");
        }
        assert_verified(
            &fib,
            fib.rib(),
            5_000,
            &format!("{spec} after the withdrawals"),
        );
        let fresh = LocalFib::<u32>::new(spec, fib.rib().clone()).unwrap();
        let (StatsV4::Levels(now), StatsV4::Levels(built)) = (fib.stats(), fresh.stats()) else {
            unreachable!("a levels spec")
        };
        // Compaction keeps the arrays within about twice a fresh build's.
        assert!(
            now.entries <= 2 * built.entries + 32 * 16 && most_entries < 1 << 22,
            "{spec}: {} entries after the storm, {} built, {most_entries} at most",
            now.entries,
            built.entries
        );
    }
}
