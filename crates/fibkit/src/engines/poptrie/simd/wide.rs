//! The AVX-512 batch of `poptrie`: groups of 32 keys walk as four vectors
//! of eight, one level per round for every lane still at a node.
//!
//! The root gather, then one gather of each lane's entry in its chunk's
//! table; then per round and vector: the lanes whose entry is a leaf keep
//! it (a results slot, stored as its answer, or, for the default route's
//! leaves and lanes the root answered, a label index, whose slot one
//! gather reads after the walk), and for the others the level's five bits
//! taken from the key by a shift by the level's offset (the same for
//! every lane), one population count (`vpopcntq`) of the node's bitmap
//! under them, and one masked gather of the entry it names. A first
//! version that sorted out the table entries' leaves in the set-up loop,
//! right after their gather, ran whole batches at 0.7x (135-145 against
//! 184-198 Mlps on announced keys); each round now sorts out the entries
//! the round before read.
//!
//! A vector keeps its nodes' entries and the top 64 bits of its keys in
//! registers; the low 64 bits are read again from the keys only on the
//! rare levels past bit 59 (prefixes longer than about /60). Six or eight
//! vectors were no faster than four (docs/bench/poptrie.md, "Five-bit
//! nodes"). Keys are read in place, IPv4 keys widened in the register:
//! plain loads for a full vector, masked ones only for a short vector's,
//! and the next group's key lines are requested a walk ahead: on an AMD
//! Zen 5, against masked loads for every vector, plain loads alone ran
//! whole batches about 1.3x faster and the request about 1.5x, as if
//! that CPU fetched a stream of masked loads only on demand
//! (docs/bench/poptrie.md, "`poptrie` reads its keys with plain loads").
//! Copying keys into a buffer of 128-bit keys first ran at half the
//! speed, since the buffer's narrow stores cannot be forwarded to the
//! vector loads (docs/bench/poptrie.md, "`poptrie`'s IPv4 keys read in
//! place"). Network-order keys (the C library's and numpy's IPv6 bytes)
//! are read the same way and byte-swapped in the register, at the speed
//! of host-order keys (docs/bench/c-library.md, "`poptrie` reads network-order
//! keys in its vector walk").
//!
//! Every index gathered comes from the build or an image's checked arrays
//! (root entries, first children, bitmap counts), which places it inside
//! its array; the key's own bits select only among a node's 32 children.
//! So no gather is clamped.

use std::arch::x86_64::*;

use super::{Poptrie, LEAF, STRIDE};
use crate::addr::Addr;
use crate::engines::shared::prefetch;
use crate::engines::shared::wide::WideAnswer;
use crate::storage::Storage;

/// Keys per vector: 64-bit lanes of a 512-bit register.
const LANES: usize = 8;
/// Vectors walking together.
const VECTORS: usize = 4;
/// Keys per group.
const GROUP: usize = LANES * VECTORS;

/// Whether this CPU runs [`Poptrie::lookup_batch_wide`] (AVX-512 F and
/// VPOPCNTDQ); `std` caches the answer.
pub(super) fn available() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512vpopcntdq")
}

/// The high and low 64 bits of keys `8v..8v + keys` at `addrs`,
/// left-aligned in 128 bits (an IPv4 key in the top 32 bits of `hi`, its
/// `lo` zero and read from nowhere); lanes past `keys` hold 0. `K` is the
/// address type `A` itself or, with `NETWORK`, its network-order bytes
/// ([`Addr::Bytes`]), swapped here in the register.
///
/// # Safety
/// AVX-512 F (the callers run only where [`available`]); `K` is
/// `A::BITS / 8` bytes of `A` or of its bytes; keys `8v..8v + keys` must
/// be readable at `addrs`, and `keys <= 8`.
#[inline(always)]
unsafe fn key_halves<A: Addr, K, const NETWORK: bool>(
    addrs: *const K,
    v: usize,
    keys: usize,
) -> (__m512i, __m512i) {
    const { assert!(A::BITS == 32 || A::BITS == 128, "keys of 32 or 128 bits") };
    const {
        assert!(
            std::mem::size_of::<K>() == A::BITS as usize / 8,
            "a key is an address"
        )
    };
    // Sound: the caller's keys 8v.. exist (safety contract); a masked
    // load touches only the elements its mask selects, those of these
    // keys.
    unsafe {
        let first = addrs.add(LANES * v);
        if A::BITS == 32 {
            // Eight keys are read with a plain load, a short vector's with
            // a masked one: reading every vector with masked loads ran
            // whole batches at about 0.8x on the AMD Zen 5 machine
            // (module docs).
            let mut words = if keys == LANES {
                _mm512_castsi256_si512(_mm256_loadu_si256(first as *const __m256i))
            } else {
                _mm512_maskz_loadu_epi32(((1u32 << keys) - 1) as u16, first as *const i32)
            };
            if NETWORK {
                words = swap_bytes_32(words);
            }
            let keys = _mm512_cvtepu32_epi64(_mm512_castsi512_si256(words));
            return (_mm512_slli_epi64::<32>(keys), _mm512_setzero_si512());
        }
        // Two u64 words per key: a host-order key's low word first
        // (x86-64 is little-endian); network-order bytes hold the high
        // half first, each half byte-swapped.
        let count = 2 * keys;
        let first_half = ((1u32 << count.min(LANES)) - 1) as u8;
        let second_half = ((1u32 << count.saturating_sub(LANES)) - 1) as u8;
        let words = first as *const i64;
        // Eight keys: plain loads (see `key_halves`'s IPv4 keys).
        let (a, b) = if keys == LANES {
            (
                _mm512_loadu_si512(words as *const _),
                _mm512_loadu_si512(words.add(LANES) as *const _),
            )
        } else {
            (
                _mm512_maskz_loadu_epi64(first_half, words),
                _mm512_maskz_loadu_epi64(second_half, words.add(LANES)),
            )
        };
        let odd = _mm512_permutex2var_epi64(a, _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15), b);
        let even = _mm512_permutex2var_epi64(a, _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14), b);
        if NETWORK {
            (swap_bytes_64(even), swap_bytes_64(odd))
        } else {
            (odd, even)
        }
    }
}

/// Each 32-bit lane's bytes reversed, with AVX-512 F alone (`vpshufb`
/// needs BW): bytes swapped within 16 bits, then the 16-bit halves.
///
/// # Safety
/// AVX-512 F.
#[inline(always)]
unsafe fn swap_bytes_32(words: __m512i) -> __m512i {
    // Sound: only AVX-512 F instructions (safety contract).
    unsafe {
        let low_bytes = _mm512_set1_epi64(0x00ff_00ff_00ff_00ff);
        let pairs = _mm512_or_si512(
            _mm512_and_si512(_mm512_srli_epi64::<8>(words), low_bytes),
            _mm512_slli_epi64::<8>(_mm512_and_si512(words, low_bytes)),
        );
        _mm512_rol_epi32::<16>(pairs)
    }
}

/// Each 64-bit lane's bytes reversed: each 32-bit half's, then the halves.
///
/// # Safety
/// AVX-512 F.
#[inline(always)]
unsafe fn swap_bytes_64(words: __m512i) -> __m512i {
    // Sound: only AVX-512 F instructions (safety contract).
    unsafe { _mm512_rol_epi64::<32>(swap_bytes_32(words)) }
}

/// The key bits of a level at `offset` from the top of each lane's key
/// (`hi` its top 64 bits, the rest read again from `addrs` as in
/// [`key_halves`]).
///
/// # Safety
/// As [`key_halves`]; `offset <= 128 - STRIDE`.
#[inline(always)]
unsafe fn level_bits<A: Addr, K, const NETWORK: bool>(
    hi: __m512i,
    addrs: *const K,
    v: usize,
    keys: usize,
    offset: u32,
) -> __m512i {
    // Sound: the intrinsics need AVX-512 F (safety contract); the load
    // is `key_halves`'s, under the same contract.
    unsafe {
        let level_mask = _mm512_set1_epi64((1 << STRIDE) - 1);
        let count = |bits: u32| _mm_cvtsi32_si128(bits as i32);
        if offset <= 64 - STRIDE {
            return _mm512_and_si512(
                _mm512_srl_epi64(hi, count(64 - STRIDE - offset)),
                level_mask,
            );
        }
        let (_, lo) = key_halves::<A, K, NETWORK>(addrs, v, keys);
        let low = _mm512_srl_epi64(lo, count(128 - STRIDE - offset));
        if offset >= 64 {
            return _mm512_and_si512(low, level_mask);
        }
        // The level's bits straddle the two halves.
        let high = _mm512_sll_epi64(hi, count(offset - (64 - STRIDE)));
        _mm512_and_si512(_mm512_or_si512(high, low), level_mask)
    }
}

/// [`super::counted`] in every lane: the first index in each word's high
/// half plus its set bits under `below`, less one (`one` holds 1).
///
/// # Safety
/// AVX-512 F and VPOPCNTDQ (the callers run only where [`available`]).
#[inline(always)]
unsafe fn counted(word: __m512i, below: __m512i, one: __m512i) -> __m512i {
    // Sound: only the features of the safety contract are needed.
    unsafe {
        _mm512_sub_epi64(
            _mm512_add_epi64(
                _mm512_srli_epi64::<32>(word),
                _mm512_popcnt_epi64(_mm512_and_si512(word, below)),
            ),
            one,
        )
    }
}

impl<A: Addr, S: Storage> Poptrie<A, S> {
    /// [`Lookup::lookup_batch`](crate::engine::Lookup::lookup_batch) with
    /// AVX-512, in groups of [`GROUP`] keys (a shorter group walks only the
    /// vectors it fills, its missing lanes looked up at address 0 and not
    /// stored).
    ///
    /// `K` is `A` (host-order keys) or, with `NETWORK`, `A::Bytes`
    /// (network-order keys, swapped in the register).
    ///
    /// # Safety
    /// The CPU must have AVX-512 F and VPOPCNTDQ ([`available`]); `K` must
    /// be `A` or, with `NETWORK`, `A::Bytes`.
    #[target_feature(enable = "avx512f,avx512vpopcntdq")]
    pub(super) unsafe fn lookup_batch_wide<K, T: WideAnswer, const NETWORK: bool>(
        &self,
        addrs: &[K],
        out: &mut [T],
    ) {
        debug_assert!(out.len() >= addrs.len());
        let root = self.root.as_ptr() as *const i32;
        let entries = self.entries.as_ptr() as *const i64;
        let results = self.results.as_ptr() as *const i64;
        let zero = _mm512_setzero_si512();
        let one = _mm512_set1_epi64(1);
        let two = _mm512_set1_epi64(2);
        let label_mask = _mm512_set1_epi64((!LEAF) as i64 & u32::MAX as i64);
        let leaf_flag = _mm512_set1_epi64(LEAF as i64);
        let low_half = _mm512_set1_epi64(u32::MAX as i64);
        // `& 31`: S <= 23, S + D <= 23.
        let root_bits = self.root_bits & 31;
        let table_depth = (self.root_bits + self.direct_bits) & 31;
        let to_root = _mm_cvtsi32_si128(64 - root_bits as i32);
        let to_table = _mm_cvtsi32_si128(64 - table_depth as i32);
        let table_mask = _mm512_set1_epi64((1i64 << self.direct_bits) - 1);
        // Keys are read where they are (masked loads for a short vector)
        // and the answers stored in place (masked stores for a short
        // vector): a burst of eight costs no copy and no buffer.
        // Each group with the group after it (none after the last).
        let next_groups = addrs
            .chunks(GROUP)
            .skip(1)
            .chain(std::iter::once(&addrs[..0]));
        let groups = addrs
            .chunks(GROUP)
            .zip(out.chunks_mut(GROUP))
            .zip(next_groups);
        for ((addrs, out), next) in groups {
            let vectors = addrs.len().div_ceil(LANES);
            // The next group's keys are requested now, a walk ahead of
            // their reads: the hardware prefetcher did not keep up with
            // this stream (whole batches at about 0.8x without the request
            // on the AMD Zen 5 machine, module docs).
            for line in (0..std::mem::size_of_val(next)).step_by(64) {
                prefetch((next.as_ptr() as *const u8).wrapping_add(line));
            }
            let (keys, stores) = (addrs.as_ptr(), out.as_mut_ptr());
            // The keys of vector v: all eight, except in the last vector
            // of a short group; lanes past them look up address 0.
            let filled = |v: usize| (addrs.len() - LANES * v).min(LANES);
            let mut hi = [zero; VECTORS];
            // Per lane: the entry it read last (a node's while its walk
            // goes on; a leaf's once `found` holds it).
            let mut node = [zero; VECTORS];
            let mut at_node = [0u8; VECTORS];
            // Per lane whose walk ended: a leaf's entry, its results slot
            // or (low half 0) the index of one, as a lane the root
            // answered holds.
            let mut found = [zero; VECTORS];
            for v in 0..vectors {
                // SAFETY: the caller's keys 8v..8v + filled(v) of the
                // group exist; the root index is the top S bits of a key,
                // inside the 2^S root entries (scale 4, u32 entries); a
                // root entry without the flag is the first of its chunk's
                // 2^D table entries (the build's, or checked by an image's
                // opening), which the next D key bits index, and lanes
                // with the flag read nothing.
                unsafe {
                    let (h, _) = key_halves::<A, K, NETWORK>(keys, v, filled(v));
                    let entry = _mm512_cvtepu32_epi64(_mm512_i64gather_epi32::<4>(
                        _mm512_srl_epi64(h, to_root),
                        root,
                    ));
                    let lanes = _mm512_testn_epi64_mask(entry, leaf_flag);
                    found[v] = _mm512_slli_epi64::<32>(_mm512_and_si512(entry, label_mask));
                    // Where the root answered every lane (most random
                    // keys), the gather would read nothing.
                    node[v] = if lanes == 0 {
                        zero
                    } else {
                        let slot = _mm512_add_epi64(
                            entry,
                            _mm512_and_si512(_mm512_srl_epi64(h, to_table), table_mask),
                        );
                        _mm512_mask_i64gather_epi64::<8>(zero, lanes, slot, entries)
                    };
                    at_node[v] = lanes;
                    hi[v] = h;
                }
            }
            let mut offset = table_depth;
            while at_node.iter().any(|&lanes| lanes != 0) {
                for v in 0..VECTORS {
                    let lanes = at_node[v];
                    if lanes == 0 {
                        continue;
                    }
                    // The entries the lanes read last: a node's low half is
                    // its bitmap, above 1; a leaf's 0 or 1, its walk's end.
                    let word = node[v];
                    let deeper =
                        _mm512_mask_cmpgt_epu64_mask(lanes, _mm512_and_si512(word, low_half), one);
                    found[v] = _mm512_mask_mov_epi64(found[v], lanes & !deeper, word);
                    at_node[v] = deeper;
                    if deeper == 0 {
                        continue;
                    }
                    // SAFETY: no node has child nodes at the last level,
                    // so `offset` is at most 128 - STRIDE; the keys are
                    // readable as above.
                    let child =
                        unsafe { level_bits::<A, K, NETWORK>(hi[v], keys, v, filled(v), offset) };
                    let below = _mm512_sub_epi64(_mm512_sllv_epi64(two, child), one);
                    // SAFETY: this function enables the features `counted`
                    // needs. A lane at a node holds an entry the build made
                    // or an image's opening checked, whose child entries
                    // (its first plus the count of its bitmap) lie inside
                    // `entries`; bit 0 of a node's bitmap is set, so the
                    // count is at least one; lanes outside `deeper` read
                    // nothing.
                    node[v] = unsafe {
                        let next = counted(word, below, one);
                        _mm512_mask_i64gather_epi64::<8>(word, deeper, next, entries)
                    };
                }
                offset += STRIDE;
            }
            for (v, &ended) in found.iter().enumerate().take(vectors) {
                // SAFETY: every label index (from a root entry or a leaf)
                // is inside `results`, whose slots are u64; the masked
                // store writes answers 8v..8v + filled(v) of `stores`, the
                // group's part of the caller's `out`, which is at least as
                // long as its keys.
                unsafe {
                    // Lanes holding an index (low half 0) read their slot;
                    // a leaf's slot is the entry itself.
                    let indexed = _mm512_testn_epi64_mask(ended, low_half);
                    let slots = if indexed == 0 {
                        ended
                    } else {
                        let index = _mm512_srli_epi64::<32>(ended);
                        _mm512_mask_i64gather_epi64::<8>(ended, indexed, index, results)
                    };
                    // A slot's bits are its answer as an `Option<Label>`
                    // (the layout `LabelSlot::get` checks at compile time);
                    // its word is `LabelSlot::word`: the label (high half)
                    // or, where the low half is 0 (no route), all ones.
                    let answers = if T::WORDS {
                        let tag = _mm512_and_si512(slots, _mm512_set1_epi64(u32::MAX as i64));
                        _mm512_or_si512(_mm512_srli_epi64::<32>(slots), _mm512_sub_epi64(tag, one))
                    } else {
                        slots
                    };
                    // Plain stores where the vector is full, as the keys'
                    // loads.
                    if filled(v) == LANES {
                        _mm512_storeu_si512(stores.add(LANES * v) as *mut _, answers);
                    } else {
                        _mm512_mask_storeu_epi64(
                            stores.add(LANES * v) as *mut i64,
                            ((1u32 << filled(v)) - 1) as u8,
                            answers,
                        );
                    }
                }
            }
        }
    }
}
