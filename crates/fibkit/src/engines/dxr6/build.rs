//! Building `dxr6` from the range view, chunk by chunk (updates, in
//! `update`, rebuild the smallest chunks a change touches with the same
//! routines).
//!
//! A chunk (the addresses under one entry) becomes a label entry when one
//! range covers it, a leaf when its starts and labels fit one line, and
//! otherwise a node whose stride gives the chunk about `density` entries
//! per range, whose children are built the same way. Leaves are packed
//! into lines in build order, none across a line's end. Node tables and leaves are never moved once placed: an
//! update frees the old subtree of each chunk it rebuilds (tables to
//! per-stride free lists, leaf lines once all their leaves are gone) and
//! builds the new one into free space or at the ends of the arrays. When
//! free space passes a quarter of either array, or a batch spans a quarter
//! of the root or more, the update rebuilds the whole engine instead, in
//! place: into the snapshot's and the updater's own vectors, emptied, so
//! that the rebuild faults in no fresh page and frees nothing.

use std::time::Instant;

use super::search::{Bound, LINE_WORDS};
use super::*;
use crate::labels::{labels_by_frequency, LabelIndex};
use crate::rib::{Range, Rib};

// The updater's struct lives here, below `update`: the build is written
// as methods on the updater, which place tables and leaves into its free
// lists and leaf space along with the snapshot's arrays.

/// The build state of `dxr6`: label indices and free space.
#[derive(Clone, Debug)]
pub struct Dxr6Updater {
    /// The layout built: the requested one, with `align` stated once the
    /// build has raised it.
    pub(super) config: Dxr6Config,
    /// Whether the build picks `align` (the spec did not state it).
    pub(super) align_chosen: bool,
    /// Set when a leaf found no line the line field can name: the error
    /// a coarser `align` mends.
    pub(super) out_of_lines: bool,
    pub(super) labels: LabelIndex,
    /// Free node tables by stride (index `stride - 1`).
    pub(super) free_tables: Vec<Vec<usize>>,
    /// Entries in free node tables.
    pub(super) free_entries: usize,
    /// Where leaves go.
    pub(super) space: LeafSpace,
    /// Wall time of the last full build.
    pub(super) build_ns: u64,
    /// Full rebuilds that updates did to compact the arrays.
    pub(super) compactions: u64,
}

/// The addresses after the first `depth` bits, as a mask (`depth <= 128`).
pub(super) fn span_mask(depth: u32) -> u128 {
    u128::MAX.checked_shr(depth).unwrap_or(0)
}

/// Where leaves go: the line being filled, and lines that updates
/// emptied. A line partly freed is reused only once it is empty.
#[derive(Clone, Debug, Default)]
pub(super) struct LeafSpace {
    /// The line leaves are added to, and its first word not yet handed out.
    pub(super) open: Option<(usize, usize)>,
    /// Words in use, per line.
    pub(super) used: Vec<u8>,
    /// Lines no leaf uses, but the open one.
    pub(super) empty_lines: Vec<usize>,
    /// Words in use in all lines.
    pub(super) used_words: usize,
    /// Words of all lines not in use right after the last build (line
    /// ends that no leaf fitted).
    pub(super) unused_after_build: usize,
}

impl LeafSpace {
    /// Empties the space for a build, keeping the vectors' memory.
    fn clear(&mut self) {
        self.open = None;
        self.used.clear();
        self.empty_lines.clear();
        self.used_words = 0;
        self.unused_after_build = 0;
    }

    /// Words of the lines no leaf uses.
    pub(super) fn unused_words(&self) -> usize {
        self.used.len() * LINE_WORDS - self.used_words
    }
}

/// How a build numbers the labels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Labels {
    /// Afresh, the most frequent first (a build, and compaction, which
    /// also drops the labels no prefix has any more).
    ByFrequency,
    /// As they are, new ones appended: a rebuild for a large change skips
    /// counting every range's label (a hash per range), as a patch would
    /// keep them too.
    Kept,
}

impl Dxr6Stats {
    /// Adds the subtree of `entry`, `levels` node levels below the root.
    pub(super) fn count(&mut self, snapshot: &Dxr6, entry: u32, levels: usize) {
        self.max_node_levels = self.max_node_levels.max(levels);
        if is_node(entry) {
            let stride = stride_of(entry);
            self.node_tables[stride as usize - 1] += 1;
            let base = node_base(entry);
            for &child in &snapshot.entries[base..base + (1 << stride)] {
                self.count(snapshot, child, levels + 1);
            }
        } else if is_leaf(entry) {
            self.leaves[width_code(entry) as usize] += 1;
            self.wide_label_leaves += has_wide_labels(entry) as usize;
            self.leaf_words += leaf_words(entry);
        }
    }
}

/// The words a leaf of `starts` starts of width code `code` occupies.
fn leaf_size(starts: usize, code: u32, wide_labels: bool) -> usize {
    (starts << code) + (starts + 1) * (1 + wide_labels as usize)
}

/// The words the leaf of `entry` occupies.
fn leaf_words(entry: u32) -> usize {
    leaf_size(starts_of(entry), width_code(entry), has_wide_labels(entry))
}

impl Dxr6Updater {
    /// [`Self::fill`], raising `align` while the leaves outgrow the line
    /// field and the build picks it.
    pub(super) fn fill_growing(
        &mut self,
        snapshot: &mut Dxr6,
        rib: &Rib<u128>,
        labels: Labels,
    ) -> Result<(), BuildError> {
        loop {
            match self.fill(snapshot, rib, labels) {
                Err(_) if self.grows_past_lines() => self.grow_align(),
                result => return result,
            }
        }
    }

    /// Whether the last fill or patch ran out of lines and the build may
    /// raise `align` to make room.
    pub(super) fn grows_past_lines(&self) -> bool {
        self.out_of_lines && self.align_chosen && self.config.align_words() < MAX_ALIGN
    }

    /// Doubles the layout's `align`; the next fill builds at it.
    pub(super) fn grow_align(&mut self) {
        self.config = self.config.with_align(self.config.align_words() * 2);
    }

    /// Builds the engine from `rib` into this updater's and `snapshot`'s
    /// own vectors, emptied first: a rebuild this way (what compaction and
    /// a large change do) touches no fresh page and frees nothing. On an
    /// error the snapshot is half built and the caller must rebuild (as
    /// after any failed update).
    fn fill(
        &mut self,
        snapshot: &mut Dxr6,
        rib: &Rib<u128>,
        labels: Labels,
    ) -> Result<(), BuildError> {
        let started = Instant::now();
        let ranges = rib.ranges_without_default();
        if labels == Labels::ByFrequency {
            self.labels =
                LabelIndex::with_order(self.config, MAX_LABELS, labels_by_frequency(&ranges))?;
        }
        self.free_tables.iter_mut().for_each(Vec::clear);
        self.free_entries = 0;
        self.space.clear();
        self.out_of_lines = false;
        snapshot.root_bits = self.config.root_bits;
        snapshot.align_shift = self.config.align_shift();
        snapshot.entries.clear();
        snapshot.entries.resize(1 << self.config.root_bits, 0);
        snapshot.leaves.clear();
        snapshot.results.clear();
        self.fill_table(snapshot, 0, 0, self.config.root_bits, 0, &ranges)?;
        self.labels.set_default(rib.default_route());
        self.labels.sync(&mut snapshot.results);
        if snapshot.leaves.is_empty() {
            // INVARIANT: line 0 exists: a label entry's branch-free
            // resolve searches it.
            snapshot.leaves.push(LeafLine([0; LINE_WORDS]));
            self.space.used.push(0);
            self.space.empty_lines.push(0);
        }
        self.space.unused_after_build = self.space.unused_words();
        self.build_ns = started.elapsed().as_nanos() as u64;
        Ok(())
    }

    /// Rebuilds the engine from `rib` in place (what compaction and a
    /// change spanning much of the root do).
    pub(super) fn rebuild(
        &mut self,
        snapshot: &mut Dxr6,
        rib: &Rib<u128>,
        labels: Labels,
    ) -> Result<(), BuildError> {
        self.fill_growing(snapshot, rib, labels)?;
        self.compactions += 1;
        Ok(())
    }

    /// Fills the node table of `2^stride` entries at `base` for the chunk
    /// of `first`'s first `depth` bits, from `pieces`, the ranges
    /// overlapping the chunk in order (the first may begin before it, the
    /// last end after it).
    fn fill_table(
        &mut self,
        snapshot: &mut Dxr6,
        base: usize,
        depth: u32,
        stride: u32,
        first: u128,
        pieces: &[Range<u128>],
    ) -> Result<(), BuildError> {
        let child_depth = depth + stride;
        let child_span = span_mask(child_depth);
        // The piece holding the current child's first address.
        let mut next = 0;
        // Consecutive children inside one range share its label entry.
        let mut covering = (usize::MAX, 0);
        for child in 0..1usize << stride {
            let child_first = first | (child as u128) << (128 - child_depth);
            let child_last = child_first | child_span;
            while pieces[next].last < child_first {
                next += 1;
            }
            let entry = if pieces[next].last >= child_last {
                if covering.0 != next {
                    covering = (next, label_entry(self.labels.index(pieces[next].label)?));
                }
                covering.1
            } else {
                let end = next + pieces[next..].partition_point(|r| r.first <= child_last);
                self.chunk_entry(snapshot, child_depth, child_first, &pieces[next..end])?
            };
            snapshot.entries[base + child] = entry;
        }
        Ok(())
    }

    /// The entry for the chunk of `first`'s first `depth` bits, whose
    /// ranges are `pieces` (as for [`Self::fill_table`]): a label, a leaf,
    /// or a node built below it.
    pub(super) fn chunk_entry(
        &mut self,
        snapshot: &mut Dxr6,
        depth: u32,
        first: u128,
        pieces: &[Range<u128>],
    ) -> Result<u32, BuildError> {
        debug_assert!(!pieces.is_empty() && pieces[0].first <= first);
        if pieces.len() == 1 {
            return Ok(label_entry(self.labels.index(pieces[0].label)?));
        }
        if pieces.len() <= MAX_LEAF_STARTS + 1 {
            if let Some(entry) = self.leaf(snapshot, depth, pieces)? {
                return Ok(entry);
            }
        }
        // The largest stride with `2^stride <= density * ranges`.
        let stride = (pieces.len() * self.config.density as usize)
            .ilog2()
            .clamp(1, self.config.max_stride)
            .min(128 - depth);
        let base = self.alloc_table(snapshot, stride)?;
        self.fill_table(snapshot, base, depth, stride, first, pieces)?;
        Ok(node_entry(base, stride))
    }

    /// Stores `pieces` (a chunk at `depth`, at most
    /// `MAX_LEAF_STARTS + 1` ranges) as a leaf, if its starts, at the
    /// width they need, and its labels fit one line.
    fn leaf(
        &mut self,
        snapshot: &mut Dxr6,
        depth: u32,
        pieces: &[Range<u128>],
    ) -> Result<Option<u32>, BuildError> {
        let mut labels = [0u32; MAX_LEAF_STARTS + 1];
        for (index, piece) in labels.iter_mut().zip(pieces) {
            *index = self.labels.index(piece.label)?;
        }
        let labels = &labels[..pieces.len()];
        let wide = labels.iter().any(|&index| index > u16::MAX as u32);
        // Every start but the first lies inside the chunk, after its first
        // address, so its bits after `depth` are not all zero.
        let start_bits = pieces[1..]
            .iter()
            .map(|r| 128 - (r.first << depth).trailing_zeros())
            .max()
            .unwrap_or(0);
        match start_bits {
            0..=16 => self.store_leaf::<u16>(snapshot, depth, pieces, labels, wide),
            17..=32 => self.store_leaf::<u32>(snapshot, depth, pieces, labels, wide),
            33..=64 => self.store_leaf::<u64>(snapshot, depth, pieces, labels, wide),
            _ => self.store_leaf::<u128>(snapshot, depth, pieces, labels, wide),
        }
    }

    /// [`Self::leaf`] with `B` starts.
    fn store_leaf<B: Bound>(
        &mut self,
        snapshot: &mut Dxr6,
        depth: u32,
        pieces: &[Range<u128>],
        labels: &[u32],
        wide: bool,
    ) -> Result<Option<u32>, BuildError> {
        let starts = pieces.len() - 1;
        let len = leaf_size(starts, B::CODE, wide);
        if len > LINE_WORDS {
            return Ok(None);
        }
        let mut words = [0u16; LINE_WORDS];
        for (i, piece) in pieces[1..].iter().enumerate() {
            B::from_bits(bits_after(piece.first, depth, B::BITS)).write(&mut words[i * B::WORDS..]);
        }
        let label_words = &mut words[starts * B::WORDS..len];
        if wide {
            for (pair, &index) in label_words.chunks_exact_mut(2).zip(labels) {
                pair.copy_from_slice(&[index as u16, (index >> 16) as u16]);
            }
        } else {
            for (word, &index) in label_words.iter_mut().zip(labels) {
                *word = index as u16;
            }
        }
        let align = B::WORDS.max(self.config.align_words() as usize);
        let (line, at) = self.alloc_leaf(snapshot, len, align)?;
        snapshot.leaves[line].0[at..at + len].copy_from_slice(&words[..len]);
        Ok(Some(leaf_entry(
            (line, at),
            starts,
            B::CODE,
            wide,
            snapshot.align_shift,
        )))
    }

    /// Where a node table of `2^stride` entries goes: a free one, or the
    /// end of the entries.
    fn alloc_table(&mut self, snapshot: &mut Dxr6, stride: u32) -> Result<usize, BuildError> {
        if let Some(base) = self.free_tables[stride as usize - 1].pop() {
            self.free_entries -= 1 << stride;
            return Ok(base);
        }
        let base = snapshot.entries.len();
        if base > NODE_BASE_MASK as usize {
            return Err(self.limit(format!(
                "node tables need more than 2^{NODE_BASE_BITS} entries (the node base field); \
                 a smaller `density=` or `stride=` needs fewer, or use another IPv6 engine (`fibkit --help` lists them)"
            )));
        }
        snapshot.entries.resize(base + (1 << stride), 0);
        Ok(base)
    }

    /// Where a leaf of `len` words aligned to `align` words goes: the
    /// open line if it has room, else an emptied line or a new one.
    fn alloc_leaf(
        &mut self,
        snapshot: &mut Dxr6,
        len: usize,
        align: usize,
    ) -> Result<(usize, usize), BuildError> {
        let (line, at) = match self.space.open {
            Some((line, fill)) if fill.next_multiple_of(align) + len <= LINE_WORDS => {
                (line, fill.next_multiple_of(align))
            }
            _ => match self.space.empty_lines.pop() {
                Some(line) => (line, 0),
                None => {
                    let line = snapshot.leaves.len();
                    if line >= max_lines(snapshot.align_shift) {
                        self.out_of_lines = true;
                        return Err(self.lines_limit(snapshot.align_shift));
                    }
                    snapshot.leaves.push(LeafLine([0; LINE_WORDS]));
                    self.space.used.push(0);
                    (line, 0)
                }
            },
        };
        self.space.open = Some((line, at + len));
        self.space.used[line] += len as u8;
        self.space.used_words += len;
        Ok((line, at))
    }

    /// Frees the node tables and leaves below `entry`.
    pub(super) fn release(&mut self, snapshot: &Dxr6, entry: u32) {
        if is_node(entry) {
            let stride = stride_of(entry);
            let base = node_base(entry);
            for &child in &snapshot.entries[base..base + (1 << stride)] {
                self.release(snapshot, child);
            }
            self.free_tables[stride as usize - 1].push(base);
            self.free_entries += 1 << stride;
        } else if is_leaf(entry) {
            let (line, len) = (line_of(entry, snapshot.align_shift), leaf_words(entry));
            let space = &mut self.space;
            space.used[line] -= len as u8;
            space.used_words -= len;
            if space.used[line] == 0 {
                match space.open {
                    Some((open, _)) if open == line => space.open = Some((line, 0)),
                    _ => space.empty_lines.push(line),
                }
            }
        }
    }

    /// The error for leaves past the lines the line field names at
    /// `align = 2^align_shift`, naming what would hold them.
    fn lines_limit(&self, align_shift: u32) -> BuildError {
        let align = 1u32 << align_shift;
        let mut why = format!(
            "leaves need more than 2^{} lines (the line field at align={align})",
            line_bits(align_shift)
        );
        if align < MAX_ALIGN {
            let unstated = Dxr6Config {
                align: None,
                ..self.config
            };
            why += &format!(
                "; `{}` holds twice as many, and `{unstated}` raises align as the table needs",
                self.config.with_align(align * 2)
            );
        } else {
            why += "; use another IPv6 engine (`fibkit --help` lists them)";
        }
        self.limit(why)
    }

    fn limit(&self, why: String) -> BuildError {
        BuildError::Limit {
            engine: self.config.to_string(),
            why,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Updater;
    use crate::prefix::Prefix;

    /// A change spanning a quarter of the root, or half of its subtrees,
    /// rebuilds in place: the handle sees a patch, the arrays answer like
    /// the reference, and the labels kept from before still resolve.
    #[test]
    fn large_changes_rebuild_in_place() {
        let mut rib = Rib::new();
        let mut addr = 0x2001_0db8_0000_0000_0000_0000_0000_0000u128;
        for i in 0..3000u32 {
            addr = addr
                .wrapping_mul(0x9e37_79b9_7f4a_7c15)
                .wrapping_add(i as u128);
            let addr = 0x2000u128 << 112 | addr >> 3;
            rib.insert(Prefix::new_masked(addr, 20 + (i % 45) as u8), i % 70);
        }
        let config = Dxr6Config::parse("dxr6:k=8").unwrap();
        let mut fib = crate::LocalFib::<u128, Dxr6Updater>::with_config(config, rib).unwrap();
        let p = |text: &str| text.parse::<Prefix<u128>>().unwrap();
        let changes = [
            crate::Change::Announce(p("::/1"), 1_000),
            crate::Change::Announce(p("2000::/3"), 1_001),
            crate::Change::Announce(p("2000::/3"), 1_002),
            crate::Change::Withdraw(p("::/1")),
            crate::Change::Withdraw(p("2000::/3")),
        ];
        for (i, change) in changes.into_iter().enumerate() {
            let summary = fib.apply(&[change]).unwrap();
            assert!(summary.rebuilt.is_none(), "{change:?}");
            assert_eq!(fib.stats().compactions, i as u64 + 1, "{change:?}");
            let report = crate::verify::verify(fib.snapshot(), fib.rib(), 20_000, i as u64);
            assert_eq!(report.failed, 0, "{change:?}: {:?}", report.mismatches);
        }
    }

    /// The line-field error names the next `align` below the top step and
    /// the engines without the limit at it.
    #[test]
    fn line_limit_errors_name_what_holds_the_leaves() {
        let rib = crate::engines::shared::testing::nested_table(
            0x2001_0db8_0001_0002_0003_0004_0005_0006u128,
        );
        for (spec, shift, names) in [
            (
                "dxr6:align=1",
                0,
                "2^19 lines (the line field at align=1); \
                 `dxr6:k=16,stride=16,density=2,align=2` holds twice as many, and \
                 `dxr6:k=16,stride=16,density=2` raises align",
            ),
            (
                "dxr6:k=12,align=4",
                2,
                "2^21 lines (the line field at align=4); \
                 `dxr6:k=12,stride=16,density=2,align=8` holds twice as many",
            ),
            (
                "dxr6:align=8",
                3,
                "2^22 lines (the line field at align=8); use another IPv6 engine (`fibkit --help` lists them)",
            ),
        ] {
            let config = Dxr6Config::parse(spec).unwrap();
            let (updater, _) = Dxr6Updater::build(&config, &rib).unwrap();
            let error = updater.lines_limit(shift).to_string();
            assert!(error.contains(names), "{spec}: {error}");
        }
    }

    #[test]
    fn the_default_route_is_one_results_slot() {
        let rib = crate::engines::shared::testing::nested_table(
            0x2001_0db8_0001_0002_0003_0004_0005_0006u128,
        );
        for spec in ["dxr6", "dxr6:k=8,stride=3"] {
            let config = Dxr6Config::parse(spec).unwrap();
            crate::engines::shared::testing::assert_default_route_is_one_slot::<u128, Dxr6Updater, _>(
                &config,
                &rib,
                |snapshot| (snapshot.entries.clone(), snapshot.leaves.clone()),
            );
        }
    }
}
