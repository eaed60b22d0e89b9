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
    crate::engine::forward_lookup!(A; match self {
        CpeTrie::Leaf(trie) => trie,
        CpeTrie::Nopush(trie) => trie,
    });
}
