//! `dxr`: DXR, Zec's Direct-Range lookup for IPv4 (thesis 003, chapters 3–4;
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
//! results[label index] = Option<Label>   (index 0 = no route)
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
//! Memory accesses per lookup: D{K}R: one direct entry, then (if the chunk
//! has `n >= 2` ranges) `ceil(log2 n)` range words plus one label word for
//! long chunks, then the results table (small: one entry per label).
//! D{D}X{X}R: one more, to the direct table (`2^D x 2` bytes, cache resident).
//!
//! Limits (checked at build, reported as [`BuildError::Limit`]):
//! - the range table holds at most `2^22` words (8 MiB) — the base field;
//!   the error names the `K` values that would fit;
//! - at most `2^30` distinct labels (label entries use 30 bits);
//! - chunk sizes have no limit: sizes above 254 go to a header word
//!   (a chunk holds at most `2^(32-K) <= 65,536` ranges, so `n-1` fits it);
//! - `D <= 16`, so block numbers fit the u16 direct table.
//!
//! Updates ([`Fib::update`]) rebuild only the chunks a changed prefix covers,
//! from the reference table (thesis 3.5). Freed range-table space goes to
//! free lists by size (best fit, remainder split off); when free words exceed
//! a quarter of the range table (and 4,096 words) the engine is rebuilt from
//! the reference table, which compacts it, so the range table is never more
//! than 4/3 of its live size plus 4,096 words. Labels first seen in updates
//! are appended to the results table until that rebuild.

mod build;
mod stats;

use std::collections::{BTreeMap, HashMap};

use crate::engines::prefetch;
use crate::fib::{BuildError, EngineSpec, Fib};
use crate::prefix::{Label, Prefix};
use crate::rib::Rib;

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
/// The default layout, chosen by measurement (docs/BENCHMARKS.md, "DXR"):
/// with the grouped batch lookup D16X5R was the fastest on random keys (batch
/// and plain), is smaller than D20R (2.9 vs 4.9 MB on dfz-v4-nh) and no
/// slower on serialized keys.
pub const DEFAULT_LAYOUT: Layout = Layout {
    d_bits: 16,
    k_bits: 21,
};

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

/// Which DXR layout: `d_bits == 0` for the single-level D{K}R, otherwise
/// D{d}X{k-d}R.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Bits of the extended layout's first-level direct table (0: none).
    pub d_bits: u32,
    /// Address bits resolved by the direct (and extension) tables.
    pub k_bits: u32,
}

impl Layout {
    /// The spec string for this layout (`dxr:k=20`, `dxr:d=16,x=4`).
    pub fn spec(self) -> String {
        if self.d_bits == 0 {
            format!("dxr:k={}", self.k_bits)
        } else {
            format!("dxr:d={},x={}", self.d_bits, self.k_bits - self.d_bits)
        }
    }

    /// Reads a layout from `dxr`, `dxr:k=K`, `dxr:d=D,x=X` or `dxr:d=D,k=K`.
    pub fn from_spec(spec: &EngineSpec) -> Result<Self, BuildError> {
        spec.expect_only(&["k", "d", "x"])?;
        let k = spec.number("k", MIN_K..=MAX_K)?;
        let d = spec.number("d", MIN_D..=MAX_D)?;
        let x = spec.number("x", 1..=MAX_K - MIN_D)?;
        let Some(d_bits) = d else {
            if x.is_some() {
                return Err(spec.error("`x` needs `d` (the extended layout is d=D,x=X)".into()));
            }
            return Ok(k.map_or(DEFAULT_LAYOUT, |k_bits| Layout { d_bits: 0, k_bits }));
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
        Ok(Layout { d_bits, k_bits })
    }
}

/// The DXR engine (both layouts).
#[derive(Clone, Debug)]
pub struct Dxr {
    layout: Layout,
    /// `32 - K`: shifts an address to its chunk number.
    chunk_shift: u32,
    /// `32 - D` (extended layout only).
    direct_shift: u32,
    /// `X` and `2^X - 1` (extended layout only).
    x_bits: u32,
    x_mask: u32,
    /// `2^(32-K) - 1`: an address's offset inside its chunk.
    offset_mask: u32,
    /// `24 - K`: shifts an offset to its short (8-bit) start.
    short_shift: u32,
    /// Extended layout: block number per `D`-bit prefix (empty for D{K}R).
    direct: Vec<u16>,
    /// D{K}R: one entry per chunk. Extended: blocks of `2^X` entries.
    ext: Vec<u32>,
    /// The range table: chunks of u16 words, see the module docs.
    ranges: Vec<u16>,
    /// Label index → result; index 0 is "no route".
    results: Vec<Option<Label>>,
    /// Build and update state; lookups never touch it.
    state: build::State,
}

impl Fib<u32> for Dxr {
    fn name(&self) -> String {
        self.layout.spec()
    }

    fn memory_bytes(&self) -> usize {
        self.direct.len() * 2
            + self.ext.len() * 4
            + self.ranges.len() * 2
            + self.results.len() * std::mem::size_of::<Option<Label>>()
    }

    #[inline]
    fn lookup(&self, addr: u32) -> Option<Label> {
        let entry = self.ext[self.entry_index(addr)];
        self.results[self.resolve(entry, addr) as usize]
    }

    fn lookup_batch(&self, addrs: &[u32], out: &mut [Option<Label>]) {
        assert!(out.len() >= addrs.len(), "output slice shorter than input");
        self.lookup_batch_grouped::<GROUP, GROUPS_AHEAD, true>(addrs, &mut out[..addrs.len()]);
    }

    fn update(&mut self, rib: &Rib<u32>, changed: &[Prefix<u32>]) -> Result<(), BuildError> {
        self.update_chunks(rib, changed)
    }

    fn stats(&self) -> Vec<(String, String)> {
        self.dxr_stats().rows()
    }
}

/// Keys per group of [`Dxr::lookup_batch_grouped`], and how many groups
/// ahead their entries are prefetched (`GROUP * GROUPS_AHEAD` keys).
// PERF: A/B by on-CPU time (2^24 random keys, dfz-v4-nh, medians of 7-15
// interleaved runs, 2026-11-22; docs/BENCHMARKS.md, DXR, "Grouped batch
// lookup"): groups of 4 keys 4 groups ahead were the fastest on
// dxr:d=16,x=5 (317 Mlps; 8x2: 301; 16x2: 263; the former one-key sliding
// window of 16/32 keys: 266) and within noise of the best on dxr:k=20 (272
// vs 259-264); on dxr:k=16 8x2 was a little faster (109 vs 102, old window
// 87). The unchecked entry/results reads add ~8% (4x4 checked: 292 on
// d=16,x=5, 98 on k=16).
const GROUP: usize = 4;
/// See [`GROUP`].
const GROUPS_AHEAD: usize = 4;

impl Dxr {
    /// The layout.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// Index into `ext` of the entry for `addr`'s chunk. The extended layout
    /// always reads both levels (thesis 4.2): no branch on the first.
    #[inline(always)]
    fn entry_index(&self, addr: u32) -> usize {
        if self.layout.d_bits == 0 {
            (addr >> self.chunk_shift) as usize
        } else {
            let block = self.direct[(addr >> self.direct_shift) as usize] as usize;
            (block << self.x_bits) | ((addr >> self.chunk_shift) & self.x_mask) as usize
        }
    }

    /// The label index for `addr` given its chunk's `entry`.
    #[inline(always)]
    fn resolve(&self, entry: u32, addr: u32) -> u32 {
        let format = entry >> FORMAT_SHIFT;
        if format == FORMAT_LABEL {
            return entry & LABEL_MASK;
        }
        let mut n = ((entry >> SIZE_SHIFT) & SIZE_MASK) as usize;
        let mut base = (entry & BASE_MASK) as usize;
        if n == SIZE_ESCAPE as usize {
            n = self.ranges[base] as usize + 1;
            base += 1;
        }
        let offset = addr & self.offset_mask;
        let starts = &self.ranges[base..base + n];
        if format == FORMAT_SHORT {
            let probe = (((offset >> self.short_shift) << 8) | 0xff) as u16;
            return (starts[search(starts, probe)] & 0xff) as u32;
        }
        let i = search(starts, offset as u16);
        if format == FORMAT_LONG {
            self.ranges[base + n + i] as u32
        } else {
            let at = base + n + 2 * i;
            self.ranges[at] as u32 | (self.ranges[at + 1] as u32) << 16
        }
    }

    /// Batch lookup in groups of `G` keys, software-pipelined (thesis 4.2;
    /// "group prefetching"): the entries of group `g + AHEAD` are prefetched
    /// (and their indices kept, so the direct table is read once per key),
    /// then group `g` is resolved: its entries are read, keys resolved by
    /// their entry get their result at once (branch-free), and the others
    /// are gathered and binary-searched in lock-step, one step for all of
    /// them per round, so their dependent range-table loads overlap instead
    /// of serializing. The tail (fewer than `G` keys) uses [`Fib::lookup`].
    ///
    /// `UNCHECKED` reads the entry and results tables without bounds checks
    /// on the path every key takes; `false` is its safe twin (the tests
    /// compare them).
    fn lookup_batch_grouped<const G: usize, const AHEAD: usize, const UNCHECKED: bool>(
        &self,
        addrs: &[u32],
        out: &mut [Option<Label>],
    ) {
        let groups = addrs.len() / G;
        let mut ahead = [[0u32; G]; AHEAD];
        for (g, slot) in ahead.iter_mut().enumerate().take(groups) {
            self.prefetch_group(&addrs[g * G..][..G], slot);
        }
        for g in 0..groups {
            let indices = ahead[g % AHEAD];
            if g + AHEAD < groups {
                self.prefetch_group(&addrs[(g + AHEAD) * G..][..G], &mut ahead[g % AHEAD]);
            }
            self.resolve_group::<G, UNCHECKED>(
                &addrs[g * G..][..G],
                &indices,
                &mut out[g * G..][..G],
            );
        }
        let done = groups * G;
        for (addr, result) in addrs[done..].iter().zip(&mut out[done..]) {
            *result = self.lookup(*addr);
        }
    }

    /// Keeps the entry index of each of `addrs` in `indices` and prefetches
    /// the entry.
    #[inline(always)]
    fn prefetch_group<const G: usize>(&self, addrs: &[u32], indices: &mut [u32; G]) {
        for (slot, &addr) in indices.iter_mut().zip(addrs) {
            let at = self.entry_index(addr);
            prefetch(self.ext.as_ptr().wrapping_add(at));
            // `ext` has at most 2^24 entries (K <= 24), so indices fit u32.
            *slot = at as u32;
        }
    }

    /// Resolves one group: `indices` are the keys' entry indices.
    #[inline(always)]
    fn resolve_group<const G: usize, const UNCHECKED: bool>(
        &self,
        addrs: &[u32],
        indices: &[u32; G],
        out: &mut [Option<Label>],
    ) {
        let mut entries = [0u32; G];
        // Positions (in the group) of the keys that need a search.
        let mut todo = [0u8; G];
        let mut searches = 0;
        for j in 0..G {
            let at = indices[j] as usize;
            debug_assert!(at < self.ext.len());
            let entry = if UNCHECKED {
                // SAFETY: `at` comes from `entry_index`, which is always in
                // bounds: D{K}R indexes by the top K bits and `ext` has 2^K
                // entries; the extended layout's direct table holds only
                // numbers of blocks present in `ext` (build and update keep
                // it so). The debug_assert above checks it in tests.
                unsafe { *self.ext.get_unchecked(at) }
            } else {
                self.ext[at]
            };
            entries[j] = entry;
            let direct = entry >> FORMAT_SHIFT == FORMAT_LABEL;
            // Keys still to search get index 0's result for now.
            let label = if direct { entry & LABEL_MASK } else { 0 } as usize;
            debug_assert!(label < self.results.len());
            out[j] = if UNCHECKED {
                // SAFETY: label entries hold indices into `results` (build
                // and update add a label to `results` before any entry names
                // it, and never shrink it), and index 0 ("no route") always
                // exists. The debug_assert above checks it in tests.
                unsafe { *self.results.get_unchecked(label) }
            } else {
                self.results[label]
            };
            todo[searches] = j as u8;
            searches += !direct as usize;
        }
        if searches == 0 {
            return;
        }
        // Per search: first word, range count, current low end, probe.
        let mut base = [0u32; G];
        let mut len = [0u32; G];
        let mut count = [0u32; G];
        let mut low = [0u32; G];
        let mut probe = [0u16; G];
        let mut more = false;
        for k in 0..searches {
            let j = todo[k] as usize;
            let entry = entries[j];
            let mut n = (entry >> SIZE_SHIFT) & SIZE_MASK;
            let mut first = entry & BASE_MASK;
            if n == SIZE_ESCAPE {
                n = self.ranges[first as usize] as u32 + 1;
                first += 1;
            }
            let offset = addrs[j] & self.offset_mask;
            // Short chunks compare whole words (start8 << 8 | label8) with
            // key8 << 8 | 0xff; the others compare 16-bit starts.
            let short = ((offset >> self.short_shift) << 8) | 0xff;
            probe[k] = if entry >> FORMAT_SHIFT == FORMAT_SHORT {
                short
            } else {
                offset
            } as u16;
            base[k] = first;
            len[k] = n;
            count[k] = n;
            more |= n > 1;
        }
        // The same steps as [`search`], one per key per round; a finished
        // search (len 1) steps by 0, rereading its own word.
        while more {
            more = false;
            for k in 0..searches {
                let half = len[k] / 2;
                if self.ranges[(base[k] + low[k] + half) as usize] <= probe[k] {
                    low[k] += half;
                }
                len[k] -= half;
                more |= len[k] > 1;
            }
        }
        for k in 0..searches {
            let j = todo[k] as usize;
            let (first, n, i) = (base[k] as usize, count[k] as usize, low[k] as usize);
            let label = match entries[j] >> FORMAT_SHIFT {
                FORMAT_SHORT => (self.ranges[first + i] & 0xff) as u32,
                FORMAT_LONG => self.ranges[first + n + i] as u32,
                _ => {
                    let at = first + n + 2 * i;
                    self.ranges[at] as u32 | (self.ranges[at + 1] as u32) << 16
                }
            };
            out[j] = self.results[label as usize];
        }
    }
}

/// The index of the last of `starts` that is `<= probe`. `starts[0]` is the
/// chunk's first range, at offset 0, so it always qualifies.
///
/// Branch-free: the loop runs `ceil(log2 n)` times for every key, which is
/// the step count [`DxrStats`] reports.
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

/// Build-time bookkeeping kept for updates (not part of the lookup
/// structures and not counted in `memory_bytes`).
#[derive(Clone, Debug, Default)]
struct FreeList {
    /// Free runs of range-table words by length.
    by_len: BTreeMap<u32, Vec<u32>>,
    /// Total free words.
    words: usize,
}

/// Content hash → entry (chunks) or block number (extension blocks).
type DedupMap<V> = HashMap<u64, V>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_finds_last_start_not_above_probe() {
        let starts = [0u16, 10, 20, 30, 40];
        for probe in 0..60u16 {
            let want = starts.iter().rposition(|&s| s <= probe).unwrap();
            assert_eq!(search(&starts, probe), want, "probe {probe}");
        }
        assert_eq!(search(&[0], 7), 0);
        for n in 1..300u16 {
            let starts: Vec<u16> = (0..n).map(|i| i * 3).collect();
            for probe in 0..n * 3 + 2 {
                let want = starts.iter().rposition(|&s| s <= probe).unwrap();
                assert_eq!(search(&starts, probe), want);
            }
        }
        assert_eq!(search_steps(1), 0);
        assert_eq!(search_steps(2), 1);
        assert_eq!(search_steps(5), 3);
        assert_eq!(search_steps(256), 8);
    }

    /// The grouped batch lookup, unchecked and its checked twin, agrees with
    /// the plain lookup in every format (short, long, wide, escaped sizes),
    /// for group sizes that leave a tail.
    #[test]
    fn grouped_batch_matches_lookup_checked_and_unchecked() {
        use rand::rngs::SmallRng;
        use rand::{Rng, SeedableRng};
        let mut rng = SmallRng::seed_from_u64(7);
        let mut rib = Rib::new();
        rib.insert(Prefix::new_masked(0, 0), 1);
        for _ in 0..4000 {
            let plen = rng.random_range(8..=32u8);
            rib.insert(
                Prefix::new_masked(rng.random(), plen),
                rng.random_range(0..50),
            );
        }
        // More than 2^16 distinct labels, one range each: wide chunks.
        for i in 0..70_000u32 {
            rib.insert(Prefix::new_masked(0x2000_0000 + i * 5, 32), 1000 + i);
        }
        // 300 /32s in one /16: a chunk bigger than the size field (escape).
        for i in 0..300u32 {
            rib.insert(Prefix::new_masked(0x0a0b_0000 | (i * 7), 32), i % 3 + 2);
        }
        let mut addrs: Vec<u32> = (0..20_001).map(|_| rng.random()).collect();
        addrs.extend(rib.ranges().iter().map(|r| r.first));
        addrs.extend((0..3000u32).map(|i| 0x0a0b_0000 | i));
        for layout in [(0, 16), (0, 20), (16, 20), (12, 18)] {
            let layout = Layout {
                d_bits: layout.0,
                k_bits: layout.1,
            };
            let dxr = Dxr::with_layout(layout, &rib).unwrap();
            let stats = dxr.dxr_stats();
            assert!(
                stats.chunks[1] > 0 && stats.chunks[2] > 0,
                "{layout:?} {stats:?}"
            );
            let want: Vec<_> = addrs.iter().map(|&a| dxr.lookup(a)).collect();
            let mut checked = vec![None; addrs.len()];
            let mut unchecked = vec![None; addrs.len()];
            dxr.lookup_batch_grouped::<4, 4, false>(&addrs, &mut checked);
            dxr.lookup_batch_grouped::<GROUP, GROUPS_AHEAD, true>(&addrs, &mut unchecked);
            assert_eq!(checked, want, "{layout:?} checked");
            assert_eq!(unchecked, want, "{layout:?} unchecked");
            dxr.lookup_batch_grouped::<7, 3, true>(&addrs, &mut unchecked);
            assert_eq!(unchecked, want, "{layout:?} 7x3");
        }
    }

    #[test]
    fn prefetch_accepts_any_address() {
        let table = [1u32; 4];
        prefetch(table.as_ptr().wrapping_add(1 << 40));
        prefetch(std::ptr::null::<u8>());
    }

    #[test]
    fn layouts_parse() {
        let parse = |text: &str| Layout::from_spec(&EngineSpec::parse(text).unwrap());
        assert_eq!(parse("dxr").unwrap(), DEFAULT_LAYOUT);
        assert_eq!(
            parse("dxr:k=16").unwrap(),
            Layout {
                d_bits: 0,
                k_bits: 16
            }
        );
        assert_eq!(
            parse("dxr:d=12,x=8").unwrap(),
            Layout {
                d_bits: 12,
                k_bits: 20
            }
        );
        assert_eq!(
            parse("dxr:d=16,k=22").unwrap(),
            Layout {
                d_bits: 16,
                k_bits: 22
            }
        );
        assert_eq!(parse("dxr:d=16,x=6").unwrap().spec(), "dxr:d=16,x=6");
        for bad in [
            "dxr:k=25",
            "dxr:x=4",
            "dxr:d=12",
            "dxr:d=12,x=2",
            "dxr:d=16,x=9",
            "dxr:d=12,x=4,k=17",
            "dxr:q=1",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
