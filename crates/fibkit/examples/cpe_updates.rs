//! Update costs of an engine over an update stream (the paper's section 5.5
//! insert/delete numbers): each change is applied to the reference table,
//! then the engine's own `update` is timed alone, by kind (insert, delete,
//! route change). Engines without incremental updates are timed rebuilding.
//!
//! `cargo run --release -p fibkit --example cpe_updates -- TABLE UPDATES [SPEC] [REPEATS]`
//! (default spec `cpe:levels=4,nopush`, 5 repeats; each repeat replays the
//! whole stream onto a fresh copy of the table, and the median repeat's
//! average and worst case are printed).

use std::path::Path;
use std::time::Instant;

use fibkit::load::{load_table, load_updates, AnyChange, LoadOptions};
use fibkit::rib::Change;
use fibkit::{build, verify, BuildError};

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
    // Per repeat, per kind: (count, total ns, worst ns).
    let mut results: Vec<[(u64, u128, u128); 3]> = Vec::new();
    let mut no_ops = 0;
    let mut rebuilt = false;
    for _ in 0..repeats {
        let mut rib = table.v4.clone();
        let mut engine = build(spec, &rib)?;
        let mut kinds = [(0u64, 0u128, 0u128); 3];
        no_ops = 0;
        for &change in &changes {
            let prefix = change.prefix();
            let before = rib.get(prefix);
            if !rib.apply(change) {
                no_ops += 1;
                continue;
            }
            let kind = match (before, change) {
                (None, _) => 0,
                (Some(_), Change::Withdraw(_)) => 1,
                (Some(_), Change::Announce(..)) => 2,
            };
            let started = Instant::now();
            match engine.update(&rib, &[prefix]) {
                Ok(()) => {}
                Err(BuildError::UpdateUnsupported { .. }) => {
                    rebuilt = true;
                    engine = build(spec, &rib)?;
                }
                Err(other) => return Err(other.into()),
            }
            let ns = started.elapsed().as_nanos();
            let k = &mut kinds[kind];
            k.0 += 1;
            k.1 += ns;
            k.2 = k.2.max(ns);
        }
        let report = verify(engine.as_ref(), &rib, 100_000, 1);
        if !report.ok() {
            return Err(format!("{spec}: {} mismatches after the replay", report.failed).into());
        }
        results.push(kinds);
    }
    println!(
        "{spec}: {} changes ({no_ops} no-ops), {repeats} replays{}; median over replays",
        changes.len(),
        if rebuilt {
            ", timed as full rebuilds"
        } else {
            ""
        }
    );
    println!(
        "{:<13} {:>7} {:>12} {:>12}",
        "kind", "count", "average", "worst"
    );
    for (i, name) in KINDS.iter().enumerate() {
        let mut averages: Vec<f64> = results
            .iter()
            .map(|r| r[i].1 as f64 / r[i].0.max(1) as f64)
            .collect();
        let mut worsts: Vec<u128> = results.iter().map(|r| r[i].2).collect();
        averages.sort_by(f64::total_cmp);
        worsts.sort_unstable();
        println!(
            "{:<13} {:>7} {:>9.2} us {:>9.1} us",
            name,
            results[0][i].0,
            averages[averages.len() / 2] / 1e3,
            worsts[worsts.len() / 2] as f64 / 1e3
        );
    }
    Ok(())
}
