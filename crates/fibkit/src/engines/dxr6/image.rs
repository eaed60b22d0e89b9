//! `dxr6` snapshots in saved images ([`crate::image`]): the three arrays as
//! sections, and the checks that make a mapped snapshot safe to look up.
//!
//! ```text
//! section   element      holds
//! entries   u32          the root (2^K entries), then every node table
//! leaves    LeafLine     64-byte lines of leaves
//! results   LabelSlot    label slots, index 0 = the default route (or none)
//! ```
//! `K` comes from the image's engine spec.
//!
//! What opening checks, and why it is enough: a lookup walks from a root
//! entry through node tables until it reaches a label or a leaf, so the
//! node tables reachable from the root must lie inside `entries` and form
//! a tree (each table reached from one node entry, none overlapping the
//! root or another: a walk then ends, whatever the entries hold); every
//! label index must be inside `results`; every leaf's starts and labels
//! must lie inside its line, aligned to their width, and name labels
//! inside `results`; line 0 must exist (the branch-free finish reads it).
//! The walk visits each reachable entry once.

use super::search::{Bound, LINE_WORDS};
use super::{
    has_wide_labels, is_label, is_node, label_of, line_of, node_base, offset_of, starts_of,
    stride_of, width_code, Dxr6, Dxr6Config, LeafLine,
};
use crate::image::{Image, ImageError, Mapped, SectionData};

crate::image::saved!([] Dxr6 => Dxr6<Mapped>, u128);

impl Dxr6 {
    /// The arrays to save in an image.
    pub fn image_sections(&self) -> Vec<SectionData<'_>> {
        vec![
            SectionData::new("entries", &self.entries),
            SectionData::new("leaves", &self.leaves),
            SectionData::results(&self.results),
        ]
    }
}

impl Dxr6<Mapped> {
    /// The snapshot saved in `image`, read in place, after checking every
    /// invariant the lookups rely on (see the module docs).
    pub fn from_image(image: &Image) -> Result<Self, ImageError> {
        let config: Dxr6Config = image.config()?;
        let snapshot = Dxr6 {
            root_bits: config.root_bits,
            align_shift: config.align_shift(),
            entries: image.array::<u32>("entries")?,
            leaves: image.array::<LeafLine>("leaves")?,
            results: image.results()?,
        };
        image.checked(snapshot, Self::check)
    }

    fn check(&self) -> Result<(), String> {
        let root_len = 1usize << self.root_bits;
        if self.leaves.is_empty() || self.entries.len() < root_len {
            return Err("the root or leaf table is missing or short".into());
        }
        // Entries some walk reaches; the first entries of node tables to
        // visit, and their lengths.
        let mut reached = vec![false; self.entries.len()];
        reached[..root_len].fill(true);
        let mut tables = vec![(0, root_len)];
        while let Some((first, len)) = tables.pop() {
            for &entry in &self.entries[first..first + len] {
                if is_node(entry) {
                    let base = node_base(entry);
                    let end = base + (1 << stride_of(entry));
                    let Some(children) = reached.get_mut(base..end) else {
                        return Err("a node table lies outside the entries".into());
                    };
                    if children.iter().any(|&seen| seen) {
                        return Err("node tables overlap or form a cycle".into());
                    }
                    children.fill(true);
                    tables.push((base, end - base));
                } else if is_label(entry) {
                    if label_of(entry) >= self.results.len() {
                        return Err("an entry names a label outside the results".into());
                    }
                } else {
                    self.check_leaf(entry)?;
                }
            }
        }
        Ok(())
    }

    /// Checks that the leaf `entry` points to lies inside its line and
    /// names labels inside the results.
    fn check_leaf(&self, entry: u32) -> Result<(), String> {
        let words_per_start = match width_code(entry) {
            0 => u16::WORDS,
            1 => u32::WORDS,
            2 => u64::WORDS,
            _ => u128::WORDS,
        };
        let (at, starts) = (offset_of(entry, self.align_shift), starts_of(entry));
        let label_words = if has_wide_labels(entry) { 2 } else { 1 };
        let labels_at = at + starts * words_per_start;
        let end = labels_at + (starts + 1) * label_words;
        let line = self
            .leaves
            .get(line_of(entry, self.align_shift))
            .ok_or("a leaf lies outside the leaf lines")?;
        if !at.is_multiple_of(words_per_start) || end > LINE_WORDS {
            return Err("a leaf does not fit its line".into());
        }
        let labels = &line.0[labels_at..end];
        let inside = if label_words == 2 {
            labels
                .chunks_exact(2)
                .all(|pair| (pair[0] as usize | (pair[1] as usize) << 16) < self.results.len())
        } else {
            labels
                .iter()
                .all(|&label| (label as usize) < self.results.len())
        };
        if inside {
            Ok(())
        } else {
            Err("a leaf names a label outside the results".into())
        }
    }
}
