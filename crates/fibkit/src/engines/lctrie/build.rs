//! Building the LC-trie from the reference table: its leaves in address
//! order, then each sub-trie at once with the stride the resize rules
//! settle on.

use super::editor::{index_in, inflates, Editor};
use super::*;
use crate::rib::Rib;

/// A table's prefixes grouped by address, in ascending address order:
/// the leaves of its trie, what a build from scratch reads.
pub(super) struct Leaves<A> {
    /// Distinct prefix addresses, ascending.
    pub(super) keys: Vec<A>,
    /// `entries[starts[i]..starts[i + 1]]` are the prefixes at `keys[i]`,
    /// by ascending suffix length.
    pub(super) starts: Vec<u32>,
    pub(super) entries: Vec<Entry>,
    /// `splits[i]`: the highest bit where `keys[i]` and `keys[i + 1]`
    /// differ. In sorted keys the highest bit where any two keys of a run
    /// differ is the largest split between them, so a node's stride, its
    /// children and which of them are full follow from these alone.
    pub(super) splits: Vec<u8>,
}

impl<A: Addr> Leaves<A> {
    pub(super) fn of(rib: &Rib<A>) -> Self {
        let mut leaves = Leaves {
            keys: Vec::new(),
            starts: Vec::new(),
            entries: Vec::with_capacity(rib.len()),
            splits: Vec::new(),
        };
        for (prefix, label) in rib.iter() {
            let key = prefix.addr();
            if leaves.keys.last() != Some(&key) {
                if let Some(&last) = leaves.keys.last() {
                    leaves
                        .splits
                        .push((A::BITS as u32 - 1 - (last ^ key).leading_zeros()) as u8);
                }
                leaves.keys.push(key);
                leaves.starts.push(leaves.entries.len() as u32);
            }
            leaves
                .entries
                .push(Entry::new(label, A::BITS - prefix.plen()));
        }
        leaves.starts.push(leaves.entries.len() as u32);
        // The table lists an address's prefixes by ascending length, the
        // leaf wants them by ascending suffix length.
        for run in leaves.starts.windows(2) {
            leaves.entries[run[0] as usize..run[1] as usize].reverse();
        }
        leaves
    }

    fn entries(&self, leaf: usize) -> &[Entry] {
        &self.entries[self.starts[leaf] as usize..self.starts[leaf + 1] as usize]
    }
}

impl<A: SlotLayout> Editor<'_, A> {
    /// Builds the sub-trie of the leaves in `run` (at least one) under the
    /// node at `parent` and returns its key vector, for the caller to store.
    ///
    /// Each node gets at once the stride the resize rules settle on:
    /// starting from the binary node at the run's highest differing bit,
    /// it doubles while fib_trie's inflation rule ([`inflates`]) holds for
    /// the children it would have. A doubling turns each full child into
    /// two children, so the next stride's count is at most twice this
    /// one's and the rule, once false, stays false; where it stops, the
    /// non-empty children still fill half the slots (30% at the top),
    /// above the halving thresholds, so updates would resize no node of
    /// the result. Inserting 8.4M consecutive IPv6 host routes one by one,
    /// each inflation copying the node's whole top, took 75–89 s; this
    /// reads each leaf once per level and stride tried (1.2 s), and leaves
    /// no dead slot.
    pub(super) fn build_subtrie(
        &mut self,
        leaves: &Leaves<A>,
        run: std::ops::Range<usize>,
        parent: usize,
    ) -> Result<Kv<A>, BuildError> {
        let first = run.start;
        if run.len() == 1 {
            return Ok(self.make_leaf(leaves.keys[first], leaves.entries(first), &Kv::EMPTY));
        }
        let splits = &leaves.splits[first..run.end - 1];
        let top = splits.iter().copied().max().unwrap_or(0) + 1;
        let mut bits = 1u8;
        while bits < top {
            // Would the node of `bits` bits at `pos` inflate? Its children
            // are the runs between splits at or above `pos`; a child is
            // full when its own highest split is `pos - 1`.
            let pos = top - bits;
            let (mut children, mut full, mut this_full) = (1usize, 0usize, false);
            for &split in splits {
                if split >= pos {
                    children += 1;
                    full += this_full as usize;
                    this_full = false;
                } else if split == pos - 1 {
                    this_full = true;
                }
            }
            full += this_full as usize;
            let node: Kv<A> = Kv {
                pos,
                bits,
                ..Kv::EMPTY
            };
            if !inflates(&node, children, full, parent == ROOT) {
                break;
            }
            bits += 1;
        }
        let pos = top - bits;
        let block = self.alloc_block(bits, leaves.keys[first], pos, parent)?;
        let header = self.header(block);
        let mut start = first;
        for end in first + 1..=run.end {
            if end == run.end || leaves.splits[end - 1] >= pos {
                let child = self.build_subtrie(leaves, start..end, block)?;
                self.put_child(block, index_in(&header, leaves.keys[start]), child);
                start = end;
            }
        }
        self.seal(block);
        Ok(self.kv_of(block))
    }
}
