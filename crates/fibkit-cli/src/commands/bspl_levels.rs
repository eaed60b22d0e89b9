//! `fibkit bspl-levels`: binary search on prefix lengths for each number
//! of levels (\[SV98\], Table 11): lengths, memory, build and lookup time.

use std::io::Write;
use std::time::Instant;

use anyhow::Result;
use clap::Args;

use fibkit::engine::Updater;
use fibkit::load::FamilyPart;
use fibkit::{Addr, Lookup, Rib};
use fibkit_bench as bench;

use crate::args::parse_levels;
use crate::family::for_family;
use crate::output::say;
use crate::table::{load_table, TableArgs};

/// Arguments of `fibkit bspl-levels`.
#[derive(Args, Debug)]
pub struct BsplLevelsArgs {
    #[command(flatten)]
    table: TableArgs,
    /// Level counts (the first level included), as FIRST..LAST or one
    /// number.
    #[arg(long, default_value = "2..8", value_parser = parse_levels)]
    levels: std::ops::RangeInclusive<u8>,
    /// Family: v4 or v6 (default: every family the table has).
    #[arg(long, value_parser = ["v4", "v6"])]
    family: Option<String>,
    /// Random addresses timed per layout.
    #[arg(long, default_value_t = 1 << 20)]
    keys: usize,
}

/// Runs `fibkit bspl-levels`.
pub fn run(args: &BsplLevelsArgs) -> Result<bool> {
    bspl_levels(
        &args.table,
        args.levels.clone(),
        args.family.as_deref(),
        args.keys,
    )
}

fn bspl_levels(
    args: &TableArgs,
    levels: std::ops::RangeInclusive<u8>,
    family: Option<&str>,
    keys: usize,
) -> Result<bool> {
    let (table, _) = load_table(args)?;
    for family in crate::family::wanted(family, &table) {
        let fixed = match family {
            fibkit::Family::V4 => "bspl:lengths=16+24+32".to_string(),
            fibkit::Family::V6 => {
                let every_8: Vec<String> =
                    (16..=128).step_by(8).map(|l: u32| l.to_string()).collect();
                format!("bspl:lengths={}", every_8.join("+"))
            }
        };
        for_family!(family, A => bspl_report(A::rib(&table), &fixed, levels.clone(), keys))?;
    }
    Ok(true)
}

/// One `bspl-levels` table: the fixed lengths `fixed`, then the program's
/// lengths for each level count.
fn bspl_report<A: Addr>(
    rib: &Rib<A>,
    fixed: &str,
    levels: std::ops::RangeInclusive<u8>,
    keys: usize,
) -> Result<()> {
    use fibkit::engine::EngineConfig;
    use fibkit::engines::bspl::{BsplConfig, BsplUpdater};
    use fibkit::spec::EngineSpec;
    let addrs = bench::generate_keys(&bench::Pattern::Rnd, keys, 1, rib)?;
    say!("{} ({} prefixes)", A::FAMILY, rib.len());
    say!(
        "{:<24} {:<28} {:>17} {:>18} {:>19} {:>21} {:>10} {:>19}",
        "engine spec",
        "prefix lengths (bits)",
        "hash tables (KiB)",
        "total memory (KiB)",
        "length program (ms)",
        "hash seed search (ms)",
        "build (ms)",
        "random lookup (ns)"
    );
    let specs =
        std::iter::once(fixed.to_string()).chain(levels.map(|k| format!("bspl:levels={k}")));
    for spec in specs {
        let config = BsplConfig::from_spec(&EngineSpec::parse(&spec)?)?;
        let started = Instant::now();
        let (updater, snapshot) = match BsplUpdater::<A>::build(&config, rib) {
            Ok(built) => built,
            Err(e) => {
                say!("{spec:<24} {e}");
                continue;
            }
        };
        let build_ms = started.elapsed().as_secs_f64() * 1e3;
        let stats = updater.stats(&snapshot);
        let started = Instant::now();
        for &addr in &addrs {
            std::hint::black_box(snapshot.lookup(std::hint::black_box(addr)));
        }
        let random_ns = started.elapsed().as_secs_f64() * 1e9 / addrs.len().max(1) as f64;
        let lengths: Vec<String> = std::iter::once(snapshot.first_bits())
            .chain(snapshot.lengths())
            .map(|l| l.to_string())
            .collect();
        say!(
            "{spec:<24} {:<28} {:>17.0} {:>18.0} {:>19.1} {:>21.1} {:>10.0} {:>19.1}",
            lengths.join(","),
            stats.table_bytes as f64 / 1024.0,
            snapshot.memory_bytes() as f64 / 1024.0,
            stats.program_ms,
            stats.seed_search_ms,
            build_ms,
            random_ns
        );
    }
    Ok(())
}
