//! `lctrie`: the dynamic level- and path-compressed trie of the Linux IPv4
//! FIB (`net/ipv4/fib_trie.c`), after Nilsson and Tikkanen, "Implementing a
//! dynamic compressed trie" (WAE'98), with the look-up of Duyck, "Picking Low
//! Hanging Fruit from the FIB Tree" (Netdev 0.1, 2015; \[Duy15\]). IPv4 and
//! IPv6.
//!
//! # Structure
//! The trie is a PATRICIA trie over *keys* (prefix addresses), level
//! compressed: an internal node (tnode) tests `bits` key bits starting at bit
//! `pos` (counted from the least significant bit, as in fib_trie) and has
//! `2^bits` children; the bits above `pos + bits` are the node's key (its
//! skipped bits, path compression). A leaf holds every prefix whose address
//! is its key, one entry per prefix length. Every node and leaf is described
//! by one *key vector* `(key, pos, bits, slen, kind, ptr)`: `slen` is the
//! longest suffix (host-part) length of any prefix below, the number that
//! lets backtracking skip sub-tries that cannot hold a match.
//!
//! Following Duyck's "up-level the key vector" (paper, last section), the
//! key vectors live in the parent's child array, not in the child: a step of
//! the look-up reads one 12-byte (IPv4) or 32-byte (IPv6) slot and from it
//! knows the child's key, position, stride and where its own children are.
//!
//! ```text
//! slab: [Slot]   one flat arena of child arrays ("blocks"), u32 indices
//!   block of a tnode with `bits` = b, at index p:
//!     slab[p-1]           header: the node's own key vector, ptr = parent block
//!     slab[p .. p + 2^b]  the children's key vectors
//!   slab[0..2]    the root pseudo block (pos = BITS, bits = 0);
//!                 slab[1] is the key vector of the top node.
//! Kv { key: A, ptr: u32, pos: u8, bits: u8, slen: u8, kind: u8 }
//!   kind TNODE: ptr = child block; LEAF: ptr = the label (one prefix);
//!   LEAF_LIST: ptr = entry block in `entries` (several prefix lengths);
//!   EMPTY: an unused child slot.
//! entries: [Entry]  blocks of [count, (slen, label) by ascending slen ...]
//! ```
//!
//! The snapshot ([`LcTrie`]) is these two arrays and the look-up algorithm;
//! the updater ([`LcTrieUpdater`], `update.rs`) keeps what only changes
//! need: per-node child counts and suffix-length counts, free block lists
//! and the prefix count.
//!
//! # Look-up
//! Two algorithms on the same trie, chosen by the spec (`lookup.rs`):
//! - `lctrie` (default), paper sections "Making tnode and leaf function
//!   similarly" to "Avoid diving into shallow suffixes": the child index
//!   `(key ^ n.key) >> n.pos` doubles as the skipped-bit check (`index >>
//!   bits != 0`), prefix mismatch is `(key ^ n.key) & (n.key | -n.key)`,
//!   backtracking strips the lowest set bit of the child index
//!   (`cindex &= cindex - 1`), and only nodes whose `slen > pos` are
//!   remembered as backtrack points; a stripped child whose `slen` does not
//!   reach the stripped bit is not entered. The batch look-up runs several
//!   of these walks interleaved, one slot read per walk per round, with the
//!   next slot of each prefetched.
//! - `lctrie:lookup=classic`: the look-up as fib_trie had it before (Linux
//!   3.19): descend with the key masked to the current prefix length, on a
//!   dead end chop index bits one at a time (`chopped_off`), shorten the
//!   prefix length, mask the key and descend again; the skipped-bit check
//!   finds the mismatch bit with `fls` (paper, Figure 2); leaves compare the
//!   masked key with each prefix. No suffix lengths.
//!
//! Both use the up-levelled layout, so the measured difference between them
//! is the algorithm only (docs/bench/lctrie.md, "LC-trie").
//!
//! Memory accesses per look-up: one slot read per level (average leaf depth
//! 3.2 on dfz-v4-nh, 6.6 on dfz-v6-nh), each within one cache line (IPv6
//! slots are 32-byte aligned, [`Slot128`]), one more for a leaf with several
//! prefix lengths, plus one per backtracking step (a header read per level
//! walked up, a child read per stripped bit).
//!
//! # Updates
//! Insert and delete follow fib_trie: find the leaf, add or remove the entry,
//! or add a leaf (splitting a slot with a new binary tnode) or remove one;
//! then bring the suffix lengths up to date and rebalance from the changed
//! node to the root, inflating nodes whose non-empty (full children counted
//! twice) share reaches 50% (30% at the top) and halving those whose
//! non-empty share drops under 25% (15% at the top), at most ten resizes per
//! node, collapsing nodes with fewer than two children. A build from
//! scratch makes each node, top down from the sorted prefixes, as wide as
//! those rules would grow it, so it leaves a trie updates would not resize.
//!
//! # Limits
//! Strides up to [`MAX_BITS`]; at most 2^32 - 2 slab slots (about 50 GB
//! for IPv4, more than any table needs): a larger table fails with
//! [`BuildError::Limit`]. Any label and any prefix length work.
//!
//! Files: `lookup` (the snapshot and its look-ups), `build` (a sub-trie at
//! once), `editor` (fib_trie's in-place insert, delete and resize),
//! `update` (the updater), `checks` (structural checks for tests),
//! `image` (saved snapshots), `adversarial` (a worst-case table).

#[cfg(feature = "bench")]
mod adversarial;
mod build;
mod checks;
mod editor;
mod image;
mod lookup;
mod update;

#[cfg(feature = "bench")]
pub use adversarial::adversarial_table_v4;
pub use editor::LcTrieUpdater;
pub use lookup::{LcTrie, LookupCounts};

use std::fmt;

use crate::addr::Addr;
use crate::engine::Layout;
use crate::engine::{BuildError, EngineConfig, EngineStats, Lookup};
use crate::prefix::{Label, Prefix};
use crate::spec::EngineSpec;
use crate::storage::{Owned, Plain, Storage};

/// The widest stride a node may grow to (2^24 children, 192 MiB of IPv4 key
/// vectors): far above what the fill thresholds reach on real tables (the
/// DFZ root settles at 2^18), so it only bounds pathological growth.
pub const MAX_BITS: u8 = 24;
const _: () = assert!(MAX_BITS < 32, "child indices are shifted in u32");

/// Header slots in front of every child block (the node's own key vector).
const HEADER: usize = 1;
/// The pseudo block above the top node; `slab[ROOT]` is the top node's key vector.
const ROOT: usize = HEADER;
/// No parent (the root pseudo block's header).
const NONE: u32 = u32::MAX;
/// The largest slab index a `ptr` may hold.
const MAX_SLAB: usize = (u32::MAX - 1) as usize;

const EMPTY: u8 = 0;
const LEAF: u8 = 1;
const LEAF_LIST: u8 = 2;
const TNODE: u8 = 3;

/// A key vector: everything a look-up step needs about one node or leaf
/// (see the module header). Values of it are unpacked from and packed into
/// the slab's [`SlotLayout::Slot`]s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kv<A> {
    key: A,
    ptr: u32,
    pos: u8,
    bits: u8,
    slen: u8,
    kind: u8,
}

impl<A: Addr> Kv<A> {
    const EMPTY: Kv<A> = Kv {
        key: A::ZERO,
        ptr: 0,
        pos: 0,
        bits: 0,
        slen: 0,
        kind: EMPTY,
    };

    /// Whether this is a leaf (one or several prefixes).
    #[inline(always)]
    fn is_leaf(&self) -> bool {
        self.kind == LEAF || self.kind == LEAF_LIST
    }
}

/// How the key vectors of an address family are laid out in the slab: the
/// one per-family piece of the engine.
pub trait SlotLayout: Addr {
    /// A key vector as stored: plain bytes, sized and aligned so that one
    /// never straddles two cache lines (12-byte IPv4 slots mostly don't; the
    /// 32-byte IPv6 ones are 32-byte aligned).
    type Slot: Plain;
    /// Packs a key vector into a slot.
    fn pack(kv: Kv<Self>) -> Self::Slot;
    /// Unpacks the key vector of a slot.
    fn unpack(slot: &Self::Slot) -> Kv<Self>;
}

/// An IPv4 key vector in the slab, unpadded (12 bytes).
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct Slot32 {
    key: u32,
    ptr: u32,
    pos: u8,
    bits: u8,
    slen: u8,
    kind: u8,
}

/// An IPv6 key vector in the slab, on a 32-byte boundary.
// PERF: without the alignment, half the 32-byte slots straddle two cache
// lines (large allocations start 16 bytes into a page); docs/bench/lctrie.md,
// "LC-trie", dfz-v6-nh cache lines per look-up.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(32))]
pub struct Slot128 {
    key: u128,
    ptr: u32,
    pos: u8,
    bits: u8,
    slen: u8,
    kind: u8,
    unused: u64,
}

const _: () = assert!(std::mem::size_of::<Slot32>() == 12);
const _: () = assert!(std::mem::size_of::<Slot128>() == 32);

// SAFETY: `repr(C)` fields of 4 + 4 + 4 x 1 bytes fill the 12 bytes (size
// asserted above): no padding; every bit pattern of the integers is a
// value (an unknown `kind` reads as a node no look-up enters).
unsafe impl Plain for Slot32 {}
// SAFETY: `repr(C)` fields of 16 + 4 + 4 x 1 + 8 bytes fill the 32 bytes
// (size asserted above): no padding, integers only.
unsafe impl Plain for Slot128 {}

macro_rules! slot_layout {
    ($addr:ty, $slot:ident { $($extra:ident: $value:expr),* }) => {
        impl SlotLayout for $addr {
            type Slot = $slot;
            #[inline(always)]
            fn pack(kv: Kv<Self>) -> $slot {
                $slot {
                    key: kv.key,
                    ptr: kv.ptr,
                    pos: kv.pos,
                    bits: kv.bits,
                    slen: kv.slen,
                    kind: kv.kind,
                    $($extra: $value,)*
                }
            }
            #[inline(always)]
            fn unpack(slot: &$slot) -> Kv<Self> {
                Kv {
                    key: slot.key,
                    ptr: slot.ptr,
                    pos: slot.pos,
                    bits: slot.bits,
                    slen: slot.slen,
                    kind: slot.kind,
                }
            }
        }
    };
}
slot_layout!(u32, Slot32 {});
slot_layout!(u128, Slot128 { unused: 0 });

/// One prefix of a leaf with several prefix lengths; the first entry of a
/// block is a header whose `slen` is the count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct Entry {
    label: Label,
    slen: u8,
    unused: [u8; 3],
}

const _: () = assert!(std::mem::size_of::<Entry>() == 8);
// SAFETY: `repr(C)` fields of 4 + 1 + 3 bytes fill the 8 bytes (asserted):
// no padding, integers only.
unsafe impl Plain for Entry {}

impl Entry {
    const fn new(label: Label, slen: u8) -> Self {
        Entry {
            label,
            slen,
            unused: [0; 3],
        }
    }
}

/// Which look-up algorithm an engine runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LookupAlgo {
    /// Duyck's look-up (Linux 4.0 onwards): the default.
    Improved,
    /// The look-up of Linux 3.19 and earlier.
    Classic,
}

/// The parameters of `lctrie`: `lctrie` or `lctrie:lookup=classic`
/// (`lookup=improved` is the default).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LcTrieConfig {
    /// The look-up algorithm.
    pub lookup: LookupAlgo,
}

impl Default for LcTrieConfig {
    fn default() -> Self {
        LcTrieConfig {
            lookup: LookupAlgo::Improved,
        }
    }
}

impl fmt::Display for LcTrieConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.lookup {
            LookupAlgo::Improved => f.write_str("lctrie"),
            LookupAlgo::Classic => f.write_str("lctrie:lookup=classic"),
        }
    }
}

impl EngineConfig for LcTrieConfig {
    const NAMES: &'static [&'static str] = &["lctrie"];
    const ABOUT: &'static str =
        "Linux fib_trie dynamic LC-trie; lookup=improved (default) or lookup=classic";
    const LAYOUTS: &'static [Layout] = &[
        Layout::both("lctrie"),
        Layout::both("lctrie:lookup=classic"),
    ];
    const MORE_LAYOUTS: &'static [Layout] = &[Layout::both("lctrie:lookup=classic")];

    fn from_spec(spec: &EngineSpec) -> Result<Self, BuildError> {
        spec.expect_only(&["lookup"])?;
        let lookup = match spec.value("lookup") {
            None | Some("improved") => LookupAlgo::Improved,
            Some("classic") => LookupAlgo::Classic,
            Some(other) => {
                return Err(spec.error(format!(
                    "`lookup={other}` is not a look-up algorithm (known: improved, classic)"
                )))
            }
        };
        Ok(LcTrieConfig { lookup })
    }
}

/// Shape of the trie, for statistics and benchmarks.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Shape {
    /// Leaves (distinct prefix addresses).
    pub leaves: usize,
    /// Internal nodes.
    pub tnodes: usize,
    /// Stride of the top node (0 if it is a leaf or the trie is empty).
    pub top_bits: u8,
    /// Most key vectors on a path from the top to a leaf.
    pub max_depth: usize,
    /// Average number of key vectors on the path to a leaf.
    pub average_leaf_depth: f64,
    /// Slab slots in live blocks (headers included).
    pub slab_in_use: usize,
}

/// What an LC-trie looks like.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LcTrieStats {
    /// Prefixes held.
    pub prefixes: usize,
    /// Leaves, nodes, depths.
    #[serde(flatten)]
    pub shape: Shape,
    /// Slab slots, live and free.
    pub slab_slots: usize,
    /// Leaf entry slots, live and free.
    pub entry_slots: usize,
}

impl EngineStats for LcTrieStats {
    fn rows(&self) -> Vec<(String, String)> {
        let shape = &self.shape;
        vec![
            ("prefixes".into(), self.prefixes.to_string()),
            ("leaves".into(), shape.leaves.to_string()),
            ("tnodes".into(), shape.tnodes.to_string()),
            ("top node bits".into(), shape.top_bits.to_string()),
            ("max depth".into(), shape.max_depth.to_string()),
            (
                "average leaf depth".into(),
                format!("{:.2}", shape.average_leaf_depth),
            ),
            (
                "slab slots (in use)".into(),
                format!("{} ({})", self.slab_slots, shape.slab_in_use),
            ),
            ("leaf entry slots".into(), self.entry_slots.to_string()),
        ]
    }
}
