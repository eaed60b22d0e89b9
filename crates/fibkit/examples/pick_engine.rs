//! Choosing an engine: build several engine specs from one table and
//! compare their memory and build time, then let `auto` pick one for the
//! table and this machine.
//!
//! ```text
//! cargo run --release -p fibkit --example pick_engine -- [TABLE]
//! ```
//!
//! TABLE defaults to ../shared/data/dfz-v4-nh.txt.gz. `fibkit --help`
//! lists every engine and its parameters; `fibkit bench` measures lookup
//! speed properly (this example times one pass over a few keys, a rough
//! hint on a busy machine).

use std::path::PathBuf;
use std::time::Instant;

use fibkit::engine::EngineStats;
use fibkit::load::{load_table, LoadOptions};
use fibkit::registry::ENGINES;
use fibkit::{Family, LocalFib};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args_os().nth(1).map_or_else(
        || PathBuf::from("../shared/data/dfz-v4-nh.txt.gz"),
        PathBuf::from,
    );
    let rib = load_table(&path, &LoadOptions::default())?.v4;
    println!("{}: {} IPv4 prefixes", path.display(), rib.len());

    // The registry lists every engine with the families it supports.
    let names: Vec<&str> = ENGINES
        .iter()
        .filter(|info| info.supports(Family::V4))
        .map(|info| info.name)
        .collect();
    println!("IPv4 engines: {}", names.join(", "));

    // Pseudo-random keys for a rough lookup time.
    let mut state = 0x2545_f491_u32;
    let addrs: Vec<u32> = (0..1 << 18)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state
        })
        .collect();
    let mut out = vec![None; addrs.len()];

    // A spec is an engine name with optional parameters; the defaults
    // suit a full table. Some engines trade memory for speed (dir24-8's
    // 2^24-entry first table), others the reverse (lctrie).
    println!(
        "{:<14} {:>9} {:>10} {:>12}",
        "spec", "MiB", "build", "ns/lookup"
    );
    for spec in ["dir24-8", "dxr", "dxr:k=16", "cpe", "lctrie", "btree"] {
        let started = Instant::now();
        let engine = fibkit::build::<u32>(spec, &rib)?;
        let build = started.elapsed();
        let started = Instant::now();
        engine.lookup_batch(&addrs, &mut out);
        let ns = started.elapsed().as_nanos() as f64 / addrs.len() as f64;
        println!(
            "{spec:<14} {:>9.1} {:>10.2?} {ns:>12.1}",
            engine.memory_bytes() as f64 / (1 << 20) as f64,
            build
        );
    }

    // `auto` predicts each candidate's lookup time from its layout with a
    // cache model and, by default, times the candidates on this table
    // (plain `auto`: dxr and cpe layouts, 2-3 s on a full table). Here the
    // candidates are dxr's strides only, and `measure=0` keeps the model's
    // pick without timing: a build that depends only on the table and the
    // machine.
    let spec = "auto:candidates=dxr,measure=0";
    let started = Instant::now();
    let fib = LocalFib::<u32>::new(spec, rib)?;
    println!("{spec} built in {:.2?}", started.elapsed());
    for (name, value) in fib.stats().rows() {
        if name == "pick" || name == "why" {
            println!("  {name}: {value}");
        }
    }
    Ok(())
}
