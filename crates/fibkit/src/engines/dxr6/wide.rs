//! The AVX-512 batch lookup of `dxr6`: the keys of a group walk the root
//! and node entries together, eight per vector, one gather per vector and
//! level, and each leaf is counted with one 64-byte compare.
//!
//! Why: on keys inside announced prefixes a `dxr6` lookup passes the root
//! and one to six node entries before its leaf (on `dfz-v6-nh`: one node
//! for half of them, two for a quarter, three for a fifth), so a group of
//! keys has reads at several depths in flight, and the portable batch
//! (`Dxr6::lookup_batch_portable`) pays for each key's step in scalar
//! bookkeeping: a 128-bit shift by the node's stride, the child index, the
//! kind test, a prefetch. Here eight lanes take a step in a few vector
//! instructions, and one masked gather issues the next read of every lane
//! still at a node. Measured on `dfz-v6-nh` (docs/BENCHMARKS.md, "dxr6
//! with AVX-512"): about 2.1x the portable batch on announced keys, 0.9x
//! on random keys, where nearly every lookup ends at its root entry and
//! the scalar loop is already short.
//!
//! Each lane keeps the address bits after its depth, left-aligned, as two
//! 64-bit halves (`hi`, `lo`): a node's child index is the top `stride`
//! bits of `hi`, and a step shifts the pair left by the stride. Every
//! gathered index is clamped to the last entry, so a gather reads inside
//! the entries whatever they hold; the build (and an image's validation)
//! keeps every node table inside the entries, so the clamp never changes
//! an answer.

use std::arch::x86_64::*;

use super::{
    has_wide_labels, is_leaf, label_of, line_of, offset_of, starts_of, width_code, Dxr6, Walk,
    KIND_NODE, KIND_SHIFT, LABEL_MASK, LEAF_BIT, NODE_BASE_MASK, STRIDE_MASK, STRIDE_SHIFT,
};
use crate::prefix::Label;
use crate::storage::Storage;

/// Keys per vector: 64-bit lanes of a 512-bit register.
const LANES: usize = 8;

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

impl<S: Storage> Dxr6<S> {
    /// [`Lookup::lookup_batch`](crate::engine::Lookup::lookup_batch) with
    /// AVX-512: groups of `4 * LANES` keys (fewer for a shorter slice).
    ///
    /// # Safety
    /// The CPU must have AVX-512 F and BW ([`available`]).
    #[target_feature(enable = "avx512f,avx512bw")]
    pub(super) unsafe fn lookup_batch_wide(&self, addrs: &[u128], out: &mut [Option<Label>]) {
        debug_assert!(out.len() >= addrs.len());
        // PERF: four vectors (32 keys) per group: two measured 13% slower
        // on announced keys, eight no faster; a burst of at most eight keys
        // takes one vector (docs/BENCHMARKS.md, "dxr6 with AVX-512").
        if addrs.len() <= LANES {
            self.wide_group::<1>(addrs, out);
            return;
        }
        let group = 4 * LANES;
        let mut start = 0;
        while start < addrs.len() {
            let end = addrs.len().min(start + group);
            self.wide_group::<4>(&addrs[start..end], &mut out[start..end]);
            start = end;
        }
    }

    /// Looks up at most `V * LANES` keys: the root entries, then rounds of
    /// one node level for every lane still at a node, then each lane's
    /// label or leaf.
    #[target_feature(enable = "avx512f,avx512bw")]
    fn wide_group<const V: usize>(&self, keys: &[u128], out: &mut [Option<Label>]) {
        debug_assert!(keys.len() <= V * LANES && out.len() >= keys.len());
        let entries = self.entries.as_ptr() as *const i32;
        let last_entry = _mm512_set1_epi64(self.entries.len() as i64 - 1);
        let root_bits = self.root_bits & 31;
        let mut lanes = [Lanes {
            entry: _mm512_set1_epi64(0),
            hi: _mm512_set1_epi64(0),
            lo: _mm512_set1_epi64(0),
        }; V];
        for (v, lane) in lanes.iter_mut().enumerate() {
            let (hi, lo) = load_keys(keys, v * LANES);
            let root = _mm512_min_epu64(
                _mm512_srlv_epi64(hi, _mm512_set1_epi64(64 - root_bits as i64)),
                last_entry,
            );
            // SAFETY: every index is at most the last entry (the clamp
            // above); the scale 4 matches the u32 entries.
            let entry = unsafe { _mm512_i64gather_epi32::<4>(root, entries) };
            let (hi, lo) = shift_left(hi, lo, _mm512_set1_epi64(root_bits as i64));
            *lane = Lanes {
                entry: _mm512_cvtepu32_epi64(entry),
                hi,
                lo,
            };
        }
        let node_kind = _mm512_set1_epi64(KIND_NODE as i64);
        let stride_mask = _mm512_set1_epi64(STRIDE_MASK as i64);
        let base_mask = _mm512_set1_epi64(NODE_BASE_MASK as i64);
        let one = _mm512_set1_epi64(1);
        let sixty_four = _mm512_set1_epi64(64);
        loop {
            let mut at_node = [0u8; V];
            for (v, lane) in lanes.iter().enumerate() {
                at_node[v] =
                    _mm512_cmpeq_epi64_mask(_mm512_srli_epi64::<KIND_SHIFT>(lane.entry), node_kind);
            }
            if at_node.iter().all(|&m| m == 0) {
                break;
            }
            for (v, lane) in lanes.iter_mut().enumerate() {
                let nodes = at_node[v];
                let stride = _mm512_add_epi64(
                    _mm512_and_si512(_mm512_srli_epi64::<STRIDE_SHIFT>(lane.entry), stride_mask),
                    one,
                );
                let child = _mm512_add_epi64(
                    _mm512_and_si512(lane.entry, base_mask),
                    _mm512_srlv_epi64(lane.hi, _mm512_sub_epi64(sixty_four, stride)),
                );
                let child = _mm512_min_epu64(child, last_entry);
                // SAFETY: as at the root: indices clamped to the last
                // entry; lanes outside `nodes` read nothing.
                let next = unsafe {
                    _mm512_mask_i64gather_epi32::<4>(_mm256_setzero_si256(), nodes, child, entries)
                };
                let (hi, lo) = shift_left(lane.hi, lane.lo, stride);
                *lane = Lanes {
                    entry: _mm512_mask_mov_epi64(lane.entry, nodes, _mm512_cvtepu32_epi64(next)),
                    hi: _mm512_mask_mov_epi64(lane.hi, nodes, hi),
                    lo: _mm512_mask_mov_epi64(lane.lo, nodes, lo),
                };
            }
        }
        for (v, lane) in lanes.iter().enumerate() {
            let first = v * LANES;
            if first >= keys.len() {
                break;
            }
            self.finish_wide(lane, &mut out[first..keys.len().min(first + LANES)]);
        }
    }

    /// Writes the answers of the first `out.len()` lanes of `lanes`, each
    /// at a label or leaf entry: with two gathers and one store when every
    /// lane is at a label (nearly every vector of random keys), otherwise
    /// lane by lane.
    #[target_feature(enable = "avx512f,avx512bw")]
    fn finish_wide(&self, lanes: &Lanes, out: &mut [Option<Label>]) {
        debug_assert!(out.len() <= LANES);
        if _mm512_test_epi64_mask(lanes.entry, _mm512_set1_epi64(LEAF_BIT as i64)) == 0 {
            let index = _mm512_min_epu64(
                _mm512_and_si512(lanes.entry, _mm512_set1_epi64(LABEL_MASK as i64)),
                _mm512_set1_epi64(self.results.len() as i64 - 1),
            );
            // SAFETY: indices clamped to the last slot; scale 8 matches the
            // u64 slots.
            let slots =
                unsafe { _mm512_i64gather_epi64::<8>(index, self.results.as_ptr() as *const i64) };
            let count = ((1u32 << out.len()) - 1) as u8;
            // SAFETY: the store writes the first `out.len()` (<= 8)
            // elements of `out`, 8 bytes each. A slot's bits are its answer
            // as an `Option<Label>` (the layout `LabelSlot::get` checks at
            // compile time and relies on in the same way).
            unsafe { _mm512_mask_storeu_epi64(out.as_mut_ptr() as *mut i64, count, slots) };
            return;
        }
        let mut entry = [0u64; LANES];
        let mut hi = [0u64; LANES];
        let mut lo = [0u64; LANES];
        // SAFETY: each array is 64 bytes, one unaligned 512-bit store.
        unsafe {
            _mm512_storeu_si512(entry.as_mut_ptr() as *mut __m512i, lanes.entry);
            _mm512_storeu_si512(hi.as_mut_ptr() as *mut __m512i, lanes.hi);
            _mm512_storeu_si512(lo.as_mut_ptr() as *mut __m512i, lanes.lo);
        }
        for (j, answer) in out.iter_mut().enumerate() {
            let entry = entry[j] as u32;
            // A branch on the kind: choosing without one (a label
            // searching line 0 as a one-start leaf, as the portable path
            // does) and counting the leaves of all eight lanes in vectors
            // both measured slower (docs/BENCHMARKS.md).
            let index = if is_leaf(entry) {
                self.leaf_label_wide(entry, hi[j], lo[j])
            } else {
                label_of(entry)
            };
            *answer = self.results[index].get();
        }
    }

    /// [`Self::leaf_label`] with one 64-byte compare of the line for 16-,
    /// 32- and 64-bit starts (128-bit starts take the portable count).
    #[target_feature(enable = "avx512f,avx512bw")]
    fn leaf_label_wide(&self, entry: u32, hi: u64, lo: u64) -> usize {
        let line = &self.leaves[line_of(entry)].0;
        // SAFETY: a line is 32 u16 = 64 readable bytes; the load needs no
        // alignment.
        let words = unsafe { _mm512_loadu_si512(line.as_ptr() as *const __m512i) };
        let (at, starts) = (offset_of(entry), starts_of(entry));
        let (at_most, first_lane, width_words) = match width_code(entry) {
            0 => (
                _mm512_cmple_epu16_mask(words, _mm512_set1_epi16((hi >> 48) as i16)) as u64,
                at,
                1,
            ),
            1 => (
                _mm512_cmple_epu32_mask(words, _mm512_set1_epi32((hi >> 32) as i32)) as u64,
                at / 2,
                2,
            ),
            2 => (
                _mm512_cmple_epu64_mask(words, _mm512_set1_epi64(hi as i64)) as u64,
                at / 4,
                4,
            ),
            _ => {
                return self.leaf_label(Walk {
                    entry,
                    rest: (hi as u128) << 64 | lo as u128,
                })
            }
        };
        let range = ((at_most >> first_lane) & ((1u64 << starts) - 1)).trailing_ones() as usize;
        let labels = at + starts * width_words;
        if has_wide_labels(entry) {
            let at = labels + 2 * range;
            line[at] as usize | (line[at + 1] as usize) << 16
        } else {
            line[labels + range] as usize
        }
    }
}

/// The high and low halves of keys `first..first + 8` of `keys` (zero for
/// lanes past its end).
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
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    use super::available;
    use crate::engine::{Lookup, Updater};
    use crate::engines::dxr6::{Dxr6Config, Dxr6Updater};
    use crate::prefix::Prefix;
    use crate::rib::Rib;

    /// Nested random prefixes under a few /24s, lengths 24..=128, so that
    /// leaves take starts of every width, and label entries, nodes of
    /// several levels and leaves all occur.
    fn mixed_table(seed: u64) -> Rib<u128> {
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut pairs = Vec::new();
        for top in [0x20010du128, 0x2a0000, 0x2c0ff0] {
            let base = top << 104;
            for _ in 0..3_000 {
                let len = [32, 40, 44, 48, 56, 64, 80, 96, 112, 127, 128][rng.random_range(0..11)];
                let addr = base | (rng.random::<u128>() >> 24);
                pairs.push((Prefix::new_masked(addr, len), rng.random_range(0..50)));
            }
            pairs.push((Prefix::new_masked(base, 24), 99));
        }
        pairs.push((Prefix::default_route(), 1000));
        Rib::from_pairs(pairs)
    }

    /// Addresses at and beside every range start, and random ones.
    fn probes(rib: &Rib<u128>, seed: u64) -> Vec<u128> {
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut addrs = Vec::new();
        for range in rib.ranges() {
            addrs.extend([
                range.first,
                range.first.wrapping_sub(1),
                range.last,
                range.first | 0xffff,
            ]);
        }
        addrs.extend((0..5_000).map(|_| rng.random::<u128>()));
        addrs
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
        for (seed, config) in [
            (1, Dxr6Config::default()),
            (
                2,
                Dxr6Config {
                    root_bits: 8,
                    max_stride: 3,
                    density: 1,
                },
            ),
            (
                3,
                Dxr6Config {
                    root_bits: 24,
                    max_stride: 16,
                    density: 64,
                },
            ),
        ] {
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
