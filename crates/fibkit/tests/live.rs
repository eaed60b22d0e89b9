//! Readers during churn: reader threads look up keys through the `Fib`
//! handle while the writer replays the LINX update stream onto dfz-v4-nh as
//! fast as it can, and every answer is checked against the reference table
//! *as of the snapshot the reader used* (its version), so a torn or
//! half-applied batch would show as a wrong answer.
//!
//! `FIBKIT_LIVE_BATCHES=N` replays only the first N batches (the
//! thread-sanitizer run, `scripts/tsan.sh`, uses it: instrumented code is
//! many times slower).

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use common::*;
use fibkit::{Change, Fib, Label, Lookup, Rib};

/// The probe keys and, per key, its answer from each version on:
/// `(version, label)` entries in version order.
struct Expected {
    keys: Vec<u32>,
    history: Vec<Vec<(u64, Option<Label>)>>,
}

impl Expected {
    /// Replays `batches` on a copy of `rib`, numbering versions as the
    /// handle does (one per batch that changes the table).
    fn new(rib: &Rib<u32>, batches: &[Vec<Change<u32>>]) -> Self {
        let mut keys: Vec<u32> = Vec::new();
        for change in batches.iter().flatten() {
            let prefix = change.prefix();
            keys.extend([prefix.first(), prefix.last()]);
            keys.extend(prefix.first().checked_sub(1));
            keys.extend(prefix.last().checked_add(1));
        }
        keys.extend(
            fibkit::verify::check_addresses(rib, 4000, 9)
                .into_iter()
                .step_by(97),
        );
        keys.sort_unstable();
        keys.dedup();
        let mut history: Vec<Vec<(u64, Option<Label>)>> =
            keys.iter().map(|&key| vec![(0, rib.lookup(key))]).collect();
        let mut table = rib.clone();
        let mut version = 0;
        for batch in batches {
            let mut effective = false;
            for change in batch {
                effective |= table.apply(*change);
            }
            if !effective {
                continue;
            }
            version += 1;
            for change in batch {
                let prefix = change.prefix();
                let from = keys.partition_point(|&k| k < prefix.first());
                let to = keys.partition_point(|&k| k <= prefix.last());
                for (key, entries) in keys[from..to].iter().zip(&mut history[from..to]) {
                    let label = table.lookup(*key);
                    if entries.last().map(|e| e.1) != Some(label) {
                        entries.push((version, label));
                    }
                }
            }
        }
        Expected { keys, history }
    }

    /// The answer for key number `index` at `version`.
    fn at(&self, index: usize, version: u64) -> Option<Label> {
        let entries = &self.history[index];
        let i = entries.partition_point(|e| e.0 <= version);
        entries[i - 1].1
    }
}

fn live_replay(spec: &str, readers: usize) {
    let table = shared_table("dfz-v4-nh.txt.gz");
    let updates = linx_updates(table);
    let mut batches = updates.v4_batches_by_time();
    if let Some(limit) = std::env::var("FIBKIT_LIVE_BATCHES")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        batches.truncate(limit);
    }
    let expected = Expected::new(&table.v4, &batches);
    let fib = Fib::new(spec, table.v4.clone()).unwrap();
    let done = AtomicBool::new(false);
    let checked = AtomicU64::new(0);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..readers)
            .map(|r| {
                let mut reader = fib.reader();
                let (done, checked, expected) = (&done, &checked, &expected);
                let mut burst = vec![None; 64];
                scope.spawn(move || {
                    let mut versions_seen = 0u64;
                    let mut last_version = 0;
                    let mut at = r * 1013;
                    let mut wrong = Vec::new();
                    let mut count = 0u64;
                    // One more round after the writer is done, so the last
                    // version is checked too.
                    let mut last_round = false;
                    loop {
                        let finished = done.load(Ordering::Acquire);
                        let snapshot = reader.snapshot().clone();
                        let version = snapshot.version();
                        assert!(version >= last_version, "versions went back");
                        versions_seen += (version != last_version) as u64;
                        last_version = version;
                        let n = expected.keys.len();
                        // Single lookups, then one batch over the next keys.
                        for _ in 0..64 {
                            at = (at + 1) % n;
                            let got = snapshot.lookup(expected.keys[at]);
                            let want = expected.at(at, version);
                            if got != want && wrong.len() < 5 {
                                wrong.push((expected.keys[at], version, got, want));
                            }
                            count += 1;
                        }
                        let from = (at + 1) % n;
                        let to = (from + 64).min(n);
                        snapshot.lookup_batch(&expected.keys[from..to], &mut burst[..to - from]);
                        for (offset, got) in burst[..to - from].iter().enumerate() {
                            let want = expected.at(from + offset, version);
                            if *got != want && wrong.len() < 5 {
                                wrong.push((expected.keys[from + offset], version, *got, want));
                            }
                            count += 1;
                        }
                        at = to % n;
                        if last_round {
                            break;
                        }
                        last_round = finished;
                    }
                    checked.fetch_add(count, Ordering::Relaxed);
                    (versions_seen, last_version, wrong)
                })
            })
            .collect();
        for batch in &batches {
            fib.apply(batch).unwrap();
        }
        done.store(true, Ordering::Release);
        let final_version = fib.snapshot().version();
        for handle in handles {
            let (seen, last, wrong) = handle.join().unwrap();
            assert!(
                wrong.is_empty(),
                "{spec}: wrong answers (key, version, got, want): {wrong:x?}"
            );
            assert_eq!(
                last, final_version,
                "{spec}: a reader missed the last version"
            );
            assert!(
                seen > 1 || batches.len() < 50,
                "{spec}: a reader saw only {seen} versions"
            );
        }
    });
    assert!(checked.load(Ordering::Relaxed) > 10_000);
    let report = fib.with_rib(|rib| fibkit::verify::verify(&*fib.snapshot(), rib, 20_000, 3));
    assert!(report.ok(), "{spec} at the end: {}", report.mismatches[0]);
}

#[test]
fn readers_during_linx_replay_dxr() {
    live_replay("dxr", 2);
}

#[test]
fn readers_during_linx_replay_dxr_k16() {
    live_replay("dxr:k=16", 1);
}
