//! `fibkit model summary`: the per-prefix lookup counts of a trace, which
//! the model reads.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

use fibkit::model::TraceSummary;
use fibkit::{Addr, Rib};

use super::common::{checked_summary, traces_of};
use crate::table::{load_table, TableArgs};

/// Arguments of `fibkit model summary`.
#[derive(Args, Debug)]
pub struct SummaryArgs {
    #[command(flatten)]
    table: TableArgs,
    /// The trace (`fibkit trace gen`).
    #[arg(long)]
    trace: PathBuf,
    /// Where to write the summary.
    #[arg(long)]
    out: PathBuf,
}

/// Runs `fibkit model summary`.
pub fn run(args: &SummaryArgs) -> Result<bool> {
    let SummaryArgs { table, trace, out } = args;
    let (table, _) = load_table(table)?;
    let (v4, v6) = traces_of(trace)?;
    let text = if !v4.is_empty() {
        summarise(&table.v4, &v4)?
    } else {
        summarise(&table.v6, &v6)?
    };
    std::fs::write(out, text).with_context(|| format!("writing {}", out.display()))?;
    println!("wrote {}", out.display());
    Ok(true)
}

/// The summary's text, after printing the distance between the trace's
/// halves (the paper's Table 1).
fn summarise<A: Addr>(rib: &Rib<A>, trace: &[A]) -> Result<String> {
    let summary = checked_summary(rib, trace)?;
    let half = trace.len() / 2;
    let first = TraceSummary::from_trace(rib, &trace[..half]);
    let second = TraceSummary::from_trace(rib, &trace[half..]);
    let (by_prefix, by_length) = first.distance(&second);
    println!(
        "{} lookups, {} unmatched, {} prefixes matched; total variation distance between the \
         halves: by prefix {by_prefix:.3}, by prefix length {by_length:.3}",
        summary.lookups,
        summary.unmatched,
        summary.counts.len()
    );
    Ok(summary.to_text())
}
