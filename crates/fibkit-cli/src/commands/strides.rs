//! `fibkit strides`: memory of the multibit tries of controlled prefix
//! expansion for each number of levels (\[SV98\], Tables 5-8).

use std::io::Write;

use anyhow::Result;
use clap::Args;

use fibkit::load::FamilyPart;

use crate::args::parse_levels;
use crate::family::for_family;
use crate::output::say;
use crate::table::{load_table, TableArgs};

/// Arguments of `fibkit strides`.
#[derive(Args, Debug)]
pub struct StridesArgs {
    #[command(flatten)]
    table: TableArgs,
    /// Level counts, as FIRST..LAST (e.g. 2..12) or one number.
    #[arg(long, default_value = "2..12", value_parser = parse_levels)]
    levels: std::ops::RangeInclusive<u8>,
    /// Largest stride in bits (17 keeps the cost of one update bounded,
    /// as controlled prefix expansion proposes).
    #[arg(long, default_value_t = fibkit::engines::cpe::MAX_STRIDE)]
    cap: u8,
    /// Family: v4 or v6 (default: every family the table has).
    #[arg(long, value_parser = ["v4", "v6"])]
    family: Option<String>,
}

/// Runs `fibkit strides`.
pub fn run(args: &StridesArgs) -> Result<bool> {
    strides(
        &args.table,
        args.levels.clone(),
        args.cap,
        args.family.as_deref(),
    )
}

fn strides(
    args: &TableArgs,
    levels: std::ops::RangeInclusive<u8>,
    cap: u8,
    family: Option<&str>,
) -> Result<bool> {
    use fibkit::engines::cpe::stride_report;
    let (table, _) = load_table(args)?;
    for family in crate::family::wanted(family, &table) {
        let report = for_family!(family, A => stride_report(A::rib(&table), levels.clone(), cap));
        say!("{report}");
    }
    Ok(true)
}
