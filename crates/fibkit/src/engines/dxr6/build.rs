//! Building `dxr6` from the range view, and updating it by rebuilding the
//! smallest chunks a change touches.
//!
//! A chunk (the addresses under one entry) becomes a label entry when one
//! range covers it, a leaf when its starts fit `leaf` windows at their
//! width, and otherwise a node whose stride gives the chunk about
//! [`ENTRIES_PER_RANGE`] entries per range, whose children are built the
//! same way. Node tables and leaves are never moved once placed: an update
//! frees the old subtree of each chunk it rebuilds (tables to per-stride
//! free lists, leaf words to runs by length) and builds the new one into
//! free space or at the ends of the arrays. When free space passes a
//! quarter of either array, the update rebuilds the whole engine instead,
//! which compacts it.

use std::collections::BTreeMap;
use std::time::Instant;

use super::search::{Bound, WINDOW_WORDS};
use super::*;
use crate::engine::Updater;
use crate::labels::LabelIndex;
use crate::prefix::Prefix;
use crate::rib::{Range, Rib};

/// Node entries per range of the chunk a node splits: a node's stride is
/// the largest with `2^stride <= ENTRIES_PER_RANGE * ranges`.
// PERF: see docs/BENCHMARKS.md, "IPv6: dxr6".
const ENTRIES_PER_RANGE: usize = 2;

/// Compaction: rebuild when free leaf words or free node entries exceed
/// `1 / COMPACT_RATIO` of their array and [`COMPACT_MIN`].
const COMPACT_RATIO: usize = 4;
const COMPACT_MIN: usize = 4096;

/// The build state of `dxr6`: label indices and free space.
#[derive(Clone, Debug)]
pub struct Dxr6Updater {
    config: Dxr6Config,
    labels: LabelIndex,
    /// Free node tables by stride (index `stride - 1`).
    free_tables: Vec<Vec<usize>>,
    /// Entries in free node tables.
    free_entries: usize,
    /// Free leaf words.
    free_words: FreeRuns,
    /// Wall time of the last full build.
    build_ns: u64,
    /// Full rebuilds that updates did to compact the arrays.
    compactions: u64,
    /// Leaf assembly buffers, kept to allocate once.
    scratch_words: Vec<u16>,
    scratch_labels: Vec<u32>,
}

/// Runs of free leaf words by length; a request takes the shortest run
/// that holds it and returns the rest.
#[derive(Clone, Debug, Default)]
struct FreeRuns {
    by_len: BTreeMap<usize, Vec<usize>>,
    words: usize,
}

impl FreeRuns {
    fn put(&mut self, at: usize, len: usize) {
        self.by_len.entry(len).or_default().push(at);
        self.words += len;
    }

    fn take(&mut self, len: usize) -> Option<usize> {
        let (&run, starts) = self.by_len.range_mut(len..).next()?;
        let at = starts.pop().expect("no empty lists are kept");
        if starts.is_empty() {
            self.by_len.remove(&run);
        }
        self.words -= run;
        if run > len {
            self.put(at + len, run - len);
        }
        Some(at)
    }
}

/// A chunk an update rebuilds: the entry at `at` for the addresses whose
/// first `depth` bits are those of `first`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Slot {
    first: u128,
    depth: u32,
    at: usize,
}

/// The addresses after the first `depth` bits, as a mask (`depth <= 128`).
fn span_mask(depth: u32) -> u128 {
    u128::MAX.checked_shr(depth).unwrap_or(0)
}

/// Labels by how many ranges carry them, most first (ties by value), so
/// that the common ones get indices that fit u16 leaf labels.
fn labels_by_frequency(ranges: &[Range<u128>]) -> Vec<Label> {
    let mut counts: std::collections::HashMap<Label, usize> = Default::default();
    for label in ranges.iter().filter_map(|r| r.label) {
        *counts.entry(label).or_default() += 1;
    }
    let mut labels: Vec<(Label, usize)> = counts.into_iter().collect();
    labels.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    labels.into_iter().map(|(label, _)| label).collect()
}

impl Updater<u128> for Dxr6Updater {
    type Config = Dxr6Config;
    type Snapshot = Dxr6;
    type Stats = Dxr6Stats;

    fn build(config: &Dxr6Config, rib: &Rib<u128>) -> Result<(Self, Dxr6), BuildError> {
        let started = Instant::now();
        let ranges = rib.ranges();
        let mut updater = Dxr6Updater {
            config: *config,
            labels: LabelIndex::with_order("dxr6", MAX_LABELS, labels_by_frequency(&ranges))?,
            free_tables: vec![Vec::new(); MAX_STRIDE as usize],
            free_entries: 0,
            free_words: FreeRuns::default(),
            build_ns: 0,
            compactions: 0,
            scratch_words: Vec::new(),
            scratch_labels: Vec::new(),
        };
        let mut snapshot = Dxr6 {
            root_bits: config.root_bits,
            entries: vec![0; 1 << config.root_bits],
            leaves: vec![0; WINDOW_WORDS],
            results: Vec::new(),
        };
        updater.fill_table(&mut snapshot, 0, 0, config.root_bits, 0, &ranges)?;
        updater.labels.sync(&mut snapshot.results);
        updater.build_ns = started.elapsed().as_nanos() as u64;
        Ok((updater, snapshot))
    }

    fn config(&self) -> Dxr6Config {
        self.config
    }

    fn patches(&self) -> bool {
        true
    }

    fn update(
        &mut self,
        snapshot: &mut Dxr6,
        rib: &Rib<u128>,
        changed: &[Prefix<u128>],
    ) -> Result<(), BuildError> {
        let mut slots = Vec::new();
        for &prefix in changed {
            touched_slots(snapshot, prefix, &mut slots);
        }
        // Chunks nest or are disjoint; sorted by first address and then
        // depth, a chunk inside another follows it and is dropped.
        slots.sort_unstable();
        let mut end_of_last: Option<u128> = None;
        slots.retain(|slot| {
            if end_of_last.is_some_and(|end| slot.first <= end) {
                return false;
            }
            end_of_last = Some(slot.first | span_mask(slot.depth));
            true
        });
        if slots.len() << 2 > 1 << snapshot.root_bits {
            // PERF: past a quarter of the root, rebuilding chunk by chunk
            // (a range-view walk from the trie's root for each) costs more
            // than one full build (docs/BENCHMARKS.md, "IPv6: dxr6").
            return self.rebuild(snapshot, rib);
        }
        let mut ranges = Vec::new();
        for slot in slots {
            let old = snapshot.entries[slot.at];
            self.release(snapshot, old);
            ranges.clear();
            rib.ranges_in(
                slot.first,
                slot.first | span_mask(slot.depth),
                true,
                &mut ranges,
            );
            snapshot.entries[slot.at] =
                self.chunk_entry(snapshot, slot.depth, slot.first, &ranges)?;
        }
        self.labels.sync(&mut snapshot.results);
        let free_leaf_limit = COMPACT_MIN.max(snapshot.leaves.len() / COMPACT_RATIO);
        let free_entry_limit = COMPACT_MIN.max(snapshot.entries.len() / COMPACT_RATIO);
        if self.free_words.words > free_leaf_limit || self.free_entries > free_entry_limit {
            self.rebuild(snapshot, rib)?;
        }
        Ok(())
    }

    fn stats(&self, snapshot: &Dxr6) -> Dxr6Stats {
        let mut stats = Dxr6Stats {
            root_bits: snapshot.root_bits,
            node_tables: vec![0; MAX_STRIDE as usize],
            leaves: [0; 4],
            free_leaf_words: self.free_words.words,
            free_node_entries: self.free_entries,
            labels: self.labels.len(),
            build_ns: self.build_ns,
            compactions: self.compactions,
            ..Dxr6Stats::default()
        };
        for &entry in &snapshot.entries[..1 << snapshot.root_bits] {
            stats.count(snapshot, entry, 0);
        }
        stats
    }
}

impl Dxr6Stats {
    /// Adds the subtree of `entry`, `levels` node levels below the root.
    fn count(&mut self, snapshot: &Dxr6, entry: u32, levels: usize) {
        self.max_node_levels = self.max_node_levels.max(levels);
        if is_node(entry) {
            let stride = stride_of(entry);
            self.node_tables[stride as usize - 1] += 1;
            let base = node_base(entry);
            for &child in &snapshot.entries[base..base + (1 << stride)] {
                self.count(snapshot, child, levels + 1);
            }
        } else if is_leaf(entry) {
            self.leaves[width_code(entry) as usize] += 1;
            self.wide_label_leaves += has_wide_labels(entry) as usize;
            self.leaf_words += leaf_words(snapshot, entry);
        }
    }
}

/// The words the leaf of `entry` occupies.
fn leaf_words(snapshot: &Dxr6, entry: u32) -> usize {
    let starts = snapshot.leaves[leaf_base(entry)] as usize;
    let label_words = if has_wide_labels(entry) { 2 } else { 1 };
    1 + (starts << width_code(entry)) + (starts + 1) * label_words
}

/// Appends the chunks `prefix` touches: the smallest chunk holding it, or
/// the children of the node it covers part of (for a prefix shorter than
/// `K`, its root chunks).
fn touched_slots(snapshot: &Dxr6, prefix: Prefix<u128>, out: &mut Vec<Slot>) {
    let root_bits = snapshot.root_bits;
    let plen = prefix.plen() as u32;
    let first = prefix.first();
    let root_first = snapshot.root_index(first);
    let root_last = snapshot.root_index(prefix.last());
    if root_first != root_last {
        out.extend((root_first..=root_last).map(|at| Slot {
            first: (at as u128) << (128 - root_bits),
            depth: root_bits,
            at,
        }));
        return;
    }
    let mut slot = Slot {
        first: first & !span_mask(root_bits),
        depth: root_bits,
        at: root_first,
    };
    loop {
        let entry = snapshot.entries[slot.at];
        // A prefix covering the node's whole chunk rebuilds it (its shape
        // may change); one inside a child descends.
        if !is_node(entry) || plen <= slot.depth {
            out.push(slot);
            return;
        }
        let stride = stride_of(entry);
        let child_depth = slot.depth + stride;
        let child_first = bits_after(first, slot.depth, stride) as usize;
        let child_last = bits_after(prefix.last(), slot.depth, stride) as usize;
        let child = |index: usize| Slot {
            first: slot.first | (index as u128) << (128 - child_depth),
            depth: child_depth,
            at: node_base(entry) + index,
        };
        if child_first != child_last {
            out.extend((child_first..=child_last).map(child));
            return;
        }
        slot = child(child_first);
    }
}

impl Dxr6Updater {
    /// Rebuilds the engine from `rib` in place (what compaction does).
    fn rebuild(&mut self, snapshot: &mut Dxr6, rib: &Rib<u128>) -> Result<(), BuildError> {
        let (fresh, fresh_snapshot) = Self::build(&self.config, rib)?;
        let compactions = self.compactions + 1;
        *self = fresh;
        self.compactions = compactions;
        *snapshot = fresh_snapshot;
        Ok(())
    }

    /// Fills the node table of `2^stride` entries at `base` for the chunk
    /// of `first`'s first `depth` bits, from `pieces`, the ranges
    /// overlapping the chunk in order (the first may begin before it, the
    /// last end after it).
    fn fill_table(
        &mut self,
        snapshot: &mut Dxr6,
        base: usize,
        depth: u32,
        stride: u32,
        first: u128,
        pieces: &[Range<u128>],
    ) -> Result<(), BuildError> {
        let child_depth = depth + stride;
        let child_span = span_mask(child_depth);
        let mut next = 0; // the piece holding the current child's first address
                          // Consecutive children inside one range share its label entry.
        let mut covering = (usize::MAX, 0);
        for child in 0..1usize << stride {
            let child_first = first | (child as u128) << (128 - child_depth);
            let child_last = child_first | child_span;
            while pieces[next].last < child_first {
                next += 1;
            }
            let entry = if pieces[next].last >= child_last {
                if covering.0 != next {
                    covering = (next, label_entry(self.labels.index(pieces[next].label)?));
                }
                covering.1
            } else {
                let end = next + pieces[next..].partition_point(|r| r.first <= child_last);
                self.chunk_entry(snapshot, child_depth, child_first, &pieces[next..end])?
            };
            snapshot.entries[base + child] = entry;
        }
        Ok(())
    }

    /// The entry for the chunk of `first`'s first `depth` bits, whose
    /// ranges are `pieces` (as for [`Self::fill_table`]): a label, a leaf,
    /// or a node built below it.
    fn chunk_entry(
        &mut self,
        snapshot: &mut Dxr6,
        depth: u32,
        first: u128,
        pieces: &[Range<u128>],
    ) -> Result<u32, BuildError> {
        debug_assert!(!pieces.is_empty() && pieces[0].first <= first);
        if pieces.len() == 1 {
            return Ok(label_entry(self.labels.index(pieces[0].label)?));
        }
        let starts = pieces.len() - 1;
        // Every start but the first lies inside the chunk, after its first
        // address, so its bits after `depth` are not all zero.
        let start_bits = pieces[1..]
            .iter()
            .map(|r| 128 - (r.first << depth).trailing_zeros())
            .max()
            .unwrap_or(0);
        let code = match start_bits {
            0..=16 => u16::CODE,
            17..=32 => u32::CODE,
            33..=64 => u64::CODE,
            _ => u128::CODE,
        };
        let leaf_starts = (WINDOW_WORDS >> code) * self.config.leaf_windows as usize;
        if starts <= leaf_starts || self.config.max_stride == 0 {
            if starts > u16::MAX as usize {
                return Err(self.limit(format!(
                    "a chunk at depth {depth} holds {} ranges, more than the 65,536 a leaf \
                     holds (its header word); allow nodes (stride >= 1) or a larger k",
                    pieces.len()
                )));
            }
            return match code {
                0 => self.leaf::<u16>(snapshot, depth, pieces),
                1 => self.leaf::<u32>(snapshot, depth, pieces),
                2 => self.leaf::<u64>(snapshot, depth, pieces),
                _ => self.leaf::<u128>(snapshot, depth, pieces),
            };
        }
        let stride = (pieces.len() * ENTRIES_PER_RANGE)
            .ilog2()
            .clamp(1, self.config.max_stride)
            .min(128 - depth);
        let base = self.alloc_table(snapshot, stride)?;
        self.fill_table(snapshot, base, depth, stride, first, pieces)?;
        Ok(node_entry(base, stride))
    }

    /// Stores the leaf for `pieces` (a chunk at `depth`) with `B` starts.
    fn leaf<B: Bound>(
        &mut self,
        snapshot: &mut Dxr6,
        depth: u32,
        pieces: &[Range<u128>],
    ) -> Result<u32, BuildError> {
        let mut words = std::mem::take(&mut self.scratch_words);
        let mut labels = std::mem::take(&mut self.scratch_labels);
        words.clear();
        labels.clear();
        words.push((pieces.len() - 1) as u16);
        for piece in &pieces[1..] {
            B::from_bits(bits_after(piece.first, depth, B::BITS)).write(&mut words);
        }
        for piece in pieces {
            labels.push(self.labels.index(piece.label)?);
        }
        let wide = labels.iter().any(|&index| index > u16::MAX as u32);
        for &index in &labels {
            words.push(index as u16);
            if wide {
                words.push((index >> 16) as u16);
            }
        }
        let stored = self.alloc_words(snapshot, words.len()).map(|at| {
            snapshot.leaves[at..at + words.len()].copy_from_slice(&words);
            leaf_entry(at, B::CODE, wide)
        });
        self.scratch_words = words;
        self.scratch_labels = labels;
        stored
    }

    /// Where a node table of `2^stride` entries goes: a free one, or the
    /// end of the entries.
    fn alloc_table(&mut self, snapshot: &mut Dxr6, stride: u32) -> Result<usize, BuildError> {
        if let Some(base) = self.free_tables[stride as usize - 1].pop() {
            self.free_entries -= 1 << stride;
            return Ok(base);
        }
        let base = snapshot.entries.len();
        if base > NODE_BASE_MASK as usize {
            return Err(self.limit(format!(
                "node tables need more than 2^{NODE_BASE_BITS} entries (the node base field); \
                 `leaf=` larger or `stride=` smaller need fewer, or use `lctrie`"
            )));
        }
        snapshot.entries.resize(base + (1 << stride), 0);
        Ok(base)
    }

    /// Where `len` leaf words go: free ones, or the end of the leaves
    /// (before the padding, which moves along).
    fn alloc_words(&mut self, snapshot: &mut Dxr6, len: usize) -> Result<usize, BuildError> {
        if let Some(at) = self.free_words.take(len) {
            return Ok(at);
        }
        let at = snapshot.leaves.len() - WINDOW_WORDS;
        if at > LEAF_BASE_MASK as usize {
            return Err(self.limit(format!(
                "leaves need more than 2^{LEAF_BASE_BITS} words (the leaf base field); \
                 use `lctrie` or `cpe`"
            )));
        }
        // The old padding becomes the leaf's first words; new padding
        // (zeros, like the old) follows it.
        snapshot.leaves.resize(at + len + WINDOW_WORDS, 0);
        Ok(at)
    }

    /// Frees the node tables and leaves below `entry`.
    fn release(&mut self, snapshot: &Dxr6, entry: u32) {
        if is_node(entry) {
            let stride = stride_of(entry);
            let base = node_base(entry);
            for &child in &snapshot.entries[base..base + (1 << stride)] {
                self.release(snapshot, child);
            }
            self.free_tables[stride as usize - 1].push(base);
            self.free_entries += 1 << stride;
        } else if is_leaf(entry) {
            self.free_words
                .put(leaf_base(entry), leaf_words(snapshot, entry));
        }
    }

    fn limit(&self, why: String) -> BuildError {
        BuildError::Limit {
            engine: self.config.to_string(),
            why,
        }
    }
}
