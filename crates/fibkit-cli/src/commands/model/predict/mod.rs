//! `fibkit model predict`: the predicted average lookup time of every
//! `levels` structure for each trace, the optimum per trace, and with
//! `--measure` the predictions against measured lookups; with `--engines`,
//! the same for the layouts of other engines.

mod engines;
mod levels;

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;

use fibkit::model::Machine;

use super::common::{interleaved_rounds, remeasured};
use crate::table::{load_table, TableArgs};

/// `fibkit model predict`.
#[derive(Args, Debug)]
pub struct PredictArgs {
    #[command(flatten)]
    table: TableArgs,
    /// Traces (repeatable; `fibkit trace gen`).
    #[arg(long = "trace", required = true)]
    traces: Vec<PathBuf>,
    /// The machine file of `fibkit model calibrate`, made on the traces' family.
    #[arg(long, default_value = "fibkit-machine.json")]
    machine: PathBuf,
    /// Use the paper's Pentium III (two levels, 32-byte lines) instead.
    #[arg(long)]
    paper: bool,
    /// What-if: this L2 size (e.g. 2MiB).
    #[arg(long, value_parser = parse_size)]
    l2: Option<u64>,
    /// What-if: this L3 size.
    #[arg(long, value_parser = parse_size)]
    l3: Option<u64>,
    /// What-if: a latency, LEVEL=NS (1, 2, 3, or mem).
    #[arg(long = "latency", value_parser = parse_latency)]
    latencies: Vec<(usize, f64)>,
    /// Measure the validation structures (every T1 of even stride 8..24,
    /// T2 and T3 samples, and the predicted top 3) and print the errors.
    /// They are all built before the rounds start: 0.85 GB resident for
    /// dfz-v4-nh (`--max-mib` bounds each structure).
    #[arg(long)]
    measure: bool,
    /// Milliseconds per measured round.
    #[arg(long, default_value_t = 200)]
    millis: u64,
    /// Measured rounds per structure (the median is kept); each round
    /// measures every structure in turn.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// With --measure: every round first chases the machine file's latency
    /// curve again (one sweep, a quarter of --millis per working set) and
    /// predicts every structure (or, with --engines, every layout) with the
    /// levels and latencies of that round; a structure's predicted time is
    /// the median of its rounds', and its error that of the median of its
    /// rounds' predicted / measured ratios.
    /// The share of a shared last-level cache a guest gets can move by
    /// several times within minutes, so a calibration made earlier prices
    /// misses at another machine than the one measured.
    #[arg(long, requires = "measure")]
    track: bool,
    /// Largest structure considered, in MiB.
    #[arg(long, default_value_t = 512)]
    max_mib: u64,
    /// Structures listed per trace.
    #[arg(long, default_value_t = 8)]
    top: usize,
    /// JSON instead of text.
    #[arg(long)]
    json: bool,
    /// With --measure: also write an SVG plot of predicted against measured
    /// time, one colour per trace (the paper's Figures 7-9).
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Instead of the `levels` structures: predicted against measured
    /// dependent lookups of other engines' layouts, `dxr` (IPv4
    /// dxr:k=16..22; IPv6 dxr6, dxr6:k=12, dxr6:k=20, dxr6:density=8) and
    /// `cpe` (cpe:levels=2..4; IPv6: cpe), and the model's
    /// pick beside the measured best, per trace.
    #[arg(long, value_delimiter = ',', value_parser = ["dxr", "cpe"])]
    engines: Vec<String>,
}

fn parse_size(text: &str) -> Result<u64, String> {
    let lower = text.to_ascii_lowercase();
    let (digits, scale) = if let Some(d) = lower.strip_suffix("mib").or(lower.strip_suffix('m')) {
        (d, 1u64 << 20)
    } else if let Some(d) = lower.strip_suffix("kib").or(lower.strip_suffix('k')) {
        (d, 1 << 10)
    } else {
        (lower.as_str(), 1)
    };
    digits
        .trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("`{text}` is not a size like 2MiB or 512KiB"))
}

fn parse_latency(text: &str) -> Result<(usize, f64), String> {
    let bad = || format!("`{text}` is not LEVEL=NS like 2=5 or mem=90");
    let (level, ns) = text.split_once('=').ok_or_else(bad)?;
    let ns: f64 = ns
        .parse()
        .ok()
        .filter(|n: &f64| *n >= 0.0)
        .ok_or_else(bad)?;
    let level = if level == "mem" {
        usize::MAX
    } else {
        level
            .parse::<usize>()
            .ok()
            .filter(|&l| l >= 1)
            .ok_or_else(bad)?
    };
    Ok((level, ns))
}

/// Runs `fibkit model predict`.
pub fn run(args: &PredictArgs) -> Result<bool> {
    if args.track && (args.l2.is_some() || args.l3.is_some() || !args.latencies.is_empty()) {
        bail!(
            "--track replaces the levels and latencies with each round's measurement: drop \
             --l2, --l3 and --latency, or --track"
        );
    }
    let machine = read_machine(args)?;
    if args.track && (args.paper || machine.curve.is_empty()) {
        bail!(
            "--track chases the machine file's latency curve again: {} has none (make one \
             with `fibkit model calibrate`; --paper has no curve)",
            args.machine.display()
        );
    }
    let (table, _) = load_table(&args.table)?;
    if !args.engines.is_empty() {
        return engines::predict_engines(args, &machine, &table.v4, &table.v6);
    }
    levels::predict_levels(args, &machine, &table)
}

fn read_machine(args: &PredictArgs) -> Result<Machine> {
    let mut machine = if args.paper {
        Machine::paper_pentium_iii()
    } else {
        fibkit::choice::auto::read_machine(&args.machine)
            .context("the machine file (make one with `fibkit model calibrate`, or use --paper)")?
    };
    for (level, size) in [(2, args.l2), (3, args.l3)] {
        if let Some(size) = size {
            match machine.caches.iter_mut().find(|c| c.level == level) {
                Some(cache) => cache.size_bytes = size,
                None => bail!("this machine has no L{level} to resize"),
            }
        }
    }
    for &(level, ns) in &args.latencies {
        let index = if level == usize::MAX {
            machine.latency_ns.len() - 1
        } else {
            level - 1
        };
        match machine.latency_ns.get_mut(index) {
            Some(slot) => *slot = ns,
            None => bail!("this machine has no cache level {level}"),
        }
    }
    Ok(machine)
}

/// `measure(i)` of `count` structures in each of `--rounds` interleaved
/// rounds ([`interleaved_rounds`]), and with `--track` the machine each
/// round found before it ([`remeasured`]; empty without).
fn measured_rounds(
    args: &PredictArgs,
    machine: &Machine,
    count: usize,
    measure: impl FnMut(usize) -> f64,
) -> (Vec<Vec<f64>>, Vec<Machine>) {
    let mut machines = Vec::new();
    let times = interleaved_rounds(
        count,
        args.rounds,
        |_| {
            if args.track {
                machines.push(remeasured(machine, args.millis / 4));
            }
        },
        measure,
    );
    (times, machines)
}
