//! LC-trie specific tests: random insert/delete sequences against the
//! reference table (both look-up algorithms, structure checked after every
//! batch), the LINX update stream replayed onto the DFZ table, and the
//! adversarial table.

mod common;

use common::*;
use fibkit::engines::lctrie::{adversarial_table_v4, LcTrie, LookupAlgo};
use fibkit::load::{load_updates, AnyChange, LoadOptions};
use fibkit::{
    build, verify, Addr, Change, EngineFamily, EngineSpec, LocalFib, Lookup, Prefix, Rib,
};
use proptest::prelude::*;

const SPECS: [&str; 2] = ["lctrie", "lctrie:lookup=classic"];

fn assert_verified<A: EngineFamily>(engine: &impl Lookup<A>, rib: &Rib<A>, random: usize) {
    let report = verify(engine, rib, random, 0x5eed);
    assert!(
        report.ok(),
        "{} failed, first: {:?}",
        report.failed,
        report.mismatches.first().map(|m| m.to_string())
    );
}

/// Patches `trie` in place after `changed` changed in `rib`.
fn patch<A: fibkit::engines::lctrie::LcKey>(
    trie: &mut LcTrie<A>,
    rib: &Rib<A>,
    changed: &[Prefix<A>],
) {
    fibkit::legacy::LegacyEngine::update(trie, rib, changed).unwrap();
}

/// Applies batches of changes to a Rib and an LcTrie (through `update`),
/// checking look-ups, stored prefixes and structure after each batch.
fn run_batches<A: EngineFamily + fibkit::engines::lctrie::LcKey>(
    batches: &[Vec<(A, u8, Option<u32>)>],
) {
    let spec = EngineSpec::parse("lctrie").unwrap();
    let mut rib = Rib::<A>::new();
    let mut trie = LcTrie::build(&spec, &rib).unwrap();
    let mut classic =
        LcTrie::build(&EngineSpec::parse("lctrie:lookup=classic").unwrap(), &rib).unwrap();
    for batch in batches {
        let mut changed = Vec::new();
        for &(addr, plen, label) in batch {
            let prefix = Prefix::new_masked(addr, plen);
            let change = match label {
                Some(label) => Change::Announce(prefix, label),
                None => Change::Withdraw(prefix),
            };
            if rib.apply(change) {
                changed.push(prefix);
            }
        }
        changed.sort_unstable();
        changed.dedup();
        patch(&mut trie, &rib, &changed);
        patch(&mut classic, &rib, &changed);
        trie.check_invariants().unwrap();
        assert_eq!(trie.prefixes(), rib.iter().collect::<Vec<_>>());
        assert_verified(&trie, &rib, 300);
        assert_verified(&classic, &rib, 300);
    }
}

/// Batches of announces (mostly) and withdraws over clustered addresses;
/// withdraws reuse earlier prefixes so they hit.
fn batches_v4() -> impl Strategy<Value = Vec<Vec<(u32, u8, Option<u32>)>>> {
    prop::collection::vec(
        prop::collection::vec(
            (
                any::<u32>(),
                0u8..=32,
                prop::option::weighted(0.6, 0u32..6),
                0usize..1000,
            ),
            1..40,
        ),
        1..8,
    )
    .prop_map(|batches| {
        let mut seen: Vec<(u32, u8)> = Vec::new();
        batches
            .into_iter()
            .map(|batch| {
                batch
                    .into_iter()
                    .enumerate()
                    .map(|(i, (addr, plen, label, pick))| {
                        let mut addr = addr;
                        if i % 4 != 0 {
                            addr = (addr & 0x000f_ffff) | ((i as u32 % 3) << 20) | 0x0a00_0000;
                        }
                        if label.is_none() && !seen.is_empty() {
                            let (a, p) = seen[pick % seen.len()];
                            return (a, p, None);
                        }
                        seen.push((addr, plen));
                        (addr, plen, label)
                    })
                    .collect()
            })
            .collect()
    })
}

fn batches_v6() -> impl Strategy<Value = Vec<Vec<(u128, u8, Option<u32>)>>> {
    prop::collection::vec(
        prop::collection::vec(
            (
                any::<u128>(),
                0u8..=128,
                prop::option::weighted(0.6, 0u32..6),
                0usize..1000,
            ),
            1..40,
        ),
        1..8,
    )
    .prop_map(|batches| {
        let mut seen: Vec<(u128, u8)> = Vec::new();
        batches
            .into_iter()
            .map(|batch| {
                batch
                    .into_iter()
                    .enumerate()
                    .map(|(i, (addr, plen, label, pick))| {
                        let mut addr = addr;
                        if i % 4 != 0 {
                            addr = (addr & ((1u128 << 100) - 1))
                                | ((i as u128 % 3) << 100)
                                | (0x2001u128 << 112);
                        }
                        if label.is_none() && !seen.is_empty() {
                            let (a, p) = seen[pick % seen.len()];
                            return (a, p, None);
                        }
                        seen.push((addr, plen));
                        (addr, plen, label)
                    })
                    .collect()
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_updates_v4(batches in batches_v4()) {
        run_batches(&batches);
    }

    #[test]
    fn random_updates_v6(batches in batches_v6()) {
        run_batches(&batches);
    }
}

/// Grow a dense table until the top node inflates, then empty it again:
/// every node must halve and collapse back, nothing may be left over.
#[test]
fn grow_and_shrink() {
    let spec = EngineSpec::parse("lctrie").unwrap();
    let mut rib = Rib::<u32>::new();
    let mut trie = LcTrie::build(&spec, &rib).unwrap();
    let prefixes: Vec<Prefix<u32>> = (0..5000u32)
        .map(|i| Prefix::new_masked(i.wrapping_mul(0x9e37_79b9), 8 + (i % 25) as u8))
        .collect();
    for chunk in prefixes.chunks(500) {
        for (i, &p) in chunk.iter().enumerate() {
            rib.insert(p, i as u32);
        }
        patch(&mut trie, &rib, chunk);
        trie.check_invariants().unwrap();
        assert_verified(&trie, &rib, 1000);
    }
    assert!(trie.shape().top_bits > 4, "{:?}", trie.shape());
    for chunk in prefixes.chunks(700) {
        for &p in chunk {
            rib.remove(p);
        }
        patch(&mut trie, &rib, chunk);
        trie.check_invariants().unwrap();
        assert_verified(&trie, &rib, 1000);
    }
    assert!(trie.is_empty());
    assert_eq!(trie.shape().tnodes, 0);
}

/// The LINX update stream (one hour, 23k changes) replayed onto dfz-v4-nh
/// in one-second batches through `apply_changes` leaves the trie holding
/// exactly the reference table.
#[test]
fn linx_replay_matches_reference() {
    let table = shared_table("dfz-v4-nh.txt.gz");
    let updates = load_updates(
        &data_path("linx-updates-ipv4.20141217.txt.gz"),
        &LoadOptions::default(),
        table.nexthops.clone(),
    )
    .unwrap();
    for spec in SPECS {
        let mut engine = LocalFib::<u32>::new(spec, table.v4.clone()).unwrap();
        let mut rebuilt = false;
        for batch in updates.v4_batches_by_time() {
            rebuilt |= engine.apply(&batch).unwrap().rebuilt.is_some();
        }
        assert!(!rebuilt, "lctrie must update in place");
        assert_verified(&engine, engine.rib(), 100_000);
    }
    // The structure itself, after the same replay on the engine type.
    let spec = EngineSpec::parse("lctrie").unwrap();
    let mut rib = table.v4.clone();
    let mut trie = LcTrie::build(&spec, &rib).unwrap();
    for update in &updates.updates {
        let AnyChange::V4(change) = update.change else {
            continue;
        };
        if rib.apply(change) {
            patch(&mut trie, &rib, &[change.prefix()]);
        }
    }
    trie.check_invariants().unwrap();
    assert_eq!(trie.prefixes(), rib.iter().collect::<Vec<_>>());
}

/// The full DFZ tables build to a well-formed trie holding every prefix.
#[test]
fn dfz_structure() {
    let table = shared_table("dfz-v4-nh.txt.gz");
    let trie = LcTrie::build(&EngineSpec::parse("lctrie").unwrap(), &table.v4).unwrap();
    trie.check_invariants().unwrap();
    assert_eq!(trie.len(), table.v4.len());
    let table = shared_table("dfz-v6-nh.txt.gz");
    let trie = LcTrie::build(&EngineSpec::parse("lctrie").unwrap(), &table.v6).unwrap();
    trie.check_invariants().unwrap();
    assert_eq!(trie.len(), table.v6.len());
}

/// The adversarial table: both algorithms right, and the deep addresses make
/// the classic look-up backtrack more than the improved one.
#[test]
fn adversarial_table() {
    let (rib, keys) = adversarial_table_v4(500, 1);
    for spec in SPECS {
        assert_verified(&build(spec, &rib).unwrap(), &rib, 20_000);
    }
    let trie = LcTrie::build(&EngineSpec::parse("lctrie").unwrap(), &rib).unwrap();
    for &key in &keys {
        let want = rib.lookup(key);
        assert_eq!(
            want,
            rib.longest_match(key)
                .filter(|(p, _)| p.plen() == 12)
                .map(|(_, l)| l),
            "{}",
            key.display()
        );
        assert_eq!(trie.lookup(key), want);
    }
    let improved = trie.count_lookups(&keys, LookupAlgo::Improved);
    let classic = trie.count_lookups(&keys, LookupAlgo::Classic);
    assert!(
        classic.backtracks > 2 * improved.backtracks,
        "improved {improved:?}, classic {classic:?}"
    );
}

#[test]
fn spec_errors() {
    let rib = Rib::<u32>::new();
    let err = build("lctrie:lookup=fast", &rib).err().unwrap().to_string();
    assert!(err.contains("not a look-up algorithm"), "{err}");
    let spec = |text: &str| LocalFib::<u32>::new(text, rib.clone()).unwrap().spec();
    assert_eq!(spec("lctrie:lookup=classic"), "lctrie:lookup=classic");
    assert_eq!(spec("lctrie:lookup=improved"), "lctrie");
}
