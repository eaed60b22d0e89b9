//! The AVX-512 batch lookup of `dxr6`: the keys of a group that do not
//! end at their root entry walk the node entries together, eight per
//! vector, one gather per vector and level, and the leaves of a vector's
//! lanes are searched together by gathered binary-search steps.
//!
//! Why: on keys inside announced prefixes a `dxr6` lookup passes the root
//! and one to six node entries before its leaf (on `dfz-v6-nh`: one node
//! for half of them, two for a quarter, three for a fifth), and the
//! portable batch (`Dxr6::lookup_batch_portable`) pays for each key's step
//! in scalar bookkeeping: a 128-bit shift by the node's stride, the child
//! index, the kind test, a prefetch. Here eight lanes take a step in a few
//! vector instructions, and one masked gather issues the next read of
//! every lane still at a node. The root entry is still read key by key:
//! random keys nearly all end there, where a scalar read and test beat
//! loading the keys into vectors. Measured on `dfz-v6-nh`
//! (docs/bench/dxr6.md, "dxr6 with AVX-512"): about 2x the portable batch
//! on announced keys and 1.2x on random public keys.
//!
//! Each lane keeps the address bits after its depth, left-aligned, as two
//! 64-bit halves (`hi`, `lo`): a node's child index is the top `stride`
//! bits of `hi`, and a step shifts the pair left by the stride. Every
//! gathered index is clamped to the last entry, so a gather reads inside
//! the entries whatever they hold; the build (and an image's validation)
//! keeps every node table inside the entries, so the clamp never changes
//! an answer.

use std::arch::x86_64::*;

use super::search::LINE_WORDS;
use super::{
    is_label, label_of, Dxr6, Walk, KIND_NODE, KIND_SHIFT, LABEL_MASK, LEAF_BIT, LINE_MASK,
    NODE_BASE_MASK, OFFSET_MASK, OFFSET_SHIFT, STARTS_MASK, STARTS_SHIFT, STRIDE_MASK,
    STRIDE_SHIFT, WIDE_LABELS_BIT, WIDTH_SHIFT,
};
use crate::engines::shared::wide::WideAnswer;
use crate::labels::LabelSlot;
use crate::storage::Storage;

/// Keys per vector: 64-bit lanes of a 512-bit register.
const LANES: usize = 8;

/// Keys per group: four vectors.
const GROUP_KEYS: usize = 4 * LANES;

/// Whether this CPU runs [`Dxr6::lookup_batch_wide`] (AVX-512 F and BW);
/// `std` caches the answer, so a call costs a load and a test.
#[inline]
pub(super) fn available() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
}

/// The walks of one vector of keys.
#[derive(Clone, Copy)]
struct Lanes {
    /// The entry each lane has reached (zero-extended to 64 bits).
    entry: __m512i,
    /// Address bits after the entry's depth, left-aligned: high half.
    hi: __m512i,
    /// The low half.
    lo: __m512i,
}

impl Lanes {
    /// Every lane at entry 0 with no address bits.
    #[target_feature(enable = "avx512f")]
    fn zero() -> Lanes {
        let zero = _mm512_setzero_si512();
        Lanes {
            entry: zero,
            hi: zero,
            lo: zero,
        }
    }
}

impl<S: Storage> Dxr6<S> {
    /// [`Lookup::lookup_batch`](crate::engine::Lookup::lookup_batch) with
    /// AVX-512: groups of [`GROUP_KEYS`] keys (fewer for a shorter slice).
    ///
    /// # Safety
    /// The CPU must have AVX-512 F and BW ([`available`]).
    #[target_feature(enable = "avx512f,avx512bw")]
    pub(super) unsafe fn lookup_batch_wide<T: WideAnswer>(&self, addrs: &[u128], out: &mut [T]) {
        debug_assert!(out.len() >= addrs.len());
        // PERF: groups of four vectors (32 keys): two measured 13% slower
        // on announced keys, eight no faster (docs/bench/dxr6.md, "dxr6
        // with AVX-512").
        if addrs.len() <= LANES {
            self.wide_burst(addrs, out);
            return;
        }
        for (keys, out) in addrs.chunks(GROUP_KEYS).zip(out.chunks_mut(GROUP_KEYS)) {
            self.wide_group(keys, out);
        }
    }

    /// Looks up at most eight keys with their root entries gathered: a
    /// burst this short has no group to amortise [`Self::wide_group`]'s
    /// per-key root pass and its position arrays over, and measured 1.8x
    /// faster this way on announced keys (0.85x on random ones;
    /// docs/bench/dxr6.md, "dxr6 with AVX-512").
    #[target_feature(enable = "avx512f,avx512bw")]
    fn wide_burst<T: WideAnswer>(&self, keys: &[u128], out: &mut [T]) {
        debug_assert!(keys.len() <= LANES && out.len() >= keys.len());
        let entries = self.entries.as_ptr() as *const i32;
        let last_entry = _mm512_set1_epi64(self.entries.len() as i64 - 1);
        let root_bits = self.root_bits & 31;
        let (hi, lo) = load_keys(keys, 0);
        let root = _mm512_min_epu64(
            _mm512_srlv_epi64(hi, _mm512_set1_epi64(64 - root_bits as i64)),
            last_entry,
        );
        // SAFETY: every index is at most the last entry (the clamp above);
        // the scale 4 matches the u32 entries.
        let entry = unsafe { _mm512_i64gather_epi32::<4>(root, entries) };
        let (hi, lo) = shift_left(hi, lo, _mm512_set1_epi64(root_bits as i64));
        let mut lanes = [Lanes {
            entry: _mm512_cvtepu32_epi64(entry),
            hi,
            lo,
        }];
        // SAFETY: this function enables AVX-512 F and BW.
        unsafe {
            self.walk(&mut lanes);
            self.finish_wide(&lanes[0], &mut out[..keys.len()]);
        }
    }

    /// Rounds of one node level for every lane still at a node, until
    /// every lane is at a label or leaf entry.
    ///
    /// # Safety
    /// The CPU must have AVX-512 F and BW; the callers are functions that
    /// enable them.
    // PERF: `inline(always)`, so that the lanes stay in registers across
    // the rounds. A `target_feature` function cannot be `inline(always)`,
    // and LLVM kept this one (and `finish_wide`) a call, with `vzeroupper`
    // and the vectors spilled around it; without the attribute it is
    // inlined into callers that enable the features.
    #[inline(always)]
    unsafe fn walk<const V: usize>(&self, lanes: &mut [Lanes; V]) {
        // SAFETY: the caller enables AVX-512 F and BW (the contract
        // above); every memory access is bounded as its comment says.
        unsafe {
            let entries = self.entries.as_ptr() as *const i32;
            let last_entry = _mm512_set1_epi64(self.entries.len() as i64 - 1);
            let node_kind = _mm512_set1_epi64(KIND_NODE as i64);
            let stride_mask = _mm512_set1_epi64(STRIDE_MASK as i64);
            let base_mask = _mm512_set1_epi64(NODE_BASE_MASK as i64);
            let one = _mm512_set1_epi64(1);
            let sixty_four = _mm512_set1_epi64(64);
            loop {
                let mut at_node = [0u8; V];
                for (v, lane) in lanes.iter().enumerate() {
                    at_node[v] = _mm512_cmpeq_epi64_mask(
                        _mm512_srli_epi64::<KIND_SHIFT>(lane.entry),
                        node_kind,
                    );
                }
                if at_node.iter().all(|&m| m == 0) {
                    break;
                }
                for (v, lane) in lanes.iter_mut().enumerate() {
                    let nodes = at_node[v];
                    let stride = _mm512_add_epi64(
                        _mm512_and_si512(
                            _mm512_srli_epi64::<STRIDE_SHIFT>(lane.entry),
                            stride_mask,
                        ),
                        one,
                    );
                    let child = _mm512_add_epi64(
                        _mm512_and_si512(lane.entry, base_mask),
                        _mm512_srlv_epi64(lane.hi, _mm512_sub_epi64(sixty_four, stride)),
                    );
                    let child = _mm512_min_epu64(child, last_entry);
                    // Sound: every index is at most the last entry (the
                    // clamp above); the scale 4 matches the u32 entries; lanes
                    // outside `nodes` read nothing.
                    let next = _mm512_mask_i64gather_epi32::<4>(
                        _mm256_setzero_si256(),
                        nodes,
                        child,
                        entries,
                    );
                    let (hi, lo) = shift_left(lane.hi, lane.lo, stride);
                    *lane = Lanes {
                        entry: _mm512_mask_mov_epi64(
                            lane.entry,
                            nodes,
                            _mm512_cvtepu32_epi64(next),
                        ),
                        hi: _mm512_mask_mov_epi64(lane.hi, nodes, hi),
                        lo: _mm512_mask_mov_epi64(lane.lo, nodes, lo),
                    };
                }
            }
        }
    }

    /// Looks up at most [`GROUP_KEYS`] keys. The root entry is read key by
    /// key, as the portable path does, and a key at a label entry answered
    /// at once; only the others (their positions in `marked`) fill the
    /// vectors that walk. Why: on random keys nearly every lookup ends at
    /// its root entry, and loading every key into vectors to gather the
    /// root entries measured 0.86-0.89x the portable path there, against
    /// 1.14-1.17x this way, with announced keys as fast either way
    /// (docs/bench/dxr6.md, "dxr6 with AVX-512").
    #[target_feature(enable = "avx512f,avx512bw")]
    fn wide_group<T: WideAnswer>(&self, keys: &[u128], out: &mut [T]) {
        debug_assert!(keys.len() <= GROUP_KEYS && out.len() >= keys.len());
        let mut marked = [0u32; GROUP_KEYS];
        let mut roots = [0u32; GROUP_KEYS];
        let mut count = 0;
        for (j, (&addr, answer)) in keys.iter().zip(out.iter_mut()).enumerate() {
            let entry = self.entries[self.root_index(addr)];
            // A branch: it goes the same way for nearly every key of a
            // pattern (random keys: labels; announced keys: nodes).
            if is_label(entry) {
                *answer = T::from_slot(self.results[label_of(entry)]);
                continue;
            }
            marked[count] = j as u32;
            roots[count] = entry;
            count += 1;
        }
        match count.div_ceil(LANES) {
            0 => {}
            1 => self.walk_marked::<1, T>(keys, &marked, &roots, count, out),
            2 => self.walk_marked::<2, T>(keys, &marked, &roots, count, out),
            3 => self.walk_marked::<3, T>(keys, &marked, &roots, count, out),
            _ => self.walk_marked::<4, T>(keys, &marked, &roots, count, out),
        }
    }

    /// Walks and answers the `count` keys of `keys` at positions `marked`,
    /// whose root entries (nodes or leaves) are `roots`.
    #[target_feature(enable = "avx512f,avx512bw")]
    fn walk_marked<const V: usize, T: WideAnswer>(
        &self,
        keys: &[u128],
        marked: &[u32; GROUP_KEYS],
        roots: &[u32; GROUP_KEYS],
        count: usize,
        out: &mut [T],
    ) {
        let root_bits = _mm512_set1_epi64((self.root_bits & 31) as i64);
        let words = keys.as_ptr() as *const i64;
        let mut lanes = [Lanes::zero(); V];
        for (v, lane) in lanes.iter_mut().enumerate() {
            let filled = ((1u32 << count.saturating_sub(v * LANES).min(LANES)) - 1) as u8;
            // SAFETY: `marked` and `roots` hold GROUP_KEYS >= (v + 1) * 8
            // u32s, so each 32-byte load stays inside them.
            let (at, entry) = unsafe {
                (
                    _mm256_loadu_si256(marked.as_ptr().add(v * LANES) as *const __m256i),
                    _mm256_loadu_si256(roots.as_ptr().add(v * LANES) as *const __m256i),
                )
            };
            let low_word = _mm512_slli_epi64::<1>(_mm512_cvtepu32_epi64(at));
            // SAFETY: the filled lanes hold positions of keys inside
            // `keys`, whose words 2j (low) and 2j + 1 (high) are read; the
            // other lanes read nothing.
            let (hi, lo) = unsafe {
                (
                    _mm512_mask_i64gather_epi64::<8>(
                        _mm512_setzero_si512(),
                        filled,
                        _mm512_add_epi64(low_word, _mm512_set1_epi64(1)),
                        words,
                    ),
                    _mm512_mask_i64gather_epi64::<8>(
                        _mm512_setzero_si512(),
                        filled,
                        low_word,
                        words,
                    ),
                )
            };
            let (hi, lo) = shift_left(hi, lo, root_bits);
            *lane = Lanes {
                entry: _mm512_maskz_mov_epi64(filled, _mm512_cvtepu32_epi64(entry)),
                hi,
                lo,
            };
        }
        // SAFETY: this function enables AVX-512 F and BW.
        unsafe { self.walk(&mut lanes) };
        for (v, lane) in lanes.iter().enumerate() {
            let first = v * LANES;
            let filled = (count - first).min(LANES);
            let mut answers = [T::from_slot(LabelSlot::NONE); LANES];
            // SAFETY: as for `walk` above.
            unsafe { self.finish_wide(lane, &mut answers[..filled]) };
            for (&at, answer) in marked[first..first + filled].iter().zip(answers) {
                out[at as usize] = answer;
            }
        }
    }

    /// Writes the answers of the first `out.len()` lanes of `lanes`, each
    /// at a label or leaf entry, for all eight lanes at once: a
    /// branch-free binary search over each leaf's starts (at most 15: four
    /// steps), each step one gather of the 64-bit words holding the probed
    /// starts, then one gather for the label word, one for the label slot
    /// and one store. Lanes at leaves with 128-bit starts or 32-bit label
    /// indices (rare) take the portable count afterwards.
    ///
    /// Why not one 64-byte compare per leaf, as the portable path does: the
    /// compare needs each lane's line and probe in scalar registers, and
    /// that per-lane loop measured about 20% slower on announced keys
    /// (docs/bench/dxr6.md, "dxr6 with AVX-512").
    ///
    /// # Safety
    /// As [`Self::walk`], and inlined for the same reason.
    #[inline(always)]
    unsafe fn finish_wide<T: WideAnswer>(&self, lanes: &Lanes, out: &mut [T]) {
        // SAFETY: the caller enables AVX-512 F and BW (the contract
        // above); every memory access is bounded as its comment says.
        unsafe {
            debug_assert!(out.len() <= LANES);
            let e = lanes.entry;
            let field = |shift: u32, mask: u32| {
                _mm512_and_si512(
                    _mm512_srlv_epi64(e, _mm512_set1_epi64(shift as i64)),
                    _mm512_set1_epi64(mask as i64),
                )
            };
            let count = ((1u32 << out.len()) - 1) as u8;
            let leaf = _mm512_test_epi64_mask(e, _mm512_set1_epi64(LEAF_BIT as i64)) & count;
            let code = field(WIDTH_SHIFT, 3);
            // The vector search decodes leaf places at `align = 1` only; a
            // coarser layout (past 2^19 leaf lines) searches every leaf in
            // the scalar loop below.
            let scalar = if self.align_shift != 0 {
                leaf
            } else {
                leaf & (_mm512_test_epi64_mask(e, _mm512_set1_epi64(WIDE_LABELS_BIT as i64))
                    | _mm512_cmpeq_epi64_mask(code, _mm512_set1_epi64(3)))
            };
            let searched = leaf & !scalar;
            let labels = _mm512_and_si512(e, _mm512_set1_epi64(LABEL_MASK as i64));
            // Vectors of random keys have every lane at a label: no search.
            let index = if searched == 0 {
                labels
            } else {
                let starts = field(STARTS_SHIFT, STARTS_MASK);
                let first_word = _mm512_add_epi64(
                    _mm512_slli_epi64::<5>(field(0, LINE_MASK)),
                    field(OFFSET_SHIFT, OFFSET_MASK),
                );
                let width = _mm512_sllv_epi64(_mm512_set1_epi64(16), code);
                let sixty_four = _mm512_set1_epi64(64);
                let probe = _mm512_srlv_epi64(lanes.hi, _mm512_sub_epi64(sixty_four, width));
                let width_mask =
                    _mm512_srlv_epi64(_mm512_set1_epi64(-1), _mm512_sub_epi64(sixty_four, width));
                let last_word = _mm512_set1_epi64((self.leaves.len() * LINE_WORDS / 4) as i64 - 1);
                let leaves = self.leaves.as_ptr() as *const i64;
                let three = _mm512_set1_epi64(3);
                // The 16-bit word `word` of the leaves, as a 64-bit lane: the
                // aligned 64-bit word holding it, shifted down (a start never
                // crosses one: starts are aligned to their width).
                let read = |lanes: u8, word: __m512i, mask: __m512i| {
                    let at = _mm512_min_epu64(_mm512_srli_epi64::<2>(word), last_word);
                    // Sound: indices clamped to the leaves' last 64-bit word;
                    // scale 8; lanes outside `lanes` read nothing.
                    let q =
                        _mm512_mask_i64gather_epi64::<8>(_mm512_setzero_si512(), lanes, at, leaves);
                    _mm512_and_si512(
                        _mm512_srlv_epi64(q, _mm512_slli_epi64::<4>(_mm512_and_si512(word, three))),
                        mask,
                    )
                };
                let mut below = _mm512_setzero_si512();
                for step in [8i64, 4, 2, 1] {
                    let step = _mm512_set1_epi64(step);
                    let next = _mm512_add_epi64(below, step);
                    let probed = _mm512_mask_cmple_epu64_mask(searched, next, starts);
                    let word = _mm512_add_epi64(
                        first_word,
                        _mm512_sllv_epi64(_mm512_sub_epi64(next, _mm512_set1_epi64(1)), code),
                    );
                    let start = read(probed, word, width_mask);
                    let at_most = _mm512_mask_cmple_epu64_mask(probed, start, probe);
                    below = _mm512_mask_mov_epi64(below, at_most, next);
                }
                let label_word = _mm512_add_epi64(
                    _mm512_add_epi64(first_word, _mm512_sllv_epi64(starts, code)),
                    below,
                );
                let label = read(searched, label_word, _mm512_set1_epi64(0xffff));
                _mm512_mask_mov_epi64(labels, searched, label)
            };
            let index = _mm512_min_epu64(index, _mm512_set1_epi64(self.results.len() as i64 - 1));
            // Sound: indices clamped to the last slot; scale 8 matches the
            // u64 slots.
            let slots = _mm512_i64gather_epi64::<8>(index, self.results.as_ptr() as *const i64);
            let answers = if T::WORDS {
                // `LabelSlot::word`, eight at once: the label half, or all
                // ones where the low half (the "route" flag) is 0.
                _mm512_or_si512(
                    _mm512_srli_epi64::<32>(slots),
                    _mm512_sub_epi64(
                        _mm512_and_si512(slots, _mm512_set1_epi64(u32::MAX as i64)),
                        _mm512_set1_epi64(1),
                    ),
                )
            } else {
                slots
            };
            // Sound: the store writes the first `out.len()` (<= 8) elements
            // of `out`, 8 bytes each (`WideAnswer` is implemented for 8-byte
            // types only). A slot's bits are its answer as an `Option<Label>`
            // (the layout `LabelSlot::get` checks at compile time and relies
            // on in the same way); a word is any u64.
            _mm512_mask_storeu_epi64(out.as_mut_ptr() as *mut i64, count, answers);
            if scalar != 0 {
                let mut entry = [0u64; LANES];
                let mut hi = [0u64; LANES];
                let mut lo = [0u64; LANES];
                // Sound: each array is 64 bytes, one unaligned 512-bit store.
                _mm512_storeu_si512(entry.as_mut_ptr() as *mut __m512i, e);
                _mm512_storeu_si512(hi.as_mut_ptr() as *mut __m512i, lanes.hi);
                _mm512_storeu_si512(lo.as_mut_ptr() as *mut __m512i, lanes.lo);
                let mut left = scalar;
                while left != 0 {
                    let j = left.trailing_zeros() as usize;
                    left &= left - 1;
                    let walk = Walk {
                        entry: entry[j] as u32,
                        rest: (hi[j] as u128) << 64 | lo[j] as u128,
                    };
                    out[j] = T::from_slot(self.results[self.leaf_label(walk)]);
                }
            }
        }
    }
}

/// The high and low halves of keys `first..first + 8` of `keys` (zero for
/// lanes past its end).
#[inline]
#[target_feature(enable = "avx512f")]
fn load_keys(keys: &[u128], first: usize) -> (__m512i, __m512i) {
    let count = keys.len().saturating_sub(first).min(LANES);
    // Two 64-bit words per key, low word first (x86-64 is little-endian).
    let words = 2 * count;
    let mask_a = ((1u32 << words.min(8)) - 1) as u8;
    let mask_b = ((1u32 << words.saturating_sub(8)) - 1) as u8;
    let base = keys.as_ptr().wrapping_add(first) as *const i64;
    // SAFETY: a masked load touches only the words its mask selects: the
    // first `words` words from `base`, which are the `count` keys inside
    // `keys`; masked-off words read as zero and never fault.
    let (a, b) = unsafe {
        (
            _mm512_maskz_loadu_epi64(mask_a, base),
            _mm512_maskz_loadu_epi64(mask_b, base.wrapping_add(8)),
        )
    };
    let hi = _mm512_permutex2var_epi64(a, _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15), b);
    let lo = _mm512_permutex2var_epi64(a, _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14), b);
    (hi, lo)
}

/// The 128-bit lanes `hi:lo` shifted left by `by` (1..=63 per lane).
#[inline]
#[target_feature(enable = "avx512f")]
fn shift_left(hi: __m512i, lo: __m512i, by: __m512i) -> (__m512i, __m512i) {
    let back = _mm512_sub_epi64(_mm512_set1_epi64(64), by);
    (
        _mm512_or_si512(_mm512_sllv_epi64(hi, by), _mm512_srlv_epi64(lo, back)),
        _mm512_sllv_epi64(lo, by),
    )
}

#[cfg(test)]
mod tests {
    use super::available;
    use crate::engine::{Lookup, Updater};
    use crate::engines::dxr6::testing::{mixed_table, probes, TEST_CONFIGS};
    use crate::engines::dxr6::{Dxr6, Dxr6Config, Dxr6Updater};
    use crate::labels::word_of;
    use crate::rib::Rib;

    /// The C library's words from both batch paths on a table without a
    /// default route, where most random keys find no route (`u64::MAX`).
    #[test]
    fn words_without_a_default_route() {
        if !available() {
            eprintln!("skipped: this CPU has no AVX-512 F and BW");
            return;
        }
        let with_default = mixed_table(4);
        let rib = Rib::from_pairs(with_default.iter().filter(|(prefix, _)| prefix.plen() > 0));
        let (_, dxr) = Dxr6Updater::build(&Dxr6Config::default(), &rib).unwrap();
        let addrs = probes(&rib, 4);
        let want: Vec<u64> = addrs.iter().map(|&a| word_of(rib.lookup(a))).collect();
        assert!(want.contains(&u64::MAX) && want.iter().any(|&w| w != u64::MAX));
        assert_words(&dxr, &addrs, &want, "no default route");
    }

    /// Both batch paths' words for the prefixes of `addrs` of several
    /// lengths (bursts, groups, the whole slice) are `want`'s.
    fn assert_words(dxr: &Dxr6, addrs: &[u128], want: &[u64], what: &str) {
        for len in [0, 1, 5, 7, 8, 9, 31, 32, 33, 100, 1000, addrs.len()] {
            let len = len.min(addrs.len());
            let mut words = vec![7u64; len];
            // SAFETY: the callers run only where `available` said the CPU
            // has AVX-512 F and BW.
            unsafe { dxr.lookup_batch_wide(&addrs[..len], &mut words) };
            assert_eq!(words, want[..len], "{what}: {len} words");
            let mut words = vec![7u64; len];
            dxr.batch_portable(&addrs[..len], &mut words);
            assert_eq!(words, want[..len], "{what}: {len} portable words");
        }
    }

    /// The AVX-512 path against the per-key lookup and the portable batch
    /// at every slice length up to five groups, on slices that start and
    /// end anywhere (the end of the vector included, where the masked
    /// loads of the last group must not read past it).
    #[test]
    fn wide_batch_equals_per_key_and_portable() {
        if !available() {
            eprintln!("skipped: this CPU has no AVX-512 F and BW");
            return;
        }
        for (seed, config) in TEST_CONFIGS {
            let rib = mixed_table(seed);
            let (updater, dxr) = Dxr6Updater::build(&config, &rib).unwrap();
            let stats = updater.stats(&dxr);
            if seed == 1 {
                assert!(stats.leaves.iter().all(|&n| n > 0), "{stats:?}");
            }
            let addrs = probes(&rib, seed);
            let want: Vec<_> = addrs.iter().map(|&a| dxr.lookup(a)).collect();
            for (addr, want) in addrs.iter().zip(&want).step_by(13) {
                assert_eq!(*want, rib.lookup(*addr), "{config:?} {addr:#x}");
            }
            let mut all = vec![None; addrs.len()];
            // SAFETY: `available` said the CPU has AVX-512 F and BW.
            unsafe { dxr.lookup_batch_wide(&addrs, &mut all) };
            assert_eq!(all, want, "{config:?}, whole slice");
            // The C library's words, from both paths.
            let want_words: Vec<u64> = want.iter().map(|&w| word_of(w)).collect();
            assert_words(&dxr, &addrs, &want_words, &format!("{config:?}"));
            let mut wide = vec![Some(u32::MAX); 5 * 32 + 1];
            let mut portable = wide.clone();
            for len in 0..=5 * 32 + 1 {
                for start in [0, 1, 7, 33, addrs.len() - len] {
                    let keys = &addrs[start..start + len];
                    // SAFETY: as above.
                    unsafe { dxr.lookup_batch_wide(keys, &mut wide[..len]) };
                    dxr.lookup_batch_portable(keys, &mut portable[..len]);
                    assert_eq!(
                        &wide[..len],
                        &want[start..start + len],
                        "{config:?} {len} at {start}"
                    );
                    assert_eq!(
                        &portable[..len],
                        &want[start..start + len],
                        "{config:?} {len} at {start}"
                    );
                }
            }
        }
    }
}
