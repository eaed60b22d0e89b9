//! Reading the table and update files the subcommands take: the table
//! arguments every subcommand shares, loading with a progress bar, and the
//! notes, duplicates and skipped lines reported on standard error.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Result;
use clap::Args;

use fibkit::load::{
    self, Format, LabelSource, LoadOptions, LoadedTable, LoadedUpdates, NextHopTable, PeerSelector,
};

/// How to read a table file.
#[derive(Args, Debug, Clone)]
pub struct TableArgs {
    /// The table file (`-`: standard input).
    #[arg(value_name = "TABLE")]
    pub path: PathBuf,
    /// Input format instead of detecting it: table, nexthop, updates, mrt,
    /// pfx2as, bgpdump.
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<Format>,
    /// Clear host bits of prefixes like 10.0.0.1/8 instead of rejecting them.
    #[arg(long)]
    pub lenient: bool,
    /// Skip bad lines or records (and count them) instead of stopping.
    #[arg(long)]
    pub skip_bad: bool,
    /// MRT and bgpdump RIB dumps: keep this peer's routes (address, or AS
    /// number like AS64500); default: the peer with most prefixes.
    #[arg(long, value_name = "PEER")]
    pub peer: Option<PeerSelector>,
    /// MRT and bgpdump: label routes by next hop or by origin AS.
    #[arg(long, value_name = "SOURCE", default_value = "nexthop")]
    pub label: LabelSource,
}

/// Where the README's examples and the tests expect the shared data set.
const SHARED_DATA: &str = "shared/data";

/// An error for a table file that does not exist, naming the missing
/// folder when there is one, and where the shared data set belongs when the
/// path points into it (the README's examples do), so a fresh clone without
/// it fails at once with a message saying what is expected where.
fn missing_file(path: &Path) -> anyhow::Error {
    let folder = path.parent().filter(|dir| !dir.as_os_str().is_empty());
    let Some(folder) = folder.filter(|dir| !dir.is_dir()) else {
        return anyhow::anyhow!("{}: no such file", path.display());
    };
    let mut message = format!(
        "{}: no such file, and its folder {} does not exist",
        path.display(),
        folder.display()
    );
    if folder.ends_with(SHARED_DATA) {
        message.push_str(
            ": the README's examples and the tests read the shared data set (dfz-v4-nh.txt.gz \
             and the other tables its README lists) from ../shared/data beside the repository \
             clone; put it there, or give the path of your own table",
        );
    }
    anyhow::anyhow!(message)
}

/// Loads the table, with a progress bar on a terminal; prints notes and
/// skipped counts to standard error.
pub(crate) fn load_table(args: &TableArgs) -> Result<(LoadedTable, f64)> {
    let not_found = |e: std::io::Error| e.kind() == std::io::ErrorKind::NotFound;
    if !reads_stdin(args) && std::fs::metadata(&args.path).is_err_and(not_found) {
        return Err(missing_file(&args.path));
    }
    let size = std::fs::metadata(&args.path).map(|m| m.len()).unwrap_or(0);
    let bar = (std::io::stderr().is_terminal() && size > (1 << 20)).then(|| {
        let bar = indicatif::ProgressBar::new(size);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "loading {msg} {bar:40} {bytes}/{total_bytes} {eta}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar.set_message(args.path.display().to_string());
        bar
    });
    let progress = |bytes: u64| {
        if let Some(bar) = &bar {
            bar.set_position(bytes);
        }
    };
    let options = LoadOptions {
        progress: Some(&progress),
        ..load_options(args, args.format)
    };
    let start = Instant::now();
    let table = if reads_stdin(args) {
        load::Input::new(std::io::stdin(), STDIN_NAME.into())
            .and_then(|input| load::read_table(input, &options))
    } else {
        load::load_table(&args.path, &options)
    };
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let table = table?;
    let seconds = start.elapsed().as_secs_f64();
    report_load(&args.path, &table.notes, &table.stats);
    if table.stats.duplicates > 0 {
        eprintln!(
            "fibkit: {}: {} routes repeated a prefix read before them (the label read last wins)",
            args.path.display(),
            table.stats.duplicates
        );
    }
    Ok((table, seconds))
}

/// How standard input is named in messages.
pub(crate) const STDIN_NAME: &str = "standard input";

/// Whether the table path is `-`: the table comes from standard input.
pub(crate) fn reads_stdin(args: &TableArgs) -> bool {
    args.path.as_os_str() == "-"
}

/// The load options the table arguments give, with `format`.
fn load_options<'a>(args: &TableArgs, format: Option<Format>) -> LoadOptions<'a> {
    LoadOptions {
        format,
        lenient: args.lenient,
        skip_bad: args.skip_bad,
        peer: args.peer,
        label: args.label,
        progress: None,
    }
}

/// Loads the update stream `path` (`format`, or detected) with the table's
/// options (`--skip-bad`, `--lenient`, and `--peer`/`--label` for MRT and
/// bgpdump),
/// interning next hops after the table's.
pub(crate) fn load_updates(
    args: &TableArgs,
    path: &Path,
    format: Option<Format>,
    nexthops: &NextHopTable,
) -> Result<LoadedUpdates> {
    let updates = load::load_updates(path, &load_options(args, format), nexthops.clone())?;
    report_load(path, &updates.notes, &updates.stats);
    Ok(updates)
}

/// Prints a load's notes, what `--skip-bad` skipped and what `--lenient`
/// cleared, to standard error.
fn report_load(path: &Path, notes: &[String], stats: &load::LoadStats) {
    for note in notes {
        eprintln!("fibkit: {note}");
    }
    report_skipped(path, stats);
    if stats.masked > 0 {
        eprintln!(
            "fibkit: {}: cleared host bits of {} prefixes (--lenient)",
            path.display(),
            stats.masked
        );
    }
}

/// Prints what `--skip-bad` skipped in `path`, line by line (as far as the
/// loader kept them), then the count.
fn report_skipped(path: &Path, stats: &load::LoadStats) {
    if stats.skipped == 0 {
        return;
    }
    for problem in &stats.skipped_problems {
        eprintln!("fibkit: {}: {problem} (skipped)", path.display());
    }
    let unlisted = stats.skipped - stats.skipped_problems.len() as u64;
    eprintln!(
        "fibkit: {}: skipped {} bad lines (--skip-bad){}",
        path.display(),
        stats.skipped,
        if unlisted > 0 {
            format!(", {unlisted} of them not listed")
        } else {
            String::new()
        }
    );
}
