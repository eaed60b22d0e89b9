//! The reference trie against a deliberately naive table: a sorted map
//! searched exhaustively. Random insert/remove sequences, both families.

mod common;

use std::collections::BTreeMap;

use common::{random_table_v4, random_table_v6};
use fibkit::rib::Range;
use fibkit::{Addr, Label, Prefix, Rib};
use proptest::prelude::*;

/// The naive oracle: every prefix in a map; longest match by trying them all.
struct Naive<A: Addr>(BTreeMap<Prefix<A>, Label>);

impl<A: Addr> Naive<A> {
    fn longest_match(&self, addr: A) -> Option<(Prefix<A>, Label)> {
        self.0
            .iter()
            .filter(|(prefix, _)| prefix.contains(addr))
            .max_by_key(|(prefix, _)| prefix.plen())
            .map(|(p, l)| (*p, *l))
    }
}

/// Applies `ops` (insert when the label is `Some`, remove otherwise) to both
/// tables and compares everything after each step.
fn check_sequence<A: Addr>(ops: &[(A, u8, Option<Label>)], probes: &[A]) {
    let mut rib = Rib::<A>::new();
    let mut naive = Naive::<A>(BTreeMap::new());
    for &(addr, plen, label) in ops {
        let prefix = Prefix::new_masked(addr, plen);
        match label {
            Some(label) => assert_eq!(rib.insert(prefix, label), naive.0.insert(prefix, label)),
            None => assert_eq!(rib.remove(prefix), naive.0.remove(&prefix)),
        }
        assert_eq!(rib.len(), naive.0.len());
        assert_eq!(rib.get(prefix), naive.0.get(&prefix).copied());
    }
    let listed: Vec<(Prefix<A>, Label)> = rib.iter().collect();
    let expected: Vec<(Prefix<A>, Label)> = naive.0.iter().map(|(p, l)| (*p, *l)).collect();
    assert_eq!(listed, expected, "sorted iteration");
    // Probe the inserted addresses (hits), their neighbours and random ones.
    let mut addrs: Vec<A> = probes.to_vec();
    for &(addr, plen, _) in ops {
        let prefix = Prefix::new_masked(addr, plen);
        addrs.extend([prefix.first(), prefix.last(), addr]);
        addrs.extend(prefix.first().checked_prev());
        addrs.extend(prefix.last().checked_next());
    }
    for &addr in &addrs {
        assert_eq!(
            rib.longest_match(addr),
            naive.longest_match(addr),
            "address {}",
            addr.display()
        );
    }
    check_range_view(&rib, &naive, &addrs);
}

/// The merged range view covers the space exactly, merges equal neighbours
/// and gives each probed address its longest-match label.
fn check_range_view<A: Addr>(rib: &Rib<A>, naive: &Naive<A>, addrs: &[A]) {
    let ranges: Vec<Range<A>> = rib.ranges();
    assert_eq!(ranges.first().map(|r| r.first), Some(A::ZERO));
    assert_eq!(ranges.last().map(|r| r.last), Some(A::MAX));
    for pair in ranges.windows(2) {
        assert_eq!(
            pair[0].last.checked_next(),
            Some(pair[1].first),
            "ranges must be contiguous"
        );
        assert_ne!(
            pair[0].label, pair[1].label,
            "equal neighbours must be merged"
        );
    }
    for &addr in addrs {
        let index = ranges.partition_point(|r| r.last < addr);
        let want = naive.longest_match(addr).map(|(_, l)| l);
        assert_eq!(
            ranges[index].label,
            want,
            "range view at {}",
            addr.display()
        );
    }
    // A window view agrees with the full view, clipped.
    if let (Some(&lo), Some(&hi)) = (addrs.iter().min(), addrs.iter().max()) {
        let mut window = Vec::new();
        rib.ranges_in(lo, hi, true, &mut window);
        assert_eq!(window.first().map(|r| r.first), Some(lo));
        assert_eq!(window.last().map(|r| r.last), Some(hi));
        for range in &window {
            let index = ranges.partition_point(|r| r.last < range.first);
            assert_eq!(ranges[index].label, range.label);
        }
    }
}

fn with_removals<A: Copy>(
    entries: Vec<(A, u8, u32)>,
    removal_every: usize,
) -> Vec<(A, u8, Option<Label>)> {
    let mut ops: Vec<(A, u8, Option<Label>)> = Vec::new();
    for (i, (addr, plen, label)) in entries.into_iter().enumerate() {
        ops.push((addr, plen, Some(label)));
        if i % removal_every == removal_every - 1 {
            // Remove something inserted earlier (it may already be gone).
            let (a, p, _) = ops[i / 2];
            ops.push((a, p, None));
        }
    }
    ops
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn rib_matches_naive_v4(entries in random_table_v4(), probes in prop::collection::vec(any::<u32>(), 50), every in 2usize..6) {
        check_sequence(&with_removals(entries, every), &probes);
    }

    #[test]
    fn rib_matches_naive_v6(entries in random_table_v6(), probes in prop::collection::vec(any::<u128>(), 50), every in 2usize..6) {
        check_sequence(&with_removals(entries, every), &probes);
    }
}

#[test]
fn removing_everything_leaves_an_empty_trie() {
    let prefixes: Vec<Prefix<u32>> = [
        "0.0.0.0/0",
        "10.0.0.0/8",
        "10.0.0.0/16",
        "10.1.0.0/16",
        "10.0.0.0/32",
    ]
    .iter()
    .map(|t| t.parse().unwrap())
    .collect();
    let mut rib = Rib::new();
    for (i, p) in prefixes.iter().enumerate() {
        rib.insert(*p, i as Label);
    }
    for p in prefixes.iter().rev() {
        assert!(rib.remove(*p).is_some());
    }
    assert!(rib.is_empty());
    assert_eq!(
        rib.ranges(),
        vec![Range {
            first: 0,
            last: u32::MAX,
            label: None
        }]
    );
}
