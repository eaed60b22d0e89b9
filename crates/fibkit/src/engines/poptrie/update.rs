//! Updating `poptrie`: the updater, where each change is patched (root
//! chunks, table entries or the deepest node over it), and rebuilds.

use std::marker::PhantomData;

use super::build::{Pending, Spans};
use super::{
    counted, is_node, left, Poptrie, PoptrieConfig, PoptrieStats, LEAF, MAX_INDEX, STRIDE,
};
use crate::addr::Addr;
use crate::engine::{BuildError, Updater};
use crate::labels::LabelIndex;
use crate::prefix::Prefix;
use crate::rib::{Range, Rib};
use crate::storage::Storage;

/// The build state of a `poptrie` engine: its parameters, the label
/// indices its snapshot's entries hold, and what patches left unreachable.
#[derive(Clone, Debug)]
pub struct PoptrieUpdater<A: Addr> {
    pub(super) config: PoptrieConfig,
    /// The snapshot's label indices (updates add labels; a rebuild
    /// renumbers them).
    pub(super) labels: LabelIndex,
    /// Entries that patches have left unreachable since the last build.
    pub(super) dead_entries: usize,
    /// Full builds that updates did: changes spanning a quarter of the
    /// root, or compaction.
    pub(super) rebuilds: u64,
    pub(super) family: PhantomData<A>,
}

/// Unreachable entries that start a compaction (with a quarter of the
/// array): below this a rebuild would cost more than the space.
const COMPACT_MIN: usize = 4096;

impl<A: Addr> PoptrieUpdater<A> {
    /// Builds what `patch` names again from `rib`, at the ends of the
    /// snapshot's arrays.
    fn patch(
        &mut self,
        snapshot: &mut Poptrie<A>,
        rib: &Rib<A>,
        patch: Patch,
        ranges: &mut Vec<Range<A>>,
    ) -> Result<(), BuildError> {
        let (lo, hi) = patch.span(snapshot.root_bits, snapshot.direct_bits);
        // The span's addresses in the family's own bits (keys are walked
        // left-aligned in 128).
        let to_family = 128 - A::BITS as u32;
        ranges.clear();
        rib.ranges_in_without_default(
            A::from_u128(lo >> to_family),
            A::from_u128(hi >> to_family),
            true,
            ranges,
        );
        let spans = Spans::new(ranges, &mut self.labels)?;
        let mut walk = spans.walk(0);
        let mut pending = Vec::new();
        match patch {
            Patch::Chunks { first, end } => {
                for chunk in first..end {
                    snapshot.root[chunk] = self.chunk_entry(
                        &spans,
                        &mut walk,
                        chunk,
                        &mut snapshot.entries,
                        &mut pending,
                    )?;
                }
            }
            // Table entries are rewritten in place: a leaf's, or a new
            // node's whose subtree is built at the end of the array.
            Patch::Slots { first, end, lo } => {
                let depth = snapshot.root_bits + snapshot.direct_bits;
                for (i, slot) in (first..end).enumerate() {
                    let slot_lo = lo + ((i as u128) << (128 - depth));
                    snapshot.entries[slot] =
                        self.slot_entry(&mut walk, slot_lo, depth, slot, &mut pending);
                }
                self.fill_pending(&spans, &mut snapshot.entries, &mut pending)?;
            }
            // The node keeps its entry (its parent counts it among its
            // children) and gets new child entries. Where the change
            // left its span one range, it stays a node whose children are
            // all one run: a level more for those keys, the same answer,
            // until the next build.
            Patch::Node { node, lo, depth } => {
                pending.push(Pending {
                    node,
                    lo,
                    depth,
                    at: 0,
                });
                self.fill_pending(&spans, &mut snapshot.entries, &mut pending)?;
            }
        }
        Ok(())
    }
}

/// What a change is patched at: root chunks (a prefix shorter than the
/// root, or one in a chunk that was one range), entries of a chunk's table
/// (a prefix shorter than the root and the table together, or one under a
/// table entry that was a leaf), or the deepest node whose span holds the
/// prefix (its subtree is built again under it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Patch {
    /// Root chunks `first..end`.
    Chunks { first: usize, end: usize },
    /// Table entries `first..end`, the first one's span starting at `lo`.
    Slots { first: usize, end: usize, lo: u128 },
    /// The node of entry `node`, whose span is the addresses agreeing
    /// with `lo` in their top `depth` bits.
    Node { node: usize, lo: u128, depth: u32 },
}

impl Patch {
    /// Where a change to `prefix` is patched in `snapshot`.
    pub(super) fn of<A: Addr, S: Storage>(snapshot: &Poptrie<A, S>, prefix: Prefix<A>) -> Patch {
        let (root_bits, direct_bits) = (snapshot.root_bits, snapshot.direct_bits);
        // Left-aligned in 128 bits, an IPv4 prefix's bits are the top
        // ones, so its length counts from the top as an IPv6 one does.
        let addr = left(prefix.first());
        let plen = u32::from(prefix.plen());
        let first = (addr >> (128 - root_bits)) as usize;
        let entry = snapshot.root[first];
        if plen < root_bits || entry & LEAF != 0 {
            let end = first + (1usize << root_bits.saturating_sub(plen));
            return Patch::Chunks { first, end };
        }
        // The prefix's first address has no bits past its length, so it
        // is the start of its first table entry's span.
        let depth = root_bits + direct_bits;
        let slot = snapshot.table_slot(entry, addr);
        if plen < depth {
            let end = slot + (1usize << (depth - plen));
            return Patch::Slots {
                first: slot,
                end,
                lo: addr,
            };
        }
        if !is_node(snapshot.entries[slot]) {
            let lo = addr & !(u128::MAX >> depth);
            return Patch::Slots {
                first: slot,
                end: slot + 1,
                lo,
            };
        }
        let (mut node, mut depth) = (slot, depth);
        // Down while the prefix lies inside one child that is a node.
        while depth + STRIDE <= plen {
            let child = (addr << depth >> (128 - STRIDE)) as u32;
            let next = counted(snapshot.entries[node], child);
            if !is_node(snapshot.entries[next]) {
                break;
            }
            node = next;
            depth += STRIDE;
        }
        let lo = addr & !(u128::MAX >> depth);
        Patch::Node { node, lo, depth }
    }

    /// The first and last address (left-aligned) of what it rebuilds.
    fn span(self, root_bits: u32, direct_bits: u32) -> (u128, u128) {
        match self {
            Patch::Slots { first, end, lo } => {
                let slot_bits = 128 - root_bits - direct_bits;
                // Past the last table entry of the last chunk the end
                // wraps to 0 and the last address to all ones.
                let after = lo.wrapping_add(((end - first) as u128) << slot_bits);
                (lo, after.wrapping_sub(1))
            }
            Patch::Chunks { first, end } => {
                let chunk_bits = 128 - root_bits;
                // `end << chunk_bits` is 0 past the last chunk, so the
                // last address wraps to all ones.
                (
                    (first as u128) << chunk_bits,
                    ((end as u128) << chunk_bits).wrapping_sub(1),
                )
            }
            Patch::Node { lo, depth, .. } => (lo, lo | u128::MAX >> depth),
        }
    }

    /// The entries it leaves unreachable in `snapshot` (a patched node
    /// keeps its own).
    fn replaced<A: Addr, S: Storage>(self, snapshot: &Poptrie<A, S>) -> usize {
        match self {
            Patch::Chunks { first, end } => snapshot.root[first..end]
                .iter()
                .filter(|&&entry| entry & LEAF == 0)
                .flat_map(|&entry| {
                    let table = entry as usize;
                    table..table + (1usize << snapshot.direct_bits)
                })
                .map(|slot| subtree_size(&snapshot.entries, slot))
                .sum(),
            // The entries keep their places; what lies under them goes.
            Patch::Slots { first, end, .. } => (first..end)
                .map(|slot| subtree_size(&snapshot.entries, slot) - 1)
                .sum(),
            Patch::Node { node, .. } => subtree_size(&snapshot.entries, node) - 1,
        }
    }
}

/// The entries of the subtree under the node of entry `node`, its own
/// included.
fn subtree_size(entries: &[u64], node: usize) -> usize {
    let mut count = 0;
    let mut stack = vec![node];
    while let Some(entry) = stack.pop() {
        count += 1;
        let word = entries[entry];
        if is_node(word) {
            let first = (word >> 32) as usize;
            stack.extend(first..first + (word as u32).count_ones() as usize);
        }
    }
    count
}

/// Where the changes in `changed` are patched in `snapshot`, in address
/// order, without those inside another (whose rebuild covers them).
fn patches<A: Addr, S: Storage>(snapshot: &Poptrie<A, S>, changed: &[Prefix<A>]) -> Vec<Patch> {
    let mut patches: Vec<((u128, u128), Patch)> = changed
        .iter()
        .map(|&prefix| {
            let patch = Patch::of(snapshot, prefix);
            (patch.span(snapshot.root_bits, snapshot.direct_bits), patch)
        })
        .collect();
    // Spans nest or are disjoint; by first address and the wider first, a
    // span inside another follows it.
    patches.sort_unstable_by_key(|&((lo, hi), _)| (lo, std::cmp::Reverse(hi)));
    let mut last: Option<u128> = None;
    patches.retain(|&((lo, hi), _)| {
        if last.is_some_and(|end| lo <= end) {
            return false;
        }
        last = Some(hi);
        true
    });
    patches.into_iter().map(|(_, patch)| patch).collect()
}

impl<A: Addr> Updater<A> for PoptrieUpdater<A> {
    type Config = PoptrieConfig;
    type Snapshot = Poptrie<A>;
    type Stats = PoptrieStats;

    fn build(config: &PoptrieConfig, rib: &Rib<A>) -> Result<(Self, Poptrie<A>), BuildError> {
        // The table size the family settled on, so that the engine's name
        // and a saved image's spec say it.
        let config = PoptrieConfig {
            direct_bits: Some(config.direct_bits_for::<A>()),
            ..*config
        };
        let mut updater = PoptrieUpdater {
            config,
            labels: LabelIndex::new(config, MAX_INDEX),
            dead_entries: 0,
            rebuilds: 0,
            family: PhantomData,
        };
        let snapshot = updater.snapshot(rib)?;
        Ok((updater, snapshot))
    }

    fn config(&self) -> PoptrieConfig {
        self.config
    }

    fn patches(&self) -> bool {
        true
    }

    fn update(
        &mut self,
        snapshot: &mut Poptrie<A>,
        rib: &Rib<A>,
        changed: &[Prefix<A>],
    ) -> Result<(), BuildError> {
        // The default route is results slot 0: it touches no chunk.
        let changed = crate::engines::shared::without_default(changed);
        let patches = patches(snapshot, changed);
        let chunks: usize = patches
            .iter()
            .map(|patch| match patch {
                Patch::Chunks { first, end } => end - first,
                Patch::Slots { .. } | Patch::Node { .. } => 0,
            })
            .sum();
        let replaced: usize = patches.iter().map(|patch| patch.replaced(snapshot)).sum();
        // PERF: past a quarter of the root's chunks or of the entries (a
        // short covering prefix, or `2000::/4`, nearly every IPv6 prefix),
        // one build of the whole table costs less than the patches, which
        // would also leave that much unreachable.
        if chunks << 2 >= snapshot.root.len()
            || (replaced >= COMPACT_MIN
                && (self.dead_entries + replaced) << 2 >= snapshot.entries.len())
        {
            return self.rebuild(snapshot, rib);
        }
        self.labels.set_default(rib.default_route());
        let mut ranges = Vec::new();
        for &patch in &patches {
            self.patch(snapshot, rib, patch, &mut ranges)?;
        }
        self.dead_entries += replaced;
        self.labels.sync(&mut snapshot.results);
        // Unreachable entries past a quarter of the array (and
        // `COMPACT_MIN`): compact by a build, so that a long stream of
        // changes keeps the footprint (and the lines a walk reads) of a
        // fresh build.
        if self.dead_entries >= COMPACT_MIN && self.dead_entries << 2 >= snapshot.entries.len() {
            return self.rebuild(snapshot, rib);
        }
        Ok(())
    }

    fn stats(&self, snapshot: &Poptrie<A>) -> PoptrieStats {
        let nodes = snapshot.entries.iter().filter(|&&e| is_node(e)).count();
        PoptrieStats {
            root_bits: snapshot.root_bits,
            direct_bits: snapshot.direct_bits,
            root_labels: snapshot.root.iter().filter(|&&e| e & LEAF != 0).count(),
            nodes,
            leaf_runs: snapshot.entries.len() - nodes,
            avx512: snapshot.wide,
            popcnt: snapshot.popcnt,
            dead_entries: self.dead_entries,
            rebuilds: self.rebuilds,
        }
    }
}

impl<A: Addr> PoptrieUpdater<A> {
    /// Builds `snapshot` again from `rib` (wide changes, compaction).
    fn rebuild(&mut self, snapshot: &mut Poptrie<A>, rib: &Rib<A>) -> Result<(), BuildError> {
        *snapshot = self.snapshot(rib)?;
        self.rebuilds += 1;
        Ok(())
    }
}
