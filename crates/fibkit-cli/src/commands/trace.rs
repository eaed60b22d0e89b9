//! `fibkit trace`: synthetic traces drawn from a table (`gen`), and the
//! share of traffic per prefix and length of a trace (`stats`).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use clap::{Args, Subcommand};

use fibkit::load::FamilyPart;
use fibkit::{Addr, Rib};

use crate::args::parse_address_count;
use crate::family::for_family;
use crate::output::{say, Output};
use crate::table::{load_table, TableArgs};

/// What `fibkit trace` does.
#[derive(Subcommand, Debug)]
pub enum TraceCommand {
    /// Write COUNT addresses drawn from the table, one per line.
    Gen(GenArgs),
    /// Share of traffic per prefix and length, top prefixes, and the total
    /// variation distance between the trace's halves.
    Stats(StatsArgs),
}

/// Arguments of `fibkit trace gen`.
#[derive(Args, Debug)]
pub struct GenArgs {
    #[command(flatten)]
    table: TableArgs,
    /// Distribution: randip, randnet, by-space, by-count, zipf:S, mix.
    #[arg(long, value_name = "KIND")]
    kind: fibkit::trace::TraceKind,
    /// Number of addresses (at most 2^28).
    #[arg(long, default_value_t = 1_000_000, value_parser = parse_address_count)]
    count: usize,
    /// Seed of the generator.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Family to draw from: v4 or v6 (default: v4 if the table has IPv4 prefixes).
    #[arg(long, value_parser = ["v4", "v6"])]
    family: Option<String>,
    /// Output file (default: standard output).
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Write the compact binary trace format instead of text (magic
    /// `FKTR\x01`, family byte, then big-endian addresses).
    #[arg(long)]
    binary: bool,
}

/// Arguments of `fibkit trace stats`.
#[derive(Args, Debug)]
pub struct StatsArgs {
    #[command(flatten)]
    table: TableArgs,
    /// The trace: one address per line (plain, gzip or bzip2).
    #[arg(value_name = "TRACE")]
    trace: PathBuf,
    /// How many of the most popular prefixes to list.
    #[arg(long, default_value_t = 10)]
    top: usize,
}

/// Runs a `fibkit trace` command.
pub fn run(command: &TraceCommand) -> Result<bool> {
    match command {
        TraceCommand::Gen(args) => trace_gen(
            &args.table,
            &args.kind,
            args.count,
            args.seed,
            args.family.as_deref(),
            args.output.as_deref(),
            args.binary,
        ),
        TraceCommand::Stats(args) => trace_stats(&args.table, &args.trace, args.top),
    }
}

fn trace_gen(
    args: &TableArgs,
    kind: &fibkit::trace::TraceKind,
    count: usize,
    seed: u64,
    family: Option<&str>,
    output: Option<&Path>,
    binary: bool,
) -> Result<bool> {
    let (table, _) = load_table(args)?;
    let mut out = Output::create(output)?;
    let family = crate::family::chosen(family, !table.v4.is_empty());
    for_family!(family, A => write_trace(&mut out, A::rib(&table), kind, count, seed, binary))?;
    out.flush()?;
    Ok(true)
}

fn write_trace<A: Addr>(
    out: &mut dyn Write,
    rib: &Rib<A>,
    kind: &fibkit::trace::TraceKind,
    count: usize,
    seed: u64,
    binary: bool,
) -> Result<()> {
    let trace = fibkit::trace::generate(rib, kind, count, seed).map_err(anyhow::Error::msg)?;
    if binary {
        fibkit::trace::write_binary_trace(out, &trace)?;
        return Ok(());
    }
    for addr in trace {
        writeln!(out, "{}", addr.display())?;
    }
    Ok(())
}

fn trace_stats(args: &TableArgs, trace: &Path, top: usize) -> Result<bool> {
    let (table, _) = load_table(args)?;
    let v4 = fibkit::trace::read_trace::<u32>(trace)?;
    let v6 = fibkit::trace::read_trace::<u128>(trace)?;
    if v4.is_empty() && v6.is_empty() {
        bail!("{}: no addresses in the trace", trace.display());
    }
    if !v4.is_empty() {
        print_trace_stats(&table.v4, &v4, top)?;
    }
    if !v6.is_empty() {
        print_trace_stats(&table.v6, &v6, top)?;
    }
    Ok(true)
}

fn print_trace_stats<A: Addr>(rib: &Rib<A>, trace: &[A], top: usize) -> Result<()> {
    let stats = fibkit::trace::trace_stats(rib, trace, top);
    say!(
        "{}: {} addresses, {} unmatched, {} distinct prefixes matched",
        A::FAMILY,
        stats.addresses,
        stats.unmatched,
        stats.distinct_prefixes
    );
    say!(
        "  top 1% of matched prefixes carry {:.2}% of the traffic",
        100.0 * stats.top_percent_share
    );
    say!(
        "  total variation distance, first vs second half: {:.4}",
        stats.halves_tvd
    );
    say!("  share of traffic per prefix length:");
    for (plen, share) in stats
        .share_by_length
        .iter()
        .enumerate()
        .filter(|(_, s)| **s > 0.0)
    {
        say!("    /{plen:<3} {:>7.3}%", 100.0 * share);
    }
    say!("  top prefixes:");
    for (prefix, share) in &stats.top_prefixes {
        say!("    {prefix:<24} {:>7.3}%", 100.0 * share);
    }
    Ok(())
}
