//! The `levels` structures of `fibkit model predict`: every structure
//! predicted per trace, the optima (the paper's Tables 4 and 5), and with
//! `--measure` predicted against measured times (Table 3, Figures 7-9).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use fibkit::engines::levels::TreeNode;
use fibkit::load::LoadedTable;
use fibkit::model::machine::describe;
use fibkit::model::{
    build_levels, error_percent, median, paired_error_percent, seq_ns, trie_model, Machine,
    Prediction, TrieModel,
};
use fibkit::storage::Plain;
use fibkit::{Addr, Rib};

use super::super::common::{
    check_family, checked_summary, levels_and_latencies, load_average, median_round, traces_of,
};
use super::{measured_rounds, PredictArgs};

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

/// The `levels` structures predicted (and with `--measure` measured) on
/// every trace, and the report.
pub(super) fn predict_levels(
    args: &PredictArgs,
    machine: &Machine,
    table: &LoadedTable,
) -> Result<bool> {
    if args.svg.is_some() && !args.measure {
        bail!("--svg plots predicted against measured times: add --measure");
    }
    let mut results = Vec::new();
    for path in &args.traces {
        let (v4, v6) = traces_of(path)?;
        check_family(machine, &args.machine, path, &v4)?;
        results.push(if !v4.is_empty() {
            evaluate(args, machine, &table.v4, &v4, path)?
        } else {
            evaluate(args, machine, &table.v6, &v6, path)?
        });
    }
    if args.measure {
        // Every trace's predicted optimum is measured on every trace, for
        // the measured Table 5.
        let optima: Vec<Vec<u8>> = results.iter().map(|r| r.rows[0].strides.clone()).collect();
        for result in &mut results {
            let (v4, v6) = traces_of(&result.path)?;
            if !v4.is_empty() {
                measure_rows(args, machine, &table.v4, &v4, result, &optima)?;
            } else {
                measure_rows(args, machine, &table.v6, &v6, result, &optima)?;
            }
        }
    }
    if let Some(svg) = &args.svg {
        std::fs::write(svg, scatter_svg(&results))
            .with_context(|| format!("writing {}", svg.display()))?;
    }
    report(args, machine, &results)
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
