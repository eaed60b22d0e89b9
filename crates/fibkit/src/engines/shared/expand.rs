//! Controlled prefix expansion (Srinivasan & Varghese, section 4.1).
//!
//! A table with arbitrary prefix lengths becomes an equivalent table whose
//! prefixes all have one of the target lengths `L1 < ... < Lk`: a prefix of
//! length `l` is replaced by the `2^(Lj - l)` prefixes of the smallest target
//! length `Lj >= l`. Where two expansions (or an expansion and an original
//! prefix) collide, the one descending from the *longer* original prefix wins
//! (prefix capture), so longest-prefix matches are unchanged.

use std::borrow::Cow;

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
/// than [`MAX_EXPANSION`] prefixes. Of two equal prefixes the first counts.
///
/// Each target length is painted in one sweep over its prefixes in trie
/// pre-order, a stack holding the prefixes that cover the current address:
/// every string is written once, by the longest prefix covering it, so
/// time and memory follow the output (no map of strings, which cost more
/// than the strings themselves where millions are expanded).
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
    for &(origin, _) in prefixes {
        let plen = origin.plen();
        let Some(&target) = lengths.iter().find(|&&l| l >= plen) else {
            return Err(limit(format!(
                "{origin} is longer than the longest target length {:?} (add {} to the targets)",
                lengths.last(),
                plen
            )));
        };
        if 1u128 << (target - plen) > MAX_EXPANSION {
            return Err(limit(format!(
                "{origin} would expand into 2^{} prefixes of length {target} (at most 2^24; add a shorter target length)",
                target - plen
            )));
        }
    }
    let sorted: Cow<'_, [(Prefix<A>, Label)]> = if prefixes.is_sorted_by_key(|&(p, _)| p) {
        Cow::Borrowed(prefixes)
    } else {
        let mut owned = prefixes.to_vec();
        // Stable, so the first of two equal prefixes stays first.
        owned.sort_by_key(|&(p, _)| p);
        Cow::Owned(owned)
    };
    let mut out = Vec::new();
    let mut shorter = None;
    for &target in lengths {
        let group = sorted
            .iter()
            .filter(|(p, _)| p.plen() <= target && shorter.is_none_or(|s| p.plen() > s));
        paint(group, target, &mut out);
        shorter = Some(target);
    }
    // Each length's strings are one sorted run; a stable sort merges runs.
    out.sort_by_key(|e| e.prefix);
    Ok(out)
}

/// Appends the strings of length `target` that the prefixes `group` (in
/// trie pre-order, none longer than `target`) cover, each labelled by the
/// longest prefix of `group` that covers it, in address order.
fn paint<'a, A: Addr + 'a>(
    group: impl Iterator<Item = &'a (Prefix<A>, Label)>,
    target: u8,
    out: &mut Vec<Expanded<A>>,
) {
    let shift = u32::from(A::BITS - target);
    // A string's address step; 0 for the one string of length 0.
    let step = 1u128.checked_shl(shift).unwrap_or(0);
    // The prefixes covering the current address, shortest first, each with
    // the first address whose strings it has not written yet (past its
    // last address, or `None` past the address space, once a covered prefix
    // took the rest).
    let mut open: Vec<(Prefix<A>, Label, Option<u128>)> = Vec::new();
    let mut write = |origin: Prefix<A>, label: Label, from: u128, to: u128| {
        let count = (to - from).checked_shr(shift).unwrap_or(0) + 1;
        out.extend((0..count).map(|i| Expanded {
            prefix: Prefix::new_masked(A::from_u128(from + i * step), target),
            label,
            origin,
        }));
    };
    for &(prefix, label) in group {
        if open.last().is_some_and(|&(p, _, _)| p == prefix) {
            continue;
        }
        while let Some(&(top, top_label, next)) = open.last() {
            if top.covers(prefix) {
                break;
            }
            let last = top.last().to_u128();
            if let Some(next) = next.filter(|&next| next <= last) {
                write(top, top_label, next, last);
            }
            open.pop();
        }
        let first = prefix.first().to_u128();
        if let Some((parent, parent_label, next)) = open.last_mut() {
            if let Some(from) = next.filter(|&from| from < first) {
                write(*parent, *parent_label, from, first - 1);
            }
            *next = prefix.last().checked_next().map(A::to_u128);
        }
        open.push((prefix, label, Some(first)));
    }
    while let Some((top, top_label, next)) = open.pop() {
        let last = top.last().to_u128();
        if let Some(next) = next.filter(|&next| next <= last) {
            write(top, top_label, next, last);
        }
    }
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

    /// The expansion by definition: every string of a target length that a
    /// prefix covers, kept from the longest such prefix (the first of equal
    /// ones).
    fn expand_by_map<A: Addr>(
        prefixes: &[(Prefix<A>, Label)],
        lengths: &[u8],
    ) -> Vec<(Prefix<A>, Label, Prefix<A>)> {
        let mut strings = std::collections::BTreeMap::new();
        for &(origin, label) in prefixes {
            let target = *lengths.iter().find(|&&l| l >= origin.plen()).unwrap();
            let step = 1u128.checked_shl(u32::from(A::BITS - target)).unwrap_or(0);
            for i in 0..1u128 << (target - origin.plen()) {
                let string =
                    Prefix::new_masked(A::from_u128(origin.first().to_u128() + i * step), target);
                let old = strings.entry(string).or_insert((label, origin));
                if old.1.plen() < origin.plen() {
                    *old = (label, origin);
                }
            }
        }
        strings.into_iter().map(|(p, (l, o))| (p, l, o)).collect()
    }

    fn triples<A: Addr>(expanded: &[Expanded<A>]) -> Vec<(Prefix<A>, Label, Prefix<A>)> {
        expanded
            .iter()
            .map(|e| (e.prefix, e.label, e.origin))
            .collect()
    }

    /// Prefixes drawn close together (a few varying bits under a fixed
    /// top) so that they nest, at both ends of the address space.
    fn clustered<A: Addr>(
        top: u128,
        raw: &[(u16, u8, Label)],
        max_len: u8,
    ) -> Vec<(Prefix<A>, Label)> {
        raw.iter()
            .map(|&(bits, len, label)| {
                let plen = len % (max_len + 1);
                let addr = top | (u128::from(bits) << (A::BITS - 16).saturating_sub(4));
                (Prefix::new_masked(A::from_u128(addr), plen), label)
            })
            .collect()
    }

    proptest::proptest! {
        #[test]
        fn the_sweep_expands_like_the_definition(
            raw in proptest::collection::vec((proptest::prelude::any::<u16>(), 0u8..=255, 0u32..50), 0..60),
            cuts in proptest::collection::btree_set(1u8..32, 0..4),
            high in proptest::prelude::any::<bool>(),
        ) {
            // IPv4: every length up to 32, targets cut at random points.
            let table = clustered::<u32>(if high { 0xffff_0000 } else { 0 }, &raw, 32);
            let mut lengths: Vec<u8> = cuts.iter().copied().collect();
            lengths.push(32);
            let table: Vec<_> = table
                .into_iter()
                .filter(|(p, _)| {
                    let target = lengths.iter().find(|&&l| l >= p.plen());
                    target.is_some_and(|&t| t - p.plen() <= 12)
                })
                .collect();
            let got = expand(&table, &lengths).unwrap();
            proptest::prop_assert!(got.windows(2).all(|w| w[0].prefix < w[1].prefix));
            proptest::prop_assert_eq!(triples(&got), expand_by_map(&table, &lengths));
            // IPv6 at the top of the space: /116 to /128 under ffff..., so
            // strings reach the last address.
            let top = if high { u128::MAX << 16 } else { 0 };
            let table6: Vec<(Prefix<u128>, Label)> = raw
                .iter()
                .map(|&(bits, len, label)| {
                    let plen = 116 + len % 13;
                    (Prefix::new_masked(top | u128::from(bits), plen), label)
                })
                .collect();
            let lengths6 = [120, 124, 128];
            let got6 = expand(&table6, &lengths6).unwrap();
            proptest::prop_assert_eq!(triples(&got6), expand_by_map(&table6, &lengths6));
        }
    }

    #[test]
    fn the_default_route_and_the_last_address() {
        let table: Vec<(Prefix<u128>, Label)> = vec![
            (Prefix::new_masked(0, 0), 1),
            (Prefix::new_masked(u128::MAX, 128), 2),
            (Prefix::new_masked(u128::MAX, 127), 3),
        ];
        let got = expand(&table, &[0, 128]).unwrap();
        assert_eq!(triples(&got), expand_by_map(&table, &[0, 128]));
        assert_eq!(got.len(), 3);
        let table4: Vec<(Prefix<u32>, Label)> = vec![
            (Prefix::new_masked(0, 0), 1),
            (Prefix::new_masked(u32::MAX, 32), 2),
            (Prefix::new_masked(0xffff_ff00, 24), 3),
        ];
        let got4 = expand(&table4, &[8, 16, 32]).unwrap();
        assert_eq!(triples(&got4), expand_by_map(&table4, &[8, 16, 32]));
        assert_eq!(got4.len(), 256 + 256);
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
