//! The shared suite run against every engine (see `common/mod.rs`).

mod common;

use common::*;
use fibkit::engine::{EngineStats, Updater};
use fibkit::registry::{EngineFamily, StatsV4};
use fibkit::{build, Addr, Change, Label, LocalFib, Lookup, Prefix, Rib};
use proptest::prelude::*;

/// Every engine spec under test, with the families it supports: each
/// registered engine's layouts ([`fibkit::registry::EngineInfo::layouts`]),
/// so an engine added to the registry is checked here without a line of
/// this file.
fn engines() -> Vec<(&'static str, bool, bool)> {
    fibkit::registry::ENGINES
        .iter()
        .flat_map(|info| info.layouts)
        .map(|layout| (layout.spec, layout.ipv4, layout.ipv6))
        .collect()
}

#[test]
fn small_tables() {
    for (spec, ipv4, ipv6) in engines() {
        check_small_tables(spec, ipv4, ipv6);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_tables_v4(entries in random_table_v4()) {
        let rib = rib_from_triples(&entries);
        for (spec, ipv4, _) in engines() {
            if ipv4 {
                assert_engine_matches(spec, &rib, 500);
            }
        }
    }

    #[test]
    fn random_tables_v6(entries in random_table_v6()) {
        let rib = rib_from_triples(&entries);
        for (spec, _, ipv6) in engines() {
            if ipv6 {
                assert_engine_matches(spec, &rib, 500);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 16,
        rng_seed: proptest::test_runner::RngSeed::Fixed(16),
        ..ProptestConfig::default()
    })]

    /// Announcing, relabelling and withdrawing the default route, mixed
    /// with other changes, on tables with and without one: every engine
    /// answers as the reference table after every batch.
    #[test]
    fn default_route_changes_v4(
        entries in random_table_v4(),
        default_route in prop::option::of(0u32..6),
        batches in with_default_route_changes(random_batches_v4(32)),
    ) {
        let rib = rib_with_or_without_default(&entries, default_route);
        let specs: Vec<&str> = engines().into_iter().filter(|e| e.1).map(|e| e.0).collect();
        replay_batches(&rib, &batches, &specs);
    }

    #[test]
    fn default_route_changes_v6(
        entries in random_table_v6(),
        default_route in prop::option::of(0u32..6),
        batches in with_default_route_changes(random_batches_v6(128)),
    ) {
        let rib = rib_with_or_without_default(&entries, default_route);
        let specs: Vec<&str> = engines().into_iter().filter(|e| e.2).map(|e| e.0).collect();
        replay_batches(&rib, &batches, &specs);
    }
}

/// Changes at both ends of the address space, where a window's or chunk's
/// last address is the family's largest: host routes at 0 and at all ones,
/// the upper half, the last /16 (IPv6) or /8 (IPv4), the default route,
/// then their withdrawals one by one.
fn edge_batches<A: Addr>() -> Vec<Vec<Change<A>>> {
    let top = A::MAX;
    let bits = A::BITS;
    let last_block = if bits == 128 { 16 } else { 8 };
    let prefixes = [
        Prefix::new_masked(top, bits),
        Prefix::new_masked(A::from_u128(0), bits),
        Prefix::new_masked(top, 1),
        Prefix::new_masked(top, last_block),
        Prefix::new_masked(top, bits - 1),
        Prefix::default_route(),
    ];
    let mut batches: Vec<Vec<Change<A>>> = prefixes
        .iter()
        .enumerate()
        .map(|(i, &prefix)| vec![Change::Announce(prefix, i as u32 + 1)])
        .collect();
    batches.push(vec![Change::Announce(prefixes[0], 7)]);
    batches.extend(
        prefixes
            .iter()
            .map(|&prefix| vec![Change::Withdraw(prefix)]),
    );
    batches.push(prefixes.iter().map(|&p| Change::Announce(p, 3)).collect());
    batches
}

/// Every engine, from an empty table and from a small one, replays
/// [`edge_batches`] and answers as the reference after every batch.
#[test]
fn changes_at_the_ends_of_the_address_space() {
    let specs_v4: Vec<&str> = engines().into_iter().filter(|e| e.1).map(|e| e.0).collect();
    let specs_v6: Vec<&str> = engines().into_iter().filter(|e| e.2).map(|e| e.0).collect();
    let small_v4 = rib_from_triples(&[(0x0a00_0000u32, 8, 1), (0xc0a8_0000, 16, 2)]);
    let small_v6 = rib_from_triples(&[(0x2001u128 << 112, 16, 1), (0x2a00u128 << 112, 12, 2)]);
    for rib in [Rib::new(), small_v4] {
        replay_batches(&rib, &edge_batches::<u32>(), &specs_v4);
    }
    for rib in [Rib::new(), small_v6] {
        replay_batches(&rib, &edge_batches::<u128>(), &specs_v6);
    }
}

/// The failed-update property (all or nothing, through `LocalFib` and
/// `Fib`) for every engine in the registry. The engines' real limits are
/// out of reach of a small table for most of them: label indices of 30-31
/// bits, 2^32 key-vector or exact-table slots (`lctrie`, `bloom`), 2^28
/// expanded entries (`bspl`), DXR's and dxr6's range-table bases (2^19
/// words and more). Each engine is therefore wrapped in [`Capped`], which
/// fails a build or an update past a prefix count after the engine has
/// patched its snapshot: the handle must publish nothing of it. The two
/// engines whose limits a spec sets small are also pushed past their real
/// limits: `dir24-8:max-groups` here, `cpe:max-entries` in tests/cpe.rs.
fn assert_capped_atomic<A: EngineFamily>(
    spec: &str,
    rib: &Rib<A>,
    batches: &[Vec<Change<A>>],
    max_prefixes: usize,
) -> usize {
    let inner = spec
        .parse::<<A as EngineFamily>::Config>()
        .unwrap_or_else(|e| panic!("{spec}: {e}"));
    let config = CappedConfig {
        inner,
        max_prefixes,
    };
    assert_batches_atomic_with::<A, Capped<A::Engine>>(config, rib, batches, 100)
}

/// `dir24-8` with `slack` tbl8 groups more than `rib` needs.
fn dir24_8_with_slack(rib: &Rib<u32>, slack: usize) -> String {
    let fib = LocalFib::<u32>::new("dir24-8", rib.clone()).unwrap();
    let StatsV4::Dir24_8(stats) = fib.stats() else {
        unreachable!("a dir24-8 spec builds a dir24-8 engine")
    };
    format!("dir24-8:max-groups={}", stats.groups_in_use + slack)
}

/// Engines whose every build and snapshot copy writes a 2^24-entry
/// table (64 MiB): each failed batch costs several of them, so the
/// atomicity checks take them on fewer cases, against the real limit of
/// `dir24-8` (`dxr:k=24` patches and rebuilds as the other DXR layouts).
const SLOW_REBUILDS: &[&str] = &["dir24-8", "dxr:k=24"];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn failed_updates_are_atomic_v4(
        entries in random_table_v4(),
        batches in random_batches_v4(32),
        slack in 0usize..40,
    ) {
        let rib = rib_from_triples(&entries);
        for (spec, ipv4, _) in engines() {
            if ipv4 && !SLOW_REBUILDS.contains(&spec) {
                assert_capped_atomic(spec, &rib, &batches, rib.len() + slack);
            }
        }
    }

    #[test]
    fn failed_updates_are_atomic_v6(
        entries in random_table_v6(),
        batches in random_batches_v6(128),
        slack in 0usize..40,
    ) {
        let rib = rib_from_triples(&entries);
        for (spec, _, ipv6) in engines() {
            if ipv6 {
                assert_capped_atomic(spec, &rib, &batches, rib.len() + slack);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3))]

    /// `dir24-8` against its real limit: a few tbl8 groups over what the
    /// table needs.
    #[test]
    fn dir24_8_failed_updates_are_atomic(
        entries in random_table_v4(),
        batches in random_batches_v4(32),
        slack in 0usize..5,
    ) {
        let rib = rib_from_triples(&entries);
        assert_batches_atomic(&dir24_8_with_slack(&rib, slack), &rib, &batches, 100);
    }
}

/// Seeded change streams (nested, covering, /0 and host-route
/// announcements, relabels, withdrawals) in batches of six past a cap of
/// ten prefixes over the table: every engine fails some batches and
/// applies others, each all or nothing; `dir24-8` does the same against
/// its real group limit.
#[test]
fn seeded_streams_past_the_limits_are_atomic() {
    let base_v4 = &small_tables_v4()[3];
    let base_v6 = &small_tables_v6()[3];
    for (spec, ipv4, ipv6) in engines() {
        if ipv4 && !SLOW_REBUILDS.contains(&spec) {
            some_fail_some_apply(spec, base_v4, 4, |batches| {
                assert_capped_atomic(spec, base_v4, batches, base_v4.len() + 10)
            });
        }
        if ipv6 {
            some_fail_some_apply(spec, base_v6, 4, |batches| {
                assert_capped_atomic(spec, base_v6, batches, base_v6.len() + 10)
            });
        }
    }
    let spec = dir24_8_with_slack(base_v4, 1);
    some_fail_some_apply(&spec, base_v4, 1, |batches| {
        assert_batches_atomic(&spec, base_v4, batches, 100)
    });
}

/// Runs `check` (which returns how many batches failed) on `seeds` seeded
/// streams of 60 changes onto `base` in batches of six, and asserts that
/// some batches failed and some were applied.
fn some_fail_some_apply<A: EngineFamily>(
    spec: &str,
    base: &Rib<A>,
    seeds: u64,
    check: impl Fn(&[Vec<Change<A>>]) -> usize,
) {
    let (mut failed, mut applied) = (0, 0);
    for seed in 0..seeds {
        let changes = fibkit::trace::generate_changes(base, 60, seed);
        let batches: Vec<Vec<Change<A>>> = changes.chunks(6).map(|c| c.to_vec()).collect();
        let count = check(&batches);
        failed += count;
        applied += batches.len() - count;
    }
    assert!(
        failed > 0 && applied > 0,
        "{spec}: {failed} failed, {applied} applied"
    );
}

#[test]
fn dfz_v4_nh() {
    for (spec, ipv4, _) in engines() {
        check_shared_table(spec, "dfz-v4-nh.txt.gz", ipv4, false);
    }
}

#[test]
fn dfz_v4_asn() {
    for (spec, ipv4, _) in engines() {
        check_shared_table(spec, "dfz-v4-asn.txt.gz", ipv4, false);
    }
}

#[test]
fn dfz_v6_tables() {
    for (spec, _, ipv6) in engines() {
        check_shared_table(spec, "dfz-v6-nh.txt.gz", false, ipv6);
        check_shared_table(spec, "dfz-v6-asn.txt.gz", false, ipv6);
        check_shared_table(spec, "linx-rib-ipv6.20141225.txt.gz", false, ipv6);
    }
}

/// Without the shared data set, a test that needs it stops with a message
/// saying what is expected where (run in a child process of this test
/// binary, pointed at a folder that does not exist).
#[test]
fn a_missing_data_set_is_named() {
    if std::env::var_os("FIBKIT_DATA_DIR").is_some() {
        // The child: load a shared table from the missing folder.
        shared_table("dfz-v4-nh.txt.gz");
        return;
    }
    let missing = std::env::temp_dir().join(format!("fibkit-no-data-{}", std::process::id()));
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "a_missing_data_set_is_named", "--nocapture"])
        .env("FIBKIT_DATA_DIR", &missing)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("the shared data set is missing")
            && stderr.contains(&missing.display().to_string())
            && stderr.contains("../shared/data"),
        "{stderr}"
    );
}

/// A seeded table of `n` prefixes of every length from 0 to the family's
/// width, each of `labels` labels, nested and adjacent at random.
fn seeded_table<A: Addr>(n: usize, labels: u32, seed: u64) -> Rib<A> {
    let mut state = seed;
    let mut next = move || {
        // SplitMix64: reproducible without a dependency.
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let entries: Vec<(A, u8, u32)> = (0..n)
        .map(|_| {
            let addr = A::from_u128((next() as u128) << 64 | next() as u128);
            let plen = (next() % (A::BITS as u64 + 1)) as u8;
            (addr, plen, (next() % labels as u64) as u32)
        })
        .collect();
    rib_from_triples(&entries)
}

/// Every engine's `lookup_batch` and `lookup_batch_words` answer every
/// slice length from 0 to 300, at several offsets, as its per-key lookup.
fn check_slice_lengths<A: EngineFamily>(spec: &str, rib: &Rib<A>) {
    let engine = build(spec, rib).unwrap_or_else(|e| panic!("building {spec}: {e}"));
    let addrs = fibkit::verify::check_addresses(rib, 2000, 11);
    let want: Vec<Option<Label>> = addrs.iter().map(|&a| engine.lookup(a)).collect();
    for len in 0..=300.min(addrs.len()) {
        for offset in [0, addrs.len() / 3, addrs.len() - len] {
            let (addrs, want) = (&addrs[offset..offset + len], &want[offset..offset + len]);
            let mut batch = vec![Some(u32::MAX - 1); len + 2];
            engine.lookup_batch(addrs, &mut batch);
            assert_eq!(
                &batch[..len],
                want,
                "{spec}: lookup_batch, {len} keys at {offset}"
            );
            assert_eq!(
                batch[len..],
                [Some(u32::MAX - 1); 2],
                "{spec}: past the input"
            );
            let mut words = vec![7u64; len + 2];
            engine.lookup_batch_words(addrs, &mut words);
            let want_words: Vec<u64> = want.iter().map(|&w| fibkit::labels::word_of(w)).collect();
            assert_eq!(
                words[..len],
                want_words,
                "{spec}: words, {len} keys at {offset}"
            );
            assert_eq!(words[len..], [7, 7], "{spec}: words past the input");
            let bytes: Vec<A::Bytes> = addrs.iter().map(|&a| network_bytes(a)).collect();
            let mut words = vec![7u64; len + 2];
            engine.lookup_batch_words_be(&bytes, &mut words);
            assert_eq!(
                words[..len],
                want_words,
                "{spec}: words from network-order keys, {len} keys at {offset}"
            );
            assert_eq!(words[len..], [7, 7], "{spec}: words past the input");
        }
    }
}

/// `addr`'s network-order bytes, built without `Addr::from_be_bytes` so
/// that the test does not check the conversion against itself.
fn network_bytes<A: Addr>(addr: A) -> A::Bytes {
    let mut bytes = A::Bytes::default();
    let wide = addr.to_u128().to_be_bytes();
    bytes
        .as_mut()
        .copy_from_slice(&wide[16 - A::BITS as usize / 8..]);
    bytes
}

#[test]
fn batch_lookups_match_per_key_at_every_slice_length() {
    let (rib4, rib6) = (
        seeded_table::<u32>(3000, 40, 1),
        seeded_table::<u128>(3000, 40, 2),
    );
    for (spec, ipv4, ipv6) in engines() {
        if ipv4 {
            check_slice_lengths(spec, &rib4);
        }
        if ipv6 {
            check_slice_lengths(spec, &rib6);
        }
    }
}

/// A batch that changes more prefixes than the table holds after it is
/// built anew by both handles, before any patch, for every engine that
/// patches (dir24-8 and dxr count their direct table as prefixes, so not
/// on a table this small); a small batch after it is patched; the tables
/// answer as the reference after each.
#[test]
fn batches_larger_than_the_table_are_built_anew() {
    fn check<A: EngineFamily>(spec: &str) {
        let rib: Rib<A> = seeded_table(3000, 40, 11);
        let prefixes: Vec<Prefix<A>> = rib.iter().map(|(prefix, _)| prefix).collect();
        let withdraw_most: Vec<Change<A>> = prefixes[10..]
            .iter()
            .map(|&p| Change::Withdraw(p))
            .collect();
        let relabel_few: Vec<Change<A>> = prefixes[..3]
            .iter()
            .map(|&p| Change::Announce(p, 77))
            .collect();
        let mut local = LocalFib::<A>::new(spec, rib.clone()).unwrap();
        // `auto` picks by timing, so a second build may pick another engine
        // with another rule: the shared handle builds the local one's pick.
        let pick = local
            .stats()
            .rows()
            .into_iter()
            .find(|(row, _)| row == "pick");
        let shared_spec = pick.map_or(spec.to_string(), |(_, picked)| picked);
        assert!(
            !shared_spec.starts_with("auto"),
            "{spec}: no pick in its stats"
        );
        let shared = fibkit::Fib::<A>::new(&shared_spec, rib.clone()).unwrap();
        let mut after = rib.clone();
        for (i, batch) in [withdraw_most, relabel_few].iter().enumerate() {
            for &change in batch {
                after.apply(change);
            }
            let updater = local.updater();
            let expect_built = updater.patches() && updater.builds_anew(batch.len(), after.len());
            // The rule holds for every engine that patches, but those whose
            // build has a large fixed part (`auto` may pick dxr) and
            // `lctrie`, whose update applies a rule of its own.
            let fixed_part = ["dir24-8", "dxr", "auto", "lctrie"]
                .iter()
                .any(|n| spec.starts_with(n));
            if i == 0 && updater.patches() && !fixed_part {
                assert!(expect_built, "{spec}: the batch should be built anew");
            }
            let summaries = [local.apply(batch).unwrap(), shared.apply(batch).unwrap()];
            for summary in summaries {
                let built_anew = summary.rebuilt.as_deref()
                    == Some("the batch changed more prefixes than the table holds after it");
                assert_eq!(built_anew, expect_built, "{spec} batch {i}: {summary:?}");
            }
            assert!(i == 0 || !expect_built, "{spec}: three relabels built anew");
            assert_verified(&local, &after, 2000, spec);
            shared.with_snapshot(|snapshot| assert_verified(snapshot, &after, 2000, spec));
        }
    }
    for (spec, ipv4, ipv6) in engines() {
        if ipv4 {
            check::<u32>(spec);
        }
        if ipv6 {
            check::<u128>(spec);
        }
    }
}

/// The one engine list holds every engine folder, and what each engine
/// says of itself agrees with what it does: a layout for each family it
/// builds and none for the others, layouts that parse as the engine, a
/// build on each family it names and a clear refusal on the other, and an
/// image exactly when it says it has one. Fails when an engine is missing
/// from the list or from any list derived from it.
#[test]
fn every_engine_is_registered_and_states_itself() {
    use fibkit::registry::{build, image_bytes, ENGINES};
    use fibkit::spec::EngineSpec;
    use fibkit::Family;

    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/engines");
    for entry in std::fs::read_dir(&folder).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().replace('_', "-");
        if entry.path().is_dir() && name != "shared" {
            assert!(
                ENGINES.iter().any(|info| info.name == name),
                "engines/{} is not in the registry's engine list",
                entry.file_name().to_string_lossy()
            );
        }
    }
    let mut rib4 = Rib::<u32>::new();
    rib4.insert("10.0.0.0/8".parse().unwrap(), 1);
    let mut rib6 = Rib::<u128>::new();
    rib6.insert("2001:db8::/32".parse().unwrap(), 2);
    for info in ENGINES {
        assert!(!info.about.is_empty(), "{}: no description", info.name);
        for layout in info.layouts {
            let spec = EngineSpec::parse(layout.spec).unwrap();
            assert_eq!(
                spec.name, info.name,
                "{}: layout {}",
                info.name, layout.spec
            );
        }
        for family in [Family::V4, Family::V6] {
            let listed = info.layouts.iter().any(|layout| layout.supports(family));
            assert_eq!(listed, info.supports(family), "{} on {family}", info.name);
            let (built, image) = match family {
                Family::V4 => (
                    build(info.name, &rib4).map(|_| ()),
                    image_bytes(info.name, &rib4).map(|_| ()),
                ),
                Family::V6 => (
                    build(info.name, &rib6).map(|_| ()),
                    image_bytes(info.name, &rib6).map(|_| ()),
                ),
            };
            assert_eq!(
                built.is_ok(),
                info.supports(family),
                "{} on {family}: {built:?}",
                info.name
            );
            if info.supports(family) {
                assert_eq!(
                    image.is_ok(),
                    info.savable,
                    "{} on {family}: {image:?}",
                    info.name
                );
            }
        }
    }
}
