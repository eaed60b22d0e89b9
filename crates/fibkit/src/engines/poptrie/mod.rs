//! `poptrie`: a multibit trie of 5-bit nodes whose children are found by a
//! population count (after Asai and Ohara, "Poptrie: A Compressed Trie
//! with Population Count for Fast and Scalable Software IP Routing Table
//! Lookup", SIGCOMM 2015), under a direct root on the top `S` address
//! bits. For IPv4 and IPv6.
//!
//! Why: on keys inside announced IPv6 prefixes `dxr6`'s vector walk is
//! bound by its chain of dependent gathers, most of it the leaf (a
//! four-step binary search, then the label; docs/bench/dxr6.md, "The
//! vector walk inlined"). Here every step is the same few instructions: a
//! node read, a shift, a popcount; no search ends the walk, and eight
//! lanes take each level together with no per-lane decoding.
//!
//! Why five bits where the paper takes six: a node's child bitmap and its
//! first child's index then share one u64, so a step of the vector walk
//! is one gather instead of two (a /48 below an 18-bit root: six gathers
//! where 6-bit nodes below a 14-bit root took twelve). On announced keys
//! the batch and the per-key walk ran about 1.1x faster than with 6-bit
//! nodes, and at S = 13 in 0.7x their memory (docs/bench/poptrie.md,
//! "Five-bit nodes").
//!
//! Why a node and its leaves share one array of 8-byte entries: a walk
//! that gathers the entry its count names, a node's or a leaf's, ends as
//! soon as that entry is a leaf, which holds its results slot. With
//! separate node and leaf arrays a walk ending at a leaf child read the
//! node's run bitmap, then the leaf's label index, then the results slot:
//! two dependent gathers more per key. On announced keys the batch ran
//! 1.10-1.14x faster at 2^22 keys and 1.22-1.32x with every line cached
//! (docs/bench/poptrie.md, "`poptrie` keeps its leaves among its nodes").
//!
//! Why a table under each chunk (`d=D`, 5 on IPv6 by default): a chunk
//! holding more than one range gets 2^D entries for its next D bits, so
//! its keys read their entry at depth S + D straight away where a node
//! took two reads (its entry, then its child's). IPv6 tables hold few
//! such chunks (190 of 2^18 on dfz-v6-nh: 12 KB of tables), and every
//! call shape ran 1.05-1.11x faster on keys inside announced IPv6
//! prefixes (0.99-1.02x on random public ones); an IPv4 table has them
//! nearly everywhere, so D is 0 there by default
//! ([`PoptrieConfig::direct_bits_for`]).
//!
//! ```text
//! root[key >> (128 - S)]           2^S x u32
//!   bit 31 set:   [30:0] label index (the chunk is one range)
//!   bit 31 clear: [30:0] the first of the chunk's 2^D table entries,
//!                 indexed by the next D key bits (D = 0: one, its node)
//! entries[e]                       u64, a node's or a run of leaves'
//!   node  [31:0] bitmap: bit c set if child c (the next 5 key bits) is a
//!                node or starts a run of equal leaves (bit 0 and at least
//!                one more always set);  [63:32] its first child entry
//!   leaf  [31:0] 1, [63:32] the label: the results slot itself
//!         [31:0] 0, [63:32] a label index (the default route's, index 0,
//!                whose slot changes with it)
//! results[label index]             label slot, index 0 = no route
//! ```
//!
//! Keys are walked left-aligned in 128 bits (an IPv4 address in the top
//! 32), so one set of root sizes serves both families: `S` is 8, 13, 18
//! or 23, which leaves 128 bits a whole number of 5-bit levels; an IPv4
//! key ends by bit 32, where every child covers addresses of one range.
//!
//! A step at a node with child bits `c` reads the entry
//! `first child + popcount(bitmap & below) - 1` (`below` = the bits
//! `0..=c`): child `c`'s own entry where bit `c` is set, otherwise the
//! run it continues. A run starts at a leaf child whose label differs
//! from the previous child's or follows a child node, so the count is
//! never zero. A node's child entries are consecutive; nodes are laid out
//! depth first, so a path of nodes with one child node each lies in
//! consecutive lines.
//!
//! Memory accesses per lookup: the root entry, the chunk's table entry,
//! one entry per level below it, and the results slot only where the walk
//! ended at the root or at a leaf of the default route.
//!
//! Updates patch the deepest node whose span holds a changed prefix (its
//! child entries built again, depth first, at the end of the array; the
//! node keeps its entry, which its parent counts), or the table entries
//! of a prefix shorter than the root and table together or under a table
//! entry that was a leaf (rewritten in place), or the root chunks of a
//! prefix shorter than the root or in a chunk that was one range (their
//! entries pointed at new tables). What a patch replaces is left
//! unreachable: a packed node has no room to grow in place, but the
//! subtree under one is a few entries (a build of all of `dfz-v6-nh`
//! takes about 20 ms, a node microseconds). Changes spanning a quarter of
//! the root's chunks or of the entries, and unreachable entries past a
//! quarter of the array, rebuild the engine. A label index past 0 keeps
//! its slot for the updater's life (new labels get new indices), so the
//! slots leaves hold stay right; the default route is results slot 0,
//! read through its index, so a `/0` change rewrites one slot. Snapshots
//! can be saved as images (`image`).
//!
//! Limits (a [`BuildError::Limit`] naming them): at most 2^31 - 1 entries
//! and label indices.
//!
//! Files: `lookup` (the snapshot and its walks), `build`, `update`,
//! `image` (saved snapshots), `simd/wide.rs` (the AVX-512 batch), `tests`.

mod build;
mod image;
mod lookup;
mod update;
#[cfg(target_arch = "x86_64")]
#[path = "simd/wide.rs"]
mod wide;

pub use lookup::Poptrie;
pub use update::PoptrieUpdater;

use std::fmt;

use crate::addr::Addr;
use crate::engine::{BuildError, EngineConfig, EngineStats, Layout};
use crate::labels::LabelIndex;
use crate::spec::EngineSpec;

/// Address bits per node level.
pub const STRIDE: u32 = 5;
/// The root sizes `s=` takes: those that leave 128-bit keys a whole
/// number of levels (IPv4 keys are walked left-aligned in 128 bits, where
/// no node lies below bit 32).
pub const ROOT_BITS: [u32; 4] = [8, 13, 18, 23];
/// A root entry's flag: a label index, not a node.
const LEAF: u32 = 1 << 31;
/// Most entries and label indices (31-bit fields).
const MAX_INDEX: usize = (1 << 31) - 1;

/// Whether an entry is a node: its low half is its bitmap, which has bit 0
/// and at least one other bit set, where a leaf's is 0 or 1.
#[inline(always)]
fn is_node(entry: u64) -> bool {
    entry as u32 > 1
}

/// The entry of a run of leaves with label index `index`: the results
/// slot itself (a label in the high half, 1 in the low half) where
/// `labels` holds one that never changes, so a walk ends without reading
/// `results`; index 0, whose slot is the default route's and changes with
/// it, stays an index (0 in both halves).
fn leaf_entry(labels: &LabelIndex, index: u32) -> u64 {
    match index {
        0 => 0,
        _ => labels.slots()[index as usize].bits(),
    }
}

const _: () = {
    let mut i = 0;
    while i < ROOT_BITS.len() {
        assert!(
            (128 - ROOT_BITS[i]).is_multiple_of(STRIDE),
            "every root size leaves 128-bit keys whole levels"
        );
        i += 1;
    }
};

/// The table sizes `d=` takes: a whole number of levels.
pub const DIRECT_BITS: [u32; 4] = [0, 5, 10, 15];
/// The most bits the root and a chunk's table resolve together: their
/// entries then take at most 2^23 x 8 bytes however the table is spread.
pub const MAX_DIRECT_DEPTH: u32 = 23;

/// The parameters of `poptrie`: `poptrie:s=S,d=D`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoptrieConfig {
    /// `S`: the address bits the root resolves (8, 13, 18 or 23).
    pub root_bits: u32,
    /// `D`: the address bits after the root that a chunk holding more than
    /// one range resolves with a table of 2^D entries (0, 5, 10 or 15;
    /// `S + D` at most 23); 0: the chunk's table is its node. `None`:
    /// the family's default ([`PoptrieConfig::direct_bits_for`]).
    pub direct_bits: Option<u32>,
}

/// The default parameters: a 2^18 root (1 MiB), and the family's table
/// size.
pub const DEFAULT_CONFIG: PoptrieConfig = PoptrieConfig {
    root_bits: 18,
    direct_bits: None,
};

/// `D` on IPv6 where the spec names none.
const DEFAULT_DIRECT_BITS_V6: u32 = 5;

impl PoptrieConfig {
    /// `D` for addresses of `A`: as the spec gives it, or by default 5 on
    /// IPv6 (within `S + D <= 23`) and 0 on IPv4. An IPv6 table holds few
    /// chunks with more than one range (190 of 2^18 on dfz-v6-nh), whose
    /// tables of 32 entries cost 12 KB and save every key under them one
    /// dependent read: 1.05-1.11x in every call shape on announced keys
    /// (docs/bench/poptrie.md, "`poptrie` keeps its leaves among its nodes").
    /// An IPv4 table has such chunks nearly everywhere: 32-entry tables
    /// take dfz-v4-nh from 6.35 to 14.45 bytes per prefix.
    pub fn direct_bits_for<A: Addr>(&self) -> u32 {
        self.direct_bits.unwrap_or(if A::BITS == 128 {
            DEFAULT_DIRECT_BITS_V6.min(MAX_DIRECT_DEPTH - self.root_bits)
        } else {
            0
        })
    }
}

impl Default for PoptrieConfig {
    fn default() -> Self {
        DEFAULT_CONFIG
    }
}

impl fmt::Display for PoptrieConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "poptrie:s={}", self.root_bits)?;
        if let Some(direct_bits) = self.direct_bits {
            write!(f, ",d={direct_bits}")?;
        }
        Ok(())
    }
}

impl EngineConfig for PoptrieConfig {
    const NAMES: &'static [&'static str] = &["poptrie"];
    const ABOUT: &'static str =
        "Poptrie: 5-bit nodes whose children are found by popcount, under a 2^S root \
        (s=8, 13, 18, 23; default 18); patched in place on change";
    const LAYOUTS: &'static [Layout] = &[
        Layout::both("poptrie"),
        Layout::both("poptrie:s=8"),
        Layout::both("poptrie:s=13"),
    ];
    const MORE_LAYOUTS: &'static [Layout] = &[
        Layout::v4("poptrie:s=8"),
        Layout::v4("poptrie:s=18,d=5"),
        Layout::both("poptrie:s=13,d=10"),
        Layout::v6("poptrie:s=8,d=5"),
    ];
    const VECTOR_PATHS: bool = true;

    fn from_spec(spec: &EngineSpec) -> Result<Self, BuildError> {
        spec.expect_only(&["s", "d"])?;
        let root_bits = spec
            .number("s", ROOT_BITS[0]..=ROOT_BITS[ROOT_BITS.len() - 1])?
            .unwrap_or(DEFAULT_CONFIG.root_bits);
        if !ROOT_BITS.contains(&root_bits) {
            return Err(spec.error(format!(
                "`s={root_bits}` leaves the address no whole number of {STRIDE}-bit levels: \
                 use s=8, s=13, s=18 or s=23"
            )));
        }
        let Some(direct_bits) = spec.number("d", 0..=DIRECT_BITS[DIRECT_BITS.len() - 1])? else {
            return Ok(PoptrieConfig {
                root_bits,
                direct_bits: None,
            });
        };
        if !DIRECT_BITS.contains(&direct_bits) {
            return Err(spec.error(format!(
                "`d={direct_bits}` is no whole number of {STRIDE}-bit levels: \
                 use d=0, d=5, d=10 or d=15"
            )));
        }
        if root_bits + direct_bits > MAX_DIRECT_DEPTH {
            return Err(spec.error(format!(
                "`s={root_bits},d={direct_bits}` resolves {} bits before the first node, \
                 more than {MAX_DIRECT_DEPTH}: its tables could take 2^{} bytes; \
                 use d={} or less",
                root_bits + direct_bits,
                root_bits + direct_bits + 3,
                MAX_DIRECT_DEPTH - root_bits
            )));
        }
        Ok(PoptrieConfig {
            root_bits,
            direct_bits: Some(direct_bits),
        })
    }
}

/// `addr` left-aligned in 128 bits (an IPv4 address in the top 32).
#[inline(always)]
fn left<A: Addr>(addr: A) -> u128 {
    addr.to_u128() << (128 - A::BITS as u32)
}

/// The entry a node (a bitmap in bits 0..32, the index of its first
/// child entry in bits 32..64) gives `child`: the first index plus the set
/// bits `0..=child`, less one (bit 0 is always set, so the count is at
/// least one).
#[inline(always)]
fn counted(word: u64, child: u32) -> usize {
    let below = (2u64 << child).wrapping_sub(1);
    (word >> 32) as usize + (word & below).count_ones() as usize - 1
}

/// What a `poptrie` engine looks like.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PoptrieStats {
    /// `S`, the root's address bits.
    pub root_bits: u32,
    /// `D`, the address bits of a chunk's table (0: its node).
    pub direct_bits: u32,
    /// Root entries that hold a label (their chunk is one range).
    pub root_labels: usize,
    /// Entries of nodes.
    pub nodes: usize,
    /// Entries of runs of equal leaves.
    pub leaf_runs: usize,
    /// Whether the batch walks eight keys per vector with AVX-512.
    pub avx512: bool,
    /// Whether the other lookups count bits with POPCNT (else in plain
    /// code), as the CPU and [`crate::cpu::max_simd`] allow.
    pub popcnt: bool,
    /// Entries left unreachable by patches (counted in `nodes` and
    /// `leaf_runs`).
    pub dead_entries: usize,
    /// Full builds that updates did (wide changes, compaction).
    pub rebuilds: u64,
}

impl EngineStats for PoptrieStats {
    fn rows(&self) -> Vec<(String, String)> {
        vec![
            ("root bits".into(), self.root_bits.to_string()),
            ("table bits".into(), self.direct_bits.to_string()),
            ("root entries: labels".into(), self.root_labels.to_string()),
            ("nodes".into(), self.nodes.to_string()),
            ("leaf runs".into(), self.leaf_runs.to_string()),
            ("AVX-512 batch".into(), self.avx512.to_string()),
            ("POPCNT".into(), self.popcnt.to_string()),
            ("entries unreachable".into(), self.dead_entries.to_string()),
            ("rebuilds by updates".into(), self.rebuilds.to_string()),
        ]
    }
}

/// Whether this CPU runs the AVX-512 batch (eight keys per vector) and
/// [`crate::cpu::max_simd`] allows it, which also makes `poptrie` the
/// default IPv6 engine (`crate::default_spec`).
pub(crate) fn wide_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        crate::cpu::allows(crate::cpu::Simd::Avx512) && wide::available()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether this CPU has POPCNT and [`crate::cpu::max_simd`] allows it.
fn popcnt_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        crate::cpu::allows(crate::cpu::Simd::Avx2) && std::arch::is_x86_feature_detected!("popcnt")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Every root and table size the spec takes, and each root size with the
/// family's default table size.
#[cfg(test)]
fn test_configs() -> impl Iterator<Item = PoptrieConfig> {
    ROOT_BITS.into_iter().flat_map(|root_bits| {
        DIRECT_BITS
            .into_iter()
            .filter(move |&direct_bits| root_bits + direct_bits <= MAX_DIRECT_DEPTH)
            .map(move |direct_bits| PoptrieConfig {
                root_bits,
                direct_bits: Some(direct_bits),
            })
            .chain([PoptrieConfig {
                root_bits,
                direct_bits: None,
            }])
    })
}

#[cfg(test)]
mod tests;
