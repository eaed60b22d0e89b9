//! Alternating A/B timing of engines on the same uniform random keys, to
//! compare them under the same (noisy) machine load:
//! `cargo run --release -p fibkit-bench --example cpe_ab -- TABLE SPEC...`
use std::path::Path;
use std::time::Instant;

use fibkit::load::{load_table, LoadOptions};
use fibkit::{build, Lookup};
use fibkit_bench::{generate_keys, Pattern};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let table = load_table(Path::new(&args[0]), &LoadOptions::default())?;
    let rib = &table.v4;
    let keys = generate_keys::<u32>(&Pattern::Rnd, 1 << 24, 1, rib)?;
    let engines: Vec<_> = args[1..]
        .iter()
        .map(|s| build(s, rib).map(|e| (s.clone(), e)))
        .collect::<Result<_, _>>()?;
    let mut out = vec![None; keys.len()];
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); engines.len()];
    for _ in 0..7 {
        for (i, (_, engine)) in engines.iter().enumerate() {
            let started = Instant::now();
            engine.lookup_each(&keys, &mut out);
            std::hint::black_box(&out);
            rates[i].push(keys.len() as f64 / started.elapsed().as_secs_f64() / 1e6);
        }
    }
    for (i, (spec, _)) in engines.iter().enumerate() {
        let mut r = rates[i].clone();
        r.sort_by(f64::total_cmp);
        println!(
            "{spec:<24} median {:>7.2} Mlps  runs {:?}",
            r[r.len() / 2],
            rates[i]
                .iter()
                .map(|x| (x * 10.0).round() / 10.0)
                .collect::<Vec<_>>()
        );
    }
    Ok(())
}
