//! The AVX2 count of a node, for CPUs with AVX2 but not AVX-512 (AMD Zen 2
//! and 3, Intel client cores): four 256-bit compares of its sixteen keys
//! with the address's top half, four sign masks and one population count.
//! AVX2 has only a signed 64-bit compare (`vpcmpgtq`); flipping the sign
//! bit of both sides turns it into the unsigned one the keys need.

use std::arch::x86_64::*;

use super::{descend_groups, search_one, top64, Btree, GROUP, MAX_LEVELS, NODE_KEYS};
use crate::addr::Addr;
use crate::prefix::Label;
use crate::storage::Storage;

const _: () = assert!(NODE_KEYS == 16, "a node is four vectors of four keys");

/// Whether this CPU runs the AVX2 search (`popcnt` comes with AVX2 on
/// every CPU that has it, and is checked all the same).
pub(super) fn available() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("popcnt")
}

/// The count of `node`'s sixteen keys `<= x`; `flipped` is `x` with its
/// sign bit flipped, broadcast.
#[inline]
#[target_feature(enable = "avx2,popcnt")]
fn count_le(node: &[u64], flipped: __m256i) -> usize {
    let node = &node[..NODE_KEYS];
    let ptr = node.as_ptr() as *const __m256i;
    let sign = _mm256_set1_epi64x(i64::MIN);
    let mut above = 0u32;
    for i in 0..4 {
        // SAFETY: `node` holds sixteen u64s (checked by the slice above):
        // the four unaligned 32-byte loads read exactly them.
        let keys = unsafe { _mm256_loadu_si256(ptr.add(i)) };
        let greater = _mm256_cmpgt_epi64(_mm256_xor_si256(keys, sign), flipped);
        above |= (_mm256_movemask_pd(_mm256_castsi256_pd(greater)) as u32) << (4 * i);
    }
    NODE_KEYS - above.count_ones() as usize
}

/// `x` with its sign bit flipped, broadcast to four lanes.
#[inline]
#[target_feature(enable = "avx2")]
fn flip(x: u64) -> __m256i {
    _mm256_set1_epi64x((x ^ 1 << 63) as i64)
}

impl<A: Addr, S: Storage> Btree<A, S> {
    /// [`Btree::lookup_portable`] with the AVX2 count.
    ///
    /// # Safety
    /// The CPU must have AVX2 and POPCNT ([`available`]).
    #[target_feature(enable = "avx2,popcnt")]
    pub(super) unsafe fn lookup_avx2(&self, addr: A) -> Option<Label> {
        search_one!(self, addr, |node: &[u64], x: u64| count_le(node, flip(x)))
    }

    /// [`Btree::lookup_batch_portable`] with the AVX2 count.
    ///
    /// # Safety
    /// As [`Btree::lookup_avx2`].
    #[target_feature(enable = "avx2,popcnt")]
    pub(super) unsafe fn lookup_batch_avx2(&self, addrs: &[A], out: &mut [Option<Label>]) {
        descend_groups!(self, addrs, out, |node: &[u64], x: u64| count_le(
            node,
            flip(x)
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The AVX2 count equals the plain one on sorted nodes whose keys
    /// straddle the sign bit (where a signed compare would go wrong), with
    /// padding (`u64::MAX`), at every key, one either side, and the ends.
    #[test]
    fn counts_agree_with_the_plain_count() {
        if !available() {
            return;
        }
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for round in 0..2000 {
            let mut node: Vec<u64> = (0..NODE_KEYS)
                .map(|i| match round % 4 {
                    // Around the sign bit.
                    0 => (1 << 63) - 8 + (next() % 16),
                    // Small keys and huge ones.
                    1 if i % 2 == 0 => next() % 64,
                    1 => u64::MAX - next() % 64,
                    _ => next(),
                })
                .collect();
            node.sort_unstable();
            // Padding at the end of the last node of a level.
            for key in node.iter_mut().skip(NODE_KEYS - round % 5) {
                *key = u64::MAX;
            }
            let mut probes = vec![0, u64::MAX, 1 << 63, (1 << 63) - 1];
            for &key in &node {
                probes.extend([key, key.wrapping_sub(1), key.wrapping_add(1)]);
            }
            for x in probes {
                // SAFETY: `available` checked AVX2 and POPCNT.
                let vector = unsafe { count_le(&node, flip(x)) };
                assert_eq!(vector, super::super::count_le(&node, x), "{node:x?} {x:#x}");
            }
        }
    }
}
