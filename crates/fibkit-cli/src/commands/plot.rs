//! `fibkit plot`: the plots of a stored benchmark run, drawn again.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

/// Arguments of `fibkit plot`.
#[derive(Args, Debug)]
pub struct PlotArgs {
    /// The results file written by `fibkit bench --json FILE`.
    #[arg(value_name = "RESULTS")]
    json: PathBuf,
    /// Directory for the SVG files (created if missing).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

/// Runs `fibkit plot`.
pub fn run(args: &PlotArgs) -> Result<bool> {
    let written = crate::plots::plot_stored_run(&args.json, &args.out)?;
    for path in written {
        eprintln!("fibkit: wrote {}", path.display());
    }
    Ok(true)
}
