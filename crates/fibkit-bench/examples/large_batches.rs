//! What large update batches cost each engine against a build: a seeded
//! stream of batches of hundreds to tens of thousands of changes
//! (`fibkit::trace::generate_large_batches`: growing announcements,
//! withdrawals of 30-100% of the table, relabels) applied through
//! `LocalFib`, every spec on the same batch in turn. Per batch and spec it
//! times `LocalFib::apply` (the reference table's update included), the
//! reference table's update alone (on a copy) and a fresh build of the
//! table after it (the median of up to three builds, fewer past 200 ms).
//! Its ratio is apply ÷ (reference update + build): the patch against
//! what building anew would cost the handle. It also notes whether the
//! handle built anew, and checks the engine against the reference table
//! on every range boundary and on `--random` addresses.
//!
//! ```text
//! cargo run --release -p fibkit-bench --example large_batches -- [--family 4|6]
//!     [--table FILE] [--base N] [--batches N] [--seed N] [--random N] SPEC...
//! ```
//!
//! The base table is `--table`'s prefixes of the family, or else `--base`
//! (default 2,000) seeded random prefixes of every length
//! (`fibkit::trace::random_table`). Prints a table per spec, then each
//! spec's largest apply ÷ (reference update + build). Exits non-zero if
//! any check fails.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use fibkit::load::{load_table, LoadOptions};
use fibkit::registry::EngineFamily;
use fibkit::trace::{generate_large_batches, random_table};
use fibkit::verify::verify;
use fibkit::{build, Change, LocalFib, Rib};

/// One batch's measurements for one spec.
struct Row {
    changes: usize,
    prefixes_after: usize,
    apply: Duration,
    reference: Duration,
    build: Duration,
    rebuilt: bool,
    failed: u64,
}

/// The median time of up to three builds of `rib` at `spec` (one when a
/// build takes more than 200 ms).
fn build_time<A: EngineFamily>(spec: &str, rib: &Rib<A>) -> Result<Duration, String> {
    let mut times = Vec::new();
    while times.len() < 3 {
        let started = Instant::now();
        let snapshot = build::<A>(spec, rib).map_err(|e| format!("{spec}: build: {e}"))?;
        times.push(started.elapsed());
        drop(snapshot);
        if times[0] > Duration::from_millis(200) {
            break;
        }
    }
    times.sort_unstable();
    Ok(times[times.len() / 2])
}

/// The kind of batch `i` (see `generate_large_batches`).
fn kind(i: usize) -> &'static str {
    ["announce", "withdraw", "relabel"][i % 3]
}

fn run<A: EngineFamily>(
    rib: Rib<A>,
    specs: &[String],
    batches: usize,
    seed: u64,
    random: usize,
) -> Result<bool, Box<dyn std::error::Error>> {
    let stream: Vec<Vec<Change<A>>> = generate_large_batches(&rib, batches, seed);
    println!(
        "IPv{}: base table of {} prefixes, {} batches of {} changes in all (seed {seed})",
        if A::BITS == 32 { 4 } else { 6 },
        rib.len(),
        stream.len(),
        stream.iter().map(Vec::len).sum::<usize>()
    );
    let mut fibs = Vec::new();
    for spec in specs {
        fibs.push(LocalFib::<A>::new(spec, rib.clone()).map_err(|e| format!("{spec}: {e}"))?);
    }
    let mut rows: Vec<Vec<Row>> = specs.iter().map(|_| Vec::new()).collect();
    for (i, batch) in stream.iter().enumerate() {
        // What a handle that builds anew pays besides the build: the
        // reference table's update, timed on a copy.
        let mut copy = fibs[0].rib().clone();
        let started = Instant::now();
        for &change in batch {
            copy.apply(change);
        }
        let reference = started.elapsed();
        drop(copy);
        for ((spec, fib), rows) in specs.iter().zip(&mut fibs).zip(&mut rows) {
            let started = Instant::now();
            let summary = fib
                .apply(batch)
                .map_err(|e| format!("{spec}: batch {i}: {e}"))?;
            let apply = started.elapsed();
            let build = build_time(spec, fib.rib())?;
            let report = verify(&*fib, fib.rib(), random, seed ^ i as u64);
            if !report.ok() {
                eprintln!(
                    "{spec}: batch {i}: {} of {} addresses wrong, first {:?}",
                    report.failed,
                    report.checked,
                    report.mismatches.first()
                );
            }
            rows.push(Row {
                changes: batch.len(),
                prefixes_after: fib.rib().len(),
                apply,
                reference,
                build,
                rebuilt: summary.rebuilt.is_some(),
                failed: report.failed,
            });
        }
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let ratio = |row: &Row| ms(row.apply) / (ms(row.reference) + ms(row.build)).max(1e-3);
    let mut all_ok = true;
    for (spec, rows) in specs.iter().zip(&rows) {
        println!("\n{spec}\n");
        println!("| batch | kind | changes | prefixes after | apply ms | reference ms | build ms | apply ÷ (reference + build) | built anew | wrong |");
        println!("|---:|---|---:|---:|---:|---:|---:|---:|---|---:|");
        for (i, row) in rows.iter().enumerate() {
            println!(
                "| {i} | {} | {} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {} | {} |",
                kind(i),
                row.changes,
                row.prefixes_after,
                ms(row.apply),
                ms(row.reference),
                ms(row.build),
                ratio(row),
                if row.rebuilt { "yes" } else { "no" },
                row.failed
            );
            all_ok &= row.failed == 0;
        }
    }
    println!("\n| spec | largest apply ÷ (reference + build) (batch) | apply ms, all batches | build ms, all batches | wrong |");
    println!("|---|---:|---:|---:|---:|");
    for (spec, rows) in specs.iter().zip(&rows) {
        let (worst, ratio) = rows
            .iter()
            .map(ratio)
            .enumerate()
            .fold(
                (0, 0.0),
                |best, (i, r)| if r > best.1 { (i, r) } else { best },
            );
        println!(
            "| `{spec}` | {ratio:.2} ({worst}) | {:.1} | {:.1} | {} |",
            rows.iter().map(|row| ms(row.apply)).sum::<f64>(),
            rows.iter().map(|row| ms(row.build)).sum::<f64>(),
            rows.iter().map(|row| row.failed).sum::<u64>()
        );
    }
    Ok(all_ok)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let usage = "usage: large_batches [--family 4|6] [--table FILE] [--base N] [--batches N] \
                 [--seed N] [--random N] SPEC...";
    let mut args = std::env::args().skip(1);
    let (mut family, mut table, mut base, mut batches, mut seed, mut random) =
        (4u32, None::<PathBuf>, 2000usize, 10usize, 1u64, 10_000usize);
    let mut specs = Vec::new();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .ok_or_else(|| format!("{name} needs a value; {usage}"))
        };
        match arg.as_str() {
            "--family" => family = value("--family")?.parse()?,
            "--table" => table = Some(value("--table")?.into()),
            "--base" => base = value("--base")?.parse()?,
            "--batches" => batches = value("--batches")?.parse()?,
            "--seed" => seed = value("--seed")?.parse()?,
            "--random" => random = value("--random")?.parse()?,
            _ if arg.starts_with("--") => return Err(format!("{arg}: unknown; {usage}").into()),
            _ => specs.push(arg),
        }
    }
    if specs.is_empty() {
        return Err(usage.into());
    }
    let loaded = match &table {
        Some(path) => Some(load_table(path, &LoadOptions::default())?),
        None => None,
    };
    let ok = match family {
        4 => run(
            loaded.map_or_else(|| random_table(base, seed), |table| table.v4),
            &specs,
            batches,
            seed,
            random,
        )?,
        6 => run(
            loaded.map_or_else(|| random_table(base, seed), |table| table.v6),
            &specs,
            batches,
            seed,
            random,
        )?,
        _ => return Err(format!("--family {family}: expected 4 or 6; {usage}").into()),
    };
    if !ok {
        return Err("an engine answered differently from the reference table".into());
    }
    Ok(())
}
