//! Tests of `btree`.

use super::*;
use crate::prefix::Prefix;

fn table(pairs: &[(&str, Label)]) -> Rib<u128> {
    Rib::from_pairs(
        pairs
            .iter()
            .map(|&(text, label)| (text.parse::<Prefix<u128>>().unwrap(), label)),
    )
}

/// Both searches (plain and, where the CPU has it, AVX-512) and both
/// batch paths against the reference at every range edge.
fn check(rib: &Rib<u128>, root_bits: u32) {
    let config = BtreeConfig { root_bits };
    let updater = BtreeUpdater::<u128> {
        config,
        family: PhantomData,
    };
    for count in Count::all_available() {
        let btree = updater.snapshot(rib, count).unwrap();
        let mut addrs = Vec::new();
        for range in rib.ranges() {
            addrs.extend([range.first, range.last, range.first.wrapping_sub(1)]);
        }
        let want: Vec<_> = addrs.iter().map(|&a| rib.lookup(a)).collect();
        let per_key: Vec<_> = addrs.iter().map(|&a| btree.lookup(a)).collect();
        assert_eq!(per_key, want, "k={root_bits} count={count:?}");
        let mut batch = vec![Some(7); addrs.len()];
        btree.lookup_batch(&addrs, &mut batch);
        assert_eq!(batch, want, "k={root_bits} count={count:?}, batch");
        let mut portable = vec![Some(7); addrs.len()];
        btree.lookup_batch_portable(&addrs, &mut portable);
        assert_eq!(
            portable, want,
            "k={root_bits} count={count:?}, portable batch"
        );
    }
}

/// Prefixes longer than /64 (sub-lists), ones ending a /64 early, at
/// the last /64, nested under a chunk's start, and the default route.
#[test]
fn sub_lists_chunk_starts_and_edges() {
    let rib = table(&[
        ("::/0", 1),
        ("2001:db8::/32", 2),
        ("2001:db8:0:1::/64", 3),
        ("2001:db8:0:1::80/121", 4),
        ("2001:db8:0:1::1/128", 5),
        ("2001:db8:0:2:8000::/66", 6),
        ("2001:db8:0:2:4000::/66", 6),
        ("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff/128", 7),
        ("ffff:ffff:ffff:ffff::/64", 8),
        ("ffff:ffff:ffff:ffff:ffff::/80", 9),
        ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128", 10),
        ("2a00::/12", 11),
        ("2a00:1::/32", 12),
        ("2a00:1:8000::/33", 13),
    ]);
    for k in [8, 12, 16, 24] {
        check(&rib, k);
    }
}

/// Tables with one range, with none, and with no default route.
#[test]
fn trivial_tables() {
    check(&Rib::new(), 16);
    check(&table(&[("::/0", 1)]), 8);
    check(&table(&[("2001::/16", 1)]), 16);
    check(&table(&[("::/128", 1), ("::1/128", 2)]), 24);
}

/// Many keys in one chunk and across chunks: levels above the leaves,
/// searches starting at each.
#[test]
fn deep_trees() {
    let mut pairs = Vec::new();
    for i in 0..20_000u128 {
        let addr = 0x2a00u128 << 112 | (i * 0x9e37_79b9) << 64;
        pairs.push((Prefix::new_masked(addr, 64), (i % 13) as Label));
    }
    for i in 0..3_000u128 {
        let addr = (i * 0x3c6e_f372_fe94_f82b) << 64;
        pairs.push((Prefix::new_masked(addr, 48), (i % 7) as Label));
    }
    let rib = Rib::from_pairs(pairs);
    for k in [8, 16, 20] {
        check(&rib, k);
        let (updater, btree) = BtreeUpdater::build(&BtreeConfig { root_bits: k }, &rib).unwrap();
        let stats = updater.stats(&btree);
        assert!(stats.level_nodes.len() >= 4, "{stats:?}");
    }
}

#[test]
fn specs_parse_and_print_canonically() {
    assert_eq!(
        BtreeConfig::parse("btree").unwrap().to_string(),
        "btree:k=16"
    );
    assert_eq!(BtreeConfig::parse("btree:k=8").unwrap().root_bits, 8);
    for bad in ["btree:k=7", "btree:k=25", "btree:stride=3", "btree:k"] {
        assert!(BtreeConfig::parse(bad).is_err(), "{bad}");
    }
}
