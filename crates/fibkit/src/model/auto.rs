//! `auto`: the engine the performance model picks for the table at hand.
//!
//! `auto[:machine=FILE][,candidates=dxr|cpe]` predicts, with the models of
//! [`super::dxr`] and [`super::cpe`] (Narlikar and Zane §4: access counts
//! per cache line, Equation 2 misses, Equation 1 time), the average
//! dependent lookup time of every candidate under uniformly random lookups,
//! and builds the fastest. A uniform trace needs no file: each range of the
//! table's range view gets lookups in proportion to its size.
//!
//! Candidates:
//! ```text
//! IPv4   dxr:k=16 .. dxr:k=22            (candidates=dxr)
//!        cpe:levels=2, 3, 4              (candidates=cpe)
//! IPv6   cpe, cpe:levels=12              (candidates=cpe; dxr6 has no model)
//! ```
//! The `cpe` model walks the built trie, so each `cpe` candidate is built
//! once to be predicted; `dxr` is predicted from the range view alone and
//! only the winner is built.
//!
//! Machine: `machine=FILE` reads a file of `fibkit model calibrate`, refused
//! when it was made by another version or on another CPU or cache
//! hierarchy. Without one the model takes this machine's caches from sysfs
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
/// CPE level counts `auto` considers on IPv4.
pub const CPE_LEVELS_V4: [u8; 3] = [2, 3, 4];

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

/// `auto[:machine=FILE][,candidates=dxr|cpe]` (`candidates=dxr` or
/// `candidates=cpe` for one family of engines).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AutoConfig {
    /// A machine file of `fibkit model calibrate` (`None`: sysfs caches and
    /// the default latencies).
    pub machine: Option<PathBuf>,
    /// The engines to choose among.
    pub candidates: Candidates,
}

impl Default for AutoConfig {
    fn default() -> Self {
        AutoConfig {
            machine: None,
            candidates: Candidates::Both,
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
        spec.expect_only(&["machine", "candidates"])?;
        let mut config = AutoConfig::default();
        for (key, value) in &spec.params {
            let value = value
                .as_deref()
                .ok_or_else(|| spec.error(format!("`{key}` needs a value")))?;
            match key.as_str() {
                "machine" => config.machine = Some(PathBuf::from(value)),
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
        caches,
        latency_ns,
        trie_ns: DEFAULT_READ_NS,
        tree_ns: DEFAULT_READ_NS,
        const_ns: DEFAULT_CONST_NS,
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
    /// Why there is no prediction.
    pub error: Option<String>,
}

impl Ranked {
    /// The row of `spec` from its prediction (timed by `machine`'s
    /// Equation 1) or the reason there is none.
    pub fn new(
        spec: String,
        prediction: Result<Prediction, ModelError>,
        machine: &Machine,
    ) -> Self {
        match prediction {
            Ok(p) => Ranked {
                spec,
                predicted_ns: Some(machine.time_ns(&p)),
                misses: p.misses,
                memory_bytes: p.memory_bytes,
                error: None,
            },
            Err(e) => Ranked {
                spec,
                predicted_ns: None,
                misses: Vec::new(),
                memory_bytes: 0,
                error: Some(e.to_string()),
            },
        }
    }
}

/// The families `auto` builds: each names its direct-table engine and
/// predicts that engine's candidates.
pub trait AutoFamily: Addr {
    /// The DXR engine of the family.
    type Direct: Updater<Self>;

    /// Specs and predictions of the family's DXR candidates for `view`.
    fn direct_candidates(view: &WeightedRanges<Self>, machine: &Machine) -> Vec<Ranked>;

    /// The family's CPE candidates.
    fn cpe_candidates() -> Vec<String>;
}

impl AutoFamily for u32 {
    type Direct = DxrUpdater;

    fn direct_candidates(view: &WeightedRanges<u32>, machine: &Machine) -> Vec<Ranked> {
        DXR_K
            .map(|k| {
                let spec = DxrConfig::single(k).to_string();
                Ranked::new(spec, predict_dxr(view, k, &machine.caches), machine)
            })
            .collect()
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

    fn direct_candidates(_: &WeightedRanges<u128>, _: &Machine) -> Vec<Ranked> {
        Vec::new()
    }

    fn cpe_candidates() -> Vec<String> {
        vec!["cpe".into(), "cpe:levels=12".into()]
    }
}

/// What `auto` chose and why.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Choice {
    /// The machine the model used.
    pub machine: String,
    /// Every candidate, fastest predicted first.
    pub ranking: Vec<Ranked>,
}

impl Choice {
    /// The picked candidate.
    pub fn pick(&self) -> &Ranked {
        &self.ranking[0]
    }
}

/// A built `cpe` candidate: its updater and snapshot.
type CpeBuild<A> = (CpeUpdater<A>, CpeTrie<A>);

/// Predicts every candidate of `config` for uniform lookups on `rib`;
/// returns the ranking and, when a `cpe` candidate wins, its build.
fn choose<A: AutoFamily>(
    config: &AutoConfig,
    rib: &Rib<A>,
) -> Result<(Choice, Option<CpeBuild<A>>), BuildError> {
    let spec_error = |why: String| BuildError::BadSpec {
        spec: config.to_string(),
        why,
    };
    let (machine, source) = match &config.machine {
        Some(path) => (
            read_machine(path).map_err(|e| spec_error(e.to_string()))?,
            format!("{} (calibrated)", path.display()),
        ),
        None => (
            default_machine(),
            "caches from sysfs, default latencies (no machine file)".to_string(),
        ),
    };
    let view = uniform_ranges(rib);
    let mut ranking = Vec::new();
    if config.candidates != Candidates::Cpe {
        ranking.extend(A::direct_candidates(&view, &machine));
    }
    let mut best_cpe: Option<(f64, CpeUpdater<A>, CpeTrie<A>)> = None;
    if config.candidates != Candidates::Dxr {
        for spec in A::cpe_candidates() {
            let built = CpeConfig::parse(&spec).and_then(|c| CpeUpdater::build(&c, rib));
            let (updater, trie) = match built {
                Ok(built) => built,
                Err(e) => {
                    ranking.push(Ranked::new(
                        spec,
                        Err(ModelError::Input(e.to_string())),
                        &machine,
                    ));
                    continue;
                }
            };
            let ranked = Ranked::new(spec, predict_cpe(&view, &trie, &machine.caches), &machine);
            if let Some(ns) = ranked.predicted_ns {
                if best_cpe.as_ref().is_none_or(|(best, _, _)| ns < *best) {
                    best_cpe = Some((ns, updater, trie));
                }
            }
            ranking.push(ranked);
        }
    }
    ranking.sort_by(|a, b| {
        a.predicted_ns
            .unwrap_or(f64::INFINITY)
            .total_cmp(&b.predicted_ns.unwrap_or(f64::INFINITY))
    });
    if ranking.first().is_none_or(|r| r.predicted_ns.is_none()) {
        return Err(BuildError::Limit {
            engine: config.to_string(),
            why: format!(
                "no candidate could be built and modelled ({}); name an engine instead, \
                 e.g. `{}`",
                ranking
                    .iter()
                    .map(|r| format!("{}: {}", r.spec, r.error.as_deref().unwrap_or("?")))
                    .collect::<Vec<_>>()
                    .join("; "),
                crate::registry::default_spec(A::FAMILY)
            ),
        });
    }
    let choice = Choice {
        machine: source,
        ranking,
    };
    let cpe = best_cpe
        .filter(|_| choice.pick().spec.starts_with("cpe"))
        .map(|(_, updater, trie)| (updater, trie));
    Ok((choice, cpe))
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
    /// Its predicted ns per dependent lookup under uniform lookups.
    pub predicted_ns: f64,
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
            (
                "predicted ns per lookup (uniform, dependent)".to_string(),
                format!("{:.1}", self.predicted_ns),
            ),
            ("machine".to_string(), self.machine.clone()),
        ];
        for (rank, r) in self.ranking.iter().enumerate() {
            let value = match (r.predicted_ns, &r.error) {
                (Some(ns), _) => format!(
                    "{ns:.1} ns predicted, misses {:.2?}, {:.1} MiB",
                    r.misses,
                    r.memory_bytes as f64 / (1 << 20) as f64
                ),
                (None, Some(e)) => format!("not built: {e}"),
                (None, None) => "-".to_string(),
            };
            rows.push((format!("#{} {}", rank + 1, r.spec), value));
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
        let (choice, cpe) = choose(config, rib)?;
        let (engine, snapshot) = match cpe {
            Some((updater, trie)) => (AutoEngine::Cpe(updater), AutoSnapshot::Cpe(trie)),
            None => {
                let spec = &choice.pick().spec;
                let direct = <<A::Direct as Updater<A>>::Config as EngineConfig>::parse(spec)?;
                let (updater, snapshot) = A::Direct::build(&direct, rib)?;
                (AutoEngine::Direct(updater), AutoSnapshot::Direct(snapshot))
            }
        };
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
            machine: self.choice.machine.clone(),
            ranking: self.choice.ranking.clone(),
            engine,
        }
    }
}
