//! The `cpe` lookup snapshot: the trie the spec chose (each trie's own
//! walk is in `leaf` or `nopush`).

use super::*;

/// The `cpe` lookup snapshot: either trie, as the spec chose.
pub enum CpeTrie<A, S: Storage = Owned> {
    /// Leaf-pushed (optionally packed).
    Leaf(LeafTrie<A, S>),
    /// Not leaf-pushed (`nopush`).
    Nopush(NopushTrie<A, S>),
}

impl<A, S: Storage> Clone for CpeTrie<A, S> {
    fn clone(&self) -> Self {
        match self {
            CpeTrie::Leaf(trie) => CpeTrie::Leaf(trie.clone()),
            CpeTrie::Nopush(trie) => CpeTrie::Nopush(trie.clone()),
        }
    }

    fn clone_from(&mut self, source: &Self) {
        match (self, source) {
            (CpeTrie::Leaf(trie), CpeTrie::Leaf(source)) => trie.clone_from(source),
            (CpeTrie::Nopush(trie), CpeTrie::Nopush(source)) => trie.clone_from(source),
            (this, source) => *this = source.clone(),
        }
    }
}

// PERF: one `match` per slice, not per key, for the slice methods; the
// per-key `lookup` matches on a value that never changes, which the branch
// predictor learns.
impl<A: Addr, S: Storage> Lookup<A> for CpeTrie<A, S> {
    #[inline(always)]
    fn lookup(&self, addr: A) -> Option<Label> {
        match self {
            CpeTrie::Leaf(trie) => trie.lookup(addr),
            CpeTrie::Nopush(trie) => trie.lookup(addr),
        }
    }

    fn lookup_batch(&self, addrs: &[A], out: &mut [Option<Label>]) {
        match self {
            CpeTrie::Leaf(trie) => trie.lookup_batch(addrs, out),
            CpeTrie::Nopush(trie) => trie.lookup_batch(addrs, out),
        }
    }

    fn lookup_each(&self, addrs: &[A], out: &mut [Option<Label>]) {
        match self {
            CpeTrie::Leaf(trie) => trie.lookup_each(addrs, out),
            CpeTrie::Nopush(trie) => trie.lookup_each(addrs, out),
        }
    }

    fn lookup_chained(&self, addrs: &[A], out: &mut [Option<Label>], seed: Label) -> Label {
        match self {
            CpeTrie::Leaf(trie) => trie.lookup_chained(addrs, out, seed),
            CpeTrie::Nopush(trie) => trie.lookup_chained(addrs, out, seed),
        }
    }

    fn memory_bytes(&self) -> usize {
        match self {
            CpeTrie::Leaf(trie) => trie.memory_bytes(),
            CpeTrie::Nopush(trie) => trie.memory_bytes(),
        }
    }
}
