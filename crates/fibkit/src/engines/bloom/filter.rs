//! The filter: a blocked Bloom filter of 512-bit blocks (Putze, Sanders and
//! Singler, "Cache-, Hash- and Space-Efficient Bloom Filters", WEA 2007),
//! the one hash that places a key in it and in the exact table, and the
//! counting filter the updater keeps beside it.
//!
//! Hash family: one 64-bit hash per key, `KeyHash::of`, built from the
//! MurmurHash3 64-bit finalizer (a bijection on `u64`) over the key's
//! address bits and length. Its high half picks the key's block, its low
//! half the first position and the step of the key's `k` bit positions in
//! the block (double hashing, Kirsch and Mitzenmacher: position `i` is
//! `first + i * step` mod 512 with an odd step, so a key's positions are
//! distinct), and the same low half the key's home slot in the exact table.
//! So a key costs one hash computation however many of its bits a lookup
//! reads, which is what the counters count.

use crate::addr::Addr;
use crate::storage::Plain;

/// Bits in one filter block: one 64-byte cache line.
pub const BLOCK_BITS: u32 = 512;

/// One cache line of the filter. Every bit of a key lies in one block, so
/// testing a key reads one line however many of its bits are tested.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(64))]
pub struct FilterBlock([u64; 8]);

const _: () = assert!(std::mem::size_of::<FilterBlock>() == 64);
const _: () = assert!(std::mem::align_of::<FilterBlock>() == 64);
const _: () = assert!(BLOCK_BITS as usize == 8 * std::mem::size_of::<FilterBlock>());

// SAFETY: eight `u64` words, 64 bytes with an alignment of 64: no padding,
// and every bit pattern is a valid block.
unsafe impl Plain for FilterBlock {}

impl FilterBlock {
    /// Whether bit `position` (0..512) is set.
    #[inline(always)]
    pub fn bit(&self, position: u32) -> bool {
        (self.0[(position >> 6) as usize & 7] >> (position & 63)) & 1 != 0
    }

    /// Sets or clears bit `position`.
    pub fn set_bit(&mut self, position: u32, on: bool) {
        let word = &mut self.0[(position >> 6) as usize & 7];
        let mask = 1u64 << (position & 63);
        if on {
            *word |= mask;
        } else {
            *word &= !mask;
        }
    }

    /// Bits set in the block.
    pub fn count_ones(&self) -> u32 {
        self.0.iter().map(|word| word.count_ones()).sum()
    }
}

/// The MurmurHash3 64-bit finalizer: a bijection whose every output bit
/// depends on every input bit.
#[inline(always)]
fn fmix64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// Mixed into every key so that the all-zero key does not hash to zero.
const SEED: u64 = 0x9e37_79b9_7f4a_7c15;

/// The hash of one key (prefix bits, prefix length): where its bits are in
/// the filter and where its slot is in the exact table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyHash(u64);

impl KeyHash {
    /// The hash of the key `addr/plen` (`addr` with its host bits clear).
    /// For IPv4 the input `plen << 32 | addr` is one-to-one, so distinct
    /// keys never share a hash; IPv6 folds the high half in first.
    #[inline(always)]
    pub fn of<A: Addr>(addr: A, plen: u8) -> Self {
        let wide = addr.to_u128();
        let mut x = SEED ^ ((plen as u64) << 32);
        if A::BITS > 32 {
            x = fmix64(x ^ (wide >> 64) as u64);
        }
        KeyHash(fmix64(x ^ wide as u64))
    }

    /// The key's block among `blocks` (at most 2^32): the high half scaled
    /// to the block count (Lemire's multiply-shift range reduction).
    #[inline(always)]
    pub fn block(self, blocks: usize) -> usize {
        (((self.0 >> 32) * blocks as u64) >> 32) as usize
    }

    /// The position in the key's block of its bit number `i`.
    #[inline(always)]
    pub fn position(self, i: u32) -> u32 {
        let first = self.0 as u32;
        let step = (first >> 9) | 1;
        first.wrapping_add(i.wrapping_mul(step)) & (BLOCK_BITS - 1)
    }

    /// The key's home slot in an exact table of `slots` slots (at most 2^32).
    #[inline(always)]
    pub fn slot(self, slots: usize) -> usize {
        (((self.0 & 0xffff_ffff) * slots as u64) >> 32) as usize
    }
}

/// Four-bit saturating counters, one per filter bit: the counting Bloom
/// filter of Fan, Cao, Almeida and Broder (2000), which Dharmapurikar et al.
/// keep in the control plane so that a withdrawal can clear the bits no
/// other key sets. A counter that reaches 15 stays there (its true count is
/// lost), so its bit is never cleared: a false positive at worst, never a
/// false negative. Build state: lookups never read it.
#[derive(Clone, Debug)]
pub struct CountingFilter {
    nibbles: Vec<u64>,
}

const NIBBLES_PER_WORD: usize = 16;
const SATURATED: u64 = 15;

impl CountingFilter {
    /// Counters for `bits` filter bits, all zero.
    pub fn new(bits: usize) -> Self {
        CountingFilter {
            nibbles: vec![0; bits.div_ceil(NIBBLES_PER_WORD)],
        }
    }

    #[inline]
    fn locate(bit: usize) -> (usize, u32) {
        (bit / NIBBLES_PER_WORD, 4 * (bit % NIBBLES_PER_WORD) as u32)
    }

    /// Makes these `bits` counters, all zero, in the memory already held
    /// (a rebuild in place).
    pub fn reset(&mut self, bits: usize) {
        self.nibbles.clear();
        self.nibbles.resize(bits.div_ceil(NIBBLES_PER_WORD), 0);
    }

    /// Counts one more key setting `bit`; whether the bit was clear before.
    pub fn add(&mut self, bit: usize) -> bool {
        let (word, shift) = Self::locate(bit);
        let count = (self.nibbles[word] >> shift) & 15;
        if count < SATURATED {
            self.nibbles[word] += 1 << shift;
        }
        count == 0
    }

    /// Counts one key fewer setting `bit` (which must be counted); whether
    /// the bit is clear now.
    pub fn remove(&mut self, bit: usize) -> bool {
        let (word, shift) = Self::locate(bit);
        let count = (self.nibbles[word] >> shift) & 15;
        debug_assert!(count > 0, "removing an uncounted bit");
        if count == SATURATED || count == 0 {
            return false;
        }
        self.nibbles[word] -= 1 << shift;
        count == 1
    }

    /// Bytes the counters occupy.
    pub fn memory_bytes(&self) -> usize {
        self.nibbles.len() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_distinct_and_in_the_block() {
        for key in 0..2000u32 {
            let hash = KeyHash::of(key << 8, 24);
            let mut seen = std::collections::HashSet::new();
            for i in 0..32 {
                let position = hash.position(i);
                assert!(position < BLOCK_BITS);
                assert!(seen.insert(position), "key {key}: position {i} repeats");
            }
            assert!(hash.block(1000) < 1000 && hash.slot(77) < 77);
        }
    }

    #[test]
    fn keys_differing_in_length_or_family_half_hash_apart() {
        assert_ne!(KeyHash::of(0u32, 0), KeyHash::of(0u32, 1));
        assert_ne!(KeyHash::of(0u128, 0), KeyHash::of(0u128, 1));
        assert_ne!(KeyHash::of(1u128 << 64, 64), KeyHash::of(1u128, 64));
        // Blocks spread: 4096 keys over 64 blocks, none empty.
        let mut used = [false; 64];
        for key in 0..4096u32 {
            used[KeyHash::of(key << 12, 20).block(64)] = true;
        }
        assert!(used.iter().all(|&u| u));
    }

    #[test]
    fn blocks_set_and_clear_bits() {
        let mut block = FilterBlock::default();
        block.set_bit(0, true);
        block.set_bit(511, true);
        block.set_bit(64, true);
        assert!(block.bit(0) && block.bit(511) && block.bit(64) && !block.bit(63));
        assert_eq!(block.count_ones(), 3);
        block.set_bit(64, false);
        assert!(!block.bit(64));
        assert_eq!(block.count_ones(), 2);
    }

    #[test]
    fn counters_saturate_and_then_stick() {
        let mut counts = CountingFilter::new(100);
        assert!(counts.add(17));
        assert!(!counts.add(17));
        assert!(!counts.remove(17));
        assert!(counts.remove(17));
        for _ in 0..20 {
            counts.add(99);
        }
        for _ in 0..20 {
            assert!(!counts.remove(99), "a saturated counter never clears");
        }
        // Neighbouring counters are independent.
        assert!(counts.add(16) && counts.add(18));
        assert!(counts.remove(16));
    }
}
