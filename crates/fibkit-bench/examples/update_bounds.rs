//! The worst single update against a full build, for any engine of either
//! family, measured the same way for every engine (docs/bench/updates.md,
//! "Worst update against a full build, every engine").
//!
//! ```console
//! cargo build --release -p fibkit-bench --example update_bounds
//! target/release/examples/update_bounds [--rounds N] [--breakdown] TABLE SPEC...
//! ```
//!
//! The changes are the ones that touch the most of a table at once: the
//! default route announced, relabelled and withdrawn, then, for the
//! busiest prefix of each of the lengths 8 (IPv4) or 16 (IPv6), 4, 2 and 1
//! (the one holding the most of the table's prefixes), an announcement, a
//! relabel and the restoration of what it held. Each round builds the
//! engine once from the reference table (timed: the engine's build alone,
//! `rib.ranges()` and the like included), then builds a `LocalFib` (not
//! timed) and applies every change as its own batch (timed: reference
//! table and engine, as a caller sees it). Times are this thread's on-CPU
//! nanoseconds (`/proc/thread-self/schedstat`), so other processes on a
//! shared machine count less than in wall time. Per change the ratio to
//! the same round's build is taken, and the median over rounds reported;
//! builds and changes alternate, so load changes hit both alike.

use std::collections::BTreeMap;

use fibkit::engine::Updater;
use fibkit::load::{load_table, LoadOptions};
use fibkit::registry::EngineFamily;
use fibkit::{Addr, Change, LocalFib, Prefix, Rib};
use fibkit_bench::load_average;
use fibkit_bench::thread_cpu_ns;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut rounds = 5;
    let breakdown = args.iter().any(|arg| arg == "--breakdown");
    args.retain(|arg| arg != "--breakdown");
    if let Some(at) = args.iter().position(|arg| arg == "--rounds") {
        rounds = args.get(at + 1).ok_or("--rounds needs a number")?.parse()?;
        args.drain(at..at + 2);
    }
    let [table, specs @ ..] = args.as_slice() else {
        return Err("usage: update_bounds [--rounds N] [--breakdown] TABLE SPEC...".into());
    };
    let table = load_table(std::path::Path::new(table), &LoadOptions::default())?;
    println!(
        "table: {} IPv4 and {} IPv6 prefixes; {rounds} rounds; load average {}",
        table.v4.len(),
        table.v6.len(),
        load_average()
    );
    println!(
        "\n| spec | worst change | worst ms | build ms | worst / build | rebuilt by the handle |"
    );
    println!("|---|---|---:|---:|---:|---|");
    for spec in specs {
        if !table.v4.is_empty() && spec.parse::<<u32 as EngineFamily>::Config>().is_ok() {
            measure(spec, &table.v4, rounds, 8, breakdown)?;
        } else if !table.v6.is_empty() {
            measure(spec, &table.v6, rounds, 16, breakdown)?;
        }
    }
    println!("\nload average at the end {}", load_average());
    Ok(())
}

/// Prints one row: the change whose median ratio to the build is the
/// largest, for `spec` on `rib`.
fn measure<A: EngineFamily>(
    spec: &str,
    rib: &Rib<A>,
    rounds: usize,
    busy_plen: u8,
    breakdown: bool,
) -> Result<(), Box<dyn std::error::Error>> {
    let config: <A as EngineFamily>::Config = spec.parse()?;
    let changes = short_prefix_changes(rib, busy_plen);
    let mut build_ms = Vec::with_capacity(rounds);
    let mut change_ms = vec![Vec::with_capacity(rounds); changes.len()];
    let mut rebuilt = vec![false; changes.len()];
    for _ in 0..rounds {
        let started = cpu_ns();
        let built = <A::Engine as Updater<A>>::build(&config, rib)?;
        build_ms.push((cpu_ns() - started) as f64 / 1e6);
        drop(built);
        let mut fib = LocalFib::<A>::with_config(config.clone(), rib.clone())?;
        for (i, (_, change)) in changes.iter().enumerate() {
            let started = cpu_ns();
            let summary = fib.apply(std::slice::from_ref(change))?;
            change_ms[i].push((cpu_ns() - started) as f64 / 1e6);
            rebuilt[i] |= summary.rebuilt.is_some();
        }
    }
    let ratio = |i: usize| {
        let ratios: Vec<f64> = change_ms[i]
            .iter()
            .zip(&build_ms)
            .map(|(change, build)| change / build)
            .collect();
        median(ratios)
    };
    let worst = (0..changes.len())
        .max_by(|&a, &b| ratio(a).total_cmp(&ratio(b)))
        .ok_or("no changes")?;
    println!(
        "| {spec} | {} | {:.1} | {:.1} | {:.2} | {} |",
        changes[worst].0,
        median(change_ms[worst].clone()),
        median(build_ms.clone()),
        ratio(worst),
        if rebuilt[worst] { "yes" } else { "no" }
    );
    if breakdown {
        let mut before = rib.clone();
        for (_, change) in &changes[..worst] {
            before.apply(*change);
        }
        print_breakdown(&config, &before, &changes[worst], rounds)?;
    }
    Ok(())
}

/// Where the time of one change goes, taken apart by hand the way
/// `LocalFib::apply` does it: the reference-table change, the engine's
/// patch attempt, a fresh build of the new table (what the handle does
/// when the patch fails) and then the release of the old engine; beside
/// them a build of the old table. `rib` is the table the change
/// applies to (the earlier changes of the list applied). Medians over `rounds`, in ms of
/// on-CPU time.
fn print_breakdown<A: EngineFamily>(
    config: &<A as EngineFamily>::Config,
    rib: &Rib<A>,
    (name, change): &(String, Change<A>),
    rounds: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut steps = [const { Vec::new() }; 5];
    for _ in 0..rounds {
        let started = cpu_ns();
        let built = <A::Engine as Updater<A>>::build(config, rib)?;
        steps[0].push(cpu_ns() - started);
        drop(built);
        let (mut updater, mut snapshot) = <A::Engine as Updater<A>>::build(config, rib)?;
        let mut changed_rib = rib.clone();
        let started = cpu_ns();
        changed_rib.apply(*change);
        steps[1].push(cpu_ns() - started);
        let started = cpu_ns();
        let patched = updater.update(&mut snapshot, &changed_rib, &[change.prefix()]);
        steps[2].push(cpu_ns() - started);
        // What the handle does after a failed patch, and beside a
        // successful one what a fresh build of the new table costs.
        let started = cpu_ns();
        let rebuilt = <A::Engine as Updater<A>>::build(config, &changed_rib)?;
        steps[3].push(cpu_ns() - started);
        if patched.is_err() {
            let started = cpu_ns();
            drop((updater, snapshot));
            steps[4].push(cpu_ns() - started);
        }
        drop(rebuilt);
    }
    let ms = |values: &Vec<u64>| {
        if values.is_empty() {
            "-".to_string()
        } else {
            format!(
                "{:.1}",
                median(values.iter().map(|&ns| ns as f64 / 1e6).collect())
            )
        }
    };
    println!(
        "  breakdown of {name} (ms): build {}, reference table {}, engine update {} ({}), \
         build of the new table {}, release of the old engine {}",
        ms(&steps[0]),
        ms(&steps[1]),
        ms(&steps[2]),
        if steps[4].is_empty() {
            "patched"
        } else {
            "failed"
        },
        ms(&steps[3]),
        ms(&steps[4])
    );
    Ok(())
}

/// The default route announced, relabelled and withdrawn, then for the
/// busiest prefix of each length in `busy_plen, 4, 2, 1`: announced,
/// relabelled, and given back what it held (withdrawn if nothing). Each
/// change is named; together they leave the table as it was.
fn short_prefix_changes<A: Addr>(rib: &Rib<A>, busy_plen: u8) -> Vec<(String, Change<A>)> {
    let zero = Prefix::new_masked(A::from_u64(0), 0);
    let mut changes = vec![
        ("announce /0".to_string(), Change::Announce(zero, 1_000_001)),
        ("relabel /0".to_string(), Change::Announce(zero, 1_000_002)),
        match rib.get(zero) {
            Some(label) => ("restore /0".to_string(), Change::Announce(zero, label)),
            None => ("withdraw /0".to_string(), Change::Withdraw(zero)),
        },
    ];
    for plen in [busy_plen, 4, 2, 1] {
        let mut per_prefix: BTreeMap<Prefix<A>, usize> = BTreeMap::new();
        for (prefix, _) in rib.iter() {
            if prefix.plen() >= plen {
                *per_prefix
                    .entry(Prefix::new_masked(prefix.addr(), plen))
                    .or_default() += 1;
            }
        }
        let Some((&busiest, _)) = per_prefix.iter().max_by_key(|(_, &count)| count) else {
            continue;
        };
        changes.push((
            format!("announce {busiest}"),
            Change::Announce(busiest, 1_000_003),
        ));
        changes.push((
            format!("relabel {busiest}"),
            Change::Announce(busiest, 1_000_004),
        ));
        changes.push(match rib.get(busiest) {
            Some(label) => (
                format!("restore {busiest}"),
                Change::Announce(busiest, label),
            ),
            None => (format!("withdraw {busiest}"), Change::Withdraw(busiest)),
        });
    }
    changes
}

/// This thread's on-CPU nanoseconds, up to date: the kernel adds a running
/// thread's time to its count only at a scheduler tick or switch (every 4
/// ms here), and a yield is such a switch, so a reading is exact rather
/// than up to a tick old (which would be ±25% of a 16 ms build).
fn cpu_ns() -> u64 {
    std::thread::yield_now();
    thread_cpu_ns()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
