//! `dxr6` measurements on an IPv6 table (default `dfz-v6-nh`), every
//! comparison interleaved in one process so that a shared machine's load
//! moves all sides alike:
//!
//! - build: footprint, bytes per prefix, median build time of 5 builds,
//!   the engine's statistics;
//! - throughput (`--rounds R`, default 7): for each key pattern, R rounds,
//!   each running every (spec, mode) once, ≥ 0.5 s of this thread's on-CPU
//!   time per run; reported as the median Mlps and, per round, the ratio
//!   of each row to the first row of the same round, whose median is the
//!   ratio column. Modes: `key` (one `SnapshotV6::lookup` per key, what a
//!   program holding the registry's snapshot calls), `typed` (the same
//!   loop over the engine's own snapshot type, `Dxr6`), `batch` (one
//!   `lookup_batch` over all keys), `burstN` (`lookup_batch` on N keys
//!   at a time; with AVX-512 F and BW, or for `dxr6` with AVX2, a vector
//!   walk) and `portable` / `portableN` (the batch path of CPUs without
//!   them, `Dxr6::lookup_batch_portable`, `Btree::lookup_batch_portable`
//!   or `Poptrie::lookup_batch_portable`, on all keys or N at a time);
//! - with `--replay N`: a generated stream of N changes
//!   (`fibkit::trace::generate_changes`, seed 1) applied one change per
//!   batch through `LocalFib`, with the time of every change, against the
//!   full build.
//!
//! ```text
//! cargo run --release -p fibkit-bench --example dxr6_bench -- [--table FILE] [--keys N]
//!     [--rounds R] [--patterns announced,rnd-public] [--modes key,typed,batch,burst32]
//!     [--replay N] SPEC...
//! ```
//! Specs may name any IPv6 engine; `typed` applies to `dxr6` specs only,
//! `portable` to `dxr6`, `btree` and `poptrie` specs.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use fibkit::engine::{EngineConfig, EngineStats, Updater};
use fibkit::engines::btree::{Btree, BtreeConfig, BtreeUpdater};
use fibkit::engines::dxr6::{Dxr6, Dxr6Config, Dxr6Updater};
use fibkit::engines::poptrie::{Poptrie, PoptrieConfig, PoptrieUpdater};
use fibkit::load::{load_table, LoadOptions};
use fibkit::registry::SnapshotV6;
use fibkit::{build, Label, LocalFib, Lookup, Rib};
use fibkit_bench::thread_cpu_ns as cpu_ns;
use fibkit_bench::{generate_keys, Pattern};

const MIN_RUN: Duration = Duration::from_millis(500);

/// Repeats `pass` (one pass over `keys` keys) until [`MIN_RUN`] of on-CPU
/// time has passed; returns Mlps.
fn timed(keys: usize, mut pass: impl FnMut()) -> f64 {
    // Reading the clock costs a system call: look at it every 2^20 keys.
    let passes_per_check = (1 << 20) / keys.max(1) + 1;
    let started = cpu_ns();
    let mut passes = 0;
    while cpu_ns() - started < MIN_RUN.as_nanos() as u64 {
        for _ in 0..passes_per_check {
            pass();
        }
        passes += passes_per_check;
    }
    (passes * keys) as f64 / ((cpu_ns() - started) as f64 / 1e9) / 1e6
}

/// One way of running lookups.
#[derive(Clone, Copy, Debug)]
enum Mode {
    Key,
    Typed,
    Batch,
    Burst(usize),
    /// `lookup_batch`'s path for CPUs without vector walks (`Dxr6::lookup_batch_portable`)
    /// on the engine's own type: the whole slice (0) or bursts of N.
    Portable(usize),
}

impl Mode {
    fn parse(text: &str) -> Mode {
        match text {
            "key" => Mode::Key,
            "typed" => Mode::Typed,
            "batch" => Mode::Batch,
            "portable" => Mode::Portable(0),
            _ if text.starts_with("portable") => Mode::Portable(
                text["portable".len()..]
                    .parse()
                    .unwrap_or_else(|_| panic!("unknown mode `{text}`")),
            ),
            _ => Mode::Burst(
                text.strip_prefix("burst")
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_else(|| panic!("unknown mode `{text}`")),
            ),
        }
    }

    fn name(self) -> String {
        match self {
            Mode::Key => "key".into(),
            Mode::Typed => "typed".into(),
            Mode::Batch => "batch".into(),
            Mode::Burst(n) => format!("burst{n}"),
            Mode::Portable(0) => "portable".into(),
            Mode::Portable(n) => format!("portable{n}"),
        }
    }
}

fn run<L: Lookup<u128>>(engine: &L, mode: Mode, keys: &[u128], out: &mut [Option<Label>]) -> f64 {
    timed(keys.len(), || {
        match mode {
            Mode::Key | Mode::Typed => {
                for (key, result) in keys.iter().zip(out.iter_mut()) {
                    *result = engine.lookup(*key);
                }
            }
            Mode::Batch => engine.lookup_batch(keys, out),
            Mode::Burst(n) => {
                for (keys, out) in keys.chunks(n).zip(out.chunks_mut(n)) {
                    engine.lookup_batch(keys, out);
                }
            }
            Mode::Portable(_) => unreachable!("run_portable runs this mode"),
        }
        black_box(&mut *out);
    })
}

/// The batch path of CPUs without AVX-512, on an engine's own type.
trait PortableBatch {
    fn batch_portable(&self, keys: &[u128], out: &mut [Option<Label>]);
}

impl PortableBatch for Dxr6 {
    fn batch_portable(&self, keys: &[u128], out: &mut [Option<Label>]) {
        self.lookup_batch_portable(keys, out);
    }
}

impl PortableBatch for Poptrie<u128> {
    fn batch_portable(&self, keys: &[u128], out: &mut [Option<Label>]) {
        self.lookup_batch_portable(keys, out);
    }
}

impl PortableBatch for Btree<u128> {
    fn batch_portable(&self, keys: &[u128], out: &mut [Option<Label>]) {
        self.lookup_batch_portable(keys, out);
    }
}

/// [`Mode::Portable`] on an engine's own type.
fn run_portable(
    engine: &dyn PortableBatch,
    burst: usize,
    keys: &[u128],
    out: &mut [Option<Label>],
) -> f64 {
    let burst = if burst == 0 { keys.len().max(1) } else { burst };
    timed(keys.len(), || {
        for (keys, out) in keys.chunks(burst).zip(out.chunks_mut(burst)) {
            engine.batch_portable(keys, out);
        }
        black_box(&mut *out);
    })
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

struct Engine {
    spec: String,
    snapshot: SnapshotV6,
    typed: Option<Dxr6>,
    /// The engine's own type where it has a portable batch path.
    portable: Option<Box<dyn PortableBatch>>,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut table =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/dfz-v6-nh.txt.gz");
    let mut keys = 1usize << 22;
    let mut rounds = 7;
    let mut patterns = "announced,rnd-public".to_string();
    let mut modes = "key,batch".to_string();
    let mut replay = 0;
    let mut specs = Vec::new();
    while let Some(arg) = args.next() {
        let mut value = || args.next().expect("a value after the option");
        match arg.as_str() {
            "--table" => table = value().into(),
            "--keys" => keys = value().parse()?,
            "--rounds" => rounds = value().parse()?,
            "--patterns" => patterns = value(),
            "--modes" => modes = value(),
            "--replay" => replay = value().parse()?,
            _ => specs.push(arg),
        }
    }
    let rib = load_table(&table, &LoadOptions::default())?.v6;
    println!(
        "{}: {} IPv6 prefixes, {} ranges",
        table.display(),
        rib.len(),
        rib.ranges().len()
    );

    let mut engines = Vec::new();
    println!("\n| engine | bytes | bytes/prefix | build ms (median of 5) |\n|---|---:|---:|---:|");
    for spec in &specs {
        // A spec that does not build stops here with its error.
        let snapshot = build(spec, &rib)?;
        let mut build_ms: Vec<f64> = (0..5)
            .map(|_| {
                let started = Instant::now();
                black_box(build(spec, &rib).ok());
                started.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        println!(
            "| {spec} | {} | {:.2} | {:.1} |",
            snapshot.memory_bytes(),
            snapshot.memory_bytes() as f64 / rib.len() as f64,
            median(&mut build_ms)
        );
        let typed = match Dxr6Config::parse(spec) {
            Ok(config) => {
                let (updater, typed) = Dxr6Updater::build(&config, &rib)?;
                for (name, value) in updater.stats(&typed).rows() {
                    println!("|   {name} | {value} | | |");
                }
                Some(typed)
            }
            Err(_) => None,
        };
        let portable: Option<Box<dyn PortableBatch>> = if let Some(typed) = &typed {
            Some(Box::new(typed.clone()))
        } else if let Ok(config) = BtreeConfig::parse(spec) {
            Some(Box::new(BtreeUpdater::<u128>::build(&config, &rib)?.1))
        } else if let Ok(config) = PoptrieConfig::parse(spec) {
            Some(Box::new(PoptrieUpdater::<u128>::build(&config, &rib)?.1))
        } else {
            None
        };
        engines.push(Engine {
            spec: spec.clone(),
            snapshot,
            typed,
            portable,
        });
    }

    let modes: Vec<Mode> = modes.split(',').map(Mode::parse).collect();
    for pattern in patterns.split(',') {
        let pattern: Pattern = pattern.parse()?;
        let keys = generate_keys::<u128>(&pattern, keys, 1, &rib)?;
        let mut out = vec![None; keys.len()];
        let rows: Vec<(usize, Mode)> = (0..engines.len())
            .flat_map(|e| modes.iter().map(move |&m| (e, m)))
            .filter(|&(e, m)| match m {
                Mode::Typed => engines[e].typed.is_some(),
                Mode::Portable(_) => engines[e].portable.is_some(),
                _ => true,
            })
            .collect();
        let mut mlps = vec![Vec::new(); rows.len()];
        let started = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        for _ in 0..rounds {
            for (row, &(e, mode)) in rows.iter().enumerate() {
                let engine = &engines[e];
                mlps[row].push(match (mode, &engine.typed, &engine.portable) {
                    (Mode::Typed, Some(typed), _) => run(typed, mode, &keys, &mut out),
                    (Mode::Portable(n), _, Some(portable)) => {
                        run_portable(portable.as_ref(), n, &keys, &mut out)
                    }
                    _ => run(&engine.snapshot, mode, &keys, &mut out),
                });
            }
        }
        let ended = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        println!(
            "\n{} keys ({}), {rounds} rounds; load average before: {}, after: {}",
            pattern.name(),
            keys.len(),
            started
                .split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" "),
            ended
                .split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        );
        println!("\n| engine | mode | Mlps median (min-max) | ÷ first row, median of rounds (min-max) |\n|---|---|---:|---:|");
        for (row, &(e, mode)) in rows.iter().enumerate() {
            let mut ratios: Vec<f64> = mlps[row].iter().zip(&mlps[0]).map(|(a, b)| a / b).collect();
            let mut runs = mlps[row].clone();
            let (low, high) = (
                runs.iter().copied().fold(f64::MAX, f64::min),
                runs.iter().copied().fold(0.0, f64::max),
            );
            let (ratio_low, ratio_high) = (
                ratios.iter().copied().fold(f64::MAX, f64::min),
                ratios.iter().copied().fold(0.0, f64::max),
            );
            println!(
                "| {} | {} | {:.1} ({low:.1}-{high:.1}) | {:.2} ({ratio_low:.2}-{ratio_high:.2}) |",
                engines[e].spec,
                mode.name(),
                median(&mut runs),
                median(&mut ratios)
            );
        }
        // Every row must have answered as the reference does.
        for engine in &engines {
            let sample: Vec<u128> = keys.iter().step_by(97).copied().collect();
            let mut got = vec![None; sample.len()];
            engine.snapshot.lookup_batch(&sample, &mut got);
            for (key, got) in sample.iter().zip(got) {
                assert_eq!(got, rib.lookup(*key), "{} at {key:#x}", engine.spec);
            }
        }
    }

    if replay > 0 {
        replay_changes(&rib, &specs, replay)?;
    }
    Ok(())
}

/// Applies a generated stream one change per batch; prints changes per
/// second and the slowest changes beside the full build.
fn replay_changes(
    rib: &Rib<u128>,
    specs: &[String],
    count: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let changes = fibkit::trace::generate_changes(rib, count, 1);
    println!("\nReplay of {count} generated changes, one per batch (on-CPU time):\n");
    println!(
        "| engine | changes/s | rebuilds | median us | 99th percentile us | slowest ms | full build ms |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for spec in specs {
        let mut fib = LocalFib::<u128>::new(spec, rib.clone())?;
        let mut times = Vec::with_capacity(changes.len());
        let mut rebuilds = 0;
        let started = cpu_ns();
        for change in &changes {
            let before = cpu_ns();
            rebuilds += fib.apply(std::slice::from_ref(change))?.rebuilt.is_some() as usize;
            times.push(cpu_ns() - before);
        }
        let total = cpu_ns() - started;
        let build_started = cpu_ns();
        black_box(build(spec, fib.rib())?);
        let build_ns = cpu_ns() - build_started;
        times.sort_unstable();
        println!(
            "| {spec} | {:.0} | {rebuilds} | {:.1} | {:.1} | {:.2} | {:.1} |",
            changes.len() as f64 / (total as f64 / 1e9),
            times[times.len() / 2] as f64 / 1e3,
            times[times.len() * 99 / 100] as f64 / 1e3,
            *times.last().unwrap_or(&0) as f64 / 1e6,
            build_ns as f64 / 1e6
        );
        let report = fibkit::verify::verify(fib.snapshot(), fib.rib(), 100_000, 7);
        assert!(
            report.ok(),
            "{spec} after the replay: {} failed",
            report.failed
        );
    }
    Ok(())
}
