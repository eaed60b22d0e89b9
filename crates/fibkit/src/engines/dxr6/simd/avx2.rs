//! The AVX2 batch lookup of `dxr6`, for x86-64 CPUs without AVX-512:
//! the node walks of a group's keys advance four per vector, their child
//! entries read by four scalar loads per vector and level.
//!
//! Why: on keys inside announced prefixes nearly every lookup passes one
//! or more node entries (1.8 on average on `dfz-v6-nh`), and with every
//! line cached the portable batch still spends about a third of its time
//! on those steps: per key and level, a 128-bit shift by the node's
//! stride, the child index, the kind test and the bookkeeping of the walk
//! (about forty instructions). Four lanes take that step in about twenty
//! vector instructions and four loads. The root entry is read key by key
//! and the leaves searched key by key as the portable batch does: random
//! keys nearly all end at the root, where a scalar read and test beat
//! loading keys into vectors, and the leaves searched four per vector
//! (the AVX-512 path's gathered binary search: five dependent gathers per
//! vector) measured 0.67-0.72x this path in bursts of 8 and 32 keys on an
//! AMD Zen 3, level in whole batches (docs/bench/dxr6.md, "The node walk
//! four keys per AVX2 vector").
//!
//! Each lane keeps its entry (zero-extended to 64 bits) and the address
//! bits after the entry's depth, left-aligned, as two 64-bit halves: a
//! node's child index is the top `stride` bits of the high half, and a
//! step shifts the pair left by the stride. Lanes not at a node read
//! entry 0 and keep what they hold. The loads are bounds-checked indexing
//! (the build and an image's validation keep every node table inside the
//! entries, so the check never fails).
//!
//! Why loads and not `vpgatherqd`: on an AMD Zen 3 a gather is microcoded
//! (uops.info lists 39 micro-ops for an eight-lane `vpgatherdd`), and the
//! walk with four loads per vector ran 1.08-1.13x faster in whole batches
//! and 1.06-1.12x in bursts of 8 and 32 on announced keys than with one
//! gather (docs/bench/dxr6.md, "The AVX2 walk reads with four loads").

use std::arch::x86_64::*;

use super::{Dxr6, Walk, GROUP, KIND_NODE, KIND_SHIFT, NODE_BASE_MASK, STRIDE_MASK, STRIDE_SHIFT};
use crate::labels::Answer;
use crate::storage::Storage;

/// Keys per vector: 64-bit lanes of a 256-bit register.
const LANES: usize = 4;

/// Whether this CPU runs [`Dxr6::lookup_batch_avx2`]; `std` caches the
/// answer, so a call costs a load and a test.
#[inline]
pub(super) fn available() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
}

/// The walks of a group that did not end at their root entry, packed
/// from index 0: the walk at index `i` is the key at `at[i]` of the group.
struct Walks<const N: usize> {
    at: [u8; N],
    entry: [u64; N],
    hi: [u64; N],
    lo: [u64; N],
}

impl<S: Storage> Dxr6<S> {
    /// [`Lookup::lookup_batch`](crate::engine::Lookup::lookup_batch) with
    /// AVX2: groups of up to [`GROUP`] keys, no larger than a short burst.
    ///
    /// # Safety
    /// The CPU must have AVX2 ([`available`]).
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn lookup_batch_avx2<T: Answer>(&self, addrs: &[u128], out: &mut [T]) {
        assert!(out.len() >= addrs.len(), "output slice shorter than input");
        // SAFETY (all three): this function enables AVX2.
        match addrs.len() {
            0..=8 => unsafe { self.avx2_groups::<8, T>(addrs, out) },
            9..=16 => unsafe { self.avx2_groups::<16, T>(addrs, out) },
            _ => unsafe { self.avx2_groups::<GROUP, T>(addrs, out) },
        }
    }

    /// The groups of `N` keys of `addrs`.
    ///
    /// # Safety
    /// The CPU must have AVX2; inlined into a function that enables it.
    #[inline(always)]
    unsafe fn avx2_groups<const N: usize, T: Answer>(&self, addrs: &[u128], out: &mut [T]) {
        for (keys, out) in addrs.chunks(N).zip(out.chunks_mut(N)) {
            // SAFETY: the caller enables AVX2.
            unsafe { self.avx2_group::<N, T>(keys, out) };
        }
    }

    /// Looks up at most `N` keys in three passes: the root entries key by
    /// key (a label is the answer; any other entry's walk is packed into
    /// [`Walks`] and its next read prefetched), the node levels four
    /// walks per vector, then the leaves key by key.
    ///
    /// # Safety
    /// The CPU must have AVX2; inlined into a function that enables it.
    #[inline(always)]
    unsafe fn avx2_group<const N: usize, T: Answer>(&self, keys: &[u128], out: &mut [T]) {
        debug_assert!(keys.len() <= N && N <= GROUP && N.is_multiple_of(LANES));
        debug_assert!(out.len() >= keys.len());
        let mut walks = Walks::<N> {
            at: [0; N],
            entry: [0; N],
            hi: [0; N],
            lo: [0; N],
        };
        let mut count = 0;
        for (j, (&addr, answer)) in keys.iter().zip(out.iter_mut()).enumerate() {
            let Some(walk) = self.start_or_answer(addr, answer) else {
                continue;
            };
            walks.at[count] = j as u8;
            walks.entry[count] = walk.entry as u64;
            walks.hi[count] = (walk.rest >> 64) as u64;
            walks.lo[count] = walk.rest as u64;
            count += 1;
        }
        // The lanes past `count` hold the entry 0, a label entry, so they
        // never step.
        let vectors = count.div_ceil(LANES);
        // SAFETY: the caller enables AVX2; `vectors * LANES <= N`.
        unsafe { self.avx2_walk(&mut walks, vectors) };
        for i in 0..count {
            let walk = Walk {
                entry: walks.entry[i] as u32,
                rest: (walks.hi[i] as u128) << 64 | walks.lo[i] as u128,
            };
            out[walks.at[i] as usize] = T::from_slot(self.results[self.finish_branchless(walk)]);
        }
    }

    /// Rounds of one node level over the first `vectors` vectors of
    /// `walks` until no lane is at a node. Each round steps every vector
    /// that has a lane at a node: the reads of one round are
    /// independent, so their misses overlap.
    ///
    /// # Safety
    /// The CPU must have AVX2; inlined into a function that enables it.
    /// `vectors * LANES <= N`.
    #[inline(always)]
    unsafe fn avx2_walk<const N: usize>(&self, walks: &mut Walks<N>, vectors: usize) {
        debug_assert!(vectors * LANES <= N);
        // SAFETY: the caller enables AVX2; every vector load and store
        // below is of four u64 at `v * LANES < vectors * LANES <= N`
        // inside one of `walks`' arrays or into `at`, an array of four.
        unsafe {
            let node_kind = _mm256_set1_epi64x(KIND_NODE as i64);
            let stride_mask = _mm256_set1_epi64x(STRIDE_MASK as i64);
            let base_mask = _mm256_set1_epi64x(NODE_BASE_MASK as i64);
            let one = _mm256_set1_epi64x(1);
            let sixty_four = _mm256_set1_epi64x(64);
            let mut active = (1u32 << vectors) - 1;
            while active != 0 {
                let mut left = active;
                active = 0;
                while left != 0 {
                    let v = left.trailing_zeros() as usize;
                    left &= left - 1;
                    let at = v * LANES;
                    let entry_at = walks.entry.as_mut_ptr().add(at) as *mut __m256i;
                    let hi_at = walks.hi.as_mut_ptr().add(at) as *mut __m256i;
                    let lo_at = walks.lo.as_mut_ptr().add(at) as *mut __m256i;
                    let entry = _mm256_loadu_si256(entry_at);
                    let nodes = _mm256_cmpeq_epi64(
                        _mm256_srli_epi64::<{ KIND_SHIFT as i32 }>(entry),
                        node_kind,
                    );
                    if _mm256_movemask_pd(_mm256_castsi256_pd(nodes)) == 0 {
                        continue;
                    }
                    let (hi, lo) = (_mm256_loadu_si256(hi_at), _mm256_loadu_si256(lo_at));
                    let stride = _mm256_add_epi64(
                        _mm256_and_si256(
                            _mm256_srli_epi64::<{ STRIDE_SHIFT as i32 }>(entry),
                            stride_mask,
                        ),
                        one,
                    );
                    let back = _mm256_sub_epi64(sixty_four, stride);
                    let child = _mm256_add_epi64(
                        _mm256_and_si256(entry, base_mask),
                        _mm256_srlv_epi64(hi, back),
                    );
                    // Lanes not at a node read entry 0, which stays cached.
                    let child = _mm256_and_si256(child, nodes);
                    // Four loads rather than a gather (see the module
                    // comment); indexing checks every index.
                    let mut at = [0u64; LANES];
                    _mm256_storeu_si256(at.as_mut_ptr() as *mut __m256i, child);
                    let e = &self.entries;
                    let next = _mm256_cvtepu32_epi64(_mm_set_epi32(
                        e[at[3] as usize] as i32,
                        e[at[2] as usize] as i32,
                        e[at[1] as usize] as i32,
                        e[at[0] as usize] as i32,
                    ));
                    let next_hi =
                        _mm256_or_si256(_mm256_sllv_epi64(hi, stride), _mm256_srlv_epi64(lo, back));
                    let next_lo = _mm256_sllv_epi64(lo, stride);
                    let entry = _mm256_blendv_epi8(entry, next, nodes);
                    _mm256_storeu_si256(entry_at, entry);
                    _mm256_storeu_si256(hi_at, _mm256_blendv_epi8(hi, next_hi, nodes));
                    _mm256_storeu_si256(lo_at, _mm256_blendv_epi8(lo, next_lo, nodes));
                    active |= 1 << v;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::available;
    use crate::engine::{Lookup, Updater};
    use crate::engines::dxr6::testing::{mixed_table, probes, TEST_CONFIGS};
    use crate::engines::dxr6::{Dxr6Config, Dxr6Updater};
    use crate::labels::word_of;
    use crate::rib::Rib;

    /// The AVX2 path against the per-key lookup at every slice length up
    /// to five groups (bursts of 8 and 16 take groups of their own size),
    /// on slices that start anywhere and at the end of the keys, on
    /// layouts with deep walks (a vector's lanes ending at different
    /// levels) and wide ones; answers as `Option<Label>` and as the C
    /// library's words.
    #[test]
    fn avx2_batch_equals_per_key() {
        if !available() {
            eprintln!("skipped: this CPU has no AVX2");
            return;
        }
        for (seed, config) in TEST_CONFIGS {
            let rib = mixed_table(seed);
            let (updater, dxr) = Dxr6Updater::build(&config, &rib).unwrap();
            let stats = updater.stats(&dxr);
            assert!(stats.leaves.iter().any(|&n| n > 0), "{stats:?}");
            let addrs = probes(&rib, seed);
            let want: Vec<_> = addrs.iter().map(|&a| dxr.lookup(a)).collect();
            for (addr, want) in addrs.iter().zip(&want).step_by(13) {
                assert_eq!(*want, rib.lookup(*addr), "{config:?} {addr:#x}");
            }
            let mut all = vec![None; addrs.len()];
            // SAFETY: `available` said the CPU has AVX2.
            unsafe { dxr.lookup_batch_avx2(&addrs, &mut all) };
            assert_eq!(all, want, "{config:?}, whole slice");
            let want_words: Vec<u64> = want.iter().map(|&w| word_of(w)).collect();
            let mut words = vec![7u64; addrs.len()];
            // SAFETY: as above.
            unsafe { dxr.lookup_batch_avx2(&addrs, &mut words) };
            assert_eq!(words, want_words, "{config:?}, whole slice of words");
            let mut got = vec![Some(u32::MAX); 5 * 32 + 1];
            for len in 0..=5 * 32 + 1 {
                for start in [0, 1, 7, 33, addrs.len() - len] {
                    let keys = &addrs[start..start + len];
                    // SAFETY: as above.
                    unsafe { dxr.lookup_batch_avx2(keys, &mut got[..len]) };
                    assert_eq!(
                        &got[..len],
                        &want[start..start + len],
                        "{config:?} {len} at {start}"
                    );
                }
            }
        }
    }

    /// Keys that all walk (a table with no label entry at the root) and
    /// keys that all end at the root, in groups of every size: full
    /// vectors, a partial last vector, and groups with no walk at all.
    #[test]
    fn avx2_batch_with_every_key_walking_or_none() {
        if !available() {
            eprintln!("skipped: this CPU has no AVX2");
            return;
        }
        let mixed = mixed_table(7);
        // Without the default route most random keys find no route.
        let rib = Rib::from_pairs(mixed.iter().filter(|(prefix, _)| prefix.plen() > 0));
        let config = Dxr6Config {
            root_bits: 8,
            max_stride: 4,
            density: 1,
            align: None,
        };
        let (_, dxr) = Dxr6Updater::build(&config, &rib).unwrap();
        let walking: Vec<u128> = probes(&rib, 7)
            .into_iter()
            .filter(|&a| a >> 104 == 0x20010d)
            .collect();
        assert!(walking.len() > 1000, "{} keys under the /24", walking.len());
        let at_root: Vec<u128> = (0..500u128).map(|i| (0x3000 + i) << 112).collect();
        for addrs in [&walking, &at_root] {
            let want: Vec<_> = addrs.iter().map(|&a| rib.lookup(a)).collect();
            for len in [1, 3, 4, 5, 8, 9, 16, 17, 31, 32, 33, 64, addrs.len()] {
                let mut got = vec![Some(u32::MAX); len];
                // SAFETY: `available` said the CPU has AVX2.
                unsafe { dxr.lookup_batch_avx2(&addrs[..len], &mut got) };
                assert_eq!(got, want[..len], "{len} keys");
            }
        }
    }
}
