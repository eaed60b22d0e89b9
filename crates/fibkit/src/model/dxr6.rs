//! The model of `dxr6` (DXR for 128-bit keys, `engines/dxr6`): access
//! counts per cache line of its entries and leaf lines, Equation 2 misses
//! and Equation 1 time, as [`super::cpe`] does for `cpe`.
//!
//! A lookup reads its root entry, one entry per node on its path (each
//! node's table indexed by the next `stride` address bits), and, when it
//! ends at a leaf, the leaf's one line (starts and label indices; both the
//! per-key count and the batch's search read only that line). The model
//! walks the table the engine built, every entry in address order, adding
//! the lookups that fall in each entry's interval (the range view's,
//! spread uniformly over each range) to the entry's cache line, and to its
//! leaf's line or its node's entries. Every entry and leaf line read is a
//! dependent read (`t_trie`). Not counted, as for `cpe` and `dxr`: the
//! results table (one slot per distinct label, cache resident).
//!
//! Cost: one visit of every entry, with a forward-moving cursor over the
//! ranges.

use super::access::{line_bytes, Accesses, ArrayLines, Spread, TableWalk};
use super::{CacheLevel, ModelError, Prediction, WeightedRanges};
use crate::engines::dxr6::{Dxr6, ModelEntry};
use crate::storage::Storage;

/// Bytes of one leaf line.
const LEAF_LINE_BYTES: usize = 64;

/// Predicted costs of the `dxr6` table `table` for the lookups of `view`
/// (the table's merged ranges over the whole address space, with their
/// lookups) in `caches`.
pub fn predict_dxr6<S: Storage>(
    view: &WeightedRanges<u128>,
    table: &Dxr6<S>,
    caches: &[CacheLevel],
) -> Result<Prediction, ModelError> {
    Ok(dxr6_accesses(view, table, line_bytes(caches))?.predict(caches))
}

/// The entries' and leaf lines' accesses per line of `line` bytes.
fn dxr6_accesses<S: Storage>(
    view: &WeightedRanges<u128>,
    table: &Dxr6<S>,
    line: usize,
) -> Result<Accesses, ModelError> {
    let (root_bits, entries, leaf_lines, align_shift) = table.model_parts();
    let spread = Spread::new(view)?;
    let mut walk = Walk {
        table: TableWalk::new(&spread, line),
        entries,
        leaf_lines,
        align_shift,
        leaf_line_counts: ArrayLines::new(line),
    };
    walk.node(0, root_bits, 0, 0)?;
    Ok(Accesses {
        reads: walk.table.reads,
        arrays: vec![walk.table.lines, walk.leaf_line_counts],
        lookups: spread.total(),
        memory_bytes: (entries.len() * 4 + leaf_lines * LEAF_LINE_BYTES) as u64,
    })
}

/// The state of the walk over the table.
struct Walk<'a> {
    /// The root's and the node tables' entries.
    table: TableWalk<'a>,
    entries: &'a [u32],
    leaf_lines: usize,
    /// `log2(align)` of the table, to decode its leaf entries.
    align_shift: u32,
    leaf_line_counts: ArrayLines,
}

impl Walk<'_> {
    /// Counts the table of `2^stride` entries at `base`, at `depth`, whose
    /// first address is `lo`, and everything below it.
    fn node(&mut self, base: usize, stride: u32, depth: u32, lo: u128) -> Result<(), ModelError> {
        let corrupt = || ModelError::Input("the dxr6 table's entries are inconsistent".into());
        let read = self
            .table
            .table(self.entries, base, stride, depth, 128, lo)
            .ok_or_else(corrupt)?;
        for (entry, accesses, first) in read {
            match ModelEntry::of(entry, self.align_shift) {
                ModelEntry::Label => {}
                ModelEntry::Leaf { line } => {
                    if line >= self.leaf_lines {
                        return Err(corrupt());
                    }
                    self.leaf_line_counts.add_span(
                        line * LEAF_LINE_BYTES,
                        LEAF_LINE_BYTES,
                        accesses,
                    );
                    self.table.reads += accesses;
                }
                ModelEntry::Node {
                    base: child,
                    stride: child_stride,
                } => self.node(child, child_stride, depth + stride, first)?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{EngineConfig, Updater};
    use crate::engines::dxr6::{Dxr6Config, Dxr6Updater};
    use crate::model::summary::weighted_ranges;
    use crate::{Prefix, Rib};

    /// Dependent reads of one lookup of `addr`, walked entry by entry (the
    /// engine's path, independent of the model's interval walk).
    fn path_reads(table: &Dxr6, addr: u128) -> usize {
        let (root_bits, entries, _, align_shift) = table.model_parts();
        let mut entry = entries[(addr >> (128 - root_bits)) as usize];
        let mut depth = root_bits;
        let mut reads = 1;
        loop {
            match ModelEntry::of(entry, align_shift) {
                ModelEntry::Label => return reads,
                ModelEntry::Leaf { .. } => return reads + 1,
                ModelEntry::Node { base, stride } => {
                    let index = ((addr << depth) >> (128 - stride)) as usize;
                    entry = entries[base + index];
                    depth += stride;
                    reads += 1;
                }
            }
        }
    }

    fn build(rib: &Rib<u128>, spec: &str) -> Dxr6 {
        let config = Dxr6Config::parse(spec).unwrap();
        Dxr6Updater::build(&config, rib).unwrap().1
    }

    #[test]
    fn counts_match_a_hand_worked_table() {
        // 2001:db8::/32 -> 1 and 2001:db8:1::/48 -> 2: five ranges, the
        // middle three inside root chunk 0x2001, which is one leaf.
        let rib = Rib::from_pairs([
            ("2001:db8::/32".parse::<Prefix<u128>>().unwrap(), 1),
            ("2001:db8:1::/48".parse().unwrap(), 2),
        ]);
        let table = build(&rib, "dxr6:k=16");
        let view = weighted_ranges(&rib, 0, u128::MAX, None);
        assert_eq!(view.ranges.len(), 5);
        let counts = dxr6_accesses(&view, &table, 64).unwrap();
        // The parts of the first and last ranges inside 2001::/16.
        let unit = 1u128 << 96;
        let first = (0x0db8 * unit) as f64 / (0x2001_0db8 * unit) as f64;
        let last = ((0x2002_0000 - 0x2001_0db9) * unit) as f64
            / ((0x1_0000_0000 - 0x2001_0db9) * unit) as f64;
        let in_leaf = 3.0 + first + last;
        // Every lookup reads its root entry; those inside the chunk read
        // the leaf's line too.
        assert!(
            (counts.reads - (5.0 + in_leaf)).abs() < 1e-9,
            "{}",
            counts.reads
        );
        let leaf_lines = &counts.arrays[1].counts;
        assert!((leaf_lines[0] - in_leaf).abs() < 1e-9, "{leaf_lines:?}");
        assert!(leaf_lines[1..].iter().all(|&c| c == 0.0));
        // Root entry 0x2001 is in line 0x200 (16 entries per line).
        let entry_lines = &counts.arrays[0].counts;
        assert!(entry_lines[0x200] > in_leaf && entry_lines[0x200] < 5.0);
        let (_, entries, lines, _) = table.model_parts();
        assert_eq!(counts.memory_bytes, (entries.len() * 4 + lines * 64) as u64);
    }

    #[test]
    fn lookups_of_one_range_read_its_path() {
        // Thirty /48s inside one /32: chunk 0x2001 needs nodes.
        let mut pairs = vec![("2001:db8::/32".parse::<Prefix<u128>>().unwrap(), 1)];
        for i in 0..30u32 {
            let text = format!("2001:db8:{:x}::/48", 2 * i);
            pairs.push((text.parse().unwrap(), 2 + i));
        }
        let rib = Rib::from_pairs(pairs);
        let table = build(&rib, "dxr6");
        let mut view = weighted_ranges(&rib, 0, u128::MAX, None);
        let mut deepest = 0;
        for i in 0..view.ranges.len() {
            // All the lookups in range i alone: the model reads its path.
            for (j, w) in view.weights.iter_mut().enumerate() {
                *w = if i == j { 1.0 } else { 0.0 };
            }
            let (first, last) = (view.ranges[i].first, view.ranges[i].last);
            let path = path_reads(&table, first);
            if path != path_reads(&table, last) {
                continue; // a range across entries of different depths
            }
            deepest = deepest.max(path);
            let counts = dxr6_accesses(&view, &table, 64).unwrap();
            assert!(
                (counts.reads - path as f64).abs() < 1e-9,
                "range {i}: {} reads, path {path}",
                counts.reads
            );
        }
        assert!(deepest >= 3, "no lookup passed a node: {deepest}");
    }
}
