//! The hybrid's lookups: the hashed search, then the walk of a trie.

use super::{base_of, flags, stride_of};
use crate::addr::Addr;
use crate::engines::bspl::lookup::BATCH;
use crate::engines::bspl::{entry_root, entry_tables, entry_value, Bspl};
use crate::prefix::Label;
use flags::{LABEL_MASK, POINTER};

impl<A: Addr, S: crate::storage::Storage> Bspl<A, S> {
    /// The hashed search of the hybrid: the deepest table whose string of
    /// `addr` has an entry, and that entry's value (or the first level's)
    /// with the depth its trie starts at.
    #[inline(always)]
    fn hybrid_start(&self, addr: A, entry: u64) -> (u32, u32) {
        let mut value = entry_value(entry);
        let mut depth = self.first_bits as u32;
        let (mut lo, mut hi) = entry_tables(entry);
        if lo <= hi {
            let mut mid = entry_root(entry);
            loop {
                let level = &self.levels[mid];
                let found = self.read(level, self.locate(level, addr), addr);
                if found != 0 {
                    value = found;
                    depth = level.plen as u32;
                    if mid == hi {
                        break;
                    }
                    lo = mid + 1;
                } else {
                    if mid == lo {
                        break;
                    }
                    hi = mid - 1;
                }
                mid = self.tree.root(lo, hi);
            }
        }
        (value, depth)
    }

    /// Follows trie pointers from `value` (whose node starts at bit
    /// `depth`) to a leaf; its label index.
    #[inline(always)]
    fn walk(&self, addr: A, mut value: u32, mut depth: u32) -> usize {
        while value & POINTER != 0 {
            let stride = stride_of(value);
            value = self.trie[base_of(value) + addr.bits(depth, stride) as usize];
            depth += stride;
        }
        (value & LABEL_MASK) as usize
    }

    /// The results index for `addr` in the hybrid.
    #[inline(always)]
    pub(in crate::engines::bspl) fn search_hybrid(&self, addr: A, entry: u64) -> usize {
        let (value, depth) = self.hybrid_start(addr, entry);
        self.walk(addr, value, depth)
    }

    /// The hybrid's batch lookup: the first-level entries and the tries'
    /// nodes are prefetched a chunk at a time, the hashed search runs per
    /// key (its probes are few and mostly in cache for IPv6 tables).
    pub(in crate::engines::bspl) fn lookup_batch_hybrid(
        &self,
        addrs: &[A],
        out: &mut [Option<Label>],
    ) {
        for (keys, results) in addrs.chunks(BATCH).zip(out.chunks_mut(BATCH)) {
            let mut state = [(0u32, 0u32); BATCH];
            for &addr in keys {
                crate::engines::shared::prefetch(
                    self.first.as_ptr().wrapping_add(self.block(addr)),
                );
            }
            for (i, &addr) in keys.iter().enumerate() {
                let (value, depth) = self.hybrid_start(addr, self.first[self.block(addr)]);
                if value & POINTER != 0 {
                    let at = base_of(value) + addr.bits(depth, stride_of(value)) as usize;
                    crate::engines::shared::prefetch(self.trie.as_ptr().wrapping_add(at));
                }
                state[i] = (value, depth);
            }
            for ((result, &addr), &(value, depth)) in results.iter_mut().zip(keys).zip(&state) {
                *result = self.results[self.walk(addr, value, depth)].get();
            }
        }
    }
}
