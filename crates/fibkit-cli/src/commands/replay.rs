//! `fibkit replay`: an update stream replayed onto a live table while reader
//! threads look up keys (the library's `fibkit_bench::replay`), then a check that
//! the table equals the reference on every range boundary.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;

use fibkit::load::{self, FamilyPart, Format, LoadedTable};
use fibkit::registry::EngineFamily;
use fibkit::Fib;
use fibkit_bench::replay::{replay, spread_over_seconds, ReplayOptions, ReplayReport, Speed};
use fibkit_bench::{generate_keys, Pattern};

use crate::args::parse_address_count;
use crate::family::for_family;
use crate::table::{load_table, load_updates, TableArgs};

/// Arguments of `fibkit replay`.
#[derive(Args, Debug)]
pub struct ReplayArgs {
    #[command(flatten)]
    table: TableArgs,
    /// The update stream: `time a|w prefix nexthop` text, MRT BGP4MP or
    /// bgpdump -m text.
    #[arg(long, value_name = "FILE")]
    updates: PathBuf,
    /// Format of the --updates file instead of detecting it: updates, mrt,
    /// bgpdump.
    #[arg(long, value_name = "FORMAT")]
    updates_format: Option<Format>,
    /// Engine to keep in line with the stream (default: the family's default
    /// engine, `fibkit::default_spec`: dxr for IPv4; for IPv6 poptrie where
    /// the CPU has AVX-512, dxr6 elsewhere).
    #[arg(long = "engine", value_name = "SPEC")]
    engine: Option<String>,
    /// Pace of the stream: `max` (as fast as the writer goes), or a factor
    /// of its recorded pace (`1x`, `100x`).
    #[arg(long, default_value = "max")]
    speed: Speed,
    /// Reader threads looking up keys during the replay (0: none).
    #[arg(long, default_value_t = 1)]
    readers: usize,
    /// Keys per reader call: 1 is one lookup per call through the reader's
    /// handle, more its batch lookup on that many keys.
    #[arg(long, default_value_t = 32)]
    burst: usize,
    /// Changes due within this many milliseconds of the first pending one
    /// are applied as one batch.
    #[arg(long, default_value_t = 1.0)]
    coalesce_ms: f64,
    /// The largest batch: the writer takes every change already due, up to
    /// this many (it matters when changes are backed up, as at `--speed max`).
    #[arg(long, default_value_t = fibkit_bench::replay::DEFAULT_MAX_BATCH)]
    max_batch: usize,
    /// Seconds the readers run on the idle table first (their baseline).
    #[arg(long, default_value_t = 1.0)]
    idle_seconds: f64,
    /// Distinct keys the readers cycle through (uniformly random
    /// addresses; at most 2^28).
    #[arg(long, default_value_t = 1 << 20, value_parser = parse_address_count)]
    keys: usize,
    /// Random addresses checked at the end besides every range boundary
    /// (at most 2^28).
    #[arg(long, default_value_t = 100_000, value_parser = parse_address_count)]
    random: usize,
    /// Family to replay: v4 or v6 (default: v4 if the stream has IPv4 changes).
    #[arg(long, value_parser = ["v4", "v6"])]
    family: Option<String>,
    /// Write the report (with its timeline) as JSON to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Draw the timeline (reader throughput and changes per step) as SVG.
    #[arg(long, value_name = "FILE")]
    plot: Option<PathBuf>,
}

/// Runs `fibkit replay`.
pub fn run(args: &ReplayArgs) -> Result<bool> {
    let (table, _) = load_table(&args.table)?;
    let updates = load_updates(
        &args.table,
        &args.updates,
        args.updates_format,
        &table.nexthops,
    )?;
    let has_v4 = !updates.timed::<u32>().is_empty();
    let family = crate::family::chosen(args.family.as_deref(), has_v4);
    let default_engine = fibkit::default_spec(family);
    for_family!(family, A => replay_family::<A>(args, &table, &updates, default_engine))
}

fn replay_family<A: EngineFamily + FamilyPart>(
    args: &ReplayArgs,
    table: &LoadedTable,
    updates: &load::LoadedUpdates,
    default_engine: &str,
) -> Result<bool> {
    let stream = spread_over_seconds(&updates.timed::<A>());
    if stream.is_empty() {
        bail!(
            "{}: no {} changes to replay",
            args.updates.display(),
            A::FAMILY
        );
    }
    let rib = A::rib(table);
    let spec = args.engine.as_deref().unwrap_or(default_engine);
    let fib = Fib::<A>::new(spec, rib.clone())?;
    let keys = if args.readers > 0 {
        generate_keys::<A>(&Pattern::Rnd, args.keys.max(1), 1, rib)?
    } else {
        Vec::new()
    };
    let options = ReplayOptions {
        speed: args.speed,
        coalesce: Duration::from_secs_f64(args.coalesce_ms.max(0.0) / 1e3),
        max_batch: args.max_batch,
        readers: args.readers,
        reader_burst: args.burst,
        idle: Duration::from_secs_f64(args.idle_seconds.max(0.0)),
        ..ReplayOptions::default()
    };
    let report = replay(&fib, &stream, &keys, &options);
    print_report(&report, &args.speed, args.readers)?;
    let check = fib.with_rib(|rib| fibkit::verify::verify(&*fib.snapshot(), rib, args.random, 1));
    writeln!(
        std::io::stdout(),
        "final check      {} addresses, {} passed, {} failed",
        check.checked,
        check.passed,
        check.failed
    )?;
    for mismatch in &check.mismatches {
        writeln!(std::io::stdout(), "  mismatch {mismatch}")?;
    }
    if let Some(path) = &args.json {
        let file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
        serde_json::to_writer_pretty(BufWriter::new(file), &report)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.plot {
        crate::plots::replay_timeline(path, &report)?;
        eprintln!("fibkit: wrote {}", path.display());
    }
    Ok(check.ok() && report.errors.is_empty())
}

fn print_report(report: &ReplayReport, speed: &Speed, readers: usize) -> Result<()> {
    let mut out = std::io::stdout().lock();
    let speed = match speed {
        Speed::Max => "max".to_string(),
        Speed::Factor(factor) => format!("{factor}x"),
    };
    writeln!(out, "engine           {}", report.engine)?;
    writeln!(
        out,
        "stream           {} changes ({} effective, {} no-ops) at speed {speed}",
        report.changes, report.effective, report.no_ops
    )?;
    writeln!(
        out,
        "batches          {} ({} rebuilds, {} failed)",
        report.batches,
        report.rebuilds,
        report.errors.len()
    )?;
    for error in &report.errors {
        writeln!(out, "  failed: {error}")?;
    }
    writeln!(
        out,
        "time             {:.3} s wall, writer busy {:.3} s",
        report.seconds, report.writer_busy_seconds
    )?;
    writeln!(
        out,
        "changes/s        {:.0} per wall second, {:.0} per busy second",
        report.changes_per_second, report.changes_per_busy_second
    )?;
    writeln!(
        out,
        "update-to-visible p50 {:.1} us, p99 {:.1} us, max {:.1} us",
        report.latency.p50_us, report.latency.p99_us, report.latency.max_us
    )?;
    if readers > 0 {
        writeln!(
            out,
            "readers ({readers})      {:.1} Mlps idle, {:.1} Mlps during the replay ({:.1}%)",
            report.idle_reader_mlps,
            report.churn_reader_mlps,
            100.0 * report.reader_ratio
        )?;
    }
    Ok(())
}
