//! `auto`: the engine the performance model picks for the table at hand.
//!
//! `auto[:machine=FILE][,candidates=dxr|cpe][,trace=FILE][,measure=N|all]
//! [,pattern=rnd|seq|both]` predicts, with the models of [`super::dxr`] and
//! [`super::cpe`] (Narlikar and Zane §4: access counts per cache line,
//! Equation 2 misses, Equation 1 time), the average dependent lookup time of
//! every candidate, then builds the `N` fastest predicted (default: every
//! candidate) and every candidate without a model, times each on the table
//! in alternating rounds (independent lookups, RND, and dependent ones,
//! SEQ), and keeps the fastest for `pattern`: `rnd` or `seq` the fastest of
//! that pattern, `both` (the default) the one whose worse ratio to the
//! fastest of each pattern is smallest. `measure=0` keeps the fastest
//! predicted without timing anything (a build that depends on nothing but
//! the table and the machine file).
//!
//! Why both: the model ranks the layouts from their cache behaviour alone
//! and explains them (misses per level, bytes); its order among layouts a
//! few tens of percent apart is not reliable (on dfz-v4-nh with the default
//! latencies it ranks `dxr:k=20`, the fastest on RND, seventh of ten:
//! docs/bench/model.md, "The performance model"). Timing every candidate
//! costs about 0.3 s of a 2–3 s build (the `cpe` candidates are built for
//! the model anyway), so it is the default; `measure=N` times only the
//! model's best `N`.
//!
//! Why `pattern`: no single layout need be the fastest of both patterns.
//! On dfz-v4-nh `dxr:k=20` is the fastest on independent lookups and 0.6x
//! the fastest on dependent ones (`dxr:k=17`, 0.8x on RND): `both` then
//! picks the layout in between, within about 0.87x of each; a program that
//! knows its lookups are independent (packets of a batch) says
//! `pattern=rnd`.
//!
//! Lookups: uniformly random addresses, or with `trace=FILE` (a trace of
//! `fibkit trace gen` or one address per line) the trace's addresses: the
//! model weighs each range by the trace's lookups in it and the measurement
//! replays the trace. Without a trace each range of the table's range
//! view gets lookups in proportion to its size.
//!
//! Candidates:
//! ```text
//! IPv4   dxr:k=16 .. dxr:k=22            (candidates=dxr)
//!        dxr:d=16,x=3, dxr:d=16,x=4      (candidates=dxr; timed, no model)
//!        cpe:levels=2, 3, 4              (candidates=cpe)
//! IPv6   dxr6, dxr6:k=12, dxr6:k=20, dxr6:density=8   (candidates=dxr)
//!        cpe                             (candidates=cpe)
//! ```
//! The `cpe` and `dxr6` models walk the built table, so each of their
//! candidates is built once to be predicted; `dxr` is predicted from the
//! range view alone and built only when it is timed. The two-level `dxr`
//! layouts (Zec's D16X3R and D16X4R) have no model: they are always
//! timed, never picked by the model alone (`measure=0`). They are there
//! for dependent lookups: a 256 KiB direct table and small second-level
//! blocks stay in cache where the one-level tables do not, which made
//! them the fastest on SEQ on both machines measured and `dxr:d=16,x=4`
//! the layout nearest the fastest of both patterns on one of them
//! (docs/bench/model.md, "Two-level DXR layouts and `pattern=both`").
//!
//! Machine: `machine=FILE` reads a file of `fibkit model calibrate`, refused
//! when it was made by another version or on another CPU or cache
//! hierarchy, or fitted its costs on lookups of the other family
//! ([`Machine::check_family`]). Without one the model takes this machine's caches from sysfs
//! (or, where sysfs has none, [`fallback_caches`]) and the latencies and
//! per-read costs of [`DEFAULT_LATENCY_NS`]: round figures for a current
//! x86-64 server, not a measurement of this machine; calibrate for that.
//!
//! The snapshot is the picked engine's own ([`AutoSnapshot`]: one `match`
//! per key, or per slice for batches); updates go to the picked engine's
//! updater, and a rebuild runs the model again. `fibkit stats --engine
//! auto` prints the pick, its predicted time and the whole ranking.

use std::fmt;
use std::path::{Path, PathBuf};

use super::cpe::predict_cpe;
use super::dxr::predict_dxr;
use super::dxr6::predict_dxr6;
use super::machine::{cpu_model, os_caches};
use super::summary::uniform_ranges;
use super::{CacheLevel, Machine, ModelError, Prediction, WeightedRanges};
use crate::addr::Addr;
use crate::engine::{BuildError, EngineConfig, EngineStats, Lookup, Updater};
use crate::engines::cpe::{CpeConfig, CpeTrie, CpeUpdater};
use crate::engines::dxr::{DxrConfig, DxrUpdater};
use crate::engines::dxr6::Dxr6Updater;
use crate::prefix::{Label, Prefix};
use crate::rib::Rib;
use crate::spec::EngineSpec;

/// Load-to-use latencies (ns) of a hit in L1, L2, L3 and of memory assumed
/// without a machine file, then `t_trie` and `t_const`: round figures for a
/// current x86-64 server (not measured here; `fibkit model calibrate`
/// measures them). Caches beyond three levels reuse the L3 figure.
pub const DEFAULT_LATENCY_NS: [f64; 4] = [1.0, 4.0, 15.0, 90.0];
/// `t_trie` without a machine file: the cost of one dependent read that
/// hits L1, address arithmetic included (round figure, not measured).
pub const DEFAULT_READ_NS: f64 = 1.5;
/// `t_const` without a machine file (round figure, not measured).
pub const DEFAULT_CONST_NS: f64 = 2.0;

/// DXR's `K` values `auto` considers on IPv4.
pub const DXR_K: std::ops::RangeInclusive<u32> = 16..=22;
/// Two-level DXR layouts `auto` times on IPv4 (no model covers them).
pub const DXR_TWO_LEVEL: [&str; 2] = ["dxr:d=16,x=3", "dxr:d=16,x=4"];
/// CPE level counts `auto` considers on IPv4.
pub const CPE_LEVELS_V4: [u8; 3] = [2, 3, 4];
/// `dxr6` layouts `auto` considers on IPv6: the default, a smaller and a
/// larger root, and denser nodes (fewer node levels, about 2.4x the
/// memory on dfz-v6-nh).
pub const DXR6_CANDIDATES: [&str; 4] = ["dxr6", "dxr6:k=12", "dxr6:k=20", "dxr6:density=8"];

/// `measure=all`, the default: every candidate is timed.
pub const MEASURE_ALL: usize = usize::MAX;
/// The largest count `measure=N` takes (more than any family has
/// candidates).
pub const MEASURE_MAX: usize = 16;
/// Independent (RND) lookups per candidate and round: 2 MiB of IPv4 keys,
/// enough that the lines they touch in a large table do not all stay in
/// the cache between rounds.
pub const MEASURE_KEYS: usize = 1 << 19;
/// Dependent (SEQ) lookups per candidate and round (each waits for the
/// previous one, so they cost a few times more each).
pub const MEASURE_SEQ_KEYS: usize = 1 << 16;
/// Alternating rounds: each round times every candidate once, and each
/// candidate keeps its median round.
pub const MEASURE_ROUNDS: usize = 3;
/// Candidates whose measured slowdowns are within this fraction of the
/// fastest's are not told apart by the timing: the same candidate's
/// median moves by 3-5% between builds of `auto` on one table
/// (docs/bench/auto.md, "`auto` with a model of `dxr6`"), so among them the
/// model's fastest predicted is kept.
pub const TIE_BAND: f64 = 0.05;
/// Seed of the uniformly random keys `auto` times without a trace.
pub const MEASURE_SEED: u64 = 0x6175_746f; // "auto"

/// Which engines `auto` chooses among.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Candidates {
    /// `dxr` and `cpe` (the default).
    Both,
    /// `dxr` only (IPv4).
    Dxr,
    /// `cpe` only.
    Cpe,
}

/// The lookups `auto` picks the fastest engine for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PickFor {
    /// Independent lookups (RND: a batch of packets).
    Rnd,
    /// Dependent lookups (SEQ: each waits for the previous answer).
    Seq,
    /// Both: the smallest worse ratio to the fastest of each (the default).
    Both,
}

/// `auto[:machine=FILE][,candidates=dxr|cpe][,trace=FILE][,measure=N|all]
/// [,pattern=rnd|seq|both]` (`candidates=dxr` or `candidates=cpe` for one
/// family of engines).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AutoConfig {
    /// A machine file of `fibkit model calibrate` (`None`: sysfs caches and
    /// the default latencies).
    pub machine: Option<PathBuf>,
    /// The engines to choose among.
    pub candidates: Candidates,
    /// A trace whose lookups the model weighs and the measurement replays
    /// (`None`: uniformly random addresses).
    pub trace: Option<PathBuf>,
    /// How many of the model's fastest predicted candidates are built and
    /// timed (0: the model alone picks; [`MEASURE_ALL`]: every one).
    pub measure: usize,
    /// The lookups the timed pick is fastest for.
    pub pattern: PickFor,
}

impl Default for AutoConfig {
    fn default() -> Self {
        AutoConfig {
            machine: None,
            candidates: Candidates::Both,
            trace: None,
            measure: MEASURE_ALL,
            pattern: PickFor::Both,
        }
    }
}

impl fmt::Display for AutoConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut params = Vec::new();
        if let Some(path) = &self.machine {
            params.push(format!("machine={}", path.display()));
        }
        match self.candidates {
            Candidates::Both => {}
            Candidates::Dxr => params.push("candidates=dxr".into()),
            Candidates::Cpe => params.push("candidates=cpe".into()),
        }
        if let Some(path) = &self.trace {
            params.push(format!("trace={}", path.display()));
        }
        if self.measure != MEASURE_ALL {
            params.push(format!("measure={}", self.measure));
        }
        match self.pattern {
            PickFor::Both => {}
            PickFor::Rnd => params.push("pattern=rnd".into()),
            PickFor::Seq => params.push("pattern=seq".into()),
        }
        if params.is_empty() {
            write!(f, "auto")
        } else {
            write!(f, "auto:{}", params.join(","))
        }
    }
}

impl EngineConfig for AutoConfig {
    const NAMES: &'static [&'static str] = &["auto"];

    fn from_spec(spec: &EngineSpec) -> Result<Self, BuildError> {
        spec.expect_only(&["machine", "candidates", "trace", "measure", "pattern"])?;
        let mut config = AutoConfig::default();
        for (key, value) in &spec.params {
            let value = value
                .as_deref()
                .ok_or_else(|| spec.error(format!("`{key}` needs a value")))?;
            match key.as_str() {
                "machine" => config.machine = Some(PathBuf::from(value)),
                "trace" => config.trace = Some(PathBuf::from(value)),
                "measure" if value == "all" => config.measure = MEASURE_ALL,
                "measure" => {
                    config.measure = value
                        .parse()
                        .ok()
                        .filter(|n| *n <= MEASURE_MAX)
                        .ok_or_else(|| {
                            spec.error(format!(
                                "`measure={value}` is not `all` or a count of candidates from \
                                 0 to {MEASURE_MAX}"
                            ))
                        })?
                }
                "pattern" => {
                    config.pattern = match value {
                        "rnd" => PickFor::Rnd,
                        "seq" => PickFor::Seq,
                        "both" => PickFor::Both,
                        _ => {
                            return Err(
                                spec.error(format!("`pattern={value}` is not rnd, seq or both"))
                            )
                        }
                    }
                }
                _ => {
                    config.candidates = match value {
                        "dxr" => Candidates::Dxr,
                        "cpe" => Candidates::Cpe,
                        "dxr|cpe" | "cpe|dxr" => Candidates::Both,
                        _ => {
                            return Err(spec
                                .error(format!("`candidates={value}` is not dxr, cpe or dxr|cpe")))
                        }
                    }
                }
            }
        }
        Ok(config)
    }
}

/// The caches assumed where sysfs lists none: 32 KiB 8-way L1, 1 MiB
/// 16-way L2, 32 MiB 16-way L3, 64-byte lines.
pub fn fallback_caches() -> Vec<CacheLevel> {
    [(1, 32 << 10, 8), (2, 1 << 20, 16), (3, 32 << 20, 16)]
        .into_iter()
        .map(|(level, size_bytes, ways)| CacheLevel {
            level,
            size_bytes,
            ways,
            line_bytes: 64,
        })
        .collect()
}

/// This machine with the default latencies (see [`DEFAULT_LATENCY_NS`]).
pub fn default_machine() -> Machine {
    let caches = os_caches().unwrap_or_else(|_| fallback_caches());
    let mut latency_ns: Vec<f64> = (0..caches.len())
        .map(|i| DEFAULT_LATENCY_NS[i.min(2)])
        .collect();
    latency_ns.push(DEFAULT_LATENCY_NS[3]);
    Machine {
        version: super::machine::MACHINE_VERSION,
        cpu_model: cpu_model(),
        os_caches: caches.clone(),
        caches,
        latency_ns,
        curve: Vec::new(),
        trie_ns: DEFAULT_READ_NS,
        tree_ns: DEFAULT_READ_NS,
        const_ns: DEFAULT_CONST_NS,
        tree_miss_weight: 1.0,
        engine_costs: Default::default(),
        family: None,
    }
}

/// Reads the machine file at `path` and checks it was made on this
/// machine by this version.
pub fn read_machine(path: &Path) -> Result<Machine, ModelError> {
    let text = std::fs::read_to_string(path).map_err(|e| ModelError::Io {
        path: path.display().to_string(),
        why: format!("{e} (make one with `fibkit model calibrate`)"),
    })?;
    let machine: Machine = serde_json::from_str(&text).map_err(|e| ModelError::BadFile {
        path: path.display().to_string(),
        line: e.line(),
        why: format!("not a fibkit machine file: {e}"),
    })?;
    let caches = os_caches().unwrap_or_else(|_| fallback_caches());
    machine.check_matches(&cpu_model(), &caches)?;
    Ok(machine)
}

/// One candidate's prediction (or why it could not be built or modelled).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Ranked {
    /// The candidate's spec.
    pub spec: String,
    /// Predicted ns per dependent lookup (Equation 1).
    pub predicted_ns: Option<f64>,
    /// Predicted misses per lookup in each cache level, innermost first.
    pub misses: Vec<f64>,
    /// Bytes of the structure.
    pub memory_bytes: u64,
    /// Why there is no prediction (or no build): `None` with no prediction
    /// means the candidate has no model and is only timed.
    pub error: Option<String>,
    /// Measured ns per independent lookup (RND, median round), when timed.
    pub measured_rnd_ns: Option<f64>,
    /// Measured ns per dependent lookup (SEQ, median round), when timed.
    pub measured_seq_ns: Option<f64>,
}

impl Ranked {
    /// The row of `spec` from its prediction (timed by `machine`'s
    /// Equation 1, with the costs fitted on the spec's engine where the
    /// machine has them) or the reason there is none.
    pub fn new(
        spec: String,
        prediction: Result<Prediction, ModelError>,
        machine: &Machine,
    ) -> Self {
        match prediction {
            Ok(p) => Ranked {
                predicted_ns: Some(machine.engine_time_ns(engine_of(&spec), &p)),
                misses: p.misses,
                memory_bytes: p.memory_bytes,
                ..Ranked::unmodelled(spec)
            },
            Err(e) => Ranked {
                error: Some(e.to_string()),
                ..Ranked::unmodelled(spec)
            },
        }
    }

    /// The row of a candidate without a model: timed, never predicted.
    pub fn unmodelled(spec: String) -> Self {
        Ranked {
            spec,
            predicted_ns: None,
            misses: Vec::new(),
            memory_bytes: 0,
            error: None,
            measured_rnd_ns: None,
            measured_seq_ns: None,
        }
    }

    /// Whether the candidate can be timed: predicted, or without a model,
    /// and not failed.
    fn timeable(&self) -> bool {
        self.error.is_none()
    }
}

/// The engine name of a spec: `dxr` of `dxr:k=20`.
pub fn engine_of(spec: &str) -> &str {
    spec.split(':').next().unwrap_or(spec)
}

/// The families `auto` builds: each names its direct-table engine and
/// predicts that engine's candidates.
pub trait AutoFamily: Addr {
    /// The DXR engine of the family.
    type Direct: Updater<Self>;

    /// Specs and predictions of the family's DXR candidates for `view`
    /// (empty where the family's DXR engine has no model).
    fn direct_predictions(
        view: &WeightedRanges<Self>,
        caches: &[CacheLevel],
    ) -> Vec<(String, Result<Prediction, ModelError>)>;

    /// Specs and predictions of the family's DXR candidates for `view`,
    /// timed by `machine`.
    fn direct_candidates(view: &WeightedRanges<Self>, machine: &Machine) -> Vec<Ranked> {
        Self::direct_predictions(view, &machine.caches)
            .into_iter()
            .map(|(spec, prediction)| Ranked::new(spec, prediction, machine))
            .collect()
    }

    /// The family's DXR candidates whose model walks the built table (as
    /// `cpe`'s does) rather than the range view.
    fn built_direct_candidates() -> Vec<String>;

    /// The family's DXR candidates without a model: built and timed only.
    fn timed_direct_candidates() -> Vec<String>;

    /// The prediction of a built DXR candidate.
    fn predict_built_direct(
        view: &WeightedRanges<Self>,
        snapshot: &<Self::Direct as Updater<Self>>::Snapshot,
        caches: &[CacheLevel],
    ) -> Result<Prediction, ModelError>;

    /// The family's CPE candidates.
    fn cpe_candidates() -> Vec<String>;
}

impl AutoFamily for u32 {
    type Direct = DxrUpdater;

    fn direct_predictions(
        view: &WeightedRanges<u32>,
        caches: &[CacheLevel],
    ) -> Vec<(String, Result<Prediction, ModelError>)> {
        DXR_K
            .map(|k| {
                (
                    DxrConfig::single(k).to_string(),
                    predict_dxr(view, k, caches),
                )
            })
            .collect()
    }

    fn built_direct_candidates() -> Vec<String> {
        Vec::new()
    }

    fn timed_direct_candidates() -> Vec<String> {
        DXR_TWO_LEVEL.iter().map(|s| s.to_string()).collect()
    }

    fn predict_built_direct(
        view: &WeightedRanges<u32>,
        snapshot: &<DxrUpdater as Updater<u32>>::Snapshot,
        caches: &[CacheLevel],
    ) -> Result<Prediction, ModelError> {
        let config = snapshot.config();
        if config.d_bits != 0 {
            return Err(ModelError::Input(format!(
                "`{config}`: the dxr model covers the one-level layouts `dxr:k=K`"
            )));
        }
        predict_dxr(view, config.k_bits, caches)
    }

    fn cpe_candidates() -> Vec<String> {
        CPE_LEVELS_V4
            .iter()
            .map(|n| format!("cpe:levels={n}"))
            .collect()
    }
}

impl AutoFamily for u128 {
    type Direct = Dxr6Updater;

    fn direct_predictions(
        _: &WeightedRanges<u128>,
        _: &[CacheLevel],
    ) -> Vec<(String, Result<Prediction, ModelError>)> {
        Vec::new()
    }

    /// `dxr6`'s node strides and leaves depend on the whole table: its
    /// model walks the built table.
    fn built_direct_candidates() -> Vec<String> {
        DXR6_CANDIDATES.iter().map(|s| s.to_string()).collect()
    }

    fn timed_direct_candidates() -> Vec<String> {
        Vec::new()
    }

    fn predict_built_direct(
        view: &WeightedRanges<u128>,
        snapshot: &<Dxr6Updater as Updater<u128>>::Snapshot,
        caches: &[CacheLevel],
    ) -> Result<Prediction, ModelError> {
        predict_dxr6(view, snapshot, caches)
    }

    fn cpe_candidates() -> Vec<String> {
        // One layout: the family's default is the 12-level program with
        // its level cost, the layout the variable-stride program picks
        // for IPv6 (`cpe:levels=12` would be the same trie, built and
        // timed twice).
        vec!["cpe".into()]
    }
}

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
    let summary = super::TraceSummary::from_trace(rib, &trace);
    if summary.matched() == 0 {
        return Err(bad(format!(
            "none of its {} addresses matches a prefix of the table: a trace of this \
             table's traffic weighs its ranges (`fibkit trace gen TABLE`)",
            trace.len()
        )));
    }
    let densities = super::summary::prefix_densities(rib, &summary);
    let view = super::summary::weighted_ranges(rib, A::ZERO, A::MAX, Some(&densities));
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
            rnd.push(super::rnd_ns(*snapshot, keys, std::time::Duration::ZERO));
            seq.push(super::seq_ns(
                *snapshot,
                seq_keys,
                std::time::Duration::ZERO,
            ));
        }
    }
    rounds
        .iter_mut()
        .map(|(rnd, seq)| (super::median(rnd), super::median(seq)))
        .collect()
}

/// Predicts every candidate of `config` on `rib`, times the model's best
/// `config.measure` (and those without a model) and builds the pick.
fn choose<A: AutoFamily>(
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
            crate::registry::default_spec(A::FAMILY)
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

/// The picked engine's build state.
#[derive(Clone)]
// One per handle, built once (as the registry's updater enums).
#[allow(clippy::large_enum_variant)]
pub enum AutoEngine<A: AutoFamily> {
    /// DXR.
    Direct(A::Direct),
    /// CPE.
    Cpe(CpeUpdater<A>),
}

/// The picked engine's snapshot.
pub enum AutoSnapshot<A: AutoFamily> {
    /// DXR.
    Direct(<A::Direct as Updater<A>>::Snapshot),
    /// CPE.
    Cpe(CpeTrie<A>),
}

impl<A: AutoFamily> Clone for AutoSnapshot<A> {
    fn clone(&self) -> Self {
        match self {
            AutoSnapshot::Direct(s) => AutoSnapshot::Direct(s.clone()),
            AutoSnapshot::Cpe(s) => AutoSnapshot::Cpe(s.clone()),
        }
    }

    /// Reuses the arrays of a snapshot of the same engine.
    fn clone_from(&mut self, source: &Self) {
        match (self, source) {
            (AutoSnapshot::Direct(s), AutoSnapshot::Direct(source)) => s.clone_from(source),
            (AutoSnapshot::Cpe(s), AutoSnapshot::Cpe(source)) => s.clone_from(source),
            (this, source) => *this = source.clone(),
        }
    }
}

impl<A: AutoFamily> Lookup<A> for AutoSnapshot<A> {
    #[inline(always)]
    fn lookup(&self, addr: A) -> Option<Label> {
        match self {
            AutoSnapshot::Direct(s) => s.lookup(addr),
            AutoSnapshot::Cpe(s) => s.lookup(addr),
        }
    }

    #[inline]
    fn lookup_batch(&self, addrs: &[A], out: &mut [Option<Label>]) {
        match self {
            AutoSnapshot::Direct(s) => s.lookup_batch(addrs, out),
            AutoSnapshot::Cpe(s) => s.lookup_batch(addrs, out),
        }
    }

    #[inline]
    fn lookup_each(&self, addrs: &[A], out: &mut [Option<Label>]) {
        match self {
            AutoSnapshot::Direct(s) => s.lookup_each(addrs, out),
            AutoSnapshot::Cpe(s) => s.lookup_each(addrs, out),
        }
    }

    #[inline]
    fn lookup_chained(&self, addrs: &[A], out: &mut [Option<Label>], seed: Label) -> Label {
        match self {
            AutoSnapshot::Direct(s) => s.lookup_chained(addrs, out, seed),
            AutoSnapshot::Cpe(s) => s.lookup_chained(addrs, out, seed),
        }
    }

    fn memory_bytes(&self) -> usize {
        match self {
            AutoSnapshot::Direct(s) => s.memory_bytes(),
            AutoSnapshot::Cpe(s) => s.memory_bytes(),
        }
    }
}

/// The `auto` build state: the spec, the model's choice and the picked
/// engine's updater.
#[derive(Clone)]
pub struct AutoUpdater<A: AutoFamily> {
    config: AutoConfig,
    choice: Choice,
    engine: AutoEngine<A>,
}

impl<A: AutoFamily> AutoUpdater<A> {
    /// What the model chose and why.
    pub fn choice(&self) -> &Choice {
        &self.choice
    }
}

/// The pick, its prediction, the ranking and the picked engine's own
/// statistics.
#[derive(Debug, serde::Serialize)]
pub struct AutoStats {
    /// The picked engine's spec.
    pub pick: String,
    /// Its predicted ns per dependent lookup (NaN: a candidate without a
    /// model).
    pub predicted_ns: f64,
    /// How the pick was made.
    pub reason: String,
    /// The lookups modelled and timed.
    pub lookups: String,
    /// The machine the model used.
    pub machine: String,
    /// Every candidate, fastest predicted first.
    pub ranking: Vec<Ranked>,
    /// The picked engine's statistics rows.
    pub engine: Vec<(String, String)>,
}

impl EngineStats for AutoStats {
    fn rows(&self) -> Vec<(String, String)> {
        let mut rows = vec![
            ("pick".to_string(), self.pick.clone()),
            ("why".to_string(), self.reason.clone()),
            ("lookups".to_string(), self.lookups.clone()),
            (
                "predicted ns per lookup (dependent)".to_string(),
                if self.predicted_ns.is_nan() {
                    "- (no model)".to_string()
                } else {
                    format!("{:.1}", self.predicted_ns)
                },
            ),
            ("machine".to_string(), self.machine.clone()),
        ];
        for (rank, r) in self.ranking.iter().enumerate() {
            let mut parts = Vec::new();
            if let (Some(rnd), Some(seq)) = (r.measured_rnd_ns, r.measured_seq_ns) {
                parts.push(format!("{rnd:.1} ns RND, {seq:.1} ns SEQ measured"));
            }
            match (r.predicted_ns, &r.error) {
                (Some(ns), _) => parts.push(format!(
                    "{ns:.1} ns predicted, misses {:.2?}, {:.1} MiB",
                    r.misses,
                    r.memory_bytes as f64 / (1 << 20) as f64
                )),
                (None, Some(e)) => parts.push(format!("not built: {e}")),
                (None, None) if r.memory_bytes > 0 => parts.push(format!(
                    "no model, {:.1} MiB",
                    r.memory_bytes as f64 / (1 << 20) as f64
                )),
                (None, None) => parts.push("no model".to_string()),
            }
            rows.push((format!("#{} {}", rank + 1, r.spec), parts.join("; ")));
        }
        rows.extend(
            self.engine
                .iter()
                .map(|(k, v)| (format!("{}: {k}", self.pick), v.clone())),
        );
        rows
    }
}

impl<A: AutoFamily> Updater<A> for AutoUpdater<A> {
    type Config = AutoConfig;
    type Snapshot = AutoSnapshot<A>;
    type Stats = AutoStats;

    fn build(config: &AutoConfig, rib: &Rib<A>) -> Result<(Self, AutoSnapshot<A>), BuildError> {
        let (choice, (engine, snapshot)) = choose(config, rib)?;
        let updater = AutoUpdater {
            config: config.clone(),
            choice,
            engine,
        };
        Ok((updater, snapshot))
    }

    fn config(&self) -> AutoConfig {
        self.config.clone()
    }

    fn patches(&self) -> bool {
        match &self.engine {
            AutoEngine::Direct(u) => u.patches(),
            AutoEngine::Cpe(u) => u.patches(),
        }
    }

    fn builds_anew(&self, changed: usize, prefixes: usize) -> bool {
        match &self.engine {
            AutoEngine::Direct(u) => u.builds_anew(changed, prefixes),
            AutoEngine::Cpe(u) => u.builds_anew(changed, prefixes),
        }
    }

    fn update(
        &mut self,
        snapshot: &mut AutoSnapshot<A>,
        rib: &Rib<A>,
        changed: &[Prefix<A>],
    ) -> Result<(), BuildError> {
        match (&mut self.engine, snapshot) {
            (AutoEngine::Direct(u), AutoSnapshot::Direct(s)) => u.update(s, rib, changed),
            (AutoEngine::Cpe(u), AutoSnapshot::Cpe(s)) => u.update(s, rib, changed),
            _ => Err(BuildError::UpdateUnsupported {
                engine: self.config.to_string(),
            }),
        }
    }

    fn stats(&self, snapshot: &AutoSnapshot<A>) -> AutoStats {
        let engine = match (&self.engine, snapshot) {
            (AutoEngine::Direct(u), AutoSnapshot::Direct(s)) => u.stats(s).rows(),
            (AutoEngine::Cpe(u), AutoSnapshot::Cpe(s)) => u.stats(s).rows(),
            _ => Vec::new(),
        };
        AutoStats {
            pick: self.choice.pick().spec.clone(),
            predicted_ns: self.choice.pick().predicted_ns.unwrap_or(f64::NAN),
            reason: self.choice.reason.clone(),
            lookups: self.choice.lookups.clone(),
            machine: self.choice.machine.clone(),
            ranking: self.choice.ranking.clone(),
            engine,
        }
    }
}
