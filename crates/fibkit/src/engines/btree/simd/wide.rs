//! The AVX-512 count of a node: two 512-bit compares of its sixteen keys
//! with the address's top half, one population count. Why: x86-64's
//! baseline has no unsigned 64-bit vector compare, so plain code compares
//! the keys one by one; this is the form of the count PlanB's design rests
//! on, and the one measured (docs/bench/btree.md, "`btree` and `dxr6:k=12`
//! beside `rte_fib6`").

use std::arch::x86_64::*;

use super::{descend_groups, search_one, top64, Btree, GROUP, MAX_LEVELS, NODE_KEYS};
use crate::addr::Addr;
use crate::prefix::Label;
use crate::storage::Storage;

const _: () = assert!(NODE_KEYS == 16, "a node is two vectors of eight keys");

/// Whether this CPU runs the AVX-512 search (F; `popcnt` comes with it on
/// every CPU that has it, and is checked all the same).
pub(super) fn available() -> bool {
    std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("popcnt")
}

/// The count of `node`'s sixteen keys `<= x` (`x` broadcast).
#[inline]
#[target_feature(enable = "avx512f,popcnt")]
fn count_le(node: &[u64], x: __m512i) -> usize {
    let node = &node[..NODE_KEYS];
    // SAFETY: `node` holds sixteen u64s (checked by the slice above): the
    // two unaligned 64-byte loads read exactly them.
    let (low, high) = unsafe {
        (
            _mm512_loadu_si512(node.as_ptr() as *const __m512i),
            _mm512_loadu_si512(node.as_ptr().add(8) as *const __m512i),
        )
    };
    let mask =
        _mm512_cmple_epu64_mask(low, x) as u32 | (_mm512_cmple_epu64_mask(high, x) as u32) << 8;
    mask.count_ones() as usize
}

impl<A: Addr, S: Storage> Btree<A, S> {
    /// [`Btree::lookup_portable`] with the AVX-512 count.
    ///
    /// # Safety
    /// The CPU must have AVX-512 F and POPCNT ([`available`]).
    #[target_feature(enable = "avx512f,popcnt")]
    pub(super) unsafe fn lookup_wide(&self, addr: A) -> Option<Label> {
        search_one!(self, addr, |node: &[u64], x: u64| {
            count_le(node, _mm512_set1_epi64(x as i64))
        })
    }

    /// [`Btree::lookup_batch_portable`] with the AVX-512 count.
    ///
    /// # Safety
    /// As [`Btree::lookup_wide`].
    #[target_feature(enable = "avx512f,popcnt")]
    pub(super) unsafe fn lookup_batch_wide(&self, addrs: &[A], out: &mut [Option<Label>]) {
        descend_groups!(self, addrs, out, |node: &[u64], x: u64| {
            count_le(node, _mm512_set1_epi64(x as i64))
        });
    }
}
