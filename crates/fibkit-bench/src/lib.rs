//! fibkit's lab: the benchmark method behind `fibkit bench`, the replay
//! driver behind `fibkit replay` ([`replay`]), and the trial programs of
//! `examples/` (engine benchmarks and A/B comparisons). It is kept apart from
//! the `fibkit` library so that embedders build neither `rand` nor
//! `core_affinity`; the seeded synthetic generators it draws keys, tables
//! and change streams from are fibkit's own, behind its non-default `bench`
//! feature (`fibkit::trace::generate` and its neighbours).
//!
//! # The benchmark method
//!
//! The benchmark method of \[Zec19\], section 3.6, run in alternating
//! rounds.
//!
//! Keys are generated before timing starts into one array (default 2^24 keys,
//! seeded); every result is stored into a result array, so no lookup can be
//! optimised away; each run loops over the key array until at least
//! `min_seconds` have passed, and is reported in million lookups per second
//! (Mlps) and nanoseconds per lookup.
//!
//! Rounds ([`interleave`]): this machine's neighbours move one engine's
//! figure by up to 2x between runs seconds apart, so configurations compared
//! with each other are not measured one after the other but in rounds: run 1
//! of every configuration, then run 2 of every one, and so on. Each
//! configuration is reported by the median of its runs; against a baseline,
//! by the median of the per-round ratios ([`Ratio`]), each of which pairs
//! runs seconds apart.
//!
//! Key patterns ([`Pattern`]):
//! - `rnd`: uniform over the whole address space;
//! - `rnd-public`: uniform, but outside multicast and reserved space (IPv4, as
//!   the thesis does) or inside the global unicast `2000::/3` (IPv6);
//! - `announced`: uniform inside uniformly chosen prefixes of the table;
//! - `seq`: random keys, each XORed with the previous lookup's result, so the
//!   lookups serialise and latency, not throughput, is measured;
//! - `rep`: each key looked up 8 times within a sliding window of 8 keys
//!   (temporal locality, as in real traffic);
//! - `trace:FILE`: addresses from a file, one per line.
//!
//! Modes ([`Mode`]), the call paths users have:
//! - `plain`: the engine's own per-key loop ([`Lookup::lookup_each`]);
//! - `key`: one call per key through what the caller holds (a [`Handle`]:
//!   for `fibkit bench` the registry's snapshot enum, a `match` per call);
//! - `reader`: one call per key through a [`Reader`] of a live
//!   [`Fib`](fibkit::Fib), one atomic load per call;
//! - `batch`: [`Lookup::lookup_batch`] on the whole key array;
//! - `burstN`: [`Lookup::lookup_batch`] on consecutive slices of N keys, the
//!   bursts a datapath passes (DPDK's is 32).
//!
//! With several threads, each looks up its own slice of the key array, pinned
//! to its own core when possible; the aggregate rate is reported.
#![deny(missing_docs)]

pub mod replay;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use fibkit::addr::Addr;
use fibkit::engine::{BuildError, Lookup, Updater};
use fibkit::fib::{Published, Reader};
use fibkit::prefix::{Label, Prefix};
use fibkit::registry::EngineFamily;
use fibkit::rib::Rib;
use fibkit::trace::KeyError;

/// A key pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// Uniform over the whole space.
    Rnd,
    /// Uniform outside reserved and multicast space (IPv4) / inside 2000::/3 (IPv6).
    RndPublic,
    /// Uniform inside uniformly chosen prefixes of the table.
    Announced,
    /// Random keys chained through the previous result.
    Seq,
    /// Each key 8 times in a sliding window of 8.
    Rep,
    /// Keys read from a file, one address per line.
    Trace(PathBuf),
}

impl Pattern {
    /// The name used on the command line and in results.
    pub fn name(&self) -> String {
        match self {
            Pattern::Rnd => "rnd".into(),
            Pattern::RndPublic => "rnd-public".into(),
            Pattern::Announced => "announced".into(),
            Pattern::Seq => "seq".into(),
            Pattern::Rep => "rep".into(),
            Pattern::Trace(path) => format!("trace:{}", path.display()),
        }
    }
}

impl std::str::FromStr for Pattern {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        Ok(match text {
            "rnd" => Pattern::Rnd,
            "rnd-public" => Pattern::RndPublic,
            "announced" => Pattern::Announced,
            "seq" => Pattern::Seq,
            "rep" => Pattern::Rep,
            _ => match text.strip_prefix("trace:") {
                Some(path) if !path.is_empty() => Pattern::Trace(PathBuf::from(path)),
                _ => {
                    return Err(format!(
                        "unknown key pattern `{text}` (known: rnd, rnd-public, announced, seq, rep, trace:FILE)"
                    ))
                }
            },
        })
    }
}

/// How lookups are issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// The engine's own per-key loop ([`Lookup::lookup_each`]): one call
    /// per slice, the loop inside the engine.
    Plain,
    /// One call per key through what the caller holds ([`Handle::lookup`];
    /// for `fibkit bench`, the registry's snapshot enum, whose lookup is a
    /// `match`).
    Key,
    /// One call per key through a [`Reader`] of a [`Fib`](fibkit::Fib): one
    /// atomic load per call, then the snapshot's lookup.
    Reader,
    /// The engine's batch lookup ([`Lookup::lookup_batch`]) on the whole
    /// key slice.
    Batch,
    /// The engine's batch lookup on consecutive slices of this many keys
    /// (32 is DPDK's burst).
    Burst(usize),
}

impl Mode {
    /// The modes a command line may name (`burstN` with N keys per call).
    pub const NAMES: &'static str = "plain, key, reader, batch, burstN";

    /// Whether each lookup is a call of its own or part of the engine's
    /// per-key loop: the modes in which `seq` keys can chain.
    pub fn is_per_key(self) -> bool {
        matches!(self, Mode::Plain | Mode::Key | Mode::Reader)
    }
}

/// The modes named by `names` (`plain`, `key`, `reader`, `batch`, `burstN`,
/// and `burst` for one `burstN` per size of `bursts`), in order, each once.
pub fn parse_modes(names: &[String], bursts: &[usize]) -> Result<Vec<Mode>, String> {
    let mut modes = Vec::new();
    for name in names {
        let expanded = match name.as_str() {
            "burst" => bursts.iter().map(|&keys| Mode::Burst(keys)).collect(),
            other => vec![other.parse::<Mode>()?],
        };
        for mode in expanded {
            if mode == Mode::Burst(0) {
                return Err("a burst needs at least 1 key".into());
            }
            if !modes.contains(&mode) {
                modes.push(mode);
            }
        }
    }
    if modes.is_empty() {
        return Err(format!("no mode named ({})", Mode::NAMES));
    }
    Ok(modes)
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Mode::Plain => f.write_str("plain"),
            Mode::Key => f.write_str("key"),
            Mode::Reader => f.write_str("reader"),
            Mode::Batch => f.write_str("batch"),
            Mode::Burst(keys) => write!(f, "burst{keys}"),
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        Ok(match text {
            "plain" => Mode::Plain,
            "key" => Mode::Key,
            "reader" => Mode::Reader,
            "batch" => Mode::Batch,
            _ => match text.strip_prefix("burst").map(str::parse::<usize>) {
                Some(Ok(keys)) if keys > 0 => Mode::Burst(keys),
                _ => {
                    return Err(format!(
                        "`{text}` is not a mode ({}, with N at least 1)",
                        Mode::NAMES
                    ))
                }
            },
        })
    }
}

impl serde::Serialize for Mode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Reads back what `Serialize` wrote (`plain`, `burst32`, ...), so stored
/// results can be plotted again.
impl<'de> serde::Deserialize<'de> for Mode {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = <String as serde::Deserialize>::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

fn is_public_v4(addr: u32) -> bool {
    // 0/8, 10/8, 100.64/10, 127/8, 169.254/16, 172.16/12, 192.168/16, and
    // 224/3 (multicast and class E).
    const RESERVED: [(u32, u8); 8] = [
        (0x0000_0000, 8),
        (0x0a00_0000, 8),
        (0x6440_0000, 10),
        (0x7f00_0000, 8),
        (0xa9fe_0000, 16),
        (0xac10_0000, 12),
        (0xc0a8_0000, 16),
        (0xe000_0000, 3),
    ];
    !RESERVED.iter().any(|&(net, plen)| addr.masked(plen) == net)
}

/// Generates `count` keys of `pattern` (for `seq`, the random base keys).
pub fn generate_keys<A: Addr>(
    pattern: &Pattern,
    count: usize,
    seed: u64,
    rib: &Rib<A>,
) -> Result<Vec<A>, KeyError> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut uniform = || A::from_u128(rng.random::<u128>());
    Ok(match pattern {
        Pattern::Rnd | Pattern::Seq => (0..count).map(|_| uniform()).collect(),
        Pattern::RndPublic => {
            let mut keys = Vec::with_capacity(count);
            while keys.len() < count {
                let key = uniform();
                let public = match A::BITS {
                    32 => is_public_v4(key.to_u128() as u32),
                    _ => key.to_u128() >> 125 == 1, // 2000::/3
                };
                if public {
                    keys.push(key);
                }
            }
            keys
        }
        Pattern::Announced => {
            let prefixes: Vec<Prefix<A>> = rib.iter().map(|(prefix, _)| prefix).collect();
            if prefixes.is_empty() {
                return Err(KeyError::Empty(
                    "the table has no prefix to draw `announced` keys from".into(),
                ));
            }
            let mut rng = SmallRng::seed_from_u64(seed ^ 0xa11_0ced);
            (0..count)
                .map(|_| {
                    let prefix = prefixes[rng.random_range(0..prefixes.len())];
                    let host = rng.random::<u128>() & !A::mask(prefix.plen()).to_u128();
                    A::from_u128(prefix.addr().to_u128() | host)
                })
                .collect()
        }
        Pattern::Rep => {
            let base: Vec<A> = (0..count / 8 + 8).map(|_| uniform()).collect();
            (0..count).map(|i| base[i / 8 + i % 8]).collect()
        }
        Pattern::Trace(path) => {
            let keys = fibkit::trace::read_trace::<A>(path)?;
            if keys.is_empty() {
                return Err(KeyError::Empty(format!(
                    "{}: no {} address in the trace",
                    path.display(),
                    A::FAMILY
                )));
            }
            // Repeat the trace to `count` keys, so every pattern times the same work.
            (0..count).map(|i| keys[i % keys.len()]).collect()
        }
    })
}

/// Timing settings of [`measure`].
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Settings {
    /// Each run lasts at least this long (whole passes over the keys).
    pub min_seconds: f64,
    /// Runs (rounds) per configuration; the median is reported.
    pub runs: usize,
    /// Threads, each looking up its own slice of the keys.
    pub threads: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            min_seconds: 1.0,
            runs: 5,
            threads: 1,
        }
    }
}

/// What a benchmark thread looks up through: a snapshot (`&L` for any
/// [`Lookup`]), a [`Reader`] of a [`Fib`](fibkit::Fib), or a peer
/// library's table in a harness. Only [`Handle::lookup`] is required; the
/// loops default to one [`Handle::lookup`] per address.
pub trait Handle<A: Addr> {
    /// One lookup, as a caller holding this handle makes it.
    fn lookup(&mut self, addr: A) -> Option<Label>;

    /// The engine's own per-key loop ([`Lookup::lookup_each`]).
    fn lookup_each(&mut self, addrs: &[A], out: &mut [Option<Label>]) {
        for (addr, result) in addrs.iter().zip(out.iter_mut()) {
            *result = self.lookup(*addr);
        }
    }

    /// The engine's batch lookup ([`Lookup::lookup_batch`]).
    fn lookup_batch(&mut self, addrs: &[A], out: &mut [Option<Label>]) {
        self.lookup_each(addrs, out);
    }

    /// Dependent lookups, as [`Lookup::lookup_chained`].
    fn lookup_chained(&mut self, addrs: &[A], out: &mut [Option<Label>], seed: Label) -> Label {
        chain_keys(self, addrs, out, seed)
    }
}

/// [`Lookup::lookup_chained`] made of one [`Handle::lookup`] call per
/// address, so the call path of the `key` and `reader` modes is the one
/// measured on `seq` keys too.
fn chain_keys<A: Addr, H: Handle<A> + ?Sized>(
    handle: &mut H,
    addrs: &[A],
    out: &mut [Option<Label>],
    seed: Label,
) -> Label {
    let mut previous = seed;
    for (addr, result) in addrs.iter().zip(out.iter_mut()) {
        let label = handle.lookup(*addr ^ A::from_u64(previous as u64));
        *result = label;
        previous = label.unwrap_or(0);
    }
    previous
}

impl<A: Addr, L: Lookup<A> + ?Sized> Handle<A> for &L {
    #[inline(always)]
    fn lookup(&mut self, addr: A) -> Option<Label> {
        Lookup::lookup(*self, addr)
    }
    fn lookup_each(&mut self, addrs: &[A], out: &mut [Option<Label>]) {
        Lookup::lookup_each(*self, addrs, out)
    }
    fn lookup_batch(&mut self, addrs: &[A], out: &mut [Option<Label>]) {
        Lookup::lookup_batch(*self, addrs, out)
    }
    fn lookup_chained(&mut self, addrs: &[A], out: &mut [Option<Label>], seed: Label) -> Label {
        Lookup::lookup_chained(*self, addrs, out, seed)
    }
}

/// Per key, one atomic load and the snapshot's lookup ([`Reader::lookup`]);
/// a slice loads the snapshot once ([`Reader::lookup_batch`]).
impl<A: Addr, S: Lookup<A>> Handle<A> for Reader<S> {
    #[inline(always)]
    fn lookup(&mut self, addr: A) -> Option<Label> {
        Reader::lookup(self, addr)
    }
    fn lookup_batch(&mut self, addrs: &[A], out: &mut [Option<Label>]) {
        Reader::lookup_batch(self, addrs, out)
    }
}

/// What one run of one configuration gave.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Run {
    /// Million lookups per second, all threads together.
    pub mlps: f64,
    /// A checksum of the results of the last pass (the same keys and table
    /// give the same value in every mode and for every correct engine).
    pub checksum: u64,
}

/// One pass over `keys` in `mode`; `chained` (the `seq` pattern) makes
/// each lookup depend on the previous result, which the batch modes
/// cannot: they run the engine's chained loop, as `plain` does.
fn pass<A: Addr, H: Handle<A>>(
    handle: &mut H,
    keys: &[A],
    out: &mut [Option<Label>],
    mode: Mode,
    chained: bool,
) {
    match mode {
        Mode::Key | Mode::Reader if chained => {
            chain_keys(handle, keys, out, 0);
        }
        _ if chained => {
            handle.lookup_chained(keys, out, 0);
        }
        Mode::Plain => handle.lookup_each(keys, out),
        Mode::Key | Mode::Reader => {
            for (addr, result) in keys.iter().zip(out.iter_mut()) {
                *result = handle.lookup(*addr);
            }
        }
        Mode::Batch => handle.lookup_batch(keys, out),
        Mode::Burst(burst) => {
            let burst = burst.max(1);
            for (addrs, results) in keys.chunks(burst).zip(out.chunks_mut(burst)) {
                handle.lookup_batch(addrs, results);
            }
        }
    }
}

/// Nanoseconds the calling thread has run on a CPU (Linux's
/// `/proc/thread-self/schedstat`), elsewhere the wall time since the first
/// call. A run timed by it leaves out the time a shared machine's
/// scheduler gives other processes, which wall time would count.
pub fn thread_cpu_ns() -> u64 {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| START.get_or_init(Instant::now).elapsed().as_nanos() as u64)
}

/// The 1, 5 and 15-minute load averages as `/proc/loadavg` gives them
/// (empty where it cannot be read): the note beside every measurement.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

/// Calls `pass` until at least `min` has elapsed (whole passes only).
/// Returns the passes made and the time they took: the timing loop of
/// every measurement here and of the peer harnesses.
pub fn timed_passes(min: Duration, mut pass: impl FnMut()) -> (u64, Duration) {
    let start = Instant::now();
    let mut passes = 0u64;
    loop {
        pass();
        passes += 1;
        let elapsed = start.elapsed();
        if elapsed >= min {
            return (passes, elapsed);
        }
    }
}

/// One run of one configuration: each of `threads` threads (pinned to its
/// own core where the system allows) makes a handle with `handle` and
/// passes over its own slice of `keys` in `mode` until `min` has elapsed;
/// results go to the same positions of `out`. With `chained` (the `seq`
/// pattern) each lookup depends on the previous result; every pass starts
/// its chain afresh, so every pass gives the same results.
///
/// The `reader` mode is the `key` loop: give it [`Fib::reader`](fibkit::Fib::reader)
/// as `handle`.
///
/// # Panics
/// If `out` is shorter than `keys`.
pub fn run<A: Addr, H: Handle<A>>(
    handle: impl Fn() -> H + Sync,
    keys: &[A],
    out: &mut [Option<Label>],
    mode: Mode,
    chained: bool,
    threads: usize,
    min: Duration,
) -> Run {
    assert!(out.len() >= keys.len(), "output slice shorter than keys");
    let slice_len = keys.len().div_ceil(threads.max(1)).max(1);
    // Threads are pinned to distinct cores, so runs do not migrate; with
    // more threads than cores they wrap around.
    let cores = core_affinity::get_core_ids().unwrap_or_default();
    let handle = &handle;
    let wall = Instant::now();
    let per_thread: Vec<(u64, u64)> = std::thread::scope(|scope| {
        let spawned: Vec<_> = keys
            .chunks(slice_len)
            .zip(out.chunks_mut(slice_len))
            .enumerate()
            .map(|(index, (slice, out))| {
                let core = cores.get(index % cores.len().max(1)).copied();
                scope.spawn(move || {
                    if let Some(core) = core {
                        core_affinity::set_for_current(core);
                    }
                    let mut handle = handle();
                    let (passes, _) =
                        timed_passes(min, || pass(&mut handle, slice, out, mode, chained));
                    std::hint::black_box(&*out);
                    (passes * slice.len() as u64, checksum(out))
                })
            })
            .collect();
        spawned
            .into_iter()
            .map(|thread| thread.join().expect("benchmark thread panicked"))
            .collect()
    });
    let lookups: u64 = per_thread.iter().map(|(lookups, _)| lookups).sum();
    Run {
        mlps: lookups as f64 / wall.elapsed().as_secs_f64() / 1e6,
        checksum: per_thread.iter().fold(0, |a, (_, sum)| {
            a.wrapping_mul(1_000_003).wrapping_add(*sum)
        }),
    }
}

/// An engine built by spec for measurement: its snapshot, which every mode
/// but `reader` looks up in, and when built for the `reader` mode the live
/// [`Fib`](fibkit::Fib) that published it (which keeps its own copy of the
/// table).
pub struct BenchEngine<A: EngineFamily> {
    spec: String,
    build_seconds: f64,
    held: Held<A>,
}

enum Held<A: EngineFamily> {
    Snapshot(A::Snapshot),
    Fib(fibkit::Fib<A>, Arc<Published<A::Snapshot>>),
}

impl<A: EngineFamily> BenchEngine<A> {
    /// Builds `spec` from `rib`, timing the build; with `readers`, as a
    /// [`Fib`](fibkit::Fib), so the `reader` mode has a handle to read.
    pub fn build(spec: &str, rib: &Rib<A>, readers: bool) -> Result<Self, BuildError> {
        let config: A::Config = spec.parse()?;
        let spec = config.to_string();
        if readers {
            let rib = rib.clone();
            let start = Instant::now();
            let fib = fibkit::LocalFib::<A>::with_config(config, rib)?.into_shared();
            let build_seconds = start.elapsed().as_secs_f64();
            let published = fib.snapshot();
            return Ok(BenchEngine {
                spec,
                build_seconds,
                held: Held::Fib(fib, published),
            });
        }
        let start = Instant::now();
        let (_, snapshot) = A::Engine::build(&config, rib)?;
        Ok(BenchEngine {
            spec,
            build_seconds: start.elapsed().as_secs_f64(),
            held: Held::Snapshot(snapshot),
        })
    }

    /// The engine's spec in canonical form.
    pub fn spec(&self) -> &str {
        &self.spec
    }

    /// Seconds the build took.
    pub fn build_seconds(&self) -> f64 {
        self.build_seconds
    }

    /// The snapshot lookups read.
    pub fn snapshot(&self) -> &A::Snapshot {
        match &self.held {
            Held::Snapshot(snapshot) => snapshot,
            Held::Fib(_, published) => published.snapshot(),
        }
    }

    /// One [`run`] in `mode`: through a [`Reader`] per thread for `reader`
    /// (when built for it), through the snapshot for every other mode.
    pub fn run(
        &self,
        keys: &[A],
        out: &mut [Option<Label>],
        mode: Mode,
        chained: bool,
        threads: usize,
        min: Duration,
    ) -> Run {
        match &self.held {
            Held::Fib(fib, _) if mode == Mode::Reader => {
                run(|| fib.reader(), keys, out, mode, chained, threads, min)
            }
            _ => run(|| self.snapshot(), keys, out, mode, chained, threads, min),
        }
    }
}

/// Runs `rounds` rounds over `configurations` configurations: round 1 of
/// every configuration (`run_one(round, configuration)`, in order), then
/// round 2 of every one, and so on. On a shared machine the load moves one
/// configuration's figure by up to 2x between runs seconds apart; runs in
/// one round share the load of their moment, so comparing them round by
/// round ([`Ratio`]) cancels most of it, where configurations measured one
/// after the other would not. Returns each configuration's results in
/// round order.
pub fn interleave<T>(
    rounds: usize,
    configurations: usize,
    mut run_one: impl FnMut(usize, usize) -> T,
) -> Vec<Vec<T>> {
    let mut results: Vec<Vec<T>> = (0..configurations)
        .map(|_| Vec::with_capacity(rounds))
        .collect();
    for round in 0..rounds {
        for (configuration, runs) in results.iter_mut().enumerate() {
            runs.push(run_one(round, configuration));
        }
    }
    results
}

/// The median of `values`: the middle value, or the mean of the two middle
/// ones for an even count; NaN when empty.
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// One configuration against a baseline measured in the same rounds: the
/// ratio of their runs round by round (each pairs runs seconds apart) and
/// the median of those ratios.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Ratio {
    /// The baseline configuration's name.
    pub baseline: String,
    /// This configuration's Mlps over the baseline's, per round.
    pub rounds: Vec<f64>,
    /// The median of `rounds`.
    pub median: f64,
}

impl Ratio {
    /// The ratios of `runs_mlps` to `baseline_mlps`, round by round (the
    /// shorter list decides how many).
    pub fn new(baseline: impl Into<String>, runs_mlps: &[f64], baseline_mlps: &[f64]) -> Ratio {
        let rounds: Vec<f64> = runs_mlps
            .iter()
            .zip(baseline_mlps)
            .map(|(run, base)| run / base)
            .collect();
        Ratio {
            baseline: baseline.into(),
            median: median(&rounds),
            rounds,
        }
    }
}

/// The result of timing one engine on one key pattern and mode.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Measurement {
    /// Engine spec.
    pub engine: String,
    /// Key pattern name.
    pub pattern: String,
    /// How the lookups were issued.
    pub mode: Mode,
    /// Threads used.
    pub threads: usize,
    /// Keys in the array.
    pub keys: usize,
    /// Mlps of every run, in order (round by round).
    pub runs_mlps: Vec<f64>,
    /// Median Mlps.
    pub median_mlps: f64,
    /// Slowest run.
    pub min_mlps: f64,
    /// Fastest run.
    pub max_mlps: f64,
    /// Nanoseconds per lookup at the median (per thread: threads / median).
    pub ns_per_lookup: f64,
    /// A checksum of the results (same keys and table give the same value for
    /// every correct engine and mode; for `seq` it depends on the chaining too).
    pub checksum: u64,
    /// Against the baseline configuration, when one was chosen.
    pub ratio: Option<Ratio>,
}

impl Measurement {
    /// Summarises the runs of one configuration (in round order; at least
    /// one); the checksum is the first run's.
    pub fn from_runs(
        engine: &str,
        pattern: &Pattern,
        mode: Mode,
        threads: usize,
        keys: usize,
        runs: &[Run],
    ) -> Measurement {
        let runs_mlps: Vec<f64> = runs.iter().map(|run| run.mlps).collect();
        let median_mlps = median(&runs_mlps);
        Measurement {
            engine: engine.to_string(),
            pattern: pattern.name(),
            mode,
            threads,
            keys,
            median_mlps,
            min_mlps: runs_mlps.iter().copied().fold(f64::INFINITY, f64::min),
            max_mlps: runs_mlps.iter().copied().fold(0.0, f64::max),
            ns_per_lookup: 1e3 * threads as f64 / median_mlps,
            checksum: runs.first().map_or(0, |run| run.checksum),
            runs_mlps,
            ratio: None,
        }
    }
}

fn checksum(results: &[Option<Label>]) -> u64 {
    results.iter().fold(0u64, |sum, r| {
        sum.wrapping_mul(31)
            .wrapping_add(r.map_or(0, |l| l as u64 + 1))
    })
}

/// Times `engine` on `keys` (generated for `pattern`): `settings.runs` runs of
/// at least `settings.min_seconds` each, on `settings.threads` threads, one
/// after the other. `seq` chains the lookups; in a batch mode it runs the
/// engine's chained loop and is reported as plain. To compare several
/// configurations, run them in alternating rounds with [`interleave`] and
/// [`run`] instead.
pub fn measure<A: Addr, L: Lookup<A> + ?Sized>(
    name: &str,
    engine: &L,
    pattern: &Pattern,
    keys: &[A],
    mode: Mode,
    settings: &Settings,
) -> Measurement {
    let chained = *pattern == Pattern::Seq;
    let mode = if chained && !mode.is_per_key() {
        Mode::Plain
    } else {
        mode
    };
    let threads = settings.threads.max(1);
    let min = Duration::from_secs_f64(settings.min_seconds.max(0.0));
    let mut out = vec![None; keys.len()];
    let runs = interleave(settings.runs.max(1), 1, |_, _| {
        run(|| engine, keys, &mut out, mode, chained, threads, min)
    });
    Measurement::from_runs(name, pattern, mode, threads, keys.len(), &runs[0])
}

/// The practical per-core ceiling: one load from a 2^16-entry array per key
/// (indexed by the key's top 16 bits), through the same loops as an engine.
#[derive(Clone, Debug)]
pub struct Ceiling {
    table: Vec<Option<Label>>,
}

impl Default for Ceiling {
    fn default() -> Self {
        Ceiling {
            table: (0..1u32 << 16).map(Some).collect(),
        }
    }
}

impl<A: Addr> Lookup<A> for Ceiling {
    fn memory_bytes(&self) -> usize {
        self.table.len() * std::mem::size_of::<Option<Label>>()
    }
    #[inline]
    fn lookup(&self, addr: A) -> Option<Label> {
        self.table[(addr.to_u128() >> (A::BITS - 16)) as usize & 0xffff]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_parse_and_name() {
        for name in [
            "rnd",
            "rnd-public",
            "announced",
            "seq",
            "rep",
            "trace:/tmp/x",
        ] {
            assert_eq!(name.parse::<Pattern>().unwrap().name(), name);
        }
        assert!("trace:".parse::<Pattern>().is_err());
        assert!("zipf"
            .parse::<Pattern>()
            .unwrap_err()
            .contains("known: rnd"));
    }

    #[test]
    fn keys_are_seeded_and_shaped() {
        let rib = Rib::<u32>::from_pairs([("10.0.0.0/8".parse().unwrap(), 1)]);
        let a = generate_keys::<u32>(&Pattern::Rnd, 1000, 1, &rib).unwrap();
        let b = generate_keys::<u32>(&Pattern::Rnd, 1000, 1, &rib).unwrap();
        let c = generate_keys::<u32>(&Pattern::Rnd, 1000, 2, &rib).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        let public = generate_keys::<u32>(&Pattern::RndPublic, 1000, 1, &rib).unwrap();
        assert!(public.iter().all(|&k| is_public_v4(k)));
        let announced = generate_keys::<u32>(&Pattern::Announced, 1000, 1, &rib).unwrap();
        assert!(announced.iter().all(|&k| k >> 24 == 10));
        let rep = generate_keys::<u32>(&Pattern::Rep, 800, 1, &rib).unwrap();
        // Every key of the middle of the stream occurs exactly 8 times.
        let middle = rep[400];
        assert_eq!(rep.iter().filter(|&&k| k == middle).count(), 8);
        let v6 = generate_keys::<u128>(&Pattern::RndPublic, 100, 1, &Rib::new()).unwrap();
        assert!(v6.iter().all(|&k| k >> 125 == 1));
        assert!(generate_keys::<u128>(&Pattern::Announced, 10, 1, &Rib::new()).is_err());
    }

    #[test]
    fn measure_reports_runs_and_checksums_agree() {
        let rib = Rib::<u32>::from_pairs([
            ("10.0.0.0/8".parse().unwrap(), 1),
            ("0.0.0.0/1".parse().unwrap(), 2),
        ]);
        let radix = fibkit::build("radix", &rib).unwrap();
        let dir = fibkit::build("dir24-8", &rib).unwrap();
        let keys = generate_keys::<u32>(&Pattern::Rnd, 4096, 3, &rib).unwrap();
        let settings = Settings {
            min_seconds: 0.0,
            runs: 3,
            threads: 2,
        };
        let a = measure(
            "radix",
            &radix,
            &Pattern::Rnd,
            &keys,
            Mode::Plain,
            &settings,
        );
        let b = measure(
            "dir24-8",
            &dir,
            &Pattern::Rnd,
            &keys,
            Mode::Batch,
            &settings,
        );
        assert_eq!(a.runs_mlps.len(), 3);
        assert!(a.min_mlps <= a.median_mlps && a.median_mlps <= a.max_mlps);
        assert_eq!(a.checksum, b.checksum);
        let seq_a = measure(
            "radix",
            &radix,
            &Pattern::Seq,
            &keys,
            Mode::Batch,
            &settings,
        );
        let seq_b = measure(
            "dir24-8",
            &dir,
            &Pattern::Seq,
            &keys,
            Mode::Plain,
            &settings,
        );
        assert_eq!(seq_a.mode, Mode::Plain);
        assert_eq!(seq_a.checksum, seq_b.checksum);
        let json = serde_json::to_value(&a).unwrap();
        for field in [
            "engine",
            "pattern",
            "mode",
            "threads",
            "runs_mlps",
            "median_mlps",
            "ns_per_lookup",
        ] {
            assert!(json.get(field).is_some(), "{field} missing");
        }
    }

    #[test]
    fn modes_parse_and_name() {
        for name in ["plain", "key", "reader", "batch", "burst1", "burst32"] {
            let mode: Mode = name.parse().unwrap();
            assert_eq!(mode.to_string(), name);
            assert_eq!(serde_json::to_value(mode).unwrap(), name);
            let back: Mode = serde_json::from_value(serde_json::json!(name)).unwrap();
            assert_eq!(back, mode);
        }
        assert!(serde_json::from_value::<Mode>(serde_json::json!("fast")).is_err());
        assert_eq!("burst8".parse::<Mode>().unwrap(), Mode::Burst(8));
        for bad in ["burst", "burst0", "burst-1", "fast", ""] {
            let err = bad.parse::<Mode>().unwrap_err();
            assert!(err.contains("burstN"), "{bad}: {err}");
        }
        assert!(Mode::Reader.is_per_key() && !Mode::Burst(8).is_per_key());
        let names = |list: &[&str]| list.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        assert_eq!(
            parse_modes(&names(&["key", "burst", "burst8", "batch"]), &[8, 32]).unwrap(),
            [Mode::Key, Mode::Burst(8), Mode::Burst(32), Mode::Batch]
        );
        assert!(parse_modes(&names(&["burst"]), &[0]).is_err());
        assert!(parse_modes(&names(&["burst"]), &[]).is_err());
        assert!(parse_modes(&names(&["turbo"]), &[32]).is_err());
    }

    #[test]
    fn interleave_runs_round_by_round() {
        let mut order = Vec::new();
        let results = interleave(3, 2, |round, configuration| {
            order.push((round, configuration));
            10 * round + configuration
        });
        assert_eq!(order, vec![(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]);
        assert_eq!(results, vec![vec![0, 10, 20], vec![1, 11, 21]]);
        assert!(interleave(0, 2, |_, _| 0).iter().all(Vec::is_empty));
    }

    #[test]
    fn medians_and_round_ratios() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&[]).is_nan());
        // A load swing in round 2 halves both; the ratio stays 2.
        let ratio = Ratio::new(
            "base",
            &[200.0, 100.0, 220.0, 30.0],
            &[100.0, 50.0, 100.0, 60.0],
        );
        assert_eq!(ratio.rounds, vec![2.0, 2.0, 2.2, 0.5]);
        assert_eq!(ratio.median, 2.0);
        assert_eq!(ratio.baseline, "base");
        // The shorter list decides.
        assert_eq!(Ratio::new("b", &[1.0, 2.0], &[1.0]).rounds, vec![1.0]);
    }

    #[test]
    fn every_mode_gives_the_reference_results() {
        let rib = Rib::<u32>::from_pairs([
            ("0.0.0.0/1".parse().unwrap(), 2),
            ("10.0.0.0/8".parse().unwrap(), 1),
            ("10.1.0.0/16".parse().unwrap(), 3),
            ("192.168.0.0/16".parse().unwrap(), 4),
            ("192.168.1.1/32".parse().unwrap(), 5),
        ]);
        let mut keys = generate_keys::<u32>(&Pattern::Rnd, 997, 5, &rib).unwrap();
        keys.extend([0x0a01_0203, 0xc0a8_0101, 0xc0a8_0102, 0xffff_ffff]);
        let radix = fibkit::build("radix", &rib).unwrap();
        // The reference answers, and the chained ones: each thread chains
        // its own slice of the keys from 0.
        let expected = |chained: bool, threads: usize| -> Vec<Option<Label>> {
            let mut out: Vec<Option<Label>> = keys.iter().map(|&k| rib.lookup(k)).collect();
            if chained {
                let slice_len = keys.len().div_ceil(threads);
                for (slice, results) in keys.chunks(slice_len).zip(out.chunks_mut(slice_len)) {
                    radix.lookup_chained(slice, results, 0);
                }
            }
            out
        };
        let modes = [
            Mode::Plain,
            Mode::Key,
            Mode::Reader,
            Mode::Batch,
            Mode::Burst(1),
            Mode::Burst(8),
            Mode::Burst(32),
            Mode::Burst(5000),
        ];
        for spec in ["radix", "dir24-8", "dxr"] {
            let snapshot = fibkit::build(spec, &rib).unwrap();
            let fib = fibkit::Fib::<u32>::new(spec, rib.clone()).unwrap();
            for threads in [1, 2, 3] {
                for chained in [false, true] {
                    let want = expected(chained, threads);
                    let mut checksums = Vec::new();
                    for mode in modes {
                        let mut out = vec![None; keys.len()];
                        let run = match mode {
                            Mode::Reader => run(
                                || fib.reader(),
                                &keys,
                                &mut out,
                                mode,
                                chained,
                                threads,
                                Duration::ZERO,
                            ),
                            _ => run(
                                || &snapshot,
                                &keys,
                                &mut out,
                                mode,
                                chained,
                                threads,
                                Duration::ZERO,
                            ),
                        };
                        assert!(run.mlps > 0.0);
                        assert_eq!(out, want, "{spec} {mode} {threads} threads {chained}");
                        checksums.push(run.checksum);
                    }
                    assert!(
                        checksums.iter().all(|&c| c == checksums[0]),
                        "{spec} {threads} threads {chained}: {checksums:?}"
                    );
                }
            }
        }
    }
}
