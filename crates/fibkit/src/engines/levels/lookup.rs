//! The `levels` lookup snapshot: the trie levels, the leaves' search
//! trees, and the walk.

use super::*;

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
    pub(super) pad: u32,
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
    pub(super) strides: [u8; MAX_LEVELS],
    pub(super) entries: S::Array<u32>,
    pub(super) tree: S::Array<TreeNode<A>>,
    pub(super) results: S::Array<LabelSlot>,
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
