//! One lookup per key through each call path a program can hold, on an
//! IPv4 table, interleaved in one process (rounds of every configuration,
//! ratios of neighbours in time):
//!
//! - `typed`: the engine's own snapshot type (`Dxr`, `Dir24_8`), what
//!   `Fib<u32, DxrUpdater>` and the engines' builders give;
//! - `enum`: `SnapshotV4::lookup`, the registry's `match` at every call,
//!   what `fibkit::build` returns;
//! - `dispatch`: the same loop run through `SnapshotV4::dispatch`, which
//!   picks the engine once and runs the loop compiled for it.
//!
//! Rates are per second of this thread's on-CPU time, so a shared
//! machine's time slicing does not enter them (its cache contention does).
//!
//! ```text
//! cargo run --release -p fibkit-bench --example perkey_ab -- [--table FILE] [--keys N] [--rounds R]
//! ```

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use fibkit::engine::{EngineConfig, Updater};
use fibkit::engines::dir24_8::{Dir24_8Config, Dir24_8Updater};
use fibkit::engines::dxr::{DxrConfig, DxrUpdater};
use fibkit::load::{load_table, LoadOptions};
use fibkit::registry::SnapshotV4;
use fibkit::{build, Label, Lookup, LookupVisitor};
use fibkit_bench::thread_cpu_ns as cpu_ns;
use fibkit_bench::{generate_keys, Pattern};

const MIN_RUN: Duration = Duration::from_millis(400);

/// Passes over `keys` keys until [`MIN_RUN`] of on-CPU time; Mlps.
fn timed(keys: usize, mut pass: impl FnMut()) -> f64 {
    let started = cpu_ns();
    let mut passes = 0;
    while cpu_ns() - started < MIN_RUN.as_nanos() as u64 {
        pass();
        passes += 1;
    }
    (passes * keys) as f64 / ((cpu_ns() - started) as f64 / 1e9) / 1e6
}

/// The loop a datapath writes: one lookup per key.
#[inline(never)]
fn per_key<L: Lookup<u32>>(engine: &L, keys: &[u32], out: &mut [Option<Label>]) {
    for (key, result) in keys.iter().zip(out.iter_mut()) {
        *result = engine.lookup(*key);
    }
}

/// [`per_key`] run through [`SnapshotV4::dispatch`].
struct PerKey<'a> {
    keys: &'a [u32],
    out: &'a mut [Option<Label>],
}

impl LookupVisitor<u32> for PerKey<'_> {
    type Output = ();
    fn visit<L: Lookup<u32>>(self, engine: &L) {
        per_key(engine, self.keys, self.out)
    }
}

fn median(values: &[f64]) -> f64 {
    let mut values = values.to_vec();
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut table =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/dfz-v4-nh.txt.gz");
    let mut keys = 1usize << 22;
    let mut rounds = 7;
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or("a value after the option");
        match arg.as_str() {
            "--table" => table = value()?.into(),
            "--keys" => keys = value()?.parse()?,
            "--rounds" => rounds = value()?.parse()?,
            other => return Err(format!("unknown argument `{other}`").into()),
        }
    }
    let rib = load_table(&table, &LoadOptions::default())?.v4;
    let keys = generate_keys::<u32>(&"rnd".parse::<Pattern>()?, keys, 1, &rib)?;
    let mut out = vec![None; keys.len()];

    let (_, dxr) = DxrUpdater::build(&DxrConfig::parse("dxr")?, &rib)?;
    let (_, dir) = Dir24_8Updater::build(&Dir24_8Config::parse("dir24-8")?, &rib)?;
    let enum_dxr: SnapshotV4 = build("dxr", &rib)?;
    let enum_dir: SnapshotV4 = build("dir24-8", &rib)?;

    let names = [
        "dxr typed",
        "dxr enum",
        "dxr dispatch",
        "dir24-8 typed",
        "dir24-8 enum",
        "dir24-8 dispatch",
    ];
    let mut mlps = vec![Vec::new(); names.len()];
    let mut reference = None;
    for _ in 0..rounds {
        for (row, name) in names.iter().enumerate() {
            let n = keys.len();
            let rate = match row {
                0 => timed(n, || per_key(&dxr, &keys, &mut out)),
                1 => timed(n, || per_key(&enum_dxr, &keys, &mut out)),
                2 => timed(n, || {
                    enum_dxr.dispatch(PerKey {
                        keys: &keys,
                        out: &mut out,
                    })
                }),
                3 => timed(n, || per_key(&dir, &keys, &mut out)),
                4 => timed(n, || per_key(&enum_dir, &keys, &mut out)),
                _ => timed(n, || {
                    enum_dir.dispatch(PerKey {
                        keys: &keys,
                        out: &mut out,
                    })
                }),
            };
            let answers = black_box(&out).clone();
            match &reference {
                None => reference = Some(answers),
                Some(expected) if *expected != answers => {
                    return Err(format!("{name} gave other answers than dxr typed").into())
                }
                Some(_) => {}
            }
            mlps[row].push(rate);
        }
    }
    println!(
        "{} keys (rnd), {rounds} rounds; load average {}",
        keys.len(),
        std::fs::read_to_string("/proc/loadavg")?.trim()
    );
    println!(
        "\n| call path | Mlps (median) | ÷ typed (median of per-round ratios) | Mlps per round |"
    );
    println!("|---|---:|---:|---|");
    for (row, name) in names.iter().enumerate() {
        let typed = &mlps[row / 3 * 3];
        let ratios: Vec<f64> = mlps[row].iter().zip(typed).map(|(a, b)| a / b).collect();
        let rounds: Vec<String> = mlps[row].iter().map(|v| format!("{v:.1}")).collect();
        println!(
            "| {name} | {:.1} | {:.2}x | {} |",
            median(&mlps[row]),
            median(&ratios),
            rounds.join(" ")
        );
    }
    Ok(())
}
