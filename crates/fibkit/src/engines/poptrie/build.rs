//! Building `poptrie` from the reference table: the root, the chunks'
//! tables and the nodes, depth first, from the merged range view.

use std::marker::PhantomData;

use super::{
    leaf_entry, left, popcnt_available, wide_available, Poptrie, PoptrieUpdater, LEAF, MAX_INDEX,
    STRIDE,
};
use crate::addr::Addr;
use crate::engine::BuildError;
use crate::labels::LabelIndex;
use crate::rib::{Range, Rib};

/// The merged range view as starts and label indices, for the build's
/// "is this span one range" question.
pub(super) struct Spans {
    starts: Vec<u128>,
    labels: Vec<u32>,
}

impl Spans {
    pub(super) fn new<A: Addr>(
        ranges: &[Range<A>],
        labels: &mut LabelIndex,
    ) -> Result<Spans, BuildError> {
        Ok(Spans {
            starts: ranges.iter().map(|r| left(r.first)).collect(),
            labels: ranges
                .iter()
                .map(|r| labels.index(r.label))
                .collect::<Result<_, _>>()?,
        })
    }

    /// A walk over spans from range `at` on, asked in address order.
    pub(super) fn walk(&self, at: usize) -> SpanWalk<'_> {
        SpanWalk { spans: self, at }
    }
}

/// Spans asked in address order (a node's children, or the root's
/// chunks): a cursor over the ranges, which starts at the range holding
/// the node's first address (known from its parent's walk) and steps over
/// the node's few ranges. A binary search of the whole array per child
/// misses the cache at most of its steps, 32 searches per node.
pub(super) struct SpanWalk<'a> {
    spans: &'a Spans,
    /// The range holding the last span's first address.
    at: usize,
}

impl SpanWalk<'_> {
    /// The label index of `lo..=hi` if one range covers it; `lo` must not
    /// be below the last call's, nor below the start of range `at`.
    fn single(&mut self, lo: u128, hi: u128) -> Option<u32> {
        let starts = &self.spans.starts;
        while starts.get(self.at + 1).is_some_and(|&next| next <= lo) {
            self.at += 1;
        }
        let i = self.at;
        (i + 1 == starts.len() || starts[i + 1] > hi).then_some(self.spans.labels[i])
    }
}

/// A node slot allocated and not yet filled in: its span is the addresses
/// agreeing with `lo` (left-aligned) in their top `depth` bits, and `at`
/// is the range of the build's spans holding `lo`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Pending {
    pub(super) node: usize,
    pub(super) lo: u128,
    pub(super) depth: u32,
    pub(super) at: usize,
}

impl<A: Addr> PoptrieUpdater<A> {
    fn limit(&self, why: String) -> BuildError {
        BuildError::Limit {
            engine: self.config.to_string(),
            why,
        }
    }

    /// A new entry for the node of the span at `lo` of depth `depth`
    /// (filled in later: it is pushed on `pending` with `at`, the range
    /// holding `lo`).
    fn new_node(
        &self,
        entries: &mut Vec<u64>,
        pending: &mut Vec<Pending>,
        lo: u128,
        depth: u32,
        at: usize,
    ) -> Result<u32, BuildError> {
        let node = entries.len();
        if node >= MAX_INDEX {
            return Err(self.limit(format!("more than {MAX_INDEX} entries")));
        }
        entries.push(0);
        pending.push(Pending {
            node,
            lo,
            depth,
            at,
        });
        Ok(node as u32)
    }

    /// Fills in the entry of node `node`, the span at `lo` of depth
    /// `depth` (`at`: the range holding `lo`): appends its child entries
    /// together, a node's (pushed on `pending`) or a run of leaves' where
    /// the child is the first of the run.
    fn fill_node(
        &self,
        spans: &Spans,
        entries: &mut Vec<u64>,
        pending: &mut Vec<Pending>,
        Pending {
            node,
            lo,
            depth,
            at,
        }: Pending,
    ) -> Result<(), BuildError> {
        // Every key is walked left-aligned in 128 bits.
        let child_bits = 128 - depth - STRIDE;
        let mut starts = 0u32;
        let first = entries.len() as u64;
        // The label of the run the previous child ended (none after a
        // node, whose entry lies between: the run starts again).
        let mut previous = None;
        let mut walk = spans.walk(at);
        for c in 0..1u128 << STRIDE {
            let child_lo = lo | c << child_bits;
            match walk.single(child_lo, child_lo | ((1u128 << child_bits) - 1)) {
                Some(label) => {
                    if previous != Some(label) {
                        starts |= 1 << c;
                        entries.push(leaf_entry(&self.labels, label));
                        previous = Some(label);
                    }
                }
                None => {
                    starts |= 1 << c;
                    self.new_node(entries, pending, child_lo, depth + STRIDE, walk.at)?;
                    previous = None;
                }
            }
        }
        // A node whose children are all one run (a patched node whose span
        // became one range) gets a second run of the same leaf at child
        // 1, so that its bitmap is never a leaf's low half (1).
        if starts == 1 {
            starts |= 2;
            entries.push(entries[entries.len() - 1]);
        }
        if entries.len() > MAX_INDEX {
            return Err(self.limit(format!("more than {MAX_INDEX} entries")));
        }
        entries[node] = u64::from(starts) | first << 32;
        Ok(())
    }

    /// The root entry of chunk `chunk` (its first address's range held
    /// by `walk`), its subtree appended to `entries` depth first.
    pub(super) fn chunk_entry(
        &self,
        spans: &Spans,
        walk: &mut SpanWalk<'_>,
        chunk: usize,
        entries: &mut Vec<u64>,
        pending: &mut Vec<Pending>,
    ) -> Result<u32, BuildError> {
        let root_bits = self.config.root_bits;
        // Every key is walked left-aligned in 128 bits.
        let chunk_bits = 128 - root_bits;
        let lo = (chunk as u128) << chunk_bits;
        if let Some(label) = walk.single(lo, lo | ((1u128 << chunk_bits) - 1)) {
            return Ok(LEAF | label);
        }
        let entry = entries.len() as u32;
        self.fill_table(walk, lo, entries, pending)?;
        // The root node's subtree depth first, a node's child entries
        // appended together when the node is filled in: they stay
        // consecutive (the walk counts them), and a node with one child
        // node, as on the path to a lone /48, lies right before that
        // child's own children, so a path's entries share lines where
        // breadth first put each level of it in another line. On keys
        // inside announced IPv6 prefixes the batch ran 1.09x faster than
        // breadth first, on random public keys (which mostly end at
        // shallow nodes, whose leaves breadth first kept together) 0.98x
        // (docs/bench/poptrie.md, "`poptrie` lays its nodes out depth
        // first").
        self.fill_pending(spans, entries, pending)?;
        Ok(entry)
    }

    /// Appends the table of a chunk at `lo` (its first address's range
    /// held by `walk`) holding more than one range: 2^D entries, a leaf's
    /// or a node's (pushed on `pending`).
    fn fill_table(
        &self,
        walk: &mut SpanWalk<'_>,
        lo: u128,
        entries: &mut Vec<u64>,
        pending: &mut Vec<Pending>,
    ) -> Result<(), BuildError> {
        let direct_bits = self.config.direct_bits_for::<A>();
        let depth = self.config.root_bits + direct_bits;
        for slot in 0..1u128 << direct_bits {
            let slot_lo = lo | slot << (128 - depth);
            let entry = self.slot_entry(walk, slot_lo, depth, entries.len(), pending);
            entries.push(entry);
        }
        if entries.len() > MAX_INDEX {
            return Err(self.limit(format!("more than {MAX_INDEX} entries")));
        }
        Ok(())
    }

    /// The entry of table entry `slot`, whose span is the addresses
    /// agreeing with `slot_lo` in their top `depth` bits (its first
    /// address's range held by `walk`): a leaf's where one range covers
    /// it, otherwise a node's, pushed on `pending` (0 until filled in).
    pub(super) fn slot_entry(
        &self,
        walk: &mut SpanWalk<'_>,
        slot_lo: u128,
        depth: u32,
        slot: usize,
        pending: &mut Vec<Pending>,
    ) -> u64 {
        match walk.single(slot_lo, slot_lo | (u128::MAX >> depth)) {
            Some(label) => leaf_entry(&self.labels, label),
            None => {
                pending.push(Pending {
                    node: slot,
                    lo: slot_lo,
                    depth,
                    at: walk.at,
                });
                0
            }
        }
    }

    /// Fills in the nodes on `pending` and the nodes they add, depth first.
    pub(super) fn fill_pending(
        &self,
        spans: &Spans,
        entries: &mut Vec<u64>,
        pending: &mut Vec<Pending>,
    ) -> Result<(), BuildError> {
        while let Some(node) = pending.pop() {
            self.fill_node(spans, entries, pending, node)?;
        }
        Ok(())
    }

    /// The snapshot of `rib`, with the label indices renumbered.
    pub(super) fn snapshot(&mut self, rib: &Rib<A>) -> Result<Poptrie<A>, BuildError> {
        let root_bits = self.config.root_bits;
        // The default route is results slot 0 (label index 0 where only
        // it matches), so that a `/0` change rewrites one slot.
        self.labels = LabelIndex::new(self.config, MAX_INDEX);
        self.labels.set_default(rib.default_route());
        let spans = Spans::new(&rib.ranges_without_default(), &mut self.labels)?;
        let mut root = vec![0u32; 1 << root_bits];
        let mut entries = Vec::new();
        let mut pending = Vec::new();
        let mut walk = spans.walk(0);
        for (chunk, entry) in root.iter_mut().enumerate() {
            *entry = self.chunk_entry(&spans, &mut walk, chunk, &mut entries, &mut pending)?;
        }
        let mut results = Vec::new();
        self.labels.sync(&mut results);
        self.dead_entries = 0;
        let wide = wide_available();
        Ok(Poptrie {
            root_bits,
            direct_bits: self.config.direct_bits_for::<A>(),
            root,
            entries,
            results,
            wide,
            popcnt: popcnt_available(),
            family: PhantomData,
        })
    }
}
