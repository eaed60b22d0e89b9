//! `fibkit stats`: prefix counts, ranges and load time of a table, and
//! each engine's footprint, build time, statistics and work per lookup.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use clap::Args;

use fibkit::engine::{BuildError, EngineStats, Updater};
use fibkit::registry::EngineFamily;
use fibkit::{Family, Lookup, Rib};

use crate::engine::build_timed;
use crate::output::{json_line, say};
use crate::specs::FamilySpecs;
use crate::table::{load_table, TableArgs};

/// Arguments of `fibkit stats`.
#[derive(Args, Debug)]
pub struct StatsArgs {
    #[command(flatten)]
    table: TableArgs,
    /// Engines to build and describe (repeatable; `v4=SPEC` or
    /// `v6=SPEC` for one family).
    #[arg(long = "engine", value_name = "SPEC")]
    engines: Vec<String>,
    /// Also print the next-hop address behind each label.
    #[arg(long)]
    nexthops: bool,
    /// Count each engine's work per lookup over the addresses of this
    /// trace (text, one address per line, or `fibkit trace gen
    /// --binary`): filter bits, hashes, exact-table lookups and
    /// fallbacks for `bloom` (\[Yeg18\]'s counters), key vectors,
    /// backtracking steps and cache lines for `lctrie`, tables probed
    /// for `bspl`. Engines without a counting path say so.
    #[arg(long, value_name = "TRACE")]
    trace: Option<PathBuf>,
    /// JSON lines instead of text: one object per line, told apart by
    /// `kind`: `table` (file, format, load_seconds, records, routes,
    /// duplicates, skipped, host_bits_cleared, nexthops), `family`
    /// (family, prefixes, distinct_labels, ranges_unmerged, ranges,
    /// reference_bytes, prefixes_per_length), `engine` (family, engine,
    /// build_ms, memory_bytes, bytes_per_prefix, stats, and with
    /// --trace lookup_work: name to average per lookup) and with
    /// --nexthops `nexthop` (label, nexthop).
    #[arg(long)]
    json: bool,
}

/// Runs `fibkit stats`.
pub fn run(args: &StatsArgs) -> Result<bool> {
    stats(
        &args.table,
        &args.engines,
        args.nexthops,
        args.trace.as_deref(),
        args.json,
    )
}

fn stats(
    args: &TableArgs,
    engines: &[String],
    nexthops: bool,
    trace: Option<&Path>,
    json: bool,
) -> Result<bool> {
    let (table, seconds) = load_table(args)?;
    let (trace_v4, trace_v6) = match trace {
        Some(path) => {
            let v4 = fibkit::trace::read_trace::<u32>(path)?;
            let v6 = fibkit::trace::read_trace::<u128>(path)?;
            if v4.is_empty() && v6.is_empty() {
                bail!("{}: no addresses in the trace", path.display());
            }
            (Some(v4), Some(v6))
        }
        None => (None, None),
    };
    let specs = if engines.is_empty() {
        FamilySpecs::default()
    } else {
        FamilySpecs::resolve(engines, !table.v4.is_empty(), !table.v6.is_empty())?
    };
    if json {
        json_line(&serde_json::json!({
            "kind": "table",
            "file": args.path.display().to_string(),
            "format": table.format.map(|f| f.name()),
            "load_seconds": seconds,
            "records": table.stats.records,
            "routes": table.stats.routes,
            "duplicates": table.stats.duplicates,
            "skipped": table.stats.skipped,
            "host_bits_cleared": table.stats.masked,
            "nexthops": table.nexthops.len(),
        }))?;
        family_stats_json(&table.v4, &specs.v4, trace_v4.as_deref())
            .map_err(|error| specs.explain(Family::V4, error))?;
        family_stats_json(&table.v6, &specs.v6, trace_v6.as_deref())
            .map_err(|error| specs.explain(Family::V6, error))?;
        if nexthops {
            for (label, addr) in table.nexthops.iter() {
                json_line(
                    &serde_json::json!({"kind": "nexthop", "label": label, "nexthop": addr}),
                )?;
            }
        }
        return Ok(true);
    }
    say!("file        {}", args.path.display());
    say!(
        "format      {}",
        table.format.map(|f| f.name()).unwrap_or("?")
    );
    say!("load time   {:.3} s", seconds);
    say!(
        "records     {} read, {} routes, {} duplicates, {} skipped, {} host bits cleared",
        table.stats.records,
        table.stats.routes,
        table.stats.duplicates,
        table.stats.skipped,
        table.stats.masked
    );
    family_stats(&table.v4, &specs.v4, trace_v4.as_deref())
        .map_err(|error| specs.explain(Family::V4, error))?;
    family_stats(&table.v6, &specs.v6, trace_v6.as_deref())
        .map_err(|error| specs.explain(Family::V6, error))?;
    if nexthops {
        say!("\nnext hops ({}):", table.nexthops.len());
        for (label, addr) in table.nexthops.iter() {
            say!("  {label:>6} {addr}");
        }
    } else if !table.nexthops.is_empty() {
        say!(
            "next hops   {} distinct (list them with --nexthops)",
            table.nexthops.len()
        );
    }
    Ok(true)
}

/// `stats --json` for one family: a `family` line, then an `engine` line
/// per spec.
fn family_stats_json<A: EngineFamily>(
    rib: &Rib<A>,
    engines: &[String],
    trace: Option<&[A]>,
) -> Result<()> {
    if rib.is_empty() {
        return Ok(());
    }
    let mut unmerged = Vec::new();
    rib.ranges_in(A::ZERO, A::MAX, false, &mut unmerged);
    let per_length: serde_json::Map<String, serde_json::Value> = rib
        .prefix_length_histogram()
        .iter()
        .enumerate()
        .filter(|(_, &count)| count > 0)
        .map(|(plen, &count)| (plen.to_string(), count.into()))
        .collect();
    json_line(&serde_json::json!({
        "kind": "family",
        "family": A::FAMILY.to_string(),
        "prefixes": rib.len(),
        "distinct_labels": rib.distinct_labels(),
        "ranges_unmerged": unmerged.len(),
        "ranges": rib.ranges().len(),
        "reference_bytes": rib.memory_bytes(),
        "prefixes_per_length": per_length,
    }))?;
    for spec in engines {
        let built = build_timed(spec, rib)?;
        let bytes = built.snapshot.memory_bytes();
        json_line(&serde_json::json!({
            "kind": "engine",
            "family": A::FAMILY.to_string(),
            "engine": built.spec,
            "build_ms": built.seconds * 1e3,
            "memory_bytes": bytes,
            "bytes_per_prefix": bytes as f64 / rib.len() as f64,
            "stats": serde_json::to_value(built.updater.stats(&built.snapshot))?,
            "lookup_work": trace
                .filter(|addrs| !addrs.is_empty())
                .and_then(|addrs| A::lookup_work(&built.snapshot, addrs))
                .map(|rows| {
                    rows.into_iter()
                        .map(|(name, value)| (name, serde_json::Value::String(value)))
                        .collect::<serde_json::Map<_, _>>()
                }),
        }))?;
    }
    Ok(())
}

fn family_stats<A: EngineFamily>(
    rib: &Rib<A>,
    engines: &[String],
    trace: Option<&[A]>,
) -> Result<()> {
    if rib.is_empty() {
        say!("\n{}: no prefixes", A::FAMILY);
        return Ok(());
    }
    say!(
        "\n{}: {} prefixes, {} distinct labels",
        A::FAMILY,
        rib.len(),
        rib.distinct_labels()
    );
    let mut unmerged = Vec::new();
    rib.ranges_in(A::ZERO, A::MAX, false, &mut unmerged);
    say!(
        "  ranges: {} before merging, {} after",
        unmerged.len(),
        rib.ranges().len()
    );
    say!("  reference trie: {} bytes", rib.memory_bytes());
    say!("  prefixes per length:");
    let histogram = rib.prefix_length_histogram();
    for (plen, count) in histogram.iter().enumerate().filter(|(_, &c)| c > 0) {
        say!(
            "    /{plen:<3} {count:>9} {:>6.2}%",
            100.0 * *count as f64 / rib.len() as f64
        );
    }
    for spec in engines {
        let built = match build_timed(spec, rib) {
            Ok(built) => built,
            Err(error @ BuildError::UnsupportedFamily { .. }) => {
                say!("  engine {spec}: {error}");
                continue;
            }
            Err(error) => return Err(error.into()),
        };
        let bytes = built.snapshot.memory_bytes();
        say!("  engine {}:", built.spec);
        say!("    build time           {:.1} ms", built.seconds * 1e3);
        say!(
            "    footprint            {} bytes ({:.2} bytes/prefix)",
            bytes,
            bytes as f64 / rib.len() as f64
        );
        for (name, value) in built.updater.stats(&built.snapshot).rows() {
            say!("    {name:<20} {value}");
        }
        match trace {
            None => {}
            Some([]) => say!(
                "    work per lookup      the trace has no {} address",
                A::FAMILY
            ),
            Some(addrs) => match A::lookup_work(&built.snapshot, addrs) {
                Some(rows) => {
                    say!("    work per lookup over the trace:");
                    for (name, value) in rows {
                        say!("      {name:<20} {value}");
                    }
                }
                None => say!("    work per lookup      not counted by this engine"),
            },
        }
    }
    Ok(())
}
