//! A live forwarding table: reader threads look addresses up without
//! pause while a writer applies batches of route changes (`Fib::apply`).
//!
//! ```text
//! cargo run --release -p fibkit --example live_updates -- [TABLE]
//! ```
//!
//! TABLE defaults to ../shared/data/dfz-v4-nh.txt.gz. Readers never block:
//! each change batch is applied to a copy of the engine (patched in place
//! where the engine can, rebuilt where it cannot) and published with one
//! atomic pointer swap; a reader takes the newest snapshot with one atomic
//! load per lookup and never waits for the writer.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use fibkit::load::{load_table, LoadOptions};
use fibkit::{default_spec, Change, Family, Fib};

/// What one reader thread saw.
struct ReaderReport {
    lookups: u64,
    /// Lookups finished while the writer was inside `apply`.
    during_apply: u64,
    versions_seen: (u64, u64),
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args_os().nth(1).map_or_else(
        || PathBuf::from("../shared/data/dfz-v4-nh.txt.gz"),
        PathBuf::from,
    );
    let rib = load_table(&path, &LoadOptions::default())?.v4;
    println!("{}: {} IPv4 prefixes", path.display(), rib.len());

    // The changes: every 500th prefix of the table moves to the next hop
    // beside its own (label ^ 1), then back, in batches of 100 (a BGP session's worth of churn).
    let moved: Vec<_> = rib.iter().step_by(500).collect();
    let mut batches: Vec<Vec<Change<u32>>> = Vec::new();
    for chunk in moved.chunks(100) {
        batches.push(
            chunk
                .iter()
                .map(|&(p, label)| Change::Announce(p, label ^ 1))
                .collect(),
        );
    }
    for chunk in moved.chunks(100) {
        batches.push(
            chunk
                .iter()
                .map(|&(p, label)| Change::Announce(p, label))
                .collect(),
        );
    }
    let (probe, probe_label) = moved[0];

    // `Fib` holds the reference table and the engine; cloning it (or
    // sharing a reference) gives every thread the same table.
    let fib = Fib::<u32>::new(default_spec(Family::V4), rib)?;
    let addrs: Vec<u32> = moved.iter().map(|(prefix, _)| prefix.addr()).collect();
    let stop = AtomicBool::new(false);
    let applying = AtomicBool::new(false);

    let (reports, applied) = std::thread::scope(|scope| {
        let readers: Vec<_> = (0..2)
            .map(|_| {
                // A `Reader` is one thread's handle: it caches the current
                // snapshot and checks for a newer one on each lookup.
                let mut reader = fib.reader();
                let (addrs, stop, applying) = (&addrs, &stop, &applying);
                scope.spawn(move || {
                    let first = reader.snapshot().version();
                    let mut report = ReaderReport {
                        lookups: 0,
                        during_apply: 0,
                        versions_seen: (first, first),
                    };
                    while !stop.load(Ordering::Relaxed) {
                        let writing = applying.load(Ordering::Relaxed);
                        for &addr in addrs {
                            std::hint::black_box(reader.lookup(addr));
                        }
                        report.lookups += addrs.len() as u64;
                        if writing && applying.load(Ordering::Relaxed) {
                            report.during_apply += addrs.len() as u64;
                        }
                        report.versions_seen.1 = reader.snapshot().version();
                    }
                    report
                })
            })
            .collect();

        // The writer: one `apply` per batch, each published as a whole.
        let mut applied = Vec::new();
        for batch in &batches {
            let started = Instant::now();
            applying.store(true, Ordering::Relaxed);
            let summary = fib.apply(batch).expect("a change to a built table");
            applying.store(false, Ordering::Relaxed);
            applied.push((started.elapsed(), summary));
            if applied.len() == batches.len() / 2 {
                // Halfway: every moved prefix now has its new next hop.
                assert_eq!(fib.with_rib(|rib| rib.get(probe)), Some(probe_label ^ 1));
            }
        }
        stop.store(true, Ordering::Relaxed);
        let reports: Vec<ReaderReport> = readers.into_iter().map(|r| r.join().unwrap()).collect();
        (reports, applied)
    });

    let longest_apply = applied
        .iter()
        .map(|(elapsed, _)| *elapsed)
        .max()
        .unwrap_or_default();
    let changes: usize = applied.iter().map(|(_, s)| s.effective + s.no_ops).sum();
    let rebuilt = applied.iter().filter(|(_, s)| s.rebuilt.is_some()).count();
    println!(
        "writer: {} batches, {changes} changes, longest apply {longest_apply:.2?}, {rebuilt} rebuilt, now version {}",
        applied.len(),
        fib.version()
    );
    for (index, report) in reports.iter().enumerate() {
        println!(
            "reader {index}: {} lookups, {} of them while the writer was applying a batch; saw versions {}..={}",
            report.lookups, report.during_apply, report.versions_seen.0, report.versions_seen.1,
        );
    }
    // Every change was undone, and the engine answers as the reference
    // table does.
    assert_eq!(fib.with_rib(|rib| rib.get(probe)), Some(probe_label));
    let mut reader = fib.reader();
    for &addr in &addrs {
        assert_eq!(
            reader.lookup(addr),
            fib.lookup_prefix(addr).map(|(_, label)| label)
        );
    }
    println!("after the updates the engine agrees with the reference table");
    Ok(())
}
