//! \[Yeg18\]'s Tables 2 and 3 and its IPv6 table, reproduced on fibkit's
//! `bloom` engine: per-lookup bit lookups, hash computations, exact-table
//! (FIB) lookups and the guided search's fallback (default) rate, for the
//! paper's traffic types and filter settings, plus the lookup rate of each
//! configuration measured in interleaved rounds.
//!
//! Traffic (seeded): `random` is uniform over the whole address space
//! (`fibkit_bench` pattern `rnd`), `by prefix address space` and `by
//! prefix frequency` are `fibkit trace gen` kinds `by-space` and
//! `by-count` (a prefix length drawn by its share of the covered space or
//! of the prefixes, then a prefix of that length, then an address in it).
//! Filters as in the paper: Table 2 linear k=14 at 51.8% of the bits set,
//! guided k=10 at 33.3%; Table 3 guided k=10 at 33.3%, 9.6% and 4.0%; the
//! IPv6 table linear k=10 at 50.1%, guided k=14 at 4.4%, plus the guided
//! search over a tree weighted by traffic (a prefix-frequency sample drawn
//! with seed 2; the measured traffic uses seed 1).
//!
//! ```text
//! cargo run --release -p fibkit-bench --example bloom_tables -- [--v4 FILE] [--v6 FILE]
//!     [--count N] [--rounds R]
//! ```

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use fibkit::engine::{EngineConfig, Updater};
use fibkit::engines::bloom::{Bloom, BloomConfig, BloomUpdater, LookupCounts};
use fibkit::load::{load_table, LoadOptions};
use fibkit::trace::{generate, TraceKind};
use fibkit::{Addr, Label, Lookup, Rib};
use fibkit_bench::thread_cpu_ns as cpu_ns;
use fibkit_bench::{generate_keys, Pattern};

const MIN_RUN: Duration = Duration::from_millis(300);

/// Mlps of on-CPU time over whole passes of `lookup_batch` on `keys`.
fn rate<A: Addr, L: Lookup<A>>(engine: &L, keys: &[A], out: &mut [Option<Label>]) -> f64 {
    let started = cpu_ns();
    let mut passes = 0;
    while cpu_ns() - started < MIN_RUN.as_nanos() as u64 {
        engine.lookup_batch(keys, out);
        black_box(&mut *out);
        passes += 1;
    }
    (passes * keys.len()) as f64 / ((cpu_ns() - started) as f64 / 1e9) / 1e6
}

fn median(values: &[f64]) -> f64 {
    let mut values = values.to_vec();
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// One traffic type's keys.
struct Traffic<A> {
    name: &'static str,
    keys: Vec<A>,
}

fn traffic<A: Addr>(
    rib: &Rib<A>,
    names: &[&'static str],
    count: usize,
) -> Result<Vec<Traffic<A>>, String> {
    names
        .iter()
        .map(|&name| {
            let keys = match name {
                "random" => generate_keys::<A>(&"rnd".parse::<Pattern>()?, count, 1, rib)
                    .map_err(|e| e.to_string())?,
                "by prefix address space" => generate(rib, &TraceKind::BySpace, count, 1)?,
                _ => generate(rib, &TraceKind::ByCount, count, 1)?,
            };
            Ok(Traffic { name, keys })
        })
        .collect()
}

/// Builds each spec, counts the work per lookup for each traffic and
/// measures the lookup rates in `rounds` interleaved rounds; prints one
/// row per (traffic, spec).
fn run<A: Addr + fibkit::storage::Plain>(
    rib: &Rib<A>,
    specs: &[&str],
    traffic: &[Traffic<A>],
    rounds: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut engines: Vec<Bloom<A>> = Vec::new();
    for spec in specs {
        let config = BloomConfig::parse(spec)?;
        let (updater, snapshot) = BloomUpdater::<A>::build(&config, rib)?;
        let stats = updater.stats(&snapshot);
        println!(
            "{spec}: {:.1}% of {} filter bits set ({:.2} MB), {} keys (prefixes and markers), {} distinct lengths",
            stats.fill_percent,
            stats.filter_bits,
            stats.filter_bits as f64 / 8e6,
            stats.prefixes + stats.markers,
            stats.lengths
        );
        engines.push(snapshot);
    }
    println!(
        "\n| traffic | spec | bit lookups | hashing | FIB lookups | default rate | Mlps (median of {rounds}) | ÷ first spec |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|");
    for t in traffic {
        let counts: Vec<LookupCounts> = engines.iter().map(|e| e.count_lookups(&t.keys)).collect();
        let mut out = vec![None; t.keys.len()];
        let mut expected = None;
        let mut mlps = vec![Vec::new(); engines.len()];
        for _ in 0..rounds {
            for (i, engine) in engines.iter().enumerate() {
                mlps[i].push(rate(engine, &t.keys, &mut out));
                match &expected {
                    None => expected = Some(out.clone()),
                    Some(e) if *e != out => {
                        return Err(format!("{} disagrees with {}", specs[i], specs[0]).into())
                    }
                    Some(_) => {}
                }
            }
        }
        for (i, spec) in specs.iter().enumerate() {
            let ratios: Vec<f64> = mlps[i].iter().zip(&mlps[0]).map(|(a, b)| a / b).collect();
            let c = &counts[i];
            println!(
                "| {} | `{spec}` | {:.1} | {:.1} | {:.2} | {:.1}% | {:.2} | {:.2}x |",
                t.name,
                c.bit_lookups_per_lookup(),
                c.hashes_per_lookup(),
                c.exact_lookups_per_lookup(),
                100.0 * c.fallback_rate(),
                median(&mlps[i]),
                median(&ratios)
            );
        }
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data");
    let mut v4 = data.join("dfz-v4-nh.txt.gz");
    let mut v6 = data.join("dfz-v6-nh.txt.gz");
    let mut count = 1usize << 20;
    let mut rounds = 5;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or("a value after the option");
        match arg.as_str() {
            "--v4" => v4 = value()?.into(),
            "--v6" => v6 = value()?.into(),
            "--count" => count = value()?.parse()?,
            "--rounds" => rounds = value()?.parse()?,
            other => return Err(format!("unknown argument `{other}`").into()),
        }
    }
    println!(
        "{count} lookups per traffic type; load average {}",
        std::fs::read_to_string("/proc/loadavg")?.trim()
    );

    let rib = load_table(&v4, &LoadOptions::default())?.v4;
    println!(
        "\n## Table 2: {} ({} IPv4 prefixes)\n",
        v4.display(),
        rib.len()
    );
    let t = traffic(
        &rib,
        &["random", "by prefix address space", "by prefix frequency"],
        count,
    )?;
    run(
        &rib,
        &[
            "bloom:search=linear,fill=51.8,k=14",
            "bloom:search=guided,fill=33.3,k=10",
        ],
        &t,
        rounds,
    )?;
    println!("\n## Table 3: guided search by fill (random traffic)\n");
    run(
        &rib,
        &[
            "bloom:search=guided,fill=33.3,k=10",
            "bloom:search=guided,fill=9.6,k=10",
            "bloom:search=guided,fill=4,k=10",
        ],
        &t[..1],
        rounds,
    )?;
    drop(rib);

    let rib = load_table(&v6, &LoadOptions::default())?.v6;
    println!(
        "\n## IPv6 table: {} ({} IPv6 prefixes)\n",
        v6.display(),
        rib.len()
    );
    let t = traffic(&rib, &["random", "by prefix frequency"], count)?;
    // The weighted tree (§4.1) learns its lengths' weights from a sample of
    // prefix-frequency traffic drawn with another seed than the measured
    // keys, so it is not fitted to the very addresses it is timed on.
    let sample = std::env::temp_dir().join(format!("bloom_tables_{}.trace", std::process::id()));
    let mut file = std::io::BufWriter::new(std::fs::File::create(&sample)?);
    fibkit::trace::write_binary_trace(&mut file, &generate(&rib, &TraceKind::ByCount, count, 2)?)?;
    std::io::Write::flush(&mut file)?;
    drop(file);
    let weighted = format!(
        "bloom:search=guided,fill=4.4,k=14,tree=trace:{}",
        sample.display()
    );
    let result = run(
        &rib,
        &[
            "bloom:search=linear,fill=50.1,k=10",
            "bloom:search=guided,fill=4.4,k=14",
            &weighted,
        ],
        &t,
        rounds,
    );
    std::fs::remove_file(&sample)?;
    result
}
