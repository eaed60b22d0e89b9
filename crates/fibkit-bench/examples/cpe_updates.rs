//! Update costs of an engine over an update stream (the paper's section 5.5
//! insert/delete numbers): each change is applied to the reference table,
//! then the engine's own `update` is timed alone, by kind (insert, delete,
//! route change). Engines without incremental updates are timed rebuilding.
//!
//! `cargo run --release -p fibkit-bench --example cpe_updates -- TABLE UPDATES [SPEC] [REPEATS]`
//! (default spec `cpe:levels=4,nopush`, 5 repeats). Each repeat replays the
//! whole stream onto a fresh copy of the table. Two views are printed:
//! `raw`, the median repeat's average and worst; and `min`, each change's
//! least time over the repeats, then averaged and maxed. On a shared
//! machine a change is sometimes descheduled for a whole scheduler tick
//! (about 4 ms); a different change each repeat, so `min` removes it.

use std::path::Path;
use std::time::Instant;

use fibkit::engine::{BuildError, Updater};
use fibkit::load::{load_table, load_updates, AnyChange, LoadOptions};
use fibkit::registry::{ConfigV4, EngineV4};
use fibkit::rib::Change;
use fibkit::verify::verify;

const KINDS: [&str; 3] = ["insert", "delete", "route change"];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(table_path), Some(updates_path)) = (args.first(), args.get(1)) else {
        return Err("usage: cpe_updates TABLE UPDATES [SPEC] [REPEATS]".into());
    };
    let spec = args.get(2).map_or("cpe:levels=4,nopush", |s| s.as_str());
    let repeats: usize = args.get(3).map_or(Ok(5), |s| s.parse())?;
    let table = load_table(Path::new(table_path), &LoadOptions::default())?;
    let updates = load_updates(
        Path::new(updates_path),
        &LoadOptions::default(),
        table.nexthops.clone(),
    )?;
    let changes: Vec<Change<u32>> = updates
        .updates
        .iter()
        .filter_map(|u| match u.change {
            AnyChange::V4(change) => Some(change),
            AnyChange::V6(_) => None,
        })
        .collect();
    // Per change: its kind (None: no-op) and its time in each repeat.
    let mut kinds: Vec<Option<usize>> = vec![None; changes.len()];
    let mut times: Vec<Vec<u64>> = vec![Vec::with_capacity(repeats); changes.len()];
    let mut rebuilt = false;
    let config: ConfigV4 = spec.parse()?;
    for _ in 0..repeats {
        let mut rib = table.v4.clone();
        let (mut updater, mut engine) = EngineV4::build(&config, &rib)?;
        for (i, &change) in changes.iter().enumerate() {
            let prefix = change.prefix();
            let before = rib.get(prefix);
            if !rib.apply(change) {
                continue;
            }
            kinds[i] = Some(match (before, change) {
                (None, _) => 0,
                (Some(_), Change::Withdraw(_)) => 1,
                (Some(_), Change::Announce(..)) => 2,
            });
            let started = Instant::now();
            match updater.update(&mut engine, &rib, &[prefix]) {
                Ok(()) => {}
                Err(BuildError::UpdateUnsupported { .. }) => {
                    rebuilt = true;
                    (updater, engine) = EngineV4::build(&config, &rib)?;
                }
                Err(other) => return Err(other.into()),
            }
            times[i].push(started.elapsed().as_nanos() as u64);
        }
        let report = verify(&engine, &rib, 100_000, 1);
        if !report.ok() {
            return Err(format!("{spec}: {} mismatches after the replay", report.failed).into());
        }
    }
    let no_ops = kinds.iter().filter(|k| k.is_none()).count();
    println!(
        "{spec}: {} changes ({no_ops} no-ops), {repeats} replays{}",
        changes.len(),
        if rebuilt {
            ", timed as full rebuilds"
        } else {
            ""
        }
    );
    println!(
        "{:<13} {:>6} | {:>10} {:>10} | {:>10} {:>10} {:>10}",
        "kind", "count", "raw avg", "raw worst", "min avg", "min p99.9", "min worst"
    );
    for (k, name) in KINDS.iter().enumerate() {
        let of_kind: Vec<usize> = (0..changes.len())
            .filter(|&i| kinds[i] == Some(k))
            .collect();
        if of_kind.is_empty() {
            continue;
        }
        let mut raw: Vec<(f64, u64)> = (0..repeats)
            .map(|r| {
                let sum: u64 = of_kind.iter().map(|&i| times[i][r]).sum();
                let worst = of_kind.iter().map(|&i| times[i][r]).max().unwrap_or(0);
                (sum as f64 / of_kind.len() as f64, worst)
            })
            .collect();
        raw.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut mins: Vec<u64> = of_kind
            .iter()
            .map(|&i| times[i].iter().copied().min().unwrap_or(0))
            .collect();
        mins.sort_unstable();
        let us = |ns: f64| format!("{:.2} us", ns / 1e3);
        println!(
            "{:<13} {:>6} | {:>10} {:>10} | {:>10} {:>10} {:>10}",
            name,
            of_kind.len(),
            us(raw[repeats / 2].0),
            us(raw[repeats / 2].1 as f64),
            us(mins.iter().sum::<u64>() as f64 / mins.len() as f64),
            us(mins[mins.len() * 999 / 1000] as f64),
            us(*mins.last().unwrap_or(&0) as f64),
        );
    }
    Ok(())
}
