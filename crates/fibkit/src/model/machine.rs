//! The machine side of the model: cache levels as the OS reports them,
//! per-level latencies from a pointer chase (as lmbench's `lat_mem_rd`,
//! which the paper used), the fitted per-visit costs, Equation 1
//! generalised to any number of cache levels, and the machine file that
//! keeps a calibration for later runs.

use std::path::Path;

use super::predict::Prediction;
use super::ModelError;

/// Version of the machine file format (and of the calibration method).
pub const MACHINE_VERSION: u32 = 1;

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
    /// Data caches, innermost first.
    pub caches: Vec<CacheLevel>,
    /// Load-to-use latency of a hit in each cache level, then of memory
    /// (one more entry than `caches`), in ns.
    pub latency_ns: Vec<f64>,
    /// Cost of visiting a trie entry that hits L1 (the paper's t_trie).
    pub trie_ns: f64,
    /// Cost of visiting a tree node that hits L1 (t_tree).
    pub tree_ns: f64,
    /// Fixed cost per lookup (t_const).
    pub const_ns: f64,
}

impl Machine {
    /// The paper's Pentium III (Table 2, §5.1): 16 KB 4-way L1, 256 KB
    /// 8-way L2, 32-byte lines, 10 ns L1 miss, 100 ns L2 miss, t_trie 2.5,
    /// t_tree 16, t_const 4.5 ns.
    pub fn paper_pentium_iii() -> Self {
        Machine {
            version: MACHINE_VERSION,
            cpu_model: "700 MHz Pentium III (Narlikar and Zane, Table 2)".into(),
            caches: vec![
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
            ],
            latency_ns: vec![0.0, 10.0, 110.0],
            trie_ns: 2.5,
            tree_ns: 16.0,
            const_ns: 4.5,
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

    /// The part of Equation 1 spent waiting for caches and memory.
    pub fn memory_ns(&self, prediction: &Prediction) -> f64 {
        prediction
            .misses
            .iter()
            .zip(self.miss_penalties_ns())
            .map(|(m, t)| m * t)
            .sum()
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
        if self.cpu_model != cpu_model || self.caches != caches {
            return Err(ModelError::Input(format!(
                "the machine file was made on `{}` with caches {}, this is `{cpu_model}` with \
                 caches {}: run `fibkit model calibrate` on this machine",
                self.cpu_model,
                describe(&self.caches),
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

/// Least squares for `y ≈ a x1 + b x2 + c` over the rows `(x1, x2, y)`, with
/// every coefficient kept at least zero (a negative one is dropped and the
/// rest fitted again): the paper's fit of t_trie, t_tree and t_const.
pub fn fit_costs(rows: &[(f64, f64, f64)]) -> [f64; 3] {
    let mut active = [true; 3];
    loop {
        let solution = solve(rows, active);
        match solution.iter().position(|&v| v < 0.0) {
            Some(i) => active[i] = false,
            None => return solution,
        }
    }
}

/// Normal equations of the active columns of `[x1, x2, 1]`.
fn solve(rows: &[(f64, f64, f64)], active: [bool; 3]) -> [f64; 3] {
    let columns: Vec<usize> = (0..3).filter(|&i| active[i]).collect();
    let n = columns.len();
    let value = |row: &(f64, f64, f64), i: usize| match i {
        0 => row.0,
        1 => row.1,
        _ => 1.0,
    };
    let mut matrix = vec![vec![0.0; n + 1]; n];
    for row in rows {
        for (a, &ca) in columns.iter().enumerate() {
            for (b, &cb) in columns.iter().enumerate() {
                matrix[a][b] += value(row, ca) * value(row, cb);
            }
            matrix[a][n] += value(row, ca) * row.2;
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
    let mut out = [0.0; 3];
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
        let rows: Vec<(f64, f64, f64)> = [(1.0, 0.0), (2.0, 1.0), (1.0, 3.0), (3.0, 2.5)]
            .iter()
            .map(|&(h, s)| (h, s, 2.0 * h + 7.0 * s + 4.0))
            .collect();
        let [trie, tree, fixed] = fit_costs(&rows);
        assert!((trie - 2.0).abs() < 1e-6 && (tree - 7.0).abs() < 1e-6);
        assert!((fixed - 4.0).abs() < 1e-6);
        // A negative constant is dropped rather than kept.
        let rows = [(1.0, 0.0, 1.0), (2.0, 0.0, 3.0), (3.0, 0.0, 5.0)];
        assert!(fit_costs(&rows).iter().all(|&v| v >= 0.0));
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
    fn a_chase_reports_a_latency() {
        let ns = chase_latency_ns(16 << 10, 64, 5, 1);
        assert!(ns.is_finite() && ns > 0.0, "{ns}");
    }
}
