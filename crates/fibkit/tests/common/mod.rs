//! The shared engine test suite: every engine runs the same checks.
//!
//! - small hand-made vectors (default route, host routes, nested and adjacent
//!   prefixes, no default route, empty table) for both families;
//! - property tests against the reference trie on random tables, with the
//!   seed printed by proptest on failure;
//! - real tables from `../shared/data`, on every range boundary;
//! - failed updates: a batch pushed past an engine's limits leaves it
//!   answering for the old table or the new one, never a mix.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::OnceLock;

use fibkit::engine::{BuildError, EngineConfig, Updater};
use fibkit::load::{load_table, load_updates, LoadOptions, LoadedTable, LoadedUpdates};
use fibkit::registry::EngineFamily;
use fibkit::spec::EngineSpec;
use fibkit::verify::check_addresses;
use fibkit::verify::verify;
use fibkit::{build, Addr, Change, Fib, Label, LocalFib, Lookup, Prefix, Rib};
use proptest::prelude::*;

/// The shared data set's folder: `../shared/data` beside the repository,
/// or the folder `FIBKIT_DATA_DIR` names.
pub fn data_dir() -> PathBuf {
    match std::env::var_os("FIBKIT_DATA_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"),
    }
}

/// What a test says when the shared data set is missing.
pub fn missing_data_message(dir: &std::path::Path) -> String {
    format!(
        "the shared data set is missing: the tests read real routing tables from {} \
         (`../shared/data` beside the repository clone, holding dfz-v4-nh.txt.gz and the \
         other files its README lists); put the data there and run the tests again",
        dir.display()
    )
}

/// `../shared/data/NAME`, relative to the workspace root; panics with
/// [`missing_data_message`] when the data set is not there.
pub fn data_path(name: &str) -> PathBuf {
    let dir = data_dir();
    assert!(dir.is_dir(), "{}", missing_data_message(&dir));
    dir.join(name)
}

/// Loads a shared table once per test binary.
pub fn shared_table(name: &'static str) -> &'static LoadedTable {
    static TABLES: OnceLock<std::sync::Mutex<Vec<(&'static str, &'static LoadedTable)>>> =
        OnceLock::new();
    let tables = TABLES.get_or_init(Default::default);
    let mut tables = tables.lock().unwrap();
    if let Some((_, table)) = tables.iter().find(|(n, _)| *n == name) {
        return table;
    }
    let table = load_table(&data_path(name), &LoadOptions::default())
        .unwrap_or_else(|e| panic!("loading {name}: {e}"));
    let table: &'static LoadedTable = Box::leak(Box::new(table));
    tables.push((name, table));
    table
}

/// The LINX IPv4 update stream of the shared data set (one hour, about
/// 23k changes), its next hops numbered as `table`'s so that its labels
/// are those of the DFZ table it is replayed onto.
pub fn linx_updates(table: &LoadedTable) -> LoadedUpdates {
    const LINX: &str = "linx-updates-ipv4.20141217.txt.gz";
    load_updates(
        &data_path(LINX),
        &LoadOptions::default(),
        table.nexthops.clone(),
    )
    .unwrap_or_else(|e| panic!("loading {LINX}: {e}"))
}

/// Builds `spec` from `rib` and checks it on every range boundary and
/// `random` random addresses; panics with the first mismatches.
pub fn assert_engine_matches<A: EngineFamily>(spec: &str, rib: &Rib<A>, random: usize) {
    let engine = build(spec, rib).unwrap_or_else(|e| panic!("building {spec}: {e}"));
    let report = verify(&engine, rib, random, 0x5eed);
    if !report.ok() {
        let shown: Vec<String> = report.mismatches.iter().map(|m| m.to_string()).collect();
        panic!(
            "{spec}: {} passed, {} failed:\n{}",
            report.passed,
            report.failed,
            shown.join("\n")
        );
    }
}

fn rib_of<A: Addr>(entries: &[(&str, u32)]) -> Rib<A> {
    Rib::from_pairs(entries.iter().map(|(text, label)| {
        let prefix: Prefix<A> = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
        (prefix, *label)
    }))
}

/// Hand-made IPv4 tables that catch the usual off-by-ones.
pub fn small_tables_v4() -> Vec<Rib<u32>> {
    vec![
        rib_of(&[]),
        rib_of(&[("0.0.0.0/0", 1)]),
        rib_of(&[
            ("0.0.0.0/0", 1),
            ("0.0.0.0/32", 2),
            ("255.255.255.255/32", 3),
        ]),
        rib_of(&[
            ("10.0.0.0/8", 1),
            ("10.0.0.0/9", 2),
            ("10.128.0.0/9", 3),
            ("10.64.0.0/10", 4),
        ]),
        rib_of(&[
            ("192.0.2.0/24", 1),
            ("192.0.3.0/24", 1),
            ("192.0.2.128/25", 2),
            ("192.0.2.129/32", 3),
        ]),
        rib_of(&[
            ("128.0.0.0/1", 7),
            ("0.0.0.0/1", 8),
            ("1.2.3.4/32", 9),
            ("1.2.3.0/31", 10),
        ]),
        rib_of(&[
            ("10.1.0.0/16", 5),
            ("10.1.0.0/24", 6),
            ("10.1.0.0/25", 7),
            ("10.1.0.0/30", 8),
        ]),
        // Many labels in one 2^8 block and a long prefix inside a short one.
        rib_of(
            &(0..=255)
                .map(|i| {
                    (
                        Box::leak(format!("10.0.0.{i}/32").into_boxed_str()) as &str,
                        i * 1000 + 7,
                    )
                })
                .collect::<Vec<_>>(),
        ),
        rib_of(&[
            ("0.0.0.0/0", u32::MAX),
            ("100.0.0.0/7", 0),
            ("101.255.255.0/24", u32::MAX - 1),
        ]),
    ]
}

/// Hand-made IPv6 tables.
pub fn small_tables_v6() -> Vec<Rib<u128>> {
    vec![
        rib_of(&[]),
        rib_of(&[("::/0", 1)]),
        rib_of(&[
            ("::/0", 1),
            ("::/128", 2),
            ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128", 3),
        ]),
        rib_of(&[
            ("2001:db8::/32", 1),
            ("2001:db8::/48", 2),
            ("2001:db8:1::/48", 3),
            ("2001:db8::1/128", 4),
        ]),
        rib_of(&[
            ("2000::/3", 5),
            ("2001::/16", 6),
            ("2001:db8:8000::/33", 7),
            ("fe80::/10", 8),
        ]),
    ]
}

/// Runs the hand-made tables through `spec` (families the engine supports).
pub fn check_small_tables(spec: &str, ipv4: bool, ipv6: bool) {
    if ipv4 {
        for rib in small_tables_v4() {
            assert_engine_matches(spec, &rib, 2000);
        }
    }
    if ipv6 {
        for rib in small_tables_v6() {
            assert_engine_matches(spec, &rib, 2000);
        }
    }
}

/// 800,000 IPv4 host routes with distinct labels, one address apart: 1.6M
/// ranges in `dxr`'s wide chunks, about 4.8M range-table words at any K,
/// past the 2^22 a chunk base reaches in one-word steps.
pub fn distinct_host_routes_v4() -> Rib<u32> {
    Rib::from_pairs((0..800_000u32).map(|i| (Prefix::new_masked(0x0a00_0000 + 2 * i, 32), i)))
}

/// `count` IPv6 host routes, one per /48 (`i << 80 | 1`), seven labels: in
/// `dxr6` each is a leaf of two 128-bit starts and three labels, a line of
/// its own, so 600,000 of them pass the 2^19 lines that leaf entries name
/// at `align=1`.
pub fn host_routes_one_line_each_v6(count: u128) -> Rib<u128> {
    Rib::from_pairs((0..count).map(|i| (Prefix::new_masked(i << 80 | 1, 128), i as u32 % 7)))
}

/// Random IPv4 tables: prefixes clustered so they nest and touch.
pub fn random_table_v4() -> impl Strategy<Value = Vec<(u32, u8, u32)>> {
    prop::collection::vec((any::<u32>(), 0u8..=32, 0u32..6), 0..200).prop_map(|mut entries| {
        // Pull most addresses into a few /12s so prefixes overlap.
        for (i, entry) in entries.iter_mut().enumerate() {
            if i % 4 != 0 {
                entry.0 = (entry.0 & 0x000f_ffff) | ((i as u32 % 3) << 20) | 0x0a00_0000;
            }
        }
        entries
    })
}

/// Random IPv6 tables, clustered in the same way.
pub fn random_table_v6() -> impl Strategy<Value = Vec<(u128, u8, u32)>> {
    prop::collection::vec((any::<u128>(), 0u8..=128, 0u32..6), 0..200).prop_map(|mut entries| {
        for (i, entry) in entries.iter_mut().enumerate() {
            if i % 4 != 0 {
                entry.0 = (entry.0 & ((1u128 << 100) - 1))
                    | ((i as u128 % 3) << 100)
                    | (0x2001u128 << 112);
            }
        }
        entries
    })
}

/// Builds a reference table from `(addr, plen, label)` triples (host bits masked).
pub fn rib_from_triples<A: Addr>(entries: &[(A, u8, u32)]) -> Rib<A> {
    Rib::from_pairs(
        entries
            .iter()
            .map(|&(addr, plen, label)| (Prefix::new_masked(addr, plen), label)),
    )
}

/// A seeded linear congruential generator: the upper 32 bits of each
/// state, for tests that need a fixed stream without a distribution.
pub fn lcg(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed;
    move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        state >> 32
    }
}

/// Checks `spec` on the full shared table `name`, both families it supports.
pub fn check_shared_table(spec: &str, name: &'static str, ipv4: bool, ipv6: bool) {
    let table = shared_table(name);
    if ipv4 && !table.v4.is_empty() {
        assert_engine_matches(spec, &table.v4, 200_000);
    }
    if ipv6 && !table.v6.is_empty() {
        assert_engine_matches(spec, &table.v6, 200_000);
    }
}

/// Applies each of `batches` in turn through a [`LocalFib`] and a [`Fib`]
/// of engine `spec` built from `rib`, and checks after each that the batch
/// was all or nothing: if `apply` succeeded, the handle's reference table is
/// the new table and its snapshot answers for it; if it failed, both are as
/// before the batch. Answers are checked (single and batch lookups) at every
/// range boundary of the old and the new table, their neighbours and
/// `random` random addresses, so a half-applied batch shows as a mix.
/// The [`Fib`] copies the current snapshot for each batch, as a
/// [`LocalFib`] patches its own, and must fail the same batches; a second
/// `Fib` catches its spares up (see [`Fib::set_catch_up`]) and is checked
/// for atomicity alone. Returns how many batches failed, so callers can
/// check that their batches really reached the limits.
pub fn assert_batches_atomic<A: EngineFamily>(
    spec: &str,
    rib: &Rib<A>,
    batches: &[Vec<Change<A>>],
    random: usize,
) -> usize {
    let config = spec
        .parse::<<A as EngineFamily>::Config>()
        .unwrap_or_else(|e| panic!("{spec}: {e}"));
    assert_batches_atomic_with::<A, A::Engine>(config, rib, batches, random)
}

/// [`assert_batches_atomic`] for the engine `U` with `config`.
pub fn assert_batches_atomic_with<A: EngineFamily, U: Updater<A>>(
    config: U::Config,
    rib: &Rib<A>,
    batches: &[Vec<Change<A>>],
    random: usize,
) -> usize {
    let spec = config.to_string();
    let mut local = LocalFib::<A, U>::with_config(config.clone(), rib.clone())
        .unwrap_or_else(|e| panic!("building {spec}: {e}"));
    let shared = Fib::<A, U>::with_config(config.clone(), rib.clone())
        .unwrap_or_else(|e| panic!("building {spec}: {e}"));
    shared.set_catch_up(Some(false));
    let catching = Fib::<A, U>::with_config(config, rib.clone())
        .unwrap_or_else(|e| panic!("building {spec}: {e}"));
    catching.set_catch_up(Some(true));
    let mut failed = 0;
    for (number, batch) in batches.iter().enumerate() {
        let old = local.rib().clone();
        let mut new = old.clone();
        for change in batch {
            new.apply(*change);
        }
        let mut addrs = check_addresses(&old, 0, 0);
        addrs.extend(check_addresses(&new, random, number as u64));
        let context =
            |handle: &str| format!("{spec}, {handle}, batch {number} ({} changes)", batch.len());
        let outcome = local.apply(batch);
        let want = match &outcome {
            Ok(_) => &new,
            Err(_) => {
                failed += 1;
                &old
            }
        };
        assert_same_table(local.rib(), want, &context("LocalFib"));
        assert_answers(local.snapshot(), want, &addrs, &context("LocalFib"));
        let shared_outcome = shared.apply(batch);
        assert_eq!(
            shared_outcome.is_ok(),
            outcome.is_ok(),
            "{}: LocalFib gave {outcome:?}, Fib {shared_outcome:?}",
            context("Fib")
        );
        shared.with_rib(|rib| assert_same_table(rib, want, &context("Fib")));
        assert_answers(&*shared.snapshot(), want, &addrs, &context("Fib"));
        // Atomic whichever way it went.
        let before = catching.with_rib(|rib| rib.clone());
        let mut caught_up = before.clone();
        if catching.apply(batch).is_ok() {
            for change in batch {
                caught_up.apply(*change);
            }
        }
        let context = context("Fib catching up");
        catching.with_rib(|rib| assert_same_table(rib, &caught_up, &context));
        let mut addrs = check_addresses(&before, 0, 0);
        addrs.extend(check_addresses(&caught_up, random, number as u64));
        assert_answers(&*catching.snapshot(), &caught_up, &addrs, &context);
    }
    failed
}

/// An engine `U` with a limit a test chooses: it fails to build a table of
/// more than `max_prefixes` prefixes, and fails an update that leaves more,
/// after `U` has patched the snapshot and its own state for the new table.
/// That is the worst failure an engine can report: a snapshot the handle
/// must not publish and an updater it must not keep. Engines whose real
/// limits (label counts, 2^32 slots, range-table words) no small table
/// reaches are checked for atomic updates through this.
#[derive(Clone)]
pub struct Capped<U> {
    inner: U,
    max_prefixes: usize,
}

/// [`Capped`]'s parameters: the engine's own and the prefix limit.
#[derive(Clone, Debug)]
pub struct CappedConfig<C> {
    /// The engine's parameters.
    pub inner: C,
    /// The most prefixes a table may hold.
    pub max_prefixes: usize,
}

impl<C: EngineConfig> std::fmt::Display for CappedConfig<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} capped at {} prefixes", self.inner, self.max_prefixes)
    }
}

impl<C: EngineConfig> EngineConfig for CappedConfig<C> {
    const NAMES: &'static [&'static str] = &["capped"];
    const ABOUT: &'static str = "a test wrapper that refuses tables past a size";
    const LAYOUTS: &'static [fibkit::engine::Layout] = &[];

    fn from_spec(spec: &EngineSpec) -> Result<Self, BuildError> {
        Err(spec.error("a test wrapper, built from a config, not a spec".into()))
    }
}

impl<U: Updater<A>, A: Addr> Updater<A> for Capped<U> {
    type Config = CappedConfig<U::Config>;
    type Snapshot = U::Snapshot;
    type Stats = U::Stats;

    fn build(config: &Self::Config, rib: &Rib<A>) -> Result<(Self, Self::Snapshot), BuildError> {
        let capped = |inner| Capped {
            inner,
            max_prefixes: config.max_prefixes,
        };
        if rib.len() > config.max_prefixes {
            return Err(capped_limit(config));
        }
        U::build(&config.inner, rib).map(|(inner, snapshot)| (capped(inner), snapshot))
    }

    fn config(&self) -> Self::Config {
        CappedConfig {
            inner: self.inner.config(),
            max_prefixes: self.max_prefixes,
        }
    }

    fn patches(&self) -> bool {
        self.inner.patches()
    }

    fn update(
        &mut self,
        snapshot: &mut Self::Snapshot,
        rib: &Rib<A>,
        changed: &[Prefix<A>],
    ) -> Result<(), BuildError> {
        self.inner.update(snapshot, rib, changed)?;
        if rib.len() > self.max_prefixes {
            return Err(capped_limit(&self.config()));
        }
        Ok(())
    }

    fn stats(&self, snapshot: &Self::Snapshot) -> Self::Stats {
        self.inner.stats(snapshot)
    }
}

fn capped_limit<C: EngineConfig>(config: &CappedConfig<C>) -> BuildError {
    BuildError::Limit {
        engine: config.to_string(),
        why: format!("more than {} prefixes", config.max_prefixes),
    }
}

fn assert_same_table<A: Addr>(got: &Rib<A>, want: &Rib<A>, context: &str) {
    let got: Vec<(Prefix<A>, Label)> = got.iter().collect();
    let want: Vec<(Prefix<A>, Label)> = want.iter().collect();
    assert!(
        got == want,
        "{context}: the reference table is neither before nor after the batch"
    );
}

/// Panics with the first mismatches if `engine` does not answer as `rib`
/// at every one of `addrs`, in single and batch lookups.
fn assert_answers<A: Addr, L: Lookup<A> + ?Sized>(
    engine: &L,
    rib: &Rib<A>,
    addrs: &[A],
    context: &str,
) {
    let mut batch = vec![None; addrs.len()];
    engine.lookup_batch(addrs, &mut batch);
    let wrong: Vec<String> = addrs
        .iter()
        .zip(&batch)
        .filter_map(|(&addr, &batched)| {
            let want = rib.lookup(addr);
            let single = engine.lookup(addr);
            (single != want || batched != want).then(|| {
                format!(
                    "{}: want {want:?}, got {single:?} (batch {batched:?})",
                    addr.display()
                )
            })
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "{context}: {} of {} addresses answer neither for the old table nor only for the new one:\n{}",
        wrong.len(),
        addrs.len(),
        wrong[..wrong.len().min(10)].join("\n")
    );
}

/// Random batches of IPv4 changes: announcements (six labels) and
/// withdrawals of prefixes up to `max_plen` bits. Three changes in four
/// land in the few /12s [`random_table_v4`] clusters its prefixes in, so
/// they nest in and touch the table; a withdrawal takes back a prefix an
/// earlier change announced when there is one, so withdrawals hit.
pub fn random_batches_v4(max_plen: u8) -> impl Strategy<Value = Vec<Vec<Change<u32>>>> {
    random_batches(max_plen, |addr: u32, i| {
        (addr & 0x000f_ffff) | ((i as u32 % 3) << 20) | 0x0a00_0000
    })
}

/// [`random_batches_v4`] for IPv6, clustered as [`random_table_v6`].
pub fn random_batches_v6(max_plen: u8) -> impl Strategy<Value = Vec<Vec<Change<u128>>>> {
    random_batches(max_plen, |addr: u128, i| {
        (addr & ((1u128 << 100) - 1)) | ((i as u128 % 3) << 100) | (0x2001u128 << 112)
    })
}

/// Up to 8 batches of up to 40 changes; `cluster(addr, i)` pulls the
/// address of the `i`th change of a batch near the table (every fourth
/// stays anywhere).
fn random_batches<A: Addr + Arbitrary>(
    max_plen: u8,
    cluster: fn(A, usize) -> A,
) -> impl Strategy<Value = Vec<Vec<Change<A>>>> {
    let change = (
        any::<A>(),
        0u8..=max_plen,
        prop::option::weighted(0.6, 0u32..6),
        any::<prop::sample::Index>(),
    );
    prop::collection::vec(prop::collection::vec(change, 1..40), 1..8).prop_map(move |batches| {
        let mut announced: Vec<Prefix<A>> = Vec::new();
        batches
            .into_iter()
            .map(|batch| {
                batch
                    .into_iter()
                    .enumerate()
                    .map(|(i, (addr, plen, label, pick))| {
                        let addr = if i % 4 == 0 { addr } else { cluster(addr, i) };
                        let prefix = Prefix::new_masked(addr, plen);
                        match label {
                            Some(label) => {
                                announced.push(prefix);
                                Change::Announce(prefix, label)
                            }
                            None if announced.is_empty() => Change::Withdraw(prefix),
                            None => Change::Withdraw(*pick.get(&announced)),
                        }
                    })
                    .collect()
            })
            .collect()
    })
}

/// `batches` with a change to the default route at a random place in each
/// batch: an announcement (a new label, or the label it has: a relabel or
/// nothing) or a withdrawal, mixed with the batch's other changes.
pub fn with_default_route_changes<A: Addr>(
    batches: impl Strategy<Value = Vec<Vec<Change<A>>>>,
) -> impl Strategy<Value = Vec<Vec<Change<A>>>> {
    let flap = (
        prop::option::weighted(0.6, 0u32..6),
        any::<prop::sample::Index>(),
    );
    (batches, prop::collection::vec(flap, 8)).prop_map(|(mut batches, flaps)| {
        for (batch, (label, at)) in batches.iter_mut().zip(flaps) {
            let change = match label {
                Some(label) => Change::Announce(Prefix::default_route(), label),
                None => Change::Withdraw(Prefix::default_route()),
            };
            batch.insert(at.index(batch.len() + 1), change);
        }
        batches
    })
}

/// [`rib_from_triples`], with its default route if `default_route` and
/// without one otherwise.
pub fn rib_with_or_without_default<A: Addr>(
    entries: &[(A, u8, u32)],
    default_route: Option<u32>,
) -> Rib<A> {
    let mut rib = rib_from_triples(entries);
    match default_route {
        Some(label) => rib.insert(Prefix::default_route(), label),
        None => rib.remove(Prefix::default_route()),
    };
    rib
}

/// Applies `batches` to a `LocalFib` of every one of `specs` built from
/// `rib`, checking it against the reference after each batch.
pub fn replay_batches<A: EngineFamily>(rib: &Rib<A>, batches: &[Vec<Change<A>>], specs: &[&str]) {
    for spec in specs {
        let mut fib = LocalFib::<A>::new(spec, rib.clone()).unwrap();
        for batch in batches {
            fib.apply(batch).unwrap();
            let report = verify(&fib, fib.rib(), 300, 1);
            assert!(report.ok(), "{spec}: {}", report.mismatches[0]);
        }
    }
}

/// Verifies `engine` against `rib` (every range boundary plus `random`
/// addresses, seed 0x5eed), failing with `what` and the first mismatch.
pub fn assert_verified<A: EngineFamily>(
    engine: &impl Lookup<A>,
    rib: &Rib<A>,
    random: usize,
    what: &str,
) {
    let report = verify(engine, rib, random, 0x5eed);
    assert!(
        report.ok(),
        "{what}: {} failed, first: {}",
        report.failed,
        report.mismatches[0]
    );
}
