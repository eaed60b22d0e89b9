//! `dxr`: DXR, Zec's Direct-Range lookup for IPv4 (\[Zec19\], chapters 3–4;
//! FreeBSD's `in_fib_dxr.c` is the kernel incarnation).
//!
//! The reference table's merged range view (sorted, disjoint address ranges,
//! neighbours with equal labels joined; thesis 3.1–3.2) is cut into `2^K`
//! *chunks* by the top `K` address bits. Each chunk gets one 32-bit entry: the
//! label itself when a single range covers the chunk, otherwise the position,
//! length and format of the chunk's ranges in the range table, where a binary
//! search on the remaining `32 - K` bits finds the range (thesis 3.3–3.4).
//!
//! Two layouts (spec `dxr:k=K`, or `dxr:d=D,x=X` with `K = D + X`):
//! ```text
//! D{K}R:      ext[addr >> (32-K)]                                   2^K x u32
//! D{D}X{X}R:  direct[addr >> (32-D)] = block                          2^D x u16
//!             ext[block << X | (addr >> (32-K)) & (2^X-1)]  dedup'd blocks of 2^X x u32
//! then, in both:
//! entry u32:  [31:30] format  [29:22] size  [21:0] base      (format != 0)
//!             [31:30] = 0     [29:0] label index             (chunk of one range)
//! ranges[base..]  u16 words; size 255 = "word at base holds n-1, data follows"
//!   short (fmt 1): n words  start8 << 8 | label8       (2 bytes per range)
//!   long  (fmt 2): n words start16, then n words label16  (4 bytes per range)
//!   wide  (fmt 3): n words start16, then n x (label lo16, label hi16)  (6 bytes)
//! results[label index] = LabelSlot   (index 0 = the default route, or none)
//! ```
//! `start` is a range's offset inside its chunk (the low `32-K` bits, at most
//! 16 since `K >= 16`). A chunk is **short** when every label index fits 8
//! bits and every start has its low `24-K` bits clear, so the top 8 offset
//! bits hold it: for `K = 16` that is exactly the thesis' "/24 boundary" rule
//! (Figure 3.6); for larger `K` it is the same 8-bit field over a finer grid
//! (for `K = 24` every chunk with small labels is short). Otherwise a chunk is
//! **long** if its label indices fit 16 bits, else **wide**: the documented
//! format for tables with more than 65,536 distinct labels (`dfz-v4-asn`).
//! Label indices are assigned by how many ranges carry the label, so the
//! common labels get the narrow indices.
//!
//! Departure from the thesis, for speed: long and wide chunks store their
//! starts apart from their labels, so the binary search touches 2-byte starts
//! only (32 per cache line, not 16) and reads one label at the end. Short
//! ranges keep start and label in one word, ordered so that comparing the
//! whole word with `key8 << 8 | 0xff` compares the starts.
//!
//! Identical chunks are stored once, reference counted (thesis 3.5, Figures
//! 3.9–3.10); in the extended layout identical extension blocks are too
//! (thesis 4.1). The extended lookup always reads both levels (thesis 4.2).
//!
//! The snapshot ([`Dxr`]) holds only what lookups read: the layout's shifts
//! and masks, `direct`, `ext`, `ranges` and `results`, in a
//! [`Storage`](crate::storage::Storage). The updater ([`DxrUpdater`],
//! in `update.rs`, with the chunk store in `build.rs`) holds what
//! builds and updates need: the label index, the chunks' and blocks'
//! reference counts and dedup maps, and the range table's free lists, as
//! FreeBSD keeps `struct dxr_aux` apart from `struct dxr`.
//!
//! Memory accesses per lookup: D{K}R: one direct entry, then (if the chunk
//! has `n >= 2` ranges) the range words: the thesis' binary search reads
//! `ceil(log2 n)` of them one after the other; fibkit halves only down to
//! 16 words and then compares all 16 at once (one cache line or two, see
//! `search_window`), plus one label word for long chunks; then the results
//! table (small: one entry per label).
//! D{D}X{X}R: one more, to the direct table (`2^D x 2` bytes, cache resident).
//!
//! Batch lookups ([`Lookup::lookup_batch`]) keep many entry reads in flight
//! and leave the few keys that need a search for a second pass (see
//! `lookup_masked`); slices of fewer than 4 keys, where that costs more
//! than it saves, take the plain loop.
//!
//! Limits (checked at build, reported as [`BuildError::Limit`]):
//! - the 22-bit base field counts range-table words in steps of `align`
//!   words (1, 2, 4 or 8; spec `dxr:k=K,align=A`), so the range table holds
//!   at most `2^22 x align` words: 8 MiB at `align=1`. Chunks start at
//!   multiples of `align` words (a few words of padding each). Unless the
//!   spec states `align`, a build starts at 1 and, when its range table
//!   outgrows that, doubles `align` and starts over, up to 8 (64 MiB); an
//!   update that outgrows it rebuilds in place at the next step, and the
//!   updater keeps the larger step (its
//!   [`Updater::config`](crate::engine::Updater::config) names it, as do saved
//!   images). A table with a million distinct labels, whose chunks take 6
//!   bytes per range, needs `align=2`; the shared tables fit at 1, so their
//!   layout is unchanged. A table the step cannot hold fails with an error
//!   naming the layouts whose range table fits (sized by a dry run of the
//!   range table alone, without the chunk entries);
//! - at most `2^30 - 1` distinct labels (label entries use 30 bits);
//! - chunk sizes have no limit: sizes above 254 go to a header word
//!   (a chunk holds at most `2^(32-K) <= 65,536` ranges, so `n-1` fits it);
//! - `D <= 16`, so block numbers fit the u16 direct table.
//!
//! Chunks are built from the range view without the default route, whose
//! label lives in results slot 0 (what entries of index 0 name): a change to
//! the `/0` rewrites that slot and no chunk. Updates
//! ([`Updater::update`]) rebuild only the chunks another changed prefix
//! covers, from the reference table (thesis 3.5), unless that is most of
//! the table: then the updater rebuilds the whole snapshot in place, so a
//! change costs at most about one full build (see `build.rs`).

mod build;
mod image;
mod lookup;
mod stats;
mod update;

use std::fmt;

use crate::engine::Layout;
use crate::engine::{BuildError, EngineConfig, Lookup};
use crate::labels::LabelSlot;
use crate::spec::EngineSpec;

use lookup::search_steps;
pub use lookup::Dxr;
pub use stats::DxrStats;
pub use update::DxrUpdater;

/// Entry bits 31..30: what the entry holds.
const FORMAT_SHIFT: u32 = 30;
const FORMAT_LABEL: u32 = 0;
const FORMAT_SHORT: u32 = 1;
const FORMAT_LONG: u32 = 2;
const FORMAT_WIDE: u32 = 3;
/// Entry bits 29..22: number of ranges in the chunk, or [`SIZE_ESCAPE`].
const SIZE_SHIFT: u32 = 22;
const SIZE_BITS: u32 = 8;
const SIZE_MASK: u32 = (1 << SIZE_BITS) - 1;
/// A size too big for the field: the chunk's first word holds `n - 1`.
const SIZE_ESCAPE: u32 = SIZE_MASK;
/// Entry bits 21..0: the chunk's first word in the range table.
const BASE_BITS: u32 = 22;
const BASE_MASK: u32 = (1 << BASE_BITS) - 1;
/// Label entries: bits 29..0.
const LABEL_BITS: u32 = 30;
const LABEL_MASK: u32 = (1 << LABEL_BITS) - 1;

/// The smallest and largest `K`: starts must fit 16 bits and the short
/// format's 8-bit start must cover the top offset bits.
pub const MIN_K: u32 = 16;
/// See [`MIN_K`].
pub const MAX_K: u32 = 24;
/// The extended layout's direct-table bits: `D <= 16` keeps block numbers in
/// a u16 (thesis 4.1).
pub const MIN_D: u32 = 12;
/// See [`MIN_D`].
pub const MAX_D: u32 = 16;

const _: () = assert!(2 + SIZE_BITS + BASE_BITS == 32);
const _: () = assert!(FORMAT_SHIFT == LABEL_BITS && SIZE_SHIFT == BASE_BITS);
const _: () = assert!(32 - MIN_K <= 16, "starts must fit u16 words");
const _: () = assert!(
    MAX_K <= 24,
    "short starts hold the top 8 of 32-K offset bits"
);
// A chunk has at most 2^(32-K) ranges; the escape header stores n - 1 in a u16.
const _: () = assert!((1u64 << (32 - MIN_K)) - 1 <= u16::MAX as u64);
const _: () = assert!(MAX_D <= 16, "block numbers are u16");

/// Whether a chunk entry holds a label index (the chunk lies inside one
/// range) rather than the place of the chunk's ranges.
#[inline(always)]
fn is_label(entry: u32) -> bool {
    entry >> FORMAT_SHIFT == FORMAT_LABEL
}

/// The label index of an entry for which [`is_label`] holds.
#[inline(always)]
fn label_of(entry: u32) -> u32 {
    entry & LABEL_MASK
}

/// The entry of a chunk that lies inside one range of label index `index`.
#[inline(always)]
fn label_entry(index: u32) -> u32 {
    debug_assert!(index <= LABEL_MASK);
    (FORMAT_LABEL << FORMAT_SHIFT) | index
}

/// The format of an entry (`FORMAT_LABEL`, `_SHORT`, `_LONG`, `_WIDE`).
#[inline(always)]
fn format_of(entry: u32) -> u32 {
    entry >> FORMAT_SHIFT
}

/// The size field of a chunk entry: its number of ranges, or
/// [`SIZE_ESCAPE`] when the first word holds it.
#[inline(always)]
fn size_of(entry: u32) -> u32 {
    (entry >> SIZE_SHIFT) & SIZE_MASK
}

/// The largest `align`: chunk bases in steps of 8 words reach 64 MiB.
pub const MAX_ALIGN: u32 = crate::engines::shared::MAX_ALIGN;

/// Which DXR layout: `d_bits == 0` for the single-level D{K}R, otherwise
/// D{d}X{k-d}R. Parsed from `dxr`, `dxr:k=K`, `dxr:d=D,x=X` or
/// `dxr:d=D,k=K`; printed as `dxr:k=K` or `dxr:d=D,x=X`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DxrConfig {
    /// Bits of the extended layout's first-level direct table (0: none).
    pub d_bits: u32,
    /// Address bits resolved by the direct (and extension) tables.
    pub k_bits: u32,
    /// Range-table words per step of a chunk entry's base (1, 2, 4 or 8):
    /// the range table holds at most `2^22 x align` words. `None` (no
    /// `align` in the spec): the build takes 1 and doubles it while the
    /// table needs more (see the module docs); a stated step is kept, and
    /// a table it cannot hold is an error.
    pub align: Option<u32>,
}

/// The default layout, chosen by measurement (docs/bench/dxr.md, "DXR"):
/// with the masked batch lookup D20R is the fastest layout on random keys
/// that keeps its speed when other processes share the L3 cache (D21R,
/// twice its size, is as fast only on a quiet machine), it has the fastest
/// plain loop, and it stays within the 7 bytes/prefix budget (5.4 on
/// dfz-v4-nh). For serialized lookups or tight memory prefer `dxr:k=16` or
/// `dxr:d=16,x=3` (1.2-1.6 bytes/prefix, 2-3x D20R on dependent keys).
pub const DEFAULT_LAYOUT: DxrConfig = DxrConfig {
    d_bits: 0,
    k_bits: 20,
    align: None,
};

impl Default for DxrConfig {
    fn default() -> Self {
        DEFAULT_LAYOUT
    }
}

impl DxrConfig {
    /// The single-level layout D{K}R.
    pub const fn single(k_bits: u32) -> Self {
        DxrConfig {
            d_bits: 0,
            k_bits,
            align: None,
        }
    }

    /// The extended layout D{d}X{k-d}R.
    pub const fn extended(d_bits: u32, k_bits: u32) -> Self {
        DxrConfig {
            d_bits,
            k_bits,
            align: None,
        }
    }

    /// This layout with chunk bases in steps of `align` words, stated.
    pub const fn with_align(self, align: u32) -> Self {
        debug_assert!(align.is_power_of_two() && align <= MAX_ALIGN);
        DxrConfig {
            align: Some(align),
            ..self
        }
    }

    /// The words per step of a chunk base this layout builds with (1 when
    /// the build picks it and has not needed more).
    pub const fn align_words(self) -> u32 {
        crate::engines::shared::align_or_one(self.align)
    }

    /// Whether this is the two-level layout D{D}X{X}R.
    pub fn is_extended(self) -> bool {
        self.d_bits != 0
    }
}

impl fmt::Display for DxrConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.d_bits == 0 {
            write!(f, "dxr:k={}", self.k_bits)?;
        } else {
            write!(f, "dxr:d={},x={}", self.d_bits, self.k_bits - self.d_bits)?;
        }
        if let Some(align) = self.align {
            write!(f, ",align={align}")?;
        }
        Ok(())
    }
}

impl EngineConfig for DxrConfig {
    const NAMES: &'static [&'static str] = &["dxr"];
    const ABOUT: &'static str =
        "Zec's DXR: dxr:k=16..24 direct chunks + range binary search, or dxr:d=12..16,x=X; \
        align=1|2|4|8 range-table words per chunk-base step (default: the least that fits)";
    const LAYOUTS: &'static [Layout] = &[
        Layout::v4("dxr"),
        Layout::v4("dxr:k=16"),
        Layout::v4("dxr:k=24"),
        Layout::v4("dxr:d=12,x=8"),
    ];
    const MORE_LAYOUTS: &'static [Layout] = &[
        Layout::v4("dxr:k=16"),
        Layout::v4("dxr:k=18"),
        Layout::v4("dxr:d=14,x=6"),
    ];

    fn from_spec(spec: &EngineSpec) -> Result<Self, BuildError> {
        spec.expect_only(&["k", "d", "x", "align"])?;
        let k = spec.number("k", MIN_K..=MAX_K)?;
        let d = spec.number("d", MIN_D..=MAX_D)?;
        let x = spec.number("x", 1..=MAX_K - MIN_D)?;
        let align = crate::engines::shared::parse_align(spec)?;
        let Some(d_bits) = d else {
            if x.is_some() {
                return Err(spec.error("`x` needs `d` (the extended layout is d=D,x=X)".into()));
            }
            let layout = k.map_or(DEFAULT_LAYOUT, DxrConfig::single);
            return Ok(DxrConfig { align, ..layout });
        };
        let k_bits = match (k, x) {
            (Some(k), None) => k,
            (None, Some(x)) => d_bits + x,
            (Some(k), Some(x)) if k == d_bits + x => k,
            (Some(k), Some(x)) => {
                return Err(spec.error(format!("k={k} is not d+x={}", d_bits + x)))
            }
            (None, None) => return Err(spec.error("`d` needs `x` (or `k`)".into())),
        };
        if !(MIN_K..=MAX_K).contains(&k_bits) || k_bits <= d_bits {
            return Err(spec.error(format!(
                "d+x must be in {MIN_K}..={MAX_K} with x >= 1 (got d={d_bits}, x={})",
                k_bits as i64 - d_bits as i64
            )));
        }
        Ok(DxrConfig {
            align,
            ..DxrConfig::extended(d_bits, k_bits)
        })
    }
}

/// The shifts and masks of a layout, computed once so lookups do not
/// derive them per key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Geometry {
    /// `32 - K`: shifts an address to its chunk number.
    chunk_shift: u32,
    /// `32 - D` (extended layout only).
    direct_shift: u32,
    /// `X` and `2^X - 1` (extended layout only; `K` and 0 for D{K}R).
    x_bits: u32,
    x_mask: u32,
    /// `2^(32-K) - 1`: an address's offset inside its chunk.
    offset_mask: u32,
    /// `24 - K`: shifts an offset to its short (8-bit) start.
    short_shift: u32,
    /// `log2(align)`: shifts a chunk entry's base field to its word.
    base_shift: u32,
}

impl Geometry {
    fn new(config: DxrConfig) -> Self {
        let (k, d) = (config.k_bits, config.d_bits);
        Geometry {
            chunk_shift: 32 - k,
            direct_shift: if d == 0 { 0 } else { 32 - d },
            x_bits: k - d,
            x_mask: if d == 0 { 0 } else { (1 << (k - d)) - 1 },
            offset_mask: (1u32 << (32 - k)) - 1,
            short_shift: 24 - k,
            base_shift: config.align_words().trailing_zeros(),
        }
    }

    /// The range-table word a chunk entry's data starts at.
    #[inline(always)]
    fn base_of(self, entry: u32) -> usize {
        ((entry & BASE_MASK) as usize) << self.base_shift
    }

    /// The entry of a chunk of `format` (not a label) with size field
    /// `size` stored from word `base`, a multiple of the layout's `align`.
    #[inline(always)]
    fn chunk_entry(self, format: u32, size: u32, base: usize) -> u32 {
        let field = base >> self.base_shift;
        debug_assert!(format != FORMAT_LABEL && size <= SIZE_MASK && field <= BASE_MASK as usize);
        debug_assert_eq!(
            field << self.base_shift,
            base,
            "a chunk base off the align grid"
        );
        (format << FORMAT_SHIFT) | (size << SIZE_SHIFT) | field as u32
    }

    /// The words a chunk of `words` words occupies: rounded up to `align`,
    /// so that the next chunk's base stays on the grid.
    #[inline]
    fn stored_words(self, words: usize) -> usize {
        words.next_multiple_of(1 << self.base_shift)
    }

    /// The range-table words the base field can address.
    fn max_words(self) -> usize {
        (1usize << BASE_BITS) << self.base_shift
    }
}

#[cfg(test)]
mod tests;
