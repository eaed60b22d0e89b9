//! `auto`: the engine the performance model picks for the table at hand.
//!
//! `auto[:machine=FILE][,candidates=dxr|cpe][,trace=FILE][,measure=N|all]
//! [,pattern=rnd|seq|both]` predicts, with the models of [`crate::model::dxr`] and
//! [`crate::model::cpe`] (Narlikar and Zane §4: access counts per cache line,
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

use crate::engine::{BuildError, EngineStats, Updater};
use crate::prefix::Prefix;
use crate::rib::Rib;

mod config;
mod family;
mod pick;
mod snapshot;

pub use config::*;
pub use family::AutoFamily;
use pick::choose;
pub use pick::*;
pub use snapshot::{AutoEngine, AutoSnapshot};

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
