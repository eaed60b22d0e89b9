//! The performance model of Narlikar and Zane, "Performance Modeling for
//! Fast IP Lookups" (SIGMETRICS 2001), section 4, for fibkit's `levels`
//! engine: from a table, a trace summary and a machine's caches it predicts
//! the average lookup time of every levelled trie with search-tree leaves.
//!
//! - [`summary`]: per-prefix lookup counts of a trace, and the weight of
//!   every range of the table they imply.
//! - [`predict`]: one pass over the binary trie, then access counts,
//!   Equation 2 misses per cache level, H and S for any stride vector.
//! - [`machine`]: caches from the OS, pointer-chase latencies, the fitted
//!   costs, Equation 1 and the machine file. Equation 1 charges tree-node
//!   misses at a fitted weight ([`Machine::tree_miss_weight`]; 1 is the
//!   paper's form): a branching tree search lets the core load the
//!   predicted child early, which a trie walk cannot.
//! - [`dxr`], [`dxr6`] and [`cpe`]: the same method for `dxr:k=K`, `dxr6`
//!   and `cpe:levels=N`, counting the cache lines of their flat arrays a
//!   lookup reads.
//! - [`auto`]: the `auto` engine, which builds the candidate the model
//!   predicts fastest for uniformly random lookups on the given table.

mod access;
pub mod cpe;
pub mod dxr;
pub mod dxr6;
pub mod machine;
pub mod predict;

pub use crate::error::ModelError;
pub use crate::summary::{self, TraceSummary, WeightedRanges};
pub use machine::{CacheLevel, Machine};
pub use predict::{Prediction, TrieModel};

use crate::addr::Addr;
use crate::engine::{BuildError, Lookup};
use crate::engines::levels::{LevelsConfig, LevelsUpdater, TreeNode};
use crate::prefix::Label;
use crate::rib::Rib;
use crate::storage::Plain;

/// The model of `rib` under the lookups of `summary`: the pass over the
/// binary trie to the depth three widest strides reach.
pub fn trie_model<A: Addr>(
    rib: &Rib<A>,
    summary: &TraceSummary<A>,
) -> Result<TrieModel, ModelError> {
    if rib.is_empty() {
        return Err(ModelError::Input(
            "the table is empty: nothing to model".into(),
        ));
    }
    let densities = summary::prefix_densities(rib, summary);
    if densities.values().all(|&d| d == 0.0) {
        return Err(ModelError::Input(format!(
            "the trace matches no prefix of the table ({} lookups, {} unmatched): \
             summarise a trace of this table's addresses",
            summary.lookups, summary.unmatched
        )));
    }
    let view = summary::weighted_ranges(rib, A::ZERO, A::MAX, Some(&densities));
    let depth = 3 * crate::engines::levels::MAX_STRIDE as u32;
    Ok(TrieModel::new(&view, depth))
}

/// Builds `levels` with `strides`, its trees weighted by `summary`.
pub fn build_levels<A: Addr>(
    rib: &Rib<A>,
    summary: &TraceSummary<A>,
    strides: &[u8],
) -> Result<crate::engines::levels::Levels<A>, BuildError>
where
    TreeNode<A>: Plain,
{
    let densities = summary::prefix_densities(rib, summary);
    let config = LevelsConfig::with_strides(strides);
    let (_, snapshot) = LevelsUpdater::build_weighted(&config, rib, Some(densities))?;
    Ok(snapshot)
}

/// Average ns per dependent lookup (the SEQ pattern: each address XORed
/// with the previous label) over `trace`, passes repeated for at least
/// `min`: the latency Equation 1 predicts.
///
/// Each pass is timed in chunks of [`CHUNK_LOOKUPS`] and the median chunk
/// is kept: on a shared machine a chunk the scheduler interrupted is an
/// outlier the median ignores, where a mean over the pass would count the
/// other processes' time slices.
pub fn seq_ns<A: Addr, L: Lookup<A> + ?Sized>(
    engine: &L,
    trace: &[A],
    min: std::time::Duration,
) -> f64 {
    let mut previous = 0;
    let ns = median_chunk_ns(trace, min, |chunk, out| {
        previous = engine.lookup_chained(chunk, out, previous);
    });
    std::hint::black_box(previous);
    ns
}

/// Average ns per independent lookup (the RND pattern: the engine's
/// per-key loop over `keys`), passes repeated for at least `min`; the
/// median of [`CHUNK_LOOKUPS`]-lookup chunks as in [`seq_ns`].
pub fn rnd_ns<A: Addr, L: Lookup<A> + ?Sized>(
    engine: &L,
    keys: &[A],
    min: std::time::Duration,
) -> f64 {
    median_chunk_ns(keys, min, |chunk, out| {
        engine.lookup_each(chunk, out);
        std::hint::black_box(&*out);
    })
}

/// Passes of `lookups` over `keys` in chunks of [`CHUNK_LOOKUPS`], repeated
/// for at least `min`: the median ns per lookup of the timed chunks.
fn median_chunk_ns<A: Addr>(
    keys: &[A],
    min: std::time::Duration,
    mut lookups: impl FnMut(&[A], &mut [Option<Label>]),
) -> f64 {
    let mut out = vec![None; CHUNK_LOOKUPS];
    let mut chunk_ns = Vec::new();
    let start = std::time::Instant::now();
    loop {
        for chunk in keys.chunks(CHUNK_LOOKUPS) {
            let begun = std::time::Instant::now();
            lookups(chunk, &mut out);
            chunk_ns.push(begun.elapsed().as_nanos() as f64 / chunk.len() as f64);
        }
        if start.elapsed() >= min || chunk_ns.is_empty() {
            break;
        }
    }
    median(&mut chunk_ns)
}

/// Dependent lookups timed together in [`seq_ns`] (tens of microseconds:
/// shorter than a scheduler time slice, long against the clock's cost).
pub const CHUNK_LOOKUPS: usize = 1024;

/// The median of `values` (0 for none); sorts them.
pub fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Percentage error of `predicted` against `measured`.
pub fn error_percent(predicted: f64, measured: f64) -> f64 {
    (predicted - measured).abs() / measured * 100.0
}

/// Percentage error of predictions against measurements taken in pairs
/// (round `i` predicted with the levels and latencies measured just before
/// round `i` was timed): the error of the median of the rounds'
/// `predicted / measured` ratios, as the ratios between engines are the
/// median of per-round ratios. On a machine whose share of the caches
/// moves within minutes, a round's prediction and its measurement see the
/// same machine, where the medians of each, taken apart, may come from
/// rounds minutes apart. `None` without a pair (or with a measurement of
/// zero).
pub fn paired_error_percent(predicted: &[f64], measured: &[f64]) -> Option<f64> {
    let mut ratios: Vec<f64> = predicted
        .iter()
        .zip(measured)
        .filter(|&(_, &m)| m > 0.0)
        .map(|(&p, &m)| p / m)
        .collect();
    (!ratios.is_empty()).then(|| (median(&mut ratios) - 1.0).abs() * 100.0)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::CacheLevel;

    /// One level of cache, 32 KiB 8-way with 64-byte lines: the machine of
    /// the models' hand-worked tests.
    pub(crate) fn l1() -> Vec<CacheLevel> {
        vec![CacheLevel {
            level: 1,
            size_bytes: 32 << 10,
            ways: 8,
            line_bytes: 64,
        }]
    }

    /// Rounds where the machine and the lookups slowed down together: each
    /// round's prediction is 10% high, while the medians of the two,
    /// taken apart, come from different rounds.
    #[test]
    fn paired_errors_take_the_median_of_the_rounds_ratios() {
        let predicted = [11.0, 22.0, 44.0];
        let measured = [10.0, 20.0, 40.0];
        let paired = super::paired_error_percent(&predicted, &measured).unwrap();
        assert!((paired - 10.0).abs() < 1e-9, "{paired}");
        // One round's lookups slowed by a neighbour after its levels were
        // measured: the medians taken apart (33 and 40 ns) give 17.5%, the
        // pairs keep the other rounds' 10%.
        let predicted = [11.0, 22.0, 33.0, 44.0, 55.0];
        let measured = [10.0, 20.0, 30.0, 150.0, 50.0];
        let paired = super::paired_error_percent(&predicted, &measured).unwrap();
        assert!((paired - 10.0).abs() < 1e-9, "{paired}");
        assert!((super::error_percent(33.0, 40.0) - 17.5).abs() < 1e-9);
        // Underestimates count as much as overestimates.
        let paired = super::paired_error_percent(&[9.0], &[10.0]).unwrap();
        assert!((paired - 10.0).abs() < 1e-9, "{paired}");
        // No pair, or only measurements of zero: no error.
        assert_eq!(super::paired_error_percent(&[], &[]), None);
        assert_eq!(super::paired_error_percent(&[1.0], &[0.0]), None);
    }
}
