//! DXR measurements (\[Zec19\], section 3.6 method), beside dir24-8 in the
//! same run, on `dfz-v4-nh`:
//!
//! - Tables 3.1 and 3.2 for every layout (structure, footprint, build time);
//! - with `--throughput`: single-thread lookup throughput, Mlps, median of 5 runs, over 2^24
//!   precomputed uniformly random keys, results stored, each run repeating
//!   the key array until at least 1 s has passed: RND (independent keys)
//!   with the plain loop and with `lookup_batch`, and SEQ (each key XORed
//!   with the previous result, so lookups serialize). `fibkit bench` is the
//!   project's throughput tool; this one times by on-CPU time, which is
//!   steadier on a shared machine, for A/B checks of lookup changes;
//! - with `--bursts`: the call shapes of a datapath, in interleaved rounds
//!   (every engine and mode once per round, adjacent measurements compared):
//!   one `lookup` per key through the registry's snapshot, `lookup_batch`
//!   over bursts of 1 to 256 keys, and over the whole 2^24-key array;
//! - with `--short-slices`: `lookup_batch` against a `lookup` loop over the
//!   same slices of 1 to 32 keys, per round, to place the short-slice cut;
//! - with `--update-bounds`: the cost of single changes to short prefixes
//!   (default-route flaps, /8, /4, /2, /1 changes) against the time of a
//!   full build, per layout, in interleaved rounds (wall time);
//! - replay of the one-hour LINX update stream (on-CPU time of this thread).
//!
//! ```text
//! cargo run --release -p fibkit-bench --example dxr_bench -- \
//!     [--throughput] [--bursts] [--short-slices] [--update-bounds] [--rounds N] \
//!     [--no-structure] [--no-replay] [SPEC...]
//! ```
//! With no SPEC it measures every layout the tests check plus `dxr`.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use fibkit::engine::{EngineConfig, Updater};
use fibkit::engines::dxr::{DxrConfig, DxrUpdater};
use fibkit::load::{load_table, load_updates, LoadOptions};
use fibkit::{build, Change, Fib, Label, LocalFib, Lookup, Prefix, Rib};
use fibkit_bench::load_average;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const KEYS: usize = 1 << 24;
const RUNS: usize = 5;
const MIN_RUN: Duration = Duration::from_secs(1);
/// Burst lengths `--bursts` measures.
const BURSTS: [usize; 9] = [1, 2, 4, 8, 16, 32, 64, 128, 256];

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data")
        .join(name)
}

/// Median of `RUNS` runs of `run`, each returning lookups per second.
fn median_of_runs(mut run: impl FnMut() -> f64) -> f64 {
    let mut rates: Vec<f64> = (0..RUNS).map(|_| run()).collect();
    median(&mut rates) / 1e6
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Repeats `pass` (one pass over all keys) until `min_run` of this thread's
/// on-CPU time has elapsed (wall time where that is not available). On-CPU
/// time, because the machine is shared: wall time would mostly measure how
/// often other processes ran. Returns lookups per second.
fn timed(min_run: Duration, mut pass: impl FnMut()) -> f64 {
    let started = Instant::now();
    let cpu_started = cpu_ns();
    let elapsed = || match cpu_started {
        Some(start) => Duration::from_nanos(cpu_ns().unwrap_or(start) - start),
        None => started.elapsed(),
    };
    let mut passes = 0;
    while elapsed() < min_run {
        pass();
        passes += 1;
    }
    (passes * KEYS) as f64 / elapsed().as_secs_f64()
}

/// One lookup per key, results stored.
fn per_key<F: Lookup<u32>>(
    fib: &F,
    keys: &[u32],
    out: &mut [Option<Label>],
    min_run: Duration,
) -> f64 {
    timed(min_run, || {
        for (key, result) in keys.iter().zip(out.iter_mut()) {
            *result = fib.lookup(*key);
        }
        black_box(&mut *out);
    })
}

/// `lookup_batch` over consecutive slices of `burst` keys (the whole array
/// for `burst == keys.len()`).
fn bursts<F: Lookup<u32>>(
    fib: &F,
    keys: &[u32],
    out: &mut [Option<Label>],
    burst: usize,
    min_run: Duration,
) -> f64 {
    timed(min_run, || {
        for (keys, out) in keys.chunks(burst).zip(out.chunks_mut(burst)) {
            fib.lookup_batch(keys, out);
        }
        black_box(&mut *out);
    })
}

fn seq_plain<F: Lookup<u32>>(fib: &F, keys: &[u32], out: &mut [Option<Label>]) -> f64 {
    median_of_runs(|| {
        timed(MIN_RUN, || {
            let mut previous = 0;
            for (key, result) in keys.iter().zip(out.iter_mut()) {
                let found = fib.lookup(*key ^ previous);
                *result = found;
                previous = found.unwrap_or(0);
            }
            black_box(&mut *out);
        })
    })
}

/// Nanoseconds this thread has run on a CPU (Linux), else wall time.
fn cpu_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| args.iter().any(|a| a == name);
    let (throughput, burst_mode, update_bounds) = (
        flag("--throughput"),
        flag("--bursts"),
        flag("--update-bounds"),
    );
    let short_slices = flag("--short-slices");
    let (structure, replay) = (!flag("--no-structure"), !flag("--no-replay"));
    let rounds = match args.iter().position(|a| a == "--rounds") {
        Some(at) => {
            let rounds = args.get(at + 1).ok_or("--rounds needs a number")?.parse()?;
            args.drain(at..at + 2);
            rounds
        }
        None => RUNS,
    };
    args.retain(|a| !a.starts_with("--"));
    let mut specs = args;
    if specs.is_empty() {
        specs = (16..=24).map(|k| format!("dxr:k={k}")).collect();
        for d in [12, 14, 16] {
            for k in 18..=24 {
                specs.push(format!("dxr:d={d},x={}", k - d));
            }
        }
    }
    let table = load_table(&data("dfz-v4-nh.txt.gz"), &LoadOptions::default())?;
    let rib = &table.v4;
    println!(
        "dfz-v4-nh: {} prefixes, {} merged ranges; load average {}",
        rib.len(),
        rib.ranges().len(),
        load_average()
    );
    if structure {
        measure_structure(rib, &specs)?;
    }
    if throughput {
        measure_throughput(rib, &specs)?;
    }
    if short_slices {
        measure_short_slices(rib, &specs, rounds)?;
    }
    if burst_mode {
        measure_bursts(rib, &specs, rounds)?;
    }
    if update_bounds {
        measure_update_bounds(rib, &specs, rounds)?;
    }
    if replay {
        measure_replay(&table, &specs)?;
    }
    Ok(())
}

/// Tables 3.1 and 3.2; build time is the median of 5 builds.
fn measure_structure(rib: &Rib<u32>, specs: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    println!("\n| layout | footprint bytes | bytes/prefix | direct coverage | short chunks / ranges | long chunks / ranges | wide chunks / ranges | dedup saved bytes | build ms |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut steps_rows = Vec::new();
    for spec in specs {
        let config = DxrConfig::parse(spec)?;
        let mut builds = Vec::with_capacity(RUNS);
        for _ in 0..RUNS {
            let started = Instant::now();
            let built = DxrUpdater::build(&config, rib)?;
            builds.push((started.elapsed().as_secs_f64() * 1e3, built));
        }
        builds.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (build_ms, (updater, snapshot)) = builds.swap_remove(RUNS / 2);
        let s = updater.stats(&snapshot);
        println!(
            "| {} | {} | {:.2} | {:.1}% | {} / {} | {} / {} | {} / {} | {} | {:.1} |",
            s.spec,
            s.footprint_bytes,
            s.bytes_per_prefix(),
            100.0 * s.direct_coverage,
            s.chunks[0],
            s.ranges[0],
            s.chunks[1],
            s.ranges[1],
            s.chunks[2],
            s.ranges[2],
            s.dedup_saved_bytes + s.block_dedup_saved_bytes,
            build_ms
        );
        let shares: Vec<String> = s
            .steps
            .iter()
            .map(|share| format!("{:.3}%", 100.0 * share))
            .collect();
        steps_rows.push(format!(
            "| {} | {} | {} |",
            s.spec,
            s.range_bytes,
            shares.join(" | ")
        ));
    }
    println!("\nShare of the address space resolved after n search steps (Table 3.1):\n");
    println!("| layout | range bytes | n=0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | ... |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for row in steps_rows {
        println!("{row}");
    }
    Ok(())
}

fn random_keys() -> Vec<u32> {
    let mut rng = SmallRng::seed_from_u64(42);
    (0..KEYS).map(|_| rng.random()).collect()
}

fn measure_throughput(rib: &Rib<u32>, specs: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let keys = random_keys();
    let mut out = vec![None; KEYS];
    println!("\nThroughput, Mlps per on-CPU second (median of {RUNS}; 2^24 random keys; runs >= 1 s on CPU):\n");
    println!("| engine | bytes | RND plain | RND batch | SEQ plain | RND plain / dir24-8 | SEQ / dir24-8 |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let rnd = |engine: &fibkit::registry::SnapshotV4, out: &mut [Option<Label>]| {
        (
            median_of_runs(|| per_key(engine, &keys, out, MIN_RUN)),
            median_of_runs(|| bursts(engine, &keys, out, KEYS, MIN_RUN)),
        )
    };
    let dir = build("dir24-8", rib)?;
    let (plain, batch) = rnd(&dir, &mut out);
    let base = (plain, batch, seq_plain(&dir, &keys, &mut out));
    println!(
        "| dir24-8 (first) | {} | {:.1} | {:.1} | {:.1} | 1.00 | 1.00 |",
        dir.memory_bytes(),
        base.0,
        base.1,
        base.2
    );
    drop(dir);
    for spec in specs {
        let engine = build(spec, rib)?;
        let (plain, batch) = rnd(&engine, &mut out);
        let seq = seq_plain(&engine, &keys, &mut out);
        println!(
            "| {} | {} | {:.1} | {:.1} | {:.1} | {:.2} | {:.2} |",
            spec,
            engine.memory_bytes(),
            plain,
            batch,
            seq,
            plain.max(batch) / base.0.max(base.1),
            seq / base.2
        );
    }
    let dir = build("dir24-8", rib)?;
    let (plain, batch) = rnd(&dir, &mut out);
    println!(
        "| dir24-8 (last) | {} | {:.1} | {:.1} | {:.1} | | |",
        dir.memory_bytes(),
        plain,
        batch,
        seq_plain(&dir, &keys, &mut out)
    );
    Ok(())
}

/// Per-key lookups, bursts and long slices of every engine, interleaved:
/// each round measures every mode of every engine once (engines adjacent
/// within a mode), and ratios pair measurements of the same round.
fn measure_bursts(
    rib: &Rib<u32>,
    specs: &[String],
    rounds: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let keys = random_keys();
    let mut out = vec![None; KEYS];
    let mut engines = vec![("dir24-8".to_string(), build("dir24-8", rib)?)];
    for spec in specs {
        engines.push((spec.clone(), build(spec, rib)?));
    }
    // Modes: 0 = one `lookup` per key, then bursts, then the whole array.
    let mut modes: Vec<usize> = vec![0];
    modes.extend(BURSTS);
    modes.push(KEYS);
    let mode_name = |mode: usize| match mode {
        0 => "per key".to_string(),
        KEYS => "batch, 2^24 keys".to_string(),
        n => format!("burst {n}"),
    };
    let min_run = Duration::from_millis(300);
    // rates[engine][mode][round]
    let mut rates = vec![vec![Vec::with_capacity(rounds); modes.len()]; engines.len()];
    for round in 0..rounds {
        eprintln!("round {round}, load average {}", load_average());
        for (m, &mode) in modes.iter().enumerate() {
            for (e, (_, engine)) in engines.iter().enumerate() {
                let rate = if mode == 0 {
                    per_key(engine, &keys, &mut out, min_run)
                } else {
                    bursts(engine, &keys, &mut out, mode, min_run)
                };
                rates[e][m].push(rate / 1e6);
            }
        }
    }
    println!(
        "\nPer key, bursts and long slices: Mlps per on-CPU second, median of {rounds} \
         interleaved rounds (min-max); ratios are medians of per-round ratios; \
         load average at the end {}\n",
        load_average()
    );
    println!("| engine | mode | Mlps | / own per key | / dir24-8 per key |");
    println!("|---|---|---:|---:|---:|");
    for (e, (spec, _)) in engines.iter().enumerate() {
        for (m, &mode) in modes.iter().enumerate() {
            let ratio_to = |base: &[f64]| {
                let mut ratios: Vec<f64> =
                    rates[e][m].iter().zip(base).map(|(a, b)| a / b).collect();
                median(&mut ratios)
            };
            let own = ratio_to(&rates[e][0]);
            let dir = ratio_to(&rates[0][0]);
            let mut values = rates[e][m].clone();
            let mid = median(&mut values);
            println!(
                "| {spec} | {} | {mid:.1} ({:.1}-{:.1}) | {own:.2} | {dir:.2} |",
                mode_name(mode),
                values[0],
                values[values.len() - 1]
            );
        }
    }
    Ok(())
}

/// Slice lengths `--short-slices` compares.
const SHORT_SLICES: [usize; 10] = [1, 2, 3, 4, 5, 6, 8, 12, 16, 32];

/// `lookup_batch` against a loop of `lookup` over the same slices of `n`
/// keys (2^22 of the random keys), interleaved in each round: where the
/// batch path starts to pay.
fn measure_short_slices(
    rib: &Rib<u32>,
    specs: &[String],
    rounds: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut keys = random_keys();
    keys.truncate(1 << 22);
    let mut out = vec![None; keys.len()];
    let min_run = Duration::from_millis(50);
    println!(
        "\nShort slices: lookup_batch / per-key loop over the same n-key slices, \
         median of {rounds} per-round ratios (Mlps of the batch, median)\n"
    );
    println!("| engine | n | batch Mlps | batch / loop |");
    println!("|---|---:|---:|---:|");
    for spec in specs {
        let engine = build(spec, rib)?;
        for n in SHORT_SLICES {
            let (mut ratios, mut rates) = (Vec::new(), Vec::new());
            for _ in 0..rounds {
                let looped = timed(min_run, || {
                    for (keys, out) in keys.chunks(n).zip(out.chunks_mut(n)) {
                        for (key, result) in black_box(keys).iter().zip(out.iter_mut()) {
                            *result = engine.lookup(*key);
                        }
                    }
                    black_box(&mut out);
                });
                let batched = bursts(&engine, &keys, &mut out, n, min_run);
                ratios.push(batched / looped);
                // `timed` counts KEYS keys per pass.
                rates.push(batched * keys.len() as f64 / KEYS as f64 / 1e6);
            }
            println!(
                "| {spec} | {n} | {:.1} | {:.2} |",
                median(&mut rates),
                median(&mut ratios)
            );
        }
    }
    println!("\nload average at the end {}", load_average());
    Ok(())
}

/// The single changes `--update-bounds` times, in order, starting from
/// dfz-v4-nh (which has no default route): each is undone by a later one.
fn adversarial_changes(rib: &Rib<u32>) -> Vec<(String, Change<u32>)> {
    let mut per_slash8 = [0usize; 256];
    for (prefix, _) in rib.iter() {
        per_slash8[(prefix.addr() >> 24) as usize] += 1;
    }
    let busiest = (0..256).max_by_key(|&i| per_slash8[i]).unwrap_or(0) as u32;
    let prefix = |addr: u32, plen: u8| Prefix::new_masked(addr, plen);
    let mut changes = vec![
        (
            "announce 0/0".to_string(),
            Change::Announce(prefix(0, 0), 1_000_001),
        ),
        (
            "relabel 0/0".to_string(),
            Change::Announce(prefix(0, 0), 1_000_002),
        ),
        ("withdraw 0/0".to_string(), Change::Withdraw(prefix(0, 0))),
    ];
    for (addr, plen) in [
        (busiest << 24, 8),
        (0x2000_0000, 4),
        (0x4000_0000, 2),
        (0x8000_0000, 1),
    ] {
        let p = prefix(addr, plen);
        let held = rib.get(p);
        changes.push((format!("announce {p}"), Change::Announce(p, 1_000_003)));
        changes.push((format!("relabel {p}"), Change::Announce(p, 1_000_004)));
        changes.push(match held {
            Some(label) => (format!("restore {p}"), Change::Announce(p, label)),
            None => (format!("withdraw {p}"), Change::Withdraw(p)),
        });
    }
    changes
}

/// Worst single-change update cost over default-route flaps and short
/// prefixes, against the full build, per layout (wall time, medians of
/// `rounds`; each round builds once, then applies every change once).
fn measure_update_bounds(
    rib: &Rib<u32>,
    specs: &[String],
    rounds: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let changes = adversarial_changes(rib);
    println!(
        "\nUpdate cost bounds: one change per `LocalFib::apply` (reference table + engine), \
         wall ms, median of {rounds} rounds; ratio = median of per-round cost / build\n"
    );
    for spec in specs {
        let config = DxrConfig::parse(spec)?;
        let mut build_ms = Vec::with_capacity(rounds);
        let mut cost_ms = vec![Vec::with_capacity(rounds); changes.len()];
        let mut rebuilt = vec![false; changes.len()];
        for _ in 0..rounds {
            let started = Instant::now();
            let built = DxrUpdater::build(&config, rib)?;
            build_ms.push(started.elapsed().as_secs_f64() * 1e3);
            drop(built);
            let mut fib = LocalFib::<u32, DxrUpdater>::with_config(config, rib.clone())?;
            for (i, (_, change)) in changes.iter().enumerate() {
                let before = fib.stats();
                let started = Instant::now();
                fib.apply(std::slice::from_ref(change))?;
                cost_ms[i].push(started.elapsed().as_secs_f64() * 1e3);
                let after = fib.stats();
                rebuilt[i] = after.span_rebuilds + after.compactions
                    > before.span_rebuilds + before.compactions;
            }
        }
        println!("{config} (load average {}):\n", load_average());
        println!("| change | ms | / build | patched or rebuilt |");
        println!("|---|---:|---:|---|");
        let mut worst = 0.0f64;
        for (i, (name, _)) in changes.iter().enumerate() {
            let mut ratios: Vec<f64> = cost_ms[i]
                .iter()
                .zip(&build_ms)
                .map(|(c, b)| c / b)
                .collect();
            let ratio = median(&mut ratios);
            worst = worst.max(ratio);
            println!(
                "| {name} | {:.1} | {ratio:.2} | {} |",
                median(&mut cost_ms[i]),
                if rebuilt[i] { "rebuilt" } else { "patched" }
            );
        }
        println!("| full build | {:.1} | 1.00 | |", median(&mut build_ms));
        println!("| **worst** | | **{worst:.2}** | |\n");
    }
    Ok(())
}

fn measure_replay(
    table: &fibkit::load::LoadedTable,
    specs: &[String],
) -> Result<(), Box<dyn std::error::Error>> {
    let rib = &table.v4;
    // Update replay: one batch per second of the stream, as a router would
    // coalesce them.
    let updates = load_updates(
        &data("linx-updates-ipv4.20141217.txt.gz"),
        &LoadOptions::default(),
        table.nexthops.clone(),
    )?;
    let batches = updates.v4_batches_by_time();
    let rib_only = {
        let mut copy: Rib<u32> = rib.clone();
        let started = cpu_ns();
        for batch in &batches {
            for change in batch {
                copy.apply(*change);
            }
        }
        started.and_then(|s| Some(cpu_ns()? - s))
    };
    println!(
        "\nLINX replay: {} changes in {} one-second batches; reference table alone: {:.1} ms CPU\n",
        batches.iter().map(Vec::len).sum::<usize>(),
        batches.len(),
        rib_only.unwrap_or(0) as f64 / 1e6
    );
    println!("| engine | replay CPU ms (reference + engine) | compactions |");
    println!("|---|---:|---:|");
    for spec in std::iter::once("dxr".to_string()).chain(specs.iter().cloned()) {
        let fib = Fib::<u32, DxrUpdater>::with_spec(&spec, rib.clone())?;
        let started = cpu_ns();
        for batch in &batches {
            fib.apply(batch)?;
        }
        let ns = started.and_then(|s| Some(cpu_ns()? - s)).unwrap_or(0);
        println!(
            "| {} | {:.1} | {} |",
            fib.spec(),
            ns as f64 / 1e6,
            fib.stats().compactions
        );
    }
    Ok(())
}
