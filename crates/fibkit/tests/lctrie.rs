//! LC-trie specific tests: random insert/delete sequences against the
//! reference table (both look-up algorithms, structure checked after every
//! batch), withdraw storms, the batch look-up at every slice length, the
//! LINX update stream replayed onto the DFZ table, and the adversarial
//! table.

mod common;

use common::*;
use fibkit::engine::Updater;
use fibkit::engines::lctrie::{adversarial_table_v4, LcTrieUpdater, LookupAlgo, SlotLayout};
use fibkit::load::AnyChange;
use fibkit::registry::EngineFamily;
use fibkit::trace::{adversarial_streams_v4, host_routes_v4};
use fibkit::verify::verify;
use fibkit::{build, Addr, Change, Fib, LocalFib, Lookup, Prefix, Rib};
use proptest::prelude::*;

const SPECS: [&str; 2] = ["lctrie", "lctrie:lookup=classic"];

/// The engine with its type known, so tests reach the updater's checks.
type Trie<A> = LocalFib<A, LcTrieUpdater<A>>;

fn trie<A: EngineFamily + SlotLayout>(spec: &str, rib: &Rib<A>) -> Trie<A> {
    Trie::with_spec(spec, rib.clone()).unwrap_or_else(|e| panic!("{spec}: {e}"))
}

fn assert_verified<A: EngineFamily>(engine: &impl Lookup<A>, rib: &Rib<A>, random: usize) {
    let report = verify(engine, rib, random, 0x5eed);
    assert!(
        report.ok(),
        "{} failed, first: {:?}",
        report.failed,
        report.mismatches.first().map(|m| m.to_string())
    );
}

/// Applies `changes` as one batch, which must patch the trie (not rebuild it).
fn apply<A: EngineFamily + SlotLayout>(trie: &mut Trie<A>, changes: &[Change<A>]) {
    let summary = trie.apply(changes).unwrap();
    assert_eq!(summary.rebuilt, None, "lctrie must update in place");
}

/// The structure, the prefixes it holds and its answers agree with the
/// reference table.
fn assert_sound<A: EngineFamily + SlotLayout>(trie: &Trie<A>, random: usize) {
    trie.updater().check_invariants(trie.snapshot()).unwrap();
    assert_eq!(
        trie.snapshot().prefixes(),
        trie.rib().iter().collect::<Vec<_>>()
    );
    assert_eq!(trie.updater().len(), trie.rib().len());
    assert_verified(trie, trie.rib(), random);
}

/// Applies batches of changes to both look-up algorithms' tries, from an
/// empty table, checking look-ups, stored prefixes and structure after
/// each batch.
fn run_batches<A: EngineFamily + SlotLayout>(batches: &[Vec<Change<A>>]) {
    let rib = Rib::<A>::new();
    let mut tries = SPECS.map(|spec| trie(spec, &rib));
    for changes in batches {
        for trie in &mut tries {
            apply(trie, changes);
            assert_sound(trie, 300);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_updates_v4(batches in random_batches_v4(32)) {
        run_batches(&batches);
    }

    #[test]
    fn random_updates_v6(batches in random_batches_v6(128)) {
        run_batches(&batches);
    }

    #[test]
    fn random_tables_build_settled_v4(
        entries in random_table_v4(),
        batches in random_batches_v4(32),
    ) {
        build_then_update(&rib_from_triples(&entries), &batches);
    }

    #[test]
    fn random_tables_build_settled_v6(
        entries in random_table_v6(),
        batches in random_batches_v6(128),
    ) {
        build_then_update(&rib_from_triples(&entries), &batches);
    }
}

/// Builds `rib` from scratch with both look-up algorithms: sound and with
/// no node the resize rules would change; then the same after `batches`
/// (which need not leave it settled).
fn build_then_update<A: EngineFamily + SlotLayout>(rib: &Rib<A>, batches: &[Vec<Change<A>>]) {
    for spec in SPECS {
        let mut trie = trie(spec, rib);
        assert_sound(&trie, 300);
        trie.updater().check_settled(trie.snapshot()).unwrap();
        for changes in batches {
            apply(&mut trie, changes);
            assert_sound(&trie, 300);
        }
    }
}

/// Dense tables, where nodes grow wide, built from scratch and built by
/// announcing every prefix onto an empty trie in small batches: both
/// sound, the first settled; withdrawing every prefix in small batches
/// leaves an empty trie. Large batches that grow or shrink the table
/// rebuild it.
#[test]
fn dense_tables_build_from_scratch() {
    let mut tables: Vec<Rib<u32>> = Vec::new();
    // Two /24s in three of 10.0.0.0/8, most nested in a /16 or a /20.
    let mut rib = Rib::new();
    for i in 0..(1u32 << 16) {
        if i % 3 != 1 {
            rib.insert(Prefix::new(0x0a00_0000 | (i << 8), 24).unwrap(), i % 5);
        }
        if i % 256 == 0 {
            rib.insert(Prefix::new(0x0a00_0000 | (i << 8), 16).unwrap(), 7);
        }
        if i % 16 == 8 {
            rib.insert(Prefix::new_masked(0x0a00_0000 | (i << 8), 20), 9);
        }
    }
    rib.insert(Prefix::new(0, 0).unwrap(), 11);
    tables.push(rib);
    // Consecutive host routes, every fourth missing, plus /31s over them.
    let mut rib = Rib::new();
    for i in 0..100_000u32 {
        if i % 4 != 3 {
            rib.insert(Prefix::new(0xc000_0000 + i, 32).unwrap(), i % 3);
        }
        if i % 2 == 0 {
            rib.insert(Prefix::new(0xc000_0000 + i, 31).unwrap(), 5);
        }
    }
    tables.push(rib);
    for rib in &tables {
        let built = trie("lctrie", rib);
        assert_sound(&built, 20_000);
        built.updater().check_settled(built.snapshot()).unwrap();
        // Batches of fewer than 1024 changes are always patched.
        let announce: Vec<_> = rib
            .iter()
            .map(|(prefix, label)| Change::Announce(prefix, label))
            .collect();
        let mut inserted = trie("lctrie", &Rib::new());
        for chunk in announce.chunks(1000) {
            apply(&mut inserted, chunk);
        }
        assert_sound(&inserted, 20_000);
        assert_eq!(built.snapshot().prefixes(), inserted.snapshot().prefixes());
        let withdraw: Vec<_> = rib
            .iter()
            .map(|(prefix, _)| Change::Withdraw(prefix))
            .collect();
        for chunk in withdraw.chunks(1000) {
            apply(&mut inserted, chunk);
        }
        assert_sound(&inserted, 1_000);
        assert!(inserted.updater().is_empty());
        assert_eq!(inserted.snapshot().shape().tnodes, 0);
        // One batch that fills the table, and one that empties three
        // quarters of it, are built from scratch: settled, whatever the
        // inserts would have left.
        let mut filled = trie("lctrie", &Rib::new());
        apply(&mut filled, &announce);
        assert_sound(&filled, 20_000);
        filled.updater().check_settled(filled.snapshot()).unwrap();
        let most = withdraw.len() * 3 / 4;
        apply(&mut filled, &withdraw[..most]);
        assert_sound(&filled, 20_000);
        filled.updater().check_settled(filled.snapshot()).unwrap();
        assert_eq!(filled.updater().len(), rib.len() - most);
    }
}

/// Grow a dense table until the top node inflates, then empty it again:
/// every node must halve and collapse back, nothing may be left over.
#[test]
fn grow_and_shrink() {
    let mut trie = trie("lctrie", &Rib::<u32>::new());
    let prefixes: Vec<Prefix<u32>> = (0..5000u32)
        .map(|i| Prefix::new_masked(i.wrapping_mul(0x9e37_79b9), 8 + (i % 25) as u8))
        .collect();
    for chunk in prefixes.chunks(500) {
        let changes: Vec<Change<u32>> = chunk
            .iter()
            .enumerate()
            .map(|(i, &p)| Change::Announce(p, i as u32))
            .collect();
        apply(&mut trie, &changes);
        assert_sound(&trie, 1000);
    }
    let shape = trie.snapshot().shape();
    assert!(shape.top_bits > 4, "{shape:?}");
    for chunk in prefixes.chunks(700) {
        let changes: Vec<Change<u32>> = chunk.iter().map(|&p| Change::Withdraw(p)).collect();
        apply(&mut trie, &changes);
        assert_sound(&trie, 1000);
    }
    assert!(trie.updater().is_empty());
    assert_eq!(trie.snapshot().shape().tnodes, 0);
}

/// Announces `prefixes` one change at a time, then withdraws them in the
/// given order, checking the structure every `every` changes and the
/// answers at the end of each phase.
fn storm(trie: &mut Trie<u32>, announce: &[Prefix<u32>], withdraw: &[Prefix<u32>], every: usize) {
    let phases = [
        announce
            .iter()
            .map(|&p| Change::Announce(p, p.addr() % 7))
            .collect::<Vec<_>>(),
        withdraw.iter().map(|&p| Change::Withdraw(p)).collect(),
    ];
    for changes in phases {
        for (i, change) in changes.iter().enumerate() {
            apply(trie, std::slice::from_ref(change));
            if i % every == 0 {
                trie.updater().check_invariants(trie.snapshot()).unwrap();
            }
        }
        assert_sound(trie, 2000);
    }
}

/// Withdraw storms under one /8, the update pattern that was quadratic:
/// host routes in a row (one node of 2^14 children at the bottom bit),
/// spread out, withdrawn in and against announce order, and the /31s of
/// host-route pairs (leaves with two prefixes lose their shorter one, so
/// suffix lengths fall under a wide node without any slot emptying).
#[test]
fn withdraw_storms_keep_the_structure() {
    let region = Prefix::new_masked(0x0a00_0000, 8);
    for spread in [false, true] {
        let announced = host_routes_v4(region, 1 << 14, spread);
        let mut reversed = announced.clone();
        reversed.reverse();
        for withdrawn in [&announced, &reversed] {
            let mut trie = trie("lctrie", &Rib::new());
            storm(&mut trie, &announced, withdrawn, 997);
            assert!(trie.updater().is_empty());
            assert_eq!(trie.snapshot().shape().tnodes, 0);
        }
    }
    // A default route stays through it all; the /31s go, the /32s stay.
    let hosts = host_routes_v4(region, 1 << 13, false);
    let pairs: Vec<Prefix<u32>> = hosts
        .iter()
        .step_by(2)
        .map(|p| Prefix::new_masked(p.addr(), 31))
        .collect();
    let mut announced = hosts.clone();
    announced.extend(&pairs);
    let mut trie = trie("lctrie", &Rib::new());
    apply(&mut trie, &[Change::Announce(Prefix::default_route(), 99)]);
    storm(&mut trie, &announced, &pairs, 499);
    assert_eq!(trie.updater().len(), hosts.len() + 1);
}

/// The adversarial update streams (session reset, default-route flaps,
/// de-aggregated /8s, host routes into one region) on a slice of
/// dfz-v4-nh, one change per batch, keep the structure and the answers.
#[test]
fn adversarial_streams_keep_the_structure() {
    let base = Rib::from_pairs(shared_table("dfz-v4-nh.txt.gz").v4.iter().step_by(16));
    for stream in adversarial_streams_v4(&base, 1 << 15) {
        let mut trie = trie("lctrie", &base);
        for (i, change) in stream.changes.iter().enumerate() {
            apply(&mut trie, std::slice::from_ref(change));
            if i % 40_009 == 0 {
                trie.updater().check_invariants(trie.snapshot()).unwrap();
            }
        }
        assert_sound(&trie, 20_000);
    }
}

/// `lookup_batch` answers every slice length from 0 to 300 as the per-key
/// look-up does, whichever walks finish first, for both families.
#[test]
fn batch_lookup_every_length() {
    fn check<A: EngineFamily + SlotLayout>(rib: &Rib<A>, keys: &[A]) {
        for spec in SPECS {
            let snapshot = build(spec, rib).unwrap();
            let want: Vec<Option<u32>> = keys.iter().map(|&k| snapshot.lookup(k)).collect();
            for len in 0..=300.min(keys.len()) {
                // Different windows, so slices start at different walks.
                for start in [0, keys.len() / 3, keys.len() - len] {
                    let window = &keys[start..start + len];
                    let mut out = vec![Some(u32::MAX); len + 1];
                    snapshot.lookup_batch(window, &mut out);
                    assert_eq!(&out[..len], &want[start..start + len], "{spec}, {len} keys");
                    assert_eq!(out[len], Some(u32::MAX), "{spec}: wrote past the slice");
                }
            }
        }
    }
    let v4 = &shared_table("dfz-v4-nh.txt.gz").v4;
    let v6 = &shared_table("dfz-v6-nh.txt.gz").v6;
    // Range boundaries (hits and misses at every depth) and random keys.
    let keys4 = fibkit::verify::check_addresses(v4, 600, 3);
    let keys6 = fibkit::verify::check_addresses(v6, 600, 3);
    fn sample<A: Copy>(keys: Vec<A>) -> Vec<A> {
        let step = (keys.len() / 900).max(1);
        keys.into_iter().step_by(step).collect()
    }
    check(v4, &sample(keys4));
    check(v6, &sample(keys6));
    let (adversarial, deep) = adversarial_table_v4(64, 5);
    check(&adversarial, &deep.repeat(10));
}

/// The LINX update stream (one hour, 23k changes) replayed onto dfz-v4-nh
/// in one-second batches through the engine registry leaves the trie
/// holding exactly the reference table; replayed one change per batch
/// through the concurrent handle (which patches recycled copies of the
/// snapshot), it answers as the reference table after every second.
#[test]
fn linx_replay_matches_reference() {
    let table = shared_table("dfz-v4-nh.txt.gz");
    let updates = linx_updates(table);
    for spec in SPECS {
        let mut engine = LocalFib::<u32>::new(spec, table.v4.clone()).unwrap();
        let mut rebuilt = false;
        for batch in updates.v4_batches_by_time() {
            rebuilt |= engine.apply(&batch).unwrap().rebuilt.is_some();
        }
        assert!(!rebuilt, "lctrie must update in place");
        assert_verified(&engine, engine.rib(), 100_000);
    }
    // The structure itself, one change at a time.
    let mut trie = trie("lctrie", &table.v4);
    for update in &updates.updates {
        if let AnyChange::V4(change) = update.change {
            apply(&mut trie, &[change]);
        }
    }
    assert_sound(&trie, 100_000);
    // The concurrent handle, on a part of the stream.
    let fib = Fib::<u32, LcTrieUpdater<u32>>::with_spec("lctrie", table.v4.clone()).unwrap();
    for batch in updates.v4_batches_by_time().iter().take(300) {
        assert_eq!(fib.apply(batch).unwrap().rebuilt, None);
        let snapshot = fib.snapshot();
        fib.with_rib(|rib| {
            for change in batch {
                let addr = change.prefix().addr();
                assert_eq!(
                    snapshot.lookup(addr),
                    rib.lookup(addr),
                    "{}",
                    addr.display()
                );
            }
        });
    }
    fib.with_rib(|rib| assert_verified(&*fib.snapshot(), rib, 10_000));
}

/// The full DFZ tables build to a well-formed, settled trie holding every
/// prefix, with no slab slot outside a live block (the two extra slots are
/// the root pseudo block's), and stay well formed through updates after
/// that.
#[test]
fn dfz_structure() {
    let v4 = &shared_table("dfz-v4-nh.txt.gz").v4;
    let mut trie4 = trie("lctrie", v4);
    trie4.updater().check_invariants(trie4.snapshot()).unwrap();
    trie4.updater().check_settled(trie4.snapshot()).unwrap();
    assert_eq!(trie4.updater().len(), v4.len());
    let stats = trie4.updater().stats(trie4.snapshot());
    assert_eq!(stats.slab_slots, stats.shape.slab_in_use + 2, "{stats:?}");
    let v6 = &shared_table("dfz-v6-nh.txt.gz").v6;
    let trie6 = trie("lctrie", v6);
    trie6.updater().check_invariants(trie6.snapshot()).unwrap();
    trie6.updater().check_settled(trie6.snapshot()).unwrap();
    assert_eq!(trie6.updater().len(), v6.len());
    let stats = trie6.updater().stats(trie6.snapshot());
    assert_eq!(stats.slab_slots, stats.shape.slab_in_use + 2, "{stats:?}");
    // Withdrawing and announcing again reuses and frees blocks of the
    // compacted slab.
    let some: Vec<_> = v4.iter().step_by(7).take(20_000).collect();
    let withdraw: Vec<_> = some
        .iter()
        .map(|&(prefix, _)| Change::Withdraw(prefix))
        .collect();
    let announce: Vec<_> = some
        .iter()
        .map(|&(prefix, label)| Change::Announce(prefix, label))
        .collect();
    apply(&mut trie4, &withdraw);
    trie4.updater().check_invariants(trie4.snapshot()).unwrap();
    apply(&mut trie4, &announce);
    trie4.updater().check_invariants(trie4.snapshot()).unwrap();
    assert_sound(&trie4, 10_000);
}

/// The adversarial table: both algorithms right, and the deep addresses make
/// the classic look-up backtrack more than the improved one.
#[test]
fn adversarial_table() {
    let (rib, keys) = adversarial_table_v4(500, 1);
    for spec in SPECS {
        assert_verified(&build(spec, &rib).unwrap(), &rib, 20_000);
    }
    let trie = trie("lctrie", &rib);
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
    let improved = trie.snapshot().count_lookups(&keys, LookupAlgo::Improved);
    let classic = trie.snapshot().count_lookups(&keys, LookupAlgo::Classic);
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
    let err = build("lctrie:k=3", &rib).err().unwrap().to_string();
    assert!(err.contains("unknown parameter `k`"), "{err}");
    let spec = |text: &str| LocalFib::<u32>::new(text, rib.clone()).unwrap().spec();
    assert_eq!(spec("lctrie:lookup=classic"), "lctrie:lookup=classic");
    assert_eq!(spec("lctrie:lookup=improved"), "lctrie");
    assert_eq!(spec("lctrie"), "lctrie");
}

/// Consecutive IPv6 host routes make every node inflate again and again,
/// and the blocks left behind are reused only by nodes of their stride
/// (91% of the slab on a million of them before compaction): updates
/// compact the slab whenever its dead slots pass three times the live
/// ones plus a slack, so it stays within four times the trie, also
/// between the inflations of one insert. A build from scratch leaves no
/// dead slot.
#[test]
fn sparse_slabs_are_compacted_between_changes() {
    let base: u128 = 0x2001_0db8 << 96;
    let hosts: Vec<Prefix<u128>> = (0..200_000u128)
        .map(|i| Prefix::new(base + 2 * i, 128).unwrap())
        .collect();
    let bounded = |trie: &Trie<u128>| {
        let stats = trie.updater().stats(trie.snapshot());
        let live = stats.shape.slab_in_use + 2;
        assert!(stats.slab_slots <= 4 * live + (1 << 16), "{stats:?}");
        stats.slab_slots
    };
    // The build.
    let mut rib = Rib::<u128>::new();
    for (i, &prefix) in hosts.iter().enumerate() {
        rib.insert(prefix, i as u32);
    }
    let built = trie("lctrie", &rib);
    assert_eq!(
        bounded(&built),
        built.updater().stats(built.snapshot()).shape.slab_in_use + 2
    );
    assert_sound(&built, 10_000);
    // Updates: announced onto an empty table in batches small enough to
    // be patched, not rebuilt, then withdrawn.
    let mut trie = trie("lctrie", &Rib::new());
    for (round, chunk) in hosts.chunks(1_000).enumerate() {
        let changes: Vec<_> = chunk
            .iter()
            .map(|&p| Change::Announce(p, round as u32))
            .collect();
        apply(&mut trie, &changes);
        bounded(&trie);
    }
    assert_sound(&trie, 10_000);
    for chunk in hosts.chunks(1_000).rev() {
        let changes: Vec<_> = chunk.iter().map(|&p| Change::Withdraw(p)).collect();
        apply(&mut trie, &changes);
        bounded(&trie);
        trie.updater().check_invariants(trie.snapshot()).unwrap();
    }
    assert_sound(&trie, 1_000);
}
