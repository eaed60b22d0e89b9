//! `fibkit completions`: a shell completion script.

use anyhow::Result;
use clap::Args;

/// Arguments of `fibkit completions`.
#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

/// Writes the completion script of `command` (the whole command line) for
/// the shell on standard output.
pub fn run(args: &CompletionsArgs, mut command: clap::Command) -> Result<bool> {
    let mut out = std::io::stdout().lock();
    clap_complete::generate(args.shell, &mut command, "fibkit", &mut out);
    Ok(true)
}
