//! Building, predicting and timing `auto`'s candidates, and the pick.

use super::config::*;
use super::family::AutoFamily;
use super::snapshot::{AutoEngine, AutoSnapshot};

use crate::engine::{BuildError, EngineConfig, Lookup, Updater};
use crate::engines::cpe::{CpeConfig, CpeUpdater};
use crate::model::cpe::predict_cpe;
use crate::model::{CacheLevel, ModelError, Prediction, WeightedRanges};
use crate::rib::Rib;
use crate::summary::uniform_ranges;

/// What `auto` chose and why.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Choice {
    /// The machine the model used.
    pub machine: String,
    /// The lookups modelled and timed: uniform, or the trace's.
    pub lookups: String,
    /// How the pick was made: by measurement or by the model alone.
    pub reason: String,
    /// Every candidate: the timed ones first, best first; then the rest,
    /// fastest predicted first.
    pub ranking: Vec<Ranked>,
}

impl Choice {
    /// The picked candidate.
    pub fn pick(&self) -> &Ranked {
        &self.ranking[0]
    }
}

/// A built candidate: its updater and snapshot.
type Built<A> = (AutoEngine<A>, AutoSnapshot<A>);

/// Builds `spec` as one of `auto`'s engines.
pub fn build_candidate<A: AutoFamily>(spec: &str, rib: &Rib<A>) -> Result<Built<A>, BuildError> {
    if spec.starts_with("cpe") {
        let (updater, trie) = CpeUpdater::build(&CpeConfig::parse(spec)?, rib)?;
        Ok((AutoEngine::Cpe(updater), AutoSnapshot::Cpe(trie)))
    } else {
        let config = <<A::Direct as Updater<A>>::Config as EngineConfig>::parse(spec)?;
        let (updater, snapshot) = A::Direct::build(&config, rib)?;
        Ok((AutoEngine::Direct(updater), AutoSnapshot::Direct(snapshot)))
    }
}

/// Builds `spec` (a `cpe` candidate or one of
/// [`AutoFamily::built_direct_candidates`]) and predicts it for the
/// lookups of `view` in `caches` from the built table.
pub fn build_and_predict<A: AutoFamily>(
    spec: &str,
    rib: &Rib<A>,
    view: &WeightedRanges<A>,
    caches: &[CacheLevel],
) -> Result<(Built<A>, Result<Prediction, ModelError>), BuildError> {
    let built = build_candidate(spec, rib)?;
    let prediction = predict_built(&built.1, view, caches);
    Ok((built, prediction))
}

/// The prediction for a built candidate's lookups of `view` in `caches`:
/// the model walks the built table, so a new set of caches (another
/// round's measured levels) needs no new build.
pub fn predict_built<A: AutoFamily>(
    snapshot: &AutoSnapshot<A>,
    view: &WeightedRanges<A>,
    caches: &[CacheLevel],
) -> Result<Prediction, ModelError> {
    match snapshot {
        AutoSnapshot::Cpe(trie) => predict_cpe(view, trie, caches),
        AutoSnapshot::Direct(table) => A::predict_built_direct(view, table, caches),
    }
}

/// Orders rows by predicted time, rows without a prediction last.
fn by_prediction(a: &Ranked, b: &Ranked) -> std::cmp::Ordering {
    let key = |r: &Ranked| r.predicted_ns.unwrap_or(f64::INFINITY);
    key(a).total_cmp(&key(b))
}

/// The addresses `auto` models and times, and their description.
fn lookups<A: AutoFamily>(
    config: &AutoConfig,
    rib: &Rib<A>,
) -> Result<(WeightedRanges<A>, Vec<A>, String), BuildError> {
    let Some(path) = &config.trace else {
        // The core's own seeded generator: `rand` and the benchmark
        // harness are optional features.
        let mut rng = crate::verify::SplitMix64(MEASURE_SEED);
        let keys = (0..MEASURE_KEYS)
            .map(|_| A::from_u128((u128::from(rng.next()) << 64) | u128::from(rng.next())))
            .collect();
        return Ok((
            uniform_ranges(rib),
            keys,
            "uniformly random addresses".into(),
        ));
    };
    let bad = |why: String| BuildError::BadSpec {
        spec: config.to_string(),
        why: format!("trace {}: {why}", path.display()),
    };
    let trace = crate::trace::read_trace::<A>(path).map_err(|e| bad(e.to_string()))?;
    if trace.is_empty() {
        return Err(bad(format!("no {} address to model or time", A::FAMILY)));
    }
    let summary = crate::summary::TraceSummary::from_trace(rib, &trace);
    if summary.matched() == 0 {
        return Err(bad(format!(
            "none of its {} addresses matches a prefix of the table: a trace of this \
             table's traffic weighs its ranges (`fibkit trace gen TABLE`)",
            trace.len()
        )));
    }
    let densities = crate::summary::prefix_densities(rib, &summary);
    let view = crate::summary::weighted_ranges(rib, A::ZERO, A::MAX, Some(&densities));
    let described = format!("the {} addresses of trace {}", trace.len(), path.display());
    // The measurement replays the trace from its start, repeated when it is
    // shorter than a round.
    let keys = trace.iter().copied().cycle().take(MEASURE_KEYS).collect();
    Ok((view, keys, described))
}

/// Times every built candidate in [`MEASURE_ROUNDS`] alternating rounds,
/// each round one RND pass over `keys` and one SEQ pass over their first
/// [`MEASURE_SEQ_KEYS`]; returns each candidate's median RND and SEQ ns.
fn time_candidates<A: AutoFamily>(built: &[&AutoSnapshot<A>], keys: &[A]) -> Vec<(f64, f64)> {
    let seq_keys = &keys[..keys.len().min(MEASURE_SEQ_KEYS)];
    let mut rounds = vec![(Vec::new(), Vec::new()); built.len()];
    for _ in 0..MEASURE_ROUNDS {
        for (snapshot, (rnd, seq)) in built.iter().zip(rounds.iter_mut()) {
            rnd.push(crate::model::rnd_ns(
                *snapshot,
                keys,
                std::time::Duration::ZERO,
            ));
            seq.push(crate::model::seq_ns(
                *snapshot,
                seq_keys,
                std::time::Duration::ZERO,
            ));
        }
    }
    rounds
        .iter_mut()
        .map(|(rnd, seq)| (crate::model::median(rnd), crate::model::median(seq)))
        .collect()
}

/// Predicts every candidate of `config` on `rib`, times the model's best
/// `config.measure` (and those without a model) and builds the pick.
pub(super) fn choose<A: AutoFamily>(
    config: &AutoConfig,
    rib: &Rib<A>,
) -> Result<(Choice, Built<A>), BuildError> {
    let spec_error = |why: String| BuildError::BadSpec {
        spec: config.to_string(),
        why,
    };
    let (machine, source) = match &config.machine {
        Some(path) => (
            read_machine(path)
                .and_then(|machine| machine.check_family(A::FAMILY).map(|()| machine))
                .map_err(|e| spec_error(e.to_string()))?,
            format!("{} (calibrated)", path.display()),
        ),
        None => (
            default_machine(),
            "caches from sysfs, default latencies (no machine file)".to_string(),
        ),
    };
    let (view, keys, described) = lookups(config, rib)?;
    let mut ranking = Vec::new();
    if config.candidates != Candidates::Cpe {
        ranking.extend(A::direct_candidates(&view, &machine));
        ranking.extend(
            A::timed_direct_candidates()
                .into_iter()
                .map(Ranked::unmodelled),
        );
    }
    // The models of `cpe` and `dxr6` walk the built table; builds are kept
    // for timing.
    let mut builds: Vec<(String, Built<A>)> = Vec::new();
    let mut built_specs = Vec::new();
    if config.candidates != Candidates::Cpe {
        built_specs.extend(A::built_direct_candidates());
    }
    if config.candidates != Candidates::Dxr {
        built_specs.extend(A::cpe_candidates());
    }
    for spec in built_specs {
        match build_and_predict::<A>(&spec, rib, &view, &machine.caches) {
            Ok((built, prediction)) => {
                let ranked = Ranked::new(spec.clone(), prediction, &machine);
                builds.push((spec, built));
                ranking.push(ranked);
            }
            Err(e) => ranking.push(Ranked::new(
                spec,
                Err(ModelError::Input(e.to_string())),
                &machine,
            )),
        }
    }
    ranking.sort_by(by_prediction);
    let no_candidate = |ranking: &[Ranked]| BuildError::Limit {
        engine: config.to_string(),
        why: format!(
            "no candidate could be built and {} ({}); name an engine instead, e.g. `{}`",
            if config.measure == 0 {
                "modelled"
            } else {
                "timed"
            },
            ranking
                .iter()
                .map(|r| format!(
                    "{}: {}",
                    r.spec,
                    r.error.as_deref().unwrap_or("no model (measure=0)")
                ))
                .collect::<Vec<_>>()
                .join("; "),
            crate::choice::default::default_spec(A::FAMILY)
        ),
    };

    if config.measure == 0 {
        // The model alone: the fastest predicted.
        if ranking.first().is_none_or(|r| r.predicted_ns.is_none()) {
            return Err(no_candidate(&ranking));
        }
        let pick = ranking[0].spec.clone();
        let built = match builds.into_iter().find(|(spec, _)| *spec == pick) {
            Some((_, built)) => built,
            None => build_candidate(&pick, rib)?,
        };
        let choice = Choice {
            machine: source,
            lookups: described,
            reason: "fastest predicted (measure=0: nothing timed)".into(),
            ranking,
        };
        return Ok((choice, built));
    }

    // The model's best `measure` predicted, and every candidate without a
    // model, are built and timed.
    let mut predicted_left = config.measure;
    let mut timed: Vec<(Ranked, Built<A>)> = Vec::new();
    let mut rest = Vec::new();
    for mut ranked in ranking {
        let wanted = ranked.timeable() && (ranked.predicted_ns.is_none() || predicted_left > 0);
        if !wanted {
            rest.push(ranked);
            continue;
        }
        let built = match builds.iter().position(|(spec, _)| *spec == ranked.spec) {
            Some(i) => Ok(builds.swap_remove(i).1),
            None => build_candidate(&ranked.spec, rib),
        };
        match built {
            Ok(built) => {
                if ranked.predicted_ns.is_some() {
                    predicted_left -= 1;
                } else {
                    // A row without a model still says how large it is.
                    ranked.memory_bytes = built.1.memory_bytes() as u64;
                }
                timed.push((ranked, built));
            }
            Err(e) => {
                ranked.error = Some(e.to_string());
                rest.push(ranked);
            }
        }
    }
    // Builds of candidates not timed are freed before the timing.
    drop(builds);
    if timed.is_empty() {
        rest.sort_by(by_prediction);
        return Err(no_candidate(&rest));
    }
    let snapshots: Vec<&AutoSnapshot<A>> = timed.iter().map(|(_, (_, s))| s).collect();
    let times = time_candidates(&snapshots, &keys);
    let best_rnd = times.iter().map(|t| t.0).fold(f64::INFINITY, f64::min);
    let best_seq = times.iter().map(|t| t.1).fold(f64::INFINITY, f64::min);
    // Each candidate's slowdown against the fastest for the pattern; for
    // both, the worse of the two, so the pick is never further from the
    // best of either than it must be.
    let pattern = config.pattern;
    let slowdown = |(rnd, seq): (f64, f64)| match pattern {
        PickFor::Rnd => rnd / best_rnd,
        PickFor::Seq => seq / best_seq,
        PickFor::Both => (rnd / best_rnd).max(seq / best_seq),
    };
    let mut scored: Vec<(f64, Ranked, Built<A>)> = timed
        .into_iter()
        .zip(times)
        .map(|((mut ranked, built), time)| {
            ranked.measured_rnd_ns = Some(time.0);
            ranked.measured_seq_ns = Some(time.1);
            (slowdown(time), ranked, built)
        })
        .collect();
    // Stable: among equal slowdowns the model's order stands.
    scored.sort_by(|a, b| a.0.total_cmp(&b.0));
    let count = scored.len();
    let band = scored[0].0 * (1.0 + TIE_BAND);
    let tied = scored.iter().take_while(|s| s.0 <= band).count();
    let predicted: Vec<f64> = scored[..tied]
        .iter()
        .map(|s| s.1.predicted_ns.unwrap_or(f64::INFINITY))
        .collect();
    let model_pick = (0..tied).min_by(|&a, &b| predicted[a].total_cmp(&predicted[b]));
    let tie_note = match model_pick {
        Some(i) if i > 0 && predicted[i].is_finite() => {
            let chosen = scored.remove(i);
            scored.insert(0, chosen);
            format!(
                "; {tied} timed within {:.0}% of the fastest, so the model's fastest of \
                 those ({:.1} ns predicted)",
                TIE_BAND * 100.0,
                predicted[i]
            )
        }
        _ => String::new(),
    };
    let mut scored = scored.into_iter();
    let (worst_ratio, pick, built) = scored.next().expect("at least one candidate was timed");
    let reason = format!(
        "fastest of {count} timed for {} ({} rounds of {} RND and {} SEQ lookups): {:.1} ns \
         RND, {:.1} ns SEQ, {:.2}x the time of the fastest{}{tie_note}",
        match pattern {
            PickFor::Rnd => "independent lookups",
            PickFor::Seq => "dependent lookups",
            PickFor::Both => "independent and dependent lookups",
        },
        MEASURE_ROUNDS,
        keys.len(),
        keys.len().min(MEASURE_SEQ_KEYS),
        pick.measured_rnd_ns.unwrap_or(f64::NAN),
        pick.measured_seq_ns.unwrap_or(f64::NAN),
        worst_ratio,
        if pattern == PickFor::Both {
            " of each, at worst"
        } else {
            ""
        }
    );
    let mut ranking = vec![pick];
    ranking.extend(scored.map(|(_, ranked, _)| ranked));
    rest.sort_by(by_prediction);
    ranking.extend(rest);
    let choice = Choice {
        machine: source,
        lookups: described,
        reason,
        ranking,
    };
    Ok((choice, built))
}
