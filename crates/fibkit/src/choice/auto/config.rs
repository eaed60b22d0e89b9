//! `auto`'s spec, its constants and the machine the model assumes.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::engine::Layout;
use crate::engine::{BuildError, EngineConfig};
use crate::model::machine::{cpu_model, os_caches};
use crate::model::{CacheLevel, Machine, ModelError, Prediction};
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

crate::image::not_saved!([A: super::AutoFamily] super::AutoSnapshot<A>, A);

impl EngineConfig for AutoConfig {
    const NAMES: &'static [&'static str] = &["auto"];
    const ABOUT: &'static str =
        "the fastest for this table of dxr:k=16..22 and cpe:levels=2..4 (IPv6: dxr6, \
        cpe): the performance model ranks them, its best measure=N|all (default all; 0: \
        the model alone) are timed for pattern=rnd|seq|both (default both); \
        machine=FILE (fibkit model calibrate), candidates=dxr|cpe, trace=FILE";
    const LAYOUTS: &'static [Layout] = &[Layout::both("auto")];

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
        version: crate::model::machine::MACHINE_VERSION,
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
    pub(super) fn timeable(&self) -> bool {
        self.error.is_none()
    }
}

/// The engine name of a spec: `dxr` of `dxr:k=20`.
pub fn engine_of(spec: &str) -> &str {
    spec.split(':').next().unwrap_or(spec)
}
