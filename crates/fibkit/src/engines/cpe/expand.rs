//! Controlled prefix expansion (Srinivasan & Varghese, section 4.1).
//!
//! A table with arbitrary prefix lengths becomes an equivalent table whose
//! prefixes all have one of the target lengths `L1 < ... < Lk`: a prefix of
//! length `l` is replaced by the `2^(Lj - l)` prefixes of the smallest target
//! length `Lj >= l`. Where two expansions (or an expansion and an original
//! prefix) collide, the one descending from the *longer* original prefix wins
//! (prefix capture), so longest-prefix matches are unchanged.

use std::collections::HashMap;

use crate::addr::Addr;
use crate::engine::BuildError;
use crate::prefix::{Label, Prefix};

/// Largest number of prefixes one original prefix may expand into; beyond
/// it [`expand`] fails instead of exhausting memory.
pub const MAX_EXPANSION: u128 = 1 << 24;

/// One prefix of an expanded table, with the original prefix it descends from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expanded<A> {
    /// The expanded prefix (its length is one of the target lengths).
    pub prefix: Prefix<A>,
    /// The label it inherits.
    pub label: Label,
    /// The original prefix it was expanded from (itself if not expanded).
    pub origin: Prefix<A>,
}

/// Expands `prefixes` to the target `lengths` (strictly increasing, each at
/// most the address width) with prefix capture; the result is sorted by
/// prefix. Fails if a prefix is longer than the longest target length, if
/// the lengths are not increasing, or if one prefix would expand into more
/// than [`MAX_EXPANSION`] prefixes.
pub fn expand<A: Addr>(
    prefixes: &[(Prefix<A>, Label)],
    lengths: &[u8],
) -> Result<Vec<Expanded<A>>, BuildError> {
    let limit = |why: String| BuildError::Limit {
        engine: "cpe expand".to_string(),
        why,
    };
    if lengths.windows(2).any(|w| w[0] >= w[1]) || lengths.iter().any(|&l| l > A::BITS) {
        return Err(limit(format!(
            "target lengths {lengths:?} must increase strictly and be at most {}",
            A::BITS
        )));
    }
    let mut out: HashMap<Prefix<A>, Expanded<A>> = HashMap::with_capacity(prefixes.len());
    for &(origin, label) in prefixes {
        let plen = origin.plen();
        let Some(&target) = lengths.iter().find(|&&l| l >= plen) else {
            return Err(limit(format!(
                "{origin} is longer than the longest target length {:?} (add {} to the targets)",
                lengths.last(),
                plen
            )));
        };
        let count = 1u128 << (target - plen);
        if count > MAX_EXPANSION {
            return Err(limit(format!(
                "{origin} would expand into 2^{} prefixes of length {target} (at most 2^24; add a shorter target length)",
                target - plen
            )));
        }
        let step = if target == 0 {
            0
        } else {
            1u128 << (A::BITS - target)
        };
        for i in 0..count {
            let addr = A::from_u128(origin.addr().to_u128() + i * step);
            let prefix = Prefix::new_masked(addr, target);
            let candidate = Expanded {
                prefix,
                label,
                origin,
            };
            // Capture: an expansion of a longer original prefix wins.
            out.entry(prefix)
                .and_modify(|e| {
                    if e.origin.plen() < plen {
                        *e = candidate;
                    }
                })
                .or_insert(candidate);
        }
    }
    let mut out: Vec<Expanded<A>> = out.into_values().collect();
    out.sort_unstable_by_key(|e| e.prefix);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A prefix of the paper's 8-bit toy address space, written as bits.
    fn bits(text: &str) -> Prefix<u32> {
        let plen = text.len() as u8;
        let value = if plen == 0 {
            0
        } else {
            u32::from_str_radix(text, 2).unwrap() << (32 - plen)
        };
        Prefix::new(value, plen).unwrap()
    }

    /// Figure 1 of the paper: P1..P8 expanded to lengths 2, 5 and 7.
    #[test]
    fn figure_1() {
        let original = [
            ("0", 5),
            ("10", 1),
            ("111", 2),
            ("11001", 3),
            ("1", 4),
            ("1000", 6),
            ("100000", 7),
            ("1000000", 8),
        ];
        let table: Vec<_> = original.iter().map(|&(b, p)| (bits(b), p)).collect();
        let expanded = expand(&table, &[2, 5, 7]).unwrap();
        let mut got: Vec<(Prefix<u32>, Label)> =
            expanded.iter().map(|e| (e.prefix, e.label)).collect();
        got.sort();
        let figure = [
            ("00", 5),
            ("01", 5),
            ("10", 1),
            ("11", 4),
            ("11100", 2),
            ("11101", 2),
            ("11110", 2),
            ("11111", 2),
            ("11001", 3),
            ("10000", 6),
            ("10001", 6),
            ("1000001", 7),
            ("1000000", 8),
        ];
        let mut want: Vec<_> = figure.iter().map(|&(b, p)| (bits(b), p)).collect();
        want.sort();
        assert_eq!(got, want);
        // 11101* descends from P2 = 111*.
        let e = expanded.iter().find(|e| e.prefix == bits("11101")).unwrap();
        assert_eq!(e.origin, bits("111"));
    }

    #[test]
    fn errors_name_the_limit() {
        let table = vec![(bits("1010101"), 1)];
        let err = expand(&table, &[2, 5]).unwrap_err().to_string();
        assert!(err.contains("longer than the longest target"), "{err}");
        let err = expand(&table, &[5, 2]).unwrap_err().to_string();
        assert!(err.contains("increase strictly"), "{err}");
        let err = expand(&[(bits(""), 1)], &[32]).unwrap_err().to_string();
        assert!(err.contains("2^32"), "{err}");
    }
}
