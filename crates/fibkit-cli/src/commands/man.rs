//! `fibkit man`: the manual page.

use anyhow::Result;

/// Writes the manual page of `command` (the whole command line), in roff,
/// on standard output.
pub fn run(command: clap::Command) -> Result<bool> {
    clap_mangen::Man::new(command)
        .render(&mut std::io::stdout().lock())
        .map(|()| true)
        .map_err(anyhow::Error::from)
}
