//! What the `fibkit model` commands share: traces and their summaries, the
//! machine's levels, the candidate layouts of the engines with a model, and
//! measurements in interleaved rounds.

use std::path::Path;

use anyhow::{bail, Context, Result};

use fibkit::choice::auto::{build_and_predict, build_candidate, AutoFamily, AutoSnapshot};
use fibkit::model::machine::{latency_sweep, measured_levels};
use fibkit::model::{CacheLevel, Machine, ModelError, Prediction, TraceSummary, WeightedRanges};
use fibkit::{Addr, Family, Rib};

pub(super) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// The addresses of the trace at `path` for the family the table has.
pub(super) fn traces_of(path: &Path) -> Result<(Vec<u32>, Vec<u128>)> {
    let v4 = fibkit::trace::read_trace::<u32>(path)?;
    let v6 = fibkit::trace::read_trace::<u128>(path)?;
    if v4.is_empty() && v6.is_empty() {
        bail!("{}: no addresses in the trace", path.display());
    }
    Ok((v4, v6))
}

pub(super) fn checked_summary<A: Addr>(rib: &Rib<A>, trace: &[A]) -> Result<TraceSummary<A>> {
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

/// The family a trace's lookups are of, given its IPv4 addresses `v4`:
/// IPv4 when it has any, as calibration and prediction take it.
pub(super) fn trace_family(v4: &[u32]) -> Family {
    if v4.is_empty() {
        Family::V6
    } else {
        Family::V4
    }
}

/// Checks that `machine`'s costs were fitted on the family of the trace at
/// `trace` ([`trace_family`] of its IPv4 addresses `v4`).
pub(super) fn check_family(machine: &Machine, file: &Path, trace: &Path, v4: &[u32]) -> Result<()> {
    machine
        .check_family(trace_family(v4))
        .with_context(|| format!("{} with the trace {}", file.display(), trace.display()))
}

/// A machine's levels as `L1 32 KiB 1.6 ns, ..., memory 180.0 ns`.
pub(super) fn levels_and_latencies(machine: &Machine) -> String {
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

/// One layout the model covers: its spec, its prediction, and the built
/// structure its lookups are timed on.
pub(super) type Layout<A> = (String, Result<Prediction, ModelError>, AutoSnapshot<A>);

/// Every candidate layout of `engines` (`dxr`, `cpe`) for the family, built,
/// with its prediction for the lookups of `view` in `caches`.
pub(super) fn modelled_layouts<A: AutoFamily>(
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

/// `machine` with its levels and latencies taken from one new sweep of its
/// latency curve's working sets (`millis` each); `machine` itself where the
/// new curve shows no plateau. The fitted costs are kept.
pub(super) fn remeasured(machine: &Machine, millis: u64) -> Machine {
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
pub(super) fn median_round<T>(mut rounds: Vec<(f64, T)>) -> Option<(f64, T)> {
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
pub(super) fn interleaved_rounds(
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

#[cfg(test)]
mod tests {
    use super::{interleaved_rounds, median_round};
    use fibkit::model::Prediction;

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
}
