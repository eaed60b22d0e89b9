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
//! `S` and `D` come from the image's engine spec. Images of the layout with
//! separate node and leaf arrays (sections `nodes` and `leaves`) are
//! refused for their missing `entries` section: save them again.
//!
//! What opening checks, and why it is enough: a walk starts at an entry of
//! the table (2^D entries, `D` from the spec) a root entry names and goes
//! from a node to the child entry its bitmap counts until that entry is a
//! leaf. So every table must lie inside `entries`; the nodes reachable
//! from the tables must form a tree inside `entries` (each reached once:
//! a walk then ends); every node's bitmap must have bit 0 set (the count
//! is then at least one; a bitmap above 1 is what makes an entry a node)
//! and its child entries must lie inside `entries`; no node may have
//! child nodes at the last level (a walk never needs key bits past bit
//! 128, which the AVX-512 walk relies on); and every label index (root
//! entries, and leaves that hold one rather than their slot) must be
//! inside `results`. The AVX-512 batch gathers without bounds checks, so
//! these are what keep its reads inside the arrays. Every reachable entry
//! is visited once.

use super::{is_node, Poptrie, PoptrieConfig, LEAF, STRIDE};
use crate::addr::Addr;
use crate::image::{Image, ImageError, Mapped, SectionData};
use crate::storage::Storage;

crate::image::saved!([A: Addr] Poptrie<A> => Poptrie<A, Mapped>, A);

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
            direct_bits: config.direct_bits_for::<A>(),
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
        // A leaf holds its slot (low half 1) or a label index (low half 0).
        let leaf_label_ok = |word: u64| word as u32 != 0 || ((word >> 32) as usize) < labels;
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
                continue;
            }
            let table = entry as usize;
            let Some(slots) = entries.get(table..table + (1 << self.direct_bits)) else {
                return Err("a chunk's table lies outside the entries".into());
            };
            for (slot, &word) in (table..).zip(slots) {
                if is_node(word) {
                    reach(slot, self.root_bits + self.direct_bits, &mut pending)?;
                } else if !leaf_label_ok(word) {
                    return Err("a leaf names a label outside the results".into());
                }
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
                    if !leaf_label_ok(word) {
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
    use super::super::PoptrieUpdater;
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
        for config in super::super::test_configs() {
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
            type Forgery = fn(&mut Poptrie<u128>, usize, u32);
            // The first node of the first chunk's table.
            fn first_node(t: &Poptrie<u128>) -> usize {
                let chunk = t.root.iter().position(|&e| e & LEAF == 0).expect("a table");
                let table = t.root[chunk] as usize;
                (table..table + (1 << t.direct_bits))
                    .find(|&slot| is_node(t.entries[slot]))
                    .expect("a node")
            }
            // A leaf among that node's children.
            fn leaf_child(t: &Poptrie<u128>) -> usize {
                let first = (t.entries[first_node(t)] >> 32) as usize;
                (first..)
                    .find(|&i| !is_node(t.entries[i]))
                    .expect("a leaf child")
            }
            let forgeries: [(Forgery, &str); 6] = [
                // The node's first child is itself.
                (
                    |t, _, _| {
                        let node = first_node(t);
                        t.entries[node] = t.entries[node] & u32::MAX as u64 | (node as u64) << 32;
                    },
                    "no tree",
                ),
                // The node's first child starts no entry (the bitmap keeps
                // a bit above bit 0, so the entry stays a node).
                (
                    |t, _, _| {
                        let node = first_node(t);
                        t.entries[node] &= !1;
                    },
                    "starts no entry",
                ),
                (
                    |t, _, _| {
                        let (node, end) = (first_node(t), t.entries.len() as u64);
                        t.entries[node] = t.entries[node] & u32::MAX as u64 | end << 32;
                    },
                    "lie outside the entries",
                ),
                (
                    |t, leaf, labels| t.root[leaf] = LEAF | labels,
                    "a root entry names a label outside",
                ),
                (
                    |t, _, _| {
                        let chunk = t.root.iter().position(|&e| e & LEAF == 0).expect("a table");
                        t.root[chunk] = t.entries.len() as u32;
                    },
                    "a chunk's table lies outside",
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
