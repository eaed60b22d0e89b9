//! What both builds of `bspl` (plain and hybrid) and their updates share:
//! the table entries of a block and the search tree over the tables, the
//! target lengths, the first level's painting, and placing entries into
//! the hash tables (a full build's assembly, and the inserts, removals and
//! growth of updates). Split from `build.rs` so that the hybrid uses these
//! without importing the plain build, nor the plain build the hybrid.

use std::collections::HashMap;
use std::time::Instant;

use super::levels::{plan_levels, MAX_EXPANSION_BITS};
use super::table::{Bucket, Bucket128, Bucket32, Bucket64, Kind, Level, Placer, SeedWork, WINDOW};
use super::{Bspl, BsplConfig, BsplStats, BsplUpdater, LengthPlan, MARKER, MAX_HASH_LEVELS};
use crate::addr::Addr;
use crate::engine::BuildError;
use crate::labels::LabelIndex;
use crate::prefix::{Label, Prefix};

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

/// Sets the BMP label index of a first-level entry.
#[inline]
fn with_value(entry: u64, value: u32) -> u64 {
    entry & !0xffff_ffff | value as u64
}

/// The first-level block of `addr`.
#[inline]
pub(crate) fn block_of<A: Addr>(addr: A, first_bits: u8) -> usize {
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
pub(crate) fn reserve_table<A: Addr>(
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
