//! Building plain `bspl` from the reference table: each block's entries
//! (expansions and markers with their BMPs) and first probe, planned again
//! by updates that re-plan a block, and the full build. What the hybrid
//! shares with it (lengths, painting, placing entries) is in `place`.

use std::collections::HashMap;

/// The probe order over the tables (defined beside the entries both
/// builds place).
pub use super::place::SearchTree;
use super::place::{
    assemble, block_addrs, check_lengths, choose_lengths, group_blocks, level_of, paint,
    placed_entries, Assembly, Entry,
};
use super::{entry_value, first_entry, Bspl, BsplConfig, BsplUpdater, MAX_LABELS, NO_TABLES};
use crate::addr::Addr;
use crate::engine::BuildError;
use crate::engines::shared::expand::{expand, Expanded};
use crate::labels::LabelIndex;
use crate::prefix::{Label, Prefix};
use crate::rib::Rib;

/// The most entries all tables may hold (defined beside the length checks).
pub use super::place::MAX_ENTRIES;

/// The tables `lo..=hi` a block's prefixes `inner` expand into (`NO_TABLES`
/// if none).
pub(crate) fn block_tables<A: Addr>(
    inner: &[(Prefix<A>, Label)],
    lengths: &[u8],
) -> (usize, usize) {
    let levels = inner.iter().map(|(p, _)| level_of(lengths, p.plen()));
    match (levels.clone().min(), levels.max()) {
        (Some(lo), Some(hi)) => (lo, hi),
        _ => NO_TABLES,
    }
}

/// The entries of one block whose search over its tables `lo..=hi` probes
/// `root` first, then follows `tree`: the expansions of its prefixes
/// (`expanded`, from [`expand`] over `inner`, the block's prefixes longer
/// than the first level, sorted) and the markers each prefix needs along
/// that search, merged so each `(table, key)` is one entry. Appends them to
/// `out`.
pub(crate) fn block_entries<A: Addr>(
    inner: &[(Prefix<A>, Label)],
    expanded: &[Expanded<A>],
    lengths: &[u8],
    tree: &SearchTree,
    (lo, hi): (usize, usize),
    root: usize,
    out: &mut Vec<Entry<A>>,
) {
    let level = |plen: u8| level_of(lengths, plen);
    // (table, key, length of the BMP, BMP, marker): the longest BMP wins.
    // The expansions go in table by table: each table's strings are then
    // one sorted run, which the stable sort below merges in linear time.
    let mut candidates: Vec<(u8, A, u8, Option<Label>, bool)> = Vec::with_capacity(expanded.len());
    for table in lo..=hi {
        candidates.extend(
            expanded
                .iter()
                .filter(|e| level(e.prefix.plen()) == table)
                .map(|e| {
                    (
                        table as u8,
                        e.prefix.addr(),
                        e.origin.plen(),
                        Some(e.label),
                        false,
                    )
                }),
        );
    }
    debug_assert_eq!(
        candidates.len(),
        expanded.len(),
        "every expansion in lo..=hi"
    );
    // The prefixes containing the current one, shortest first.
    let mut ancestors: Vec<(Prefix<A>, Label)> = Vec::new();
    for &(prefix, label) in inner {
        while ancestors.last().is_some_and(|(a, _)| !a.covers(prefix)) {
            ancestors.pop();
        }
        let target = level(prefix.plen());
        let (mut l, mut h) = (lo, hi);
        let mut r = root;
        loop {
            if r == target {
                break;
            }
            if target > r {
                // The search turns towards longer lengths at table r, so
                // the prefix leaves a marker there, whose BMP is the
                // longest ancestor that fits table r.
                let plen = lengths[r];
                let bmp = ancestors.iter().rev().find(|(a, _)| a.plen() <= plen);
                candidates.push((
                    r as u8,
                    prefix.addr().masked(plen),
                    bmp.map_or(0, |(a, _)| a.plen()),
                    bmp.map(|&(_, label)| label),
                    true,
                ));
                l = r + 1;
            } else {
                h = r - 1;
            }
            r = tree.root(l, h);
        }
        ancestors.push((prefix, label));
    }
    candidates.sort_by_key(|c| (c.0, c.1, c.2));
    for group in candidates.chunk_by(|a, b| (a.0, a.1) == (b.0, b.1)) {
        // Sorted by BMP length within the group: the last is the longest.
        let &(table, key, _, bmp, _) = group.last().expect("groups are not empty");
        out.push(Entry {
            level: table,
            key,
            bmp,
            marker: group.iter().any(|c| c.4),
        });
    }
}

/// The entries of a block (see [`block_entries`]) with the first probe
/// that minimises the block's expected probes for uniformly random
/// addresses (fewer entries breaking ties): appends them to `out` and
/// returns the block's tables and first probe. The block is the addresses
/// `block`.
pub(crate) fn plan_block<A: Addr>(
    inner: &[(Prefix<A>, Label)],
    expanded: &[Expanded<A>],
    lengths: &[u8],
    tree: &SearchTree,
    block: (A, A),
    out: &mut Vec<Entry<A>>,
) -> ((usize, usize), usize) {
    let tables = block_tables(inner, lengths);
    let (lo, hi) = tables;
    if lo >= hi {
        block_entries(inner, expanded, lengths, tree, tables, lo, out);
        return (tables, lo);
    }
    // INVARIANT: a first probe other than the tree's own root of `lo..=hi`
    // adds a level above the tree below it, so only first probes whose
    // search still fits the whole tree's height (ceil(log2(k + 1)) for k
    // tables) are candidates; the tree's root always is one.
    let bound = tree.height(0, lengths.len().saturating_sub(1));
    let start = out.len();
    let mut best: Option<(f64, usize, usize, Vec<Entry<A>>)> = None;
    for root in lo..=hi {
        let below_left = if root > lo {
            tree.height(lo, root - 1)
        } else {
            0
        };
        if 1 + below_left.max(tree.height(root + 1, hi)) > bound {
            continue;
        }
        block_entries(inner, expanded, lengths, tree, tables, root, out);
        let entries = out.split_off(start);
        let probes = probe_volume(&entries, lengths, tree, tables, root, block);
        let better = best
            .as_ref()
            .is_none_or(|(p, _, n, _)| probes < *p || probes == *p && entries.len() < *n);
        if better {
            best = Some((probes, root, entries.len(), entries));
        }
    }
    let (_, root, _, entries) = best.expect("lo < hi: at least one root");
    out.extend(entries);
    (tables, root)
}

/// The probes a search of every address of `block` makes (as f64, the
/// block can have 2^120 addresses) over the tables of `entries`, probing
/// `root` first: exact, by walking the intervals on which every table's
/// membership is constant.
///
/// `entries` comes sorted by table, then key, from [`block_entries`], so
/// each table's entries are one sorted run. The intervals are walked in
/// address order, so the keys a table is asked for never decrease, and one
/// cursor per table answers every probe with amortised O(1) steps: a block
/// of millions of expanded strings (a dense /96 hashed at /112 and /128)
/// is planned in linear time and memory, where a hash map of its entries
/// cost several times the entries themselves for every candidate root.
fn probe_volume<A: Addr>(
    entries: &[Entry<A>],
    lengths: &[u8],
    tree: &SearchTree,
    (lo, hi): (usize, usize),
    root: usize,
    (first, last): (A, A),
) -> f64 {
    debug_assert!(
        entries
            .windows(2)
            .all(|w| (w[0].level, w[0].key) < (w[1].level, w[1].key)),
        "block entries sorted by table and key"
    );
    let mut runs: Vec<&[Entry<A>]> = vec![&[]; lengths.len()];
    for run in entries.chunk_by(|a, b| a.level == b.level) {
        runs[run[0].level as usize] = run;
    }
    let mut cursors = vec![0usize; lengths.len()];
    let mut cuts: Vec<A> = Vec::with_capacity(2 * entries.len() + 1);
    cuts.push(first);
    for e in entries {
        let string = Prefix::new_masked(e.key, lengths[e.level as usize]);
        cuts.push(string.first());
        if let Some(next) = string.last().checked_next().filter(|&n| n <= last) {
            cuts.push(next);
        }
    }
    // One sorted run per table: the stable sort merges them.
    cuts.sort();
    cuts.dedup();
    let mut volume = 0.0;
    for (i, &start) in cuts.iter().enumerate() {
        let end = cuts
            .get(i + 1)
            .map_or(last.to_u128(), |next| next.to_u128() - 1);
        let (mut l, mut h, mut r) = (lo, hi, root);
        let mut probes = 1;
        loop {
            let key = start.masked(lengths[r]);
            let (run, cursor) = (runs[r], &mut cursors[r]);
            while run.get(*cursor).is_some_and(|e| e.key < key) {
                *cursor += 1;
            }
            let found = run.get(*cursor).filter(|e| e.key == key);
            match found.map(|e| e.marker) {
                Some(marker) if marker && r < h => l = r + 1,
                Some(_) => break,
                None if r > l => h = r - 1,
                None => break,
            }
            r = tree.root(l, h);
            probes += 1;
        }
        volume += probes as f64 * (end - start.to_u128() + 1) as f64;
    }
    volume
}

/// Builds `bspl` (not the hybrid) from `rib`.
pub(crate) fn build<A: Addr>(
    config: &BsplConfig,
    rib: &Rib<A>,
) -> Result<(BsplUpdater<A>, Bspl<A>), BuildError> {
    let engine = config.to_string();
    let limit = |why: String| BuildError::Limit {
        engine: engine.clone(),
        why,
    };
    let first_bits = config.first;
    let prefixes: Vec<(Prefix<A>, Label)> = rib.iter().collect();
    let (lengths, program_ms, estimate) = choose_lengths(config, &prefixes, &engine)?;
    let inner: Vec<(Prefix<A>, Label)> = prefixes
        .iter()
        .copied()
        .filter(|(p, _)| p.plen() > first_bits)
        .collect();
    check_lengths(&inner, &lengths).map_err(limit)?;

    let mut labels = LabelIndex::new(&engine, MAX_LABELS);
    let mut first = vec![first_entry(0, NO_TABLES, 0); 1 << first_bits];
    paint(
        &mut first,
        first_bits,
        prefixes.iter().copied(),
        (0, (1 << first_bits) - 1),
        &mut labels,
        0,
    )?;
    drop(prefixes);

    // The search tree weighs each table by the address space its
    // expansions cover, so expand every block first.
    let groups = group_blocks(&inner, first_bits);
    let mut weights = vec![0f64; lengths.len()];
    let mut expansions = Vec::with_capacity(groups.len());
    for (_, range) in &groups {
        let expanded = expand(&inner[range.clone()], &lengths).map_err(|e| limit(e.to_string()))?;
        for e in &expanded {
            weights[level_of(&lengths, e.prefix.plen())] += (e.prefix.size() as f64).max(1.0);
        }
        expansions.push(expanded);
    }
    let tree = SearchTree::weighted(&weights);

    let mut per_level: Vec<Vec<(A, u32)>> = vec![Vec::new(); lengths.len()];
    let mut blocks: HashMap<u32, Vec<(u8, A)>> = HashMap::with_capacity(groups.len());
    let mut entries = Vec::new();
    for ((block, range), expanded) in groups.into_iter().zip(expansions) {
        entries.clear();
        let addrs = block_addrs((block as usize, block as usize), first_bits);
        let (tables, root) = plan_block(
            &inner[range],
            &expanded,
            &lengths,
            &tree,
            addrs,
            &mut entries,
        );
        let placed = placed_entries(&entries, &mut labels)?;
        for e in &placed {
            per_level[e.level as usize].push((e.key, e.value));
        }
        first[block as usize] = first_entry(entry_value(first[block as usize]), tables, root);
        blocks.insert(block, placed.iter().map(|e| (e.level, e.key)).collect());
    }
    drop(inner);
    labels.set_default(rib.default_route());

    assemble(Assembly {
        config,
        engine,
        labels,
        first,
        first_bits,
        lengths,
        tree,
        trie: Vec::new(),
        trie_nodes: HashMap::new(),
        trie_free: Vec::new(),
        per_level,
        blocks,
        program_ms,
        estimate,
    })
}

#[cfg(test)]
mod tests {
    use super::super::place::merge_windows;
    use super::*;
    use crate::engine::{EngineConfig, Lookup};

    #[test]
    fn trees_have_least_height_and_favour_heavy_tables() {
        let balanced = SearchTree::weighted(&[1.0; 7]);
        assert_eq!(balanced.root(0, 6), 3);
        assert_eq!(balanced.root(0, 2), 1);
        assert_eq!(balanced.root(4, 6), 5);
        assert_eq!(balanced.root(5, 6), 5);
        assert_eq!(balanced.height(0, 6), 3);
        assert_eq!(balanced.height(4, 6), 2);
        assert_eq!(balanced.height(5, 6), 2);
        assert_eq!(balanced.height(6, 5), 0);
        let widest = SearchTree::weighted(&[1.0; 15]);
        assert_eq!(widest.height(0, 14), 4);
        // A heavy table goes to the root as far as the height allows.
        let heavy = SearchTree::weighted(&[1.0, 100.0, 1.0]);
        assert_eq!(heavy.root(0, 2), 1);
        let skewed = SearchTree::weighted(&[1.0, 1.0, 100.0]);
        // Three tables need two probes: the heavy one cannot be above both.
        assert_eq!(skewed.root(0, 2), 1);
        let two = SearchTree::weighted(&[100.0, 1.0]);
        assert_eq!(two.root(0, 1), 0);
        let two = SearchTree::weighted(&[1.0, 100.0]);
        assert_eq!(two.root(0, 1), 1);
        assert_eq!(two.root(0, 0), 0);
        assert_eq!(SearchTree::weighted(&[1.0; 15]).root(0, 14), 7);
    }

    fn p(text: &str) -> Prefix<u32> {
        text.parse().unwrap()
    }

    #[test]
    fn markers_carry_the_longest_ancestor_that_fits() {
        // First level 16, tables 20, 24, 32: the tree probes 24 first.
        let lengths = [20, 24, 32];
        let tree = SearchTree::weighted(&[1.0, 1.0, 1.0]);
        let inner = vec![
            (p("10.1.0.0/18"), 1),
            (p("10.1.0.0/22"), 2),
            (p("10.1.0.0/30"), 3),
            (p("10.1.16.0/20"), 4),
        ];
        let expanded = expand(&inner, &lengths).unwrap();
        let mut out = Vec::new();
        let range = block_tables(&inner, &lengths);
        assert_eq!(range, (0, 2));
        block_entries(&inner, &expanded, &lengths, &tree, range, 1, &mut out);
        let find = |level: u8, key: &str| {
            *out.iter()
                .find(|e| e.level == level && e.key == p(key).addr())
                .unwrap_or_else(|| panic!("no entry {key} in table {level}"))
        };
        // /18 expands to four /20s, one captured by the /20 inside it.
        assert_eq!(find(0, "10.1.0.0/20").bmp, Some(1));
        assert_eq!(find(0, "10.1.48.0/20").bmp, Some(1));
        assert_eq!(find(0, "10.1.16.0/20").bmp, Some(4));
        assert!(!find(0, "10.1.0.0/20").marker, "20 is left of the root");
        // /22 expands to four /24s; the /30 leaves a marker on 10.1.0.0/24.
        let marked = find(1, "10.1.0.0/24");
        assert!(marked.marker);
        assert_eq!(marked.bmp, Some(2));
        assert!(!find(1, "10.1.1.0/24").marker);
        assert_eq!(find(2, "10.1.0.0/32").bmp, Some(3));
        assert_eq!(out.len(), 4 + 4 + 4);
    }

    #[test]
    fn lengths_are_checked() {
        let inner = vec![(p("10.1.0.0/17"), 1), (p("10.1.0.0/30"), 2)];
        assert!(check_lengths(&inner, &[24, 32]).is_ok());
        let err = check_lengths(&inner, &[24]).unwrap_err();
        assert!(err.contains("10.1.0.0/30 is longer"), "{err}");
        let wide: Vec<(Prefix<u128>, Label)> = vec![("2001:db8::/33".parse().unwrap(), 1)];
        let err = check_lengths(&wide, &[64]).unwrap_err();
        assert!(
            err.contains("2^31") && err.contains("between 33 and 64"),
            "{err}"
        );
        assert_eq!(
            merge_windows(vec![(5, 6), (0, 1), (2, 3), (3, 4), (9, 9)]),
            vec![(0, 6), (9, 9)]
        );
    }

    /// A seeded table of /17–/32 prefixes under a few /8s.
    fn random_table(count: usize, seed: u64) -> Rib<u32> {
        let mut state = seed;
        let mut next = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 32) as u32
        };
        Rib::from_pairs((0..count).map(|_| {
            let addr = (10 + next() % 4) << 24 | next() >> 8;
            (
                Prefix::new_masked(addr, 17 + (next() % 16) as u8),
                next() % 40,
            )
        }))
    }

    /// Answers of `snapshot` against `rib` at every prefix's edges.
    fn check(snapshot: &Bspl<u32>, rib: &Rib<u32>) {
        for (prefix, _) in rib.iter() {
            for addr in [prefix.first(), prefix.last(), prefix.last().wrapping_add(1)] {
                assert_eq!(snapshot.lookup(addr), rib.lookup(addr), "{addr:#x}");
            }
        }
    }

    /// A batch that withdraws nearly the whole table would remove entry by
    /// entry what a build never places: it is planned as too costly, with
    /// the tables as they were; written anyway (the fallback when a build
    /// fails) it answers as the reference, and a small batch is within the
    /// budget.
    #[test]
    fn batches_costlier_than_builds_are_given_up_before_writing() {
        let config = BsplConfig::parse("bspl:levels=3").unwrap();
        let rib = random_table(3000, 7);
        let (mut updater, mut snapshot) = build(&config, &rib).unwrap();
        let mut shrunk = rib.clone();
        let mut changed: Vec<Prefix<u32>> = Vec::new();
        for (i, (prefix, _)) in rib.iter().enumerate() {
            if i % 20 != 0 {
                shrunk.remove(prefix);
                changed.push(prefix);
            }
        }
        let tables = |s: &Bspl<u32>| (s.b32.clone(), s.s32.clone(), s.first.clone());
        let before = tables(&snapshot);
        let batch = updater.plan_batch(&snapshot, &shrunk, &changed).unwrap();
        assert!(
            batch.costs_more_than_builds(),
            "{} against {}",
            batch.work,
            batch.build_work
        );
        assert!(before == tables(&snapshot), "planning writes nothing");
        updater.write_batch(&mut snapshot, &shrunk, batch).unwrap();
        check(&snapshot, &shrunk);
        let counted: usize = updater.blocks.values().map(Vec::len).sum();
        assert_eq!(
            updater.entries(),
            counted,
            "the tables' entry counts follow the blocks"
        );

        let mut small = shrunk.clone();
        let host = Prefix::new_masked(0x0b01_0203, 32);
        small.insert(host, 5);
        let batch = updater.plan_batch(&snapshot, &small, &[host]).unwrap();
        assert!(!batch.costs_more_than_builds());
        updater.write_batch(&mut snapshot, &small, batch).unwrap();
        check(&snapshot, &small);
    }

    /// A batch that multiplies a table's entries enlarges it once, for the
    /// entries it brings, not once per overflow.
    #[test]
    fn a_batch_enlarges_each_table_once() {
        let config = BsplConfig::parse("bspl:lengths=16+24+32").unwrap();
        let rib = random_table(500, 11);
        let (mut updater, mut snapshot) = build(&config, &rib).unwrap();
        let mut grown = rib.clone();
        let mut changed = Vec::new();
        for i in 0..20_000u32 {
            let host = Prefix::new_masked(0x0c00_0000 | i.wrapping_mul(0x9e37_79b9) >> 8, 32);
            grown.insert(host, i % 40);
            changed.push(host);
        }
        changed.sort_unstable();
        changed.dedup();
        let batch = updater.plan_batch(&snapshot, &grown, &changed).unwrap();
        assert!(!batch.enlarge.is_empty(), "the /32 table grows fortyfold");
        let enlarged = batch.enlarge.len() as u64;
        updater.write_batch(&mut snapshot, &grown, batch).unwrap();
        assert_eq!(updater.build_stats.update_growths, enlarged);
        check(&snapshot, &grown);
        let counted: usize = updater.blocks.values().map(Vec::len).sum();
        assert_eq!(updater.entries(), counted);
    }
}
