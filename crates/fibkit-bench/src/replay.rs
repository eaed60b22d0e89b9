//! Replaying a timed route-change stream onto a live table while reader
//! threads look up keys, as a router's forwarding plane lives through BGP
//! churn.
//!
//! One writer thread plays the stream at its recorded pace (scaled by a
//! speed factor) or as fast as it can, coalesces the changes that become
//! due within an interval into one batch and applies each batch through the
//! [`Fib`] handle; reader threads look up keys the whole time through their
//! own [`fibkit::fib::Reader`]. The report gives the changes applied per second,
//! the delay from a change being due to its batch being visible to readers
//! (the *update-to-visible latency*), reader throughput during the churn
//! against the same readers on the idle table, and a timeline.
//!
//! A stream's timestamps have one-second resolution (text streams and MRT
//! BGP4MP records alike), so the changes that share a second are spread
//! evenly over it: a router sees them arrive over the second, not at once.

use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use fibkit::engine::{Lookup, Updater};
use fibkit::fib::Fib;
use fibkit::prefix::Label;
use fibkit::registry::EngineFamily;
use fibkit::rib::Change;

/// A change and when it is due, in seconds from the start of the stream.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimedChange<A> {
    /// Seconds from the start of the stream.
    pub at_seconds: f64,
    /// The change.
    pub change: Change<A>,
}

/// Spreads the changes of a stream with whole-second timestamps evenly over
/// their second, and makes the times relative to the first change.
pub fn spread_over_seconds<A: Copy>(changes: &[(u64, Change<A>)]) -> Vec<TimedChange<A>> {
    let Some(&(start, _)) = changes.first() else {
        return Vec::new();
    };
    let mut timed = Vec::with_capacity(changes.len());
    let mut i = 0;
    while i < changes.len() {
        let second = changes[i].0;
        let run = changes[i..]
            .iter()
            .take_while(|(t, _)| *t == second)
            .count();
        for (j, &(_, change)) in changes[i..i + run].iter().enumerate() {
            timed.push(TimedChange {
                at_seconds: second.saturating_sub(start) as f64 + j as f64 / run as f64,
                change,
            });
        }
        i += run;
    }
    timed
}

/// How fast the stream is played.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub enum Speed {
    /// Every change is due at once: the writer applies batches back to back.
    Max,
    /// The stream's own pace multiplied by this factor (`100x`).
    Factor(f64),
}

impl FromStr for Speed {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        if text == "max" {
            return Ok(Speed::Max);
        }
        match text.strip_suffix('x').unwrap_or(text).parse::<f64>() {
            Ok(factor) if factor > 0.0 && factor.is_finite() => Ok(Speed::Factor(factor)),
            _ => Err(format!(
                "`{text}` is not a speed (`max`, or a factor above 0 such as `1x` or `100x`)"
            )),
        }
    }
}

/// The default cap of a batch, sized by the sweep in docs/bench/replay.md
/// ("Live replay"): DXR's changes per second at `Speed::Max` still rise
/// from 4096 to 32768 changes per batch (each batch pays a fixed cost, a
/// copy of the snapshot or a second patch, besides its changes), and at
/// the 1.24M changes/s measured on a quiet machine a full batch of 32768
/// takes about 26 ms, the worst wait a backed-up change then sees.
pub const DEFAULT_MAX_BATCH: usize = 1 << 15;

/// How to replay.
#[derive(Clone, Debug)]
pub struct ReplayOptions {
    /// The pace of the stream.
    pub speed: Speed,
    /// Changes that become due within this interval of the first pending
    /// one are applied as one batch.
    pub coalesce: Duration,
    /// The largest batch: the writer takes every change already due, up to
    /// this many ([`DEFAULT_MAX_BATCH`]). It only matters when changes are
    /// backed up (at `Speed::Max` every change is due at once); at real
    /// pace the coalescing interval closes a batch first.
    pub max_batch: usize,
    /// Reader threads.
    pub readers: usize,
    /// Keys per reader call: 1 looks up one key per call through the
    /// reader's handle, more uses its batch lookup on that many keys.
    pub reader_burst: usize,
    /// How long readers run on the idle table first, for the baseline.
    pub idle: Duration,
    /// Width of the timeline's steps.
    pub timeline_step: Duration,
    /// Pin readers and the writer to distinct cores where the system allows.
    pub pin: bool,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            speed: Speed::Max,
            coalesce: Duration::from_millis(1),
            max_batch: DEFAULT_MAX_BATCH,
            readers: 1,
            reader_burst: 32,
            idle: Duration::from_secs(1),
            timeline_step: Duration::from_millis(100),
            pin: true,
        }
    }
}

/// Percentiles of the update-to-visible latency, in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct LatencySummary {
    /// Median.
    pub p50_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// Largest.
    pub max_us: f64,
    /// Mean.
    pub mean_us: f64,
}

impl LatencySummary {
    fn of(mut nanos: Vec<u64>) -> Self {
        if nanos.is_empty() {
            return LatencySummary::default();
        }
        nanos.sort_unstable();
        let at = |q: f64| nanos[((nanos.len() - 1) as f64 * q).round() as usize] as f64 / 1e3;
        LatencySummary {
            p50_us: at(0.5),
            p99_us: at(0.99),
            max_us: at(1.0),
            mean_us: nanos.iter().sum::<u64>() as f64 / nanos.len() as f64 / 1e3,
        }
    }
}

/// One step of the timeline.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct TimelineStep {
    /// Start of the step, seconds from the start of the replay.
    pub at_seconds: f64,
    /// Changes made visible in the step.
    pub changes: u64,
    /// Batches published in the step.
    pub batches: u64,
    /// Lookups all readers made in the step, per second, in millions.
    pub reader_mlps: f64,
}

/// What a replay measured.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ReplayReport {
    /// The engine's spec.
    pub engine: String,
    /// Changes in the stream.
    pub changes: usize,
    /// Of which changed the table.
    pub effective: usize,
    /// Of which changed nothing (withdrawal of an absent prefix, same label).
    pub no_ops: usize,
    /// Batches applied.
    pub batches: usize,
    /// Batches the engine was rebuilt for rather than patched.
    pub rebuilds: usize,
    /// Batches that failed (the table kept its previous state), with why.
    pub errors: Vec<String>,
    /// Wall time from the first change being due to the last batch visible.
    pub seconds: f64,
    /// Of which the writer spent applying batches.
    pub writer_busy_seconds: f64,
    /// Changes applied per second of wall time.
    pub changes_per_second: f64,
    /// Changes applied per second the writer was busy.
    pub changes_per_busy_second: f64,
    /// Delay from a change being due to its batch being published.
    pub latency: LatencySummary,
    /// Reader lookups per second on the idle table, in millions (all readers).
    pub idle_reader_mlps: f64,
    /// Reader lookups per second during the replay, in millions.
    pub churn_reader_mlps: f64,
    /// `churn / idle`.
    pub reader_ratio: f64,
    /// The replay step by step.
    pub timeline: Vec<TimelineStep>,
}

/// Replays `stream` onto `fib` while `options.readers` threads look up
/// `keys` (which must not be empty when there are readers).
pub fn replay<A: EngineFamily, U: Updater<A>>(
    fib: &Fib<A, U>,
    stream: &[TimedChange<A>],
    keys: &[A],
    options: &ReplayOptions,
) -> ReplayReport
where
    U::Snapshot: Lookup<A>,
{
    let readers = if keys.is_empty() { 0 } else { options.readers };
    let cores = if options.pin {
        core_affinity::get_core_ids().unwrap_or_default()
    } else {
        Vec::new()
    };
    // Readers count their lookups in these, one per reader; the writer
    // reads them at each timeline step.
    let counters: Vec<AtomicU64> = (0..readers).map(|_| AtomicU64::new(0)).collect();
    let stop = AtomicBool::new(false);
    let start_line = Barrier::new(readers + 1);
    let mut report = ReplayReport {
        engine: fib.spec(),
        changes: stream.len(),
        ..ReplayReport::default()
    };
    std::thread::scope(|scope| {
        for (index, counter) in counters.iter().enumerate() {
            let mut reader = fib.reader();
            // Readers take the first cores, the writer the last one.
            let core = cores.get(index % cores.len().max(1)).copied();
            let (stop, start_line) = (&stop, &start_line);
            let slice = &keys[(index * 7919) % keys.len()..];
            scope.spawn(move || {
                if let Some(core) = core {
                    core_affinity::set_for_current(core);
                }
                start_line.wait();
                read_until(
                    &mut reader,
                    slice,
                    keys,
                    options.reader_burst,
                    counter,
                    stop,
                );
            });
        }
        if let Some(&core) = cores.last() {
            core_affinity::set_for_current(core);
        }
        start_line.wait();
        let total = || {
            counters
                .iter()
                .map(|c| c.load(Ordering::Relaxed))
                .sum::<u64>()
        };
        if readers > 0 && !options.idle.is_zero() {
            let before = total();
            let started = Instant::now();
            std::thread::sleep(options.idle);
            report.idle_reader_mlps =
                (total() - before) as f64 / started.elapsed().as_secs_f64() / 1e6;
        }
        let lookups_before = total();
        write(fib, stream, options, &mut report, &total);
        report.churn_reader_mlps =
            (total() - lookups_before) as f64 / report.seconds.max(1e-9) / 1e6;
        stop.store(true, Ordering::Relaxed);
    });
    if report.idle_reader_mlps > 0.0 {
        report.reader_ratio = report.churn_reader_mlps / report.idle_reader_mlps;
    }
    report
}

/// A reader's loop: looks up `keys` from `start` round and round, one call
/// per `burst` keys, until `stop`.
fn read_until<A: fibkit::Addr, S: Lookup<A>>(
    reader: &mut fibkit::fib::Reader<S>,
    start: &[A],
    keys: &[A],
    burst: usize,
    counter: &AtomicU64,
    stop: &AtomicBool,
) {
    let burst = burst.max(1);
    let mut out: Vec<Option<Label>> = vec![None; burst];
    let mut slice = start;
    let mut checksum = 0u64;
    while !stop.load(Ordering::Relaxed) {
        // Counting per 4096 keys keeps the shared counter off the hot path.
        let mut done = 0;
        while done < 4096 {
            if slice.len() < burst {
                slice = keys;
            }
            let (now, rest) = slice.split_at(burst.min(slice.len()));
            if burst == 1 {
                checksum += reader.lookup(now[0]).unwrap_or(0) as u64;
            } else {
                reader.lookup_batch(now, &mut out[..now.len()]);
                checksum += out[0].unwrap_or(0) as u64;
            }
            done += now.len();
            slice = rest;
        }
        counter.fetch_add(done as u64, Ordering::Relaxed);
    }
    std::hint::black_box(checksum);
}

/// The writer: plays the stream, coalesces due changes into batches and
/// applies them, filling `report`.
fn write<A: EngineFamily, U: Updater<A>>(
    fib: &Fib<A, U>,
    stream: &[TimedChange<A>],
    options: &ReplayOptions,
    report: &mut ReplayReport,
    reader_lookups: &dyn Fn() -> u64,
) {
    let started = Instant::now();
    let due = |change: &TimedChange<A>| match options.speed {
        Speed::Max => Duration::ZERO,
        Speed::Factor(factor) => Duration::from_secs_f64(change.at_seconds / factor),
    };
    let max_batch = options.max_batch.max(1);
    let mut latencies = Vec::with_capacity(stream.len());
    let mut batch: Vec<Change<A>> = Vec::with_capacity(max_batch);
    let mut samples = vec![Sample {
        at: Duration::ZERO,
        changes: 0,
        lookups: reader_lookups(),
    }];
    let mut next = 0;
    while next < stream.len() {
        // The batch opens when its first change is due and closes one
        // coalescing interval later, or when full.
        let first_due = due(&stream[next]);
        sleep_until(started, first_due);
        let close = first_due + options.coalesce;
        let first = next;
        loop {
            while next < stream.len()
                && next - first < max_batch
                && due(&stream[next]) <= started.elapsed()
            {
                next += 1;
            }
            let full = next - first == max_batch || next == stream.len();
            let now = started.elapsed();
            if full || now >= close {
                break;
            }
            let wake = if next < stream.len() {
                due(&stream[next]).min(close)
            } else {
                close
            };
            sleep_until(started, wake);
        }
        batch.clear();
        batch.extend(stream[first..next].iter().map(|timed| timed.change));
        let applying = Instant::now();
        let result = fib.apply(&batch);
        let visible = started.elapsed();
        report.writer_busy_seconds += applying.elapsed().as_secs_f64();
        report.batches += 1;
        match result {
            Ok(summary) => {
                report.effective += summary.effective;
                report.no_ops += summary.no_ops;
                report.rebuilds += summary.rebuilt.is_some() as usize;
            }
            Err(error) => {
                report
                    .errors
                    .push(format!("batch of changes {}..{}: {error}", first + 1, next))
            }
        }
        for timed in &stream[first..next] {
            latencies.push(visible.saturating_sub(due(timed)).as_nanos() as u64);
        }
        samples.push(Sample {
            at: visible,
            changes: (next - first) as u64,
            lookups: reader_lookups(),
        });
    }
    report.seconds = started.elapsed().as_secs_f64();
    report.timeline = timeline(&samples, options.timeline_step);
    report.changes_per_second = report.changes as f64 / report.seconds.max(1e-9);
    report.changes_per_busy_second = report.changes as f64 / report.writer_busy_seconds.max(1e-9);
    report.latency = LatencySummary::of(latencies);
}

fn sleep_until(started: Instant, at: Duration) {
    let now = started.elapsed();
    if at > now {
        std::thread::sleep(at - now);
    }
}

/// What the writer notes as it publishes a batch: when, how many changes,
/// and the readers' lookups so far.
#[derive(Clone, Copy)]
struct Sample {
    at: Duration,
    changes: u64,
    lookups: u64,
}

/// Cuts the samples into steps of `width`: changes and batches published
/// in each step, and reader throughput from the lookup counts interpolated
/// at the step's ends.
fn timeline(samples: &[Sample], width: Duration) -> Vec<TimelineStep> {
    let (Some(first), Some(last)) = (samples.first(), samples.last()) else {
        return Vec::new();
    };
    let width = width.max(Duration::from_millis(1)).as_secs_f64();
    // Cumulative lookups at time `t`, linear between samples.
    let lookups_at = |t: f64| -> f64 {
        let after = samples.partition_point(|s| s.at.as_secs_f64() < t);
        match (after.checked_sub(1).map(|i| samples[i]), samples.get(after)) {
            (Some(a), Some(b)) => {
                let (ta, tb) = (a.at.as_secs_f64(), b.at.as_secs_f64());
                let share = if tb > ta { (t - ta) / (tb - ta) } else { 1.0 };
                a.lookups as f64 + share * (b.lookups as f64 - a.lookups as f64)
            }
            (None, _) => first.lookups as f64,
            (_, None) => last.lookups as f64,
        }
    };
    let steps = (last.at.as_secs_f64() / width).floor() as usize + 1;
    let mut out: Vec<TimelineStep> = (0..steps)
        .map(|i| {
            let (start, end) = (i as f64 * width, (i + 1) as f64 * width);
            TimelineStep {
                at_seconds: start,
                reader_mlps: (lookups_at(end) - lookups_at(start)) / width / 1e6,
                ..TimelineStep::default()
            }
        })
        .collect();
    for sample in &samples[1..] {
        let step = &mut out[(sample.at.as_secs_f64() / width) as usize];
        step.changes += sample.changes;
        step.batches += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use fibkit::{Prefix, Rib};

    #[test]
    fn speeds_parse() {
        assert_eq!("max".parse::<Speed>().unwrap(), Speed::Max);
        assert_eq!("100x".parse::<Speed>().unwrap(), Speed::Factor(100.0));
        assert_eq!("2.5".parse::<Speed>().unwrap(), Speed::Factor(2.5));
        for bad in ["0x", "-1x", "fast", "infx"] {
            assert!(bad.parse::<Speed>().is_err(), "{bad}");
        }
    }

    #[test]
    fn seconds_are_spread_evenly() {
        let p = Prefix::<u32>::default_route();
        let change = Change::Withdraw(p);
        let timed = spread_over_seconds(&[(10, change), (10, change), (12, change)]);
        let at: Vec<f64> = timed.iter().map(|t| t.at_seconds).collect();
        assert_eq!(at, vec![0.0, 0.5, 2.0]);
        assert!(spread_over_seconds::<u32>(&[]).is_empty());
    }

    #[test]
    fn a_replay_applies_every_change_and_reports() {
        let rib = Rib::<u32>::from_pairs([("10.0.0.0/8".parse().unwrap(), 1)]);
        let stream: Vec<TimedChange<u32>> = (0..200u32)
            .map(|i| TimedChange {
                at_seconds: i as f64 / 100.0,
                change: Change::Announce(Prefix::new_masked(0x0a00_0000 | i << 8, 24), i),
            })
            .chain([TimedChange {
                at_seconds: 2.0,
                change: Change::Withdraw("192.0.2.0/24".parse().unwrap()),
            }])
            .collect();
        let keys: Vec<u32> = (0..1000u32).map(|i| 0x0a00_0000 | i << 8).collect();
        let fib = Fib::new("dir24-8", rib).unwrap();
        let options = ReplayOptions {
            speed: Speed::Factor(20.0),
            idle: Duration::from_millis(20),
            ..ReplayOptions::default()
        };
        let report = replay(&fib, &stream, &keys, &options);
        assert_eq!(report.changes, 201);
        assert_eq!((report.effective, report.no_ops), (200, 1));
        assert!(report.errors.is_empty());
        assert!(report.batches >= 2, "{report:?}");
        // Reader throughput is only checked for being a rate: on a loaded
        // machine the reader thread may not get a time slice in 20 ms.
        for mlps in [report.idle_reader_mlps, report.churn_reader_mlps] {
            assert!(mlps.is_finite() && mlps >= 0.0, "{report:?}");
        }
        assert_eq!(
            report.timeline.iter().map(|s| s.changes).sum::<u64>(),
            201,
            "{:?}",
            report.timeline
        );
        assert!(report.latency.p50_us <= report.latency.p99_us);
        assert_eq!(fib.snapshot().lookup(0x0a00_0500), Some(5));
        let verified = fib.with_rib(|rib| fibkit::verify::verify(&*fib.snapshot(), rib, 100, 1));
        assert!(verified.ok());
    }
}
