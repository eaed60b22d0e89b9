//! Interleaved A/B timing of engines on the same keys (A, B, A, B, ...),
//! for comparisons on a shared, noisy machine:
//!
//! ```console
//! cargo run --release -p fibkit-bench --example bspl_ab -- TABLE [--v6] \
//!     [--pattern rnd|rnd-public|announced] [--mode plain|batch] \
//!     [--burst N] [--keys N] [--passes N] [--rounds N] SPEC...
//! ```
//!
//! Each round runs every engine `--passes` times over the keys (a small key
//! set with many passes measures lookups from cache), in bursts of `--burst`
//! keys (0 = one call for all keys). A rate is keys per
//! second of the thread's own CPU time (`/proc/thread-self/schedstat`, so
//! time slices lost to other processes do not count; wall-clock rates are
//! printed too). Reported: each engine's median rate, and its ratio to the
//! first engine as the median of the per-round ratios. Every engine's
//! answers are compared with the first's.

use std::path::Path;
use std::time::Instant;

use fibkit::load::{load_table, LoadOptions};
use fibkit::registry::EngineFamily;
use fibkit::{build, Label, Lookup, Rib};
use fibkit_bench::thread_cpu_ns as cpu_ns;
use fibkit_bench::{generate_keys, Pattern};

struct Options {
    table: String,
    v6: bool,
    pattern: Pattern,
    batch: bool,
    burst: usize,
    keys: usize,
    rounds: usize,
    passes: usize,
    specs: Vec<String>,
}

fn parse() -> Result<Options, String> {
    let mut args = std::env::args().skip(1);
    let mut options = Options {
        table: String::new(),
        v6: false,
        pattern: Pattern::Rnd,
        batch: true,
        burst: 0,
        keys: 1 << 22,
        rounds: 11,
        passes: 1,
        specs: Vec::new(),
    };
    let number = |value: Option<String>| -> Result<usize, String> {
        value
            .ok_or("missing value")?
            .parse()
            .map_err(|e| format!("{e}"))
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--v6" => options.v6 = true,
            "--pattern" => options.pattern = args.next().ok_or("missing pattern")?.parse()?,
            "--mode" => options.batch = args.next().as_deref() == Some("batch"),
            "--burst" => options.burst = number(args.next())?,
            "--keys" => options.keys = number(args.next())?,
            "--rounds" => options.rounds = number(args.next())?,
            "--passes" => options.passes = number(args.next())?,
            _ if options.table.is_empty() => options.table = arg,
            _ => options.specs.push(arg),
        }
    }
    if options.table.is_empty() || options.specs.is_empty() {
        return Err(
            "usage: bspl_ab TABLE [--v6] [--pattern P] [--mode plain|batch] \
                    [--burst N] [--keys N] [--rounds N] SPEC..."
                .into(),
        );
    }
    Ok(options)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn run<A: EngineFamily>(options: &Options, rib: &Rib<A>) -> Result<(), Box<dyn std::error::Error>> {
    let keys = generate_keys::<A>(&options.pattern, options.keys, 1, rib)?;
    let engines: Vec<(String, A::Snapshot)> = options
        .specs
        .iter()
        .map(|spec| build(spec, rib).map(|e| (spec.clone(), e)))
        .collect::<Result<_, _>>()?;
    let burst = if options.burst == 0 {
        keys.len()
    } else {
        options.burst
    };
    let mut reference: Vec<Option<Label>> = vec![None; keys.len()];
    let mut out: Vec<Option<Label>> = vec![None; keys.len()];
    let mut cpu_rates = vec![Vec::new(); engines.len()];
    let mut wall_rates = vec![Vec::new(); engines.len()];
    for round in 0..options.rounds {
        for (i, (spec, engine)) in engines.iter().enumerate() {
            let (cpu, wall) = (cpu_ns(), Instant::now());
            for _ in 0..options.passes {
                for (k, o) in keys.chunks(burst).zip(out.chunks_mut(burst)) {
                    if options.batch {
                        engine.lookup_batch(k, o);
                    } else {
                        engine.lookup_each(k, o);
                    }
                }
            }
            let cpu = (cpu_ns() - cpu) as f64;
            let wall = wall.elapsed().as_secs_f64();
            std::hint::black_box(&out);
            let looked_up = (keys.len() * options.passes) as f64;
            cpu_rates[i].push(looked_up / cpu * 1e3);
            wall_rates[i].push(looked_up / wall / 1e6);
            if round == 0 {
                if i == 0 {
                    reference.copy_from_slice(&out);
                } else if out != reference {
                    return Err(format!("{spec} disagrees with {}", engines[0].0).into());
                }
            }
        }
    }
    println!(
        "{} {} keys, {} mode, bursts of {}, {} rounds (Mlps of thread CPU time; wall)",
        A::FAMILY,
        options.pattern.name(),
        if options.batch { "batch" } else { "plain" },
        burst,
        options.rounds
    );
    for (i, (spec, _)) in engines.iter().enumerate() {
        let mut ratios: Vec<f64> = cpu_rates[i]
            .iter()
            .zip(&cpu_rates[0])
            .map(|(a, b)| a / b)
            .collect();
        println!(
            "{spec:<32} {:>8.2} Mlps  (wall {:>7.2})  x{:.3} of {}",
            median(&mut cpu_rates[i].clone()),
            median(&mut wall_rates[i].clone()),
            median(&mut ratios),
            engines[0].0
        );
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let options = parse()?;
    let table = load_table(Path::new(&options.table), &LoadOptions::default())?;
    if options.v6 {
        run(&options, &table.v6)
    } else {
        run(&options, &table.v4)
    }
}
