//! Checking an engine against the reference table.
//!
//! Every engine is checked at every boundary of the reference table's
//! (unmerged) range view, the first and last address of each range and the
//! addresses just before and after, where an off-by-one in an engine would
//! show, plus seeded random addresses: half uniform over the address space,
//! half inside randomly chosen prefixes of the table (for IPv6, uniform
//! addresses almost never hit an announced prefix). The single lookup, the
//! batch lookup and the batch lookup into words are compared with the
//! reference trie's own longest match.

use crate::addr::Addr;
use crate::engine::Lookup;
use crate::labels::{word_of, NO_ROUTE_WORD};
use crate::prefix::{Label, Prefix};
use crate::rib::Rib;

/// How many mismatches a report keeps in detail.
pub const MAX_REPORTED_MISMATCHES: usize = 20;

/// One address where an engine disagreed with the reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch<A> {
    /// The address looked up.
    pub addr: A,
    /// The reference answer: matched prefix and label.
    pub expected: Option<(Prefix<A>, Label)>,
    /// The engine's single lookup answer.
    pub got: Option<Label>,
    /// The engine's batch lookup answer.
    pub got_batch: Option<Label>,
    /// The engine's answer as a word ([`Lookup::lookup_batch_words`]).
    pub got_word: u64,
}

impl<A: Addr> std::fmt::Display for Mismatch<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |label: Option<Label>| label.map_or("none".to_string(), |l| l.to_string());
        write!(f, "{}: expected ", self.addr.display())?;
        match self.expected {
            Some((prefix, label)) => write!(f, "{label} (from {prefix})")?,
            None => write!(f, "none")?,
        }
        write!(
            f,
            ", got {} (batch: {}, word: {})",
            show(self.got),
            show(self.got_batch),
            match self.got_word {
                NO_ROUTE_WORD => "none".to_string(),
                word => word.to_string(),
            }
        )
    }
}

/// The outcome of [`verify`].
#[derive(Clone, Debug, Default)]
pub struct VerifyReport<A> {
    /// Addresses checked.
    pub checked: u64,
    /// Addresses where the engine agreed (single and batch).
    pub passed: u64,
    /// Addresses where it did not.
    pub failed: u64,
    /// The first [`MAX_REPORTED_MISMATCHES`] mismatches.
    pub mismatches: Vec<Mismatch<A>>,
}

impl<A> VerifyReport<A> {
    /// Whether every address agreed.
    pub fn ok(&self) -> bool {
        self.failed == 0
    }
}

/// The addresses [`verify`] checks: every range boundary and its neighbours,
/// then `random` seeded random addresses.
pub fn check_addresses<A: Addr>(rib: &Rib<A>, random: usize, seed: u64) -> Vec<A> {
    let mut ranges = Vec::new();
    rib.ranges_in(A::ZERO, A::MAX, false, &mut ranges);
    let mut addrs = Vec::with_capacity(ranges.len() * 4 + random);
    for range in &ranges {
        addrs.push(range.first);
        addrs.push(range.last);
        addrs.extend(range.first.checked_prev());
        addrs.extend(range.last.checked_next());
    }
    addrs.sort_unstable();
    addrs.dedup();
    let prefixes: Vec<Prefix<A>> = if random > 0 {
        rib.iter().map(|(p, _)| p).collect()
    } else {
        Vec::new()
    };
    let mut rng = SplitMix64(seed);
    for i in 0..random {
        let uniform = A::from_u128((rng.next() as u128) << 64 | rng.next() as u128);
        let addr = if i % 2 == 0 || prefixes.is_empty() {
            uniform
        } else {
            // The modulo's bias (under 2^-40 for any table) does not matter
            // to a check.
            let prefix = prefixes[(rng.next() % prefixes.len() as u64) as usize];
            // Keep the prefix bits, take the host bits from `uniform`.
            let host = uniform.to_u128() & !A::mask(prefix.plen()).to_u128();
            A::from_u128(prefix.addr().to_u128() | host)
        };
        addrs.push(addr);
    }
    addrs
}

/// Vigna's SplitMix64: seeded random check addresses without a dependency,
/// so verification is in the core (without the `bench` feature's rand).
pub(crate) struct SplitMix64(pub(crate) u64);

impl SplitMix64 {
    /// The next 64 random bits.
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Checks `engine` against `rib` on [`check_addresses`]`(rib, random, seed)`.
pub fn verify<A: Addr, L: Lookup<A> + ?Sized>(
    engine: &L,
    rib: &Rib<A>,
    random: usize,
    seed: u64,
) -> VerifyReport<A> {
    let addrs = check_addresses(rib, random, seed);
    let mut batch = vec![None; addrs.len()];
    engine.lookup_batch(&addrs, &mut batch);
    let mut words = vec![0; addrs.len()];
    engine.lookup_batch_words(&addrs, &mut words);
    let mut report = VerifyReport {
        checked: addrs.len() as u64,
        ..VerifyReport::default()
    };
    for ((&addr, &got_batch), &got_word) in addrs.iter().zip(&batch).zip(&words) {
        let expected = rib.longest_match(addr);
        let got = engine.lookup(addr);
        let want = expected.map(|(_, label)| label);
        if got == want && got_batch == want && got_word == word_of(want) {
            report.passed += 1;
        } else {
            report.failed += 1;
            if report.mismatches.len() < MAX_REPORTED_MISMATCHES {
                report.mismatches.push(Mismatch {
                    addr,
                    expected,
                    got,
                    got_batch,
                    got_word,
                });
            }
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An engine that is wrong on one address, to prove verify can fail.
    struct OffByOne(Rib<u32>);

    impl Lookup<u32> for OffByOne {
        fn memory_bytes(&self) -> usize {
            0
        }
        fn lookup(&self, addr: u32) -> Option<Label> {
            if addr == 0x0a00_0000 {
                self.0.lookup(addr - 1)
            } else {
                self.0.lookup(addr)
            }
        }
    }

    #[test]
    fn boundaries_include_neighbours() {
        let rib = Rib::<u32>::from_pairs([("10.0.0.0/8".parse().unwrap(), 1)]);
        let addrs = check_addresses(&rib, 0, 1);
        assert_eq!(
            addrs,
            vec![
                0,
                0x09ff_ffff,
                0x0a00_0000,
                0x0aff_ffff,
                0x0b00_0000,
                u32::MAX
            ]
        );
    }

    #[test]
    fn verify_catches_a_wrong_engine() {
        let rib = Rib::<u32>::from_pairs([("10.0.0.0/8".parse().unwrap(), 1)]);
        let wrong = OffByOne(rib.clone());
        let report = verify(&wrong, &rib, 100, 7);
        assert_eq!(report.failed, 1);
        assert_eq!(report.mismatches[0].addr, 0x0a00_0000);
        assert_eq!(
            report.mismatches[0].to_string(),
            "10.0.0.0: expected 1 (from 10.0.0.0/8), got none (batch: none, word: none)"
        );
        let right = OffByOne(Rib::new());
        assert!(!verify(&right, &rib, 0, 7).ok());
    }

    /// Right per key and per batch, wrong in words: label 0 for every
    /// address.
    struct ZeroWords(Rib<u32>);

    impl Lookup<u32> for ZeroWords {
        fn memory_bytes(&self) -> usize {
            0
        }
        fn lookup(&self, addr: u32) -> Option<Label> {
            self.0.lookup(addr)
        }
        fn lookup_batch_words(&self, _: &[u32], out: &mut [u64]) {
            out.fill(0);
        }
    }

    #[test]
    fn verify_catches_wrong_words() {
        let rib = Rib::<u32>::from_pairs([("10.0.0.0/8".parse().unwrap(), 1)]);
        let report = verify(&ZeroWords(rib.clone()), &rib, 0, 7);
        // Every checked address: those outside 10/8 have no route, not 0.
        assert_eq!(report.failed, report.checked);
        assert_eq!(
            report.mismatches[0].to_string(),
            "0.0.0.0: expected none, got none (batch: none, word: 0)"
        );
    }
}
