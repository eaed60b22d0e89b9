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
//! [`Storage`]. The updater ([`DxrUpdater`], in `build.rs`) holds what
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
//!   [`Updater::config`](crate::Updater::config) names it, as do saved
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
mod stats;

use std::fmt;

use crate::engine::Layout;
use crate::engine::{BuildError, EngineConfig, Lookup};
use crate::engines::shared::prefetch;
use crate::labels::{Answer, LabelSlot};
use crate::prefix::Label;
use crate::spec::EngineSpec;
use crate::storage::{Owned, Storage};

pub use build::DxrUpdater;
pub use stats::DxrStats;

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

/// The DXR lookup snapshot (both layouts): what lookups read, in storage
/// `S`. Built and updated by [`DxrUpdater`].
pub struct Dxr<S: Storage = Owned> {
    config: DxrConfig,
    geometry: Geometry,
    /// Extended layout: block number per `D`-bit prefix (empty for D{K}R).
    direct: S::Array<u16>,
    /// D{K}R: one entry per chunk. Extended: blocks of `2^X` entries.
    ext: S::Array<u32>,
    /// The range table: chunks of u16 words, see the module docs.
    ranges: S::Array<u16>,
    /// Label index → result; index 0 is the default route (or none).
    results: S::Array<LabelSlot>,
}

impl<S: Storage> Clone for Dxr<S> {
    fn clone(&self) -> Self {
        Dxr {
            config: self.config,
            geometry: self.geometry,
            direct: self.direct.clone(),
            ext: self.ext.clone(),
            ranges: self.ranges.clone(),
            results: self.results.clone(),
        }
    }

    /// Reuses this snapshot's arrays (up to 64 MiB of chunk entries)
    /// instead of allocating and faulting in new pages.
    fn clone_from(&mut self, source: &Self) {
        self.config = source.config;
        self.geometry = source.geometry;
        self.direct.clone_from(&source.direct);
        self.ext.clone_from(&source.ext);
        self.ranges.clone_from(&source.ranges);
        self.results.clone_from(&source.results);
    }
}

impl<S: Storage> fmt::Debug for Dxr<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dxr")
            .field("config", &self.config)
            .field("direct_entries", &self.direct.len())
            .field("ext_entries", &self.ext.len())
            .field("range_words", &self.ranges.len())
            .field("labels", &self.results.len().saturating_sub(1))
            .finish()
    }
}

impl<S: Storage> Lookup<u32> for Dxr<S> {
    #[inline(always)]
    fn lookup(&self, addr: u32) -> Option<Label> {
        self.slot(addr).get()
    }

    #[inline]
    fn lookup_batch(&self, addrs: &[u32], out: &mut [Option<Label>]) {
        self.batch(addrs, out);
    }

    #[inline]
    fn lookup_batch_words(&self, addrs: &[u32], out: &mut [u64]) {
        self.batch(addrs, out);
    }

    fn memory_bytes(&self) -> usize {
        self.direct.len() * 2
            + self.ext.len() * 4
            + self.ranges.len() * 2
            + self.results.len() * std::mem::size_of::<LabelSlot>()
    }
}

/// Slices shorter than this are looked up key by key: the masked pass
/// costs more than it saves on so few keys.
// PERF: lookup_batch / a lookup loop over the same n-key slices, dxr:k=20,
// random keys (dxr_bench --short-slices --rounds 5, Intel machine,
// docs/bench/dxr.md): with the cut at 4, 0.65-0.68 at n=4,
// 0.66-0.71 at 5, 0.77-0.85 at 6, 0.89-1.12 at 8, 1.12-1.20 at 12; with
// the cut at 8 (or 10), 1.05 at 4, 1.11-1.13 at 5, 1.17-1.18 at 6. At n=8 the
// masked pass wins on announced keys (fibkit bench bursts of 8 against a
// cut at 10: 1.21-1.48x against 1.05-1.16x the per-key loop), so 8 stays
// masked. (An earlier run on a loaded AMD machine had put the cut at 4.)
const SHORT_SLICE: usize = 8;
/// Keys per group of [`Dxr::lookup_masked`]: the width of the mask that
/// marks the keys needing a search.
const GROUP: usize = 64;
/// How many keys ahead the batch lookup prefetches chunk entries (and, in
/// the extended layout, twice as far ahead, direct-table entries).
// PERF: A/B with `fibkit bench ... --patterns rnd --modes batch --runs 3`
// (dfz-v4-nh; docs/bench/dxr.md, "Masked
// batch lookup"): 32 and 16 keys were within noise (dxr:k=21 476 vs 473,
// dxr 406 vs 396 Mlps), 48 no better; prefetching direct entries 2x ahead
// added ~5% on dxr:d=16,x=5 (414-423 vs 386-406). Rejected: prefetching
// the range-table word of every key (300 vs 390 on dxr, 338 vs 444 on
// dxr:k=20) and of the marked keys a group early (no gain).
const PREFETCH_DISTANCE: usize = 32;

impl<S: Storage> Dxr<S> {
    /// The layout.
    pub fn config(&self) -> DxrConfig {
        self.config
    }

    /// The results-table slot of `addr`'s longest match.
    #[inline(always)]
    fn slot(&self, addr: u32) -> LabelSlot {
        let entry = self.ext[self.entry_index(addr)];
        self.results[self.resolve(entry, addr) as usize]
    }

    /// The batch lookup for either answer type: key by key for a few keys,
    /// else [`Dxr::lookup_masked`] for the layout.
    #[inline]
    fn batch<O: Answer>(&self, addrs: &[u32], out: &mut [O]) {
        assert!(out.len() >= addrs.len(), "output slice shorter than input");
        let out = &mut out[..addrs.len()];
        if addrs.len() < SHORT_SLICE {
            for (addr, result) in addrs.iter().zip(out.iter_mut()) {
                *result = O::from_slot(self.slot(*addr));
            }
        } else if self.config.is_extended() {
            self.lookup_masked::<true, true, O>(addrs, out);
        } else {
            self.lookup_masked::<false, true, O>(addrs, out);
        }
    }

    /// Index into `ext` of the entry for `addr`'s chunk. The extended layout
    /// always reads both levels (thesis 4.2): no branch on the first.
    #[inline(always)]
    fn entry_index(&self, addr: u32) -> usize {
        if self.config.is_extended() {
            self.entry_index_in::<true, false>(addr)
        } else {
            self.entry_index_in::<false, false>(addr)
        }
    }

    /// [`Dxr::entry_index`] for a layout known at compile time, so the
    /// batch loop has no layout branch. `UNCHECKED` reads the direct table
    /// without a bounds check.
    #[inline(always)]
    fn entry_index_in<const EXTENDED: bool, const UNCHECKED: bool>(&self, addr: u32) -> usize {
        let g = &self.geometry;
        if !EXTENDED {
            return (addr >> g.chunk_shift) as usize;
        }
        let at = (addr >> g.direct_shift) as usize;
        let block = if UNCHECKED {
            debug_assert!(at < self.direct.len());
            // SAFETY: the extended layout's direct table has 2^D entries
            // (the updater builds one per D-bit prefix and never resizes
            // it) and `at` is an address shifted right by 32 - D.
            // Exercised against the checked twin by
            // `masked_batch_matches_lookup_checked_and_unchecked`.
            unsafe { *self.direct.get_unchecked(at) }
        } else {
            self.direct[at]
        } as usize;
        (block << g.x_bits) | ((addr >> g.chunk_shift) & g.x_mask) as usize
    }

    /// The label index for `addr` given its chunk's `entry`.
    #[inline(always)]
    fn resolve(&self, entry: u32, addr: u32) -> u32 {
        if is_label(entry) {
            return label_of(entry);
        }
        self.search_chunk(entry, addr)
    }

    /// The label index for `addr` in the chunk of ranges `entry` points to.
    #[inline(always)]
    fn search_chunk(&self, entry: u32, addr: u32) -> u32 {
        let ranges = &self.ranges[..];
        let mut n = size_of(entry) as usize;
        let mut base = self.geometry.base_of(entry);
        if n == SIZE_ESCAPE as usize {
            n = ranges[base] as usize + 1;
            base += 1;
        }
        let offset = addr & self.geometry.offset_mask;
        let format = format_of(entry);
        if format == FORMAT_SHORT {
            let probe = (((offset >> self.geometry.short_shift) << 8) | 0xff) as u16;
            return (ranges[base + search_window(ranges, base, n, probe)] & 0xff) as u32;
        }
        let i = search_window(ranges, base, n, offset as u16);
        if format == FORMAT_LONG {
            ranges[base + n + i] as u32
        } else {
            let at = base + n + 2 * i;
            ranges[at] as u32 | (ranges[at + 1] as u32) << 16
        }
    }

    /// The batch lookup (thesis 4.2, "keep many lookups in flight"), in two
    /// passes per group of [`GROUP`] keys, for slices of any length.
    ///
    /// Pass one is branch-free and does the same few steps for every key:
    /// read the chunk entry (in long slices prefetched [`PREFETCH_DISTANCE`]
    /// keys ahead, its direct-table entry twice as far), store the result of
    /// a label entry, or slot 0's result as a placeholder, and set the
    /// key's bit in a mask when the entry points to ranges instead. Pass two
    /// runs one group later, when those entries have long arrived, and
    /// resolves only the marked keys (5-8% on dfz-v4-nh) with
    /// [`Dxr::search_chunk`]. The last group may be partial, and a slice
    /// shorter than a group is one partial group: its pass two follows its
    /// pass one at once, so a burst of 8 keys issues its 8 entry reads
    /// back to back before any branch that depends on them.
    ///
    /// Why this shape: on random keys the entry loads miss L1 and L2, and
    /// what limits throughput is how many of them the core keeps in flight.
    /// A branch on a freshly loaded entry (the plain loop's "label or
    /// search?") mispredicts on the rare search keys and throws away every
    /// load issued after it; extra stores per key (a list of keys to
    /// search) fill the store queue while they wait for the load. The mask
    /// is kept in a register and its loop runs a group late, so its
    /// branches depend on loads that have completed.
    ///
    /// `UNCHECKED` drops the bounds checks on the reads every key makes;
    /// `false` is its safe twin (the tests compare them).
    #[inline(never)]
    fn lookup_masked<const EXTENDED: bool, const UNCHECKED: bool, O: Answer>(
        &self,
        addrs: &[u32],
        out: &mut [O],
    ) {
        debug_assert_eq!(addrs.len(), out.len());
        // The previous group's start and the keys of it still to resolve.
        let mut pending = (0, 0u64);
        let mut start = 0;
        // Full groups whose prefetch window (2 x distance, for the direct
        // table) lies inside `addrs`.
        while start + GROUP + 2 * PREFETCH_DISTANCE <= addrs.len() {
            let group = |from: usize| -> &[u32; GROUP] {
                addrs[from..from + GROUP].try_into().expect("GROUP keys")
            };
            let results: &mut [O; GROUP] = (&mut out[start..start + GROUP])
                .try_into()
                .expect("GROUP results");
            let marked = self.first_pass_prefetching::<EXTENDED, UNCHECKED, O>(
                group(start),
                group(start + PREFETCH_DISTANCE),
                group(start + 2 * PREFETCH_DISTANCE),
                results,
            );
            self.resolve_marked::<EXTENDED, O>(addrs, out, pending.0, pending.1);
            pending = (start, marked);
            start += GROUP;
        }
        // The last keys (all of a short slice), in groups that may be
        // partial.
        while start < addrs.len() {
            let end = addrs.len().min(start + GROUP);
            // A burst has no later keys to prefetch for: asking for every
            // entry of the group before reading any keeps them all in
            // flight at once. (Not A/B-measured on its own; the burst
            // figures with it are in docs/bench/dxr.md, "DXR: snapshot
            // split, bursts and update bounds".)
            for &addr in &addrs[start..end] {
                let at = self.entry_index_in::<EXTENDED, UNCHECKED>(addr);
                prefetch(self.ext.as_ptr().wrapping_add(at));
            }
            let marked =
                self.first_pass::<EXTENDED, UNCHECKED, O>(&addrs[start..end], &mut out[start..end]);
            self.resolve_marked::<EXTENDED, O>(addrs, out, pending.0, pending.1);
            pending = (start, marked);
            start = end;
        }
        self.resolve_marked::<EXTENDED, O>(addrs, out, pending.0, pending.1);
    }

    /// Pass one of [`Dxr::lookup_masked`] over a full group of `keys`,
    /// prefetching the chunk entries of `near` (the keys
    /// [`PREFETCH_DISTANCE`] further on) and, in the extended layout, the
    /// direct entries of `far` (twice as far): stores every result a label
    /// entry gives and returns the mask of the keys that need a search.
    #[inline(always)]
    fn first_pass_prefetching<const EXTENDED: bool, const UNCHECKED: bool, O: Answer>(
        &self,
        keys: &[u32; GROUP],
        near: &[u32; GROUP],
        far: &[u32; GROUP],
        out: &mut [O; GROUP],
    ) -> u64 {
        let mut marked = 0u64;
        for j in 0..GROUP {
            if EXTENDED {
                let at = (far[j] >> self.geometry.direct_shift) as usize;
                prefetch(self.direct.as_ptr().wrapping_add(at));
            }
            let at = self.entry_index_in::<EXTENDED, UNCHECKED>(near[j]);
            prefetch(self.ext.as_ptr().wrapping_add(at));
            marked |= (self.mark::<EXTENDED, UNCHECKED, O>(keys[j], &mut out[j]) as u64) << j;
        }
        marked
    }

    /// Pass one of [`Dxr::lookup_masked`] over at most [`GROUP`] `keys`,
    /// without prefetch.
    #[inline(always)]
    fn first_pass<const EXTENDED: bool, const UNCHECKED: bool, O: Answer>(
        &self,
        keys: &[u32],
        out: &mut [O],
    ) -> u64 {
        debug_assert!(keys.len() <= GROUP && keys.len() == out.len());
        let mut marked = 0u64;
        for (j, (&addr, result)) in keys.iter().zip(out.iter_mut()).enumerate() {
            marked |= (self.mark::<EXTENDED, UNCHECKED, O>(addr, result) as u64) << j;
        }
        marked
    }

    /// One key of pass one: reads its chunk entry and stores the result if
    /// the entry holds a label, else slot 0's result as a placeholder; returns
    /// whether the key needs a search.
    #[inline(always)]
    fn mark<const EXTENDED: bool, const UNCHECKED: bool, O: Answer>(
        &self,
        addr: u32,
        result: &mut O,
    ) -> bool {
        let at = self.entry_index_in::<EXTENDED, UNCHECKED>(addr);
        let entry = if UNCHECKED {
            debug_assert!(at < self.ext.len());
            // SAFETY: D{K}R indexes by the top K bits and `ext` has 2^K
            // entries; the extended layout's direct table holds only
            // numbers of blocks present in `ext` (build and update keep it
            // so). The debug_assert checks it in tests.
            unsafe { *self.ext.get_unchecked(at) }
        } else {
            self.ext[at]
        };
        let is_label = is_label(entry);
        // Keys to search get index 0's result for now (a select, not a
        // branch).
        let label = if is_label { label_of(entry) } else { 0 } as usize;
        *result = O::from_slot(if UNCHECKED {
            debug_assert!(label < self.results.len());
            // SAFETY: label entries hold indices into `results` (the
            // updater adds a label to `results` before any entry names it,
            // and never shrinks it), and index 0 (the default route) always
            // exists. The debug_assert checks it in tests.
            unsafe { *self.results.get_unchecked(label) }
        } else {
            self.results[label]
        });
        !is_label
    }

    /// Pass two: resolves the keys of the group at `start` whose bits are
    /// set in `marked`.
    #[inline(always)]
    fn resolve_marked<const EXTENDED: bool, O: Answer>(
        &self,
        addrs: &[u32],
        out: &mut [O],
        start: usize,
        marked: u64,
    ) {
        let mut marked = marked;
        while marked != 0 {
            let at = start + marked.trailing_zeros() as usize;
            marked &= marked - 1;
            let addr = addrs[at];
            let entry = self.ext[self.entry_index_in::<EXTENDED, false>(addr)];
            out[at] = O::from_slot(self.results[self.search_chunk(entry, addr) as usize]);
        }
    }
}

/// The index of the last of `starts` that is `<= probe`. `starts[0]` is the
/// chunk's first range, at offset 0, so it always qualifies.
///
/// The thesis' binary search (section 3.4). Branch-free: the loop runs
/// `ceil(log2 n)` times for every key, the step count [`DxrStats`] reports
/// (Table 3.1). Lookups use [`search_window`], which ends in a count; this
/// one serves the last chunks of the table, where no full window exists.
#[inline(always)]
fn search(starts: &[u16], probe: u16) -> usize {
    let mut low = 0;
    let mut len = starts.len();
    while len > 1 {
        let half = len / 2;
        // Rejected: unchecked indexing here measured no faster (dxr_bench
        // --throughput, k=16 and k=20, within run-to-run noise).
        if starts[low + half] <= probe {
            low += half;
        }
        len -= half;
    }
    low
}

/// Words [`search_window`] compares at once.
const WINDOW: usize = 16;

/// The index (from `base`) of the last of the `n` words at `ranges[base..]`
/// that is `<= probe`; the first always qualifies. Halves the run until it
/// fits [`WINDOW`] words, then counts the qualifying words of the window
/// branch-free (the compiler turns the count into vector compares), so a
/// chunk of up to 16 ranges costs one dependent load instead of up to four.
/// The window may read words past the chunk (other chunks' words, masked
/// out by `i < len`); near the end of the table, where it cannot, it falls
/// back to [`search`].
// PERF: dxr:k=20 batch 300 -> 431 Mlps, dxr:d=16,x=5 273 -> 326 with the
// masked batch lookup (fibkit bench, rnd); the plain
// loop moved within noise.
#[inline(always)]
fn search_window(ranges: &[u16], base: usize, n: usize, probe: u16) -> usize {
    let mut low = base;
    let mut len = n;
    while len > WINDOW {
        let half = len / 2;
        if ranges[low + half] <= probe {
            low += half;
        }
        len -= half;
    }
    match ranges.get(low..low + WINDOW) {
        Some(window) => {
            let window: &[u16; WINDOW] = window.try_into().expect("WINDOW words");
            // The chunk's words are sorted, so among its `len` words those
            // `<= probe` come first: their count is the run of trailing
            // ones of `below & in_chunk`.
            let in_chunk = (1u32 << len) - 1;
            low - base + (words_at_most(window, probe) & in_chunk).trailing_ones() as usize - 1
        }
        // The last chunks of the table: no full window to read.
        None => low - base + search(&ranges[low..low + len], probe),
    }
}

/// Bit `i` set when `window[i] <= probe`: SSE2 compares on x86-64 (part of
/// the baseline, so always available).
// PERF: a lane-wise count with an `i < len` mask compiled to ~100
// instructions (scalar mask building, software popcount), a portable
// bit-building loop to ~45 mixed scalar/vector ones; this is ~12.
// dxr:k=20 rnd batch (fibkit bench, dfz-v4-nh, one sitting):
// 380-420 Mlps with the lane count, 476-491 with the bit loop, 490-526
// with this (docs/bench/dxr.md, "Masked batch lookup").
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn words_at_most(window: &[u16; WINDOW], probe: u16) -> u32 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpgt_epi16, _mm_loadu_si128, _mm_movemask_epi8, _mm_packs_epi16,
        _mm_set1_epi16, _mm_xor_si128,
    };
    const _: () = assert!(WINDOW == 16, "two 8-lane halves");
    let ptr = window.as_ptr() as *const __m128i;
    // SAFETY: SSE2 is part of the x86-64 baseline, so every x86-64 CPU
    // runs these intrinsics; `window` is 16 u16 = 32 readable bytes, so
    // both unaligned 16-byte loads stay inside it (`_mm_loadu_si128` needs
    // no alignment). Exercised by `search_window_agrees_with_binary_search`.
    let above = unsafe {
        let (low_half, high_half) = (_mm_loadu_si128(ptr), _mm_loadu_si128(ptr.add(1)));
        // SSE2 compares signed words; flipping the sign bit of both sides
        // turns it into the unsigned compare.
        let flip = _mm_set1_epi16(i16::MIN);
        let probe = _mm_xor_si128(_mm_set1_epi16(probe as i16), flip);
        let above_low = _mm_cmpgt_epi16(_mm_xor_si128(low_half, flip), probe);
        let above_high = _mm_cmpgt_epi16(_mm_xor_si128(high_half, flip), probe);
        // Words to bytes (0 and -1 saturate to themselves), one bit each.
        _mm_movemask_epi8(_mm_packs_epi16(above_low, above_high)) as u32
    };
    !above & 0xffff
}

/// Bit `i` set when `window[i] <= probe` (portable version).
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn words_at_most(window: &[u16; WINDOW], probe: u16) -> u32 {
    let mut below = 0u32;
    for (i, &word) in window.iter().enumerate() {
        below |= ((word <= probe) as u32) << i;
    }
    below
}

/// Steps [`search`] takes on a chunk of `n` ranges.
fn search_steps(n: usize) -> usize {
    let mut len = n;
    let mut steps = 0;
    while len > 1 {
        len -= len / 2;
        steps += 1;
    }
    steps
}

#[cfg(test)]
mod tests;
