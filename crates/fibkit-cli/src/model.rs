//! `fibkit model`: trace summaries, calibration and the predicted-vs-
//! measured tables of the performance model (Narlikar and Zane).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};

use fibkit::choice::auto::{
    build_and_predict, build_candidate, engine_of, predict_built, AutoFamily, AutoSnapshot, Ranked,
};
use fibkit::engines::levels::TreeNode;
use fibkit::model::machine::{
    cpu_model, curve_sizes, describe, fit_nonnegative, latency_curve, latency_sweep,
    measured_levels, os_caches, relative_rows, EngineCosts,
};
use fibkit::model::summary::{prefix_densities, weighted_ranges};
use fibkit::model::{
    build_levels, error_percent, median, paired_error_percent, seq_ns, trie_model, CacheLevel,
    Machine, ModelError, Prediction, TraceSummary, TrieModel, WeightedRanges,
};
use fibkit::storage::Plain;
use fibkit::{Addr, EngineFamily, Family, Rib};

use crate::commands::load_table;
use crate::TableArgs;

/// What `fibkit model` does.
#[derive(Subcommand, Debug)]
pub enum ModelCommand {
    /// Count the longest match of every trace address: the per-prefix
    /// lookup frequencies the model reads (`# fibkit trace summary v1`).
    Summary {
        #[command(flatten)]
        table: TableArgs,
        /// The trace (`fibkit trace gen`).
        #[arg(long)]
        trace: PathBuf,
        /// Where to write the summary.
        #[arg(long)]
        out: PathBuf,
    },
    /// Measure this machine: a pointer-chase latency curve from half the L1
    /// to 256-512 MiB (three sweeps), whose plateaus become the model's
    /// levels, then t_trie, t_tree, t_const and the share of a tree-node
    /// miss a lookup waits for, fitted by least squares of the relative
    /// errors to dependent lookups of a few `levels` structures on the
    /// trace, and t_trie and t_const of `dxr` and `cpe` fitted so on their
    /// own layouts. The costs are those of the trace's family (the file
    /// serves that family only: calibrate once per family).
    Calibrate {
        #[command(flatten)]
        table: TableArgs,
        /// The trace to fit on.
        #[arg(long)]
        trace: PathBuf,
        /// The machine file to write.
        #[arg(long, default_value = "fibkit-machine.json")]
        out: PathBuf,
        /// Milliseconds per measurement (a quarter of it per size and sweep
        /// of the latency curve).
        #[arg(long, default_value_t = 300)]
        millis: u64,
    },
    /// Predicted average lookup time of every `levels` structure for each
    /// trace, the optimum per trace (the paper's Table 4) and the penalty of
    /// another trace's optimum (Table 5); with --measure, predicted against
    /// measured dependent lookups and the errors (Table 3).
    Predict(PredictArgs),
}

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

/// Runs a `fibkit model` command.
pub fn model(command: &ModelCommand) -> Result<bool> {
    match command {
        ModelCommand::Summary { table, trace, out } => summary(table, trace, out),
        ModelCommand::Calibrate {
            table,
            trace,
            out,
            millis,
        } => calibrate(table, trace, out, *millis),
        ModelCommand::Predict(args) => predict(args),
    }
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// The addresses of the trace at `path` for the family the table has.
fn traces_of(path: &Path) -> Result<(Vec<u32>, Vec<u128>)> {
    let v4 = fibkit::trace::read_trace::<u32>(path)?;
    let v6 = fibkit::trace::read_trace::<u128>(path)?;
    if v4.is_empty() && v6.is_empty() {
        bail!("{}: no addresses in the trace", path.display());
    }
    Ok((v4, v6))
}

fn summary(table: &TableArgs, trace: &Path, out: &Path) -> Result<bool> {
    let (table, _) = load_table(table)?;
    let (v4, v6) = traces_of(trace)?;
    let text = if !v4.is_empty() {
        summarise(&table.v4, &v4)?
    } else {
        summarise(&table.v6, &v6)?
    };
    std::fs::write(out, text).with_context(|| format!("writing {}", out.display()))?;
    println!("wrote {}", out.display());
    Ok(true)
}

/// The summary's text, after printing the distance between the trace's
/// halves (the paper's Table 1).
fn summarise<A: Addr>(rib: &Rib<A>, trace: &[A]) -> Result<String> {
    let summary = checked_summary(rib, trace)?;
    let half = trace.len() / 2;
    let first = TraceSummary::from_trace(rib, &trace[..half]);
    let second = TraceSummary::from_trace(rib, &trace[half..]);
    let (by_prefix, by_length) = first.distance(&second);
    println!(
        "{} lookups, {} unmatched, {} prefixes matched; total variation distance between the \
         halves: by prefix {by_prefix:.3}, by prefix length {by_length:.3}",
        summary.lookups,
        summary.unmatched,
        summary.counts.len()
    );
    Ok(summary.to_text())
}

fn checked_summary<A: Addr>(rib: &Rib<A>, trace: &[A]) -> Result<TraceSummary<A>> {
    if rib.is_empty() {
        bail!(
            "the table has no {} prefix: nothing to summarise",
            A::FAMILY
        );
    }
    let summary = TraceSummary::from_trace(rib, trace);
    if summary.matched() == 0 {
        bail!(
            "none of the trace's {} {} addresses matches a prefix of the table: \
             generate the trace from this table (`fibkit trace gen`)",
            trace.len(),
            A::FAMILY
        );
    }
    Ok(summary)
}

/// The structures `calibrate` fits on: one to three levels, small and
/// large, shallow and deep trees.
const CALIBRATION: &[&[u8]] = &[
    &[8],
    &[12],
    &[16],
    &[20],
    &[24],
    &[16, 8],
    &[12, 6, 6],
    &[16, 4, 4],
    &[20, 4, 4],
    &[8, 8, 8],
];

fn calibrate(table: &TableArgs, trace: &Path, out: &Path, millis: u64) -> Result<bool> {
    let os = os_caches()?;
    let line = os[0].line_bytes as usize;
    // The curve runs to well past the largest level the OS lists, but not
    // past 512 MiB: the model's structures are smaller, and a chase through
    // a working set that large takes seconds to set up.
    let largest = os.last().map_or(1 << 20, |c| c.size_bytes);
    let max_bytes = (largest * 2).clamp(256 << 20, 512 << 20);
    let curve = latency_curve(&curve_sizes(&os, max_bytes), line, millis / 4);
    let (caches, latency_ns) = measured_levels(&curve, &os)
        .context("the latency curve shows no plateau: calibrate on a quieter machine")?;
    let mut machine = Machine {
        version: fibkit::model::machine::MACHINE_VERSION,
        cpu_model: cpu_model(),
        caches,
        os_caches: os,
        latency_ns,
        curve,
        trie_ns: 0.0,
        tree_ns: 0.0,
        const_ns: 0.0,
        tree_miss_weight: 1.0,
        engine_costs: BTreeMap::new(),
        family: None,
    };
    let (table, _) = load_table(table)?;
    let (v4, v6) = traces_of(trace)?;
    let rows = if !v4.is_empty() {
        fit_rows(&machine, &table.v4, &v4, millis)?
    } else {
        fit_rows(&machine, &table.v6, &v6, millis)?
    };
    machine.family = Some(trace_family(&v4).to_string());
    let [trie, tree, weight, fixed] = fit_nonnegative(&relative_rows(&rows));
    (
        machine.trie_ns,
        machine.tree_ns,
        machine.tree_miss_weight,
        machine.const_ns,
    ) = (trie, tree, weight, fixed);
    machine.engine_costs = if !v4.is_empty() {
        fit_engine_costs(&machine, &table.v4, &v4, millis)?
    } else {
        fit_engine_costs(&machine, &table.v6, &v6, millis)?
    };
    let text = serde_json::to_string_pretty(&machine)?;
    std::fs::write(out, text + "\n").with_context(|| format!("writing {}", out.display()))?;
    println!(
        "machine: {} (OS: {})",
        machine.cpu_model,
        describe(&machine.os_caches)
    );
    println!(
        "latency curve (working set: ns per dependent load): {}",
        machine
            .curve
            .iter()
            .map(|(bytes, ns)| format!("{} KiB: {ns:.1}", bytes >> 10))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!("levels measured: {}", describe(&machine.caches));
    println!(
        "latency per level, then memory (ns): {:.1?}",
        machine.latency_ns
    );
    println!(
        "t_trie {:.2} ns, t_tree {:.2} ns, t_const {:.2} ns, tree miss weight {:.2}, fitted on {} \
         lookups (load average {})",
        trie,
        tree,
        fixed,
        weight,
        machine.family.as_deref().unwrap_or("no"),
        load_average()
    );
    for (engine, costs) in &machine.engine_costs {
        println!(
            "{engine}: t_trie {:.2} ns, t_const {:.2} ns (fitted on its own layouts)",
            costs.trie_ns, costs.const_ns
        );
    }
    println!("wrote {}", out.display());
    Ok(true)
}

/// t_trie and t_const of each engine with a model (`dxr` or `dxr6`, and
/// `cpe`), fitted by least squares of the relative errors
/// ([`relative_rows`]) to dependent lookups of its candidate
/// layouts on the trace, as [`fit_rows`] does for the `levels`
/// structures. An engine with fewer than two modelled layouts gets none.
fn fit_engine_costs<A: AutoFamily + EngineFamily>(
    machine: &Machine,
    rib: &Rib<A>,
    trace: &[A],
    millis: u64,
) -> Result<BTreeMap<String, EngineCosts>> {
    let summary = checked_summary(rib, trace)?;
    let densities = prefix_densities(rib, &summary);
    let view = weighted_ranges(rib, A::ZERO, A::MAX, Some(&densities));
    let duration = Duration::from_millis(millis);
    let mut rows: BTreeMap<String, Vec<([f64; 2], f64, f64)>> = BTreeMap::new();
    let engines = ["dxr".to_string(), "cpe".to_string()];
    for (spec, prediction, snapshot) in modelled_layouts(&engines, &view, &machine.caches, rib)? {
        let Ok(prediction) = prediction else {
            continue;
        };
        let measured = seq_ns(&snapshot, trace, duration);
        // Neither engine walks a search tree: only t_trie and t_const.
        rows.entry(engine_of(&spec).to_string()).or_default().push((
            [prediction.trie_visits, 1.0],
            measured - machine.memory_ns(&prediction),
            measured,
        ));
    }
    Ok(rows
        .into_iter()
        .filter(|(_, rows)| rows.len() >= 2)
        .map(|(engine, rows)| {
            let [trie_ns, const_ns] = fit_nonnegative(&relative_rows(&rows));
            (engine, EngineCosts { trie_ns, const_ns })
        })
        .collect())
}

/// `([H, S, tree miss time, 1], measured - trie miss time, measured)` of each
/// calibration structure: the columns of t_trie, t_tree, the tree miss
/// weight and t_const.
fn fit_rows<A: Addr>(
    machine: &Machine,
    rib: &Rib<A>,
    trace: &[A],
    millis: u64,
) -> Result<Vec<([f64; 4], f64, f64)>>
where
    TreeNode<A>: Plain,
{
    let summary = checked_summary(rib, trace)?;
    let model = trie_model(rib, &summary)?;
    let mut rows = Vec::new();
    for strides in CALIBRATION {
        let Some(prediction) = model.predict(strides, &machine.caches) else {
            continue;
        };
        let engine = build_levels(rib, &summary, strides)?;
        let measured = seq_ns(&engine, trace, Duration::from_millis(millis));
        let (trie_ns, tree_ns) = machine.memory_ns_parts(&prediction);
        rows.push((
            [prediction.trie_visits, prediction.tree_visits, tree_ns, 1.0],
            measured - trie_ns,
            measured,
        ));
    }
    Ok(rows)
}

/// The family a trace's lookups are of, given its IPv4 addresses `v4`:
/// IPv4 when it has any, as calibration and prediction take it.
fn trace_family(v4: &[u32]) -> Family {
    if v4.is_empty() {
        Family::V6
    } else {
        Family::V4
    }
}

/// Checks that `machine`'s costs were fitted on the family of the trace at
/// `trace` ([`trace_family`] of its IPv4 addresses `v4`).
fn check_family(machine: &Machine, file: &Path, trace: &Path, v4: &[u32]) -> Result<()> {
    machine
        .check_family(trace_family(v4))
        .with_context(|| format!("{} with the trace {}", file.display(), trace.display()))
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

/// Predicted and (when measured) measured ns of one structure on one trace.
#[derive(Clone, Debug, serde::Serialize)]
struct Row {
    strides: Vec<u8>,
    predicted_ns: f64,
    /// The median of the measured rounds.
    measured_ns: Option<f64>,
    /// The prediction's error against the measurement, in percent: with
    /// `--track` the median of the rounds' paired ratios
    /// ([`paired_error_percent`]), otherwise of the two medians.
    error_percent: Option<f64>,
    prediction: Prediction,
}

/// The structures measured for Table 3: every T1 of even stride 8..=24,
/// T2 and T3 samples.
fn validation_set() -> Vec<Vec<u8>> {
    let mut set: Vec<Vec<u8>> = (8..=24).step_by(2).map(|s| vec![s]).collect();
    for s1 in [12, 16, 20] {
        for s2 in [4, 8, 12] {
            set.push(vec![s1, s2]);
        }
    }
    for s1 in [16, 20] {
        for s in [4, 6] {
            set.push(vec![s1, s, s]);
        }
    }
    set.push(vec![16, 8, 8]);
    set
}

fn name(strides: &[u8]) -> String {
    let mut depth = 0u32;
    let depths: Vec<String> = strides
        .iter()
        .map(|&s| {
            depth += s as u32;
            depth.to_string()
        })
        .collect();
    format!("T{}({})", strides.len(), depths.join(","))
}

struct TraceResult {
    path: PathBuf,
    rows: Vec<Row>,
    model: TrieModel,
    /// With `--track`: the machine as each measured round found it.
    tracked: Vec<Machine>,
}

fn predict(args: &PredictArgs) -> Result<bool> {
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
        return predict_engines(args, &machine, &table.v4, &table.v6);
    }
    if args.svg.is_some() && !args.measure {
        bail!("--svg plots predicted against measured times: add --measure");
    }
    let mut results = Vec::new();
    for path in &args.traces {
        let (v4, v6) = traces_of(path)?;
        check_family(&machine, &args.machine, path, &v4)?;
        results.push(if !v4.is_empty() {
            evaluate(args, &machine, &table.v4, &v4, path)?
        } else {
            evaluate(args, &machine, &table.v6, &v6, path)?
        });
    }
    if args.measure {
        // Every trace's predicted optimum is measured on every trace, for
        // the measured Table 5.
        let optima: Vec<Vec<u8>> = results.iter().map(|r| r.rows[0].strides.clone()).collect();
        for result in &mut results {
            let (v4, v6) = traces_of(&result.path)?;
            if !v4.is_empty() {
                measure_rows(args, &machine, &table.v4, &v4, result, &optima)?;
            } else {
                measure_rows(args, &machine, &table.v6, &v6, result, &optima)?;
            }
        }
    }
    if let Some(svg) = &args.svg {
        std::fs::write(svg, scatter_svg(&results))
            .with_context(|| format!("writing {}", svg.display()))?;
    }
    report(args, &machine, &results)
}

/// Measures, on `trace`, the rows of `result` that Table 3 validates (and
/// the predicted top 3), plus the structures of `also`. With `--track`,
/// every round first measures the machine again ([`remeasured`]) and every
/// row is then predicted with the median of its rounds' predictions.
fn measure_rows<A: Addr>(
    args: &PredictArgs,
    machine: &Machine,
    rib: &Rib<A>,
    trace: &[A],
    result: &mut TraceResult,
    also: &[Vec<u8>],
) -> Result<()>
where
    TreeNode<A>: Plain,
{
    let summary = checked_summary(rib, trace)?;
    let mut wanted = validation_set();
    wanted.extend(result.rows.iter().take(3).map(|r| r.strides.clone()));
    wanted.extend(also.iter().cloned());
    let mut measured: Vec<(usize, _)> = Vec::new();
    for (index, row) in result.rows.iter().enumerate() {
        if wanted.contains(&row.strides) {
            measured.push((index, build_levels(rib, &summary, &row.strides)?));
        }
    }
    let (samples, machines) = measured_rounds(args, machine, measured.len(), |i| {
        seq_ns(&measured[i].1, trace, Duration::from_millis(args.millis))
    });
    let mut round_times = vec![Vec::new(); result.rows.len()];
    for ((index, _), times) in measured.into_iter().zip(samples) {
        // `times` stays in round order for the pairs.
        result.rows[index].measured_ns = Some(median(&mut times.clone()));
        round_times[index] = times;
    }
    if !machines.is_empty() {
        for (row, measured) in result.rows.iter_mut().zip(&round_times) {
            let rounds: Option<Vec<(f64, Prediction)>> = machines
                .iter()
                .map(|m| {
                    let p = result.model.predict(&row.strides, &m.caches)?;
                    Some((m.time_ns(&p), p))
                })
                .collect();
            let Some(rounds) = rounds else { continue };
            if !measured.is_empty() {
                let predicted: Vec<f64> = rounds.iter().map(|r| r.0).collect();
                row.error_percent = paired_error_percent(&predicted, measured);
            }
            if let Some((ns, prediction)) = median_round(rounds) {
                row.predicted_ns = ns;
                row.prediction = prediction;
            }
        }
        result
            .rows
            .sort_by(|a, b| a.predicted_ns.total_cmp(&b.predicted_ns));
        result.tracked = machines;
    }
    for row in &mut result.rows {
        if let (None, Some(measured)) = (row.error_percent, row.measured_ns) {
            row.error_percent = Some(error_percent(row.predicted_ns, measured));
        }
    }
    Ok(())
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

/// `machine` with its levels and latencies taken from one new sweep of its
/// latency curve's working sets (`millis` each); `machine` itself where the
/// new curve shows no plateau. The fitted costs are kept.
fn remeasured(machine: &Machine, millis: u64) -> Machine {
    let line = machine.caches.first().map_or(64, |c| c.line_bytes) as usize;
    let sizes: Vec<u64> = machine.curve.iter().map(|&(bytes, _)| bytes).collect();
    let curve = latency_sweep(&sizes, line, millis.max(1), 1);
    match measured_levels(&curve, &machine.os_caches) {
        Some((caches, latency_ns)) => Machine {
            caches,
            latency_ns,
            curve,
            ..machine.clone()
        },
        None => machine.clone(),
    }
}

/// The round whose predicted time is the median of `rounds` (the lower
/// middle one of an even count), so that a row's time and misses come from
/// one prediction (and whatever else `T` carries of that round); `None`
/// without rounds.
fn median_round<T>(mut rounds: Vec<(f64, T)>) -> Option<(f64, T)> {
    if rounds.is_empty() {
        return None;
    }
    rounds.sort_by(|a, b| a.0.total_cmp(&b.0));
    let middle = (rounds.len() - 1) / 2;
    Some(rounds.swap_remove(middle))
}

/// Every round's `measure(i)` (at least one round) for each of `count`
/// structures, measured in turn within each round, with
/// `before(round)` run at the start of every round: a structure's rounds
/// are spread over the whole measurement, and neighbours in the list run
/// seconds apart, so a shift in the other guests' load moves them alike
/// instead of landing on whichever structure ran then.
fn interleaved_rounds(
    count: usize,
    rounds: usize,
    mut before: impl FnMut(usize),
    mut measure: impl FnMut(usize) -> f64,
) -> Vec<Vec<f64>> {
    let mut samples = vec![Vec::new(); count];
    for round in 0..rounds.max(1) {
        before(round);
        for (i, times) in samples.iter_mut().enumerate() {
            times.push(measure(i));
        }
    }
    samples
}

/// An SVG scatter plot of predicted against measured ns of every measured
/// row, one colour per trace, with the line where the two are equal.
/// Written by hand: a plot library lays out its text with a font backend
/// (a system font library or a bundled font), which a scatter plot of a
/// few dozen points does not need.
fn scatter_svg(results: &[TraceResult]) -> String {
    const COLOURS: [&str; 6] = [
        "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf",
    ];
    let (width, height, margin) = (640.0, 520.0, 60.0);
    let points: Vec<Vec<(f64, f64)>> = results
        .iter()
        .map(|r| {
            r.rows
                .iter()
                .filter_map(|row| Some((row.measured_ns?, row.predicted_ns)))
                .collect()
        })
        .collect();
    let top = points
        .iter()
        .flatten()
        .map(|&(m, p)| m.max(p))
        .fold(1.0, f64::max);
    // Axis ends on a round number of ns.
    let step = [
        1.0, 2.0, 5.0, 10.0, 20.0, 25.0, 50.0, 100.0, 200.0, 250.0, 500.0, 1000.0,
    ]
    .into_iter()
    .find(|s| top / s <= 8.0)
    .unwrap_or(1000.0);
    let end = (top / step).ceil() * step;
    let x = |ns: f64| margin + ns / end * (width - 2.0 * margin);
    let y = |ns: f64| height - margin - ns / end * (height - 2.0 * margin);
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{}\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">Predicted against \
         measured average lookup time (dependent lookups)</text>\n",
        width / 2.0
    );
    let mut tick = 0.0;
    while tick <= end + 1e-9 {
        svg += &format!(
            "<line x1=\"{0:.1}\" y1=\"{1:.1}\" x2=\"{0:.1}\" y2=\"{2:.1}\" stroke=\"#ddd\"/>\n\
             <line x1=\"{3:.1}\" y1=\"{4:.1}\" x2=\"{5:.1}\" y2=\"{4:.1}\" stroke=\"#ddd\"/>\n\
             <text x=\"{0:.1}\" y=\"{6:.1}\" text-anchor=\"middle\">{7}</text>\n\
             <text x=\"{8:.1}\" y=\"{9:.1}\" text-anchor=\"end\">{7}</text>\n",
            x(tick),
            y(0.0),
            y(end),
            x(0.0),
            y(tick),
            x(end),
            y(0.0) + 18.0,
            tick,
            x(0.0) - 6.0,
            y(tick) + 4.0
        );
        tick += step;
    }
    svg += &format!(
        "<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"black\" \
         stroke-dasharray=\"4 3\"/>\n\
         <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">measured ns</text>\n\
         <text x=\"16\" y=\"{:.1}\" text-anchor=\"middle\" \
         transform=\"rotate(-90 16 {:.1})\">predicted ns</text>\n",
        x(0.0),
        y(0.0),
        x(end),
        y(end),
        width / 2.0,
        height - 16.0,
        height / 2.0,
        height / 2.0
    );
    for (i, (r, pts)) in results.iter().zip(&points).enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        for &(m, p) in pts {
            svg += &format!(
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3.5\" fill=\"{colour}\"/>\n",
                x(m),
                y(p)
            );
        }
        let name = r.path.file_name().map_or_else(
            || r.path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let name = name
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;");
        let ly = margin + 10.0 + 18.0 * i as f64;
        svg += &format!(
            "<circle cx=\"{:.1}\" cy=\"{ly:.1}\" r=\"4\" fill=\"{colour}\"/>\n\
             <text x=\"{:.1}\" y=\"{:.1}\">{name}</text>\n",
            x(0.0) + 14.0,
            x(0.0) + 24.0,
            ly + 4.0
        );
    }
    svg + "</svg>\n"
}

fn evaluate<A: Addr>(
    args: &PredictArgs,
    machine: &Machine,
    rib: &Rib<A>,
    trace: &[A],
    path: &Path,
) -> Result<TraceResult>
where
    TreeNode<A>: Plain,
{
    let summary = checked_summary(rib, trace)?;
    let model = trie_model(rib, &summary)?;
    let mut rows: Vec<Row> = model
        .structures(8, args.max_mib << 20)
        .into_iter()
        .filter_map(|strides| model.predict(&strides, &machine.caches))
        .map(|prediction| Row {
            strides: prediction.strides.clone(),
            predicted_ns: machine.time_ns(&prediction),
            measured_ns: None,
            error_percent: None,
            prediction,
        })
        .collect();
    rows.sort_by(|a, b| a.predicted_ns.total_cmp(&b.predicted_ns));
    Ok(TraceResult {
        path: path.to_path_buf(),
        rows,
        model,
        tracked: Vec::new(),
    })
}

fn report(args: &PredictArgs, machine: &Machine, results: &[TraceResult]) -> Result<bool> {
    let load = load_average();
    let best_predicted = |r: &TraceResult| r.rows[0].clone();
    let best_measured = |r: &TraceResult| {
        r.rows
            .iter()
            .filter(|row| row.measured_ns.is_some())
            .min_by(|a, b| {
                a.measured_ns
                    .unwrap_or(f64::MAX)
                    .total_cmp(&b.measured_ns.unwrap_or(f64::MAX))
            })
            .cloned()
    };
    let errors = |r: &TraceResult, levels: usize| {
        let errs: Vec<f64> = r
            .rows
            .iter()
            .filter(|row| row.strides.len() == levels)
            .filter_map(|row| row.error_percent)
            .collect();
        (!errs.is_empty()).then(|| {
            (
                errs.iter().sum::<f64>() / errs.len() as f64,
                errs.iter().copied().fold(0.0, f64::max),
                errs.len(),
            )
        })
    };
    if args.json {
        for r in results {
            let json = serde_json::json!({
                "trace": r.path.display().to_string(),
                "machine": machine.cpu_model,
                "caches": machine.caches,
                "load_average": load,
                "lookups": r.model.lookups(),
                "best_predicted": best_predicted(r),
                "best_measured": best_measured(r),
                "errors": (1..=3).map(|l| errors(r, l)).collect::<Vec<_>>(),
                "tracked": r.tracked.iter().map(|m| serde_json::json!({
                    "caches": m.caches,
                    "latency_ns": m.latency_ns,
                })).collect::<Vec<_>>(),
                "rows": r.rows.iter().filter(|row| row.measured_ns.is_some()).chain(r.rows.iter().take(args.top)).collect::<Vec<_>>(),
            });
            println!("{json}");
        }
        return Ok(true);
    }
    println!(
        "machine: {} ({}); miss penalties {:.1?} ns; t_trie {:.2} t_tree {:.2} t_const {:.2} ns; \
         tree miss weight {:.2}; load average {load}",
        machine.cpu_model,
        describe(&machine.caches),
        machine.miss_penalties_ns(),
        machine.trie_ns,
        machine.tree_ns,
        machine.const_ns,
        machine.tree_miss_weight
    );
    for r in results {
        println!("\ntrace {}", r.path.display());
        for (round, m) in r.tracked.iter().enumerate() {
            println!("  round {}: {}", round + 1, levels_and_latencies(m));
        }
        println!(
            "  {:<16} {:>10} {:>10} {:>7} {:>6} {:>6} {:>24} {:>9}",
            "structure", "pred ns", "meas ns", "err %", "H", "S", "misses/lookup", "MiB"
        );
        let listed = r.rows.iter().take(args.top).chain(
            r.rows
                .iter()
                .skip(args.top)
                .filter(|row| row.measured_ns.is_some()),
        );
        for row in listed {
            let misses: Vec<String> = row
                .prediction
                .misses
                .iter()
                .map(|m| format!("{m:.2}"))
                .collect();
            println!(
                "  {:<16} {:>10.1} {:>10} {:>7} {:>6.2} {:>6.2} {:>24} {:>9.1}",
                name(&row.strides),
                row.predicted_ns,
                row.measured_ns.map_or("-".into(), |m| format!("{m:.1}")),
                row.error_percent.map_or("-".into(), |e| format!("{e:.1}")),
                row.prediction.trie_visits,
                row.prediction.tree_visits,
                misses.join(" "),
                row.prediction.memory_bytes as f64 / (1 << 20) as f64
            );
        }
        for levels in 1..=3 {
            if let Some((avg, max, n)) = errors(r, levels) {
                println!("  Table 3, {levels}-level tries: average error {avg:.1}%, maximum {max:.1}% over {n} structures");
            }
        }
        let best = best_predicted(r);
        print!(
            "  Table 4: predicted optimum {} at {:.1} ns",
            name(&best.strides),
            best.predicted_ns
        );
        match best_measured(r) {
            Some(m) => println!(
                "; measured optimum {} at {:.1} ns",
                name(&m.strides),
                m.measured_ns.unwrap_or(0.0)
            ),
            None => println!(),
        }
    }
    if results.len() > 1 {
        println!("\nTable 5: % more time on the row's trace with the column trace's predicted optimum (predicted)");
        for r in results {
            let own = best_predicted(r).predicted_ns;
            let cells: Vec<String> = results
                .iter()
                .map(|other| {
                    let strides = best_predicted(other).strides;
                    r.rows
                        .iter()
                        .find(|row| row.strides == strides)
                        .map_or("-".into(), |row| {
                            format!("{:.1}", (row.predicted_ns / own - 1.0) * 100.0)
                        })
                })
                .collect();
            println!("  {:<40} {}", r.path.display(), cells.join("  "));
        }
        if args.measure {
            println!("\nTable 5, measured: % more time on the row's trace with the column trace's predicted optimum than with the row trace's own");
            for r in results {
                let measured = |strides: &[u8]| {
                    r.rows
                        .iter()
                        .find(|row| row.strides == strides)
                        .and_then(|row| row.measured_ns)
                };
                let own = measured(&best_predicted(r).strides);
                let cells: Vec<String> = results
                    .iter()
                    .map(
                        |other| match (measured(&best_predicted(other).strides), own) {
                            (Some(ns), Some(own)) => format!("{:.1}", (ns / own - 1.0) * 100.0),
                            _ => "-".into(),
                        },
                    )
                    .collect();
                println!("  {:<40} {}", r.path.display(), cells.join("  "));
            }
        }
    }
    Ok(true)
}

/// A machine's levels as `L1 32 KiB 1.6 ns, ..., memory 180.0 ns`.
fn levels_and_latencies(machine: &Machine) -> String {
    let mut parts: Vec<String> = machine
        .caches
        .iter()
        .zip(&machine.latency_ns)
        .map(|(c, ns)| format!("L{} {} KiB {ns:.1} ns", c.level, c.size_bytes >> 10))
        .collect();
    if let Some(memory) = machine.latency_ns.get(machine.caches.len()) {
        parts.push(format!("memory {memory:.1} ns"));
    }
    parts.join(", ")
}

/// `--engines`: every candidate layout of the named engines on every trace,
/// predicted (the trace's summary weighting the range view) and measured.
fn predict_engines(
    args: &PredictArgs,
    machine: &Machine,
    v4: &Rib<u32>,
    v6: &Rib<u128>,
) -> Result<bool> {
    let load = load_average();
    if !args.json {
        let fitted: Vec<String> = machine
            .engine_costs
            .iter()
            .map(|(engine, c)| {
                format!(
                    "; {engine}: t_trie {:.2} t_const {:.2} ns",
                    c.trie_ns, c.const_ns
                )
            })
            .collect();
        println!(
            "machine: {} ({}); miss penalties {:.1?} ns; t_trie {:.2} t_const {:.2} ns{}; \
             load average {load}",
            machine.cpu_model,
            describe(&machine.caches),
            machine.miss_penalties_ns(),
            machine.trie_ns,
            machine.const_ns,
            fitted.concat()
        );
    }
    for path in &args.traces {
        let (t4, t6) = traces_of(path)?;
        check_family(machine, &args.machine, path, &t4)?;
        let (rows, tracked) = if !t4.is_empty() {
            engine_rows(args, machine, v4, &t4)?
        } else {
            engine_rows(args, machine, v6, &t6)?
        };
        engine_report(args, path, &load, &rows, &tracked)?;
    }
    Ok(true)
}

/// One layout the model covers: its spec, its prediction, and the built
/// structure its lookups are timed on.
type Layout<A> = (String, Result<Prediction, ModelError>, AutoSnapshot<A>);

/// Every candidate layout of `engines` (`dxr`, `cpe`) for the family, built,
/// with its prediction for the lookups of `view` in `caches`.
fn modelled_layouts<A: AutoFamily>(
    engines: &[String],
    view: &WeightedRanges<A>,
    caches: &[CacheLevel],
    rib: &Rib<A>,
) -> Result<Vec<Layout<A>>> {
    let mut layouts = Vec::new();
    let mut built_specs = Vec::new();
    if engines.iter().any(|e| e == "dxr") {
        for (spec, prediction) in A::direct_predictions(view, caches) {
            let (_, snapshot) = build_candidate::<A>(&spec, rib)?;
            layouts.push((spec, prediction, snapshot));
        }
        built_specs.extend(A::built_direct_candidates());
    }
    if engines.iter().any(|e| e == "cpe") {
        built_specs.extend(A::cpe_candidates());
    }
    for spec in built_specs {
        let ((_, snapshot), prediction) = build_and_predict::<A>(&spec, rib, view, caches)?;
        layouts.push((spec, prediction, snapshot));
    }
    Ok(layouts)
}

/// One candidate layout's prediction and measurement on one trace.
#[derive(Clone, Debug, serde::Serialize)]
struct EngineRow {
    #[serde(flatten)]
    ranked: Ranked,
    /// The median of the measured rounds.
    measured_ns: Option<f64>,
    /// The prediction's error in percent, as [`Row::error_percent`].
    error_percent: Option<f64>,
}

/// The rows of every modelled layout on `trace`, and with `--track` the
/// machine of each measured round ([`remeasured`]); a tracked row is
/// predicted with the round whose prediction is its median
/// ([`tracked_row`]).
fn engine_rows<A: AutoFamily + EngineFamily>(
    args: &PredictArgs,
    machine: &Machine,
    rib: &Rib<A>,
    trace: &[A],
) -> Result<(Vec<EngineRow>, Vec<Machine>)> {
    let summary = checked_summary(rib, trace)?;
    let densities = prefix_densities(rib, &summary);
    let view = weighted_ranges(rib, A::ZERO, A::MAX, Some(&densities));
    let layouts = modelled_layouts(&args.engines, &view, &machine.caches, rib)?;
    let (samples, machines) = measured_rounds(args, machine, layouts.len(), |i| {
        seq_ns(&layouts[i].2, trace, Duration::from_millis(args.millis))
    });
    let mut rows = Vec::new();
    for ((spec, prediction, snapshot), times) in layouts.into_iter().zip(samples) {
        // `times` stays in round order for the pairs.
        let measured = median(&mut times.clone());
        let (ranked, error) = if machines.is_empty() {
            let ranked = Ranked::new(spec, prediction, machine);
            let error = ranked.predicted_ns.map(|p| error_percent(p, measured));
            (ranked, error)
        } else {
            let (ranked, predicted) = tracked_row(spec, &machines, |m| {
                predict_built(&snapshot, &view, &m.caches)
            });
            let error = paired_error_percent(&predicted, &times);
            (ranked, error)
        };
        rows.push(EngineRow {
            ranked,
            measured_ns: Some(measured),
            error_percent: error,
        });
    }
    if rows.is_empty() {
        bail!(
            "no {} layout of {} to model (the engines modelled are dxr and cpe)",
            A::FAMILY,
            args.engines.join(",")
        );
    }
    Ok((rows, machines))
}

/// The row of `spec` predicted once per machine of `rounds` (each round's
/// levels and latencies), kept from the round whose predicted time is the
/// median, and every round's predicted time, in order; a prediction that
/// fails in any round makes the row that error (and no times).
fn tracked_row(
    spec: String,
    rounds: &[Machine],
    mut predict: impl FnMut(&Machine) -> Result<Prediction, ModelError>,
) -> (Ranked, Vec<f64>) {
    let mut timed = Vec::new();
    for m in rounds {
        match predict(m) {
            Ok(p) => timed.push((m.engine_time_ns(engine_of(&spec), &p), (m, p))),
            Err(e) => return (Ranked::new(spec, Err(e), m), Vec::new()),
        }
    }
    let times = timed.iter().map(|t| t.0).collect();
    let ranked = match median_round(timed) {
        Some((_, (m, prediction))) => Ranked::new(spec, Ok(prediction), m),
        None => Ranked::unmodelled(spec),
    };
    (ranked, times)
}

fn engine_report(
    args: &PredictArgs,
    path: &Path,
    load: &str,
    rows: &[EngineRow],
    tracked: &[Machine],
) -> Result<()> {
    let key = |ns: Option<f64>| ns.unwrap_or(f64::INFINITY);
    let pick = rows
        .iter()
        .min_by(|a, b| key(a.ranked.predicted_ns).total_cmp(&key(b.ranked.predicted_ns)));
    let best = rows
        .iter()
        .min_by(|a, b| key(a.measured_ns).total_cmp(&key(b.measured_ns)));
    let errors: Vec<f64> = rows.iter().filter_map(|r| r.error_percent).collect();
    let average = errors.iter().sum::<f64>() / errors.len().max(1) as f64;
    let maximum = errors.iter().copied().fold(0.0, f64::max);
    // How much slower the pick measured than the measured best.
    let pick_penalty = match (
        pick.and_then(|p| p.measured_ns),
        best.and_then(|b| b.measured_ns),
    ) {
        (Some(p), Some(b)) => Some((p / b - 1.0) * 100.0),
        _ => None,
    };
    if args.json {
        let json = serde_json::json!({
            "trace": path.display().to_string(),
            "load_average": load,
            "rows": rows,
            "pick": pick.map(|p| &p.ranked.spec),
            "measured_best": best.map(|b| &b.ranked.spec),
            "pick_slower_than_best_percent": pick_penalty,
            "average_error_percent": average,
            "max_error_percent": maximum,
            "tracked": tracked.iter().map(|m| serde_json::json!({
                "caches": m.caches,
                "latency_ns": m.latency_ns,
            })).collect::<Vec<_>>(),
        });
        println!("{json}");
        return Ok(());
    }
    println!("\ntrace {}", path.display());
    for (round, m) in tracked.iter().enumerate() {
        println!("  round {}: {}", round + 1, levels_and_latencies(m));
    }
    println!(
        "  {:<16} {:>10} {:>10} {:>7} {:>24} {:>9}",
        "engine", "pred ns", "meas ns", "err %", "misses/lookup", "MiB"
    );
    for row in rows {
        let r = &row.ranked;
        let misses: Vec<String> = r.misses.iter().map(|m| format!("{m:.2}")).collect();
        let error = row.error_percent.map_or("-".into(), |e| format!("{e:.1}"));
        println!(
            "  {:<16} {:>10} {:>10} {:>7} {:>24} {:>9.1}",
            r.spec,
            r.predicted_ns.map_or("-".into(), |p| format!("{p:.1}")),
            row.measured_ns.map_or("-".into(), |m| format!("{m:.1}")),
            error,
            r.error.clone().unwrap_or_else(|| misses.join(" ")),
            r.memory_bytes as f64 / (1 << 20) as f64
        );
    }
    println!(
        "  error: average {average:.1}%, maximum {maximum:.1}% over {} layouts",
        errors.len()
    );
    if let (Some(pick), Some(best)) = (pick, best) {
        println!(
            "  model's pick {} (measured {}), measured best {} at {}; the pick is {} slower",
            pick.ranked.spec,
            pick.measured_ns
                .map_or("-".into(), |m| format!("{m:.1} ns")),
            best.ranked.spec,
            best.measured_ns
                .map_or("-".into(), |m| format!("{m:.1} ns")),
            pick_penalty.map_or("-".into(), |p| format!("{p:.1}%"))
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{interleaved_rounds, median_round, tracked_row};
    use fibkit::model::{Machine, ModelError, Prediction};

    #[test]
    fn rounds_measure_every_structure_in_turn() {
        let mut order = Vec::new();
        // Structure i measures 10 i + its round.
        let mut rounds_seen = [0usize; 3];
        let samples = interleaved_rounds(
            3,
            5,
            |_| {},
            |i| {
                order.push(i);
                rounds_seen[i] += 1;
                (10 * i + rounds_seen[i]) as f64
            },
        );
        assert_eq!(order, [0, 1, 2].repeat(5));
        let expected: Vec<Vec<f64>> = (0..3)
            .map(|i| (1..=5).map(|round| (10 * i + round) as f64).collect())
            .collect();
        assert_eq!(samples, expected);
        // Zero rounds still measure once.
        assert_eq!(
            interleaved_rounds(2, 0, |_| {}, |i| i as f64),
            [vec![0.0], vec![1.0]]
        );
    }

    #[test]
    fn each_round_starts_with_its_hook() {
        let events = std::cell::RefCell::new(Vec::new());
        interleaved_rounds(
            2,
            3,
            |round| events.borrow_mut().push(format!("round {round}")),
            |i| {
                events.borrow_mut().push(format!("measure {i}"));
                0.0
            },
        );
        let events = events.into_inner();
        let expected: Vec<String> = (0..3)
            .flat_map(|r| [format!("round {r}"), "measure 0".into(), "measure 1".into()])
            .collect();
        assert_eq!(events, expected);
    }

    #[test]
    fn a_tracked_row_takes_its_median_rounds_prediction() {
        let prediction = |misses: f64| Prediction {
            strides: vec![16],
            trie_visits: 1.0,
            tree_visits: 0.0,
            misses: vec![misses],
            tree_misses: Vec::new(),
            memory_bytes: 0,
        };
        let rounds = vec![
            (30.0, prediction(3.0)),
            (10.0, prediction(1.0)),
            (20.0, prediction(2.0)),
            (40.0, prediction(4.0)),
        ];
        // Four rounds: the lower middle one, time and misses together.
        let (ns, p) = median_round(rounds).unwrap();
        assert_eq!((ns, p.misses), (20.0, vec![2.0]));
        assert!(median_round::<Prediction>(Vec::new()).is_none());
    }

    #[test]
    fn a_tracked_engine_row_is_predicted_with_its_median_round() {
        // Three rounds whose L1 misses cost 30, 10 and 20 ns: the row
        // is the third round's (the median time).
        let machine = |l1_miss_ns: f64| Machine {
            latency_ns: vec![0.0, l1_miss_ns, 100.0],
            ..Machine::paper_pentium_iii()
        };
        let rounds = vec![machine(30.0), machine(10.0), machine(20.0)];
        let prediction = Prediction {
            strides: vec![16],
            trie_visits: 1.0,
            tree_visits: 0.0,
            misses: vec![1.0, 0.0],
            tree_misses: Vec::new(),
            memory_bytes: 0,
        };
        let times: Vec<f64> = rounds
            .iter()
            .map(|m| m.engine_time_ns("dxr", &prediction))
            .collect();
        assert!(times[1] < times[2] && times[2] < times[0], "{times:?}");
        let (row, round_times) =
            tracked_row("dxr:k=16".into(), &rounds, |_| Ok(prediction.clone()));
        assert_eq!(row.predicted_ns, Some(times[2]));
        assert_eq!(row.misses, prediction.misses);
        // Every round's time, in the rounds' order, for the paired error.
        assert_eq!(round_times, times);
        // A round whose prediction fails makes the row that error.
        let mut calls = 0;
        let (row, round_times) = tracked_row("dxr:k=16".into(), &rounds, |_| {
            calls += 1;
            if calls == 2 {
                Err(ModelError::Input("no model".into()))
            } else {
                Ok(prediction.clone())
            }
        });
        assert_eq!(row.predicted_ns, None);
        assert_eq!(row.error.as_deref(), Some("no model"));
        assert!(round_times.is_empty());
    }
}
