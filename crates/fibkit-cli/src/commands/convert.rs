//! `fibkit convert`: a table of any input format written as `prefix label`
//! text, and its next hops.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;

use crate::output::Output;
use crate::table::{load_table, TableArgs};

/// Arguments of `fibkit convert`.
#[derive(Args, Debug)]
pub struct ConvertArgs {
    #[command(flatten)]
    table: TableArgs,
    /// Output file (default: standard output).
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Also write the `label nexthop-address` mapping to this file.
    #[arg(long, value_name = "FILE")]
    nexthops_out: Option<PathBuf>,
}

/// Runs `fibkit convert`.
pub fn run(args: &ConvertArgs) -> Result<bool> {
    convert(
        &args.table,
        args.output.as_deref(),
        args.nexthops_out.as_deref(),
    )
}

fn convert(args: &TableArgs, output: Option<&Path>, nexthops_out: Option<&Path>) -> Result<bool> {
    let (table, _) = load_table(args)?;
    let mut out = Output::create(output)?;
    for (prefix, label) in table.v4.iter() {
        writeln!(out, "{prefix} {label}")?;
    }
    for (prefix, label) in table.v6.iter() {
        writeln!(out, "{prefix} {label}")?;
    }
    out.flush()?;
    if let Some(path) = nexthops_out {
        let mut file = Output::create(Some(path))?;
        for (label, addr) in table.nexthops.iter() {
            writeln!(file, "{label} {addr}")?;
        }
        file.flush()?;
    }
    Ok(true)
}
