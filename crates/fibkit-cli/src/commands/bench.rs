//! `fibkit bench`: builds the engines, runs every configuration (engine,
//! key pattern, threads, mode) in alternating rounds through
//! `fibkit_bench`, and prints the medians, the rounds and the ratios to a
//! baseline.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;

use fibkit::load::FamilyPart;
use fibkit::registry::EngineFamily;
use fibkit::{Lookup, Rib};
use fibkit_bench::{self as bench, BenchEngine, Measurement, Mode, Pattern, Ratio, Settings};

use crate::args::parse_address_count;
use crate::family::for_family;
use crate::output::say;
use crate::table::{load_table, TableArgs};

/// Arguments of `fibkit bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(flatten)]
    table: TableArgs,
    /// Engines to measure (repeatable).
    #[arg(long = "engine", value_name = "SPEC", required = true)]
    engines: Vec<String>,
    /// Key patterns, comma separated: rnd, rnd-public, announced, seq, rep, trace:FILE.
    #[arg(long, value_delimiter = ',', default_value = "rnd,seq")]
    patterns: Vec<Pattern>,
    /// Lookup modes, comma separated: plain (the engine's own per-key loop),
    /// key (one call per key through the registry's snapshot enum), reader
    /// (one call per key through a live Fib's reader; keeps a copy of the
    /// table per engine), batch (one call on the whole key array), burst
    /// (calls on consecutive slices of --burst keys). seq keys run only the
    /// per-key modes (plain, key, reader).
    #[arg(long, value_delimiter = ',', default_value = "plain,key,burst,batch")]
    modes: Vec<String>,
    /// Keys per call of the burst mode, comma separated (32 is DPDK's burst).
    #[arg(long, value_delimiter = ',', default_value = "32", value_parser = clap::value_parser!(u32).range(1..))]
    burst: Vec<u32>,
    /// Report each configuration against this one: the median of the
    /// per-round ratios. SPEC alone compares each row with SPEC in the
    /// row's own mode; SPEC/MODE (dir24-8/key) with that mode; `ceiling`
    /// with the 2^16-array ceiling.
    #[arg(long, value_name = "SPEC[/MODE]")]
    baseline: Option<String>,
    /// Keys in the precomputed key array (at most 2^28).
    #[arg(long, default_value_t = 1 << 24, value_parser = parse_address_count)]
    keys: usize,
    /// Rounds: each runs every configuration once, in turn, so runs of
    /// different configurations in one round are seconds apart; the median
    /// over rounds is reported.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Minimum duration of one run, in seconds.
    #[arg(long, default_value_t = 1.0)]
    min_seconds: f64,
    /// Thread counts to measure, comma separated (each thread gets its own slice of keys).
    #[arg(long, value_delimiter = ',', default_value = "1")]
    threads: Vec<usize>,
    /// Seed of the key generator.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Address family to measure: v4 or v6 (default: v4 if the table has IPv4 prefixes).
    #[arg(long, value_parser = ["v4", "v6"])]
    family: Option<String>,
    /// Leave out the 2^16-array ceiling measurement.
    #[arg(long)]
    no_ceiling: bool,
    /// Write every measurement as JSON to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write SVG plots into this directory (throughput per engine and
    /// pattern, throughput versus threads, versus keys per burst, and DXR
    /// throughput and footprint versus K).
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,
}

/// The name of the ceiling configuration, also usable as `--baseline`.
const CEILING: &str = "ceiling";

/// One configuration of the rounds: a pattern (index into the patterns),
/// a thread count, a mode and an engine (`None`: the ceiling).
struct Configuration {
    pattern: usize,
    threads: usize,
    mode: Mode,
    engine: Option<usize>,
}

/// One engine's build facts, for the report and JSON.
#[derive(serde::Serialize)]
struct EngineReport {
    engine: String,
    build_ms: f64,
    memory_bytes: usize,
    bytes_per_prefix: f64,
}

#[derive(serde::Serialize)]
struct BenchReport {
    table: String,
    family: String,
    prefixes: usize,
    settings: Settings,
    modes: Vec<Mode>,
    baseline: Option<String>,
    seed: u64,
    /// The cap on the engines' vector instructions (`FIBKIT_MAX_SIMD`).
    max_simd: String,
    engines: Vec<EngineReport>,
    measurements: Vec<Measurement>,
}

/// Runs `fibkit bench`.
pub fn run(args: &BenchArgs) -> Result<bool> {
    let (table, _) = load_table(&args.table)?;
    let family = crate::family::chosen(args.family.as_deref(), !table.v4.is_empty());
    for_family!(family, A => bench_family(args, A::rib(&table)))
}

/// The baseline of `--baseline`: an engine's canonical spec (or `ceiling`)
/// and the mode, `None` for each row's own.
fn parse_baseline<A: EngineFamily>(
    text: &str,
    engines: &[BenchEngine<A>],
    modes: &[Mode],
) -> Result<(String, Option<Mode>)> {
    let (spec, mode) = match text.rsplit_once('/') {
        Some((spec, mode)) => {
            let mode: Mode = mode
                .parse()
                .map_err(|e: String| anyhow::anyhow!("--baseline {text}: {e}"))?;
            (spec, Some(mode))
        }
        None => (text, None),
    };
    if spec == CEILING {
        // The ceiling is measured once per pattern and thread count, plain.
        return Ok((CEILING.to_string(), Some(Mode::Plain)));
    }
    let canonical = spec
        .parse::<A::Config>()
        .map(|config| config.to_string())
        .with_context(|| format!("--baseline {text}"))?;
    if !engines.iter().any(|engine| engine.spec() == canonical) {
        let specs: Vec<&str> = engines.iter().map(BenchEngine::spec).collect();
        bail!(
            "--baseline {text}: `{canonical}` is not among the measured engines ({}); add it with --engine",
            specs.join(", ")
        );
    }
    if let Some(mode) = mode.filter(|mode| !modes.contains(mode)) {
        let names: Vec<String> = modes.iter().map(Mode::to_string).collect();
        bail!(
            "--baseline {text}: mode {mode} is not measured (--modes gives {})",
            names.join(", ")
        );
    }
    Ok((canonical, mode))
}

fn bench_family<A: EngineFamily>(args: &BenchArgs, rib: &Rib<A>) -> Result<bool> {
    if rib.is_empty() {
        bail!(
            "{}: no {} prefixes to benchmark",
            args.table.path.display(),
            A::FAMILY
        );
    }
    if args.keys == 0 || args.runs == 0 {
        bail!("--keys and --runs must be at least 1");
    }
    let bursts: Vec<usize> = args.burst.iter().map(|&keys| keys as usize).collect();
    let modes =
        bench::parse_modes(&args.modes, &bursts).map_err(|e| anyhow::anyhow!("--modes: {e}"))?;
    let readers = modes.contains(&Mode::Reader);
    let mut engines: Vec<BenchEngine<A>> = Vec::new();
    let mut reports = Vec::new();
    for spec in &args.engines {
        let engine = BenchEngine::<A>::build(spec, rib, readers)?;
        let bytes = engine.snapshot().memory_bytes();
        reports.push(EngineReport {
            engine: engine.spec().to_string(),
            build_ms: engine.build_seconds() * 1e3,
            memory_bytes: bytes,
            bytes_per_prefix: bytes as f64 / rib.len() as f64,
        });
        engines.push(engine);
    }
    let baseline = args
        .baseline
        .as_deref()
        .map(|text| parse_baseline(text, &engines, &modes))
        .transpose()?;
    if baseline.as_ref().is_some_and(|(spec, _)| spec == CEILING) && args.no_ceiling {
        bail!("--baseline ceiling needs the ceiling measurement (drop --no-ceiling)");
    }
    say!(
        "{} {} prefixes; {} keys per pattern, {} rounds of runs >= {} s",
        A::FAMILY,
        rib.len(),
        args.keys,
        args.runs,
        args.min_seconds
    );
    say!(
        "{:<24} {:>10} {:>12} {:>12}",
        "engine",
        "build ms",
        "memory B",
        "B per prefix"
    );
    for r in &reports {
        say!(
            "{:<24} {:>10.1} {:>12} {:>12.2}",
            r.engine,
            r.build_ms,
            r.memory_bytes,
            r.bytes_per_prefix
        );
    }
    let keys: Vec<Vec<A>> = args
        .patterns
        .iter()
        .map(|pattern| bench::generate_keys::<A>(pattern, args.keys, args.seed, rib))
        .collect::<Result<_, _>>()?;
    let configurations = configurations(args, &modes, engines.len());
    let min = Duration::from_secs_f64(args.min_seconds.max(0.0));
    let ceiling = bench::Ceiling::default();
    let mut out = vec![None; args.keys];
    let started = Instant::now();
    let runs = bench::interleave(args.runs, configurations.len(), |round, index| {
        let configuration = &configurations[index];
        let keys = &keys[configuration.pattern];
        let (mode, threads) = (configuration.mode, configuration.threads);
        let chained = args.patterns[configuration.pattern] == Pattern::Seq;
        let run = match configuration.engine {
            Some(engine) => engines[engine].run(keys, &mut out, mode, chained, threads, min),
            None => bench::run(|| &ceiling, keys, &mut out, mode, chained, threads, min),
        };
        if index + 1 == configurations.len() {
            eprintln!(
                "fibkit: round {} of {} done ({:.0} s)",
                round + 1,
                args.runs,
                started.elapsed().as_secs_f64()
            );
        }
        run
    });
    let mut measurements = Vec::with_capacity(configurations.len());
    for (configuration, runs) in configurations.iter().zip(&runs) {
        let name = configuration
            .engine
            .map_or(CEILING, |engine| engines[engine].spec());
        if runs.iter().any(|run| run.checksum != runs[0].checksum) {
            bail!(
                "{name} {} gave different results in different rounds",
                configuration.mode
            );
        }
        let pattern = &args.patterns[configuration.pattern];
        measurements.push(Measurement::from_runs(
            name,
            pattern,
            configuration.mode,
            configuration.threads.max(1),
            args.keys,
            runs,
        ));
    }
    check_agreement(&measurements)?;
    if let Some((spec, mode)) = &baseline {
        add_ratios(&mut measurements, spec, *mode);
    }
    say!();
    print_measurements(&measurements, args.runs)?;
    if let Some((spec, mode)) = &baseline {
        say!();
        print_ratios(&measurements, spec, *mode)?;
    }
    if let Some(dir) = &args.plot {
        let facts: Vec<crate::plots::EngineFacts> = reports
            .iter()
            .map(|r| crate::plots::EngineFacts {
                engine: r.engine.clone(),
                bytes_per_prefix: r.bytes_per_prefix,
            })
            .collect();
        for path in crate::plots::write_plots(dir, &facts, &measurements)? {
            eprintln!("fibkit: wrote {}", path.display());
        }
    }
    if let Some(path) = &args.json {
        let report = BenchReport {
            table: args.table.path.display().to_string(),
            family: A::FAMILY.to_string(),
            prefixes: rib.len(),
            settings: Settings {
                min_seconds: args.min_seconds,
                runs: args.runs,
                threads: 0,
            },
            modes,
            baseline: args.baseline.clone(),
            seed: args.seed,
            max_simd: fibkit::cpu::max_simd().to_string(),
            engines: reports,
            measurements,
        };
        let file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
        serde_json::to_writer_pretty(BufWriter::new(file), &report)?;
    }
    Ok(true)
}

/// Every configuration, in the order each round runs them: per pattern and
/// thread count, the ceiling, then each mode with every engine in turn, so
/// that the engines compared in one mode run next to each other.
fn configurations(args: &BenchArgs, modes: &[Mode], engines: usize) -> Vec<Configuration> {
    let mut configurations = Vec::new();
    for (pattern, name) in args.patterns.iter().enumerate() {
        // Dependent lookups cannot be batched: seq keys take the per-key
        // modes only.
        let mut pattern_modes: Vec<Mode> = modes
            .iter()
            .copied()
            .filter(|mode| *name != Pattern::Seq || mode.is_per_key())
            .collect();
        if pattern_modes.is_empty() {
            pattern_modes.push(Mode::Plain);
        }
        for &threads in &args.threads {
            if !args.no_ceiling {
                configurations.push(Configuration {
                    pattern,
                    threads,
                    mode: Mode::Plain,
                    engine: None,
                });
            }
            for &mode in &pattern_modes {
                configurations.extend((0..engines).map(|engine| Configuration {
                    pattern,
                    threads,
                    mode,
                    engine: Some(engine),
                }));
            }
        }
    }
    configurations
}

/// Fails if engines disagree on the results of the same keys (the ceiling's
/// results are no lookups and are left out).
fn check_agreement(measurements: &[Measurement]) -> Result<()> {
    let engines = || measurements.iter().filter(|m| m.engine != CEILING);
    for m in engines() {
        if let Some(other) = engines()
            .find(|o| o.pattern == m.pattern && o.threads == m.threads && o.checksum != m.checksum)
        {
            bail!(
                "engines disagree on the results of pattern {}: {} {} checksum {:#x}, {} {} checksum {:#x}",
                m.pattern,
                m.engine,
                m.mode,
                m.checksum,
                other.engine,
                other.mode,
                other.checksum
            );
        }
    }
    Ok(())
}

/// The baseline measurement for `m`: `spec` in `mode` (or `m`'s own mode)
/// on the same pattern and thread count.
fn baseline_of<'a>(
    measurements: &'a [Measurement],
    m: &Measurement,
    spec: &str,
    mode: Option<Mode>,
) -> Option<&'a Measurement> {
    let mode = mode.unwrap_or(m.mode);
    measurements.iter().find(|b| {
        b.engine == spec && b.mode == mode && b.pattern == m.pattern && b.threads == m.threads
    })
}

fn add_ratios(measurements: &mut [Measurement], spec: &str, mode: Option<Mode>) {
    let ratios: Vec<Option<Ratio>> = measurements
        .iter()
        .map(|m| {
            baseline_of(measurements, m, spec, mode).map(|base| {
                Ratio::new(
                    format!("{}/{}", base.engine, base.mode),
                    &m.runs_mlps,
                    &base.runs_mlps,
                )
            })
        })
        .collect();
    for (m, ratio) in measurements.iter_mut().zip(ratios) {
        m.ratio = ratio;
    }
}

fn print_measurements(measurements: &[Measurement], rounds: usize) -> Result<()> {
    say!("Mlps: million lookups per second; thr: threads; % ceiling: share of the memory-read ceiling");
    say!(
        "{:<24} {:<12} {:<8} {:>3} {:>11} {:>9} {:>9} {:>9} {:>9}  Mlps of rounds 1..{}",
        "engine",
        "pattern",
        "mode",
        "thr",
        "median Mlps",
        "min Mlps",
        "max Mlps",
        "ns/lookup",
        "% ceiling",
        rounds
    );
    for m in measurements {
        let ceiling = measurements
            .iter()
            .find(|c| c.engine == CEILING && c.pattern == m.pattern && c.threads == m.threads);
        let share = ceiling.map_or(String::from("-"), |c| {
            format!("{:.0}%", 100.0 * m.median_mlps / c.median_mlps)
        });
        say!(
            "{:<24} {:<12} {:<8} {:>3} {:>11.2} {:>9.2} {:>9.2} {:>9.2} {:>9}  {}",
            m.engine,
            m.pattern,
            m.mode.to_string(),
            m.threads,
            m.median_mlps,
            m.min_mlps,
            m.max_mlps,
            m.ns_per_lookup,
            share,
            join(&m.runs_mlps, 1)
        );
    }
    Ok(())
}

fn print_ratios(measurements: &[Measurement], spec: &str, mode: Option<Mode>) -> Result<()> {
    let against = match mode {
        Some(mode) => format!("{spec}/{mode}"),
        None => format!("{spec} in the same mode"),
    };
    say!("ratio to {against}: median of the per-round ratios (each pairs runs seconds apart)");
    say!(
        "{:<24} {:<12} {:<8} {:>3} {:>12}  ratio of rounds 1..",
        "engine",
        "pattern",
        "mode",
        "thr",
        "median ratio"
    );
    for m in measurements {
        if let Some(ratio) = &m.ratio {
            say!(
                "{:<24} {:<12} {:<8} {:>3} {:>11.3}x  {}",
                m.engine,
                m.pattern,
                m.mode.to_string(),
                m.threads,
                ratio.median,
                join(&ratio.rounds, 3)
            );
        }
    }
    Ok(())
}

/// Numbers with `decimals` decimals, space separated.
fn join(values: &[f64], decimals: usize) -> String {
    values
        .iter()
        .map(|v| format!("{v:.decimals$}"))
        .collect::<Vec<_>>()
        .join(" ")
}
