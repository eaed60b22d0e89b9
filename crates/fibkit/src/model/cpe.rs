//! The model of `cpe` (leaf-pushed multibit tries by controlled prefix
//! expansion, `engines/cpe`): access counts per cache line of the node
//! array, Equation 2 misses and Equation 1 time, as [`super::predict`]
//! does for the `levels` engine (Narlikar and Zane §4).
//!
//! A lookup reads one u32 entry per level, `entries[base + addr.bits(depth,
//! stride)]`, until an entry holds a label. The strides are the ones the
//! engine's own dynamic program picks: the model walks the trie the engine
//! built (every node, in address order), so variable strides per node are
//! counted as they are. Each entry covers an interval of addresses; the
//! lookups falling there (the range view's, spread uniformly over each
//! range) are added to the entry's cache line, and a child entry's lookups
//! go on to the child's entries.
//!
//! Departures from the paper: its blocks are trie nodes of 32-byte lines;
//! here they are the node array's cache lines (a node of stride `s` spans
//! `4 * 2^s` bytes; every cache level is assumed to have the innermost
//! level's line size). Not counted: the results table (read once at the
//! end, a `LabelSlot` per distinct label), packed nodes and the
//! not-leaf-pushed trie (the model asks for an unpacked leaf-pushed trie).
//! Cost: one visit of every entry of the trie, with a forward-moving cursor
//! over the ranges.

use super::access::{line_bytes, Accesses, Spread, TableWalk};
use super::{CacheLevel, ModelError, Prediction, WeightedRanges};
use crate::addr::Addr;
use crate::engines::cpe::{child_base, child_stride, is_child, CpeTrie};

/// Predicted costs of the `cpe` trie `trie` for the lookups of `view` (the
/// table's merged ranges over the whole address space, with their lookups)
/// in `caches`.
pub fn predict_cpe<A: Addr>(
    view: &WeightedRanges<A>,
    trie: &CpeTrie<A>,
    caches: &[CacheLevel],
) -> Result<Prediction, ModelError> {
    Ok(cpe_accesses(view, trie, line_bytes(caches))?.predict(caches))
}

/// The node array's accesses per line of `line` bytes.
fn cpe_accesses<A: Addr>(
    view: &WeightedRanges<A>,
    trie: &CpeTrie<A>,
    line: usize,
) -> Result<Accesses, ModelError> {
    let unsupported = || {
        ModelError::Input(
            "the cpe model covers leaf-pushed tries without packed nodes \
             (`cpe:levels=N`, not `nopush` or `packed`)"
                .into(),
        )
    };
    let CpeTrie::Leaf(leaf) = trie else {
        return Err(unsupported());
    };
    let (root, entries) = leaf.unpacked_nodes().ok_or_else(unsupported)?;
    let spread = Spread::new(view)?;
    let mut walk = Walk {
        table: TableWalk::new(&spread, line),
        entries,
        bits: A::BITS as u32,
    };
    walk.node(root, 0, 0)?;
    Ok(Accesses {
        reads: walk.table.reads,
        arrays: vec![walk.table.lines],
        lookups: spread.total(),
        memory_bytes: entries.len() as u64 * 4,
    })
}

/// The state of the walk over the trie.
struct Walk<'a> {
    table: TableWalk<'a>,
    entries: &'a [u32],
    bits: u32,
}

impl Walk<'_> {
    /// Counts the node `ptr` points to, at `depth`, whose first address is
    /// `lo`, and the nodes below it.
    fn node(&mut self, ptr: u32, depth: u32, lo: u128) -> Result<(), ModelError> {
        let stride = child_stride(ptr);
        let read = self
            .table
            .table(self.entries, child_base(ptr), stride, depth, self.bits, lo)
            .ok_or_else(|| ModelError::Input("the cpe trie's node array is inconsistent".into()))?;
        for (entry, _, first) in read {
            if is_child(entry) {
                self.node(entry, depth + stride, first)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{EngineConfig, Updater};
    use crate::engines::cpe::{CpeConfig, CpeUpdater};
    use crate::model::summary::weighted_ranges;
    use crate::{Prefix, Rib};

    #[test]
    fn counts_match_a_hand_worked_table() {
        // 10/8 -> 1 and 10.1/16 -> 2 with strides 8+8+16: the root (256
        // entries, 16 lines of 64 bytes) points 10/8 to a node of 256
        // entries (4 lines); every range weighs one lookup.
        let rib = Rib::from_pairs([
            ("10.0.0.0/8".parse::<Prefix<u32>>().unwrap(), 1),
            ("10.1.0.0/16".parse().unwrap(), 2),
        ]);
        let config = CpeConfig::parse("cpe:strides=8+8+16").unwrap();
        let (_, trie) = CpeUpdater::build(&config, &rib).unwrap();
        let view = weighted_ranges(&rib, 0, u32::MAX, None);
        assert_eq!(view.ranges.len(), 5);
        let counts = cpe_accesses(&view, &trie, 64).unwrap();
        let lines = &counts.arrays[0].counts;
        // Ranges: 0..10/8 (1), 10.0/16 (1), 10.1/16 (1), 10.2/16..10.255/16
        // (1), 11/8.. (1). The root line of 10/8 (entries 0..16) gets the
        // lookups of ranges 0..=3 whole and range 4's share of 11/8..15/8.
        let rest = ((1u64 << 32) - (11 << 24)) as f64;
        assert!((lines[0] - (4.0 + 5.0 * (1 << 24) as f64 / rest)).abs() < 1e-9);
        // The child of 10/8 (entries 256..512, lines 16..20): entry 0 and 1
        // in line 16 (ranges 1 and 2), ranges 3's 254/256 spread over 4
        // lines (entries 2..16 in line 16: 14 of them).
        let share = 1.0 / 254.0;
        assert!((lines[16] - (2.0 + 14.0 * share)).abs() < 1e-9, "{lines:?}");
        assert!((lines[17] - 16.0 * share).abs() < 1e-9);
        // Reads: every lookup reads a root entry; three ranges' lookups
        // read one more.
        assert!((counts.reads - 8.0).abs() < 1e-9);
        assert_eq!(counts.memory_bytes, 512 * 4);
        let packed = CpeConfig::parse("cpe:levels=3,packed").unwrap();
        let (_, trie) = CpeUpdater::build(&packed, &rib).unwrap();
        assert!(cpe_accesses(&view, &trie, 64).is_err());
    }
}
