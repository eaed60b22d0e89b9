//! Alternating rounds and their summaries: [`interleave`], [`median`],
//! per-round ratios ([`Ratio`]) and the reported [`Measurement`].

use crate::{Mode, Pattern, Run};

/// Runs `rounds` rounds over `configurations` configurations: round 1 of
/// every configuration (`run_one(round, configuration)`, in order), then
/// round 2 of every one, and so on. On a shared machine the load moves one
/// configuration's figure by up to 2x between runs seconds apart; runs in
/// one round share the load of their moment, so comparing them round by
/// round ([`Ratio`]) cancels most of it, where configurations measured one
/// after the other would not. Returns each configuration's results in
/// round order.
pub fn interleave<T>(
    rounds: usize,
    configurations: usize,
    mut run_one: impl FnMut(usize, usize) -> T,
) -> Vec<Vec<T>> {
    let mut results: Vec<Vec<T>> = (0..configurations)
        .map(|_| Vec::with_capacity(rounds))
        .collect();
    for round in 0..rounds {
        for (configuration, runs) in results.iter_mut().enumerate() {
            runs.push(run_one(round, configuration));
        }
    }
    results
}

/// The median of `values`: the middle value, or the mean of the two middle
/// ones for an even count; NaN when empty.
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// One configuration against a baseline measured in the same rounds: the
/// ratio of their runs round by round (each pairs runs seconds apart) and
/// the median of those ratios.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Ratio {
    /// The baseline configuration's name.
    pub baseline: String,
    /// This configuration's Mlps over the baseline's, per round.
    pub rounds: Vec<f64>,
    /// The median of `rounds`.
    pub median: f64,
}

impl Ratio {
    /// The ratios of `runs_mlps` to `baseline_mlps`, round by round (the
    /// shorter list decides how many).
    pub fn new(baseline: impl Into<String>, runs_mlps: &[f64], baseline_mlps: &[f64]) -> Ratio {
        let rounds: Vec<f64> = runs_mlps
            .iter()
            .zip(baseline_mlps)
            .map(|(run, base)| run / base)
            .collect();
        Ratio {
            baseline: baseline.into(),
            median: median(&rounds),
            rounds,
        }
    }
}

/// The result of timing one engine on one key pattern and mode.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Measurement {
    /// Engine spec.
    pub engine: String,
    /// Key pattern name.
    pub pattern: String,
    /// How the lookups were issued.
    pub mode: Mode,
    /// Threads used.
    pub threads: usize,
    /// Keys in the array.
    pub keys: usize,
    /// Mlps of every run, in order (round by round).
    pub runs_mlps: Vec<f64>,
    /// Median Mlps.
    pub median_mlps: f64,
    /// Slowest run.
    pub min_mlps: f64,
    /// Fastest run.
    pub max_mlps: f64,
    /// Nanoseconds per lookup at the median (per thread: threads / median).
    pub ns_per_lookup: f64,
    /// A checksum of the results (same keys and table give the same value for
    /// every correct engine and mode; for `seq` it depends on the chaining too).
    pub checksum: u64,
    /// Against the baseline configuration, when one was chosen.
    pub ratio: Option<Ratio>,
}

impl Measurement {
    /// Summarises the runs of one configuration (in round order; at least
    /// one); the checksum is the first run's.
    pub fn from_runs(
        engine: &str,
        pattern: &Pattern,
        mode: Mode,
        threads: usize,
        keys: usize,
        runs: &[Run],
    ) -> Measurement {
        let runs_mlps: Vec<f64> = runs.iter().map(|run| run.mlps).collect();
        let median_mlps = median(&runs_mlps);
        Measurement {
            engine: engine.to_string(),
            pattern: pattern.name(),
            mode,
            threads,
            keys,
            median_mlps,
            min_mlps: runs_mlps.iter().copied().fold(f64::INFINITY, f64::min),
            max_mlps: runs_mlps.iter().copied().fold(0.0, f64::max),
            ns_per_lookup: 1e3 * threads as f64 / median_mlps,
            checksum: runs.first().map_or(0, |run| run.checksum),
            runs_mlps,
            ratio: None,
        }
    }
}
