//! `poptrie` snapshots in saved images ([`crate::image`]): the four arrays
//! as sections, and the checks that make a mapped snapshot safe to look
//! up.
//!
//! ```text
//! section   element      holds
//! root      u32          2^S root entries
//! nodes     u64          two words per node
//! leaves    u32          label indices of the runs of leaves
//! results   LabelSlot    label slots, index 0 = no route
//! ```
//! `S` comes from the image's engine spec.
//!
//! What opening checks, and why it is enough: a walk starts at a root
//! entry and goes from node to child node until a child is a leaf. So the
//! nodes reachable from the root must form a tree inside `nodes` (each
//! reached once: a walk then ends), and no node may have child nodes at
//! the last level (a walk never needs key bits past bit 128, which the
//! AVX-512 walk relies on); a node with a leaf child must start a run at
//! its first leaf child (the run count is then at least one) and its runs
//! must lie inside `leaves`; every label index (root entries and leaves)
//! must be inside `results`. The AVX-512 batch gathers without bounds
//! checks, so these are what keep its reads inside the arrays. Every
//! reachable node is visited once.

use super::{Poptrie, PoptrieConfig, LEAF, NODE_WORDS, STRIDE};
use crate::addr::Addr;
use crate::image::{Image, ImageError, Mapped, SectionData};
use crate::storage::Storage;

impl<A: Addr, S: Storage> Poptrie<A, S> {
    /// The arrays to save in an image.
    pub fn image_sections(&self) -> Vec<SectionData<'_>> {
        vec![
            SectionData::new("root", &self.root),
            SectionData::new("nodes", &self.nodes),
            SectionData::new("leaves", &self.leaves),
            SectionData::results(&self.results),
        ]
    }
}

impl<A: Addr> Poptrie<A, Mapped> {
    /// The snapshot saved in `image`, read in place, after checking every
    /// invariant the lookups rely on (see the module docs).
    pub fn from_image(image: &Image) -> Result<Self, ImageError> {
        let config: PoptrieConfig = image.config()?;
        let snapshot = Poptrie {
            root_bits: config.root_bits,
            root: image.array::<u32>("root")?,
            nodes: image.array::<u64>("nodes")?,
            leaves: image.array::<u32>("leaves")?,
            results: image.results()?,
            wide: super::wide_available(),
            popcnt: super::popcnt_available(),
            family: std::marker::PhantomData,
        };
        image.checked(snapshot, Self::check)
    }

    fn check(&self) -> Result<(), String> {
        let root_len = 1usize << self.root_bits;
        if self.root.len() != root_len {
            return Err(format!(
                "the root has {} entries where s={} needs {root_len}",
                self.root.len(),
                self.root_bits
            ));
        }
        if self.leaves.is_empty() || !self.nodes.len().is_multiple_of(NODE_WORDS) {
            return Err("the leaves are missing or the nodes cut short".into());
        }
        let labels = self.results.len();
        let nodes = self.nodes.len() / NODE_WORDS;
        let mut reached = vec![false; nodes];
        // Nodes to visit, with the key bit their children start at.
        let mut pending = Vec::new();
        let mut reach = |node: usize, depth: u32, pending: &mut Vec<(usize, u32)>| match reached
            .get_mut(node)
        {
            None => Err("a node lies outside the nodes"),
            Some(true) => Err("a node is reached twice: the nodes form no tree"),
            Some(seen) => {
                *seen = true;
                pending.push((node, depth));
                Ok(())
            }
        };
        for &entry in self.root.iter() {
            if entry & LEAF != 0 {
                if (entry & !LEAF) as usize >= labels {
                    return Err("a root entry names a label outside the results".into());
                }
            } else {
                reach(entry as usize, self.root_bits, &mut pending)?;
            }
        }
        while let Some((node, depth)) = pending.pop() {
            let (word0, word1) = (
                self.nodes[node * NODE_WORDS],
                self.nodes[node * NODE_WORDS + 1],
            );
            let (children, first_child) = (word0 as u32, (word0 >> 32) as usize);
            let (runs, first_leaf) = (word1 as u32, (word1 >> 32) as usize);
            if children != 0 && depth + 2 * STRIDE > 128 {
                return Err("a node of the last level has child nodes".into());
            }
            if children != u32::MAX {
                let first_leaf_child = (!children).trailing_zeros();
                if runs >> first_leaf_child & 1 == 0 {
                    return Err("a node's first leaf child starts no run".into());
                }
                if first_leaf + runs.count_ones() as usize > self.leaves.len() {
                    return Err("a node's runs lie outside the leaves".into());
                }
            }
            for child in first_child..first_child + children.count_ones() as usize {
                reach(child, depth + STRIDE, &mut pending)?;
            }
        }
        if self.leaves.iter().any(|&label| label as usize >= labels) {
            return Err("a leaf names a label outside the results".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{PoptrieUpdater, ROOT_BITS};
    use super::*;
    use crate::engine::{Lookup, Updater};
    use crate::prefix::Prefix;
    use crate::rib::Rib;

    fn image_of<A: Addr>(trie: &Poptrie<A>, spec: &str) -> Vec<u8> {
        crate::image::to_bytes(A::FAMILY, spec, &trie.image_sections())
    }

    #[test]
    fn images_answer_like_the_engine_and_forged_nodes_are_refused() {
        let rib = Rib::from_pairs(
            [
                ("::/0", 1),
                ("2001:db8::/32", 2),
                ("2001:db8:1::/48", 3),
                ("2001:db8:1:2::1/128", 4),
            ]
            .map(|(p, l)| (p.parse::<Prefix<u128>>().expect("a prefix"), l)),
        );
        for root_bits in ROOT_BITS {
            let config = PoptrieConfig { root_bits };
            let (_, trie) = PoptrieUpdater::build(&config, &rib).expect("builds");
            let bytes = image_of(&trie, &config.to_string());
            let image = Image::from_bytes(&bytes).expect("opens");
            let mapped = Poptrie::<u128, Mapped>::from_image(&image).expect("checks");
            for range in rib.ranges() {
                assert_eq!(mapped.lookup(range.first), rib.lookup(range.first));
                assert_eq!(mapped.lookup(range.last), rib.lookup(range.last));
            }
            let labels = trie.results.len() as u32;
            let leaf_entry = trie
                .root
                .iter()
                .position(|&e| e & LEAF != 0)
                .expect("a leaf");
            assert_ne!(trie.nodes[0] as u32, 0, "node 0 has child nodes");
            assert_ne!(trie.nodes[0] as u32, u32::MAX, "node 0 has leaf children");
            type Forgery = fn(&mut Poptrie<u128>, usize, u32);
            let forgeries: [(Forgery, &str); 4] = [
                // Node 0's first child is itself.
                (|t, _, _| t.nodes[0] &= u32::MAX as u64, "no tree"),
                // Node 0's leaf children start no run.
                (|t, _, _| t.nodes[1] &= !(u32::MAX as u64), "starts no run"),
                (
                    |t, leaf, labels| t.root[leaf] = LEAF | labels,
                    "a root entry names a label outside",
                ),
                (
                    |t, _, labels| t.leaves[0] = labels,
                    "a leaf names a label outside",
                ),
            ];
            for (forge, why) in forgeries {
                let mut forged = trie.clone();
                forge(&mut forged, leaf_entry, labels);
                let bytes = image_of(&forged, &config.to_string());
                let image = Image::from_bytes(&bytes).expect("opens");
                let error = Poptrie::<u128, Mapped>::from_image(&image)
                    .err()
                    .expect("refused")
                    .to_string();
                assert!(error.contains(why), "{why}: {error}");
            }
        }
    }
}
