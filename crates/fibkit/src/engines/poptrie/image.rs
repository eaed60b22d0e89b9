//! `poptrie` snapshots in saved images ([`crate::image`]): the three
//! arrays as sections, and the checks that make a mapped snapshot safe to
//! look up.
//!
//! ```text
//! section   element      holds
//! root      u32          2^S root entries
//! entries   u64          the entries of nodes and of runs of leaves
//! results   LabelSlot    label slots, index 0 = no route
//! ```
//! `S` comes from the image's engine spec. Images of the layout with
//! separate node and leaf arrays (sections `nodes` and `leaves`) are
//! refused for their missing `entries` section: save them again.
//!
//! What opening checks, and why it is enough: a walk starts at the entry a
//! root entry names and goes from a node to the child entry its bitmap
//! counts until that entry is a leaf. So the nodes reachable from the
//! root must form a tree inside `entries` (each reached once: a walk then
//! ends), every node's bitmap must have bit 0 set (the count is then at
//! least one; a bitmap above 1 is what makes an entry a node) and its
//! child entries must lie inside `entries`, no node
//! may have child nodes at the last level (a walk never needs key bits
//! past bit 128, which the AVX-512 walk relies on), a root entry names a
//! node, and every label index (root entries, and leaves that hold one
//! rather than their slot) must be inside `results`. The AVX-512 batch gathers without bounds checks, so these
//! are what keep its reads inside the arrays. Every reachable entry is
//! visited once.

use super::{is_node, Poptrie, PoptrieConfig, LEAF, STRIDE};
use crate::addr::Addr;
use crate::image::{Image, ImageError, Mapped, SectionData};
use crate::storage::Storage;

impl<A: Addr, S: Storage> Poptrie<A, S> {
    /// The arrays to save in an image.
    pub fn image_sections(&self) -> Vec<SectionData<'_>> {
        vec![
            SectionData::new("root", &self.root),
            SectionData::new("entries", &self.entries),
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
            entries: image.array::<u64>("entries")?,
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
        let labels = self.results.len();
        let entries = &self.entries[..];
        let mut reached = vec![false; entries.len()];
        // Nodes to visit, with the key bit their children start at.
        let mut pending = Vec::new();
        let mut reach = |node: usize, depth: u32, pending: &mut Vec<(usize, u32)>| match reached
            .get_mut(node)
        {
            None => Err("a node lies outside the entries"),
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
            } else if !entries
                .get(entry as usize)
                .is_some_and(|&word| is_node(word))
            {
                return Err("a root entry names no node".into());
            } else {
                reach(entry as usize, self.root_bits, &mut pending)?;
            }
        }
        while let Some((node, depth)) = pending.pop() {
            let word = entries[node];
            let (starts, first) = (word as u32, (word >> 32) as usize);
            if starts & 1 == 0 {
                return Err("a node's first child starts no entry".into());
            }
            let end = first + starts.count_ones() as usize;
            let Some(children) = entries.get(first..end) else {
                return Err("a node's child entries lie outside the entries".into());
            };
            for (child, &word) in (first..end).zip(children) {
                if !is_node(word) {
                    // A leaf holds its slot (low half 1) or a label index
                    // (low half 0).
                    if word as u32 == 0 && (word >> 32) as usize >= labels {
                        return Err("a leaf names a label outside the results".into());
                    }
                } else if depth + 2 * STRIDE > 128 {
                    return Err("a node of the last level has child nodes".into());
                } else {
                    reach(child, depth + STRIDE, &mut pending)?;
                }
            }
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
            // The root's first node is entry 0 (the chunk of 2001:db8::,
            // filled in first); its children include a leaf.
            assert!(is_node(trie.entries[0]), "entry 0 is a node");
            let node_chunk = trie
                .root
                .iter()
                .position(|&e| e & LEAF == 0)
                .expect("a node");
            assert_eq!(trie.root[node_chunk], 0);
            type Forgery = fn(&mut Poptrie<u128>, usize, u32);
            // A leaf among entry 0's children.
            fn leaf_child(t: &Poptrie<u128>) -> usize {
                let first = (t.entries[0] >> 32) as usize;
                (first..)
                    .find(|&i| !is_node(t.entries[i]))
                    .expect("a leaf child")
            }
            let forgeries: [(Forgery, &str); 6] = [
                // Entry 0's first child is itself.
                (|t, _, _| t.entries[0] &= u32::MAX as u64, "no tree"),
                // Entry 0's first child starts no entry (the bitmap keeps
                // a bit above bit 0, so the entry stays a node).
                (|t, _, _| t.entries[0] &= !1, "starts no entry"),
                (
                    |t, _, _| {
                        let end = t.entries.len() as u64;
                        t.entries[0] = t.entries[0] & u32::MAX as u64 | end << 32;
                    },
                    "lie outside the entries",
                ),
                (
                    |t, leaf, labels| t.root[leaf] = LEAF | labels,
                    "a root entry names a label outside",
                ),
                (
                    |t, _, _| {
                        let chunk = t.root.iter().position(|&e| e & LEAF == 0).expect("a node");
                        t.root[chunk] = leaf_child(t) as u32;
                    },
                    "a root entry names no node",
                ),
                (
                    |t, _, labels| {
                        let leaf = leaf_child(t);
                        t.entries[leaf] = u64::from(labels) << 32;
                    },
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
