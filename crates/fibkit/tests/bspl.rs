//! `bspl`-specific tests: spec parsing and errors, the batch lookup at every
//! slice length, the probe bound, tables that concentrate entries in one
//! block, and update replays (generated IPv4 and IPv6 streams, the LINX
//! stream, random batches) checked against the reference along the way.

mod common;

use common::*;
use fibkit::engine::BuildError;
use fibkit::engines::bspl::DEFAULT_FIRST_BITS;
use fibkit::registry::{ConfigV4, EngineFamily, SnapshotV4, SnapshotV6};
use fibkit::trace::generate_changes;
use fibkit::verify::check_addresses;
use fibkit::verify::verify;
use fibkit::{build, Change, Label, LocalFib, Lookup, Prefix, Rib};
use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

#[test]
fn specs_print_canonically() {
    for (text, canonical) in [
        ("bspl", "bspl"),
        ("bspl:first=16", "bspl"),
        ("bspl:levels=4", "bspl:levels=4"),
        ("bspl:levels=3,first=17", "bspl:first=17,levels=3"),
        ("bspl:lengths=16+24+32", "bspl:lengths=16+24+32"),
        ("bspl:hybrid", "bspl:hybrid"),
        ("bspl:hybrid,first=20", "bspl:hybrid,first=20"),
        (
            "bspl:lengths=16+32+64+96,hybrid",
            "bspl:hybrid,lengths=16+32+64+96",
        ),
    ] {
        let config: ConfigV4 = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(config.to_string(), canonical, "{text}");
    }
}

#[test]
fn bad_specs_are_errors_naming_the_limit() {
    let rib = rib_from_triples::<u32>(&[(0x0a00_0000, 8, 1)]);
    for (spec, expect) in [
        ("bspl:first=7", "8..=24"),
        ("bspl:first=25", "8..=24"),
        ("bspl:levels=1", "2..=16"),
        ("bspl:levels=17", "2..=16"),
        ("bspl:lengths=16+x", "a list like 16+24+32"),
        ("bspl:lengths=16+24+20", "increase strictly"),
        ("bspl:lengths=30+32", "first level's bits"),
        (
            "bspl:lengths=16+32,levels=3",
            "takes no `first` or `levels`",
        ),
        ("bspl:depth=3", "unknown parameter `depth`"),
        ("bspl:hybrid=yes", "takes no value"),
    ] {
        let err = build(spec, &rib).err().map(|e| e.to_string());
        let err = err.unwrap_or_else(|| panic!("{spec} must not build"));
        assert!(err.contains(expect), "{spec}: {err}");
    }
    // Tables the lengths cannot hold name what would.
    let long = rib_from_triples::<u32>(&[(0x0a00_0000, 30, 1)]);
    let err = build("bspl:lengths=16+24", &long)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("end `lengths` at 30"), "{err}");
    let short = rib_from_triples::<u32>(&[(0x0a00_0000, 9, 1)]);
    let err = build("bspl:lengths=8+32", &short)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("2^23") && err.contains("between 9 and 32"),
        "{err}"
    );
    let v6 = rib_from_triples::<u128>(&[(0x2001_0db8 << 96, 20, 1), (0x2001_0db8 << 96, 48, 2)]);
    let err = build("bspl:hybrid,lengths=16+64", &v6)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("at most 32 apart"), "{err}");
    let err = build("bspl:levels=2", &v6).err().unwrap().to_string();
    assert!(err.contains("levels="), "{err}");
    assert!(matches!(
        build("bspl:lengths=16+24", &long),
        Err(BuildError::Limit { .. })
    ));
}

/// Keys for batch checks: range boundaries and random addresses, shuffled
/// by the check order of `check_addresses`.
fn batch_keys<A: EngineFamily>(rib: &Rib<A>) -> Vec<A> {
    let mut keys = check_addresses(rib, 20_000, 3);
    let step = (keys.len() / 2_000).max(1);
    keys = keys.into_iter().step_by(step).collect();
    keys.truncate(2_000);
    keys
}

/// `lookup_batch` equals per-key lookups for every slice length 0..300 and
/// for the whole key set, at every offset class.
fn check_batch<A: EngineFamily>(spec: &str, rib: &Rib<A>) {
    let engine = build(spec, rib).unwrap_or_else(|e| panic!("{spec}: {e}"));
    let keys = batch_keys(rib);
    let want: Vec<Option<Label>> = keys.iter().map(|&k| engine.lookup(k)).collect();
    let mut out = vec![Some(u32::MAX); keys.len()];
    for len in 0..300.min(keys.len()) {
        let offset = (len * 7) % (keys.len() - len).max(1);
        out.fill(Some(u32::MAX));
        engine.lookup_batch(&keys[offset..offset + len], &mut out[..len]);
        assert_eq!(
            &out[..len],
            &want[offset..offset + len],
            "{spec}: length {len}"
        );
    }
    engine.lookup_batch(&keys, &mut out);
    assert_eq!(out, want, "{spec}: all {} keys", keys.len());
    for (&key, &label) in keys.iter().zip(&want) {
        assert_eq!(label, rib.lookup(key), "{spec}: {key:?}");
    }
}

#[test]
fn batch_equals_per_key_at_every_length() {
    let v4 = &shared_table("dfz-v4-nh.txt.gz").v4;
    for spec in ["bspl", "bspl:first=20", "bspl:hybrid"] {
        check_batch(spec, v4);
    }
    let v6 = &shared_table("dfz-v6-nh.txt.gz").v6;
    for spec in ["bspl", "bspl:hybrid"] {
        check_batch(spec, v6);
    }
    // Long IPv6 slices take the pipeline only over at most three lengths
    // (dfz-v6-nh needs more): 3,000 nested /24../48 prefixes in 2000::/8.
    let mut rng = SmallRng::seed_from_u64(0x0b5b_1e48);
    let triples: Vec<(u128, u8, u32)> = (0..3_000)
        .map(|i| {
            let addr = 0x20u128 << 120 | ((rng.random::<u64>() >> 8) as u128) << 64;
            (addr, rng.random_range(24..=48), i % 50)
        })
        .collect();
    let short = rib_from_triples(&triples);
    let SnapshotV6::Bspl(engine) = build("bspl:lengths=16+32+40+48", &short).unwrap() else {
        panic!("a bspl snapshot")
    };
    assert_eq!(
        engine.lengths(),
        [32, 40, 48],
        "three lengths: the pipeline"
    );
    check_batch("bspl:lengths=16+32+40+48", &short);
}

/// No lookup probes more tables than the search tree's height.
#[test]
fn probes_are_bounded_by_the_tree_height() {
    let v4 = &shared_table("dfz-v4-nh.txt.gz").v4;
    let SnapshotV4::Bspl(engine) = build("bspl:levels=8", v4).unwrap() else {
        panic!("a bspl snapshot")
    };
    let tables = engine.lengths().len();
    let bound = (usize::BITS - tables.leading_zeros()) as usize; // ceil(log2(k + 1))
    for addr in check_addresses(v4, 100_000, 9) {
        assert!(engine.probes(addr) <= bound, "{addr:#x}: over {bound}");
    }
    let v6 = &shared_table("dfz-v6-nh.txt.gz").v6;
    let SnapshotV6::Bspl(engine) = build("bspl", v6).unwrap() else {
        panic!("a bspl snapshot")
    };
    let tables = engine.lengths().len();
    let bound = (usize::BITS - tables.leading_zeros()) as usize;
    for addr in check_addresses(v6, 100_000, 9) {
        assert!(engine.probes(addr) <= bound, "{addr:#x}: over {bound}");
    }
}

/// 65,536 host routes with distinct labels in one /16, a full /16 of /24s
/// and IPv6 /128s below one /48: the entries of one first-level block go
/// to many buckets, whatever their number.
#[test]
fn dense_blocks_build_and_answer() {
    let mut v4 = Rib::<u32>::new();
    for i in 0..65_536u32 {
        v4.insert(Prefix::new_masked(0xc0a8_0000 | i, 32), i * 7 + 1);
    }
    for i in 0..256u32 {
        v4.insert(Prefix::new_masked(0x0a01_0000 | i << 8, 24), i);
    }
    v4.insert(Prefix::default_route(), 0);
    for spec in [
        "bspl",
        "bspl:lengths=16+24+32",
        "bspl:first=8",
        "bspl:hybrid",
    ] {
        assert_engine_matches(spec, &v4, 100_000);
    }
    let mut v6 = Rib::<u128>::new();
    let base = 0x2001_0db8_0001u128 << 80;
    for i in 0..40_000u128 {
        v6.insert(Prefix::new_masked(base | (i * 0x1_0001), 128), i as u32);
    }
    v6.insert(Prefix::new_masked(base, 48), 1);
    for spec in ["bspl", "bspl:hybrid"] {
        assert_engine_matches(spec, &v6, 100_000);
    }
}

/// Applies `changes` in batches of 1, 2, 3, ... changes to a `LocalFib` of
/// `spec`, checking after every batch the addresses at and beside each
/// changed prefix's edges and middle against the reference, the whole
/// table (every range boundary) after every hundredth batch and at the
/// end; checks that every rebuild has one of the documented causes (see
/// [`check_rebuild`]); returns (batches, batches that rebuilt).
fn replay<A: EngineFamily>(spec: &str, rib: &Rib<A>, changes: &[Change<A>]) -> (usize, usize) {
    let mut fib = LocalFib::<A>::new(spec, rib.clone()).unwrap_or_else(|e| panic!("{spec}: {e}"));
    let (mut batches, mut rebuilt) = (0, 0);
    let mut rest = changes;
    while !rest.is_empty() {
        let (batch, tail) = rest.split_at((batches % 7 + 1).min(rest.len()));
        rest = tail;
        let summary = fib.apply(batch).unwrap_or_else(|e| panic!("{spec}: {e}"));
        if let Some(why) = &summary.rebuilt {
            check_rebuild(spec, batch, why);
            rebuilt += 1;
        }
        batches += 1;
        for change in batch {
            let prefix = change.prefix();
            let (first, last) = (prefix.first(), prefix.last());
            let middle = first | (last ^ first) >> 1;
            let edges = [first.checked_prev(), Some(first), Some(middle), Some(last)];
            for addr in edges.into_iter().chain([last.checked_next()]).flatten() {
                assert_eq!(
                    fib.lookup(addr),
                    fib.rib().lookup(addr),
                    "{spec} after batch {batches} ({change:?}) at {addr:?}"
                );
            }
        }
        if batches % 100 == 0 {
            let report = verify(&fib, fib.rib(), 2_000, batches as u64);
            assert!(
                report.ok(),
                "{spec} after batch {batches}: {}",
                report.mismatches[0]
            );
        }
    }
    let report = verify(&fib, fib.rib(), 50_000, 7);
    assert!(report.ok(), "{spec} at the end: {}", report.mismatches[0]);
    (batches, rebuilt)
}

/// The rebuild rule of the engine's header: a batch is rebuilt when a
/// prefix of it is one the target lengths cannot hold (the error names
/// it), or when patching it would fill a hash window or touch blocks
/// holding more than half the entries. Plain `bspl` patches changes of
/// length <= the first level's bits in the first level alone, so only a
/// batch with a longer prefix can rebuild; so it is in the hybrid, whose
/// short prefixes rewrite the leaves of the tries below them in place.
fn check_rebuild<A: EngineFamily>(spec: &str, batch: &[Change<A>], why: &str) {
    let names: Vec<String> = batch.iter().map(|c| c.prefix().to_string()).collect();
    if why.contains("cannot encode") {
        assert!(
            names.iter().any(|name| why.contains(&format!("{name} "))),
            "{spec}: the limit names no prefix of {names:?}: {why}"
        );
    } else {
        assert!(
            why.contains("no incremental update"),
            "{spec}: undocumented rebuild of {names:?}: {why}"
        );
    }
    // The replays run the default first level.
    if !spec.contains("hybrid") {
        assert!(
            batch.iter().any(|c| c.prefix().plen() > DEFAULT_FIRST_BITS),
            "{spec}: {names:?} are all first-level prefixes, yet rebuilt: {why}"
        );
    }
}

#[test]
fn generated_update_streams_v4() {
    let rib = &shared_table("dfz-v4-nh.txt.gz").v4;
    let changes = generate_changes(rib, 300, 11);
    for spec in ["bspl", "bspl:hybrid"] {
        let (batches, rebuilt) = replay(spec, rib, &changes);
        assert!(
            rebuilt * 20 < batches,
            "{spec}: {rebuilt} of {batches} batches rebuilt"
        );
    }
}

#[test]
fn generated_update_streams_v6() {
    for name in ["dfz-v6-nh.txt.gz", "linx-rib-ipv6.20141225.txt.gz"] {
        let rib = &shared_table(name).v6;
        let changes = generate_changes(rib, 300, 12);
        for spec in ["bspl", "bspl:hybrid"] {
            let (batches, rebuilt) = replay(spec, rib, &changes);
            // The generated stream announces prefixes of any length
            // anywhere: a length far from every target length (or beyond
            // the longest, as every length over /48 is for the LINX
            // table) or an expansion into thousands of entries that fills
            // a window rebuilds (`replay` checks each rebuild's cause).
            // With 300 changes of seed 12, 4 and 8 of 76 batches rebuild
            // plain `bspl` on DFZ and LINX and none the hybrid (a short
            // prefix rewrites the leaves below it in place); a fifth would
            // mean patches fail without cause.
            assert!(
                rebuilt * 5 < batches,
                "{name} {spec}: {rebuilt} of {batches} rebuilt"
            );
        }
    }
}

/// A storm of host routes into one first-level block, relabelled and
/// withdrawn again: each change patches its own entries and markers (no
/// re-planned block beyond the first, no rebuild), the host table grows in
/// place when its windows fill, and every answer stays the reference's.
#[test]
fn host_route_storms_patch_in_place() {
    let mut rib = Rib::<u32>::new();
    for (text, label) in [
        ("10.0.0.0/8", 1),
        ("10.1.0.0/17", 2),
        ("10.1.128.0/20", 3),
        ("10.1.64.0/24", 4),
        ("10.1.65.0/26", 5),
        ("10.1.200.0/22", 6),
        ("10.1.200.0/30", 7),
        ("10.2.0.0/24", 8),
    ] {
        rib.insert(text.parse().unwrap(), label);
    }
    // Four tables, so host routes leave markers on the way (their search
    // turns right more than once).
    for spec in ["bspl:lengths=16+20+24+28+32", "bspl:lengths=16+24+32"] {
        let mut fib = LocalFib::<u32>::new(spec, rib.clone()).unwrap();
        let hosts: Vec<Prefix<u32>> = (0..6000u32)
            .map(|i| Prefix::new(0x0a01_0000 | (i.wrapping_mul(40_503) & 0xffff), 32).unwrap())
            .collect();
        let stats = |fib: &LocalFib<u32>| match fib.stats() {
            fibkit::registry::StatsV4::Bspl(stats) => stats,
            _ => unreachable!("a bspl spec"),
        };
        let check = |fib: &LocalFib<u32>, host: Prefix<u32>, when: &str| {
            let (first, last) = (host.first(), host.last());
            for addr in [
                first.wrapping_sub(1),
                first,
                last,
                last.wrapping_add(1),
                first ^ 0xff,
            ] {
                assert_eq!(
                    fib.lookup(addr),
                    fib.rib().lookup(addr),
                    "{spec} {when} {host} at {addr:#x}"
                );
            }
        };
        for (i, &host) in hosts.iter().enumerate() {
            let summary = fib
                .apply(&[Change::Announce(host, 100 + i as u32 % 50)])
                .unwrap();
            assert_eq!(summary.rebuilt, None, "{spec}: announce {host}");
            check(&fib, host, "after announcing");
        }
        assert_verified(
            &fib,
            fib.rib(),
            5_000,
            &format!("{spec} after the announcements"),
        );
        for (i, pair) in hosts.chunks(2).enumerate() {
            // Relabel one, withdraw the other, in one batch.
            let batch = [
                Change::Announce(pair[0], 200 + i as u32 % 7),
                Change::Withdraw(pair[1]),
            ];
            let summary = fib.apply(&batch).unwrap();
            assert_eq!(summary.rebuilt, None, "{spec}: batch {i}");
            check(&fib, pair[0], "after relabelling");
            check(&fib, pair[1], "after withdrawing");
        }
        assert_verified(
            &fib,
            fib.rib(),
            5_000,
            &format!("{spec} after the withdrawals"),
        );
        let after = stats(&fib);
        assert!(
            after.blocks_rebuilt <= 2,
            "{spec}: {} blocks re-planned",
            after.blocks_rebuilt
        );
        assert!(
            after.prefixes_patched >= 9_000,
            "{spec}: {} patched",
            after.prefixes_patched
        );
        assert!(
            after.update_growths > 0,
            "{spec}: the host table never grew"
        );
        for &host in hosts.iter().step_by(2) {
            fib.apply(&[Change::Withdraw(host)]).unwrap();
        }
        assert_verified(
            &fib,
            fib.rib(),
            5_000,
            &format!("{spec} with the hosts gone"),
        );
        assert_eq!(fib.rib().len(), rib.len());
    }
}

/// Changes of short prefixes (no longer than the first level) over the
/// shared IPv6 table: the hybrid rewrites the leaves of the tries below
/// them in place (no block re-planned, no rebuild) and answers as the
/// reference on every range boundary after each batch; a batch that also
/// changes a long prefix in one of those blocks rebuilds that block.
#[test]
fn short_changes_relabel_hybrid_tries() {
    let rib = shared_table("dfz-v6-nh.txt.gz").v6.clone();
    let mut fib = LocalFib::<u128>::new("bspl:hybrid", rib).unwrap();
    let p = |text: &str| -> Prefix<u128> { text.parse().unwrap() };
    let stats = |fib: &LocalFib<u128>| match fib.stats() {
        fibkit::registry::StatsV6::Bspl(stats) => stats,
        _ => unreachable!("a bspl spec"),
    };
    let batches: Vec<(&str, Vec<Change<u128>>)> = vec![
        (
            "announce 2000::/4",
            vec![Change::Announce(p("2000::/4"), 7)],
        ),
        ("announce ::/2", vec![Change::Announce(p("::/2"), 8)]),
        ("relabel 2000::/4", vec![Change::Announce(p("2000::/4"), 9)]),
        (
            "announce 2a00::/8",
            vec![Change::Announce(p("2a00::/8"), 10)],
        ),
        (
            "a short and a long change in one block",
            vec![
                Change::Announce(p("2a00::/12"), 11),
                Change::Announce(p("2a00:1234:5600::/40"), 12),
            ],
        ),
        ("withdraw 2000::/4", vec![Change::Withdraw(p("2000::/4"))]),
        (
            "withdraw the rest",
            vec![
                Change::Withdraw(p("::/2")),
                Change::Withdraw(p("2a00::/8")),
                Change::Withdraw(p("2a00::/12")),
                Change::Withdraw(p("2a00:1234:5600::/40")),
            ],
        ),
    ];
    let first_bits = stats(&fib).first_bits;
    for (what, batch) in &batches {
        let before = stats(&fib);
        let summary = fib.apply(batch).unwrap();
        assert_eq!(summary.rebuilt, None, "{what}");
        let after = stats(&fib);
        if batch.iter().all(|c| c.prefix().plen() <= first_bits) {
            assert_eq!(after.blocks_rebuilt, before.blocks_rebuilt, "{what}");
            assert!(
                after.blocks_relabelled > before.blocks_relabelled,
                "{what}: no block relabelled"
            );
        }
        assert_verified(&fib, fib.rib(), 20_000, what);
    }
    assert!(
        stats(&fib).blocks_rebuilt >= 1,
        "the mixed batch rebuilt no block"
    );
}

/// Small tables packed into a few first-level blocks, and batches of one
/// to four changes of any length there (short ones that repaint blocks
/// beside long ones that patch them, withdrawals of absent prefixes),
/// every range boundary checked after each batch, for plain `bspl` with
/// several table layouts and for the hybrid.
#[test]
fn dense_batches_in_few_blocks() {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let specs = [
        "bspl",
        "bspl:hybrid",
        "bspl:first=8,levels=5",
        "bspl:lengths=16+20+24+28+32",
        "bspl:hybrid,first=12",
    ];
    for case in 0..4000 {
        let random_prefix = |next: &mut dyn FnMut() -> u64| {
            let plen = (next() % 33) as u8;
            Prefix::new_masked(0x0a0d_0000 | (next() as u32 & 0x0003_ffff), plen)
        };
        let mut rib = Rib::<u32>::new();
        for _ in 0..12 {
            let prefix = random_prefix(&mut next);
            rib.insert(prefix, (next() % 3) as u32);
        }
        let spec = specs[case % specs.len()];
        let mut fib = LocalFib::<u32>::new(spec, rib).unwrap();
        for step in 0..6 {
            let mut batch: Vec<Change<u32>> = Vec::new();
            for _ in 0..1 + next() % 4 {
                let prefix = random_prefix(&mut next);
                batch.push(match next() % 3 {
                    0 => Change::Withdraw(prefix),
                    label => Change::Announce(prefix, label as u32),
                });
            }
            fib.apply(&batch).unwrap();
            let report = verify(&fib, fib.rib(), 0, 1);
            assert!(
                report.ok(),
                "{spec}, case {case}, batch {step} {batch:?}: {}",
                report.mismatches[0]
            );
        }
    }
}

/// One hour of LINX updates onto the DFZ table, one second per batch.
#[test]
fn linx_update_replay() {
    let table = shared_table("dfz-v4-nh.txt.gz");
    let updates = linx_updates(table);
    let batches = updates.v4_batches_by_time();
    for spec in ["bspl", "bspl:hybrid"] {
        let mut fib = LocalFib::<u32>::new(spec, table.v4.clone()).unwrap();
        let checkpoints = [batches.len() / 3, 2 * batches.len() / 3];
        let mut rebuilt = 0;
        for (i, batch) in batches.iter().enumerate() {
            rebuilt += fib.apply(batch).unwrap().rebuilt.is_some() as usize;
            if checkpoints.contains(&i) {
                let report = verify(&fib, fib.rib(), 10_000, i as u64);
                assert!(
                    report.ok(),
                    "{spec} after batch {i}: {}",
                    report.mismatches[0]
                );
            }
        }
        assert_eq!(rebuilt, 0, "{spec}: the LINX stream fits the tables");
        let report = verify(&fib, fib.rib(), 100_000, 99);
        assert!(report.ok(), "{spec} at the end: {}", report.mismatches[0]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Random tables and random change batches (clustered so they nest),
    /// checked after every batch.
    #[test]
    fn random_updates(entries in random_table_v4(), batches in random_batches_v4(32)) {
        replay_batches(&rib_from_triples(&entries), &batches, &["bspl", "bspl:first=8,levels=5", "bspl:hybrid"]);
    }

    #[test]
    fn random_updates_v6(entries in random_table_v6(), batches in random_batches_v6(128)) {
        replay_batches(&rib_from_triples(&entries), &batches, &["bspl", "bspl:hybrid"]);
    }
}

/// Batches that announce short and host prefixes over much of the table,
/// then relabel and withdraw most of it: each re-plans most blocks, so the
/// update gives the patch up for a build once its planned work passes a
/// build's. Every batch is applied, through both handles, and answers as
/// the reference table.
#[test]
fn large_batches_answer_as_the_reference() {
    let mut next = lcg(0x9e37_79b9_7f4a_7c15);
    fn batches<A: fibkit::Addr>(
        rib: &Rib<A>,
        next: &mut impl FnMut() -> u64,
    ) -> Vec<Vec<Change<A>>> {
        let bits = A::BITS as u32;
        let mut grow: Vec<Change<A>> = Vec::new();
        for i in 0..3000 {
            let addr = A::from_u128(((next() as u128) << 64 | next() as u128) >> (128 - bits));
            let plen = if i % 3 == 0 {
                (bits / 2 + next() as u32 % (bits / 2)) as u8
            } else {
                bits as u8
            };
            grow.push(Change::Announce(
                Prefix::new_masked(addr, plen),
                (next() % 50) as Label,
            ));
        }
        let mut grown = rib.clone();
        for change in &grow {
            grown.apply(*change);
        }
        let mut shrink: Vec<Change<A>> = Vec::new();
        for (prefix, label) in grown.iter() {
            match next() % 12 {
                0..=2 => {}
                3..=5 => shrink.push(Change::Announce(prefix, label + 1)),
                _ => shrink.push(Change::Withdraw(prefix)),
            }
        }
        vec![grow, shrink]
    }
    let mut pairs: Vec<(Prefix<u32>, Label)> = Vec::new();
    for _ in 0..4000 {
        let plen = [16, 20, 24, 24, 24, 28][next() as usize % 6];
        pairs.push((
            Prefix::new_masked(next() as u32, plen),
            (next() % 50) as Label,
        ));
    }
    let rib = Rib::from_pairs(pairs);
    let stream = batches(&rib, &mut next);
    for spec in ["bspl", "bspl:levels=3", "bspl:hybrid"] {
        let failed = assert_batches_atomic::<u32>(spec, &rib, &stream, 2000);
        assert_eq!(failed, 0, "{spec}: every batch fits");
    }
    let mut pairs: Vec<(Prefix<u128>, Label)> = Vec::new();
    for _ in 0..4000 {
        let plen = [32, 40, 48, 48, 56, 64][next() as usize % 6];
        let addr = 0x2000u128 << 112 | (next() as u128) << 80 | (next() as u128) << 48;
        pairs.push((Prefix::new_masked(addr, plen), (next() % 50) as Label));
    }
    let rib = Rib::from_pairs(pairs);
    let stream = batches(&rib, &mut next);
    for spec in ["bspl", "bspl:hybrid"] {
        let failed = assert_batches_atomic::<u128>(spec, &rib, &stream, 2000);
        assert_eq!(failed, 0, "{spec}: every batch fits");
    }
}
