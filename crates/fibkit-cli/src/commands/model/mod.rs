//! `fibkit model`: trace summaries, calibration and the predicted-vs-
//! measured tables of the performance model (Narlikar and Zane).

mod calibrate;
mod common;
mod predict;
mod summary;

use anyhow::Result;
use clap::Subcommand;

use calibrate::CalibrateArgs;
use predict::PredictArgs;
use summary::SummaryArgs;

/// What `fibkit model` does.
#[derive(Subcommand, Debug)]
pub enum ModelCommand {
    /// Count the longest match of every trace address: the per-prefix
    /// lookup frequencies the model reads (`# fibkit trace summary v1`).
    Summary(SummaryArgs),
    /// Measure this machine: a pointer-chase latency curve from half the L1
    /// to 256-512 MiB (three sweeps), whose plateaus become the model's
    /// levels, then t_trie, t_tree, t_const and the share of a tree-node
    /// miss a lookup waits for, fitted by least squares of the relative
    /// errors to dependent lookups of a few `levels` structures on the
    /// trace, and t_trie and t_const of `dxr` and `cpe` fitted so on their
    /// own layouts. The costs are those of the trace's family (the file
    /// serves that family only: calibrate once per family).
    Calibrate(CalibrateArgs),
    /// Predicted average lookup time of every `levels` structure for each
    /// trace, the optimum per trace (the paper's Table 4) and the penalty of
    /// another trace's optimum (Table 5); with --measure, predicted against
    /// measured dependent lookups and the errors (Table 3).
    Predict(PredictArgs),
}

/// Runs a `fibkit model` command.
pub fn run(command: &ModelCommand) -> Result<bool> {
    match command {
        ModelCommand::Summary(args) => summary::run(args),
        ModelCommand::Calibrate(args) => calibrate::run(args),
        ModelCommand::Predict(args) => predict::run(args),
    }
}
