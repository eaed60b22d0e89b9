//! Tables and probes the unit tests of the vector batch paths share.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::Dxr6Config;
use crate::prefix::Prefix;
use crate::rib::Rib;

/// Nested random prefixes under a few /24s, lengths 24..=128, so that
/// leaves take starts of every width, and label entries, nodes of several
/// levels and leaves all occur.
pub(super) fn mixed_table(seed: u64) -> Rib<u128> {
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
pub(super) fn probes(rib: &Rib<u128>, seed: u64) -> Vec<u128> {
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

/// Seeds of [`mixed_table`] and the layouts to build them with: the
/// default, the smallest root with the shortest strides (deep walks), the
/// largest root with the widest, and leaves at multiples of 2 and 8 words
/// (the leaf places of tables past 2^19 lines).
pub(super) const TEST_CONFIGS: [(u64, Dxr6Config); 5] = [
    (1, super::DEFAULT_CONFIG),
    (
        2,
        Dxr6Config {
            root_bits: 8,
            max_stride: 3,
            density: 1,
            align: None,
        },
    ),
    (
        3,
        Dxr6Config {
            root_bits: 24,
            max_stride: 16,
            density: 64,
            align: None,
        },
    ),
    (4, super::DEFAULT_CONFIG.with_align(2)),
    (
        5,
        Dxr6Config {
            root_bits: 8,
            max_stride: 3,
            density: 1,
            align: Some(8),
        },
    ),
];
