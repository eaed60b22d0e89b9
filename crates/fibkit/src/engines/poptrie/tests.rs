//! Tests of `poptrie`.

use super::update::Patch;
use super::*;
use crate::engine::{Lookup, Updater};
use crate::labels::word_of;
use crate::prefix::{Label, Prefix};
use crate::rib::Rib;

fn table<A: Addr>(pairs: &[(&str, Label)]) -> Rib<A> {
    Rib::from_pairs(
        pairs
            .iter()
            .map(|&(p, l)| (p.parse::<Prefix<A>>().expect("a prefix"), l)),
    )
}

/// Every path (portable per key, POPCNT per key, portable batch, the
/// AVX-512 batch where the CPU has it) against the reference at every
/// range boundary and its neighbours.
fn check<A: Addr>(rib: &Rib<A>, config: PoptrieConfig) {
    let (_, trie) = PoptrieUpdater::build(&config, rib).expect("builds");
    let root_bits = format!("{config}");
    let mut addrs = Vec::new();
    for range in rib.ranges() {
        let first = range.first.to_u128();
        addrs.push(range.first);
        addrs.push(A::from_u128(first.wrapping_sub(1) & A::MAX.to_u128()));
        addrs.push(range.last);
        addrs.push(A::from_u128(first.wrapping_add(1) & A::MAX.to_u128()));
    }
    addrs.push(A::ZERO);
    addrs.push(A::MAX);
    for &addr in &addrs {
        assert_eq!(trie.walk(addr), rib.lookup(addr), "{root_bits} at {addr:?}");
        assert_eq!(
            trie.lookup(addr),
            rib.lookup(addr),
            "{root_bits} at {addr:?}"
        );
    }
    let expected: Vec<_> = addrs.iter().map(|&a| rib.lookup(a)).collect();
    for len in [0, 1, 7, 31, 32, 33, 64, 95, addrs.len()] {
        let len = len.min(addrs.len());
        let mut out = vec![Some(u32::MAX); len];
        trie.lookup_batch(&addrs[..len], &mut out);
        assert_eq!(out, expected[..len], "batch of {len}, {root_bits}");
        trie.lookup_batch_portable(&addrs[..len], &mut out);
        assert_eq!(out, expected[..len], "portable batch of {len}, {root_bits}");
        // The C library's words, written by the batch itself (a miss
        // is all ones).
        let mut words = vec![0; len];
        trie.lookup_batch_words(&addrs[..len], &mut words);
        let expected_words: Vec<u64> = expected[..len].iter().map(|&a| word_of(a)).collect();
        assert_eq!(words, expected_words, "words of {len}, {root_bits}");
    }
}

/// The snapshot's answers against the reference at every range
/// boundary and its neighbours, per key and in a batch.
fn assert_answers<A: Addr>(trie: &Poptrie<A>, rib: &Rib<A>, when: &str) {
    let mut addrs = Vec::new();
    for range in rib.ranges() {
        addrs.push(range.first);
        addrs.push(range.last);
    }
    let expected: Vec<_> = addrs.iter().map(|&a| rib.lookup(a)).collect();
    let per_key: Vec<_> = addrs.iter().map(|&a| trie.lookup(a)).collect();
    assert_eq!(per_key, expected, "per key, {when}");
    let mut batch = vec![Some(u32::MAX); addrs.len()];
    trie.lookup_batch(&addrs, &mut batch);
    assert_eq!(batch, expected, "batch, {when}");
}

/// Changes one at a time inside one root chunk, where each patches the
/// deepest node holding its prefix: withdrawing the only prefix under
/// a node leaves it a node of one run; long streams compact.
#[test]
fn patches_answer_as_the_reference_and_compact() {
    for (root_bits, direct_bits) in [(18, 0), (18, 5), (13, 10), (8, 15)] {
        patches_answer_as_the_reference_and_compact_with(PoptrieConfig {
            root_bits,
            direct_bits: Some(direct_bits),
        });
    }
}

fn patches_answer_as_the_reference_and_compact_with(config: PoptrieConfig) {
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    let mut rib = table::<u128>(&[("2001:db8::/32", 2), ("2001:db8:1::/48", 3)]);
    let (mut updater, mut trie) = PoptrieUpdater::build(&config, &rib).expect("builds");
    let lone: Prefix<u128> = "2001:db8:1::/48".parse().expect("a prefix");
    // Its deepest node (bits 43..48) holds nothing else.
    assert!(matches!(
        Patch::of(&trie, lone),
        Patch::Node { depth: 43, .. }
    ));
    rib.remove(lone);
    updater.update(&mut trie, &rib, &[lone]).expect("patches");
    assert_answers(&trie, &rib, "the lone /48 withdrawn");
    rib.insert(lone, 4);
    updater.update(&mut trie, &rib, &[lone]).expect("patches");
    assert_answers(&trie, &rib, "the lone /48 announced again");
    assert_eq!(updater.rebuilds, 0);
    // The node kept its entry; its old child entries are unreachable.
    assert!(
        updater.dead_entries > 0,
        "the old child entries are counted"
    );

    // A dense /32 of /36–/64s and host routes, changed at random.
    let mut rng = SmallRng::seed_from_u64(7);
    let base = 0x2001_0db8u128 << 96;
    let random_prefix = |rng: &mut SmallRng| {
        let plen = [20u8, 36, 40, 44, 48, 48, 52, 56, 64, 128][rng.random_range(0..10)];
        let bits = rng.random::<u128>() & (u128::MAX >> 32);
        Prefix::new_masked(base | bits & !(u128::MAX >> plen), plen)
    };
    for _ in 0..3000 {
        let prefix = random_prefix(&mut rng);
        rib.insert(prefix, rng.random_range(0..8));
    }
    let (mut updater, mut trie) = PoptrieUpdater::build(&config, &rib).expect("builds");
    for step in 0..6000 {
        let prefix = random_prefix(&mut rng);
        match rng.random_range(0..3) {
            0 => {
                rib.remove(prefix);
            }
            _ => {
                rib.insert(prefix, rng.random_range(0..8));
            }
        }
        updater.update(&mut trie, &rib, &[prefix]).expect("patches");
        if step % 500 == 0 {
            assert_answers(&trie, &rib, &format!("after change {step}"));
        }
    }
    assert_answers(&trie, &rib, "after every change");
    assert!(updater.rebuilds > 0, "the stream compacted");
    let (_, fresh) = PoptrieUpdater::build(&config, &rib).expect("builds");
    let entries = trie.entries.len();
    assert!(
        entries - updater.dead_entries <= fresh.entries.len() + entries / 4,
        "reachable entries stay near a fresh build's"
    );

    // A batch with nested prefixes and one shorter than the root.
    let batch: Vec<Prefix<u128>> = [
        "2001::/16",
        "2001:c00::/22",
        "2001:db8::/33",
        "2001:db8::/40",
        "2001:db8::/48",
        "2000::/12",
    ]
    .iter()
    .map(|p| p.parse().expect("a prefix"))
    .collect();
    for (&prefix, label) in batch.iter().zip(10..) {
        rib.insert(prefix, label);
    }
    let mut sorted = batch.clone();
    sorted.sort();
    updater.update(&mut trie, &rib, &sorted).expect("patches");
    assert_answers(&trie, &rib, "after a nested batch");
}

#[test]
fn nested_prefixes_and_host_routes_both_families() {
    let v6 = table::<u128>(&[
        ("::/0", 1),
        ("2001:db8::/32", 2),
        ("2001:db8:1::/48", 3),
        ("2001:db8:1:2::/64", 4),
        ("2001:db8:1:2::1/128", 5),
        ("2001:db8:1:2::3/128", 4),
        ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128", 6),
        ("8000::/1", 7),
        ("::1/128", 8),
    ]);
    let v4 = table::<u32>(&[
        ("10.0.0.0/8", 1),
        ("10.1.0.0/16", 2),
        ("10.1.2.0/24", 3),
        ("10.1.2.3/32", 4),
        ("255.255.255.255/32", 5),
        ("0.0.0.0/32", 6),
        ("128.0.0.0/1", 7),
    ]);
    for config in test_configs() {
        check(&v6, config);
        check(&v4, config);
    }
}

#[test]
fn trivial_tables() {
    for config in test_configs() {
        check(&Rib::<u128>::new(), config);
        check(&table::<u128>(&[("::/0", 9)]), config);
        check(&Rib::<u32>::new(), config);
        check(&table::<u32>(&[("0.0.0.0/0", 9)]), config);
    }
}

#[test]
fn specs_parse_and_print_canonically() {
    for (text, root_bits, direct_bits, v6, v4) in [
        ("poptrie", 18, None, 5, 0),
        ("poptrie:s=8", 8, None, 5, 0),
        ("poptrie:s=23", 23, None, 0, 0),
        ("poptrie:s=18,d=0", 18, Some(0), 0, 0),
        ("poptrie:s=13,d=10", 13, Some(10), 10, 10),
        ("poptrie:s=18,d=5", 18, Some(5), 5, 5),
        ("poptrie:d=5", 18, Some(5), 5, 5),
        ("poptrie:s=8,d=15", 8, Some(15), 15, 15),
    ] {
        let config = PoptrieConfig::parse(text).expect("parses");
        assert_eq!(
            (config.root_bits, config.direct_bits),
            (root_bits, direct_bits)
        );
        assert_eq!(config.direct_bits_for::<u128>(), v6, "{text} on IPv6");
        assert_eq!(config.direct_bits_for::<u32>(), v4, "{text} on IPv4");
        assert_eq!(PoptrieConfig::parse(&config.to_string()), Ok(config));
    }
    for bad in [
        "poptrie:s=16",
        "poptrie:s=7",
        "poptrie:s=24",
        "poptrie:k=14",
        "poptrie:d=3",
        "poptrie:d=20",
        "poptrie:s=18,d=10",
        "poptrie:s=23,d=5",
    ] {
        let error = PoptrieConfig::parse(bad).expect_err(bad).to_string();
        assert!(!error.is_empty(), "{bad}");
    }
    let error = PoptrieConfig::parse("poptrie:s=16")
        .expect_err("16")
        .to_string();
    assert!(error.contains("s=13"), "{error}");
    let error = PoptrieConfig::parse("poptrie:s=18,d=10")
        .expect_err("28 bits")
        .to_string();
    assert!(error.contains("d=5 or less"), "{error}");
}
