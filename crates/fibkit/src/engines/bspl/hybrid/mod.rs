//! `bspl:hybrid`: \[SV98\] §7's combination for IPv6: hash tables on a few
//! lengths (32, 64 and 96 by default: every quarter of the address), found
//! by binary search, then a short multibit trie over the lengths left
//! between the hashed one found and the next.
//!
//! The table of length `h` holds the `h`-bit strings that have a longer
//! prefix below them (so they are all markers, and "has an entry" is
//! monotone along an address: a binary search finds the longest hashed
//! length `h` whose string has one). Each entry holds the root of a
//! leaf-pushed trie over lengths `h+1..=h'` (`h'` the next hashed length,
//! or the address width) below its string, whose leaves carry the best
//! matching prefix; the first-level entry holds the trie over `F+1..=h1`
//! below its block. The tries' strides come from the variable-stride
//! program of `shared::strides` (\[SV98\] Figure 5) with at most
//! [`TRIE_LEVELS`] levels, run on each trie's prefixes.
//!
//! Values (first level, table entries and trie entries alike):
//! ```text
//! bit 31 set:   trie pointer: bits 26..31 stride, bits 0..26 node base
//! bit 30 set:   leaf: bits 0..30 label index (0 = the default route)
//! 0:            no entry (tables only)
//! ```
//! Memory accesses per lookup: the first-level entry, at most
//! `ceil(log2(k + 1))` buckets, at most [`TRIE_LEVELS`] trie entries, the
//! results slot. Consecutive hashed lengths may be at most 32 apart (a
//! trie covers at most 32 bits); node bases are 26 bits.
//!
//! Updates: a prefix no longer than the first level repaints the
//! first-level leaves below it and rewrites the leaves of every trie below
//! it in place (the tries' leaves carry the BMP, so a short prefix reaches
//! them all, but it adds no node: each trie keeps its nodes and strides,
//! and no stride program runs). A longer prefix rebuilds only the tries it
//! touches: the one whose span holds its length, those below it (their
//! leaves), and the table entries above it that it creates or empties
//! (whether a string has a longer prefix below it); a change whose inside
//! holds many tries rebuilds its block. Freed trie nodes are reused by
//! stride.
//!
//! Files: `lookup` (the hashed search and the trie walk), `build` (the
//! tries and the full build), `update` (relabelling and patching tries).

use crate::engines::shared::strides::MAX_STRIDE;

/// Most levels of one trie (\[SV98\] §7 estimates "a 4 level trie").
pub const TRIE_LEVELS: u8 = 4;

/// Most tries below the changed prefixes of one block that an update
/// rebuilds one by one; more rebuild the block.
const MAX_TRIES: usize = 64;

/// Value encodings of the hybrid.
pub mod flags {
    /// A trie pointer.
    pub const POINTER: u32 = 1 << 31;
    /// A leaf.
    pub const LEAF: u32 = 1 << 30;
    /// A leaf's label index.
    pub const LABEL_MASK: u32 = LEAF - 1;
    /// Where a pointer keeps its node's stride.
    pub const STRIDE_SHIFT: u32 = 26;
    /// A pointer's node base.
    pub const BASE_MASK: u32 = (1 << STRIDE_SHIFT) - 1;
}
use flags::{BASE_MASK, LABEL_MASK, POINTER, STRIDE_SHIFT};

const _: () = assert!((MAX_STRIDE as u32) < 32, "a stride fits 5 bits");

/// Most distinct labels: leaves keep 30 bits of label index.
const MAX_LABELS: usize = LABEL_MASK as usize;

/// A pointer to a node of `stride` at `base`.
#[inline]
fn pointer(stride: u32, base: u32) -> u32 {
    debug_assert!(stride < 32 && base <= BASE_MASK);
    POINTER | stride << STRIDE_SHIFT | base
}

/// The stride of the node a pointer points to.
#[inline(always)]
fn stride_of(value: u32) -> u32 {
    (value >> STRIDE_SHIFT) & 31
}

/// The base of the node a pointer points to.
#[inline(always)]
fn base_of(value: u32) -> usize {
    (value & BASE_MASK) as usize
}

mod build;
mod lookup;
mod update;

pub(crate) use build::build;
