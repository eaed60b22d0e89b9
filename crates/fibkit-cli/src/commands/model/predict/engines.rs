//! `fibkit model predict --engines`: every candidate layout of `dxr` and
//! `cpe` predicted and measured on every trace, and the model's pick beside
//! the measured best.

use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Result};

use fibkit::choice::auto::{engine_of, predict_built, AutoFamily, Ranked};
use fibkit::model::machine::describe;
use fibkit::model::summary::{prefix_densities, weighted_ranges};
use fibkit::model::{
    error_percent, median, paired_error_percent, seq_ns, Machine, ModelError, Prediction,
};
use fibkit::registry::EngineFamily;
use fibkit::Rib;

use super::super::common::{
    check_family, checked_summary, levels_and_latencies, load_average, median_round,
    modelled_layouts, traces_of,
};
use super::{measured_rounds, PredictArgs};

/// `--engines`: every candidate layout of the named engines on every trace,
/// predicted (the trace's summary weighting the range view) and measured.
pub(super) fn predict_engines(
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
    use super::tracked_row;
    use fibkit::model::{Machine, ModelError, Prediction};

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
