//! The DXR lookup snapshot and its searches: per key, and the batch
//! (chunk lookups grouped, the range searches prefetched ahead).

use super::*;
use crate::engine::Lookup;
use crate::engines::shared::prefetch;
use crate::labels::{Answer, LabelSlot};
use crate::prefix::Label;
use crate::storage::{Owned, Storage};

/// The DXR lookup snapshot (both layouts): what lookups read, in storage
/// `S`. Built and updated by [`DxrUpdater`].
pub struct Dxr<S: Storage = Owned> {
    pub(super) config: DxrConfig,
    pub(super) geometry: Geometry,
    /// Extended layout: block number per `D`-bit prefix (empty for D{K}R).
    pub(super) direct: S::Array<u16>,
    /// D{K}R: one entry per chunk. Extended: blocks of `2^X` entries.
    pub(super) ext: S::Array<u32>,
    /// The range table: chunks of u16 words, see the module docs.
    pub(super) ranges: S::Array<u16>,
    /// Label index → result; index 0 is the default route (or none).
    pub(super) results: S::Array<LabelSlot>,
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
    pub(super) fn lookup_masked<const EXTENDED: bool, const UNCHECKED: bool, O: Answer>(
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
pub(super) fn search(starts: &[u16], probe: u16) -> usize {
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
pub(super) fn search_window(ranges: &[u16], base: usize, n: usize, probe: u16) -> usize {
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
pub(super) fn search_steps(n: usize) -> usize {
    let mut len = n;
    let mut steps = 0;
    while len > 1 {
        len -= len / 2;
        steps += 1;
    }
    steps
}
