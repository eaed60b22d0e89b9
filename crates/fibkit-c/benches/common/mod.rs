//! Timing helpers shared by the C library's benchmarks.

use std::time::Instant;

/// How long each timed run lasts at least.
pub const MIN_SECONDS: f64 = 0.5;

/// Lookups per second of `pass` (one pass over `keys` keys), run until
/// [`MIN_SECONDS`] have passed.
pub fn rate(keys: usize, mut pass: impl FnMut()) -> f64 {
    let start = Instant::now();
    let mut passes = 0u64;
    while start.elapsed().as_secs_f64() < MIN_SECONDS {
        pass();
        passes += 1;
    }
    (passes * keys as u64) as f64 / start.elapsed().as_secs_f64()
}

/// The median of `values` (the upper one of an even count).
pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The load average's three figures (empty where `/proc` has none).
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}
