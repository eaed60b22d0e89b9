//! Structural checks of the LC-trie and its updater's counts, for tests
//! and the fuzz targets.

use super::editor::{halves, index_in, inflates, is_full, suffix_rank, Editor, LcTrieUpdater};
use super::*;

impl<A: SlotLayout> LcTrieUpdater<A> {
    /// Checks every structural invariant look-ups and updates rely on, in
    /// `trie` (the snapshot this updater last built or updated) and in the
    /// updater's counts; returns the first violation found. For tests.
    pub fn check_invariants(&self, trie: &LcTrie<A>) -> Result<(), String> {
        if self.node_counts.len() != trie.slab.len() {
            return Err(format!(
                "{} node counts for {} slab slots",
                self.node_counts.len(),
                trie.slab.len()
            ));
        }
        let mut stack = vec![(ROOT, 0usize)];
        let mut count = 0usize;
        while let Some((block, index)) = stack.pop() {
            let kv = trie.kv(block + index);
            let parent = trie.header(block);
            let here = format!("slot {index} of block {block} (key {:?})", kv.key);
            if kv.kind == EMPTY {
                continue;
            }
            // The key agrees with the parent's bits and the slot index.
            if block != ROOT {
                let above = parent.pos as u32 + parent.bits as u32;
                let agree = above >= A::BITS as u32 || (kv.key ^ parent.key) >> above == A::ZERO;
                if !agree || index_in(&parent, kv.key) != index {
                    return Err(format!("{here}: key does not belong in this slot"));
                }
            }
            if kv.kind != TNODE {
                let entries = Editor::entries_of(trie, &kv);
                count += entries.len();
                if kv.pos != 0 || kv.bits != 0 {
                    return Err(format!("{here}: leaf with pos/bits"));
                }
                if entries.windows(2).any(|w| w[0].slen >= w[1].slen)
                    || (kv.kind == LEAF_LIST && entries.len() < 2)
                {
                    return Err(format!("{here}: leaf entries unsorted or too few"));
                }
                if entries.last().map(|e| e.slen) != Some(kv.slen) {
                    return Err(format!("{here}: leaf slen is not its longest suffix"));
                }
                if kv.slen < A::BITS && (kv.key << (A::BITS - 1 - kv.slen) as u32) << 1 != A::ZERO {
                    return Err(format!("{here}: host bits set under a prefix"));
                }
                continue;
            }
            let child_block = kv.ptr as usize;
            let header = trie.header(child_block);
            if header.ptr as usize != block {
                return Err(format!("{here}: parent link points to {}", header.ptr));
            }
            if (Kv {
                ptr: child_block as u32,
                ..header
            }) != kv
            {
                return Err(format!("{here}: key vector differs from header {header:?}"));
            }
            if kv.bits == 0 || kv.bits > MAX_BITS {
                return Err(format!("{here}: stride {}", kv.bits));
            }
            let shift = kv.pos as u32 + kv.bits as u32;
            if block != ROOT && shift > parent.pos as u32 {
                return Err(format!("{here}: node overlaps its parent's bits"));
            }
            if shift < A::BITS as u32 && kv.key << (A::BITS as u32 - shift) != A::ZERO {
                return Err(format!("{here}: key bits below pos + bits"));
            }
            let size = 1usize << kv.bits;
            let children: Vec<Kv<A>> = (child_block..child_block + size)
                .map(|i| trie.kv(i))
                .collect();
            let mut want = vec![0u32; kv.bits as usize + 1];
            for (i, child) in children.iter().enumerate() {
                if child.kind != EMPTY {
                    want[0] += 1;
                }
                if is_full(&kv, child) {
                    want[1] += 1;
                }
                if let Some(r) = suffix_rank(&kv, i, child) {
                    if r as u32 > i.trailing_zeros() {
                        return Err(format!("{here}: child {i} has suffix {}", child.slen));
                    }
                    want[1 + r as usize] += 1;
                }
            }
            let counts = &self.node_counts[child_block..child_block + want.len()];
            if counts != want {
                return Err(format!("{here}: counts {counts:?}, children say {want:?}"));
            }
            if want[0] < 2 {
                return Err(format!("{here}: node with {} children", want[0]));
            }
            let slen = children
                .iter()
                .filter(|c| c.kind != EMPTY)
                .map(|c| c.slen)
                .fold(kv.pos, u8::max);
            if slen != kv.slen {
                return Err(format!("{here}: slen {} but children say {slen}", kv.slen));
            }
            stack.extend((0..size).map(|i| (child_block, i)));
        }
        if count != self.prefixes {
            return Err(format!("{count} prefixes found, {} counted", self.prefixes));
        }
        let live = ROOT + 1 + trie.shape().slab_in_use;
        if live != self.live_slots {
            return Err(format!(
                "{live} live slab slots found, {} counted",
                self.live_slots
            ));
        }
        Ok(())
    }

    /// Non-empty and full children of the node at `block`.
    pub(super) fn children(&self, block: usize) -> (usize, usize) {
        let counts = &self.node_counts;
        (counts[block] as usize, counts[block + 1] as usize)
    }

    /// Checks that no node of `trie` has a stride the resize rules would
    /// change (none would inflate or halve): what a build from scratch
    /// leaves. For tests.
    pub fn check_settled(&self, trie: &LcTrie<A>) -> Result<(), String> {
        let mut stack = vec![(ROOT, ROOT)];
        while let Some((parent, slot)) = stack.pop() {
            let kv = trie.kv(slot);
            if kv.kind != TNODE {
                continue;
            }
            let block = kv.ptr as usize;
            let (children, full) = self.children(block);
            let top = parent == ROOT;
            if inflates(&kv, children, full, top) || halves(&kv, children, top) {
                return Err(format!(
                    "node at block {block} ({} bits at {}, {children} children, {full} full) \
                     would be resized",
                    kv.bits, kv.pos
                ));
            }
            stack.extend((block..block + (1 << kv.bits)).map(|child| (block, child)));
        }
        Ok(())
    }
}
