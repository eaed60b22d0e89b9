//! `cpe`: multibit tries built by controlled prefix expansion, with strides
//! chosen by dynamic programming (Srinivasan & Varghese, "Faster IP Lookups
//! using Controlled Prefix Expansion", SIGMETRICS 1998, sections 4 and 5).
//!
//! A trie node of stride `s` at depth `d` is an array of `2^s` entries
//! indexed by address bits `d..d+s`; every prefix of length `d < l <= d+s`
//! (the root also takes `l = 0`) is expanded into the `2^(d+s-l)` entries it
//! covers, a longer prefix capturing the entries of a shorter one
//! ([`expand`] is the same expansion as a standalone function, Figure 1).
//! The strides come from [`strides`]: the `k` levels of least memory for a
//! fixed-stride trie (Table 5), or per node the stride of least memory for
//! the whole subtree (Figure 5, Tables 6-8), with a cap on the largest.
//! Memory alone is a poor objective for IPv6: reaching /128 takes 12 levels
//! of small nodes, and dfz-v6's announced prefixes then sit 9.2 levels deep
//! on average. `level-cost=C` (an addition to the paper) makes the variable
//! program minimise memory plus `C` bytes per level on each prefix's path;
//! IPv6 defaults to [`DEFAULT_LEVEL_COST`] (3.8 levels, 2.2x the memory),
//! falling back to the least-memory plan when that one would not fit.
//!
//! Two tries, each a snapshot (what lookups read, generic over its
//! [`Storage`]) and an updater (the build state), one module each:
//! ```text
//! leaf-pushed (default)  entries: [u32], one word per entry       leaf.rs
//!   bit 31 clear: label index (0 = default route) -> results[index]
//!   bit 31 set:   child pointer: bits 26..30 stride (0 = packed node),
//!                 bits 0..25 node base in entries (or packed line number)
//! packed (leaf-pushed)   sparse nodes as one 64-byte line: stride, 6 run
//!                        starts, 7 entries, searched branch-free
//! nopush                 entries: [[u32; 2]] = [child pointer, label index];  nopush.rs
//!                        lookup keeps the last label seen (section 5.1);
//!                        updates patch single nodes in place
//! ```
//! The pointer word is read by [`is_child`], [`child_stride`] and
//! [`child_base`] and written by [`child_ptr`]. Node bases are indices into
//! flat arrays, not pointers; the results table holds a [`LabelSlot`] per
//! label index (index 0 = the default route or none: the tries hold every
//! prefix but the `/0`, so a change to it writes that slot only), assigned by a
//! [`crate::labels::LabelIndex`].
//!
//! Memory accesses per lookup: one entry read (4 or 8 bytes, aligned: one
//! cache line) per level, at most `K` levels, plus one read of the results
//! table. The leaf-pushed batch lookup overlaps the reads of many keys (see
//! `leaf.rs`).
//!
//! Limits, each a [`BuildError::Limit`] naming what would work:
//! - strides at most [`MAX_STRIDE`] (a 2^24-entry node is 64 MiB
//!   leaf-pushed), at most [`MAX_LABELS`] distinct labels;
//! - at most `max-entries` entries (default and ceiling [`MAX_ENTRIES`], what
//!   26-bit bases address; packed lines have the same ceiling), checked
//!   against the stride program's exact size before anything is allocated
//!   and by every node an update adds: a memory bound a user can lower;
//! - a level count that cannot reach the longest prefix with capped strides
//!   fails naming the level count that would; dfz-v6 has /128 prefixes, so
//!   needs `ceil(128 / 24) = 6` levels.
//!
//! Updates follow section 5.1: a changed prefix longer than the path below
//! it adds nodes (of the level's stride in a fixed-stride trie, else
//! [`NEW_NODE_STRIDE`] bits, never more than `cap`), so updates may add
//! levels to the planned `K`. A change whose nodes would pass `max-entries`
//! (or a label past [`MAX_LABELS`]) answers [`BuildError::Limit`] at once,
//! and the handle rebuilds from a new stride plan or, if the new table does
//! not fit either, keeps the old one. `nopush` patches the one node a
//! changed prefix expands into (adding or freeing nodes below as needed).
//! The leaf-pushed trie rewrites the entries the prefix expands into, and
//! the subtrees below them, from the reference table's range view (their
//! labels are copied into every subtree, so one short prefix can touch much
//! of the trie); a batch whose patch passes what a build would cost is
//! undone and built anew instead (see `leaf`); with packed nodes it is
//! rebuilt whole.
//!
//! Files: the two tries are two variants, each with its snapshot, walk,
//! build and update in one file (`leaf`, `nopush`), around what they
//! share: `lookup` (the snapshot of either), `build` (stride choices,
//! shapes, limits, free nodes), `update` (the updater of either), `image`
//! (saved snapshots), `tests`; expansion and the stride programs are in
//! `engines::shared`.

mod build;
mod image;
mod leaf;
mod lookup;
mod nopush;
mod update;

/// Controlled prefix expansion, shared with `bspl`.
pub use crate::engines::shared::expand;
/// The stride dynamic programs, shared with `bspl`.
pub use crate::engines::shared::strides;

use build::{limit_text, too_big_why, Strides};
pub use expand::{expand, Expanded};
pub use leaf::{LeafTrie, LeafUpdater};
pub use lookup::CpeTrie;
pub use nopush::{NopushTrie, NopushUpdater};
pub use strides::{
    fixed_strides, stride_report, variable_strides, FixedPlan, MemoryModel, StrideReport,
    StrideRow, VariablePlan, MAX_STRIDE,
};
pub use update::CpeUpdater;

use std::fmt;

use crate::addr::Addr;
use crate::engine::Layout;
use crate::engine::{BuildError, EngineConfig, EngineStats, Lookup, Updater};
use crate::labels::{LabelIndex, LabelSlot};
use crate::prefix::Prefix;
use crate::rib::Rib;
use crate::spec::EngineSpec;
use crate::storage::{Owned, Storage};
use strides::{fixed_plan, least_memory_by_levels, sorted_prefixes, variable_plan_weighted};

/// Default stride cap for the non-leaf-pushed trie: the paper's 17, which
/// bounds the entries one update rewrites.
pub const NOPUSH_DEFAULT_CAP: u8 = 17;
/// Stride of a node an update adds below a variable-stride trie (or below
/// the last level of a fixed-stride one), unless the cap is smaller.
pub const NEW_NODE_STRIDE: u32 = 8;
/// Most entries (or packed lines) a trie may have: bases are 26 bits. The
/// default of `max-entries`.
pub const MAX_ENTRIES: usize = 1 << 26;
/// Most distinct labels: leaf-pushed label indices must stay clear of the
/// child bit.
pub const MAX_LABELS: usize = (CHILD_FLAG - 1) as usize;
/// Levels of the planned trie when the spec names none, per family: 4 for
/// IPv4 (the paper's choice for its largest table); for IPv6 enough to
/// reach /128 with small nodes (dfz-v6 needs 7).
pub const DEFAULT_LEVELS: [u8; 2] = [4, 12];

/// Most levels a spec may name (`levels=1..=32`).
pub const MAX_LEVELS: u8 = 32;

/// Level cost of the variable-stride program when the spec names none,
/// per family (IPv4, IPv6): see [`CpeConfig::level_cost`].
// PERF: dfz-v6-nh, keys inside announced prefixes: the IPv6
// default trie of 12 levels walks 9.18 levels on average in 5.0 MB; a
// level cost of 64 walks 3.80 in 11.0 MB, 1024 walks 2.96 in 48.7 MB. 64
// doubled the batch lookup (`fibkit bench`, 1.21 -> 2.30 Mlps, machine loaded)
// and kept random public keys level (70 -> 63 Mlps per key, 40 -> 62
// batch, within the noise of that load). IPv4 keeps the paper's program.
pub const DEFAULT_LEVEL_COST: [u32; 2] = [0, 64];

/// Marks a pointer word (a leaf-pushed entry, or the first word of a
/// non-leaf-pushed entry) that points to a child node.
const CHILD_FLAG: u32 = 1 << 31;
const STRIDE_SHIFT: u32 = 26;
const BASE_MASK: u32 = (1 << STRIDE_SHIFT) - 1;
const _: () = assert!(
    (MAX_STRIDE as u32) < 1 << (31 - STRIDE_SHIFT),
    "strides fit 5 bits"
);
const _: () = assert!(MAX_ENTRIES as u64 == BASE_MASK as u64 + 1);
const _: () = assert!(MAX_LABELS as u64 + 1 == CHILD_FLAG as u64);

/// Whether an entry is a child pointer (else it is a label index).
#[inline(always)]
pub(crate) fn is_child(entry: u32) -> bool {
    entry & CHILD_FLAG != 0
}

/// The stride of the child a pointer word points to (0: a packed line).
#[inline(always)]
pub(crate) fn child_stride(ptr: u32) -> u32 {
    (ptr >> STRIDE_SHIFT) & ((1 << (31 - STRIDE_SHIFT)) - 1)
}

/// The first entry (or the packed line) of the child a pointer word points to.
#[inline(always)]
pub(crate) fn child_base(ptr: u32) -> usize {
    (ptr & BASE_MASK) as usize
}

/// The pointer word of a child of `stride` bits whose entries start at `base`.
#[inline]
pub(crate) fn child_ptr(stride: u32, base: u32) -> u32 {
    debug_assert!(stride < 1 << (31 - STRIDE_SHIFT) && base <= BASE_MASK);
    CHILD_FLAG | stride << STRIDE_SHIFT | base
}

/// The `cpe` parameters: `cpe:levels=K[,fixed][,nopush][,packed][,cap=C]`
/// or `cpe:strides=16+8+8[,nopush]`, either with `max-entries=N`.
/// `Display` prints the canonical spec (parameters in that order, defaults
/// left out).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpeConfig {
    /// Levels of the planned trie (`None`: [`DEFAULT_LEVELS`] of the family).
    pub levels: Option<u8>,
    /// Explicit strides, root first, summing to the address width (then
    /// `levels`, `fixed`, `packed` and `cap` are not given).
    pub strides: Option<Vec<u8>>,
    /// One stride per level (Table 5's program) instead of one per node.
    pub fixed: bool,
    /// Not leaf-pushed: entries hold a pointer and a label (section 5.1).
    pub nopush: bool,
    /// Sparse nodes packed into one cache line (leaf-pushed, variable strides).
    pub packed: bool,
    /// Largest stride (`None`: [`MAX_STRIDE`], or [`NOPUSH_DEFAULT_CAP`]
    /// with `nopush`).
    pub cap: Option<u8>,
    /// Most entries of the node array (`None`: [`MAX_ENTRIES`]).
    pub max_entries: Option<u32>,
    /// Bytes of memory worth one level less on one prefix's path, for the
    /// variable-stride program (`None`: [`DEFAULT_LEVEL_COST`] of the
    /// family; 0 plans for memory alone, as the paper does).
    pub level_cost: Option<u32>,
}

impl CpeConfig {
    /// The stride cap in force.
    pub fn cap(&self) -> u8 {
        match (self.cap, &self.strides) {
            (Some(cap), _) => cap,
            (None, Some(_)) => MAX_STRIDE,
            (None, None) if self.nopush => NOPUSH_DEFAULT_CAP,
            (None, None) => MAX_STRIDE,
        }
    }

    /// The most entries the node array may hold.
    pub fn max_entries(&self) -> usize {
        self.max_entries.map_or(MAX_ENTRIES, |n| n as usize)
    }

    /// The level cost of the variable-stride program for addresses of type `A`.
    pub fn level_cost<A: Addr>(&self) -> u32 {
        self.level_cost
            .unwrap_or(DEFAULT_LEVEL_COST[(A::BITS == 128) as usize])
    }

    /// The levels of the planned trie for addresses of type `A`.
    pub fn levels<A: Addr>(&self) -> u8 {
        match (&self.strides, self.levels) {
            (Some(strides), _) => strides.len() as u8,
            (None, Some(levels)) => levels,
            (None, None) => DEFAULT_LEVELS[(A::BITS == 128) as usize],
        }
    }

    fn memory_model(&self) -> MemoryModel {
        match (self.nopush, self.packed) {
            (true, _) => MemoryModel::NOT_PUSHED,
            (false, true) => MemoryModel::LEAF_PUSHED_PACKED,
            (false, false) => MemoryModel::LEAF_PUSHED,
        }
    }

    /// The stride plan for `rib`, checked against the entry limit before
    /// anything is allocated.
    fn plan<A: Addr>(&self, rib: &Rib<A>) -> Result<Strides, BuildError> {
        let limit = |why: String| BuildError::Limit {
            engine: self.to_string(),
            why,
        };
        if let Some(strides) = &self.strides {
            let sum: u32 = strides.iter().map(|&s| s as u32).sum();
            if sum != A::BITS as u32 {
                return Err(BuildError::BadSpec {
                    spec: self.to_string(),
                    why: format!(
                        "strides sum to {sum} bits but {} addresses have {} \
                         (give strides summing to {}, each at most {MAX_STRIDE})",
                        A::FAMILY,
                        A::BITS,
                        A::BITS
                    ),
                });
            }
            return Ok(Strides::Fixed(strides.clone()));
        }
        let levels = self.levels::<A>();
        let model = self.memory_model();
        let prefixes = sorted_prefixes(rib);
        let (strides, bytes) = if self.fixed {
            let plan = fixed_plan(&prefixes, levels, self.cap(), model).map_err(limit)?;
            (Strides::Fixed(plan.strides), plan.bytes)
        } else {
            let weighted = |level_cost: u32| {
                variable_plan_weighted(&prefixes, levels, self.cap(), model, level_cost as u64)
                    .map_err(limit)
            };
            let mut plan = weighted(self.level_cost::<A>())?;
            // The family's default trades memory for levels only while the
            // trie fits: past the entry limit, the least-memory plan is
            // what the table can have. A level cost the spec names is kept.
            if self.level_cost.is_none()
                && plan.bytes / model.entry_bytes > self.max_entries() as u64
            {
                plan = weighted(0)?;
            }
            (Strides::Variable(plan.nodes.into_iter()), plan.bytes)
        };
        // Fail before allocating: the program knows the size exactly (with
        // packed nodes it counts a line as 16 entries, so it may pass and
        // the builder stop at the limit).
        let entries = bytes / model.entry_bytes;
        if model.packed_runs.is_none() && entries > self.max_entries() as u64 {
            return Err(self.too_big_with_advice(&prefixes, entries));
        }
        Ok(strides)
    }

    /// The error of a plan of `entries` entries past the limit, naming the
    /// layout with the fewest levels whose least-memory trie fits (one
    /// more run of the program, for up to [`MAX_LEVELS`] levels), or, when
    /// none does, engines without the limit.
    fn too_big_with_advice<A: Addr>(&self, prefixes: &[(A, u8)], entries: u64) -> BuildError {
        let model = self.memory_model();
        let limit = self.max_entries() as u64;
        // Entries of the least-memory trie at each level count (index 0
        // unused), so the advice can name the one that fits, or else the
        // smallest there is.
        let by_levels: Vec<Option<u64>> = if self.fixed {
            (0..=MAX_LEVELS)
                .map(|levels| {
                    (levels > self.levels::<A>())
                        .then(|| fixed_plan(prefixes, levels, self.cap(), model).ok())
                        .flatten()
                        .map(|plan| plan.bytes / model.entry_bytes)
                })
                .collect()
        } else {
            least_memory_by_levels(prefixes, MAX_LEVELS, self.cap(), model)
                .iter()
                .map(|bytes| bytes.map(|bytes| bytes / model.entry_bytes))
                .collect()
        };
        let fewest =
            (1..by_levels.len()).find(|&levels| by_levels[levels].is_some_and(|n| n <= limit));
        let smallest = (1..by_levels.len())
            .filter_map(|levels| by_levels[levels].map(|n| (n, levels)))
            .min();
        let other = if A::BITS == 128 { "dxr6" } else { "dxr" };
        let advice = match (fewest, smallest) {
            (Some(levels), _) => {
                let mut layout = self.clone();
                layout.levels = Some(levels as u8);
                layout.level_cost = None;
                format!("`{layout}` is the fewest levels whose trie fits")
            }
            (None, Some((needed, levels))) if needed <= MAX_ENTRIES as u64 => {
                let mut layout = self.clone();
                layout.levels = Some(levels as u8);
                layout.level_cost = None;
                layout.max_entries = Some(needed as u32);
                format!(
                    "no trie of at most {MAX_LEVELS} levels fits in {} entries; the \
                     smallest needs {needed} (`{layout}` builds it), or try `{other}` or `lctrie`",
                    limit_text(self)
                )
            }
            (None, _) => {
                format!("no trie of at most {MAX_LEVELS} levels fits; try `{other}` or `lctrie`")
            }
        };
        BuildError::Limit {
            engine: self.to_string(),
            why: format!("{}; {advice}", too_big_why(self, entries)),
        }
    }
}

impl fmt::Display for CpeConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut params = Vec::new();
        if let Some(strides) = &self.strides {
            let strides: Vec<String> = strides.iter().map(|s| s.to_string()).collect();
            params.push(format!("strides={}", strides.join("+")));
        }
        if let Some(levels) = self.levels {
            params.push(format!("levels={levels}"));
        }
        for (flag, name) in [
            (self.fixed, "fixed"),
            (self.nopush, "nopush"),
            (self.packed, "packed"),
        ] {
            if flag {
                params.push(name.to_string());
            }
        }
        if let Some(cap) = self.cap {
            params.push(format!("cap={cap}"));
        }
        if let Some(level_cost) = self.level_cost {
            params.push(format!("level-cost={level_cost}"));
        }
        if let Some(max_entries) = self.max_entries {
            params.push(format!("max-entries={max_entries}"));
        }
        f.write_str("cpe")?;
        if !params.is_empty() {
            write!(f, ":{}", params.join(","))?;
        }
        Ok(())
    }
}

impl EngineConfig for CpeConfig {
    const NAMES: &'static [&'static str] = &["cpe"];
    const ABOUT: &'static str = "multibit trie by controlled prefix expansion, DP-chosen strides \
        (levels=K, strides=16+8+8, fixed, nopush (updatable), packed, cap=C, level-cost=B, \
        max-entries=N)";
    const LAYOUTS: &'static [Layout] = &[
        Layout::v4("cpe:levels=3"),
        Layout::both("cpe:levels=12"),
        Layout::v4("cpe:levels=4,fixed"),
        Layout::v6("cpe:levels=12,fixed"),
        Layout::v4("cpe:levels=4,nopush"),
        Layout::v6("cpe:levels=12,nopush"),
        Layout::v4("cpe:levels=4,packed"),
        Layout::v6("cpe:levels=12,packed"),
        Layout::v4("cpe:strides=16+8+8"),
    ];
    const MORE_LAYOUTS: &'static [Layout] = &[
        Layout::v4("cpe:levels=2"),
        Layout::v4("cpe:levels=6,packed"),
        Layout::v4("cpe:levels=5,nopush"),
        Layout::v4("cpe:strides=8+8+8+8"),
        Layout::v6("cpe:levels=6"),
        Layout::v6("cpe:levels=8,packed"),
        Layout::v6("cpe:levels=16,nopush"),
        Layout::v6("cpe:levels=6,fixed"),
    ];

    fn from_spec(spec: &EngineSpec) -> Result<Self, BuildError> {
        spec.expect_only(&[
            "levels",
            "strides",
            "fixed",
            "nopush",
            "packed",
            "cap",
            "level-cost",
            "max-entries",
        ])?;
        let mut config = CpeConfig {
            levels: spec
                .number("levels", 1..=MAX_LEVELS as u32)?
                .map(|l| l as u8),
            strides: None,
            fixed: spec.flag("fixed")?,
            nopush: spec.flag("nopush")?,
            packed: spec.flag("packed")?,
            cap: spec.number("cap", 1..=MAX_STRIDE as u32)?.map(|c| c as u8),
            max_entries: spec
                .number("max-entries", 1..=MAX_ENTRIES as u32)?
                .filter(|&n| n as usize != MAX_ENTRIES),
            level_cost: spec.number("level-cost", 0..=1 << 20)?,
        };
        if config.level_cost.is_some() && config.fixed {
            return Err(spec.error(
                "`level-cost` weighs the variable-stride program; `fixed` strides take none"
                    .to_string(),
            ));
        }
        if config.packed && (config.fixed || config.nopush) {
            return Err(spec.error(
                "packed nodes are built for the variable-stride leaf-pushed trie only \
                 (drop `fixed`/`nopush`; `fibkit strides` reports the other packed models)"
                    .to_string(),
            ));
        }
        if let Some(text) = spec.value("strides") {
            if config.levels.is_some()
                || config.fixed
                || config.packed
                || config.cap.is_some()
                || config.level_cost.is_some()
            {
                return Err(spec.error(
                    "`strides` fixes the trie; it takes no `levels`, `fixed`, `packed`, `cap` \
                     or `level-cost`"
                        .to_string(),
                ));
            }
            config.strides = Some(parse_strides(spec, text)?);
        } else if spec.params.iter().any(|(key, _)| key == "strides") {
            return Err(spec.error("`strides` needs a value like 16+8+8".to_string()));
        }
        // A cap equal to the default is the default: one canonical spec.
        if config.cap.is_some()
            && config.cap
                == Some(
                    CpeConfig {
                        cap: None,
                        ..config.clone()
                    }
                    .cap(),
                )
        {
            config.cap = None;
        }
        Ok(config)
    }
}

/// Parses `16+8+8`: each stride in `1..=MAX_STRIDE` (the sum is checked
/// against the family's width when the trie is built).
fn parse_strides(spec: &EngineSpec, text: &str) -> Result<Vec<u8>, BuildError> {
    let strides: Vec<u8> = text
        .split('+')
        .map(|s| s.trim().parse::<u8>())
        .collect::<Result<_, _>>()
        .map_err(|_| spec.error(format!("`strides={text}` is not a list like 16+8+8")))?;
    if strides.iter().any(|&s| s == 0 || s > MAX_STRIDE) {
        return Err(spec.error(format!(
            "every stride must be in 1..={MAX_STRIDE}, got `{text}`"
        )));
    }
    if strides.len() > 128 {
        return Err(spec.error(format!("`strides={text}` has more than 128 levels")));
    }
    Ok(strides)
}

/// What a `cpe` trie looks like.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CpeStats {
    /// Whether labels are pushed to the leaves (every variant but `nopush`).
    pub leaf_pushed: bool,
    /// Multibit nodes in use (packed ones included).
    pub nodes: usize,
    /// Nodes stored as one packed cache line.
    pub packed_nodes: usize,
    /// Freed nodes kept for reuse by updates.
    pub free_nodes: usize,
    /// Levels of the longest path (at most; freed paths are not recounted).
    pub height: u32,
    /// Entries of the node array (free ones included).
    pub entries: usize,
    /// Most entries the node array may hold (`max-entries`).
    pub max_entries: usize,
    /// Stride of the root node.
    pub root_stride: u32,
    /// Distinct labels in the results table.
    pub labels: usize,
    /// Bytes of the update state beside the snapshot (`nopush`: a prefix
    /// length per entry and a record per node).
    pub update_state_bytes: usize,
}

impl EngineStats for CpeStats {
    fn rows(&self) -> Vec<(String, String)> {
        let kind = if self.leaf_pushed {
            "leaf-pushed"
        } else {
            "not leaf-pushed"
        };
        vec![
            ("trie".into(), kind.into()),
            ("multibit nodes".into(), self.nodes.to_string()),
            ("packed nodes".into(), self.packed_nodes.to_string()),
            ("free node slots".into(), self.free_nodes.to_string()),
            ("levels of the longest path".into(), self.height.to_string()),
            ("entries".into(), self.entries.to_string()),
            ("entry limit".into(), self.max_entries.to_string()),
            ("root stride".into(), self.root_stride.to_string()),
            ("distinct labels".into(), self.labels.to_string()),
            (
                "update state bytes".into(),
                self.update_state_bytes.to_string(),
            ),
        ]
    }
}

/// Bytes of a results table of `len` slots.
fn results_bytes(len: usize) -> usize {
    len * std::mem::size_of::<LabelSlot>()
}

#[cfg(test)]
mod tests;
