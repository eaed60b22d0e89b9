use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::lookup::{search, search_window};
use super::*;
use crate::engine::Updater;
use crate::engines::shared::prefetch;
use crate::labels::word_of;
use crate::prefix::Label;
use crate::prefix::Prefix;
use crate::rib::Rib;

#[test]
fn search_finds_last_start_not_above_probe() {
    let starts = [0u16, 10, 20, 30, 40];
    for probe in 0..60u16 {
        let want = starts.iter().rposition(|&s| s <= probe).unwrap();
        assert_eq!(search(&starts, probe), want, "probe {probe}");
    }
    assert_eq!(search(&[0], 7), 0);
    for n in 1..300u16 {
        let starts: Vec<u16> = (0..n).map(|i| i * 3).collect();
        for probe in 0..n * 3 + 2 {
            let want = starts.iter().rposition(|&s| s <= probe).unwrap();
            assert_eq!(search(&starts, probe), want);
        }
    }
    assert_eq!(search_steps(1), 0);
    assert_eq!(search_steps(2), 1);
    assert_eq!(search_steps(5), 3);
    assert_eq!(search_steps(256), 8);
}

#[test]
fn search_window_agrees_with_binary_search() {
    let mut rng = SmallRng::seed_from_u64(11);
    for n in (1..40).chain([63, 64, 65, 100, 255, 256, 300, 1000]) {
        // A chunk with 0 to 20 words of other data on each side (so
        // some windows run off the table's end).
        let before = rng.random_range(0..20);
        let after = rng.random_range(0..20);
        let mut starts: Vec<u16> = (0..n).map(|_| rng.random_range(1..u16::MAX)).collect();
        starts[0] = 0;
        starts.sort_unstable();
        let mut table: Vec<u16> = (0..before).map(|_| rng.random()).collect();
        table.extend(&starts);
        table.extend((0..after).map(|_| rng.random::<u16>()));
        let mut probes: Vec<u16> = starts
            .iter()
            .flat_map(|&s| [s, s.saturating_sub(1), s.saturating_add(1)])
            .collect();
        probes.extend((0..200).map(|_| rng.random::<u16>()));
        probes.extend([0, u16::MAX]);
        for probe in probes {
            let want = search(&starts, probe);
            assert_eq!(starts.iter().rposition(|&s| s <= probe), Some(want));
            assert_eq!(
                search_window(&table, before, n, probe),
                want,
                "n {n}, {before} words before, {after} after, probe {probe}"
            );
        }
    }
}

/// A table with chunks of every format (short, long, wide, escaped sizes)
/// at every layout the tests use, and addresses that hit all of them.
fn mixed_table() -> (Rib<u32>, Vec<u32>) {
    let mut rng = SmallRng::seed_from_u64(7);
    let mut rib = Rib::new();
    rib.insert(Prefix::new_masked(0, 0), 1);
    for _ in 0..4000 {
        let plen = rng.random_range(8..=32u8);
        rib.insert(
            Prefix::new_masked(rng.random(), plen),
            rng.random_range(0..50),
        );
    }
    // More than 2^16 distinct labels, one range each: wide chunks.
    for i in 0..70_000u32 {
        rib.insert(Prefix::new_masked(0x2000_0000 + i * 5, 32), 1000 + i);
    }
    // 300 /32s in one /16: a chunk bigger than the size field (escape).
    for i in 0..300u32 {
        rib.insert(Prefix::new_masked(0x0a0b_0000 | (i * 7), 32), i % 3 + 2);
    }
    let mut addrs: Vec<u32> = (0..20_001).map(|_| rng.random()).collect();
    addrs.extend(rib.ranges().iter().map(|r| r.first));
    addrs.extend((0..3000u32).map(|i| 0x0a0b_0000 | i));
    // Interleave the kinds, so short slices hold a mix of them.
    let mut shuffled = addrs.clone();
    for i in (1..shuffled.len()).rev() {
        shuffled.swap(i, rng.random_range(0..=i));
    }
    addrs.extend(shuffled);
    (rib, addrs)
}

/// The layouts the tests build: both kinds, and chunk bases on coarser
/// grids (`align`), whose padding and free runs the updates exercise.
const TEST_LAYOUTS: [DxrConfig; 6] = [
    DxrConfig::single(16),
    DxrConfig::single(20),
    DxrConfig::extended(16, 20),
    DxrConfig::extended(12, 18),
    DxrConfig::single(20).with_align(8),
    DxrConfig::extended(12, 18).with_align(2),
];

/// Runs the masked batch lookup of `dxr`, unchecked and checked.
fn masked_twins(dxr: &Dxr, addrs: &[u32]) -> (Vec<Option<Label>>, Vec<Option<Label>>) {
    let mut checked = vec![None; addrs.len()];
    let mut unchecked = vec![None; addrs.len()];
    if dxr.config.is_extended() {
        dxr.lookup_masked::<true, false, _>(addrs, &mut checked);
        dxr.lookup_masked::<true, true, _>(addrs, &mut unchecked);
    } else {
        dxr.lookup_masked::<false, false, _>(addrs, &mut checked);
        dxr.lookup_masked::<false, true, _>(addrs, &mut unchecked);
    }
    (checked, unchecked)
}

/// The masked batch lookup, unchecked and its checked twin, agrees with
/// the plain lookup in every format (short, long, wide, escaped sizes),
/// for lengths that leave tails and at every slice length from 0 to 300.
#[test]
fn masked_batch_matches_lookup_checked_and_unchecked() {
    let (rib, addrs) = mixed_table();
    for config in TEST_LAYOUTS {
        let (updater, dxr) = DxrUpdater::build(&config, &rib).unwrap();
        let stats = updater.stats(&dxr);
        assert!(
            stats.chunks[1] > 0 && stats.chunks[2] > 0,
            "{config} {stats:?}"
        );
        let want: Vec<_> = addrs.iter().map(|&a| dxr.lookup(a)).collect();
        let lengths = (0..=300).chain([1000, 4097, addrs.len()]);
        for len in lengths {
            // Slices starting at several offsets, so each length sees
            // different keys.
            for offset in [0, 20_000, addrs.len() / 2] {
                let offset = offset.min(addrs.len() - len);
                let (addrs, want) = (&addrs[offset..offset + len], &want[offset..offset + len]);
                let (checked, unchecked) = masked_twins(&dxr, addrs);
                let mut via_trait = vec![Some(u32::MAX); len + 3];
                dxr.lookup_batch(addrs, &mut via_trait);
                assert_eq!(checked, want, "{config} checked, {len} keys at {offset}");
                assert_eq!(
                    unchecked, want,
                    "{config} unchecked, {len} keys at {offset}"
                );
                assert_eq!(
                    &via_trait[..len],
                    want,
                    "{config} lookup_batch, {len} keys at {offset}"
                );
                assert_eq!(&via_trait[len..], [Some(u32::MAX); 3], "past the input");
                let mut words = vec![7u64; len + 3];
                dxr.lookup_batch_words(addrs, &mut words);
                let want_words: Vec<u64> = want.iter().map(|&w| word_of(w)).collect();
                assert_eq!(
                    &words[..len],
                    want_words,
                    "{config} lookup_batch_words, {len} keys at {offset}"
                );
                assert_eq!(&words[len..], [7; 3], "past the input");
            }
        }
    }
}

#[test]
fn prefetch_accepts_any_address() {
    let table = [1u32; 4];
    prefetch(table.as_ptr().wrapping_add(1 << 40));
    prefetch(std::ptr::null::<u8>());
}

#[test]
fn configs_parse_and_print_canonically() {
    let parse = |text: &str| DxrConfig::parse(text);
    assert_eq!(parse("dxr").unwrap(), DEFAULT_LAYOUT);
    assert_eq!(parse("dxr").unwrap().to_string(), "dxr:k=20");
    assert_eq!(parse("dxr:k=16").unwrap(), DxrConfig::single(16));
    assert_eq!(parse("dxr:d=12,x=8").unwrap(), DxrConfig::extended(12, 20));
    assert_eq!(parse("dxr:d=16,k=22").unwrap(), DxrConfig::extended(16, 22));
    assert_eq!(parse("dxr:d=16,k=22").unwrap().to_string(), "dxr:d=16,x=6");
    assert_eq!(parse("dxr:d=16,x=6").unwrap().to_string(), "dxr:d=16,x=6");
    assert_eq!(
        parse("dxr:k=20,align=4").unwrap(),
        DxrConfig::single(20).with_align(4)
    );
    // A stated step prints, so it stays stated.
    assert_eq!(
        parse("dxr:k=20,align=1").unwrap().to_string(),
        "dxr:k=20,align=1"
    );
    assert_eq!(parse("dxr:k=20").unwrap().align, None);
    assert_eq!(
        parse("dxr:d=16,x=4,align=8").unwrap().to_string(),
        "dxr:d=16,x=4,align=8"
    );
    for bad in [
        "dxr:k=25",
        "dxr:x=4",
        "dxr:d=12",
        "dxr:d=12,x=2",
        "dxr:d=16,x=9",
        "dxr:d=12,x=4,k=17",
        "dxr:q=1",
        "dxr:align=3",
        "dxr:align=0",
        "dxr:k=20,align=16",
        "dir24-8",
    ] {
        assert!(parse(bad).is_err(), "{bad}");
    }
}

/// A snapshot whose rebuild failed half way is completed with "no route"
/// entries, so the unchecked reads stay inside its arrays.
#[test]
fn failed_rebuilds_leave_readable_snapshots() {
    let (rib, addrs) = mixed_table();
    for config in TEST_LAYOUTS {
        let (_, mut dxr) = DxrUpdater::build(&config, &rib).unwrap();
        // What a rebuild leaves when it fails a third of the way: the
        // entries (D{K}R) or whole blocks (extended) built so far.
        if config.is_extended() {
            dxr.direct.truncate(dxr.direct.len() / 3);
            let blocks = dxr.direct.iter().max().map_or(0, |&id| id as usize + 1);
            dxr.ext.truncate(blocks << dxr.geometry.x_bits);
        } else {
            dxr.ext.truncate(dxr.ext.len() / 3 + 5);
        }
        dxr.fill_unbuilt();
        let direct_entries = if config.d_bits == 0 {
            0
        } else {
            1 << config.d_bits
        };
        assert_eq!(dxr.direct.len(), direct_entries);
        assert_eq!(dxr.ext.len() % (1 << dxr.geometry.x_bits), 0);
        let (checked, unchecked) = masked_twins(&dxr, &addrs);
        assert_eq!(checked, unchecked, "{config}");
    }
}

/// Updates patch small changes, rebuild in place for changes spanning more
/// than half of the chunks, and agree with the reference either way; the
/// default route spans no chunk (it is results slot 0).
#[test]
fn large_changes_rebuild_small_ones_patch() {
    use crate::fib::LocalFib;
    use crate::rib::Change;
    let (rib, addrs) = mixed_table();
    let p = |text: &str| text.parse::<Prefix<u32>>().unwrap();
    // (batch, whether it spans more than half of the chunks)
    let steps = [
        (vec![Change::Announce(p("0.0.0.0/0"), 77)], false),
        (vec![Change::Announce(p("10.0.0.0/8"), 78)], false),
        (vec![Change::Withdraw(p("0.0.0.0/0"))], false),
        (vec![Change::Announce(p("128.0.0.0/1"), 79)], false),
        (vec![Change::Announce(p("64.0.0.0/3"), 80)], false),
        (
            vec![
                Change::Withdraw(p("128.0.0.0/1")),
                Change::Announce(p("64.0.0.0/2"), 81),
            ],
            true,
        ),
        (vec![Change::Withdraw(p("10.0.0.0/8"))], false),
    ];
    for config in TEST_LAYOUTS {
        let mut fib = LocalFib::<u32, DxrUpdater>::with_config(config, rib.clone()).unwrap();
        let mut span_rebuilds = 0;
        for (batch, spans_most) in &steps {
            let summary = fib.apply(batch).unwrap();
            assert!(summary.rebuilt.is_none(), "the updater rebuilds itself");
            span_rebuilds += *spans_most as u64;
            let stats = fib.stats();
            assert_eq!(stats.span_rebuilds, span_rebuilds, "{config} {batch:?}");
            for &addr in &addrs[..30_000] {
                assert_eq!(
                    fib.lookup(addr),
                    fib.rib().lookup(addr),
                    "{config} {addr:#x}"
                );
            }
            let report = crate::verify::verify(fib.snapshot(), fib.rib(), 1000, 5);
            assert!(
                report.ok(),
                "{config} after {batch:?}: {}",
                report.mismatches[0]
            );
        }
    }
}

/// Freed range-table space is compacted by a rebuild: at once after a
/// small patch, at the next update after a large one (so that no update
/// pays for a large patch and a rebuild). The batches go to the updater
/// itself: the handles build anew a batch that changes more prefixes
/// than the table holds after it, as the withdrawal of the hosts does.
#[test]
fn compaction_follows_small_patches_at_once_and_large_ones_later() {
    use crate::rib::Change;
    let (mut rib, addrs) = mixed_table();
    let hosts: Vec<Prefix<u32>> = (0..70_000u32)
        .map(|i| Prefix::new_masked(0x2000_0000 + i * 5, 32))
        .collect();
    let withdraw_hosts: Vec<Change<u32>> = hosts.iter().map(|&h| Change::Withdraw(h)).collect();
    let p = |text: &str| text.parse::<Prefix<u32>>().unwrap();
    let patch =
        |updater: &mut DxrUpdater, dxr: &mut Dxr, rib: &mut Rib<u32>, batch: &[Change<u32>]| {
            let mut changed: Vec<Prefix<u32>> = batch.iter().map(|c| c.prefix()).collect();
            for &change in batch {
                rib.apply(change);
            }
            changed.sort_unstable();
            changed.dedup();
            updater.update(dxr, rib, &changed).unwrap();
        };
    let base = rib.clone();
    for config in TEST_LAYOUTS {
        rib.clone_from(&base);
        let (mut updater, mut dxr) = DxrUpdater::build(&config, &rib).unwrap();
        let check = |dxr: &Dxr, rib: &Rib<u32>, step: &str| {
            for &addr in &addrs[..30_000] {
                assert_eq!(dxr.lookup(addr), rib.lookup(addr), "{config} {step}");
            }
        };
        // Frees most of the range table (the wide chunks) in a patch that
        // also spans an eighth of the chunks: compaction waits.
        let mut batch = withdraw_hosts.clone();
        batch.push(Change::Announce(p("64.0.0.0/3"), 90));
        patch(&mut updater, &mut dxr, &mut rib, &batch);
        let stats = updater.stats(&dxr);
        assert_eq!((stats.compactions, stats.span_rebuilds), (0, 0), "{config}");
        assert!(
            stats.free_range_words * 4 > stats.range_bytes / 2,
            "{config} {stats:?}"
        );
        check(&dxr, &rib, "after the large patch");
        // The next update, however small, compacts.
        patch(
            &mut updater,
            &mut dxr,
            &mut rib,
            &[Change::Announce(p("10.1.2.0/24"), 91)],
        );
        let stats = updater.stats(&dxr);
        assert_eq!(
            (stats.compactions, stats.free_range_words),
            (1, 0),
            "{config}"
        );
        check(&dxr, &rib, "after the deferred compaction");
        // Back, then away again in a small patch: compaction at once.
        let announce: Vec<Change<u32>> = hosts.iter().map(|&h| Change::Announce(h, 5)).collect();
        patch(&mut updater, &mut dxr, &mut rib, &announce);
        patch(&mut updater, &mut dxr, &mut rib, &withdraw_hosts);
        let stats = updater.stats(&dxr);
        assert_eq!(
            (stats.compactions, stats.free_range_words),
            (2, 0),
            "{config}"
        );
        check(&dxr, &rib, "after the immediate compaction");
    }
}

#[test]
fn the_default_route_is_one_results_slot() {
    let rib = crate::engines::shared::testing::nested_table(0x0a01_0203u32);
    for spec in ["dxr:k=16", "dxr:k=20", "dxr:d=12,x=8", "dxr:d=16,x=5"] {
        let config = DxrConfig::parse(spec).unwrap();
        crate::engines::shared::testing::assert_default_route_is_one_slot::<u32, DxrUpdater, _>(
            &config,
            &rib,
            |snapshot| {
                (
                    snapshot.direct.clone(),
                    snapshot.ext.clone(),
                    snapshot.ranges.clone(),
                )
            },
        );
    }
}

/// `count` distinct random prefixes of lengths 8..=32, each with a label
/// of its own: nearly every chunk needs the wide format (6 bytes per
/// range). The lengths 8..=13 hold fewer prefixes than their share.
fn distinct_label_pairs(count: usize, seed: u64) -> Vec<(Prefix<u32>, Label)> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut seen = std::collections::HashSet::new();
    let mut pairs = Vec::with_capacity(count);
    while pairs.len() < count {
        let prefix = Prefix::new_masked(rng.random(), rng.random_range(8..=32u8));
        if seen.insert(prefix) {
            pairs.push((prefix, pairs.len() as Label));
        }
    }
    pairs
}

/// A range table past what the 22-bit base addresses in single words
/// (8 MiB) builds with chunk bases in steps of two words, and agrees with
/// the reference; stating that step builds the same snapshot.
#[test]
fn range_tables_past_the_base_field_double_align() {
    let rib = Rib::from_pairs(distinct_label_pairs(900_000, 3));
    let (updater, dxr) = DxrUpdater::build(&DEFAULT_LAYOUT, &rib).unwrap();
    let config = updater.config();
    assert_eq!(config, DEFAULT_LAYOUT.with_align(2));
    assert_eq!(dxr.config(), config);
    assert_eq!(config.to_string(), "dxr:k=20,align=2");
    assert!(dxr.ranges.len() > 1 << BASE_BITS, "{}", dxr.ranges.len());
    let report = crate::verify::verify(&dxr, &rib, 100_000, 9);
    assert!(report.ok(), "{}", report.mismatches[0]);
    let (_, stated) = DxrUpdater::build(&config, &rib).unwrap();
    assert_eq!(stated.ext, dxr.ext);
    assert_eq!(stated.ranges, dxr.ranges);
    // A stated step is kept: one word is an error naming the spec without
    // it, which fits.
    let error = DxrUpdater::build(&DEFAULT_LAYOUT.with_align(1), &rib)
        .expect_err("8 MiB cannot hold it")
        .to_string();
    assert!(error.contains("`dxr:k=20` fits too"), "{error}");
}

/// Patches that grow the range table past the base field's reach rebuild
/// it with a coarser step in place (no error reaches the caller), and the
/// snapshot agrees with the reference before and after.
#[test]
fn updates_past_the_base_field_double_align() {
    use crate::fib::LocalFib;
    use crate::rib::Change;
    let rib = Rib::from_pairs(distinct_label_pairs(550_000, 5));
    let mut fib = LocalFib::<u32, DxrUpdater>::with_config(DEFAULT_LAYOUT, rib).unwrap();
    assert_eq!(fib.snapshot().config().align, None);
    // Host routes with labels of their own, 30,000 per batch: each batch
    // touches at most 30,000 of the 2^20 chunks, so it patches.
    let mut rng = SmallRng::seed_from_u64(6);
    let mut aligns = Vec::new();
    for batch in 0..10u32 {
        let changes: Vec<Change<u32>> = (0..30_000u32)
            .map(|i| {
                Change::Announce(
                    Prefix::new_masked(rng.random(), 32),
                    1 << 24 | batch << 16 | i,
                )
            })
            .collect();
        let summary = fib.apply(&changes).unwrap();
        assert!(summary.rebuilt.is_none(), "the updater grows align itself");
        aligns.push(fib.snapshot().config().align_words());
        let addrs: Vec<u32> = changes
            .iter()
            .take(2_000)
            .map(|change| change.prefix().first())
            .chain((0..20_000).map(|_| rng.random()))
            .collect();
        for addr in addrs {
            assert_eq!(
                fib.lookup(addr),
                fib.rib().lookup(addr),
                "batch {batch}, {addr:#x}"
            );
        }
    }
    assert_eq!(aligns.first(), Some(&1), "{aligns:?}");
    assert_eq!(aligns.last(), Some(&2), "{aligns:?}");
    assert_eq!(fib.stats().span_rebuilds, 0);
    let report = crate::verify::verify(fib.snapshot(), fib.rib(), 100_000, 10);
    assert!(report.ok(), "{}", report.mismatches[0]);
}
