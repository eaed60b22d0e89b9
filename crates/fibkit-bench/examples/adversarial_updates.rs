//! The worst single update of the adversarial update streams against a
//! full build, for any IPv4 engine that patches (docs/bench/updates.md,
//! "Adversarial update streams, every IPv4 engine").
//!
//! ```console
//! cargo build --release -p fibkit-bench --example adversarial_updates
//! target/release/examples/adversarial_updates [--runs N] [--hosts N] TABLE SPEC...
//! ```
//!
//! The streams are `fibkit::trace::adversarial_streams_v4` (withdraw-all,
//! default-route flaps, three de-aggregated /8s, `--hosts` host routes in
//! one region announced then withdrawn; 2^17 by default). Each change is
//! its own batch through a `LocalFib` (reference table and engine, as a
//! caller sees it; a change the engine cannot patch is a rebuild and
//! counts as one), timed in wall time. Each stream runs `--runs` times
//! (2 by default) from the same table; per change the fastest run is kept,
//! so a change that was only preempted once is not reported as slow, and
//! the slowest change of the stream is compared with the median of three
//! builds (`Updater::build`, engine alone).

use std::time::Instant;

use fibkit::engine::Updater;
use fibkit::load::{load_table, LoadOptions};
use fibkit::registry::EngineFamily;
use fibkit::trace::adversarial_streams_v4;
use fibkit::{LocalFib, Rib};
use fibkit_bench::load_average;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn main() -> Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut option = |name: &str, default: usize| -> Result<usize> {
        match args.iter().position(|arg| arg == name) {
            Some(at) => {
                let value = args
                    .get(at + 1)
                    .ok_or_else(|| format!("{name} needs a number"))?
                    .parse()?;
                args.drain(at..at + 2);
                Ok(value)
            }
            None => Ok(default),
        }
    };
    let runs = option("--runs", 2)?.max(1);
    let hosts = option("--hosts", 1 << 17)?;
    let [table, specs @ ..] = args.as_slice() else {
        return Err("usage: adversarial_updates [--runs N] [--hosts N] TABLE SPEC...".into());
    };
    let table = load_table(std::path::Path::new(table), &LoadOptions::default())?;
    let rib = &table.v4;
    if rib.is_empty() {
        return Err("the table has no IPv4 prefix".into());
    }
    let streams = adversarial_streams_v4(rib, hosts);
    println!(
        "table: {} IPv4 prefixes; {runs} runs per stream, {hosts} host routes; load average {}",
        rib.len(),
        load_average()
    );
    println!(
        "\n| spec | stream | changes | mean us/change | worst ms | build ms | worst / build | whole stream / build | rebuilds |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for spec in specs {
        let config: <u32 as EngineFamily>::Config = spec.parse()?;
        let build_ms = build_ms(&config, rib)?;
        let probe = LocalFib::<u32>::with_config(config.clone(), rib.clone())?;
        if !probe.updater().patches() {
            println!(
                "| `{spec}` | (rebuilds on every change: not run) | | | | {build_ms:.1} | | | |"
            );
            continue;
        }
        drop(probe);
        for stream in &streams {
            let mut fastest = vec![f64::INFINITY; stream.changes.len()];
            let mut totals = Vec::with_capacity(runs);
            let mut rebuilds = 0;
            for _ in 0..runs {
                let mut fib = LocalFib::<u32>::with_config(config.clone(), rib.clone())?;
                let mut total = 0.0;
                rebuilds = 0;
                for (change, fastest) in stream.changes.iter().zip(&mut fastest) {
                    let started = Instant::now();
                    let summary = fib.apply(std::slice::from_ref(change))?;
                    let ms = started.elapsed().as_secs_f64() * 1e3;
                    total += ms;
                    rebuilds += summary.rebuilt.is_some() as usize;
                    *fastest = fastest.min(ms);
                }
                totals.push(total);
            }
            let worst = fastest.iter().copied().fold(0.0, f64::max);
            let total = median(&mut totals);
            println!(
                "| `{spec}` | {} | {} | {:.2} | {:.2} | {:.1} | {:.3} | {:.2} | {rebuilds} |",
                stream.name,
                stream.changes.len(),
                total * 1e3 / stream.changes.len().max(1) as f64,
                worst,
                build_ms,
                worst / build_ms,
                total / build_ms,
            );
        }
    }
    println!("\nload average at the end {}", load_average());
    Ok(())
}

/// The median of three builds of the engine alone, in milliseconds.
fn build_ms(config: &<u32 as EngineFamily>::Config, rib: &Rib<u32>) -> Result<f64> {
    let mut times = Vec::with_capacity(3);
    for _ in 0..3 {
        let started = Instant::now();
        let built = <<u32 as EngineFamily>::Engine as Updater<u32>>::build(config, rib)?;
        times.push(started.elapsed().as_secs_f64() * 1e3);
        drop(built);
    }
    Ok(median(&mut times))
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
