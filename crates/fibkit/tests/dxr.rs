//! DXR-specific tests: every layout on the full tables, labels beyond 16
//! bits, updates (random sequences and the LINX update stream).

mod common;

use std::time::Instant;

use common::*;
use fibkit::engine::{EngineConfig, Updater};
use fibkit::engines::dxr::{DxrConfig, DxrStats, DxrUpdater};
use fibkit::verify::check_addresses;
use fibkit::verify::verify;
use fibkit::{build, Change, Label, LocalFib, Lookup, Prefix, Rib};
use proptest::prelude::*;

/// Every layout the issue asks for: D{K}R for K = 16..24 and D{D}X{X}R for
/// D in {12, 14, 16}, K = 18..24.
fn all_layouts() -> Vec<String> {
    let mut specs: Vec<String> = (16..=24).map(|k| format!("dxr:k={k}")).collect();
    for d in [12, 14, 16] {
        for k in 18..=24 {
            specs.push(format!("dxr:d={d},x={}", k - d));
        }
    }
    specs
}

/// The statistics of `spec` built from `rib`.
fn stats_of(spec: &str, rib: &Rib<u32>) -> DxrStats {
    let config = DxrConfig::parse(spec).unwrap();
    let (updater, snapshot) = DxrUpdater::build(&config, rib).unwrap();
    updater.stats(&snapshot)
}

/// Checks every layout on one table; the reference answers are computed once
/// (every range boundary and its neighbours, plus 200,000 random addresses).
fn check_all_layouts(name: &'static str) {
    let rib = &shared_table(name).v4;
    let addrs = check_addresses(rib, 200_000, 0x5eed);
    let want: Vec<Option<Label>> = addrs.iter().map(|&a| rib.lookup(a)).collect();
    let mut batch = vec![None; addrs.len()];
    for spec in all_layouts() {
        let engine = build(&spec, rib).unwrap_or_else(|e| panic!("{name} {spec}: {e}"));
        engine.lookup_batch(&addrs, &mut batch);
        let mut failed = 0;
        for (i, &addr) in addrs.iter().enumerate() {
            let got = engine.lookup(addr);
            if got != want[i] || batch[i] != want[i] {
                failed += 1;
                if failed <= 5 {
                    eprintln!(
                        "{name} {spec}: {addr:#010x}: want {:?} got {got:?} batch {:?}",
                        want[i], batch[i]
                    );
                }
            }
        }
        assert_eq!(
            failed,
            0,
            "{name} {spec}: {failed} of {} failed",
            addrs.len()
        );
    }
}

#[test]
fn all_layouts_dfz_v4_nh() {
    check_all_layouts("dfz-v4-nh.txt.gz");
}

#[test]
fn all_layouts_dfz_v4_asn() {
    check_all_layouts("dfz-v4-asn.txt.gz");
}

#[test]
fn asn_table_uses_wide_chunks() {
    let rib = &shared_table("dfz-v4-asn.txt.gz").v4;
    let stats = stats_of("dxr:k=16", rib);
    assert!(stats.labels > 65_536, "{}", stats.labels);
    assert!(stats.chunks[2] > 0, "no wide chunks: {stats:?}");
}

/// More than 2^16 labels, chunks of more than 254 ranges (size escape),
/// and a chunk of 65,536 ranges (the largest possible at K = 16).
#[test]
fn many_labels_and_big_chunks() {
    let mut rib = Rib::<u32>::new();
    for i in 0..70_000u32 {
        let prefix = Prefix::new_masked(0x0a00_0000 + (i << 8), 24);
        rib.insert(prefix, i.wrapping_mul(2_654_435_761));
    }
    for i in 0..65_536u32 {
        rib.insert(
            Prefix::new_masked(0xc0a8_0000 | i, 32),
            i % 3 + 1_000_000 * (i % 2),
        );
    }
    rib.insert(Prefix::default_route(), u32::MAX);
    for spec in [
        "dxr:k=16",
        "dxr:k=20",
        "dxr:k=24",
        "dxr:d=12,x=4",
        "dxr:d=16,x=8",
    ] {
        let engine = build(spec, &rib).unwrap();
        let report = verify(&engine, &rib, 100_000, 7);
        assert!(
            report.ok(),
            "{spec}: {:?}",
            &report.mismatches[..3.min(report.mismatches.len())]
        );
    }
    let stats = stats_of("dxr:k=16", &rib);
    assert!(stats.chunks[2] > 0 && stats.chunks[1] > 0, "{stats:?}");
    assert_eq!(stats.steps.len(), 17, "a 65,536-range chunk takes 16 steps");
}

#[test]
fn rejects_bad_specs_and_ipv6() {
    let rib = Rib::<u32>::new();
    for bad in [
        "dxr:k=15",
        "dxr:k=25",
        "dxr:d=11,x=8",
        "dxr:d=16",
        "dxr:y=1",
    ] {
        assert!(build(bad, &rib).is_err(), "{bad}");
    }
    let err = build("dxr", &Rib::<u128>::new()).err().unwrap().to_string();
    assert!(err.contains("does not support IPv6"), "{err}");
    assert_eq!(
        LocalFib::<u32>::new("dxr:d=14,k=20", rib).unwrap().spec(),
        "dxr:d=14,x=6"
    );
}

/// Applies `changes` in batches, checking against the reference after each
/// batch.
fn replay_random(spec: &str, rib: &Rib<u32>, batches: &[Vec<Change<u32>>]) {
    let mut engine = LocalFib::<u32>::new(spec, rib.clone()).unwrap();
    for changes in batches {
        let summary = engine.apply(changes).unwrap();
        assert!(summary.rebuilt.is_none(), "dxr updates in place");
        let report = verify(&engine, engine.rib(), 300, 1);
        assert!(report.ok(), "{spec}: {}", report.mismatches[0]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn random_updates(entries in random_table_v4(), batches in random_batches_v4(32)) {
        let rib = rib_from_triples(&entries);
        for spec in ["dxr:k=16", "dxr:k=22", "dxr:d=12,x=4", "dxr:d=16,x=6"] {
            replay_random(spec, &rib, &batches);
        }
    }
}

/// Replays one hour of LINX updates onto the DFZ table, one second of
/// updates per batch, and checks against the reference along the way.
#[test]
fn linx_update_replay() {
    let table = shared_table("dfz-v4-nh.txt.gz");
    let updates = linx_updates(table);
    let batches = updates.v4_batches_by_time();
    assert!(batches.iter().map(Vec::len).sum::<usize>() > 20_000);
    for spec in ["dxr", "dxr:k=16", "dxr:d=16,x=6"] {
        let mut engine = LocalFib::<u32>::new(spec, table.v4.clone()).unwrap();
        let checkpoints = [batches.len() / 4, batches.len() / 2, 3 * batches.len() / 4];
        let mut busy = std::time::Duration::ZERO;
        for (i, batch) in batches.iter().enumerate() {
            let started = Instant::now();
            let summary = engine.apply(batch).unwrap();
            busy += started.elapsed();
            assert!(summary.rebuilt.is_none());
            if checkpoints.contains(&i) {
                // Boundaries of the changed prefixes' neighbourhood would miss
                // stale chunks elsewhere, so check the whole table.
                let report = verify(&engine, engine.rib(), 10_000, i as u64);
                assert!(
                    report.ok(),
                    "{spec} after batch {i}: {}",
                    report.mismatches[0]
                );
            }
        }
        let report = verify(&engine, engine.rib(), 100_000, 99);
        assert!(report.ok(), "{spec} at the end: {}", report.mismatches[0]);
        // The updated engine must also equal a fresh build, byte for byte in
        // what it answers and close in size.
        let fresh = build(spec, engine.rib()).unwrap();
        eprintln!(
            "{spec}: {} batches replayed in {:.3} s (reference + engine); {} bytes vs {} fresh",
            batches.len(),
            busy.as_secs_f64(),
            engine.memory_bytes(),
            fresh.memory_bytes()
        );
    }
}

/// A table whose range table cannot fit the 22-bit chunk base in steps of
/// one word fails to build at that stated step with a `Limit` error that
/// says why and what would work; without `align` the build takes two-word
/// steps and answers like the reference.
#[test]
fn range_table_overflow_is_a_limit_error() {
    let rib = distinct_host_routes_v4();
    for (spec, chosen) in [
        ("dxr:k=16,align=1", "dxr:k=16"),
        ("dxr:d=16,x=8,align=1", "dxr:d=16,x=8"),
    ] {
        let err = build(spec, &rib).err().expect("must not build").to_string();
        assert!(
            err.contains("(8 MiB)")
                && err.contains("dir24-8")
                && err.contains(&format!("`{chosen}` fits too")),
            "{spec}: {err}"
        );
        eprintln!("{err}");
        let (updater, dxr) = DxrUpdater::build(&DxrConfig::parse(chosen).unwrap(), &rib).unwrap();
        assert_eq!(updater.config().to_string(), format!("{chosen},align=2"));
        let report = verify(&dxr, &rib, 20_000, 2);
        assert!(report.ok(), "{chosen}: {}", report.mismatches[0]);
    }
}

/// A table that some `K` can encode and others cannot: the limit error of a
/// layout that overflows names exactly the layouts that build. 900,000
/// host routes 2,048 addresses apart, at odd offsets, with 1,000 labels:
/// long chunks at every `K < 24`; the more chunks a layout cuts the table
/// into, the more ranges it stores twice (4.06 words per host at K = 16,
/// 5 at K = 20), until from K = 22 the hosts' offsets inside their chunks
/// repeat and dedup stores identical chunks once. So K = 16..19 and 22..24
/// fit the 2^22-word range table and K = 20 and 21 do not, which no
/// per-chunk bound predicts.
#[test]
fn limit_errors_name_the_layouts_that_fit() {
    let rib = Rib::from_pairs((0..900_000u32).map(|i| {
        let offset = 2 * ((i / 1000) % 1024) + 1; // (offset, label) pairs are distinct
        (Prefix::new_masked(i * 2048 + offset, 32), i % 1000)
    }));
    // At a stated step of one word, the 8 MiB range table of a 22-bit
    // chunk base; without `align` the build takes a coarser step.
    let err = build("dxr:k=20,align=1", &rib)
        .err()
        .expect("k=20 must overflow")
        .to_string();
    eprintln!("{err}");
    assert!(err.contains("4194304 16-bit words (8 MiB)"), "{err}");
    assert!(err.contains("`dxr:k=20` fits too"), "{err}");
    let chosen = DxrUpdater::build(&DxrConfig::parse("dxr:k=20").unwrap(), &rib).unwrap();
    assert_eq!(chosen.0.config().to_string(), "dxr:k=20,align=2");
    let report = verify(&chosen.1, &rib, 20_000, 3);
    assert!(report.ok(), "dxr:k=20,align=2: {}", report.mismatches[0]);
    let mut fitting = 0;
    for k in 16..=24 {
        let spec = format!("dxr:k={k},align=1");
        let named = err.contains(&format!("{spec},")) || err.contains(&format!("{spec} "));
        match build(&spec, &rib) {
            Ok(engine) => {
                assert!(named, "{spec} builds but the error does not name it: {err}");
                if k == 16 {
                    let report = verify(&engine, &rib, 20_000, 3);
                    assert!(report.ok(), "{spec}: {}", report.mismatches[0]);
                }
                fitting += 1;
            }
            Err(error) => {
                assert!(!named, "{spec} is named but fails: {error}");
                assert_ne!(k, 16, "k=16 must fit this table: {error}");
            }
        }
    }
    assert!(
        fitting > 0 && fitting < 9,
        "a table some layouts fit, not all"
    );
    assert!(!err.contains("dir24-8"), "{err}");
    // The extended layouts of a fitting K fit too, as the message says.
    let engine = build("dxr:d=12,x=4,align=1", &rib).expect("d=12,x=4 has K=16");
    let report = verify(&engine, &rib, 20_000, 4);
    assert!(report.ok(), "dxr:d=12,x=4: {}", report.mismatches[0]);
}
