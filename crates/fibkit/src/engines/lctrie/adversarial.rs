//! The adversarial IPv4 table of docs/bench/lctrie.md ("LC-trie"): built as
//! Duyck's test set was (paper, "Performance evaluation"), so that looked-up
//! addresses sit at the deepest part of the trie, have many set bits, and
//! find their match only after backtracking through every level.

use std::collections::HashSet;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::prefix::Prefix;
use crate::rib::Rib;

/// Length of the group prefixes; the deep part of each address is the rest.
const REGION_PLEN: u8 = 12;
const HOST_BITS: u32 = 32 - REGION_PLEN as u32;

/// A table of `groups` groups (at most 1024) plus a default route, and one
/// deep address per group; deterministic in `seed`.
///
/// Group `g` owns a `/12` region `R` whose 12 bits are set with probability
/// 3/4, announced as `R/12` (label `g % 200`). Its deep address `K` is `R`
/// followed by 20 bits set with probability 7/8. For every bit `j` of those
/// 20, the host route `K ^ 2^j` and two more host routes that agree with `K`
/// above bit `j` (random below it) are announced: the trie under `R` branches
/// at every bit of `K`'s host part, and `K` itself matches none of the host
/// routes, only `R/12`. A look-up of `K` therefore descends to the bottom of
/// the group's sub-trie and has to backtrack over every set bit of `K` below
/// bit 20 (the classic look-up) unless suffix lengths tell it that nothing
/// below the `/12` can match (the improved look-up).
pub fn adversarial_table_v4(groups: usize, seed: u64) -> (Rib<u32>, Vec<u32>) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut rib = Rib::new();
    rib.insert(Prefix::default_route(), 200);
    let mut regions = HashSet::new();
    let mut keys = Vec::with_capacity(groups);
    let groups = groups.min(1 << (REGION_PLEN - 2));
    while keys.len() < groups {
        let region = (rng.random::<u32>() | rng.random::<u32>()) >> HOST_BITS;
        if !regions.insert(region) {
            continue;
        }
        let g = keys.len() as u32;
        rib.insert(
            Prefix::new_masked(region << HOST_BITS, REGION_PLEN),
            g % 200,
        );
        let low = (rng.random::<u32>() | rng.random::<u32>() | rng.random::<u32>())
            & ((1 << HOST_BITS) - 1);
        let key = (region << HOST_BITS) | low;
        for j in 0..HOST_BITS {
            let flipped = key ^ (1 << j);
            let below = (1u32 << j) - 1;
            for extra in 0..3u32 {
                let host = if extra == 0 {
                    flipped
                } else {
                    flipped ^ (rng.random::<u32>() & below)
                };
                rib.insert(Prefix::new_masked(host, 32), (g + extra + j) % 200);
            }
        }
        keys.push(key);
    }
    (rib, keys)
}
