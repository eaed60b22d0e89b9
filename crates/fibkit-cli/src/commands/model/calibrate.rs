//! `fibkit model calibrate`: this machine's cache levels and latencies from
//! a pointer-chase curve, and the model's costs fitted to measured lookups.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;

use fibkit::choice::auto::{engine_of, AutoFamily};
use fibkit::engines::levels::TreeNode;
use fibkit::model::machine::{
    cpu_model, curve_sizes, describe, fit_nonnegative, latency_curve, measured_levels, os_caches,
    relative_rows, EngineCosts,
};
use fibkit::model::summary::{prefix_densities, weighted_ranges};
use fibkit::model::{build_levels, seq_ns, trie_model, Machine};
use fibkit::registry::EngineFamily;
use fibkit::storage::Plain;
use fibkit::{Addr, Rib};

use super::common::{checked_summary, load_average, modelled_layouts, trace_family, traces_of};
use crate::table::{load_table, TableArgs};

/// Arguments of `fibkit model calibrate`.
#[derive(Args, Debug)]
pub struct CalibrateArgs {
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

/// Runs `fibkit model calibrate`.
pub fn run(args: &CalibrateArgs) -> Result<bool> {
    let CalibrateArgs {
        table,
        trace,
        out,
        millis,
    } = args;
    let millis = *millis;
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
