//! `levels`: the levelled trie with binary-search-tree leaves of Narlikar
//! and Zane, "Performance Modeling for Fast IP Lookups" (SIGMETRICS 2001),
//! section 2: one to three trie levels of fixed stride per level (`T1(s1)`,
//! `T2(s1, s1+s2)`, `T3(...)` in the paper's notation), and below every
//! last-level entry that no single range covers, a binary search tree of the
//! address intervals inside it.
//!
//! Layout:
//! ```text
//! entries: [u32]   level 1 = entries[0 .. 2^s1]; child tables of 2^s entries
//!                  each start on a 64-byte line (offsets multiple of 16)
//!   bits 30..31 = 0: label index (payload)             -> results[payload]
//!               = 1: child table offset in entries     -> next level
//!               = 2: root of a tree in `tree`          -> interval search
//! tree: [TreeNode]  first, last, left, right, label (24 bytes for IPv4,
//!                   48 for IPv6), each leaf's tree contiguous, root first
//! results: [LabelSlot]   index 0 = the default route (or none)
//! ```
//! The paper's leaves are splay trees. A lookup through a shared snapshot
//! is `&self` and `Sync`, so it cannot splay; the trees here are static and
//! built weight-balanced (Mehlhorn's rule: the root splits its interval
//! weights in half) from the lookups a trace summary
//! ([`crate::model::TraceSummary`], spec `weights=FILE`) gives each range,
//! which keeps every interval within `log2(1/p) + 2` levels of the root:
//! the entropy bound a splay tree only approaches. Without a summary every
//! interval weighs the same (a balanced tree).
//!
//! Memory accesses per lookup: one entry per trie level passed (1 to 3),
//! then for a tree leaf the nodes on the search path, then the results
//! table (small, cached).
//!
//! Limits, each a [`BuildError::Limit`] or [`BuildError::BadSpec`] naming
//! what would work: 1 to [`MAX_LEVELS`] strides of 1 to [`MAX_STRIDE`] bits
//! summing to at most the address width; at most [`MAX_ENTRIES`] trie
//! entries (1 GiB), counted from the range view before anything is
//! allocated; at most 2^30 labels and tree nodes (the entry payload).
//!
//! The entries and trees are built from the range view without the default
//! route, whose label is results slot 0: a `/0` change writes that slot.
//! Updates rebuild the level-1 entries another changed prefix spans (their child
//! tables and trees are appended; the old ones become garbage). Once the
//! arrays hold more than twice what the last full build made, the update
//! compacts them: it refills them from the whole table in their own
//! memory, a build without the allocation.
//!
//! Files: `lookup` (the snapshot and its walk), `build` (filling levels
//! and leaf trees), `update`, `image` (saved snapshots), `tests`.

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;

use crate::addr::Addr;
use crate::engine::Layout;
use crate::engine::{BuildError, EngineConfig, EngineStats, Lookup, Updater};
use crate::labels::{LabelIndex, LabelSlot};
use crate::prefix::{Label, Prefix};
use crate::rib::{Range, Rib};
use crate::spec::EngineSpec;
use crate::storage::{Owned, Plain, Storage};
use crate::summary::{prefix_densities, range_size, weighted_ranges_without_default, TraceSummary};

mod build;
mod image;
mod lookup;
mod update;

pub use build::{entries_needed, inner_nodes, tree_cumulative, weight_balanced_split};
pub use lookup::{tree_node_bytes, Levels, TreeNode};
pub use update::LevelsUpdater;

/// Most trie levels (the paper's T1, T2, T3).
pub const MAX_LEVELS: usize = 3;
/// Widest stride: a 2^24-entry table is 64 MiB.
pub const MAX_STRIDE: u8 = 24;
/// Most trie entries of a snapshot (1 GiB of `u32`).
pub const MAX_ENTRIES: usize = 1 << 28;
/// Entries of one 64-byte cache line: child tables start on a line.
pub const LINE_ENTRIES: usize = 16;

const TAG_SHIFT: u32 = 30;
const TAG_LABEL: u32 = 0;
const TAG_CHILD: u32 = 1;
const TAG_TREE: u32 = 2;
const PAYLOAD_MASK: u32 = (1 << TAG_SHIFT) - 1;
const MAX_PAYLOAD: usize = PAYLOAD_MASK as usize;
const _: () = assert!(MAX_ENTRIES <= MAX_PAYLOAD && (MAX_STRIDE as u32) < 32);
const _: () = assert!(LINE_ENTRIES * std::mem::size_of::<u32>() == 64);

/// `levels:strides=S1[+S2[+S3]][,weights=FILE]`: the stride of each trie
/// level, root first (`16+8` is the paper's `T2(16,24)`), and the trace
/// summary whose lookups shape the leaf trees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LevelsConfig {
    /// Strides, root first (1 to 3 of them).
    pub strides: Vec<u8>,
    /// A trace summary (`fibkit model summary`) weighting the leaf trees.
    pub weights: Option<PathBuf>,
}

impl Default for LevelsConfig {
    fn default() -> Self {
        LevelsConfig {
            strides: vec![16, 8],
            weights: None,
        }
    }
}

impl fmt::Display for LevelsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let strides: Vec<String> = self.strides.iter().map(u8::to_string).collect();
        write!(f, "levels:strides={}", strides.join("+"))?;
        if let Some(path) = &self.weights {
            write!(f, ",weights={}", path.display())?;
        }
        Ok(())
    }
}

impl LevelsConfig {
    /// A config of these strides without weights.
    pub fn with_strides(strides: &[u8]) -> Self {
        LevelsConfig {
            strides: strides.to_vec(),
            weights: None,
        }
    }

    /// Depth (bits consumed) after each level.
    pub fn depths(&self) -> Vec<u32> {
        self.strides
            .iter()
            .scan(0u32, |depth, &s| {
                *depth += s as u32;
                Some(*depth)
            })
            .collect()
    }

    fn check<A: Addr>(&self) -> Result<(), BuildError> {
        if !(1..=MAX_LEVELS).contains(&self.strides.len())
            || self.strides.iter().any(|s| !(1..=MAX_STRIDE).contains(s))
        {
            return Err(BuildError::BadSpec {
                spec: self.to_string(),
                why: format!(
                    "give 1 to {MAX_LEVELS} strides of 1..={MAX_STRIDE} bits (e.g. \
                     `levels:strides=16+8`)"
                ),
            });
        }
        let sum: u32 = self.strides.iter().map(|&s| s as u32).sum();
        if sum > A::BITS as u32 {
            return Err(BuildError::BadSpec {
                spec: self.to_string(),
                why: format!(
                    "strides sum to {sum} bits, more than the {} of {} addresses \
                     (e.g. `levels:strides=16+8`)",
                    A::BITS,
                    A::FAMILY
                ),
            });
        }
        Ok(())
    }
}

impl EngineConfig for LevelsConfig {
    const NAMES: &'static [&'static str] = &["levels"];
    const ABOUT: &'static str =
        "Narlikar-Zane levelled trie with search-tree leaves: strides=S1[+S2[+S3]] \
        (default 16+8), weights=FILE (trace summary shaping the trees)";
    const LAYOUTS: &'static [Layout] = &[
        Layout::both("levels"),
        Layout::both("levels:strides=8"),
        Layout::v4("levels:strides=20+4+8"),
        Layout::v6("levels:strides=16+8+8"),
    ];
    const MORE_LAYOUTS: &'static [Layout] = &[
        Layout::v4("levels:strides=4+4"),
        Layout::v4("levels:strides=12+12"),
        Layout::v6("levels:strides=8+8"),
    ];

    fn from_spec(spec: &EngineSpec) -> Result<Self, BuildError> {
        spec.expect_only(&["strides", "weights"])?;
        let mut config = LevelsConfig::default();
        if let Some(text) = spec.value("strides") {
            let strides: Option<Vec<u8>> = text
                .split('+')
                .map(|s| {
                    s.trim()
                        .parse::<u8>()
                        .ok()
                        .filter(|s| (1..=MAX_STRIDE).contains(s))
                })
                .collect();
            config.strides = match strides {
                Some(strides) if (1..=MAX_LEVELS).contains(&strides.len()) => strides,
                _ => {
                    return Err(spec.error(format!(
                        "`strides={text}` is not 1 to {MAX_LEVELS} strides of 1..={MAX_STRIDE} \
                         bits joined by `+` (e.g. `strides=16+8`)"
                    )))
                }
            };
        } else if spec.params.iter().any(|(k, _)| k == "strides") {
            return Err(spec.error("`strides` needs a value (e.g. `strides=16+8`)".into()));
        }
        match spec.params.iter().find(|(k, _)| k == "weights") {
            Some((_, Some(path))) if !path.is_empty() => {
                config.weights = Some(PathBuf::from(path));
            }
            Some(_) => {
                return Err(spec
                    .error("`weights` needs a trace summary file (`fibkit model summary`)".into()))
            }
            None => {}
        }
        Ok(config)
    }
}

/// What a `levels` table looks like.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct LevelsStats {
    /// Strides, root first.
    pub strides: Vec<u8>,
    /// Trie tables per level (level 1 has one).
    pub tables_per_level: Vec<usize>,
    /// Trie entries allocated (garbage from updates included).
    pub entries: usize,
    /// Leaves holding a search tree.
    pub trees: usize,
    /// Tree nodes allocated.
    pub tree_nodes: usize,
    /// Deepest tree, in nodes.
    pub max_tree_depth: usize,
    /// Whether the trees are weighted by a trace summary.
    pub weighted: bool,
    /// Distinct labels.
    pub labels: usize,
}

impl EngineStats for LevelsStats {
    fn rows(&self) -> Vec<(String, String)> {
        let tables: Vec<String> = self.tables_per_level.iter().map(usize::to_string).collect();
        vec![
            ("tables per level".into(), tables.join(" ")),
            ("trie entries".into(), self.entries.to_string()),
            ("leaf trees".into(), self.trees.to_string()),
            ("tree nodes".into(), self.tree_nodes.to_string()),
            ("deepest tree".into(), self.max_tree_depth.to_string()),
            (
                "tree weights".into(),
                if self.weighted {
                    "trace summary"
                } else {
                    "uniform"
                }
                .into(),
            ),
            ("distinct labels".into(), self.labels.to_string()),
        ]
    }
}

#[cfg(test)]
mod tests;
