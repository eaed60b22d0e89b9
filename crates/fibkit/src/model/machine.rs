//! The machine side of the model: cache levels as the OS reports them,
//! the levels a pointer chase finds (as lmbench's `lat_mem_rd`, which the
//! paper used), the fitted per-visit costs, Equation 1 generalised to any
//! number of cache levels, and the machine file that keeps a calibration
//! for later runs.
//!
//! Why the model's levels are measured rather than read: the latency a
//! load sees is set by more than the caches the OS lists. In a virtual
//! machine whose last-level cache is shared with other guests, and whose
//! TLB misses walk two page tables, the latency of a chase through a
//! working set rises where the TLB's reach or the guest's share of the
//! cache ends, far below the listed L3 size (on the machine of
//! docs/bench/model.md: 6–8 ns to 1 MiB, about 35 ns to 8 MiB, 130–190 ns
//! beyond 16 MiB, with a "300 MiB" L3). A chase through half the listed L3 then
//! gives an L3 latency of memory, and the model charges it to every L2
//! miss of a structure that fits in 8 MiB. [`measured_levels`] takes the
//! plateaus of the measured latency curve as the levels instead.

use std::path::Path;

use super::predict::Prediction;
use super::ModelError;
use crate::addr::Family;

/// Version of the machine file format (and of the calibration method: a
/// file's costs are fitted to the model's miss penalties, so a change of
/// those makes a new version).
pub const MACHINE_VERSION: u32 = 4;

/// Between two working sets of the latency curve (about 1.41x apart) the
/// latency of one level rises by less than this factor; a larger rise
/// means the larger working set no longer fits the level. (Measured inside
/// plateaus: at most 1.11x; across a level's end: 1.3x to 3x.)
pub const LEVEL_STEP: f64 = 1.25;

/// One data cache level.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CacheLevel {
    /// 1 for L1, 2 for L2, ...
    pub level: u32,
    /// Capacity in bytes.
    pub size_bytes: u64,
    /// Associativity (ways).
    pub ways: u32,
    /// Line size in bytes.
    pub line_bytes: u32,
}

/// The data and unified caches of CPU 0, innermost first, from
/// `/sys/devices/system/cpu/cpu0/cache`.
pub fn os_caches() -> Result<Vec<CacheLevel>, ModelError> {
    let dir = Path::new("/sys/devices/system/cpu/cpu0/cache");
    let read = |path: &Path| -> Result<String, ModelError> {
        std::fs::read_to_string(path)
            .map(|s| s.trim().to_string())
            .map_err(|e| ModelError::Io {
                path: path.display().to_string(),
                why: e.to_string(),
            })
    };
    let entries = std::fs::read_dir(dir).map_err(|e| ModelError::Io {
        path: dir.display().to_string(),
        why: format!("{e} (the cache sizes come from Linux sysfs; give them as options)"),
    })?;
    let mut caches = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if !entry.file_name().to_string_lossy().starts_with("index") {
            continue;
        }
        if read(&path.join("type"))? == "Instruction" {
            continue;
        }
        let number = |name: &str| -> Result<u64, ModelError> {
            let text = read(&path.join(name))?;
            let (digits, scale) = match text.strip_suffix('K') {
                Some(d) => (d, 1024),
                None => match text.strip_suffix('M') {
                    Some(d) => (d, 1 << 20),
                    None => (text.as_str(), 1),
                },
            };
            digits
                .parse::<u64>()
                .map(|n| n * scale)
                .map_err(|_| ModelError::Input(format!("{}: `{text}`", path.join(name).display())))
        };
        caches.push(CacheLevel {
            level: number("level")? as u32,
            size_bytes: number("size")?,
            ways: number("ways_of_associativity")?.max(1) as u32,
            line_bytes: number("coherency_line_size")? as u32,
        });
    }
    caches.sort_by_key(|c| c.level);
    if caches.is_empty() {
        return Err(ModelError::Input(format!(
            "{}: no data cache listed",
            dir.display()
        )));
    }
    Ok(caches)
}

/// The CPU model name from `/proc/cpuinfo` (`unknown` where absent).
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".to_string())
}

/// A calibrated machine: its caches, the latency of a load served by each
/// cache level and by memory, and the fitted costs of Equation 1.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Machine {
    /// [`MACHINE_VERSION`] of the file.
    pub version: u32,
    /// CPU model name the calibration was made on.
    pub cpu_model: String,
    /// The levels the model uses, innermost first: those [`measured_levels`]
    /// found, or the OS's caches without a calibration.
    pub caches: Vec<CacheLevel>,
    /// The data caches the OS reports (what a machine file is checked
    /// against).
    pub os_caches: Vec<CacheLevel>,
    /// Load-to-use latency of a hit in each of `caches`, then of memory
    /// (one more entry than `caches`), in ns.
    pub latency_ns: Vec<f64>,
    /// The measured latency curve: (working set bytes, ns per dependent
    /// load) of each chase, smallest first (empty without a calibration).
    pub curve: Vec<(u64, f64)>,
    /// Cost of visiting a trie entry that hits L1 (the paper's t_trie).
    pub trie_ns: f64,
    /// Cost of visiting a tree node that hits L1 (t_tree).
    pub tree_ns: f64,
    /// Fixed cost per lookup (t_const).
    pub const_ns: f64,
    /// The share of a search-tree node miss's latency a lookup waits for
    /// (1: all of it, Equation 1 as the paper has it; fitted by `fibkit
    /// model calibrate`). Why: a tree walk branches on each comparison,
    /// and a core that predicts the branch starts the next node's load
    /// before the comparison resolves, so tree misses overlap where a trie
    /// walk's, whose next index is the loaded entry itself, cannot.
    #[serde(default = "full_weight")]
    pub tree_miss_weight: f64,
    /// Costs fitted on one engine's own layouts (keyed `dxr`, `dxr6`, `cpe`), used
    /// for that engine's predictions instead of `trie_ns` and `const_ns`.
    /// Why: the per-lookup work outside the memory reads differs between
    /// engines (a `levels` lookup walks a search tree and calls through its
    /// leaves, a `dxr` lookup is a few arithmetic steps), so the `levels`
    /// structures' t_const over-predicts every `dxr` layout by about as
    /// much. Empty without a calibration.
    #[serde(default)]
    pub engine_costs: std::collections::BTreeMap<String, EngineCosts>,
    /// The address family of the lookups the costs above were fitted on
    /// (`IPv4` or `IPv6`); `None` for costs not fitted here (the paper's,
    /// the defaults) and files written before it was recorded. Why: the
    /// work of a lookup differs between the families (an IPv6 search tree
    /// node is 48 bytes and compares 128-bit keys), so costs fitted on one
    /// family mispredict the other (docs/bench/model.md, "Costs fitted per
    /// family"). Predictions for the other family are refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
}

/// [`Machine::tree_miss_weight`] of files written before it was fitted.
fn full_weight() -> f64 {
    1.0
}

/// Equation 1's per-visit and per-lookup costs fitted on one engine's
/// layouts (their lookups visit no search tree).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EngineCosts {
    /// Cost of one dependent read that hits L1 (t_trie).
    pub trie_ns: f64,
    /// Fixed cost per lookup (t_const).
    pub const_ns: f64,
}

impl Machine {
    /// The paper's Pentium III (Table 2, §5.1): 16 KB 4-way L1, 256 KB
    /// 8-way L2, 32-byte lines, 10 ns L1 miss, 100 ns L2 miss, t_trie 2.5,
    /// t_tree 16, t_const 4.5 ns.
    pub fn paper_pentium_iii() -> Self {
        let caches = vec![
            CacheLevel {
                level: 1,
                size_bytes: 16 << 10,
                ways: 4,
                line_bytes: 32,
            },
            CacheLevel {
                level: 2,
                size_bytes: 256 << 10,
                ways: 8,
                line_bytes: 32,
            },
        ];
        Machine {
            version: MACHINE_VERSION,
            cpu_model: "700 MHz Pentium III (Narlikar and Zane, Table 2)".into(),
            os_caches: caches.clone(),
            caches,
            latency_ns: vec![0.0, 10.0, 110.0],
            curve: Vec::new(),
            trie_ns: 2.5,
            tree_ns: 16.0,
            const_ns: 4.5,
            tree_miss_weight: 1.0,
            engine_costs: Default::default(),
            family: None,
        }
    }

    /// Checks that the costs were fitted on lookups of `family` (or on no
    /// family in particular): the error names the calibration to run.
    pub fn check_family(&self, family: Family) -> Result<(), ModelError> {
        match &self.family {
            Some(fitted) if *fitted != family.to_string() => Err(ModelError::Input(format!(
                "the machine file's costs were fitted on {fitted} lookups and these are \
                 {family} lookups, whose work differs: make a machine file for {family} with \
                 `fibkit model calibrate TABLE --trace TRACE --out FILE` on an {family} table \
                 and trace, and use that file for {family}"
            ))),
            _ => Ok(()),
        }
    }

    /// The extra cost of a miss in each cache level (the next level's
    /// latency minus this one's): Equation 1's `t_L1`, `t_L2`, ...
    pub fn miss_penalties_ns(&self) -> Vec<f64> {
        self.latency_ns
            .windows(2)
            .map(|w| (w[1] - w[0]).max(0.0))
            .collect()
    }

    /// Equation 1 with this machine's levels: misses times penalties plus
    /// the visits' and the lookup's own costs.
    pub fn time_ns(&self, prediction: &Prediction) -> f64 {
        self.memory_ns(prediction)
            + prediction.trie_visits * self.trie_ns
            + prediction.tree_visits * self.tree_ns
            + self.const_ns
    }

    /// Equation 1 for a layout of `engine` (`dxr`, `cpe`): with the costs
    /// fitted on that engine's layouts where the calibration has them,
    /// otherwise as [`Self::time_ns`].
    pub fn engine_time_ns(&self, engine: &str, prediction: &Prediction) -> f64 {
        match self.engine_costs.get(engine) {
            Some(costs) => {
                self.memory_ns(prediction)
                    + prediction.trie_visits * costs.trie_ns
                    + prediction.tree_visits * self.tree_ns
                    + costs.const_ns
            }
            None => self.time_ns(prediction),
        }
    }

    /// The part of Equation 1 spent waiting for caches and memory, at the
    /// penalties of [`Self::miss_penalties_for`].
    pub fn memory_ns(&self, prediction: &Prediction) -> f64 {
        let (trie, tree) = self.memory_ns_parts(prediction);
        trie + self.tree_miss_weight * tree
    }

    /// The time of [`Self::memory_ns`] at full weight, split into the
    /// trie's misses and the search trees' (what the calibration fits
    /// [`Self::tree_miss_weight`] on).
    pub fn memory_ns_parts(&self, prediction: &Prediction) -> (f64, f64) {
        let penalties = self.miss_penalties_for(prediction.memory_bytes);
        let mut parts = (0.0, 0.0);
        for (level, (misses, penalty)) in prediction.misses.iter().zip(penalties).enumerate() {
            let tree = prediction.tree_misses.get(level).copied().unwrap_or(0.0);
            parts.0 += (misses - tree) * penalty;
            parts.1 += tree * penalty;
        }
        parts
    }

    /// The measured curve at a working set of `bytes`, interpolated on a
    /// log scale of sizes; `None` without a curve or past its largest
    /// working set.
    fn curve_ns(&self, bytes: u64) -> Option<f64> {
        let upper = self.curve.iter().position(|&(size, _)| size >= bytes)?;
        Some(if upper == 0 {
            self.curve[0].1
        } else {
            let (lo, lo_ns) = self.curve[upper - 1];
            let (hi, hi_ns) = self.curve[upper];
            let t =
                ((bytes as f64).ln() - (lo as f64).ln()) / ((hi as f64).ln() - (lo as f64).ln());
            lo_ns + (hi_ns - lo_ns) * t
        })
    }

    /// Equation 1's miss penalties for a structure of `bytes`: the steps
    /// of [`Self::miss_penalties_ns`], except that a miss in a level the
    /// structure fits in costs at most the measured curve at the
    /// structure's size (less the level's own latency). Why: Equation 2
    /// gives a structure smaller than a level some misses there (lines
    /// that share a set), but a chase through a working set of the
    /// structure's size, which meets the same sets, is served at about
    /// that level's latency; charged the next level's latency, those misses
    /// made a structure of 1.6 MiB cost as much as one in memory as soon as
    /// a measured curve showed a level past the L3 (docs/bench/model.md,
    /// "The `dxr` and `cpe` layouts tracked per round").
    ///
    /// A miss in the last level of a structure larger than it costs the
    /// whole step to memory. The curve past the last level is a chase's
    /// *average* latency over a working set of which the cache still holds
    /// a part, but the misses Equation 2 counts there are the lines the
    /// cache does not hold: charged the curve (hits included), a 6 MiB
    /// trie past a 4 MiB level was predicted at half its measured time
    /// (docs/bench/model.md, "Last-level misses at memory's latency").
    pub fn miss_penalties_for(&self, bytes: u64) -> Vec<f64> {
        let mut penalties = self.miss_penalties_ns();
        let Some(at) = self.curve_ns(bytes) else {
            return penalties;
        };
        for (i, penalty) in penalties.iter_mut().enumerate() {
            if self.caches.get(i).is_some_and(|c| bytes <= c.size_bytes) {
                let (own, next) = (self.latency_ns[i], self.latency_ns[i + 1]);
                *penalty = (at.min(next) - own).max(0.0);
            }
        }
        penalties
    }

    /// Fails unless this file was made by this version on a machine with
    /// `caches` and a CPU called `cpu_model`.
    pub fn check_matches(&self, cpu_model: &str, caches: &[CacheLevel]) -> Result<(), ModelError> {
        if self.version != MACHINE_VERSION {
            return Err(ModelError::Input(format!(
                "the machine file is of version {}, this fibkit reads version {MACHINE_VERSION}: \
                 run `fibkit model calibrate` again",
                self.version
            )));
        }
        if self.cpu_model != cpu_model || self.os_caches != caches {
            return Err(ModelError::Input(format!(
                "the machine file was made on `{}` with caches {}, this is `{cpu_model}` with \
                 caches {}: run `fibkit model calibrate` on this machine",
                self.cpu_model,
                describe(&self.os_caches),
                describe(caches)
            )));
        }
        if self.latency_ns.len() != self.caches.len() + 1 {
            return Err(ModelError::Input(
                "the machine file needs one latency per cache level plus memory".into(),
            ));
        }
        Ok(())
    }
}

/// `L1 32 KiB 8-way, L2 ...`.
pub fn describe(caches: &[CacheLevel]) -> String {
    caches
        .iter()
        .map(|c| {
            format!(
                "L{} {} KiB {}-way {} B lines",
                c.level,
                c.size_bytes >> 10,
                c.ways,
                c.line_bytes
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Nanoseconds per load of a pointer chase through `bytes` of memory: a
/// random cycle through one pointer per cache line of `line_bytes`, so
/// every load depends on the one before (lmbench's `lat_mem_rd` method,
/// with a random order against the prefetchers). Takes about `millis`
/// after one warming lap.
pub fn chase_latency_ns(bytes: usize, line_bytes: usize, millis: u64, seed: u64) -> f64 {
    let stride = (line_bytes / std::mem::size_of::<usize>()).max(1);
    let slots = (bytes / line_bytes).max(2);
    let mut order: Vec<usize> = (0..slots).collect();
    // Fisher-Yates with the core's seeded generator (no rand in the core).
    let mut rng = crate::verify::SplitMix64(seed);
    for i in (1..slots).rev() {
        let j = (rng.next() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    let mut memory = vec![0usize; slots * stride];
    for (i, &slot) in order.iter().enumerate() {
        memory[slot * stride] = order[(i + 1) % slots] * stride;
    }
    let mut at = order[0] * stride;
    // One lap warms the caches and the TLB.
    for _ in 0..slots {
        at = memory[at];
    }
    // Bursts are timed one by one and the median kept, so that bursts
    // the scheduler interrupted do not count (see `seq_ns`).
    let steps_per_burst = 1 << 12;
    let mut burst_ns = Vec::new();
    let start = std::time::Instant::now();
    while start.elapsed().as_millis() < millis as u128 {
        let begun = std::time::Instant::now();
        for _ in 0..steps_per_burst {
            at = memory[at];
        }
        burst_ns.push(begun.elapsed().as_nanos() as f64 / steps_per_burst as f64);
    }
    std::hint::black_box(at);
    super::median(&mut burst_ns)
}

/// The working sets [`latency_curve`] chases: from half the innermost
/// cache to `max_bytes`, each about 1.41x the one before (sizes of a power
/// of two and one and a half times one).
pub fn curve_sizes(os: &[CacheLevel], max_bytes: u64) -> Vec<u64> {
    let first = os
        .first()
        .map_or(16 << 10, |c| (c.size_bytes / 2).max(4096));
    let mut sizes = Vec::new();
    let mut size = first.next_power_of_two() / 2;
    while size <= max_bytes {
        for s in [size, size + size / 2] {
            if s >= first && s <= max_bytes {
                sizes.push(s);
            }
        }
        size *= 2;
    }
    sizes
}

/// Sweeps over `sizes` that [`latency_curve`] makes.
pub const CURVE_SWEEPS: usize = 3;

/// The latency curve: [`chase_latency_ns`] through each of `sizes`, about
/// `millis` each, in [`CURVE_SWEEPS`] sweeps from the smallest to the
/// largest; each size keeps its median sweep. Why sweeps: on a machine
/// whose last-level cache is shared with other work, one chase can catch a
/// burst of someone else's traffic and put a false step in the curve; a
/// burst seconds long rarely hits the same size in two sweeps.
pub fn latency_curve(sizes: &[u64], line_bytes: usize, millis: u64) -> Vec<(u64, f64)> {
    let mut sweeps = vec![Vec::with_capacity(CURVE_SWEEPS); sizes.len()];
    for sweep in 0..CURVE_SWEEPS {
        let points = latency_sweep(sizes, line_bytes, millis, sweep as u64 + 1);
        for ((_, point), ns) in points.into_iter().zip(sweeps.iter_mut()) {
            ns.push(point);
        }
    }
    sizes
        .iter()
        .zip(sweeps.iter_mut())
        .map(|(&bytes, ns)| (bytes, super::median(ns)))
        .collect()
}

/// One sweep of [`chase_latency_ns`] through each of `sizes`, smallest
/// first, about `millis` each, the chases' order drawn from `seed`.
pub fn latency_sweep(sizes: &[u64], line_bytes: usize, millis: u64, seed: u64) -> Vec<(u64, f64)> {
    sizes
        .iter()
        .map(|&bytes| {
            (
                bytes,
                chase_latency_ns(bytes as usize, line_bytes, millis, seed),
            )
        })
        .collect()
}

/// The levels of the memory hierarchy a latency `curve` shows. The curve
/// (smallest working set first) is cut into runs wherever a point's
/// latency exceeds the one before by more than [`LEVEL_STEP`]; runs of two
/// points or more are plateaus, single points between them the working sets
/// that straddle two levels. Each plateau but the last is a level whose
/// capacity is its largest working set and whose latency is its median; the
/// last plateau is memory. Levels take the line size and associativity of
/// the OS's level of the same rank (16 ways beyond the OS's levels).
/// Returns the levels and their latencies followed by memory's, or `None`
/// when the curve has no plateau.
pub fn measured_levels(
    curve: &[(u64, f64)],
    os: &[CacheLevel],
) -> Option<(Vec<CacheLevel>, Vec<f64>)> {
    let mut runs: Vec<Vec<(u64, f64)>> = Vec::new();
    for (i, &point) in curve.iter().enumerate() {
        match runs.last_mut() {
            Some(run) if point.1 <= curve[i - 1].1 * LEVEL_STEP => run.push(point),
            _ => runs.push(vec![point]),
        }
    }
    let mut plateaus: Vec<Vec<(u64, f64)>> = runs.into_iter().filter(|r| r.len() >= 2).collect();
    let median_ns = |points: &[(u64, f64)]| {
        let mut ns: Vec<f64> = points.iter().map(|p| p.1).collect();
        super::median(&mut ns)
    };
    let line_bytes = os.first().map_or(64, |c| c.line_bytes);
    let memory = plateaus.pop()?;
    let mut levels = Vec::new();
    let mut latency_ns = Vec::new();
    for (i, plateau) in plateaus.iter().enumerate() {
        let same_rank = os.get(i);
        levels.push(CacheLevel {
            level: i as u32 + 1,
            size_bytes: plateau.last().expect("plateaus have two points").0,
            ways: same_rank.map_or(16, |c| c.ways),
            line_bytes: same_rank.map_or(line_bytes, |c| c.line_bytes),
        });
        latency_ns.push(median_ns(plateau));
    }
    latency_ns.push(median_ns(&memory));
    Some((levels, latency_ns))
}

/// The rows of [`fit_nonnegative`] that make it minimise the squared
/// *relative* error of the predictions, the error the model is judged by,
/// instead of the absolute one: each row `(x, y, measured)`, where `y` is
/// `measured` less the part of the prediction that is not fitted, divided
/// by `measured`. With absolute errors the slowest structures (those that
/// miss to memory, whose times also vary most between runs) decide the
/// costs, and a fit that suits them can leave the costs at zero and the
/// structures that stay in cache a quarter too fast. Rows with no positive
/// measurement are left out.
pub fn relative_rows<const N: usize>(rows: &[([f64; N], f64, f64)]) -> Vec<([f64; N], f64)> {
    rows.iter()
        .filter(|(_, _, measured)| *measured > 0.0)
        .map(|(x, y, measured)| (x.map(|v| v / measured), y / measured))
        .collect()
}

/// Least squares for `y ≈ Σ c_i x_i` over the rows `(x, y)`, with every
/// coefficient kept at least zero: a negative one is dropped (kept at 0)
/// and the rest fitted again. A constant term is a column of ones.
pub fn fit_nonnegative<const N: usize>(rows: &[([f64; N], f64)]) -> [f64; N] {
    let mut active = [true; N];
    loop {
        let solution = solve(rows, active);
        match solution.iter().position(|&v| v < 0.0) {
            Some(i) => active[i] = false,
            None => return solution,
        }
    }
}

/// Normal equations of the active columns.
fn solve<const N: usize>(rows: &[([f64; N], f64)], active: [bool; N]) -> [f64; N] {
    let columns: Vec<usize> = (0..N).filter(|&i| active[i]).collect();
    let n = columns.len();
    let mut matrix = vec![vec![0.0; n + 1]; n];
    for (x, y) in rows {
        for (a, &ca) in columns.iter().enumerate() {
            for (b, &cb) in columns.iter().enumerate() {
                matrix[a][b] += x[ca] * x[cb];
            }
            matrix[a][n] += x[ca] * y;
        }
    }
    // Gaussian elimination with partial pivoting.
    for col in 0..n {
        let pivot = (col..n)
            .max_by(|&a, &b| matrix[a][col].abs().total_cmp(&matrix[b][col].abs()))
            .unwrap_or(col);
        matrix.swap(col, pivot);
        if matrix[col][col].abs() < 1e-12 {
            continue;
        }
        for row in 0..n {
            if row != col {
                let factor = matrix[row][col] / matrix[col][col];
                let pivot_row = matrix[col].clone();
                for (cell, pivot) in matrix[row].iter_mut().zip(&pivot_row).skip(col) {
                    *cell -= factor * pivot;
                }
            }
        }
    }
    let mut out = [0.0; N];
    for (a, &c) in columns.iter().enumerate() {
        if matrix[a][a].abs() >= 1e-12 {
            out[c] = matrix[a][n] / matrix[a][a];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fit_recovers_known_costs() {
        // y = a x1 + b x2 + c: the paper's fit of t_trie, t_tree and t_const.
        let rows: Vec<([f64; 3], f64)> = [(1.0, 0.0), (2.0, 1.0), (1.0, 3.0), (3.0, 2.5)]
            .iter()
            .map(|&(h, s)| ([h, s, 1.0], 2.0 * h + 7.0 * s + 4.0))
            .collect();
        let [trie, tree, fixed] = fit_nonnegative(&rows);
        assert!((trie - 2.0).abs() < 1e-6 && (tree - 7.0).abs() < 1e-6);
        assert!((fixed - 4.0).abs() < 1e-6);
        // A negative constant is dropped rather than kept.
        let rows = [
            ([1.0, 0.0, 1.0], 1.0),
            ([2.0, 0.0, 1.0], 3.0),
            ([3.0, 0.0, 1.0], 5.0),
        ];
        assert!(fit_nonnegative(&rows).iter().all(|&v| v >= 0.0));
    }

    #[test]
    fn relative_rows_weigh_every_structure_alike() {
        // Two fast structures that need a constant of 4 ns, and a slow one
        // whose memory time was overestimated by 30 ns.
        let rows = [
            ([1.0, 1.0], 4.0 + 1.0, 20.0),
            ([2.0, 1.0], 4.0 + 2.0, 25.0),
            ([1.0, 1.0], -30.0, 200.0),
        ];
        let absolute: Vec<([f64; 2], f64)> = rows.iter().map(|r| (r.0, r.1)).collect();
        let [_, absolute_fixed] = fit_nonnegative(&absolute);
        let [trie, fixed] = fit_nonnegative(&relative_rows(&rows));
        // The absolute fit follows the slow structure and drops the constant.
        assert_eq!(absolute_fixed, 0.0);
        let relative_error = |row: &([f64; 2], f64, f64)| {
            ((trie * row.0[0] + fixed * row.0[1] - row.1) / row.2).abs()
        };
        assert!(fixed > 1.0, "{trie} {fixed}");
        assert!(relative_error(&rows[0]) < 0.1 && relative_error(&rows[1]) < 0.1);
        // A row without a measurement is left out rather than divided by 0.
        assert_eq!(relative_rows(&[([1.0], 1.0, 0.0)]).len(), 0);
    }

    #[test]
    fn the_fit_recovers_a_tree_miss_weight() {
        // measured - trie miss time = 2 H + 7 S + 0.4 (tree miss time) + 4.
        let rows: Vec<([f64; 4], f64)> = [
            (1.0, 0.0, 0.0),
            (2.0, 1.0, 50.0),
            (1.0, 3.0, 120.0),
            (3.0, 2.5, 80.0),
            (1.5, 0.5, 10.0),
        ]
        .iter()
        .map(|&(h, s, tree)| ([h, s, tree, 1.0], 2.0 * h + 7.0 * s + 0.4 * tree + 4.0))
        .collect();
        let fitted = fit_nonnegative(&rows);
        for (got, want) in fitted.iter().zip([2.0, 7.0, 0.4, 4.0]) {
            assert!((got - want).abs() < 1e-6, "{fitted:?}");
        }
    }

    #[test]
    fn tree_misses_are_timed_by_their_weight() {
        let mut machine = Machine::paper_pentium_iii();
        // 1 L1 miss at 10 ns and half an L2 miss at 100 ns, of which half
        // an L1 miss and a quarter of an L2 miss are tree nodes.
        let prediction = Prediction {
            strides: vec![8],
            trie_visits: 1.0,
            tree_visits: 2.0,
            misses: vec![1.0, 0.5],
            tree_misses: vec![0.5, 0.25],
            memory_bytes: 1 << 20,
        };
        assert_eq!(machine.memory_ns_parts(&prediction), (30.0, 30.0));
        assert!((machine.memory_ns(&prediction) - 60.0).abs() < 1e-9);
        machine.tree_miss_weight = 0.5;
        assert!((machine.memory_ns(&prediction) - 45.0).abs() < 1e-9);
        // A file written before the weight existed reads as weight 1.
        let mut json = serde_json::to_value(&machine).unwrap();
        json.as_object_mut().unwrap().remove("tree_miss_weight");
        let old: Machine = serde_json::from_value(json).unwrap();
        assert_eq!(old.tree_miss_weight, 1.0);
    }

    #[test]
    fn an_engine_with_fitted_costs_is_timed_by_them() {
        let mut machine = Machine::paper_pentium_iii();
        let prediction = Prediction {
            strides: Vec::new(),
            trie_visits: 3.0,
            tree_visits: 0.0,
            misses: vec![1.0, 0.5],
            tree_misses: Vec::new(),
            memory_bytes: 1 << 20,
        };
        // 1 L1 miss at 10 ns, half an L2 miss at 100 ns.
        let memory = 10.0 + 0.5 * 100.0;
        let general = memory + 3.0 * 2.5 + 4.5;
        assert!((machine.time_ns(&prediction) - general).abs() < 1e-9);
        assert!((machine.engine_time_ns("dxr", &prediction) - general).abs() < 1e-9);
        machine.engine_costs.insert(
            "dxr".into(),
            EngineCosts {
                trie_ns: 1.0,
                const_ns: 0.5,
            },
        );
        let own = memory + 3.0 * 1.0 + 0.5;
        assert!((machine.engine_time_ns("dxr", &prediction) - own).abs() < 1e-9);
        assert!((machine.engine_time_ns("cpe", &prediction) - general).abs() < 1e-9);
        // The costs survive the machine file.
        let text = serde_json::to_string(&machine).unwrap();
        let read: Machine = serde_json::from_str(&text).unwrap();
        assert_eq!(read, machine);
    }

    #[test]
    fn machine_files_from_elsewhere_are_refused() {
        let paper = Machine::paper_pentium_iii();
        assert!(paper.check_matches(&paper.cpu_model, &paper.caches).is_ok());
        let err = paper
            .check_matches("AMD EPYC", &paper.caches)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("made on") && err.contains("calibrate"),
            "{err}"
        );
        let old = Machine {
            version: 0,
            ..paper.clone()
        };
        let err = old
            .check_matches(&paper.cpu_model, &paper.caches)
            .unwrap_err()
            .to_string();
        assert!(err.contains("version 0"), "{err}");
    }

    #[test]
    fn costs_of_one_family_are_refused_for_the_other() {
        // Costs fitted on no family in particular (the paper's, the
        // defaults, files from before the family was recorded) serve both.
        let paper = Machine::paper_pentium_iii();
        assert_eq!(paper.family, None);
        assert!(paper.check_family(Family::V4).is_ok());
        assert!(paper.check_family(Family::V6).is_ok());
        let text = serde_json::to_string(&paper).unwrap();
        assert!(!text.contains("family"), "{text}");
        let v4 = Machine {
            family: Some(Family::V4.to_string()),
            ..paper.clone()
        };
        assert!(v4.check_family(Family::V4).is_ok());
        let err = v4.check_family(Family::V6).unwrap_err().to_string();
        assert!(
            err.contains("fitted on IPv4 lookups")
                && err.contains("these are IPv6")
                && err.contains("fibkit model calibrate"),
            "{err}"
        );
        // The family survives the machine file.
        let read: Machine = serde_json::from_str(&serde_json::to_string(&v4).unwrap()).unwrap();
        assert_eq!(read, v4);
    }

    #[test]
    fn plateaus_of_the_curve_are_the_levels() {
        let os = [
            CacheLevel {
                level: 1,
                size_bytes: 48 << 10,
                ways: 12,
                line_bytes: 64,
            },
            CacheLevel {
                level: 2,
                size_bytes: 2 << 20,
                ways: 16,
                line_bytes: 64,
            },
            CacheLevel {
                level: 3,
                size_bytes: 300 << 20,
                ways: 20,
                line_bytes: 64,
            },
        ];
        // A curve as a virtual machine shows it: L1, L2, a fast part of L3
        // up to 8 MiB, then memory latencies rising slowly.
        const MIB: u64 = 1 << 20;
        let curve = [
            (24 << 10, 2.0),
            (32 << 10, 2.1),
            (64 << 10, 7.5),
            (512 << 10, 7.9),
            (MIB, 9.0),
            (3 * MIB / 2, 14.6),
            (3 * MIB, 38.0),
            (8 * MIB, 44.2),
            (12 * MIB, 99.5),
            (64 * MIB, 160.3),
            (512 * MIB, 197.2),
        ];
        let (levels, latency) = measured_levels(&curve, &os).unwrap();
        let sizes: Vec<u64> = levels.iter().map(|l| l.size_bytes).collect();
        // 1.5 MiB (14.6 ns) and 12 MiB (99.5 ns) straddle two levels.
        assert_eq!(sizes, [32 << 10, MIB, 8 * MIB]);
        assert_eq!(
            levels.iter().map(|l| l.ways).collect::<Vec<_>>(),
            [12, 16, 20]
        );
        assert_eq!(latency, [2.1, 7.9, 44.2, 197.2]);
        // A flat curve is memory alone; one point is no plateau.
        let (levels, latency) = measured_levels(&curve[..2], &os).unwrap();
        assert!(levels.is_empty() && latency == [2.1]);
        assert!(measured_levels(&curve[..1], &os).is_none());
        assert!(measured_levels(&[(1, 1.0), (2, 3.0), (4, 9.0)], &os).is_none());
        // Sizes: from half the L1, about 1.41x apart, up to the limit.
        let sizes = curve_sizes(&os, 256 * MIB);
        assert_eq!(sizes[0], 24 << 10);
        assert_eq!(*sizes.last().unwrap(), 256 * MIB);
        assert!(sizes.windows(2).all(|w| w[1] > w[0] && w[1] <= w[0] * 2));
    }

    #[test]
    fn a_miss_past_the_last_level_costs_memorys_step_whatever_the_curve() {
        const MIB: u64 = 1 << 20;
        let mut machine = Machine::paper_pentium_iii();
        let last_level_miss = |bytes: u64| Prediction {
            strides: vec![],
            trie_visits: 0.0,
            tree_visits: 0.0,
            misses: vec![0.0, 1.0],
            tree_misses: Vec::new(),
            memory_bytes: bytes,
        };
        // The paper's machine: a 256 KiB L2 at 10 ns, memory at 110 ns.
        let step = machine.miss_penalties_ns()[1];
        assert!(step > 0.0);
        assert_eq!(machine.memory_ns(&last_level_miss(16 * MIB)), step);
        // A curve that still finds part of a 1 MiB working set cached (its
        // average latency there is below memory's) does not lower what a
        // miss Equation 2 counts past the L2 costs: that line is not cached.
        machine.curve = vec![(256 << 10, 3.0), (MIB, 40.0), (64 * MIB, 110.0)];
        assert_eq!(machine.memory_ns(&last_level_miss(MIB)), step);
        assert_eq!(machine.memory_ns(&last_level_miss(16 * MIB)), step);
    }

    #[test]
    fn a_miss_in_a_level_the_structure_fits_in_costs_the_curve_at_its_size() {
        const MIB: u64 = 1 << 20;
        let level = |level: u32, size_bytes: u64| CacheLevel {
            level,
            size_bytes,
            ways: 16,
            line_bytes: 64,
        };
        let machine = Machine {
            caches: vec![level(1, 32 << 10), level(2, 4 * MIB), level(3, 64 * MIB)],
            latency_ns: vec![1.0, 16.0, 170.0, 250.0],
            curve: vec![
                (32 << 10, 1.0),
                (2 * MIB, 15.0),
                (4 * MIB, 16.0),
                (8 * MIB, 100.0),
                (64 * MIB, 170.0),
                (256 * MIB, 250.0),
            ],
            ..Machine::paper_pentium_iii()
        };
        let misses_in_level_2 = |bytes: u64| Prediction {
            strides: vec![],
            trie_visits: 0.0,
            tree_visits: 0.0,
            misses: vec![0.0, 1.0, 0.0],
            tree_misses: Vec::new(),
            memory_bytes: bytes,
        };
        // 2 MiB fits in the 4 MiB level, whose chase at 2 MiB takes 15 ns:
        // its misses there cost nothing more.
        assert_eq!(machine.memory_ns(&misses_in_level_2(2 * MIB)), 0.0);
        // 8 MiB does not fit: a miss costs the next level's step, 154 ns.
        assert!((machine.memory_ns(&misses_in_level_2(8 * MIB)) - 154.0).abs() < 1e-9);
        // The steps themselves are unchanged, and the first level's too
        // for a structure larger than it.
        assert_eq!(machine.miss_penalties_ns(), [15.0, 154.0, 80.0]);
        let penalties = machine.miss_penalties_for(8 * MIB);
        assert_eq!(penalties[..2], [15.0, 154.0]);
        // The last level (64 MiB) holds 8 MiB: the curve's 100 ns is below
        // its own 170, so nothing more.
        assert_eq!(penalties[2], 0.0);
        // Without a curve: the steps.
        let stepped = Machine {
            curve: Vec::new(),
            ..machine.clone()
        };
        assert_eq!(stepped.miss_penalties_for(2 * MIB), [15.0, 154.0, 80.0]);
    }

    #[test]
    fn a_chase_reports_a_latency() {
        let ns = chase_latency_ns(16 << 10, 64, 5, 1);
        assert!(ns.is_finite() && ns > 0.0, "{ns}");
    }
}
