//! Load a forwarding table from a file, build the default engine and look
//! addresses up: one at a time, as a router does per packet, and in
//! batches, the faster path when packets arrive in bursts.
//!
//! ```text
//! cargo run --release -p fibkit --example lookup -- [TABLE]
//! ```
//!
//! TABLE defaults to ../shared/data/dfz-v4-nh.txt.gz (a 900k-prefix IPv4
//! default-free-zone table whose labels are next-hop indexes); any format
//! `fibkit::load` detects works (text, gzip, bzip2, MRT RIB dumps).

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::Instant;

use fibkit::load::{load_table, LoadOptions};
use fibkit::{default_spec, Family, Lookup, LookupVisitor};

/// Counts the addresses of a slice that have a route. `dispatch` matches on
/// the engine once and calls `visit` with the concrete engine, so
/// `engine.lookup` is compiled into this loop for each engine: a per-key
/// loop with no `match` per key.
struct CountRouted<'a>(&'a [u32]);

impl LookupVisitor<u32> for CountRouted<'_> {
    type Output = usize;
    fn visit<L: Lookup<u32>>(self, engine: &L) -> usize {
        self.0
            .iter()
            .filter(|&&addr| engine.lookup(addr).is_some())
            .count()
    }
}

/// `count` pseudo-random addresses (xorshift: no dependency, same keys on
/// every run).
fn random_addrs(count: usize) -> Vec<u32> {
    let mut state = 0x9e37_79b9_u32;
    (0..count)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state
        })
        .collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args_os().nth(1).map_or_else(
        || PathBuf::from("../shared/data/dfz-v4-nh.txt.gz"),
        PathBuf::from,
    );

    // The loader returns the reference table (`Rib`) of each family: the
    // source of truth that engines are built from.
    let started = Instant::now();
    let table = load_table(&path, &LoadOptions::default())?;
    let rib = &table.v4;
    println!(
        "{}: {} IPv4 prefixes, loaded in {:.2?}",
        path.display(),
        rib.len(),
        started.elapsed()
    );

    // The default engine for the family; any spec `fibkit --help` lists
    // ("dir24-8", "dxr:k=20", ...) builds the same way.
    let spec = default_spec(Family::V4);
    let started = Instant::now();
    let engine = fibkit::build::<u32>(spec, rib)?;
    println!(
        "engine {spec}: {:.1} MiB, built in {:.2?}",
        engine.memory_bytes() as f64 / (1 << 20) as f64,
        started.elapsed()
    );

    // One address at a time. The engine answers the label only; the
    // reference table also knows which prefix matched (a slower trie walk,
    // for reporting rather than per packet).
    for text in ["8.8.8.8", "1.1.1.1", "193.0.14.129", "192.0.2.1"] {
        let addr: Ipv4Addr = text.parse()?;
        let key = u32::from(addr);
        match (engine.lookup(key), rib.longest_match(key)) {
            (Some(label), Some((prefix, _))) => {
                println!("  {addr:<15} next hop {label:<4} (via {prefix})")
            }
            _ => println!("  {addr:<15} no route"),
        }
    }

    // Many addresses, per key: through `dispatch`, so the loop runs on the
    // concrete engine.
    let addrs = random_addrs(1 << 20);
    let started = Instant::now();
    let routed = engine.dispatch(CountRouted(&addrs));
    let per_key = started.elapsed();

    // The same addresses as one batch: engines overlap the memory accesses
    // of neighbouring keys (prefetching, SIMD), which a per-key loop
    // cannot.
    let mut labels = vec![None; addrs.len()];
    let started = Instant::now();
    engine.lookup_batch(&addrs, &mut labels);
    let batch = started.elapsed();
    assert_eq!(
        labels.iter().filter(|label| label.is_some()).count(),
        routed
    );

    let ns = |elapsed: std::time::Duration| elapsed.as_nanos() as f64 / addrs.len() as f64;
    println!(
        "{} random addresses, {routed} routed: {:.1} ns per lookup per key, {:.1} ns in a batch",
        addrs.len(),
        ns(per_key),
        ns(batch)
    );
    Ok(())
}
