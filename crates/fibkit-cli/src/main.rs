//! The `fibkit` command: argument parsing and printing around the library.
//!
//! `commands/` holds one module per subcommand (its arguments and what it
//! runs); the modules beside it are what subcommands share: reading tables
//! (`table`), writing results (`output`), engines by spec (`engine`,
//! `specs`, `family`), argument parsers (`args`) and plots (`plots`).

mod args;
mod commands;
mod engine;
mod family;
mod output;
mod plots;
mod specs;
mod table;

use anyhow::Result;
use clap::{CommandFactory, Parser, Subcommand};

use commands::{
    bench, bspl_levels, build, completions, convert, lookup, man, model, plot, replay, stats,
    strides, trace, verify,
};

/// fibkit: longest-prefix-match engines for IPv4 and IPv6 forwarding tables.
///
/// TABLE files may be `prefix label` text, `prefix nexthop-address` text,
/// CAIDA prefix-to-AS files (`address length origin`), MRT RIB dumps or
/// bgpdump's text of them (`bgpdump -m`), plain, gzip or bzip2 compressed
/// (detected from the content).
#[derive(Parser, Debug)]
#[command(name = "fibkit", version, about, long_about = None, after_help = engines_help())]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

fn engines_help() -> String {
    let mut text = String::from("Engines (--engine SPEC, SPEC = name[:key=value,flag,...]):\n");
    for info in fibkit::registry::ENGINES {
        let families = match (info.ipv4, info.ipv6) {
            (true, true) => "IPv4+IPv6",
            (true, false) => "IPv4",
            _ => "IPv6",
        };
        text.push_str(&format!(
            "  {:<10} {:<9} {}\n",
            info.name, families, info.about
        ));
    }
    text.push_str(&format!(
        "\nEnvironment:\n  {}=avx512|avx2|portable  caps the vector instructions of the \
         engines' lookups (default: the widest the CPU has; `fibkit stats` names the path \
         each engine takes)\n",
        fibkit::cpu::MAX_SIMD_ENV
    ));
    text
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Prefix counts per length, distinct labels, ranges, load time; with
    /// --engine, each engine's footprint, build time and own statistics.
    Stats(stats::StatsArgs),
    /// Longest match for each ADDR, or for each line of standard input.
    ///
    /// Prints `address prefix label`, or `address - none` without a match
    /// (with --show nexthop the next-hop address or `AS<number>` replaces
    /// the label). Standard input is answered line by line as it arrives,
    /// so `fibkit lookup` works as a co-process. TABLE `-` reads the table
    /// from standard input; the addresses then come from the arguments.
    /// TABLE may also be an image written by `fibkit build` (the prefix is
    /// then printed as `?`: an image keeps no reference table).
    ///
    /// --json prints one JSON object per address:
    /// `{"addr":"10.1.2.3","prefix":"10.0.0.0/8","label":7}`, with
    /// `"nexthop":"192.0.2.1"` for tables of next-hop addresses and
    /// `"origin_as":64500` for MRT and bgpdump tables labelled by origin AS
    /// and for prefix-to-AS files; `prefix` and `label` are null without a match.
    Lookup(lookup::LookupArgs),
    /// Check engines against the reference table on every range boundary
    /// and random addresses; prints `N passed, M failed`, exits 1 on failure.
    Verify(verify::VerifyArgs),
    /// Build an engine and save it as an image that `lookup`, `verify
    /// --image` and the library open with a memory map, without rebuilding.
    Build(build::BuildArgs),
    /// Write a table (any input format) as `prefix label` text.
    Convert(convert::ConvertArgs),
    /// Measure lookup throughput of engines in alternating rounds: run 1
    /// of every configuration, then run 2, ...
    ///
    /// The same keys for every engine, throughput as the median of the
    /// rounds: the method of Zec's DXR thesis, section 3.6.
    Bench(bench::BenchArgs),
    /// Draw the plots of a stored benchmark run again (the JSON of `fibkit
    /// bench --json`), without measuring anything.
    Plot(plot::PlotArgs),
    /// Memory of multibit tries for each number of levels: fixed and
    /// variable strides, leaf-pushed or not, packed nodes or not, and the
    /// strides chosen.
    ///
    /// The tries are those of controlled prefix expansion (the `cpe`
    /// engine): Srinivasan and Varghese, "Fast address lookups using
    /// controlled prefix expansion", Tables 5-8. Memory is in KiB; time is
    /// the run time of the stride programs themselves.
    Strides(strides::StridesArgs),
    /// Binary search on prefix lengths (the `bspl` engine) for each number
    /// of levels: the prefix lengths searched, memory, build time and the
    /// time of a lookup of uniformly random addresses.
    ///
    /// The first row is the fixed lengths 16,24,32 (IPv6: every 8 bits from
    /// 16 to 128), the others the lengths the length program chooses for
    /// that many levels, as in Table 11 of Srinivasan and Varghese, "Fast
    /// address lookups using controlled prefix expansion". The length
    /// program's and the hash seed search's run times are shown apart.
    BsplLevels(bspl_levels::BsplLevelsArgs),
    /// Replay an update stream onto a live table while reader threads look
    /// up keys: changes applied per second, update-to-visible latency,
    /// reader throughput during the churn against idle, and a final check
    /// against the reference table on every range boundary.
    Replay(replay::ReplayArgs),
    /// Generate synthetic traces, or summarise a trace against a table.
    #[command(subcommand)]
    Trace(trace::TraceCommand),
    /// The performance model of the `levels` engine (Narlikar and Zane):
    /// trace summaries, calibration, predicted vs measured lookup times.
    #[command(subcommand)]
    Model(model::ModelCommand),
    /// Print a shell completion script for SHELL (bash, zsh, fish,
    /// elvish, powershell) on standard output.
    ///
    /// For example `fibkit completions bash > ~/.local/share/bash-completion/completions/fibkit`.
    Completions(completions::CompletionsArgs),
    /// Print the manual page (roff) on standard output, e.g.
    /// `fibkit man > ~/.local/share/man/man1/fibkit.1`.
    Man,
}

/// Whether the error is a closed standard output (a reader like `head` left).
fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn main() {
    let cli = Cli::parse();
    // The engines would take a bad cap as `portable` and run on; a
    // command refuses it before doing any work.
    if let Err(error) = fibkit::cpu::max_simd_from_env() {
        eprintln!("fibkit: error: {error}");
        std::process::exit(2);
    }
    let result: Result<bool> = match cli.command {
        Command::Stats(args) => stats::run(&args),
        Command::Lookup(args) => lookup::run(&args),
        Command::Verify(args) => verify::run(&args),
        Command::Build(args) => build::run(&args),
        Command::Convert(args) => convert::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Plot(args) => plot::run(&args),
        Command::Strides(args) => strides::run(&args),
        Command::BsplLevels(args) => bspl_levels::run(&args),
        Command::Replay(args) => replay::run(&args),
        Command::Trace(command) => trace::run(&command),
        Command::Model(command) => model::run(&command),
        Command::Completions(args) => completions::run(&args, Cli::command()),
        Command::Man => man::run(Cli::command()),
    };
    match result {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(error) if is_broken_pipe(&error) => {}
        Err(error) => {
            eprintln!("fibkit: error: {error:#}");
            std::process::exit(2);
        }
    }
}
