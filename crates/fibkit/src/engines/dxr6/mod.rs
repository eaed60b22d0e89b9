//! `dxr6`: DXR for 128-bit keys. Zec's Direct-Range lookup (thesis 003,
//! chapters 3–4) with the chunk search made to fit IPv6 tables: a direct
//! table on the top `K` address bits, *nodes* (further direct tables,
//! their stride chosen per chunk) where a chunk holds too many ranges for
//! one search, and *leaves* holding a chunk's range starts at the width
//! the chunk needs, searched with a vector count over one 64-byte window.
//!
//! Why this shape: the merged range view of an IPv6 table is small (97,338
//! ranges for the 160,147 prefixes of `dfz-v6-nh`) but very unevenly
//! spread: one /16 holds 14,260 ranges and one /32 3,561, so a single
//! direct table leaves chunks that a binary search crosses in 10–14
//! dependent steps (thesis 3.4), while an expanded trie (DPDK `rte_fib6`,
//! 24-8-8-...) needs one level per 8 bits of prefix. Here a chunk gets a
//! node only while it has more ranges than a leaf holds, and a node's
//! stride grows with the chunk's range count, so nearly every lookup ends
//! in a leaf after the root entry and one or two node entries. Range
//! starts are prefix boundaries, so a start's bits past the longest
//! prefix that made it are zero: inside a chunk of depth `d` the starts
//! of /48 ranges need only `48 - d` bits. A leaf stores each start's bits
//! `d..d+w` for the smallest `w` of 16, 32, 64 or 128 that holds them all
//! (on dfz-v6-nh 90% of leaves take 16-bit words, 32 to a cache line).
//!
//! ```text
//! entries[addr >> (128-K)]                      root: 2^K x u32
//! entry u32:  [31:30] kind
//!   00 label  [29:0] label index                      (chunk inside one range)
//!   01 node   [29:26] stride S - 1  [25:0] first entry of a table of 2^S entries,
//!             indexed by the S address bits after the node's depth
//!   1w leaf   [29:28] bound width 16 << c  [27:0] first leaf word;
//!             w = 0: u16 label indices, w = 1: u32 label indices
//! leaves[base]                  m = n - 1, the number of stored starts (n ranges)
//! leaves[base + 1 ..]           m starts (bits d..d+width of each range start but
//!                               the first, which is the chunk's own start), little-
//!                               endian u16 halves, ascending
//! then                          n label indices (u16, or u32 as two u16 halves)
//! results[label index]          label slot, index 0 = no route
//! ```
//!
//! A leaf lookup counts the stored starts `<=` the address's bits `d..d+width`:
//! that count is the index of the address's range. Up to 64 bytes of starts
//! (32, 16, 8 or 4 of them by width) are counted at once with SSE2 compares
//! (one dependent load); larger leaves are halved down to a window first
//! (only with `leaf=L > 1`, or `stride=0`).
//!
//! Memory accesses per lookup: the root entry (`2^K x 4` bytes: 256 KiB at
//! `K = 16`, mostly cache resident), one entry per node on the path, then
//! for a leaf its window and label (one or two adjacent cache lines), then
//! the results table (small). On `dfz-v6-nh` with the defaults, a key inside
//! an announced prefix reads 3.5 of these on average (docs/ENGINES.md).
//!
//! Limits (checked at build, reported as [`BuildError::Limit`]): at most
//! `2^30` distinct labels; node tables at most `2^26` entries in all and
//! leaves `2^28` words (the base fields); a leaf at most 65,535 starts
//! (its header word; only `stride=0` can ask for more). Node strides are
//! 1 to 16 bits and never pass bit 128.
//!
//! The snapshot ([`Dxr6`]) holds the three arrays; the updater
//! ([`Dxr6Updater`]) the label index and the free lists. Updates rebuild
//! the smallest chunks the changed prefixes touch (see `build.rs`).

mod build;
mod search;

use std::fmt;

use crate::engine::{BuildError, EngineConfig, EngineStats, Lookup};
use crate::engines::prefetch;
use crate::labels::LabelSlot;
use crate::prefix::Label;
use crate::spec::EngineSpec;
use crate::storage::{Owned, Storage};

pub use build::Dxr6Updater;
use search::{Bound, WINDOW_WORDS};

/// Entry bits 31..30: what the entry holds.
const KIND_SHIFT: u32 = 30;
const KIND_LABEL: u32 = 0;
const KIND_NODE: u32 = 1;
/// Leaf kinds have bit 31 set; bit 30 marks u32 label indices.
const LEAF_BIT: u32 = 1 << 31;
const WIDE_LABELS_BIT: u32 = 1 << 30;
/// Label entries: bits 29..0.
const LABEL_BITS: u32 = 30;
const LABEL_MASK: u32 = (1 << LABEL_BITS) - 1;
/// Node entries: bits 29..26 hold the stride minus one, 25..0 the table.
const STRIDE_SHIFT: u32 = 26;
const STRIDE_MASK: u32 = 0xf;
const NODE_BASE_BITS: u32 = 26;
const NODE_BASE_MASK: u32 = (1 << NODE_BASE_BITS) - 1;
/// Leaf entries: bits 29..28 hold the width code, 27..0 the first word.
const WIDTH_SHIFT: u32 = 28;
const LEAF_BASE_BITS: u32 = 28;
const LEAF_BASE_MASK: u32 = (1 << LEAF_BASE_BITS) - 1;

/// The largest node stride (the 4-bit field holds `stride - 1`).
pub const MAX_STRIDE: u32 = STRIDE_MASK + 1;
/// Root bits: at least 8 (a node table's index must fit `Addr::bits`), at
/// most 24 (2^24 entries, 64 MiB).
pub const MIN_K: u32 = 8;
/// See [`MIN_K`].
pub const MAX_K: u32 = 24;
/// Distinct labels a label entry can name.
const MAX_LABELS: usize = LABEL_MASK as usize;

const _: () = assert!(2 + 4 + NODE_BASE_BITS == 32);
const _: () = assert!(2 + 2 + LEAF_BASE_BITS == 32);
const _: () = assert!(KIND_SHIFT == LABEL_BITS);
const _: () = assert!(MAX_K <= NODE_BASE_BITS, "the root fits the node base field");
const _: () = assert!(MAX_STRIDE <= 16 && MIN_K + MAX_STRIDE <= 128);

/// Whether `entry` points to a node table.
#[inline(always)]
fn is_node(entry: u32) -> bool {
    entry >> KIND_SHIFT == KIND_NODE
}

/// Whether `entry` points to a leaf.
#[inline(always)]
fn is_leaf(entry: u32) -> bool {
    entry & LEAF_BIT != 0
}

/// Whether `entry` holds a label index.
#[inline(always)]
fn is_label(entry: u32) -> bool {
    entry >> KIND_SHIFT == KIND_LABEL
}

/// The label index of a label entry.
#[inline(always)]
fn label_of(entry: u32) -> usize {
    (entry & LABEL_MASK) as usize
}

/// The stride of a node entry.
#[inline(always)]
fn stride_of(entry: u32) -> u32 {
    ((entry >> STRIDE_SHIFT) & STRIDE_MASK) + 1
}

/// The first entry of a node entry's table.
#[inline(always)]
fn node_base(entry: u32) -> usize {
    (entry & NODE_BASE_MASK) as usize
}

/// The width code of a leaf entry: its starts are `16 << code` bits.
#[inline(always)]
fn width_code(entry: u32) -> u32 {
    (entry >> WIDTH_SHIFT) & 3
}

/// The first word (the header) of a leaf entry's leaf.
#[inline(always)]
fn leaf_base(entry: u32) -> usize {
    (entry & LEAF_BASE_MASK) as usize
}

/// Whether a leaf's label indices are u32 (two words) rather than u16.
#[inline(always)]
fn has_wide_labels(entry: u32) -> bool {
    entry & WIDE_LABELS_BIT != 0
}

/// A label entry.
fn label_entry(index: u32) -> u32 {
    debug_assert!(index <= LABEL_MASK);
    (KIND_LABEL << KIND_SHIFT) | index
}

/// A node entry for a table of `2^stride` entries at `base`.
fn node_entry(base: usize, stride: u32) -> u32 {
    debug_assert!(base <= NODE_BASE_MASK as usize && (1..=MAX_STRIDE).contains(&stride));
    (KIND_NODE << KIND_SHIFT) | ((stride - 1) << STRIDE_SHIFT) | base as u32
}

/// A leaf entry for the leaf at `base` with starts of `16 << code` bits.
fn leaf_entry(base: usize, code: u32, wide_labels: bool) -> u32 {
    debug_assert!(base <= LEAF_BASE_MASK as usize && code < 4);
    let wide = if wide_labels { WIDE_LABELS_BIT } else { 0 };
    LEAF_BIT | wide | (code << WIDTH_SHIFT) | base as u32
}

/// The `bits` address bits after the first `depth`, as an integer (bits
/// past the address's end read as zero): a node table's index, or a
/// leaf's probe. Needs `depth < 128` and `1 <= bits <= 128`.
#[inline(always)]
fn bits_after(addr: u128, depth: u32, bits: u32) -> u128 {
    (addr << depth) >> (128 - bits)
}

/// The lookup snapshot of `dxr6`: entries (root, then node tables), leaf
/// words and results, in storage `S`.
pub struct Dxr6<S: Storage = Owned> {
    /// `K`, the root's address bits.
    root_bits: u32,
    /// The root (`2^K` entries), then every node table.
    entries: S::Array<u32>,
    /// Leaves, followed by [`WINDOW_WORDS`] words of padding so a window
    /// read from any leaf stays inside the array.
    leaves: S::Array<u16>,
    /// Label slots by label index.
    results: S::Array<LabelSlot>,
}

impl<S: Storage> Clone for Dxr6<S> {
    fn clone(&self) -> Self {
        Dxr6 {
            root_bits: self.root_bits,
            entries: self.entries.clone(),
            leaves: self.leaves.clone(),
            results: self.results.clone(),
        }
    }

    /// Reuses this snapshot's vectors instead of allocating new ones.
    fn clone_from(&mut self, source: &Self) {
        self.root_bits = source.root_bits;
        self.entries.clone_from(&source.entries);
        self.leaves.clone_from(&source.leaves);
        self.results.clone_from(&source.results);
    }
}

/// Keys per group of the batch lookup: the keys whose lookups are in
/// flight together, one level of the structure per round.
// PERF: see docs/BENCHMARKS.md, "IPv6: dxr6".
const GROUP: usize = 32;

impl<S: Storage> Dxr6<S> {
    /// The root entry of `addr`.
    #[inline(always)]
    fn root_index(&self, addr: u128) -> usize {
        (addr >> (128 - self.root_bits)) as usize
    }

    /// The entry a node entry's table holds for `addr` (the node's chunk
    /// starts after `depth` bits).
    #[inline(always)]
    fn child_index(entry: u32, addr: u128, depth: u32) -> usize {
        node_base(entry) + bits_after(addr, depth, stride_of(entry)) as usize
    }

    /// The label index for `addr` in the leaf of `entry`, whose chunk
    /// starts after `depth` bits.
    #[inline(always)]
    fn leaf_label(&self, entry: u32, addr: u128, depth: u32) -> usize {
        let base = leaf_base(entry);
        let starts = self.leaves[base] as usize;
        let first = base + 1;
        let (range, labels) = match width_code(entry) {
            0 => self.count::<u16>(first, starts, addr, depth),
            1 => self.count::<u32>(first, starts, addr, depth),
            2 => self.count::<u64>(first, starts, addr, depth),
            _ => self.count::<u128>(first, starts, addr, depth),
        };
        if has_wide_labels(entry) {
            let at = labels + 2 * range;
            self.leaves[at] as usize | (self.leaves[at + 1] as usize) << 16
        } else {
            self.leaves[labels + range] as usize
        }
    }

    /// The index of `addr`'s range among a leaf's ranges (its `starts`
    /// stored starts begin at word `first`), and the word where the
    /// leaf's labels begin.
    #[inline(always)]
    fn count<B: Bound>(
        &self,
        first: usize,
        starts: usize,
        addr: u128,
        depth: u32,
    ) -> (usize, usize) {
        let probe = B::from_bits(bits_after(addr, depth, B::BITS));
        (
            search::count_at_most::<B>(&self.leaves, first, starts, probe),
            first + starts * B::WORDS,
        )
    }

    /// The label index for `addr` given the entry it has reached at
    /// `depth` (a label or a leaf entry).
    #[inline(always)]
    fn resolve(&self, entry: u32, addr: u128, depth: u32) -> usize {
        if is_label(entry) {
            label_of(entry)
        } else {
            self.leaf_label(entry, addr, depth)
        }
    }

    /// Starts loading what `entry` (reached by `addr` at `depth`) points
    /// to: its child entry for a node, its first two cache lines for a
    /// leaf (the window and, for most leaves, the labels).
    #[inline(always)]
    fn prefetch_target(&self, entry: u32, addr: u128, depth: u32) {
        if is_node(entry) {
            prefetch(
                self.entries
                    .as_ptr()
                    .wrapping_add(Self::child_index(entry, addr, depth)),
            );
        } else {
            let leaf = self.leaves.as_ptr().wrapping_add(leaf_base(entry));
            prefetch(leaf);
            prefetch(leaf.wrapping_add(WINDOW_WORDS));
        }
    }

    /// Looks up one group of at most [`GROUP`] keys, level by level: each
    /// round reads, for every unresolved key, the entry or leaf the
    /// previous round prefetched, and prefetches the next one, so the
    /// group's cache misses overlap (as DPDK's `rte_fib6` bulk lookup walks
    /// a burst level by level, but with the loads issued ahead).
    #[inline(always)]
    fn lookup_group(&self, keys: &[u128], out: &mut [Option<Label>]) {
        debug_assert!(keys.len() <= GROUP && out.len() == keys.len());
        for &addr in keys {
            prefetch(self.entries.as_ptr().wrapping_add(self.root_index(addr)));
        }
        let mut entry = [0u32; GROUP];
        let mut depth = [0u32; GROUP];
        let mut pending = 0u64;
        for (j, (&addr, result)) in keys.iter().zip(out.iter_mut()).enumerate() {
            let root = self.entries[self.root_index(addr)];
            if is_label(root) {
                *result = self.results[label_of(root)].get();
            } else {
                self.prefetch_target(root, addr, self.root_bits);
                entry[j] = root;
                depth[j] = self.root_bits;
                pending |= 1 << j;
            }
        }
        while pending != 0 {
            let mut next = 0u64;
            let mut keys_left = pending;
            while keys_left != 0 {
                let j = keys_left.trailing_zeros() as usize;
                keys_left &= keys_left - 1;
                let addr = keys[j];
                let current = entry[j];
                if is_leaf(current) {
                    out[j] = self.results[self.leaf_label(current, addr, depth[j])].get();
                    continue;
                }
                let child = self.entries[Self::child_index(current, addr, depth[j])];
                depth[j] += stride_of(current);
                if is_label(child) {
                    out[j] = self.results[label_of(child)].get();
                } else {
                    self.prefetch_target(child, addr, depth[j]);
                    entry[j] = child;
                    next |= 1 << j;
                }
            }
            pending = next;
        }
    }
}

impl<S: Storage> Lookup<u128> for Dxr6<S> {
    #[inline(always)]
    fn lookup(&self, addr: u128) -> Option<Label> {
        let mut entry = self.entries[self.root_index(addr)];
        let mut depth = self.root_bits;
        while is_node(entry) {
            let node = entry;
            entry = self.entries[Self::child_index(node, addr, depth)];
            depth += stride_of(node);
        }
        self.results[self.resolve(entry, addr, depth)].get()
    }

    fn lookup_batch(&self, addrs: &[u128], out: &mut [Option<Label>]) {
        assert!(out.len() >= addrs.len(), "output slice shorter than input");
        for (keys, results) in addrs.chunks(GROUP).zip(out.chunks_mut(GROUP)) {
            self.lookup_group(keys, results);
        }
    }

    fn memory_bytes(&self) -> usize {
        self.entries.len() * 4
            + self.leaves.len() * 2
            + self.results.len() * std::mem::size_of::<LabelSlot>()
    }
}

/// The parameters of `dxr6`: `dxr6:k=K,stride=S,leaf=L`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dxr6Config {
    /// `K`: the address bits the root table resolves (8..=24).
    pub root_bits: u32,
    /// The largest node stride (0..=16); 0 builds no nodes: every root
    /// chunk is one leaf, searched by halving (single-level DXR).
    pub max_stride: u32,
    /// Windows of starts (64 bytes each) a leaf may hold before its chunk
    /// becomes a node (1..=64); past one, leaves are halved to a window.
    pub leaf_windows: u32,
}

/// The default parameters, chosen by measurement (docs/BENCHMARKS.md,
/// "IPv6: dxr6").
pub const DEFAULT_CONFIG: Dxr6Config = Dxr6Config {
    root_bits: 16,
    max_stride: 16,
    leaf_windows: 1,
};

impl Default for Dxr6Config {
    fn default() -> Self {
        DEFAULT_CONFIG
    }
}

impl fmt::Display for Dxr6Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "dxr6:k={},stride={},leaf={}",
            self.root_bits, self.max_stride, self.leaf_windows
        )
    }
}

impl EngineConfig for Dxr6Config {
    const NAMES: &'static [&'static str] = &["dxr6"];

    fn from_spec(spec: &EngineSpec) -> Result<Self, BuildError> {
        spec.expect_only(&["k", "stride", "leaf"])?;
        Ok(Dxr6Config {
            root_bits: spec
                .number("k", MIN_K..=MAX_K)?
                .unwrap_or(DEFAULT_CONFIG.root_bits),
            max_stride: spec
                .number("stride", 0..=MAX_STRIDE)?
                .unwrap_or(DEFAULT_CONFIG.max_stride),
            leaf_windows: spec
                .number("leaf", 1..=64)?
                .unwrap_or(DEFAULT_CONFIG.leaf_windows),
        })
    }
}

/// What a `dxr6` table looks like.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Dxr6Stats {
    /// `K`, the root's address bits.
    pub root_bits: u32,
    /// Node tables by stride (index `stride - 1`).
    pub node_tables: Vec<usize>,
    /// The most node levels below the root on any path.
    pub max_node_levels: usize,
    /// Leaves by start width: 16, 32, 64, 128 bits.
    pub leaves: [usize; 4],
    /// Leaves whose label indices need 32 bits.
    pub wide_label_leaves: usize,
    /// Words (u16) the leaves occupy.
    pub leaf_words: usize,
    /// Leaf words freed by updates and not reused yet.
    pub free_leaf_words: usize,
    /// Node entries in tables freed by updates and not reused yet.
    pub free_node_entries: usize,
    /// Distinct labels in the results table.
    pub labels: usize,
    /// Wall time of the last full build, in nanoseconds.
    pub build_ns: u64,
    /// Full rebuilds updates made to compact the arrays.
    pub compactions: u64,
}

impl EngineStats for Dxr6Stats {
    fn rows(&self) -> Vec<(String, String)> {
        let strides: Vec<String> = self
            .node_tables
            .iter()
            .enumerate()
            .filter(|(_, &count)| count > 0)
            .map(|(i, count)| format!("{count} x 2^{}", i + 1))
            .collect();
        vec![
            ("root bits".into(), self.root_bits.to_string()),
            ("node tables".into(), strides.join(", ")),
            (
                "node levels (most)".into(),
                self.max_node_levels.to_string(),
            ),
            (
                "leaves by start width 16/32/64/128".into(),
                format!("{:?}", self.leaves),
            ),
            (
                "leaves with u32 labels".into(),
                self.wide_label_leaves.to_string(),
            ),
            ("leaf bytes".into(), (self.leaf_words * 2).to_string()),
            (
                "free leaf bytes / node entries".into(),
                format!("{} / {}", self.free_leaf_words * 2, self.free_node_entries),
            ),
            ("distinct labels".into(), self.labels.to_string()),
            (
                "build ms".into(),
                format!("{:.1}", self.build_ns as f64 / 1e6),
            ),
            ("compactions".into(), self.compactions.to_string()),
        ]
    }
}
