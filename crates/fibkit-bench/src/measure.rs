//! Timing: one run of one configuration ([`run`]), the handles it looks
//! up through ([`Handle`]), engines built for it ([`BenchEngine`]), and
//! [`measure`], which times one configuration on its own.

use std::sync::Arc;
use std::time::{Duration, Instant};

use fibkit::addr::Addr;
use fibkit::engine::{BuildError, Lookup, Updater};
use fibkit::fib::{Published, Reader};
use fibkit::prefix::Label;
use fibkit::registry::EngineFamily;
use fibkit::rib::Rib;

use crate::{interleave, Measurement, Mode, Pattern};

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
        Mode::Plain => each(handle, keys, out),
        Mode::Key | Mode::Reader => per_key(handle, keys, out),
        Mode::Batch => batch(handle, keys, out),
        Mode::Burst(burst) => bursts(handle, keys, out, burst.max(1)),
    }
}

// PERF: each mode's loop is a function of its own, so the loop under test
// is compiled alone, as a caller's loop would be, not inlined into `pass`
// beside the other modes' loops (whose state the compiler then keeps live
// across it): which calls the compiler happened to inline into `pass`
// moved the same engine's per-key figures by up to 20% between builds
// (docs/BENCHMARKS.md, "Hot paths before and after the restructuring").

/// One call per key through the handle (`key` and `reader` modes).
#[inline(never)]
fn per_key<A: Addr, H: Handle<A>>(handle: &mut H, keys: &[A], out: &mut [Option<Label>]) {
    for (addr, result) in keys.iter().zip(out.iter_mut()) {
        *result = handle.lookup(*addr);
    }
}

/// The engine's own per-key loop (`plain`).
#[inline(never)]
fn each<A: Addr, H: Handle<A>>(handle: &mut H, keys: &[A], out: &mut [Option<Label>]) {
    handle.lookup_each(keys, out);
}

/// One call on the whole key array (`batch`).
#[inline(never)]
fn batch<A: Addr, H: Handle<A>>(handle: &mut H, keys: &[A], out: &mut [Option<Label>]) {
    handle.lookup_batch(keys, out);
}

/// Calls on consecutive slices of `burst` keys (`burstN`).
#[inline(never)]
fn bursts<A: Addr, H: Handle<A>>(
    handle: &mut H,
    keys: &[A],
    out: &mut [Option<Label>],
    burst: usize,
) {
    for (addrs, results) in keys.chunks(burst).zip(out.chunks_mut(burst)) {
        handle.lookup_batch(addrs, results);
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
