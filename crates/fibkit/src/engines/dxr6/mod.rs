//! `dxr6`: DXR for 128-bit keys. Zec's Direct-Range lookup (\[Zec19\],
//! chapters 3–4) with the chunk search made to fit IPv6 tables: a direct
//! table on the top `K` address bits, *nodes* (further direct tables, their
//! stride chosen per chunk) where a chunk holds more ranges than a leaf,
//! and *leaves*: a chunk's range starts at the width the chunk needs and
//! its labels, in one cache line, searched by one vector count.
//!
//! Why this shape: the merged range view of an IPv6 table is small (97,338
//! ranges for the 160,147 prefixes of `dfz-v6-nh`) but very unevenly
//! spread: one /16 holds 14,260 ranges and one /32 3,561, so a single
//! direct table leaves chunks that a binary search crosses in 10–14
//! dependent steps (thesis 3.4), while an expanded trie (DPDK `rte_fib6`,
//! 24-8-8-...) needs one level per 8 bits of prefix. Here a chunk gets a
//! node only while it has more ranges than a leaf holds, and a node's
//! stride grows with the chunk's range count, so nearly every lookup ends
//! in a leaf after the root entry and one or two node entries. Range
//! starts are prefix boundaries, so a start's bits past the longest
//! prefix that made it are zero: inside a chunk of depth `d` the starts
//! of /48 ranges need only `48 - d` bits. A leaf stores each start's bits
//! `d..d+w` for the smallest `w` of 16, 32, 64 or 128 that holds them all
//! (on dfz-v6-nh 92% of leaves take 16-bit starts).
//!
//! ```text
//! entries[addr >> (128-K)]                      root: 2^K x u32
//! entry u32:  [31:30] kind
//!   00 label  [29:0] label index                      (chunk inside one range)
//!   01 node   [29:26] stride S - 1  [25:0] first entry of a table of 2^S entries,
//!             indexed by the S address bits after the node's depth
//!   1w leaf   [29:28] width code c: starts of 16 << c bits
//!             [27:24] m = n - 1 starts (n ranges)
//!             [23:0] where the leaf begins, with A = 2^a the layout's `align`:
//!               [23:19+a] word of the first start / A   [18+a:0] line
//!             w: label indices u32 (two words) instead of u16
//! leaves[line]: 32 u16 words (64 bytes, one cache line), holding whole leaves:
//!   m starts, ascending, aligned to their width (little-endian u16 halves):
//!             bits d..d+width of every range start but the first (the
//!             chunk's own start)
//!   then n label indices
//! results[label index]                          label slot, index 0 = the default route (or none)
//! ```
//!
//! A leaf lookup compares every lane of the leaf's line with the address's
//! bits `d..d+width` (SSE2, four 16-byte compares) and counts the leaf's
//! starts `<=` them: the index of the address's range, whose label index
//! sits in the same line. A leaf holds at most 15, 10, 6 or 3 starts by
//! width (fewer with u32 labels); a chunk with more becomes a node.
//!
//! Memory accesses per lookup: the root entry (`2^K x 4` bytes: 256 KiB at
//! `K = 16`), one entry per node on the path, one leaf line, the results
//! table (one slot per distinct label, cache resident). On `dfz-v6-nh`
//! no path passes more than 6 nodes (`fibkit stats`, "node levels").
//!
//! Limits (checked at build, reported as [`BuildError::Limit`]): at most
//! `2^30` distinct labels; node tables at most `2^26` entries in all and
//! leaves `2^(19 + a)` lines (32 MiB x `align`), the widths of the base
//! fields. Node strides are 1 to 16 bits and never pass bit 128.
//!
//! `align` (1, 2, 4 or 8; spec `dxr6:align=A`) trades a leaf's word offset
//! for line bits: leaves begin at multiples of `A` words (a few words of
//! padding per line), and the line field reaches `2^(19 + a)` lines.
//! Unless the spec states it, a build starts at 1 and doubles it while
//! its leaves outgrow the line field, up to 8 (256 MiB of leaves); an
//! update that outgrows it rebuilds in place at the next step. The shared
//! tables fit at 1; a random table of 10^6 prefixes of every length with
//! a label each needs 618,188 lines, `align=2`. At `align=1` the leaf
//! entries are those of the original layout (images saved before `align`
//! existed open unchanged).
//!
//! The snapshot ([`Dxr6`]) holds the three arrays; the updater
//! ([`Dxr6Updater`]) the label index and the free space. The arrays are
//! built from the range view without the default route, whose label is
//! results slot 0: a `/0` change writes that slot only. Updates rebuild
//! the smallest chunks the other changed prefixes touch (see `update.rs`).
//!
//! Files: `lookup` (the snapshot and its walks), `search` (the leaf
//! search), `build`, `update`, `image` (saved snapshots), `simd/` (the
//! AVX2 and AVX-512 batch walks), `testing` (tables the tests share).

#[cfg(target_arch = "x86_64")]
#[path = "simd/avx2.rs"]
mod avx2;
mod build;
mod image;
mod lookup;
mod search;
#[cfg(all(test, target_arch = "x86_64"))]
mod testing;
mod update;
#[cfg(target_arch = "x86_64")]
#[path = "simd/wide.rs"]
mod wide;

use std::fmt;

use crate::engine::{BuildError, EngineConfig, EngineStats, Layout};
use crate::spec::EngineSpec;
use crate::storage::Plain;

pub use build::Dxr6Updater;
pub use lookup::Dxr6;
pub(crate) use lookup::ModelEntry;
#[cfg(target_arch = "x86_64")]
use lookup::{Walk, GROUP};

use search::{Bound, LINE_WORDS};

/// Entry bits 31..30: what the entry holds.
const KIND_SHIFT: u32 = 30;
const KIND_LABEL: u32 = 0;
const KIND_NODE: u32 = 1;
/// Leaf kinds have bit 31 set; bit 30 marks u32 label indices.
const LEAF_BIT: u32 = 1 << 31;
const WIDE_LABELS_BIT: u32 = 1 << 30;
/// Label entries: bits 29..0.
const LABEL_BITS: u32 = 30;
const LABEL_MASK: u32 = (1 << LABEL_BITS) - 1;
/// Node entries: bits 29..26 hold the stride minus one, 25..0 the table.
const STRIDE_SHIFT: u32 = 26;
const STRIDE_MASK: u32 = 0xf;
const NODE_BASE_BITS: u32 = 26;
const NODE_BASE_MASK: u32 = (1 << NODE_BASE_BITS) - 1;
/// Leaf entries: bits 29..28 hold the width code, 27..24 the number of
/// starts, 23..0 the leaf's place: at `align = 2^a`, bits 23..19+a the
/// word of the first start in the line divided by `align`, 18+a..0 the
/// line. The masks and shifts below are those of `align = 1` (the
/// AVX-512 leaf search decodes only that layout, and leaves the others to
/// the scalar search).
const WIDTH_SHIFT: u32 = 28;
const STARTS_SHIFT: u32 = 24;
const STARTS_MASK: u32 = 0xf;
const OFFSET_SHIFT: u32 = 19;
const OFFSET_MASK: u32 = 0x1f;
const LINE_BITS: u32 = 19;
const LINE_MASK: u32 = (1 << LINE_BITS) - 1;
/// Bits 23..0 of a leaf entry: its line and word offset.
const PLACE_MASK: u32 = (1 << (LINE_BITS + 5)) - 1;
/// The largest `align`: leaves at multiples of 8 words, `2^22` lines.
pub const MAX_ALIGN: u32 = crate::engines::shared::MAX_ALIGN;
/// The most starts a leaf entry can count (its 4-bit field).
const MAX_LEAF_STARTS: usize = STARTS_MASK as usize;

/// The largest node stride (the 4-bit field holds `stride - 1`).
pub const MAX_STRIDE: u32 = STRIDE_MASK + 1;
/// Root bits: at least 8 (a node table's index must fit `Addr::bits`), at
/// most 24 (2^24 entries, 64 MiB).
pub const MIN_K: u32 = 8;
/// See [`MIN_K`].
pub const MAX_K: u32 = 24;
/// Distinct labels a label entry can name.
const MAX_LABELS: usize = LABEL_MASK as usize;

const _: () = assert!(2 + 4 + NODE_BASE_BITS == 32);
const _: () = assert!(2 + 2 + 4 + 5 + LINE_BITS == 32);
const _: () = assert!(OFFSET_MASK as usize + 1 == LINE_WORDS && OFFSET_SHIFT == LINE_BITS);
const _: () = assert!(KIND_SHIFT == LABEL_BITS);
const _: () = assert!(MAX_K <= NODE_BASE_BITS, "the root fits the node base field");
const _: () = assert!(MAX_STRIDE <= 16 && MIN_K + MAX_STRIDE <= 128);

/// Whether `entry` points to a node table.
#[inline(always)]
fn is_node(entry: u32) -> bool {
    entry >> KIND_SHIFT == KIND_NODE
}

/// Whether `entry` points to a leaf.
#[inline(always)]
fn is_leaf(entry: u32) -> bool {
    entry & LEAF_BIT != 0
}

/// Whether `entry` holds a label index.
#[inline(always)]
fn is_label(entry: u32) -> bool {
    entry >> KIND_SHIFT == KIND_LABEL
}

/// The label index of a label entry.
#[inline(always)]
fn label_of(entry: u32) -> usize {
    (entry & LABEL_MASK) as usize
}

/// The stride of a node entry.
#[inline(always)]
fn stride_of(entry: u32) -> u32 {
    ((entry >> STRIDE_SHIFT) & STRIDE_MASK) + 1
}

/// The first entry of a node entry's table.
#[inline(always)]
fn node_base(entry: u32) -> usize {
    (entry & NODE_BASE_MASK) as usize
}

/// The width code of a leaf entry: its starts are `16 << code` bits.
#[inline(always)]
fn width_code(entry: u32) -> u32 {
    (entry >> WIDTH_SHIFT) & 3
}

/// The line bits of a leaf entry at `align = 2^align_shift`.
#[inline(always)]
fn line_bits(align_shift: u32) -> u32 {
    LINE_BITS + align_shift
}

/// The line holding a leaf entry's leaf, at `align = 2^align_shift`.
#[inline(always)]
fn line_of(entry: u32, align_shift: u32) -> usize {
    entry as usize & (max_lines(align_shift) - 1)
}

/// The word of a leaf's line where its first start is, at
/// `align = 2^align_shift`.
#[inline(always)]
fn offset_of(entry: u32, align_shift: u32) -> usize {
    (((entry & PLACE_MASK) >> line_bits(align_shift)) << align_shift) as usize
}

/// The number of starts a leaf holds (its ranges less one).
#[inline(always)]
fn starts_of(entry: u32) -> usize {
    ((entry >> STARTS_SHIFT) & STARTS_MASK) as usize
}

/// Whether a leaf's label indices are u32 (two words) rather than u16.
#[inline(always)]
fn has_wide_labels(entry: u32) -> bool {
    entry & WIDE_LABELS_BIT != 0
}

/// A label entry.
fn label_entry(index: u32) -> u32 {
    debug_assert!(index <= LABEL_MASK);
    (KIND_LABEL << KIND_SHIFT) | index
}

/// A node entry for a table of `2^stride` entries at `base`.
fn node_entry(base: usize, stride: u32) -> u32 {
    debug_assert!(base <= NODE_BASE_MASK as usize && (1..=MAX_STRIDE).contains(&stride));
    (KIND_NODE << KIND_SHIFT) | ((stride - 1) << STRIDE_SHIFT) | base as u32
}

/// The most lines a leaf entry can name at `align = 2^align_shift`.
#[inline(always)]
fn max_lines(align_shift: u32) -> usize {
    1 << line_bits(align_shift)
}

/// A leaf entry for the leaf of `starts` starts of `16 << code` bits at
/// word `offset` (a multiple of `align = 2^align_shift`) of `line`.
fn leaf_entry(
    place: (usize, usize),
    starts: usize,
    code: u32,
    wide_labels: bool,
    align_shift: u32,
) -> u32 {
    let (line, offset) = place;
    debug_assert!(line < max_lines(align_shift) && offset < LINE_WORDS);
    debug_assert!(offset.is_multiple_of(1 << align_shift));
    debug_assert!((1..=MAX_LEAF_STARTS).contains(&starts) && code < 4);
    let wide = if wide_labels { WIDE_LABELS_BIT } else { 0 };
    LEAF_BIT
        | wide
        | (code << WIDTH_SHIFT)
        | (starts as u32) << STARTS_SHIFT
        | ((offset >> align_shift) as u32) << line_bits(align_shift)
        | line as u32
}

/// One cache line of leaves: 32 u16 words, 64-byte aligned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(64))]
pub struct LeafLine(pub [u16; LINE_WORDS]);

// SAFETY: 32 u16 are exactly the 64 bytes of the alignment: no padding,
// and every bit pattern is a valid array of u16.
unsafe impl Plain for LeafLine {}
const _: () = assert!(std::mem::size_of::<LeafLine>() == 64);

/// The `bits` address bits after the first `depth`, as an integer (bits
/// past the address's end read as zero): a node table's index, or a
/// leaf's probe. Needs `depth < 128` and `1 <= bits <= 128`.
#[inline(always)]
fn bits_after(addr: u128, depth: u32, bits: u32) -> u128 {
    (addr << depth) >> (128 - bits)
}
/// The parameters of `dxr6`: `dxr6:k=K,stride=S,density=D`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dxr6Config {
    /// `K`: the address bits the root table resolves (8..=24).
    pub root_bits: u32,
    /// The largest node stride (1..=16).
    pub max_stride: u32,
    /// Node entries per range of the chunk a node splits (1..=64): a
    /// node's stride is the largest with `2^stride <= density * ranges`.
    /// More entries make more chunks below a node fit a leaf, so fewer
    /// lookups pass a second node, at the cost of memory.
    pub density: u32,
    /// Leaves begin at multiples of `align` words (1, 2, 4 or 8), and the
    /// leaf entries' line field reaches `2^19 x align` lines. `None` (no
    /// `align` in the spec): the build takes 1 and doubles it while the
    /// leaves need more lines; the built layout
    /// ([`crate::engine::Updater::config`]) then states it.
    pub align: Option<u32>,
}

impl Dxr6Config {
    /// This layout with leaves at multiples of `align` words, stated.
    pub const fn with_align(self, align: u32) -> Self {
        debug_assert!(align.is_power_of_two() && align <= MAX_ALIGN);
        Dxr6Config {
            align: Some(align),
            ..self
        }
    }

    /// The `align` a build starts at: the stated one, else 1.
    pub const fn align_words(self) -> u32 {
        crate::engines::shared::align_or_one(self.align)
    }

    /// `log2` of [`Self::align_words`]: how the snapshot's leaf entries
    /// split their place into word and line.
    const fn align_shift(self) -> u32 {
        self.align_words().trailing_zeros()
    }
}

/// The default parameters, chosen by measurement (docs/bench/dxr6.md,
/// "IPv6: dxr6").
pub const DEFAULT_CONFIG: Dxr6Config = Dxr6Config {
    root_bits: 16,
    max_stride: 16,
    density: 2,
    align: None,
};

impl Default for Dxr6Config {
    fn default() -> Self {
        DEFAULT_CONFIG
    }
}

impl fmt::Display for Dxr6Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "dxr6:k={},stride={},density={}",
            self.root_bits, self.max_stride, self.density
        )?;
        if let Some(align) = self.align {
            write!(f, ",align={align}")?;
        }
        Ok(())
    }
}

impl EngineConfig for Dxr6Config {
    const NAMES: &'static [&'static str] = &["dxr6"];
    const ABOUT: &'static str =
        "DXR for 128-bit keys: 2^K root, nodes of per-chunk stride, one-line leaves of \
        range starts at 16/32/64/128 bits counted by SIMD (k=8..24, stride=1..16, \
        density=1..64; align=1|2|4|8 words per leaf-place step, default: the least \
        that fits)";
    const LAYOUTS: &'static [Layout] = &[
        Layout::v6("dxr6"),
        Layout::v6("dxr6:k=8,stride=3"),
        Layout::v6("dxr6:k=8,stride=3,align=8"),
    ];
    const MORE_LAYOUTS: &'static [Layout] = &[
        Layout::v6("dxr6:k=12"),
        Layout::v6("dxr6:k=16,density=4"),
        Layout::v6("dxr6:k=20,stride=2"),
        Layout::v6("dxr6:k=8,stride=3,align=8"),
    ];
    const VECTOR_PATHS: bool = true;

    fn from_spec(spec: &EngineSpec) -> Result<Self, BuildError> {
        spec.expect_only(&["k", "stride", "density", "align"])?;
        let align = crate::engines::shared::parse_align(spec)?;
        Ok(Dxr6Config {
            root_bits: spec
                .number("k", MIN_K..=MAX_K)?
                .unwrap_or(DEFAULT_CONFIG.root_bits),
            max_stride: spec
                .number("stride", 1..=MAX_STRIDE)?
                .unwrap_or(DEFAULT_CONFIG.max_stride),
            density: spec
                .number("density", 1..=64)?
                .unwrap_or(DEFAULT_CONFIG.density),
            align,
        })
    }
}

/// What a `dxr6` table looks like.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Dxr6Stats {
    /// `K`, the root's address bits.
    pub root_bits: u32,
    /// Words between the places a leaf may begin (the layout's `align`).
    pub align: u32,
    /// Node tables by stride (index `stride - 1`).
    pub node_tables: Vec<usize>,
    /// The most node levels below the root on any path.
    pub max_node_levels: usize,
    /// Leaves by start width: 16, 32, 64, 128 bits.
    pub leaves: [usize; 4],
    /// Leaves whose label indices need 32 bits.
    pub wide_label_leaves: usize,
    /// Words (u16) the leaves occupy.
    pub leaf_words: usize,
    /// Lines of leaves.
    pub leaf_lines: usize,
    /// Words of leaf lines no leaf occupies (line ends, and space freed by
    /// updates not reused yet).
    pub free_leaf_words: usize,
    /// Node entries in tables freed by updates and not reused yet.
    pub free_node_entries: usize,
    /// Distinct labels in the results table.
    pub labels: usize,
    /// Wall time of the last full build, in nanoseconds.
    pub build_ns: u64,
    /// Full rebuilds updates made to compact the arrays.
    pub compactions: u64,
    /// The batch walk lookups run now: `AVX-512`, `AVX2` or `portable`
    /// (the CPU's widest within [`crate::cpu::max_simd`]).
    pub batch_walk: &'static str,
}

impl EngineStats for Dxr6Stats {
    fn rows(&self) -> Vec<(String, String)> {
        let strides: Vec<String> = self
            .node_tables
            .iter()
            .enumerate()
            .filter(|(_, &count)| count > 0)
            .map(|(i, count)| format!("{count} x 2^{}", i + 1))
            .collect();
        vec![
            ("root bits".into(), self.root_bits.to_string()),
            ("leaf align (words)".into(), self.align.to_string()),
            ("node tables".into(), strides.join(", ")),
            (
                "node levels (most)".into(),
                self.max_node_levels.to_string(),
            ),
            (
                "leaves by start width 16/32/64/128".into(),
                format!("{:?}", self.leaves),
            ),
            (
                "leaves with u32 labels".into(),
                self.wide_label_leaves.to_string(),
            ),
            (
                "leaf lines (bytes used)".into(),
                format!("{} ({})", self.leaf_lines, self.leaf_words * 2),
            ),
            (
                "free leaf bytes / node entries".into(),
                format!("{} / {}", self.free_leaf_words * 2, self.free_node_entries),
            ),
            ("distinct labels".into(), self.labels.to_string()),
            (
                "build ms".into(),
                format!("{:.1}", self.build_ns as f64 / 1e6),
            ),
            ("compactions".into(), self.compactions.to_string()),
            ("batch walk".into(), self.batch_walk.into()),
        ]
    }
}
