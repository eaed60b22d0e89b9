//! `lctrie` snapshots in saved images ([`crate::image`]): the slab and the
//! leaf entries as sections, and the checks that make a mapped trie safe
//! to look up with either algorithm.
//!
//! ```text
//! section   element            holds
//! slab      Slot32 / Slot128   key vectors: the root pseudo block, then
//!                              every tnode's header and children
//! entries   Entry              leaf entry blocks: [count, (slen, label)...]
//! ```
//! Labels live in the key vectors and entries (no results table); the
//! spec's `lookup=` chooses the algorithm.
//!
//! What opening checks, and why it is enough: both look-ups descend from
//! `slab[ROOT]` through tnodes to leaves and backtrack through the headers
//! (each block's header names its parent block and repeats the node's key,
//! position and stride, from which the node's index in its parent is
//! recomputed). So, walking from the root, every reachable key vector must
//! have a known kind, `slen` and `pos + bits` within the address width
//! (the look-ups shift by them and subtract them from it) and lie below its
//! parent's bits; its key must give its own index in the parent; a tnode
//! must have `1..=MAX_BITS` bits, a whole block inside the slab reached
//! from no other node (so the trie is a tree and walks end), and a header
//! repeating it with its parent block; a leaf has no bits, and a leaf with
//! several prefixes a non-empty entry block inside `entries` whose suffix
//! lengths are within the width. The checks visit every reachable slot once.

use super::{
    Entry, Kv, LcTrie, LcTrieConfig, SlotLayout, EMPTY, HEADER, LEAF, LEAF_LIST, MAX_BITS, ROOT,
    TNODE,
};
use crate::image::{Image, ImageError, Mapped, SectionData};

crate::image::saved!([A: SlotLayout] LcTrie<A> => LcTrie<A, Mapped>, A);

impl<A: SlotLayout> LcTrie<A> {
    /// The arrays to save in an image.
    pub fn image_sections(&self) -> Vec<SectionData<'_>> {
        vec![
            SectionData::new("slab", &self.slab),
            SectionData::new("entries", &self.entries),
        ]
    }
}

impl<A: SlotLayout> LcTrie<A, Mapped> {
    /// The trie saved in `image`, read in place, after checking every
    /// invariant the look-ups rely on (see the module docs).
    pub fn from_image(image: &Image) -> Result<Self, ImageError> {
        let config: LcTrieConfig = image.config()?;
        let trie = LcTrie {
            slab: image.array::<A::Slot>("slab")?,
            entries: image.array::<Entry>("entries")?,
            algo: config.lookup,
        };
        image.checked(trie, Self::check)
    }

    fn check(&self) -> Result<(), String> {
        let width = u32::from(A::BITS);
        if self.slab.len() <= ROOT {
            return Err("the slab has no root pseudo block".into());
        }
        let mut reached = vec![false; self.slab.len()];
        reached[..=ROOT].fill(true);
        // Slots to check: the slot, the block it lies in, and the tnode
        // owning that block (`None` for the top node).
        let mut pending: Vec<(usize, usize, Option<Kv<A>>)> = vec![(ROOT, ROOT, None)];
        while let Some((slot, block, parent)) = pending.pop() {
            let n = self.kv(slot);
            if n.kind == EMPTY {
                continue;
            }
            let (pos, bits) = (u32::from(n.pos), u32::from(n.bits));
            if n.kind > TNODE || u32::from(n.slen) > width || pos + bits.max(1) > width {
                return Err(
                    "a key vector has an unknown kind or a position past the address".into(),
                );
            }
            if let Some(parent) = parent {
                let index = (n.key ^ parent.key) >> u32::from(parent.pos);
                if index != A::from_u64((slot - block) as u64) || pos + bits > u32::from(parent.pos)
                {
                    return Err("a key vector does not belong where its parent holds it".into());
                }
            }
            match n.kind {
                LEAF if bits == 0 => {}
                LEAF_LIST if bits == 0 => self.check_entries(n.ptr as usize, width)?,
                TNODE if (1..=u32::from(MAX_BITS)).contains(&bits) => {
                    let children = n.ptr as usize;
                    let end = children + (1 << bits);
                    let block_slots = children.checked_sub(HEADER).map(|first| first..end);
                    let Some(owned) = block_slots.and_then(|slots| reached.get_mut(slots)) else {
                        return Err("a tnode's block lies outside the slab".into());
                    };
                    if owned.iter().any(|&seen| seen) {
                        return Err("tnode blocks overlap or form a cycle".into());
                    }
                    owned.fill(true);
                    let header = self.header(children);
                    if (
                        header.key,
                        header.pos,
                        header.bits,
                        header.kind,
                        header.ptr as usize,
                    ) != (n.key, n.pos, n.bits, TNODE, block)
                    {
                        return Err("a block's header does not repeat its tnode".into());
                    }
                    pending.extend((children..end).map(|child| (child, children, Some(n))));
                }
                _ => return Err("a leaf has child bits or a tnode has none or too many".into()),
            }
        }
        Ok(())
    }

    /// Checks the entry block at `base` of a leaf with several prefixes.
    fn check_entries(&self, base: usize, width: u32) -> Result<(), String> {
        let count = self
            .entries
            .get(base)
            .map_or(0, |header| header.slen as usize);
        match self.entries.get(base + 1..base + 1 + count) {
            Some(list) if count > 0 && list.iter().all(|e| u32::from(e.slen) <= width) => Ok(()),
            _ => Err("a leaf's entries are missing, outside the entries or too long".into()),
        }
    }
}
