//! `fibkit build`: builds an engine and saves it as an image, which
//! `lookup`, `verify --image` and the library open with a memory map.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use clap::Args;

use fibkit::load::FamilyPart;
use fibkit::registry::save_image;

use crate::family::for_family;
use crate::table::{load_table, TableArgs};

/// `--engine`'s help: the engines whose snapshots can be saved.
fn savable_help() -> String {
    format!(
        "The engine to build and save (any variant of: {})",
        fibkit::registry::engine_names(None, true)
    )
}

/// Arguments of `fibkit build`.
#[derive(Args, Debug)]
pub struct BuildArgs {
    #[command(flatten)]
    table: TableArgs,
    // The help lists the engines the registry marks savable.
    #[arg(long = "engine", value_name = "SPEC", default_value = "dir24-8", help = savable_help())]
    engine: String,
    /// The image file to write.
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
    /// Family to save: v4 or v6 (default: v4 if the table has IPv4 prefixes).
    #[arg(long, value_parser = ["v4", "v6"])]
    family: Option<String>,
}

/// Runs `fibkit build`.
pub fn run(args: &BuildArgs) -> Result<bool> {
    let (table, _) = load_table(&args.table)?;
    let family = crate::family::chosen(args.family.as_deref(), !table.v4.is_empty());
    let started = Instant::now();
    for_family!(family, A => save_image(&args.engine, A::rib(&table), &args.output))?;
    let bytes = std::fs::metadata(&args.output)
        .map(|m| m.len())
        .unwrap_or(0);
    writeln!(
        std::io::stdout(),
        "wrote {} ({} bytes, {}, built and written in {:.1} ms)",
        args.output.display(),
        bytes,
        family,
        started.elapsed().as_secs_f64() * 1e3
    )?;
    Ok(true)
}
