//! DXR measurements (thesis 003, section 3.6 method), beside dir24-8 in the
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
//! - replay of the one-hour LINX update stream (on-CPU time of this thread).
//!
//! ```text
//! cargo run --release -p fibkit --example dxr_bench [-- [--throughput] [--no-replay] SPEC...]
//! ```
//! With no SPEC it measures every layout the tests check plus `dxr`.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use fibkit::engines::dxr::Dxr;
use fibkit::load::{load_table, load_updates, LoadOptions};
use fibkit::{build, EngineSpec, Fib, Label, Lookup, Rib};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const KEYS: usize = 1 << 24;
const RUNS: usize = 5;
const MIN_RUN: Duration = Duration::from_secs(1);

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data")
        .join(name)
}

/// Median of `RUNS` runs of `run`, each returning lookups per second.
fn median(mut run: impl FnMut() -> f64) -> f64 {
    let mut rates: Vec<f64> = (0..RUNS).map(|_| run()).collect();
    rates.sort_by(f64::total_cmp);
    rates[RUNS / 2] / 1e6
}

/// Repeats `pass` (one pass over all keys) until `MIN_RUN` of this thread's
/// on-CPU time has elapsed (wall time where that is not available). On-CPU
/// time, because the machine is shared: wall time would mostly measure how
/// often other processes ran.
fn timed(mut pass: impl FnMut()) -> f64 {
    let started = Instant::now();
    let cpu_started = cpu_ns();
    let elapsed = || match cpu_started {
        Some(start) => Duration::from_nanos(cpu_ns().unwrap_or(start) - start),
        None => started.elapsed(),
    };
    let mut passes = 0;
    while elapsed() < MIN_RUN {
        pass();
        passes += 1;
    }
    (passes * KEYS) as f64 / elapsed().as_secs_f64()
}

fn rnd_plain<F: Lookup<u32>>(fib: &F, keys: &[u32], out: &mut [Option<Label>]) -> f64 {
    median(|| {
        timed(|| {
            for (key, result) in keys.iter().zip(out.iter_mut()) {
                *result = fib.lookup(*key);
            }
            black_box(&mut *out);
        })
    })
}

fn rnd_batch<F: Lookup<u32>>(fib: &F, keys: &[u32], out: &mut [Option<Label>]) -> f64 {
    median(|| {
        timed(|| {
            fib.lookup_batch(keys, out);
            black_box(&mut *out);
        })
    })
}

fn seq_plain<F: Lookup<u32>>(fib: &F, keys: &[u32], out: &mut [Option<Label>]) -> f64 {
    median(|| {
        timed(|| {
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
    let throughput = args.iter().any(|a| a == "--throughput");
    let replay = !args.iter().any(|a| a == "--no-replay");
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
        "dfz-v4-nh: {} prefixes, {} merged ranges",
        rib.len(),
        rib.ranges().len()
    );
    // Structure (Tables 3.1 and 3.2); build time is the median of 5 builds.
    println!("\n| layout | footprint bytes | bytes/prefix | direct coverage | short chunks / ranges | long chunks / ranges | wide chunks / ranges | dedup saved bytes | build ms |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut steps_rows = Vec::new();
    for spec in &specs {
        let spec_parsed = EngineSpec::parse(spec)?;
        let mut builds: Vec<(f64, Dxr)> = (0..RUNS)
            .map(|_| {
                let started = Instant::now();
                let engine = Dxr::build(&spec_parsed, rib).expect("build");
                (started.elapsed().as_secs_f64() * 1e3, engine)
            })
            .collect();
        builds.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (build_ms, engine) = builds.swap_remove(RUNS / 2);
        let s = engine.dxr_stats();
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

    if throughput {
        measure_throughput(rib, &specs)?;
    }
    if replay {
        measure_replay(&table, &specs)?;
    }
    Ok(())
}

fn measure_throughput(rib: &Rib<u32>, specs: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let mut rng = SmallRng::seed_from_u64(42);
    let keys: Vec<u32> = (0..KEYS).map(|_| rng.random()).collect();
    let mut out = vec![None; KEYS];
    println!("\nThroughput, Mlps per on-CPU second (median of {RUNS}; 2^24 random keys; runs >= 1 s on CPU):\n");
    println!("| engine | bytes | RND plain | RND batch | SEQ plain | RND plain / dir24-8 | SEQ / dir24-8 |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let dir = build("dir24-8", rib)?;
    let base = (
        rnd_plain(&dir, &keys, &mut out),
        rnd_batch(&dir, &keys, &mut out),
        seq_plain(&dir, &keys, &mut out),
    );
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
        let rnd = rnd_plain(&engine, &keys, &mut out);
        let batch = rnd_batch(&engine, &keys, &mut out);
        let seq = seq_plain(&engine, &keys, &mut out);
        println!(
            "| {} | {} | {:.1} | {:.1} | {:.1} | {:.2} | {:.2} |",
            spec,
            engine.memory_bytes(),
            rnd,
            batch,
            seq,
            rnd.max(batch) / base.0.max(base.1),
            seq / base.2
        );
    }
    let dir = build("dir24-8", rib)?;
    println!(
        "| dir24-8 (last) | {} | {:.1} | {:.1} | {:.1} | | |",
        dir.memory_bytes(),
        rnd_plain(&dir, &keys, &mut out),
        rnd_batch(&dir, &keys, &mut out),
        seq_plain(&dir, &keys, &mut out)
    );
    drop(dir);
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
        let fib = Fib::<u32>::new(&spec, rib.clone())?;
        let started = cpu_ns();
        for batch in &batches {
            fib.apply(batch)?;
        }
        let ns = started.and_then(|s| Some(cpu_ns()? - s)).unwrap_or(0);
        let compactions = fibkit::EngineStats::rows(&fib.stats())
            .into_iter()
            .find(|(name, _)| name == "compactions")
            .map(|(_, v)| v)
            .unwrap_or_default();
        println!(
            "| {} | {:.1} | {} |",
            fib.spec(),
            ns as f64 / 1e6,
            compactions
        );
    }
    Ok(())
}
