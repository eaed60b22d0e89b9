//! `levels` snapshots in saved images ([`crate::image`]): the trie
//! entries, the tree nodes and the results as sections, and the checks
//! that make a mapped snapshot safe to look up.
//!
//! ```text
//! section   element       holds
//! entries   u32           level 1, then the child tables
//! tree      TreeNode<A>   the leaves' search trees
//! results   LabelSlot     label slots, index 0 = the default route (or none)
//! ```
//! The strides come from the image's engine spec (checked as a build
//! checks them: 1 to 3 strides of 1 to 24 bits within the address width).
//!
//! What opening checks, and why it is enough: a lookup reads a level-1
//! entry, follows child entries one level down each (so a child entry may
//! only appear above the last level, naming a whole table inside
//! `entries`), then reads a label index or searches a tree, going left
//! below a node's interval and right above it until the address lies in
//! one. So every reachable label index must be inside `results`, and every
//! tree must cover exactly the addresses of the entry naming it: a node's
//! interval inside them, the left subtree covering the addresses below it
//! and the right one those above (then every search ends on a node). Each
//! child table is checked once per level it is reached at, each tree node
//! once: a node reached twice is an error (trees are not shared).

use std::collections::HashSet;

use super::{
    Levels, LevelsConfig, TreeNode, MAX_LEVELS, PAYLOAD_MASK, TAG_CHILD, TAG_SHIFT, TAG_TREE,
};
use crate::addr::Addr;
use crate::image::{Image, ImageError, Mapped, SectionData};
use crate::storage::Plain;

crate::image::saved!([A: Addr] Levels<A> => Levels<A, Mapped>, A, where [TreeNode<A>: Plain]);

impl<A: Addr> Levels<A>
where
    TreeNode<A>: Plain,
{
    /// The arrays to save in an image.
    pub fn image_sections(&self) -> Vec<SectionData<'_>> {
        vec![
            SectionData::new("entries", &self.entries),
            SectionData::new("tree", &self.tree),
            SectionData::results(&self.results),
        ]
    }
}

impl<A: Addr> Levels<A, Mapped>
where
    TreeNode<A>: Plain,
{
    /// The snapshot saved in `image`, read in place, after checking every
    /// invariant the lookup relies on (see the module docs).
    pub fn from_image(image: &Image) -> Result<Self, ImageError> {
        let config: LevelsConfig = image.config()?;
        config
            .check::<A>()
            .map_err(|e| image.invalid(e.to_string()))?;
        let mut strides = [0; MAX_LEVELS];
        strides[..config.strides.len()].copy_from_slice(&config.strides);
        let snapshot = Levels {
            strides,
            entries: image.array::<u32>("entries")?,
            tree: image.array::<TreeNode<A>>("tree")?,
            results: image.results()?,
        };
        image.checked(snapshot, |snapshot| snapshot.check(config.strides.len()))
    }

    fn check(&self, levels: usize) -> Result<(), String> {
        let width = u32::from(A::BITS);
        let top = 1usize << self.strides[0];
        if self.entries.len() < top {
            return Err("the first level is shorter than its stride".into());
        }
        // Tables to check: first entry, level (0-based), the first address
        // the table covers and the bits consumed after its stride.
        let mut pending = vec![(0usize, 0usize, A::ZERO, u32::from(self.strides[0]))];
        let mut checked_tables = HashSet::new();
        let mut reached_nodes = vec![false; self.tree.len()];
        while let Some((table, level, first, depth)) = pending.pop() {
            if !checked_tables.insert((table, level)) {
                continue;
            }
            let len = 1usize << self.strides[level];
            let entries = self
                .entries
                .get(table..table + len)
                .ok_or("a child table lies outside the entries")?;
            for (index, &entry) in entries.iter().enumerate() {
                // The addresses this entry covers.
                let lo = first | A::from_u64(index as u64) << (width - depth);
                let hi = lo | !A::mask(depth as u8);
                let payload = entry & PAYLOAD_MASK;
                match entry >> TAG_SHIFT {
                    TAG_CHILD if level + 1 < levels => {
                        let stride = u32::from(self.strides[level + 1]);
                        pending.push((payload as usize, level + 1, lo, depth + stride));
                    }
                    TAG_CHILD => return Err("a last-level entry names a child table".into()),
                    TAG_TREE => self.check_tree(payload, lo, hi, &mut reached_nodes)?,
                    _ if (payload as usize) < self.results.len() => {}
                    _ => return Err("an entry names a label outside the results".into()),
                }
            }
        }
        Ok(())
    }

    /// Checks that the tree at `root` covers `lo..=hi` exactly with labels
    /// inside the results, reaching each node once.
    fn check_tree(&self, root: u32, lo: A, hi: A, reached: &mut [bool]) -> Result<(), String> {
        let mut pending = vec![(root, lo, hi)];
        while let Some((at, lo, hi)) = pending.pop() {
            let seen = reached
                .get_mut(at as usize)
                .ok_or("a tree node lies outside the tree")?;
            if std::mem::replace(seen, true) {
                return Err("tree nodes are shared or form a cycle".into());
            }
            let node = &self.tree[at as usize];
            if !(lo <= node.first && node.first <= node.last && node.last <= hi)
                || node.label as usize >= self.results.len()
            {
                return Err("a tree node's interval or label is out of place".into());
            }
            if node.first > lo {
                pending.push((node.left, lo, A::from_u128(node.first.to_u128() - 1)));
            }
            if node.last < hi {
                pending.push((node.right, A::from_u128(node.last.to_u128() + 1), hi));
            }
        }
        Ok(())
    }
}
