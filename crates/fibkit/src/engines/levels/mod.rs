//! `levels`: the levelled trie with binary-search-tree leaves of Narlikar
//! and Zane, "Performance Modeling for Fast IP Lookups" (SIGMETRICS 2001),
//! section 2: one to three trie levels of fixed stride per level (`T1(s1)`,
//! `T2(s1, s1+s2)`, `T3(...)` in the paper's notation), and below every
//! last-level entry that no single range covers, a binary search tree of the
//! address intervals inside it.
//!
//! Layout:
//! ```text
//! entries: [u32]   level 1 = entries[0 .. 2^s1]; child tables of 2^s entries
//!                  each start on a 64-byte line (offsets multiple of 16)
//!   bits 30..31 = 0: label index (payload)             -> results[payload]
//!               = 1: child table offset in entries     -> next level
//!               = 2: root of a tree in `tree`          -> interval search
//! tree: [TreeNode]  first, last, left, right, label (24 bytes for IPv4,
//!                   48 for IPv6), each leaf's tree contiguous, root first
//! results: [LabelSlot]   index 0 = the default route (or none)
//! ```
//! The paper's leaves are splay trees. A lookup through a shared snapshot
//! is `&self` and `Sync`, so it cannot splay; the trees here are static and
//! built weight-balanced (Mehlhorn's rule: the root splits its interval
//! weights in half) from the lookups a trace summary
//! ([`crate::model::TraceSummary`], spec `weights=FILE`) gives each range,
//! which keeps every interval within `log2(1/p) + 2` levels of the root:
//! the entropy bound a splay tree only approaches. Without a summary every
//! interval weighs the same (a balanced tree).
//!
//! Memory accesses per lookup: one entry per trie level passed (1 to 3),
//! then for a tree leaf the nodes on the search path, then the results
//! table (small, cached).
//!
//! Limits, each a [`BuildError::Limit`] or [`BuildError::BadSpec`] naming
//! what would work: 1 to [`MAX_LEVELS`] strides of 1 to [`MAX_STRIDE`] bits
//! summing to at most the address width; at most [`MAX_ENTRIES`] trie
//! entries (1 GiB), counted from the range view before anything is
//! allocated; at most 2^30 labels and tree nodes (the entry payload).
//!
//! The entries and trees are built from the range view without the default
//! route, whose label is results slot 0: a `/0` change writes that slot.
//! Updates rebuild the level-1 entries another changed prefix spans (their child
//! tables and trees are appended; the old ones become garbage). Once the
//! arrays hold more than twice what the last full build made, the update
//! compacts them: it refills them from the whole table in their own
//! memory, a build without the allocation.

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;

use crate::addr::Addr;
use crate::engine::Layout;
use crate::engine::{BuildError, EngineConfig, EngineStats, Lookup, Updater};
use crate::labels::{LabelIndex, LabelSlot};
use crate::model::summary::{
    prefix_densities, range_size, weighted_ranges_without_default, TraceSummary,
};
use crate::prefix::{Label, Prefix};
use crate::rib::{Range, Rib};
use crate::spec::EngineSpec;
use crate::storage::{Owned, Plain, Storage};

mod image;

/// Most trie levels (the paper's T1, T2, T3).
pub const MAX_LEVELS: usize = 3;
/// Widest stride: a 2^24-entry table is 64 MiB.
pub const MAX_STRIDE: u8 = 24;
/// Most trie entries of a snapshot (1 GiB of `u32`).
pub const MAX_ENTRIES: usize = 1 << 28;
/// Entries of one 64-byte cache line: child tables start on a line.
pub const LINE_ENTRIES: usize = 16;

const TAG_SHIFT: u32 = 30;
const TAG_LABEL: u32 = 0;
const TAG_CHILD: u32 = 1;
const TAG_TREE: u32 = 2;
const PAYLOAD_MASK: u32 = (1 << TAG_SHIFT) - 1;
const MAX_PAYLOAD: usize = PAYLOAD_MASK as usize;
const _: () = assert!(MAX_ENTRIES <= MAX_PAYLOAD && (MAX_STRIDE as u32) < 32);
const _: () = assert!(LINE_ENTRIES * std::mem::size_of::<u32>() == 64);

/// One node of a leaf's search tree: the interval `first..=last` with its
/// label index, and the nodes of the intervals before and after it.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreeNode<A> {
    /// First address of the interval.
    pub first: A,
    /// Last address of the interval.
    pub last: A,
    /// Node of the intervals before `first` (unused in a leaf node).
    pub left: u32,
    /// Node of the intervals after `last` (unused in a leaf node).
    pub right: u32,
    /// Label index of the interval.
    pub label: u32,
    /// Keeps the node free of padding (IPv4: 24 bytes, IPv6: 48).
    pad: u32,
}

// SAFETY: two u32 bounds and four u32 fields: 24 bytes, no padding, every
// bit pattern valid.
unsafe impl Plain for TreeNode<u32> {}
// SAFETY: two u128 bounds (32 bytes) then four u32 fields (16 bytes): 48
// bytes at 16-byte alignment, no padding, every bit pattern valid.
unsafe impl Plain for TreeNode<u128> {}

/// Bytes of one tree node for addresses `A`.
pub const fn tree_node_bytes<A>() -> usize {
    std::mem::size_of::<TreeNode<A>>()
}

/// The lookup snapshot of `levels`: strides, the trie entries, the tree
/// nodes and the results table, in storage `S`.
pub struct Levels<A: Addr, S: Storage = Owned>
where
    TreeNode<A>: Plain,
{
    strides: [u8; MAX_LEVELS],
    entries: S::Array<u32>,
    tree: S::Array<TreeNode<A>>,
    results: S::Array<LabelSlot>,
}

impl<A: Addr, S: Storage> Clone for Levels<A, S>
where
    TreeNode<A>: Plain,
{
    fn clone(&self) -> Self {
        Levels {
            strides: self.strides,
            entries: self.entries.clone(),
            tree: self.tree.clone(),
            results: self.results.clone(),
        }
    }

    fn clone_from(&mut self, source: &Self) {
        self.strides = source.strides;
        self.entries.clone_from(&source.entries);
        self.tree.clone_from(&source.tree);
        self.results.clone_from(&source.results);
    }
}

impl<A: Addr, S: Storage> Levels<A, S>
where
    TreeNode<A>: Plain,
{
    /// The label index of the interval holding `addr` in the tree at `root`.
    #[inline(always)]
    fn search(&self, root: u32, addr: A) -> u32 {
        // INVARIANT: each tree covers its leaf's addresses exactly, so the
        // search ends on a node before it runs out of children.
        let mut node = &self.tree[root as usize];
        loop {
            if addr < node.first {
                node = &self.tree[node.left as usize];
            } else if addr > node.last {
                node = &self.tree[node.right as usize];
            } else {
                return node.label;
            }
        }
    }
}

impl<A: Addr, S: Storage> Lookup<A> for Levels<A, S>
where
    TreeNode<A>: Plain,
{
    #[inline(always)]
    fn lookup(&self, addr: A) -> Option<Label> {
        let first_stride = self.strides[0] as u32;
        let mut entry = self.entries[addr.bits(0, first_stride) as usize];
        let mut from = first_stride;
        let mut level = 1;
        // INVARIANT: child entries appear only above the last level.
        while entry >> TAG_SHIFT == TAG_CHILD {
            let stride = self.strides[level] as u32;
            entry =
                self.entries[(entry & PAYLOAD_MASK) as usize + addr.bits(from, stride) as usize];
            from += stride;
            level += 1;
        }
        let index = if entry >> TAG_SHIFT == TAG_TREE {
            self.search(entry & PAYLOAD_MASK, addr)
        } else {
            entry & PAYLOAD_MASK
        };
        self.results[index as usize].get()
    }

    fn memory_bytes(&self) -> usize {
        self.entries.len() * 4
            + self.tree.len() * tree_node_bytes::<A>()
            + self.results.len() * std::mem::size_of::<LabelSlot>()
    }
}

/// `levels:strides=S1[+S2[+S3]][,weights=FILE]`: the stride of each trie
/// level, root first (`16+8` is the paper's `T2(16,24)`), and the trace
/// summary whose lookups shape the leaf trees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LevelsConfig {
    /// Strides, root first (1 to 3 of them).
    pub strides: Vec<u8>,
    /// A trace summary (`fibkit model summary`) weighting the leaf trees.
    pub weights: Option<PathBuf>,
}

impl Default for LevelsConfig {
    fn default() -> Self {
        LevelsConfig {
            strides: vec![16, 8],
            weights: None,
        }
    }
}

impl fmt::Display for LevelsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let strides: Vec<String> = self.strides.iter().map(u8::to_string).collect();
        write!(f, "levels:strides={}", strides.join("+"))?;
        if let Some(path) = &self.weights {
            write!(f, ",weights={}", path.display())?;
        }
        Ok(())
    }
}

impl LevelsConfig {
    /// A config of these strides without weights.
    pub fn with_strides(strides: &[u8]) -> Self {
        LevelsConfig {
            strides: strides.to_vec(),
            weights: None,
        }
    }

    /// Depth (bits consumed) after each level.
    pub fn depths(&self) -> Vec<u32> {
        self.strides
            .iter()
            .scan(0u32, |depth, &s| {
                *depth += s as u32;
                Some(*depth)
            })
            .collect()
    }

    fn check<A: Addr>(&self) -> Result<(), BuildError> {
        if !(1..=MAX_LEVELS).contains(&self.strides.len())
            || self.strides.iter().any(|s| !(1..=MAX_STRIDE).contains(s))
        {
            return Err(BuildError::BadSpec {
                spec: self.to_string(),
                why: format!(
                    "give 1 to {MAX_LEVELS} strides of 1..={MAX_STRIDE} bits (e.g. \
                     `levels:strides=16+8`)"
                ),
            });
        }
        let sum: u32 = self.strides.iter().map(|&s| s as u32).sum();
        if sum > A::BITS as u32 {
            return Err(BuildError::BadSpec {
                spec: self.to_string(),
                why: format!(
                    "strides sum to {sum} bits, more than the {} of {} addresses \
                     (e.g. `levels:strides=16+8`)",
                    A::BITS,
                    A::FAMILY
                ),
            });
        }
        Ok(())
    }
}

impl EngineConfig for LevelsConfig {
    const NAMES: &'static [&'static str] = &["levels"];
    const ABOUT: &'static str =
        "Narlikar-Zane levelled trie with search-tree leaves: strides=S1[+S2[+S3]] \
        (default 16+8), weights=FILE (trace summary shaping the trees)";
    const LAYOUTS: &'static [Layout] = &[
        Layout::both("levels"),
        Layout::both("levels:strides=8"),
        Layout::v4("levels:strides=20+4+8"),
        Layout::v6("levels:strides=16+8+8"),
    ];

    fn from_spec(spec: &EngineSpec) -> Result<Self, BuildError> {
        spec.expect_only(&["strides", "weights"])?;
        let mut config = LevelsConfig::default();
        if let Some(text) = spec.value("strides") {
            let strides: Option<Vec<u8>> = text
                .split('+')
                .map(|s| {
                    s.trim()
                        .parse::<u8>()
                        .ok()
                        .filter(|s| (1..=MAX_STRIDE).contains(s))
                })
                .collect();
            config.strides = match strides {
                Some(strides) if (1..=MAX_LEVELS).contains(&strides.len()) => strides,
                _ => {
                    return Err(spec.error(format!(
                        "`strides={text}` is not 1 to {MAX_LEVELS} strides of 1..={MAX_STRIDE} \
                         bits joined by `+` (e.g. `strides=16+8`)"
                    )))
                }
            };
        } else if spec.params.iter().any(|(k, _)| k == "strides") {
            return Err(spec.error("`strides` needs a value (e.g. `strides=16+8`)".into()));
        }
        match spec.params.iter().find(|(k, _)| k == "weights") {
            Some((_, Some(path))) if !path.is_empty() => {
                config.weights = Some(PathBuf::from(path));
            }
            Some(_) => {
                return Err(spec
                    .error("`weights` needs a trace summary file (`fibkit model summary`)".into()))
            }
            None => {}
        }
        Ok(config)
    }
}

/// What a `levels` table looks like.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct LevelsStats {
    /// Strides, root first.
    pub strides: Vec<u8>,
    /// Trie tables per level (level 1 has one).
    pub tables_per_level: Vec<usize>,
    /// Trie entries allocated (garbage from updates included).
    pub entries: usize,
    /// Leaves holding a search tree.
    pub trees: usize,
    /// Tree nodes allocated.
    pub tree_nodes: usize,
    /// Deepest tree, in nodes.
    pub max_tree_depth: usize,
    /// Whether the trees are weighted by a trace summary.
    pub weighted: bool,
    /// Distinct labels.
    pub labels: usize,
}

impl EngineStats for LevelsStats {
    fn rows(&self) -> Vec<(String, String)> {
        let tables: Vec<String> = self.tables_per_level.iter().map(usize::to_string).collect();
        vec![
            ("tables per level".into(), tables.join(" ")),
            ("trie entries".into(), self.entries.to_string()),
            ("leaf trees".into(), self.trees.to_string()),
            ("tree nodes".into(), self.tree_nodes.to_string()),
            ("deepest tree".into(), self.max_tree_depth.to_string()),
            (
                "tree weights".into(),
                if self.weighted {
                    "trace summary"
                } else {
                    "uniform"
                }
                .into(),
            ),
            ("distinct labels".into(), self.labels.to_string()),
        ]
    }
}

/// The build state of `levels`: labels, the lookups per address of each
/// prefix (from the trace summary) and the size of the last full build.
#[derive(Clone, Debug)]
pub struct LevelsUpdater<A: Addr> {
    config: LevelsConfig,
    labels: LabelIndex,
    densities: Option<HashMap<Prefix<A>, f64>>,
    built_entries: usize,
    built_nodes: usize,
}

impl<A: Addr> Updater<A> for LevelsUpdater<A>
where
    TreeNode<A>: Plain,
{
    type Config = LevelsConfig;
    type Snapshot = Levels<A>;
    type Stats = LevelsStats;

    fn build(config: &LevelsConfig, rib: &Rib<A>) -> Result<(Self, Levels<A>), BuildError> {
        config.check::<A>()?;
        let densities = match &config.weights {
            Some(path) => Some(read_densities(config, path, rib)?),
            None => None,
        };
        Self::build_weighted(config, rib, densities)
    }

    fn config(&self) -> LevelsConfig {
        self.config.clone()
    }

    fn patches(&self) -> bool {
        true
    }

    fn update(
        &mut self,
        snapshot: &mut Levels<A>,
        rib: &Rib<A>,
        changed: &[Prefix<A>],
    ) -> Result<(), BuildError> {
        self.update_entries(snapshot, rib, changed)
    }

    fn stats(&self, snapshot: &Levels<A>) -> LevelsStats {
        self.describe(snapshot)
    }
}

impl<A: Addr> LevelsUpdater<A>
where
    TreeNode<A>: Plain,
{
    /// Builds with the trees weighted by `densities` (lookups per address
    /// of each prefix, [`prefix_densities`]) instead of the config's file:
    /// what the model uses to build many structures from one summary.
    pub fn build_weighted(
        config: &LevelsConfig,
        rib: &Rib<A>,
        densities: Option<HashMap<Prefix<A>, f64>>,
    ) -> Result<(Self, Levels<A>), BuildError> {
        config.check::<A>()?;
        let mut updater = LevelsUpdater {
            config: config.clone(),
            labels: LabelIndex::new(config, MAX_PAYLOAD),
            densities,
            built_entries: 0,
            built_nodes: 0,
        };
        let mut strides = [0; MAX_LEVELS];
        strides[..config.strides.len()].copy_from_slice(&config.strides);
        let mut snapshot: Levels<A> = Levels {
            strides,
            entries: Vec::new(),
            tree: Vec::new(),
            results: Vec::new(),
        };
        updater.fill_all(&mut snapshot, rib)?;
        Ok((updater, snapshot))
    }

    /// Fills `snapshot`'s arrays from the whole of `rib`, reusing the
    /// memory they hold: the build, and the compaction of an updated
    /// snapshot whose arrays have filled with tables that changes
    /// replaced. The results table is kept (labels only ever gain
    /// indices). On an error the snapshot is half filled and must be
    /// rebuilt.
    fn fill_all(&mut self, snapshot: &mut Levels<A>, rib: &Rib<A>) -> Result<(), BuildError> {
        let config = &self.config;
        let view = weighted_ranges_without_default(rib, A::ZERO, A::MAX, self.densities.as_ref());
        let needed = entries_needed::<A>(&config.strides, &view.ranges);
        if needed > MAX_ENTRIES as u128 {
            return Err(BuildError::Limit {
                engine: config.to_string(),
                why: format!(
                    "its tables need {needed} entries, over the limit of {MAX_ENTRIES} (1 GiB); \
                     use narrower strides below the first level (e.g. `levels:strides=16+8`)"
                ),
            });
        }
        snapshot.entries.clear();
        snapshot.entries.reserve(needed as usize);
        snapshot.tree.clear();
        let top = 1usize << config.strides[0];
        snapshot
            .entries
            .resize(top.next_multiple_of(LINE_ENTRIES), 0);
        let mut filler = Filler {
            strides: &config.strides,
            labels: &mut self.labels,
            snapshot,
            engine: config,
        };
        filler.fill_table(0, 0, A::ZERO, &view.ranges, &view.weights)?;
        self.labels.set_default(rib.default_route());
        self.labels.sync(&mut snapshot.results);
        self.built_entries = snapshot.entries.len();
        self.built_nodes = snapshot.tree.len();
        Ok(())
    }

    fn update_entries(
        &mut self,
        snapshot: &mut Levels<A>,
        rib: &Rib<A>,
        changed: &[Prefix<A>],
    ) -> Result<(), BuildError> {
        if snapshot.entries.len() > 2 * self.built_entries + MAX_STRIDE as usize * LINE_ENTRIES
            || snapshot.tree.len() > 2 * self.built_nodes + 1024
        {
            // Compacting is a build, into the arrays' own memory: deciding
            // it before patching wastes no patch, and refilling vectors
            // that are already allocated and faulted in costs less than
            // the handle's rebuild into fresh ones.
            return self.fill_all(snapshot, rib);
        }
        let first_stride = self.config.strides[0] as u32;
        let shift = A::BITS as u32 - first_stride;
        // The default route is results slot 0: it spans no entry.
        let mut windows: Vec<(usize, usize)> = crate::engines::shared::without_default(changed)
            .iter()
            .map(|p| {
                (
                    (p.first().to_u128() >> shift) as usize,
                    (p.last().to_u128() >> shift) as usize,
                )
            })
            .collect();
        windows.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(windows.len());
        for (lo, hi) in windows {
            match merged.last_mut() {
                Some(last) if lo <= last.1 + 1 => last.1 = last.1.max(hi),
                _ => merged.push((lo, hi)),
            }
        }
        let mut filler = Filler {
            strides: &self.config.strides,
            labels: &mut self.labels,
            snapshot,
            engine: &self.config,
        };
        for (lo, hi) in merged {
            let lo_addr = A::from_u128((lo as u128) << shift);
            // The window's last address: its index, then `shift` one bits
            // (`shift` < 128, since the first stride is at least one bit).
            // Not `((hi + 1) << shift) - 1`, which overflows for the last
            // window of the address space.
            let hi_addr = A::from_u128(((hi as u128) << shift) | ((1u128 << shift) - 1));
            let view =
                weighted_ranges_without_default(rib, lo_addr, hi_addr, self.densities.as_ref());
            filler.fill_entries(0, 0, lo..=hi, lo_addr, &view.ranges, &view.weights)?;
        }
        self.labels.set_default(rib.default_route());
        self.labels.sync(&mut snapshot.results);
        Ok(())
    }

    fn describe(&self, snapshot: &Levels<A>) -> LevelsStats {
        let levels = self.config.strides.len();
        let mut tables_per_level = vec![0; levels];
        tables_per_level[0] = 1;
        let mut trees = 0;
        let mut max_tree_depth = 0;
        // Walk the live tables level by level.
        let mut tables = vec![0usize];
        for level in 0..levels {
            let size = 1usize << self.config.strides[level];
            let mut next = Vec::new();
            for &base in &tables {
                for &entry in &snapshot.entries[base..base + size] {
                    match entry >> TAG_SHIFT {
                        TAG_CHILD => next.push((entry & PAYLOAD_MASK) as usize),
                        TAG_TREE => {
                            trees += 1;
                            max_tree_depth = max_tree_depth
                                .max(tree_depth(&snapshot.tree, entry & PAYLOAD_MASK));
                        }
                        _ => {}
                    }
                }
            }
            if level + 1 < levels {
                tables_per_level[level + 1] = next.len();
            }
            tables = next;
        }
        LevelsStats {
            strides: self.config.strides.clone(),
            tables_per_level,
            entries: snapshot.entries.len(),
            trees,
            tree_nodes: snapshot.tree.len(),
            max_tree_depth,
            weighted: self.densities.is_some(),
            labels: self.labels.len(),
        }
    }
}

/// The depth in nodes of the tree at `root`.
fn tree_depth<A: Addr>(tree: &[TreeNode<A>], root: u32) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(root, 1usize)];
    while let Some((node, depth)) = stack.pop() {
        deepest = deepest.max(depth);
        let node = &tree[node as usize];
        for child in [node.left, node.right] {
            if child != NO_CHILD {
                stack.push((child, depth + 1));
            }
        }
    }
    deepest
}

const NO_CHILD: u32 = u32::MAX;

/// The lookups per address of the prefixes of `rib` from the summary at
/// `path`; an error if the file is bad or matches no prefix of the table.
fn read_densities<A: Addr>(
    config: &LevelsConfig,
    path: &std::path::Path,
    rib: &Rib<A>,
) -> Result<HashMap<Prefix<A>, f64>, BuildError> {
    let bad = |why: String| BuildError::BadSpec {
        spec: config.to_string(),
        why,
    };
    let summary = TraceSummary::<A>::read(path).map_err(|e| bad(e.to_string()))?;
    let densities = prefix_densities(rib, &summary);
    if densities.values().all(|&d| d == 0.0) {
        return Err(bad(format!(
            "{}: the summary's lookups match no prefix of this table (summarise a trace \
             against this table with `fibkit model summary`)",
            path.display()
        )));
    }
    Ok(densities)
}

/// Trie entries `strides` need for a table with these merged `ranges`:
/// the root table plus, per level below, one table for each node of the
/// level above that a range boundary falls inside of (each padded to a
/// line).
pub fn entries_needed<A: Addr>(strides: &[u8], ranges: &[Range<A>]) -> u128 {
    let mut depth = 0u32;
    let mut total = 0u128;
    for (level, &stride) in strides.iter().enumerate() {
        let tables = if level == 0 {
            1
        } else {
            inner_nodes(ranges, depth) as u128
        };
        total += tables * (1u128 << stride).next_multiple_of(LINE_ENTRIES as u128);
        depth += stride as u32;
    }
    total
}

/// Nodes at `depth` (aligned blocks of `2^(BITS - depth)` addresses) that
/// more than one range overlaps.
pub fn inner_nodes<A: Addr>(ranges: &[Range<A>], depth: u32) -> usize {
    let shift = A::BITS as u32 - depth;
    let mut count = 0;
    let mut last_node = None;
    for range in ranges.iter().skip(1) {
        let first = range.first.to_u128();
        if shift < 128 && first & ((1u128 << shift) - 1) == 0 {
            continue;
        }
        let node = if shift >= 128 { 0 } else { first >> shift };
        if last_node != Some(node) {
            count += 1;
            last_node = Some(node);
        }
    }
    count
}

/// Writes trie tables and trees into a snapshot.
struct Filler<'a, A: Addr>
where
    TreeNode<A>: Plain,
{
    strides: &'a [u8],
    labels: &'a mut LabelIndex,
    snapshot: &'a mut Levels<A>,
    engine: &'a LevelsConfig,
}

impl<A: Addr> Filler<'_, A>
where
    TreeNode<A>: Plain,
{
    /// Fills the whole table of `level` at `base`, whose first address is
    /// `first`, from `ranges` (covering exactly that table's addresses).
    fn fill_table(
        &mut self,
        level: usize,
        base: usize,
        first: A,
        ranges: &[Range<A>],
        weights: &[f64],
    ) -> Result<(), BuildError> {
        let size = 1usize << self.strides[level];
        self.fill_entries(level, base, 0..=size - 1, first, ranges, weights)
    }

    /// Fills entries `indices` of the table of `level` at `base`; `first`
    /// is the first address of entry `indices.start()` and `ranges` cover
    /// exactly the entries' addresses.
    fn fill_entries(
        &mut self,
        level: usize,
        base: usize,
        indices: std::ops::RangeInclusive<usize>,
        first: A,
        ranges: &[Range<A>],
        weights: &[f64],
    ) -> Result<(), BuildError> {
        let depth: u32 = self.strides[..=level].iter().map(|&s| s as u32).sum();
        let span = 1u128 << (A::BITS as u32 - depth);
        let mut lo = first.to_u128();
        let mut next = 0; // first range overlapping the entry
        for index in indices {
            let hi = lo + (span - 1);
            while ranges[next].last.to_u128() < lo {
                next += 1;
            }
            let mut end = next; // last range overlapping the entry
            while ranges[end].last.to_u128() < hi {
                end += 1;
            }
            let entry = if next == end {
                self.labels.index(ranges[next].label)? | TAG_LABEL << TAG_SHIFT
            } else if level + 1 < self.strides.len() {
                let child = self.allocate_table(level + 1)?;
                self.fill_table(
                    level + 1,
                    child,
                    A::from_u128(lo),
                    &ranges[next..=end],
                    &weights[next..=end],
                )?;
                child as u32 | TAG_CHILD << TAG_SHIFT
            } else {
                let root = self.add_tree(lo, hi, &ranges[next..=end], &weights[next..=end])?;
                root | TAG_TREE << TAG_SHIFT
            };
            self.snapshot.entries[base + index] = entry;
            lo = hi.wrapping_add(1);
        }
        Ok(())
    }

    /// Appends a zeroed table for `level`, starting on a cache line.
    fn allocate_table(&mut self, level: usize) -> Result<usize, BuildError> {
        let entries = &mut self.snapshot.entries;
        let base = entries.len().next_multiple_of(LINE_ENTRIES);
        let end = base + (1usize << self.strides[level]);
        if end > MAX_ENTRIES {
            return Err(BuildError::Limit {
                engine: self.engine.to_string(),
                why: format!(
                    "more than {MAX_ENTRIES} trie entries (1 GiB); use narrower strides below \
                     the first level (e.g. `levels:strides=16+8`)"
                ),
            });
        }
        entries.resize(end, 0);
        Ok(base)
    }

    /// Appends the weight-balanced tree of `ranges` clipped to `lo..=hi`
    /// and returns its root.
    fn add_tree(
        &mut self,
        lo: u128,
        hi: u128,
        ranges: &[Range<A>],
        weights: &[f64],
    ) -> Result<u32, BuildError> {
        let mut clipped = Vec::with_capacity(ranges.len());
        for (range, &weight) in ranges.iter().zip(weights) {
            let first = range.first.to_u128().max(lo);
            let last = range.last.to_u128().min(hi);
            let part = Range {
                first: A::from_u128(first),
                last: A::from_u128(last),
                label: range.label,
            };
            // A range's lookups are spread evenly over its addresses.
            let weight = weight * (range_size(&part) / range_size(range));
            clipped.push((part, weight));
        }
        let weights: Vec<f64> = clipped.iter().map(|(_, w)| *w).collect();
        let cumulative = tree_cumulative(&weights);
        let start = self.snapshot.tree.len();
        if start + clipped.len() > MAX_PAYLOAD {
            return Err(BuildError::Limit {
                engine: self.engine.to_string(),
                why: format!(
                    "more than {MAX_PAYLOAD} tree nodes; use wider strides so fewer intervals \
                     end up in trees"
                ),
            });
        }
        let mut labels = Vec::with_capacity(clipped.len());
        for (range, _) in &clipped {
            labels.push(self.labels.index(range.label)?);
        }
        let tree = &mut self.snapshot.tree;
        tree.reserve(clipped.len());
        let root = place(tree, &clipped, &labels, &cumulative, 0, clipped.len());
        Ok(root)
    }
}

/// Cumulative tree weights of intervals with lookups `weights`: entry `i`
/// is the weight of the intervals before `i`. A small floor per interval
/// (1% of the mean) keeps untraced intervals near the middle and the tree
/// height bounded (about `log2(100 n) + 2`).
pub fn tree_cumulative(weights: &[f64]) -> Vec<f64> {
    let total: f64 = weights.iter().sum();
    let floor = total.max(1.0) / weights.len().max(1) as f64 * 0.01;
    let mut cumulative = Vec::with_capacity(weights.len() + 1);
    let mut sum = 0.0;
    cumulative.push(sum);
    for weight in weights {
        sum += weight + floor;
        cumulative.push(sum);
    }
    cumulative
}

/// The root of the tree of intervals `lo..hi` (`lo < hi`): the interval
/// whose weight straddles the middle of theirs (Mehlhorn's rule).
pub fn weight_balanced_split(cumulative: &[f64], lo: usize, hi: usize) -> usize {
    debug_assert!(lo < hi);
    let half = (cumulative[lo] + cumulative[hi]) / 2.0;
    let split = lo + cumulative[lo + 1..=hi].partition_point(|&c| c < half);
    split.min(hi - 1)
}

/// Appends the subtree of intervals `lo..hi` in pre-order, the root at the
/// interval that splits their weight in half; returns the root's node.
fn place<A: Addr>(
    tree: &mut Vec<TreeNode<A>>,
    intervals: &[(Range<A>, f64)],
    labels: &[u32],
    cumulative: &[f64],
    lo: usize,
    hi: usize,
) -> u32 {
    let split = weight_balanced_split(cumulative, lo, hi);
    let node = tree.len() as u32;
    let range = intervals[split].0;
    tree.push(TreeNode {
        first: range.first,
        last: range.last,
        left: NO_CHILD,
        right: NO_CHILD,
        label: labels[split],
        pad: 0,
    });
    if lo < split {
        let left = place(tree, intervals, labels, cumulative, lo, split);
        tree[node as usize].left = left;
    }
    if split + 1 < hi {
        let right = place(tree, intervals, labels, cumulative, split + 1, hi);
        tree[node as usize].right = right;
    }
    node
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::shared::testing::{assert_default_route_is_one_slot, nested_table};

    /// The entries and trees: all but the results.
    fn tables<A: Addr>(snapshot: &Levels<A>) -> (Vec<u32>, Vec<TreeNode<A>>)
    where
        TreeNode<A>: Plain,
    {
        (snapshot.entries.clone(), snapshot.tree.clone())
    }

    #[test]
    fn the_default_route_is_one_results_slot() {
        for spec in ["levels", "levels:strides=20+4+8"] {
            let config = LevelsConfig::parse(spec).unwrap();
            let rib = nested_table(0x0a01_0203u32);
            assert_default_route_is_one_slot::<u32, LevelsUpdater<u32>, _>(&config, &rib, tables);
        }
        let config = LevelsConfig::parse("levels:strides=16+8+8").unwrap();
        let rib = nested_table(0x2001_0db8_0001_0002_0003_0004_0005_0006u128);
        assert_default_route_is_one_slot::<u128, LevelsUpdater<u128>, _>(&config, &rib, tables);
    }

    fn p(text: &str) -> Prefix<u32> {
        text.parse().unwrap()
    }

    #[test]
    fn specs_parse_and_print_canonically() {
        let parse = |text: &str| LevelsConfig::parse(text).map(|c| c.to_string());
        assert_eq!(parse("levels").unwrap(), "levels:strides=16+8");
        assert_eq!(parse("levels:strides=20").unwrap(), "levels:strides=20");
        assert_eq!(
            parse("levels:strides=16+4+4,weights=/tmp/s").unwrap(),
            "levels:strides=16+4+4,weights=/tmp/s"
        );
        for bad in [
            "levels:strides=25",
            "levels:strides=8+8+8+8",
            "levels:strides=0",
            "levels:strides=",
            "levels:weights=",
            "levels:k=3",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        let rib = Rib::<u32>::new();
        let err = crate::build("levels:strides=24+24", &rib)
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("48 bits") && err.contains("strides=16+8"),
            "{err}"
        );
    }

    #[test]
    fn trees_hold_what_no_entry_covers_alone() {
        let rib = Rib::from_pairs([
            (p("10.0.0.0/8"), 1),
            (p("10.1.0.0/16"), 2),
            (p("10.1.2.3/32"), 3),
            (p("0.0.0.0/0"), 4),
        ]);
        let (updater, snapshot) =
            LevelsUpdater::build(&LevelsConfig::with_strides(&[8]), &rib).unwrap();
        assert_eq!(snapshot.lookup(0x0a01_0203), Some(3));
        assert_eq!(snapshot.lookup(0x0a01_0204), Some(2));
        assert_eq!(snapshot.lookup(0x0a02_0000), Some(1));
        assert_eq!(snapshot.lookup(0x0b00_0000), Some(4));
        let stats = updater.stats(&snapshot);
        assert_eq!((stats.trees, stats.tree_nodes), (1, 5));
        assert!(stats.max_tree_depth <= 3, "{stats:?}");
    }

    #[test]
    fn the_entry_limit_is_checked_before_allocating() {
        let rib = Rib::from_pairs((0..300u32).map(|i| (Prefix::new_masked(i << 24 | 1, 32), 1)));
        assert_eq!(inner_nodes(&rib.ranges(), 8), 256);
        let err = crate::build("levels:strides=8+24", &rib)
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("over the limit") && err.contains("strides=16+8"),
            "{err}"
        );
    }

    #[test]
    fn heavy_intervals_sit_near_the_root() {
        let intervals: Vec<(Range<u32>, f64)> = (0..8u32)
            .map(|i| {
                let range = Range {
                    first: i * 10,
                    last: i * 10 + 9,
                    label: Some(i),
                };
                (range, if i == 6 { 1000.0 } else { 1.0 })
            })
            .collect();
        let mut cumulative = vec![0.0];
        for (_, w) in &intervals {
            cumulative.push(cumulative.last().unwrap() + w);
        }
        let mut tree = Vec::new();
        let labels: Vec<u32> = (0..8).collect();
        let root = place(&mut tree, &intervals, &labels, &cumulative, 0, 8);
        assert_eq!(tree[root as usize].label, 6);
        assert_eq!(tree.len(), 8);
    }
}
