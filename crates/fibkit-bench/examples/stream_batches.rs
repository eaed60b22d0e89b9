//! What an IPv4 update stream costs the writer, batch by batch: the stream
//! applied one change per batch, or one batch per second of the stream
//! (as a replay at high speed coalesces them), through a `LocalFib` (the
//! engine and the reference table alone) or through the shared `Fib`
//! handle with one reader thread looking up keys meanwhile (snapshot
//! copies, spares catching up and publications included).
//!
//! ```console
//! cargo build --release -p fibkit-bench --example stream_batches
//! target/release/examples/stream_batches TABLE UPDATES SPEC [change|second] [local|fib]
//! ```
//!
//! Prints the writer's total time and the slowest batches with their
//! sizes (defaults: `second`, `fib`). With `fib` the writer sleeps 2 ms
//! between batches, so the reader lets go of the spare as it would at a
//! replay's pace.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fibkit::load::{load_table, load_updates, AnyChange, LoadOptions};
use fibkit::{Change, Fib, LocalFib};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: stream_batches TABLE UPDATES SPEC [change|second] [local|fib]";
    let (Some(table_path), Some(updates_path), Some(spec)) =
        (args.first(), args.get(1), args.get(2))
    else {
        return Err(usage.into());
    };
    let per_second = match args.get(3).map_or("second", |s| s.as_str()) {
        "second" => true,
        "change" => false,
        other => return Err(format!("{other}: expected change or second; {usage}").into()),
    };
    let through_fib = match args.get(4).map_or("fib", |s| s.as_str()) {
        "fib" => true,
        "local" => false,
        other => return Err(format!("{other}: expected local or fib; {usage}").into()),
    };
    let table = load_table(Path::new(table_path), &LoadOptions::default())?;
    let updates = load_updates(
        Path::new(updates_path),
        &LoadOptions::default(),
        table.nexthops.clone(),
    )?;
    let mut batches: Vec<(u64, Vec<Change<u32>>)> = Vec::new();
    for update in &updates.updates {
        let AnyChange::V4(change) = update.change else {
            continue;
        };
        match batches.last_mut() {
            Some((time, batch)) if per_second && *time == update.time => batch.push(change),
            _ => batches.push((update.time, vec![change])),
        }
    }
    let mut times: Vec<(Duration, usize)> = Vec::with_capacity(batches.len());
    if through_fib {
        let fib = Fib::<u32>::new(spec, table.v4.clone())?;
        let stop = Arc::new(AtomicBool::new(false));
        let mut reader = fib.reader();
        let reading = Arc::clone(&stop);
        let worker = std::thread::spawn(move || {
            let keys: Vec<u32> = (0..32u32).map(|i| i.wrapping_mul(0x9e37_79b9)).collect();
            let mut out = vec![None; keys.len()];
            while !reading.load(Ordering::Relaxed) {
                reader.lookup_batch(&keys, &mut out);
            }
        });
        for (i, (_, batch)) in batches.iter().enumerate() {
            let started = Instant::now();
            fib.apply(batch)?;
            times.push((started.elapsed(), i));
            std::thread::sleep(Duration::from_millis(2));
        }
        stop.store(true, Ordering::Relaxed);
        worker.join().map_err(|_| "the reader panicked")?;
    } else {
        let mut fib = LocalFib::<u32>::new(spec, table.v4.clone())?;
        for (i, (_, batch)) in batches.iter().enumerate() {
            let started = Instant::now();
            fib.apply(batch)?;
            times.push((started.elapsed(), i));
        }
    }
    let total: Duration = times.iter().map(|&(time, _)| time).sum();
    let changes: usize = batches.iter().map(|(_, batch)| batch.len()).sum();
    println!(
        "{spec}: {changes} changes in {} batches ({}, through {}): {:.1} ms in all",
        batches.len(),
        if per_second {
            "one per second"
        } else {
            "one per change"
        },
        if through_fib {
            "Fib with a reader"
        } else {
            "LocalFib"
        },
        total.as_secs_f64() * 1e3
    );
    times.sort_unstable_by(|a, b| b.cmp(a));
    for &(time, i) in times.iter().take(5) {
        println!(
            "  {:8.2} ms  batch {i} ({} changes)",
            time.as_secs_f64() * 1e3,
            batches[i].1.len()
        );
    }
    Ok(())
}
