//! The AVX-512 batch of `poptrie`: groups of 32 keys walk as four vectors
//! of eight, one level per round for every lane still at a node.
//!
//! Per round and vector: two masked gathers (the node's child bitmap and
//! its bases; the run bitmap is read once, after the walk, for the node
//! where each lane ended), the child bits shifted out of the key, and two
//! population counts (`vpopcntq`). A lane whose child is a leaf keeps its
//! node and the mask of the children up to its own; after the walk every
//! lane's leaf index, label index and results slot are gathered and the
//! eight answers stored at once. Why four vectors: two and eight were
//! slower in the probe that preceded the engine (docs/BENCHMARKS.md, "A
//! popcount trie, probed").
//!
//! Every index gathered comes from the build (root entries, bases, run
//! counts), which places it inside its array; the key's own bits select
//! only among a node's 64 children. So no gather is clamped.

use std::any::TypeId;
use std::arch::x86_64::*;

use super::{left, Poptrie, LEAF, NODE_WORDS};
use crate::addr::Addr;
use crate::prefix::Label;
use crate::storage::Storage;

/// Keys per vector: 64-bit lanes of a 512-bit register.
const LANES: usize = 8;
/// Vectors walking together.
const VECTORS: usize = 4;
/// Keys per group.
const GROUP: usize = LANES * VECTORS;

const _: () = assert!(NODE_WORDS == 4, "a node's index times 4 is its first word");
const _: () = assert!(
    std::mem::size_of::<Option<Label>>() == 8,
    "the vector store writes 8-byte answers"
);

/// Whether this CPU runs [`Poptrie::lookup_batch_wide`] (AVX-512 F and
/// VPOPCNTDQ); `std` caches the answer.
pub(super) fn available() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512vpopcntdq")
}

impl<A: Addr, S: Storage> Poptrie<A, S> {
    /// [`Lookup::lookup_batch`](crate::engine::Lookup::lookup_batch) with
    /// AVX-512, in groups of [`GROUP`] keys (a shorter group walks only the
    /// vectors it fills, its missing lanes looked up at address 0 and not
    /// stored).
    ///
    /// # Safety
    /// The CPU must have AVX-512 F and VPOPCNTDQ ([`available`]).
    #[target_feature(enable = "avx512f,avx512vpopcntdq")]
    pub(super) unsafe fn lookup_batch_wide(&self, addrs: &[A], out: &mut [Option<Label>]) {
        debug_assert!(out.len() >= addrs.len());
        let root = self.root.as_ptr() as *const i32;
        let nodes = self.nodes.as_ptr() as *const i64;
        let leaves = self.leaves.as_ptr() as *const i32;
        let results = self.results.as_ptr() as *const i64;
        let zero = _mm512_setzero_si512();
        let one = _mm512_set1_epi64(1);
        let two = _mm512_set1_epi64(2);
        let low_half = _mm512_set1_epi64(u32::MAX as i64);
        let label_mask = _mm512_set1_epi64((!LEAF) as i64 & u32::MAX as i64);
        let leaf_flag = _mm512_set1_epi64(LEAF as i64);
        // `& 31`: S <= 20; both shifts stay inside a 64-bit half.
        let root_bits = (self.root_bits & 31) as i64;
        let to_root = _mm512_set1_epi64(64 - root_bits);
        let by_root = _mm512_set1_epi64(root_bits);
        let high_words = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
        let low_words = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14);
        // IPv6 keys are read where they are (masked loads for a short
        // group) and the answers stored in place (masked stores): a burst
        // of eight costs no copy and no buffer to clear. IPv4 keys are
        // first copied left-aligned into `keys`, and the answers of a short
        // group go through `answers`.
        let in_place = TypeId::of::<A>() == TypeId::of::<u128>();
        let mut buffers = if in_place {
            None
        } else {
            Some(([0u128; GROUP], [None; GROUP]))
        };
        for (addrs, out) in addrs.chunks(GROUP).zip(out.chunks_mut(GROUP)) {
            let full = addrs.len() == GROUP;
            let vectors = addrs.len().div_ceil(LANES);
            let (words, stores): (*const u128, *mut Option<Label>) = match &mut buffers {
                // A is u128 (the type ids are equal): the slice's elements
                // are the left-aligned keys themselves.
                None => (addrs.as_ptr() as *const u128, out.as_mut_ptr()),
                Some((keys, answers)) => {
                    for (key, &addr) in keys.iter_mut().zip(addrs) {
                        *key = left(addr);
                    }
                    keys[addrs.len()..].fill(0);
                    let stores = if full {
                        out.as_mut_ptr()
                    } else {
                        answers.as_mut_ptr()
                    };
                    (keys.as_ptr(), stores)
                }
            };
            // The keys of vector v: all eight, except in the last vector
            // of a short group; lanes past them look up address 0.
            let filled = |v: usize| (addrs.len() - LANES * v).min(LANES);
            let mut hi = [zero; VECTORS];
            let mut lo = [zero; VECTORS];
            let mut node = [zero; VECTORS];
            let mut label = [zero; VECTORS];
            let mut at_node = [0u8; VECTORS];
            let mut at_leaf = [0u8; VECTORS];
            for v in 0..vectors {
                // Two u64 words per key, low word first (x86-64 is
                // little-endian).
                let count = 2 * if in_place { filled(v) } else { LANES };
                let first_half = ((1u32 << count.min(LANES)) - 1) as u8;
                let second_half = ((1u32 << count.saturating_sub(LANES)) - 1) as u8;
                // SAFETY: `words` points to the group's keys (the caller's
                // slice, whose keys 8v..8v + filled(v) exist, or `keys`,
                // which holds GROUP); a masked load touches only the words
                // its mask selects, those of these keys.
                let (a, b) = unsafe {
                    let words = words.add(LANES * v) as *const i64;
                    (
                        _mm512_maskz_loadu_epi64(first_half, words),
                        _mm512_maskz_loadu_epi64(second_half, words.add(LANES)),
                    )
                };
                let (h, l) = (
                    _mm512_permutex2var_epi64(a, high_words, b),
                    _mm512_permutex2var_epi64(a, low_words, b),
                );
                // SAFETY: the index is the top S bits of the key: inside
                // the 2^S root entries (scale 4, u32 entries).
                let entry = _mm512_cvtepu32_epi64(unsafe {
                    _mm512_i64gather_epi32::<4>(_mm512_srlv_epi64(h, to_root), root)
                });
                at_node[v] = !_mm512_test_epi64_mask(entry, leaf_flag);
                node[v] = entry;
                label[v] = _mm512_and_si512(entry, label_mask);
                hi[v] =
                    _mm512_or_si512(_mm512_sllv_epi64(h, by_root), _mm512_srlv_epi64(l, to_root));
                lo[v] = _mm512_sllv_epi64(l, by_root);
            }
            while at_node.iter().any(|&lanes| lanes != 0) {
                for v in 0..VECTORS {
                    let lanes = at_node[v];
                    if lanes == 0 {
                        continue;
                    }
                    let first = _mm512_slli_epi64::<2>(node[v]);
                    // SAFETY: a lane at a node holds a node the build made
                    // (a root entry or a base plus a count of its children
                    // that are nodes); words 4n and 4n + 2 are inside
                    // `nodes`; lanes outside `lanes` read nothing.
                    let (children, bases) = unsafe {
                        (
                            _mm512_mask_i64gather_epi64::<8>(zero, lanes, first, nodes),
                            _mm512_mask_i64gather_epi64::<8>(zero, lanes, first, nodes.add(2)),
                        )
                    };
                    let child = _mm512_srli_epi64::<58>(hi[v]);
                    let below = _mm512_sub_epi64(_mm512_sllv_epi64(two, child), one);
                    let deeper =
                        lanes & _mm512_test_epi64_mask(children, _mm512_sllv_epi64(one, child));
                    let next = _mm512_sub_epi64(
                        _mm512_add_epi64(
                            _mm512_and_si512(bases, low_half),
                            _mm512_popcnt_epi64(_mm512_and_si512(children, below)),
                        ),
                        one,
                    );
                    node[v] = _mm512_mask_mov_epi64(node[v], deeper, next);
                    // A lane whose child is a leaf keeps its node and the
                    // mask of the children up to its own.
                    let ended = lanes & !deeper;
                    label[v] = _mm512_mask_mov_epi64(label[v], ended, below);
                    at_leaf[v] |= ended;
                    at_node[v] = deeper;
                    hi[v] = _mm512_or_si512(
                        _mm512_slli_epi64::<6>(hi[v]),
                        _mm512_srli_epi64::<58>(lo[v]),
                    );
                    lo[v] = _mm512_slli_epi64::<6>(lo[v]);
                }
            }
            for v in 0..vectors {
                let lanes = at_leaf[v];
                let first = _mm512_slli_epi64::<2>(node[v]);
                // SAFETY: as in the walk for words 4n + 1 and 4n + 2; the
                // leaf index (first leaf + runs up to the child - 1) is a
                // run of that node, inside `leaves`; every label index
                // (from a root entry or a leaf) is inside `results`, whose
                // slots are u64; the masked store writes answers 8v.. of
                // `stores` (the caller's `out`, whose group has filled(v)
                // of them from 8v, or `answers`, which has 8).
                unsafe {
                    let runs = _mm512_mask_i64gather_epi64::<8>(zero, lanes, first, nodes.add(1));
                    let bases = _mm512_mask_i64gather_epi64::<8>(zero, lanes, first, nodes.add(2));
                    let leaf = _mm512_sub_epi64(
                        _mm512_add_epi64(
                            _mm512_srli_epi64::<32>(bases),
                            _mm512_popcnt_epi64(_mm512_and_si512(runs, label[v])),
                        ),
                        one,
                    );
                    let index = _mm512_cvtepu32_epi64(_mm512_mask_i64gather_epi32::<4>(
                        _mm512_cvtepi64_epi32(label[v]),
                        lanes,
                        leaf,
                        leaves,
                    ));
                    let slots = _mm512_i64gather_epi64::<8>(index, results);
                    // A slot's bits are its answer as an `Option<Label>`
                    // (the layout `LabelSlot::get` checks at compile time).
                    let stored = if in_place || full { filled(v) } else { LANES };
                    _mm512_mask_storeu_epi64(
                        stores.add(LANES * v) as *mut i64,
                        ((1u32 << stored) - 1) as u8,
                        slots,
                    );
                }
            }
            if let Some((_, answers)) = &buffers {
                if !full {
                    out[..addrs.len()].copy_from_slice(&answers[..addrs.len()]);
                }
            }
        }
    }
}
