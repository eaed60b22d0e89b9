//! `cpe` snapshots in saved images ([`crate::image`]): both tries' arrays
//! as sections, and the checks that make a mapped trie safe to look up.
//!
//! ```text
//! section   element      holds
//! root      u32          the root's pointer word (one element)
//! entries   u32          leaf-pushed: label index or child pointer
//!           [u32; 2]     nopush: [child pointer, label index]
//! packed    PackedLine   leaf-pushed only: 64-byte packed nodes
//! results   LabelSlot    label slots, index 0 = the default route (or none)
//! ```
//! The spec's `nopush` says which trie the image holds; the element size
//! of `entries` must agree.
//!
//! What opening checks, and why it is enough: a lookup walks from the root
//! pointer through child pointers, indexing a node's entries by the next
//! `stride` address bits, until it reaches a label index. So every pointer
//! a walk can reach must name a node inside `entries` (or, stride 0, a
//! line inside `packed`, whose own stride word is then used), every stride
//! must be `1..=MAX_STRIDE` with the depth plus the stride within the
//! address width (what `Addr::bits` requires), and every label index must
//! be inside `results`. Each node and line may be reached from one
//! pointer only (the build makes a tree): the walk then ends and visits
//! every reachable entry once, whatever the image holds. In a packed line
//! only the entries some index selects are checked (unused ones hold
//! `u32::MAX`).

use std::marker::PhantomData;
use std::ops::Range;

use super::leaf::PackedLine;
use super::{
    child_base, child_stride, is_child, CpeConfig, CpeTrie, LeafTrie, NopushTrie, MAX_STRIDE,
};
use crate::addr::Addr;
use crate::image::{Image, ImageError, Mapped, SectionData};

crate::image::saved!([A: Addr] CpeTrie<A> => CpeTrie<A, Mapped>, A);

impl<A> CpeTrie<A> {
    /// The arrays to save in an image.
    pub fn image_sections(&self) -> Vec<SectionData<'_>> {
        match self {
            CpeTrie::Leaf(trie) => vec![
                SectionData::new("root", std::slice::from_ref(&trie.root)),
                SectionData::new("entries", &trie.entries),
                SectionData::new("packed", &trie.packed),
                SectionData::results(&trie.results),
            ],
            CpeTrie::Nopush(trie) => vec![
                SectionData::new("root", std::slice::from_ref(&trie.root)),
                SectionData::new("entries", &trie.entries),
                SectionData::results(&trie.results),
            ],
        }
    }
}

impl<A: Addr> CpeTrie<A, Mapped> {
    /// The trie saved in `image`, read in place, after checking every
    /// invariant the lookups rely on (see the module docs).
    pub fn from_image(image: &Image) -> Result<Self, ImageError> {
        let config: CpeConfig = image.config()?;
        let root = match image.array::<u32>("root")?[..] {
            [root] => root,
            _ => return Err(image.invalid("cpe: the root section is not one pointer word")),
        };
        if config.nopush {
            let trie = NopushTrie {
                root,
                entries: image.array::<[u32; 2]>("entries")?,
                results: image.results()?,
                _family: PhantomData,
            };
            Ok(CpeTrie::Nopush(image.checked(trie, NopushTrie::check)?))
        } else {
            let trie = LeafTrie {
                root,
                entries: image.array::<u32>("entries")?,
                packed: image.array::<PackedLine>("packed")?,
                results: image.results()?,
                _family: PhantomData,
            };
            Ok(CpeTrie::Leaf(image.checked(trie, LeafTrie::check)?))
        }
    }
}

impl<A: Addr> LeafTrie<A, Mapped> {
    fn check(&self) -> Result<(), String> {
        let mut walk = Walk::<A>::new(self.root, self.entries.len(), &self.packed);
        while let Some((node, depth)) = walk.next_node()? {
            let mut check_entry = |entry: u32| {
                if is_child(entry) {
                    walk.pending.push((entry, depth));
                    Ok(())
                } else {
                    label_inside(entry, self.results.len())
                }
            };
            match node {
                Node::Entries(range) => self.entries[range]
                    .iter()
                    .try_for_each(|&e| check_entry(e))?,
                Node::Line(line) => {
                    selectable_entries(&self.packed[line]).try_for_each(check_entry)?
                }
            }
        }
        Ok(())
    }
}

impl<A: Addr> NopushTrie<A, Mapped> {
    fn check(&self) -> Result<(), String> {
        let mut walk = Walk::<A>::new(self.root, self.entries.len(), &[]);
        while let Some((node, depth)) = walk.next_node()? {
            let Node::Entries(range) = node else {
                return Err("a nopush trie has a packed node".into());
            };
            for &[child, label] in &self.entries[range] {
                label_inside(label, self.results.len())?;
                if is_child(child) {
                    walk.pending.push((child, depth));
                }
            }
        }
        Ok(())
    }
}

fn label_inside(label: u32, results: usize) -> Result<(), String> {
    if (label as usize) < results {
        Ok(())
    } else {
        Err("an entry names a label outside the results".into())
    }
}

/// A node a checked pointer names.
enum Node {
    /// Entries of a full node.
    Entries(Range<usize>),
    /// A packed line.
    Line(usize),
}

/// A walk over every pointer reachable from the root, reaching each node
/// and packed line at most once.
struct Walk<'a, A> {
    /// Pointer words still to follow, with the depth (address bits used)
    /// at which their node is indexed.
    pending: Vec<(u32, u32)>,
    reached_entries: Vec<bool>,
    reached_lines: Vec<bool>,
    packed: &'a [PackedLine],
    _family: PhantomData<fn() -> A>,
}

impl<'a, A: Addr> Walk<'a, A> {
    fn new(root: u32, entries: usize, packed: &'a [PackedLine]) -> Self {
        Walk {
            pending: vec![(root, 0)],
            reached_entries: vec![false; entries],
            reached_lines: vec![false; packed.len()],
            packed,
            _family: PhantomData,
        }
    }

    /// The next node to check and the depth below it, once its pointer is
    /// checked (bounds, stride, depth, reached once); `None` when done.
    fn next_node(&mut self) -> Result<Option<(Node, u32)>, String> {
        let Some((ptr, depth)) = self.pending.pop() else {
            return Ok(None);
        };
        let base = child_base(ptr);
        let (node, stride) = match child_stride(ptr) {
            0 => {
                let reached = self
                    .reached_lines
                    .get_mut(base)
                    .ok_or("a pointer names a packed line outside the lines")?;
                if std::mem::replace(reached, true) {
                    return Err("two pointers name one packed line".into());
                }
                (Node::Line(base), self.packed[base].0[0])
            }
            stride if stride <= MAX_STRIDE as u32 => {
                let range = base..base + (1 << stride);
                let reached = self
                    .reached_entries
                    .get_mut(range.clone())
                    .ok_or("a node lies outside the entries")?;
                if reached.iter().any(|&seen| seen) {
                    return Err("nodes overlap or form a cycle".into());
                }
                reached.fill(true);
                (Node::Entries(range), stride)
            }
            _ => return Err(format!("a node has a stride above {MAX_STRIDE}")),
        };
        if !(1..=MAX_STRIDE as u32).contains(&stride) || depth + stride > u32::from(A::BITS) {
            return Err(format!(
                "a node of stride {stride} at depth {depth} does not fit {}-bit addresses",
                A::BITS
            ));
        }
        Ok(Some((node, depth + stride)))
    }
}

/// The entries of a packed line (whose stride is checked) that some index
/// selects: the one index 0 selects, and the one each run start inside the
/// node selects (the selection only changes at run starts).
fn selectable_entries(line: &PackedLine) -> impl Iterator<Item = u32> + '_ {
    let indices = 1u64 << line.0[0];
    std::iter::once(0)
        .chain(
            line.0[1..=6]
                .iter()
                .copied()
                .filter(move |&start| u64::from(start) < indices),
        )
        .map(move |index| line.find(index))
}
