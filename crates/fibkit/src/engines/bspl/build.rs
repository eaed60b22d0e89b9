//! Building `bspl`: the target lengths, the first level, each block's
//! entries (expansions and markers with their BMPs), the search tree, the
//! seed search; and the block rebuilds that updates are made of.

use std::collections::HashMap;
use std::time::Instant;

use super::levels::{plan_levels, MAX_EXPANSION_BITS};
use super::table::{Bucket, Bucket128, Bucket32, Bucket64, Kind, Level, Placer, SeedWork, WINDOW};
use super::{
    entry_value, first_entry, Bspl, BsplConfig, BsplStats, BsplUpdater, LengthPlan, MARKER,
    MAX_HASH_LEVELS, MAX_LABELS, NO_TABLES,
};
use crate::addr::Addr;
use crate::engine::BuildError;
use crate::engines::shared::expand::{expand, Expanded};
use crate::labels::LabelIndex;
use crate::prefix::{Label, Prefix};
use crate::rib::Rib;

/// Most entries all tables together may hold (2^28 entries of at least 8
/// bytes: 2 GiB and more), checked before anything is expanded.
pub const MAX_ENTRIES: u64 = 1 << 28;
/// How often a build may enlarge a table (by a quarter each time) when a
/// window overflows or a group finds no seed.
const MAX_GROWTHS: u32 = 8;

/// One table entry of a block: its table, its key (an address whose first
/// bits, as many as the table's length, are the key) and its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Placed<A> {
    pub level: u8,
    pub key: A,
    pub value: u32,
}

/// The order in which a block's tables are probed: for every range
/// `lo..=hi` of table indices, the table probed first. It is one search
/// tree over all tables, restricted to the range (its shallowest node in
/// the range), so every block's search is at most as deep as the tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SearchTree {
    // 16 x 16 so that any 4-bit lo/hi indexes it without a bounds check.
    roots: [[u8; 16]; 16],
}

impl Default for SearchTree {
    fn default() -> Self {
        SearchTree::weighted(&[])
    }
}

impl SearchTree {
    /// The table `lo..=hi` probes first (`lo <= hi < 16`).
    #[inline(always)]
    pub fn root(&self, lo: usize, hi: usize) -> usize {
        self.roots[lo & 15][hi & 15] as usize
    }

    /// The tree over `weights.len()` tables of least height (so no search
    /// takes more than `ceil(log2(k + 1))` probes) that, among those,
    /// minimises the sum of each table's weight times its depth. The build
    /// weighs a table by the address space its expanded prefixes cover, so
    /// the tables that end most searches of random addresses are probed
    /// first.
    pub fn weighted(weights: &[f64]) -> Self {
        let n = weights.len();
        assert!(n <= MAX_HASH_LEVELS, "at most {MAX_HASH_LEVELS} tables");
        let height = (0..=4).find(|&h| (1usize << h) > n).expect("n < 16");
        // cost[h][lo][len], root[h][lo][len] for the subtree over lo..lo+len.
        let idx = |lo: usize, len: usize| lo * (n + 1) + len;
        let size = (n + 1) * (n + 1);
        let mut cost = vec![vec![f64::INFINITY; size]; height + 1];
        let mut root = vec![vec![0usize; size]; height + 1];
        for h in 0..=height {
            for lo in 0..=n {
                cost[h][idx(lo, 0)] = 0.0;
            }
            if h == 0 {
                continue;
            }
            for len in 1..=n.min((1 << h) - 1) {
                for lo in 0..=n - len {
                    let weight: f64 = weights[lo..lo + len].iter().sum();
                    let center = 2 * lo + len - 1; // twice the middle index
                    let mut best = (f64::INFINITY, usize::MAX, 0);
                    for r in lo..lo + len {
                        let below = cost[h - 1][idx(lo, r - lo)]
                            + cost[h - 1][idx(r + 1, lo + len - r - 1)];
                        // Ties go to the most central root.
                        let key = (weight + below, (2 * r).abs_diff(center), r);
                        if key.0 < best.0 || key.0 == best.0 && key.1 < best.1 {
                            best = key;
                        }
                    }
                    cost[h][idx(lo, len)] = best.0;
                    root[h][idx(lo, len)] = best.2;
                }
            }
        }
        let mut depth = [0u8; 16];
        let mut pending = vec![(0usize, n, height, 0u8)];
        while let Some((lo, len, h, d)) = pending.pop() {
            if len == 0 {
                continue;
            }
            let r = root[h][idx(lo, len)];
            depth[r] = d;
            pending.push((lo, r - lo, h - 1, d + 1));
            pending.push((r + 1, lo + len - r - 1, h - 1, d + 1));
        }
        let mut roots = [[0u8; 16]; 16];
        for (lo, row) in roots.iter_mut().enumerate().take(n) {
            for (hi, root) in row.iter_mut().enumerate().take(n).skip(lo) {
                let shallowest = (lo..=hi).min_by_key(|&j| depth[j]).expect("lo <= hi");
                *root = shallowest as u8;
            }
        }
        SearchTree { roots }
    }

    /// The most probes a search over tables `lo..=hi` takes when it
    /// follows the tree from `root(lo, hi)` (0 when `lo > hi`).
    pub fn height(&self, lo: usize, hi: usize) -> usize {
        if lo > hi {
            return 0;
        }
        let r = self.root(lo, hi);
        let left = if r > lo { self.height(lo, r - 1) } else { 0 };
        1 + left.max(self.height(r + 1, hi))
    }
}

/// The table index of a prefix of length `plen`: the first target length
/// at least as long (`lengths.len()` if none is).
pub(crate) fn level_of(lengths: &[u8], plen: u8) -> usize {
    lengths.partition_point(|&l| l < plen)
}

/// Checks that every prefix of `inner` (all longer than the first level)
/// has a target length no more than [`MAX_EXPANSION_BITS`] longer, and
/// that all expansions together stay under [`MAX_ENTRIES`]; `Err` says
/// which prefix fails and what would work.
pub(crate) fn check_lengths<A: Addr>(
    inner: &[(Prefix<A>, Label)],
    lengths: &[u8],
) -> Result<(), String> {
    let mut total = 0u64;
    for &(prefix, _) in inner {
        let plen = prefix.plen();
        let Some(&target) = lengths.get(level_of(lengths, plen)) else {
            return Err(format!(
                "{prefix} is longer than the longest target length {} \
                 (end `lengths` at {plen} or longer, or give `levels` for the program to choose)",
                lengths.last().map_or(0, |&l| l)
            ));
        };
        if target - plen > MAX_EXPANSION_BITS {
            return Err(format!(
                "{prefix} would expand into 2^{} prefixes of length {target}, more than the \
                 2^{MAX_EXPANSION_BITS} one prefix may (add a length between {plen} and {target} \
                 to `lengths`, or use more `levels`)",
                target - plen
            ));
        }
        total += 1 << (target - plen);
    }
    if total > MAX_ENTRIES {
        return Err(format!(
            "the prefixes expand into {total} entries, more than the 2^28 the tables may hold \
             (use more `levels` or longer first level)"
        ));
    }
    Ok(())
}

/// An entry of a block's tables, before its BMP gets a label index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry<A> {
    /// Its table.
    pub level: u8,
    /// Its address bits (the address with the table's length).
    pub key: A,
    /// The longest prefix longer than the first level and no longer than
    /// the table's length that covers it (`None`: the block's BMP).
    pub bmp: Option<Label>,
    /// Whether a search reaching it must go on to longer lengths.
    pub marker: bool,
}

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

/// Sets the BMP label index of a first-level entry.
#[inline]
fn with_value(entry: u64, value: u32) -> u64 {
    entry & !0xffff_ffff | value as u64
}

/// The first-level block of `addr`.
#[inline]
fn block_of<A: Addr>(addr: A, first_bits: u8) -> usize {
    addr.bits(0, first_bits as u32) as usize
}

/// The addresses of blocks `first..=last`.
pub(crate) fn block_addrs<A: Addr>((first, last): (usize, usize), first_bits: u8) -> (A, A) {
    let shift = A::BITS - first_bits;
    let lo = A::from_u128((first as u128) << shift);
    let hi = A::from_u128((last as u128) << shift).with_host_bits_set(first_bits);
    (lo, hi)
}

/// Rewrites the BMPs of first-level entries `window` (block numbers,
/// inclusive) from `prefixes`, every prefix intersecting the window in
/// sorted order (covering ones first): a prefix of length `1..=first_bits`
/// paints the blocks it covers, a later (longer, nested) one over it. The
/// default route paints nothing: it is results slot 0, what index 0 names.
/// `flag` is ORed into every label index (the hybrid's leaf flag).
pub(crate) fn paint<A: Addr>(
    first: &mut [u64],
    first_bits: u8,
    prefixes: impl Iterator<Item = (Prefix<A>, Label)>,
    window: (usize, usize),
    labels: &mut LabelIndex,
    flag: u32,
) -> Result<(), BuildError> {
    for entry in &mut first[window.0..=window.1] {
        *entry = with_value(*entry, flag);
    }
    for (prefix, label) in prefixes.filter(|(p, _)| (1..=first_bits).contains(&p.plen())) {
        let index = flag | labels.index(Some(label))?;
        let lo = block_of(prefix.first(), first_bits).max(window.0);
        let hi = block_of(prefix.last(), first_bits).min(window.1);
        for entry in &mut first[lo..=hi] {
            *entry = with_value(*entry, index);
        }
    }
    Ok(())
}

/// The prefixes longer than `first_bits` grouped by block: `(block, range
/// of inner)`, in address order.
pub(crate) fn group_blocks<A: Addr>(
    inner: &[(Prefix<A>, Label)],
    first_bits: u8,
) -> Vec<(u32, std::ops::Range<usize>)> {
    let mut groups: Vec<(u32, std::ops::Range<usize>)> = Vec::new();
    for (i, (prefix, _)) in inner.iter().enumerate() {
        let block = block_of(prefix.addr(), first_bits) as u32;
        match groups.last_mut() {
            Some((b, range)) if *b == block => range.end = i + 1,
            _ => groups.push((block, i..i + 1)),
        }
    }
    groups
}

/// The target lengths of `config` for `prefixes`, with the program's time
/// (ms) and estimate (bytes).
pub(crate) fn choose_lengths<A: Addr>(
    config: &BsplConfig,
    prefixes: &[(Prefix<A>, Label)],
    engine: &str,
) -> Result<(Vec<u8>, f64, f64), BuildError> {
    let limit = |why: String| BuildError::Limit {
        engine: engine.to_string(),
        why,
    };
    let lengths = match &config.plan {
        LengthPlan::Lengths(lengths) => {
            if lengths.last().is_some_and(|&l| l > A::BITS) {
                return Err(limit(format!(
                    "lengths beyond {} bits cannot hold {} prefixes",
                    A::BITS,
                    A::FAMILY
                )));
            }
            return Ok((lengths.clone(), 0.0, 0.0));
        }
        LengthPlan::Levels(levels) => Some(*levels),
        LengthPlan::Auto => None,
    };
    let sorted: Vec<(A, u8)> = prefixes.iter().map(|(p, _)| (p.addr(), p.plen())).collect();
    let plan = plan_levels(&sorted, config.first, lengths).map_err(limit)?;
    Ok((
        plan.lengths,
        plan.time.as_secs_f64() * 1e3,
        plan.estimated_bytes,
    ))
}

/// Builds `bspl` (not the hybrid) from `rib`.
pub(crate) fn build<A: Addr>(
    config: &BsplConfig,
    rib: &Rib<A>,
) -> Result<(BsplUpdater<A>, Bspl<A>), BuildError> {
    if config.hybrid {
        return super::hybrid::build(config, rib);
    }
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

/// What a full build (plain or hybrid) has decided, before its hash tables
/// are filled: both builds end the same way, in [`assemble`].
pub(crate) struct Assembly<'a, A> {
    pub(crate) config: &'a BsplConfig,
    /// The spec, for limit errors.
    pub(crate) engine: String,
    pub(crate) labels: LabelIndex,
    pub(crate) first: Vec<u64>,
    pub(crate) first_bits: u8,
    pub(crate) lengths: Vec<u8>,
    pub(crate) tree: SearchTree,
    /// Hybrid only: the tries' nodes, each block's nodes, the free lists.
    pub(crate) trie: Vec<u32>,
    pub(crate) trie_nodes: HashMap<u32, Vec<u32>>,
    pub(crate) trie_free: Vec<Vec<u32>>,
    pub(crate) per_level: Vec<Vec<(A, u32)>>,
    pub(crate) blocks: HashMap<u32, Vec<(u8, A)>>,
    pub(crate) program_ms: f64,
    pub(crate) estimate: f64,
}

/// Fills the hash tables of a full build and returns its updater and
/// snapshot.
pub(crate) fn assemble<A: Addr>(
    parts: Assembly<'_, A>,
) -> Result<(BsplUpdater<A>, Bspl<A>), BuildError> {
    let Assembly {
        config,
        engine,
        labels,
        first,
        first_bits,
        lengths,
        tree,
        trie,
        trie_nodes,
        trie_free,
        per_level,
        blocks,
        program_ms,
        estimate,
    } = parts;
    let mut snapshot = Bspl {
        first,
        first_bits,
        levels: Box::new([Level::default(); 16]),
        level_count: lengths.len() as u8,
        tree: Box::new(tree),
        b32: Vec::new(),
        b64: Vec::new(),
        b128: Vec::new(),
        s32: Vec::new(),
        s64: Vec::new(),
        s128: Vec::new(),
        trie,
        hybrid: config.hybrid,
        results: Vec::new(),
        _family: std::marker::PhantomData,
    };
    let mut stats = BsplStats {
        first_bits,
        program_ms,
        estimated_table_bytes: estimate,
        ..BsplStats::default()
    };
    fill_tables(&mut snapshot, &lengths, &per_level, &mut stats)
        .map_err(|why| BuildError::Limit { engine, why })?;
    labels.sync(&mut snapshot.results);
    let updater = BsplUpdater {
        config: config.clone(),
        labels,
        table_entries: std::array::from_fn(|j| per_level.get(j).map_or(0, Vec::len)),
        blocks,
        build_stats: Box::new(stats),
        trie_nodes,
        trie_free,
    };
    Ok((updater, snapshot))
}

/// The entries of a block as placed values: marker flag and BMP index.
pub(crate) fn placed_entries<A: Addr>(
    entries: &[Entry<A>],
    labels: &mut LabelIndex,
) -> Result<Vec<Placed<A>>, BuildError> {
    entries
        .iter()
        .map(|e| {
            Ok(Placed {
                level: e.level,
                key: e.key,
                value: if e.marker { MARKER } else { 0 } | labels.index(e.bmp)?,
            })
        })
        .collect()
}

/// Fills the tables of `lengths` with `per_level` entries, each table
/// sized for the build's fill and enlarged by a quarter when a window
/// overflows or a group finds no seed; records the search in `stats`.
pub(crate) fn fill_tables<A: Addr>(
    snapshot: &mut Bspl<A>,
    lengths: &[u8],
    per_level: &[Vec<(A, u32)>],
    stats: &mut BsplStats,
) -> Result<(), String> {
    let started = Instant::now();
    for (j, (&plen, entries)) in lengths.iter().zip(per_level).enumerate() {
        let mut level = Level {
            plen,
            kind: Kind::of(plen),
            base: 0,
            windows: 0,
            salt: Level::salt_of(j),
        };
        match level.kind {
            Kind::K32 => fill_level(
                &mut level,
                entries,
                &mut snapshot.b32,
                &mut snapshot.s32,
                stats,
            ),
            Kind::K64 => fill_level(
                &mut level,
                entries,
                &mut snapshot.b64,
                &mut snapshot.s64,
                stats,
            ),
            Kind::K128 => fill_level(
                &mut level,
                entries,
                &mut snapshot.b128,
                &mut snapshot.s128,
                stats,
            ),
        }?;
        snapshot.levels[j] = level;
    }
    stats.seed_search_ms = started.elapsed().as_secs_f64() * 1e3;
    Ok(())
}

/// Appends the table `level` for `entries` to the layout's arrays.
fn fill_level<A: Addr, B: Bucket>(
    level: &mut Level,
    entries: &[(A, u32)],
    buckets: &mut Vec<B>,
    seeds: &mut Vec<u8>,
    stats: &mut BsplStats,
) -> Result<(), String> {
    let keys: Vec<(B::Key, u32)> = entries
        .iter()
        .map(|&(addr, value)| (B::key(addr, level.plen), value))
        .collect();
    let windows = windows_for::<B>(keys.len(), 1.0);
    stats.table_growths += place_table(level, windows, &keys, buckets, seeds, &mut stats.seeds)?;
    Ok(())
}

/// Windows that hold `keys` keys at `room` times the build's fill.
fn windows_for<B: Bucket>(keys: usize, room: f64) -> u64 {
    let wanted = room * keys as f64 / (WINDOW * B::SLOTS) as f64 / B::LOAD;
    (wanted.ceil() as u64).max(1)
}

/// Places `keys` (distinct, non-zero values) as the table `level` in
/// `windows` windows appended to the layout's arrays, enlarged by a quarter
/// each time a window overflows or a group finds no seed; returns the
/// enlargements.
fn place_table<B: Bucket>(
    level: &mut Level,
    mut windows: u64,
    keys: &[(B::Key, u32)],
    buckets: &mut Vec<B>,
    seeds: &mut Vec<u8>,
    work: &mut SeedWork,
) -> Result<u32, String> {
    let base = buckets.len();
    let mut keys = keys.to_vec();
    for growths in 0..=MAX_GROWTHS {
        let end = base as u64 + windows * WINDOW as u64;
        if end > u32::MAX as u64 {
            return Err(format!(
                "the /{} table needs more than 2^32 buckets (use more levels)",
                level.plen
            ));
        }
        level.base = base as u32;
        level.windows = windows as u32;
        buckets.truncate(base);
        buckets.resize(end as usize, B::default());
        seeds.truncate(base);
        seeds.resize(end as usize, 0);
        let mut placer = Placer { buckets, seeds };
        if placer.fill(level, &mut keys, work) {
            return Ok(growths);
        }
        windows += windows / 4 + 1;
    }
    Err(format!(
        "the /{} table finds no seeds even {MAX_GROWTHS} times enlarged",
        level.plen
    ))
}

/// Places table `j` anew with its entries and `extra`, in twice the
/// windows its entries (or `room_for` entries, if more) need at the
/// build's fill, so that a stream of inserts into one table enlarges it a
/// logarithmic number of times. The
/// other tables of its layout are moved as they are (a table's buckets and
/// seeds are relative to its base), not re-placed: the cost is a copy of the
/// layout's arrays and the seed search of one table, well under a build.
fn grow_table<B: Bucket>(
    levels: &mut [Level; 16],
    count: usize,
    j: usize,
    (buckets, seeds): (&mut Vec<B>, &mut Vec<u8>),
    (extra, room_for): (Option<(B::Key, u32)>, usize),
    work: &mut SeedWork,
) -> Result<(), String> {
    let kind = levels[j].kind;
    let span = |level: &Level| level.base as usize..level.base as usize + level.buckets();
    let mut keys: Vec<(B::Key, u32)> = buckets[span(&levels[j])]
        .iter()
        .flat_map(|b| b.entries())
        .collect();
    keys.extend(extra);
    let mut order: Vec<usize> = (0..count).filter(|&i| levels[i].kind == kind).collect();
    order.sort_by_key(|&i| levels[i].base);
    let mut new_buckets: Vec<B> = Vec::with_capacity(buckets.len() + buckets.len() / 2);
    let mut new_seeds: Vec<u8> = Vec::with_capacity(new_buckets.capacity());
    for i in order {
        if i == j {
            let windows = windows_for::<B>(keys.len().max(room_for), 2.0);
            place_table(
                &mut levels[i],
                windows,
                &keys,
                &mut new_buckets,
                &mut new_seeds,
                work,
            )?;
        } else {
            let moved = span(&levels[i]);
            levels[i].base = new_buckets.len() as u32;
            new_buckets.extend_from_slice(&buckets[moved.clone()]);
            new_seeds.extend_from_slice(&seeds[moved]);
        }
    }
    *buckets = new_buckets;
    *seeds = new_seeds;
    Ok(())
}

/// Inserts `key` (absent) with `value` into table `j` of `snapshot`,
/// enlarging the table (see [`grow_table`]) when the key's window is full.
pub(crate) fn insert_or_grow<A: Addr>(
    snapshot: &mut Bspl<A>,
    j: usize,
    key: A,
    value: u32,
    stats: &mut BsplStats,
) -> Result<(), String> {
    let level = snapshot.levels[j];
    if insert_entry(snapshot, &level, key, value, &mut stats.seeds) {
        return Ok(());
    }
    stats.update_growths += 1;
    regrow(snapshot, j, Some(key), value, 0, stats)
}

/// Enlarges table `j` of `snapshot` once for `count` entries (see
/// [`grow_table`]), so that a batch's inserts do not enlarge it step by
/// step.
fn reserve_table<A: Addr>(
    snapshot: &mut Bspl<A>,
    j: usize,
    count: usize,
    stats: &mut BsplStats,
) -> Result<(), String> {
    stats.update_growths += 1;
    regrow(snapshot, j, None, 0, count, stats)
}

/// [`grow_table`] on table `j` of `snapshot`'s layout, with `extra` (an
/// absent key) stored with `value`.
fn regrow<A: Addr>(
    snapshot: &mut Bspl<A>,
    j: usize,
    extra: Option<A>,
    value: u32,
    room_for: usize,
    stats: &mut BsplStats,
) -> Result<(), String> {
    let level = snapshot.levels[j];
    let count = snapshot.level_count as usize;
    let work = &mut stats.seeds;
    match level.kind {
        Kind::K32 => grow_table(
            &mut snapshot.levels,
            count,
            j,
            (&mut snapshot.b32, &mut snapshot.s32),
            (
                extra.map(|key| (Bucket32::key(key, level.plen), value)),
                room_for,
            ),
            work,
        ),
        Kind::K64 => grow_table(
            &mut snapshot.levels,
            count,
            j,
            (&mut snapshot.b64, &mut snapshot.s64),
            (
                extra.map(|key| (Bucket64::key(key, level.plen), value)),
                room_for,
            ),
            work,
        ),
        Kind::K128 => grow_table(
            &mut snapshot.levels,
            count,
            j,
            (&mut snapshot.b128, &mut snapshot.s128),
            (
                extra.map(|key| (Bucket128::key(key, level.plen), value)),
                room_for,
            ),
            work,
        ),
    }
}

/// Gives `key` of table `level` the value `value` where it is; false if
/// absent.
pub(crate) fn set_entry<A: Addr>(
    snapshot: &mut Bspl<A>,
    level: &Level,
    key: A,
    value: u32,
) -> bool {
    match level.kind {
        Kind::K32 => Placer {
            buckets: &mut snapshot.b32,
            seeds: &mut snapshot.s32,
        }
        .set(level, Bucket32::key(key, level.plen), value),
        Kind::K64 => Placer {
            buckets: &mut snapshot.b64,
            seeds: &mut snapshot.s64,
        }
        .set(level, Bucket64::key(key, level.plen), value),
        Kind::K128 => Placer {
            buckets: &mut snapshot.b128,
            seeds: &mut snapshot.s128,
        }
        .set(level, Bucket128::key(key, level.plen), value),
    }
}

/// Removes `key` from table `level` of `snapshot`; false if absent.
pub(crate) fn remove_entry<A: Addr>(snapshot: &mut Bspl<A>, level: &Level, key: A) -> bool {
    match level.kind {
        Kind::K32 => Placer {
            buckets: &mut snapshot.b32,
            seeds: &mut snapshot.s32,
        }
        .remove(level, Bucket32::key(key, level.plen)),
        Kind::K64 => Placer {
            buckets: &mut snapshot.b64,
            seeds: &mut snapshot.s64,
        }
        .remove(level, Bucket64::key(key, level.plen)),
        Kind::K128 => Placer {
            buckets: &mut snapshot.b128,
            seeds: &mut snapshot.s128,
        }
        .remove(level, Bucket128::key(key, level.plen)),
    }
}

/// Inserts `key` with `value` into table `level` of `snapshot`; false if
/// its window is full (the table needs a rebuild).
pub(crate) fn insert_entry<A: Addr>(
    snapshot: &mut Bspl<A>,
    level: &Level,
    key: A,
    value: u32,
    work: &mut SeedWork,
) -> bool {
    match level.kind {
        Kind::K32 => Placer {
            buckets: &mut snapshot.b32,
            seeds: &mut snapshot.s32,
        }
        .insert(level, Bucket32::key(key, level.plen), value, work),
        Kind::K64 => Placer {
            buckets: &mut snapshot.b64,
            seeds: &mut snapshot.s64,
        }
        .insert(level, Bucket64::key(key, level.plen), value, work),
        Kind::K128 => Placer {
            buckets: &mut snapshot.b128,
            seeds: &mut snapshot.s128,
        }
        .insert(level, Bucket128::key(key, level.plen), value, work),
    }
}

/// Replaces the table entries of a block: removes `old` (as recorded),
/// inserts `new`, enlarging a table whose window fills.
pub(crate) fn replace_entries<A: Addr>(
    snapshot: &mut Bspl<A>,
    old: &[(u8, A)],
    new: &[Placed<A>],
    stats: &mut BsplStats,
    engine: &str,
) -> Result<(), BuildError> {
    let levels = *snapshot.levels;
    for &(level, key) in old {
        let removed = remove_entry(snapshot, &levels[level as usize], key);
        debug_assert!(removed, "a block's recorded keys are in its tables");
    }
    for e in new {
        insert_or_grow(snapshot, e.level as usize, e.key, e.value, stats).map_err(|why| {
            BuildError::Limit {
                engine: engine.to_string(),
                why,
            }
        })?;
    }
    Ok(())
}

/// A batch's work, in units of half what a build spends on one table
/// entry (its expansion, grouping and seed search): an insert or a patched
/// key (its value from two searches of the reference table, then a probe)
/// costs two, a removal one, an entry of a table the batch enlarges two
/// (the table placed anew). Fitted to IPv4 and IPv6 batches that re-plan
/// or patch 10^3 to 10^4 blocks of tables of 10^4 to 8·10^7 entries, where
/// the patch ran at 0.3–2.1 builds.
const INSERT_WORK: usize = 2;
/// See [`INSERT_WORK`].
const REMOVE_WORK: usize = 1;
/// See [`INSERT_WORK`].
const KEY_WORK: usize = 2;
/// See [`INSERT_WORK`].
const GROW_WORK: usize = 2;
/// A build's work per entry of the table it builds.
const BUILD_ENTRY_WORK: usize = 2;
/// A build's work per prefix beside its entries (the length program,
/// grouping and expanding): about three entries' worth on dfz-v4-nh.
const BUILD_PREFIX_WORK: usize = 6;
/// How many builds' work a batch may plan before the table is built anew
/// instead: the estimate is rough (what an insert or a build costs per
/// entry varies with the tables' size against the caches), and a batch
/// given up has cost its planning on top of the build.
const BUILDS_PER_BATCH: usize = 2;

/// What a batch does to one block.
pub(crate) enum BlockChange<A> {
    /// Recompute these keys (see [`BsplUpdater::patch_keys`]).
    Patch(Vec<(u8, A)>),
    /// Replace the block's entries with a new plan.
    Replan(BlockPlan<A>),
}

/// A block planned anew: its entries, tables and first probe.
pub(crate) struct BlockPlan<A> {
    entries: Vec<Entry<A>>,
    tables: (usize, usize),
    root: usize,
}

/// A batch of plain `bspl` planned against the tables, nothing written:
/// the first-level windows to repaint, each changed block's patch or new
/// plan, the tables to enlarge once for it, and its work against a
/// build's.
pub(crate) struct PlannedBatch<A> {
    windows: Vec<(usize, usize)>,
    /// `(block, changed prefixes in it, change)`.
    blocks: Vec<(u32, usize, BlockChange<A>)>,
    /// `(table, entries to make room for)`.
    enlarge: Vec<(usize, usize)>,
    work: usize,
    build_work: usize,
}

impl<A> PlannedBatch<A> {
    /// Whether writing the batch would cost more than [`BUILDS_PER_BATCH`]
    /// builds of the table after it (see [`INSERT_WORK`]).
    pub(crate) fn costs_more_than_builds(&self) -> bool {
        self.work > BUILDS_PER_BATCH * self.build_work
    }
}

/// A batch's planned work against a build's (see [`INSERT_WORK`]).
struct BatchCost {
    work: usize,
    /// Entries of each table before the batch.
    entries: [usize; 16],
    /// Per table, the most entries the batch may add at once: a re-planned
    /// block removes its entries before placing its new ones, a patched
    /// key may be an insert.
    added: [usize; 16],
    /// Entries of all tables after the batch, patched keys aside.
    after: usize,
}

impl BatchCost {
    fn new(entries: [usize; 16]) -> Self {
        BatchCost {
            work: 0,
            entries,
            added: [0; 16],
            after: entries.iter().sum(),
        }
    }

    fn add<A>(&mut self, change: &BlockChange<A>, old: &[(u8, A)]) {
        match change {
            BlockChange::Patch(keys) => {
                self.work += KEY_WORK * keys.len();
                for &(table, _) in keys {
                    self.added[table as usize] += 1;
                }
            }
            BlockChange::Replan(plan) => {
                self.work += REMOVE_WORK * old.len() + INSERT_WORK * plan.entries.len();
                let mut net = [0isize; 16];
                for &(table, _) in old {
                    net[table as usize] -= 1;
                }
                for entry in &plan.entries {
                    net[entry.level as usize] += 1;
                }
                for (added, net) in self.added.iter_mut().zip(net) {
                    *added += net.max(0) as usize;
                }
                self.after = self.after + plan.entries.len() - old.len();
            }
        }
    }

    /// The tables of `levels` the batch fills past the build's fill with a
    /// share of their entries, with the entries to make room for; adds the
    /// work of enlarging them. A table enlarged insert by insert doubles
    /// once per overflow, each time placing all its entries anew, which
    /// made a batch that grows a table twentyfold cost four builds; smaller
    /// additions enlarge a table when a window overflows, as single updates
    /// do.
    fn tables_to_enlarge(&mut self, levels: &[Level]) -> Vec<(usize, usize)> {
        let mut enlarge = Vec::new();
        for (j, level) in levels.iter().enumerate() {
            let (entries, added) = (self.entries[j], self.added[j]);
            let room = level.buckets() as f64 * level.kind.slots() as f64 * level.kind.load();
            if (entries + added) as f64 > room && added * 8 >= entries {
                self.work += GROW_WORK * (entries + added);
                enlarge.push((j, entries + added));
            }
        }
        enlarge
    }
}

impl<A: Addr> BsplUpdater<A> {
    /// Entries in all tables.
    pub(crate) fn entries(&self) -> usize {
        self.table_entries.iter().sum()
    }

    /// Plans bringing `snapshot` (plain `bspl`) in line with `rib` after
    /// `changed` changed: first-level BMPs for short prefixes, a patch or a
    /// new plan for each block of long ones. Writes nothing, so the batch
    /// can be given up for a build ([`PlannedBatch::costs_more_than_builds`]).
    pub(crate) fn plan_batch(
        &self,
        snapshot: &Bspl<A>,
        rib: &Rib<A>,
        changed: &[Prefix<A>],
    ) -> Result<PlannedBatch<A>, BuildError> {
        let first_bits = snapshot.first_bits;
        let mut windows = Vec::new();
        // The longer prefixes by block.
        let mut long: Vec<(u32, Prefix<A>)> = Vec::new();
        // The default route is results slot 0: it paints no block.
        for prefix in crate::engines::shared::without_default(changed) {
            if prefix.plen() <= first_bits {
                windows.push((
                    block_of(prefix.first(), first_bits),
                    block_of(prefix.last(), first_bits),
                ));
            } else {
                long.push((block_of(prefix.addr(), first_bits) as u32, *prefix));
            }
        }
        long.sort_unstable();
        long.dedup();
        let lengths = snapshot.lengths();
        let mut cost = BatchCost::new(self.table_entries);
        let mut blocks = Vec::new();
        let mut prefixes: Vec<Prefix<A>> = Vec::new();
        for group in long.chunk_by(|a, b| a.0 == b.0) {
            let block = group[0].0;
            prefixes.clear();
            prefixes.extend(group.iter().map(|&(_, prefix)| prefix));
            let change = match self.patch_keys(snapshot, &lengths, rib, block, &prefixes) {
                Some(keys) => BlockChange::Patch(keys),
                None => BlockChange::Replan(self.plan_anew(snapshot, &lengths, rib, block)?),
            };
            let old = self.blocks.get(&block).map_or(&[][..], Vec::as_slice);
            cost.add(&change, old);
            blocks.push((block, group.len(), change));
        }
        let count = snapshot.level_count as usize;
        let enlarge = cost.tables_to_enlarge(&snapshot.levels[..count]);
        Ok(PlannedBatch {
            windows: merge_windows(windows),
            blocks,
            enlarge,
            work: cost.work,
            build_work: BUILD_ENTRY_WORK * cost.after + BUILD_PREFIX_WORK * rib.len(),
        })
    }

    /// Writes `batch` (planned by [`Self::plan_batch`] for `rib`) to
    /// `snapshot`: repaints the first level, enlarges the tables the batch
    /// fills, then patches or re-plans each block.
    pub(crate) fn write_batch(
        &mut self,
        snapshot: &mut Bspl<A>,
        rib: &Rib<A>,
        batch: PlannedBatch<A>,
    ) -> Result<(), BuildError> {
        let first_bits = snapshot.first_bits;
        for window in batch.windows {
            let (lo, hi) = block_addrs::<A>(window, first_bits);
            paint(
                &mut snapshot.first,
                first_bits,
                rib.iter_in(lo, hi),
                window,
                &mut self.labels,
                0,
            )?;
        }
        let engine = self.config.to_string();
        for (j, entries) in batch.enlarge {
            reserve_table(snapshot, j, entries, &mut self.build_stats).map_err(|why| {
                BuildError::Limit {
                    engine: engine.clone(),
                    why,
                }
            })?;
        }
        let lengths = snapshot.lengths();
        for (block, patched, change) in batch.blocks {
            match change {
                BlockChange::Patch(keys) => {
                    self.write_patch(snapshot, &lengths, rib, block, &keys, patched)?
                }
                BlockChange::Replan(plan) => self.write_plan(snapshot, block, plan)?,
            }
        }
        self.labels.set_default(rib.default_route());
        self.labels.sync(&mut snapshot.results);
        Ok(())
    }

    /// Asks for a full build when the blocks to re-plan, `blocks`, hold more
    /// than half the entries (re-planning them one by one would cost more).
    pub(crate) fn check_work(&self, blocks: &[u32]) -> Result<(), BuildError> {
        let touched: usize = blocks
            .iter()
            .map(|b| self.blocks.get(b).map_or(0, Vec::len))
            .sum();
        if touched > 1024 && touched * 2 > self.entries() {
            return Err(BuildError::UpdateUnsupported {
                engine: self.config.to_string(),
            });
        }
        Ok(())
    }

    /// Plans block `block` anew from `rib` with the tables' lengths
    /// `lengths` and search tree. Writes nothing.
    fn plan_anew(
        &self,
        snapshot: &Bspl<A>,
        lengths: &[u8],
        rib: &Rib<A>,
        block: u32,
    ) -> Result<BlockPlan<A>, BuildError> {
        let first_bits = snapshot.first_bits;
        let engine = self.config.to_string();
        let limit = |why: String| BuildError::Limit {
            engine: engine.clone(),
            why,
        };
        let (lo, hi) = block_addrs::<A>((block as usize, block as usize), first_bits);
        let inner: Vec<(Prefix<A>, Label)> = rib
            .iter_in(lo, hi)
            .filter(|(p, _)| p.plen() > first_bits)
            .collect();
        check_lengths(&inner, lengths).map_err(limit)?;
        let expanded = expand(&inner, lengths).map_err(|e| limit(e.to_string()))?;
        let mut entries = Vec::new();
        let (tables, root) = plan_block(
            &inner,
            &expanded,
            lengths,
            &snapshot.tree,
            (lo, hi),
            &mut entries,
        );
        Ok(BlockPlan {
            entries,
            tables,
            root,
        })
    }

    /// Replaces block `block`'s entries with `plan`'s and rewrites its
    /// first-level entry.
    fn write_plan(
        &mut self,
        snapshot: &mut Bspl<A>,
        block: u32,
        plan: BlockPlan<A>,
    ) -> Result<(), BuildError> {
        let engine = self.config.to_string();
        let placed = placed_entries(&plan.entries, &mut self.labels)?;
        let old = self.blocks.remove(&block).unwrap_or_default();
        for &(table, _) in &old {
            self.table_entries[table as usize] -= 1;
        }
        for e in &placed {
            self.table_entries[e.level as usize] += 1;
        }
        replace_entries(snapshot, &old, &placed, &mut self.build_stats, &engine)?;
        let entry = &mut snapshot.first[block as usize];
        *entry = first_entry(entry_value(*entry), plan.tables, plan.root);
        if !placed.is_empty() {
            self.blocks
                .insert(block, placed.iter().map(|e| (e.level, e.key)).collect());
        }
        self.build_stats.blocks_rebuilt += 1;
        Ok(())
    }
}

/// Sorted, joined block windows.
pub(crate) fn merge_windows(mut windows: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    windows.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(windows.len());
    for (lo, hi) in windows {
        match merged.last_mut() {
            Some(last) if lo <= last.1 + 1 => last.1 = last.1.max(hi),
            _ => merged.push((lo, hi)),
        }
    }
    merged
}

#[cfg(test)]
mod tests {
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
