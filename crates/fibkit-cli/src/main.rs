//! The `fibkit` command: argument parsing and printing around the library.

mod bench;
mod commands;
mod family;
mod image;
mod model;
mod plots;
mod replay;
mod specs;

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, CommandFactory, Parser, Subcommand};

use fibkit::load::{Format, LabelSource, PeerSelector};

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
    for info in fibkit::ENGINES {
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
         dxr6, poptrie and btree lookups (default: the widest the CPU has)\n",
        fibkit::cpu::MAX_SIMD_ENV
    ));
    text
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Prefix counts per length, distinct labels, ranges, load time; with
    /// --engine, each engine's footprint, build time and own statistics.
    Stats {
        #[command(flatten)]
        table: TableArgs,
        /// Engines to build and describe (repeatable; `v4=SPEC` or
        /// `v6=SPEC` for one family).
        #[arg(long = "engine", value_name = "SPEC")]
        engines: Vec<String>,
        /// Also print the next-hop address behind each label.
        #[arg(long)]
        nexthops: bool,
        /// Count each engine's work per lookup over the addresses of this
        /// trace (text, one address per line, or `fibkit trace gen
        /// --binary`): filter bits, hashes, exact-table lookups and
        /// fallbacks for `bloom` (\[Yeg18\]'s counters), key vectors,
        /// backtracking steps and cache lines for `lctrie`, tables probed
        /// for `bspl`. Engines without a counting path say so.
        #[arg(long, value_name = "TRACE")]
        trace: Option<PathBuf>,
        /// JSON lines instead of text: one object per line, told apart by
        /// `kind`: `table` (file, format, load_seconds, records, routes,
        /// duplicates, skipped, host_bits_cleared, nexthops), `family`
        /// (family, prefixes, distinct_labels, ranges_unmerged, ranges,
        /// reference_bytes, prefixes_per_length), `engine` (family, engine,
        /// build_ms, memory_bytes, bytes_per_prefix, stats, and with
        /// --trace lookup_work: name to average per lookup) and with
        /// --nexthops `nexthop` (label, nexthop).
        #[arg(long)]
        json: bool,
    },
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
    Lookup {
        #[command(flatten)]
        table: TableArgs,
        /// Addresses to look up; none: read standard input, one per line.
        addrs: Vec<String>,
        /// What names the match: the label, the next hop (address, or origin
        /// AS for `--label origin-as` and prefix-to-AS files), or both.
        #[arg(long, value_enum, default_value_t = Show::Label)]
        show: Show,
        /// One JSON object per line instead of text.
        #[arg(long)]
        json: bool,
        /// Engine answering the lookups (the matched prefix is taken from the
        /// reference table); one per family, `v4=SPEC` or `v6=SPEC` to choose
        /// per family. Default: dxr for IPv4, dxr6 for IPv6.
        #[arg(long = "engine", value_name = "SPEC")]
        engines: Vec<String>,
    },
    /// Check engines against the reference table on every range boundary
    /// and random addresses; prints `N passed, M failed`, exits 1 on failure.
    Verify {
        #[command(flatten)]
        table: TableArgs,
        /// Engines to check (repeatable; `v4=SPEC` or `v6=SPEC` for one
        /// family; an engine of one family leaves the other to its default).
        #[arg(
            long = "engine",
            value_name = "SPEC",
            required_unless_present = "image"
        )]
        engines: Vec<String>,
        /// Check this saved image (`fibkit build`) against the table instead.
        #[arg(long, value_name = "FILE", conflicts_with_all = ["engines", "updates"])]
        image: Option<PathBuf>,
        /// Random addresses checked besides the range boundaries (at most 2^28).
        #[arg(long, default_value_t = 1_000_000, value_parser = parse_address_count)]
        random: usize,
        /// Seed of the random addresses.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Replay this update stream (text, MRT BGP4MP or bgpdump -m) onto the table and
        /// each engine, verifying after every --check-every updates and at the end.
        #[arg(long, value_name = "FILE")]
        updates: Option<PathBuf>,
        /// Format of the --updates file instead of detecting it: updates, mrt,
        /// bgpdump.
        #[arg(long, value_name = "FORMAT", requires = "updates")]
        updates_format: Option<Format>,
        /// With --updates: verify after this many updates (0: only at the end).
        #[arg(long, default_value_t = 5000)]
        check_every: usize,
        /// JSON lines instead of text, told apart by `kind`: `check`
        /// (engine, family, when, checked, passed, failed, mismatches),
        /// `updates` (engine, family, updates, update_ms, rebuilds), and a
        /// last `total` (passed, failed).
        #[arg(long, conflicts_with = "image")]
        json: bool,
    },
    /// Build an engine and save it as an image that `lookup`, `verify
    /// --image` and the library open with a memory map, without rebuilding.
    Build(image::BuildArgs),
    /// Write a table (any input format) as `prefix label` text.
    Convert {
        #[command(flatten)]
        table: TableArgs,
        /// Output file (default: standard output).
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Also write the `label nexthop-address` mapping to this file.
        #[arg(long, value_name = "FILE")]
        nexthops_out: Option<PathBuf>,
    },
    /// Measure lookup throughput of engines in alternating rounds: run 1
    /// of every configuration, then run 2, ...
    ///
    /// The same keys for every engine, throughput as the median of the
    /// rounds: the method of Zec's DXR thesis, section 3.6.
    Bench(bench::BenchArgs),
    /// Draw the plots of a stored benchmark run again (the JSON of `fibkit
    /// bench --json`), without measuring anything.
    Plot {
        /// The results file written by `fibkit bench --json FILE`.
        #[arg(value_name = "RESULTS")]
        json: PathBuf,
        /// Directory for the SVG files (created if missing).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// Memory of multibit tries for each number of levels: fixed and
    /// variable strides, leaf-pushed or not, packed nodes or not, and the
    /// strides chosen.
    ///
    /// The tries are those of controlled prefix expansion (the `cpe`
    /// engine): Srinivasan and Varghese, "Fast address lookups using
    /// controlled prefix expansion", Tables 5-8. Memory is in KiB; time is
    /// the run time of the stride programs themselves.
    Strides {
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
    },
    /// Binary search on prefix lengths (the `bspl` engine) for each number
    /// of levels: the prefix lengths searched, memory, build time and the
    /// time of a lookup of uniformly random addresses.
    ///
    /// The first row is the fixed lengths 16,24,32 (IPv6: every 8 bits from
    /// 16 to 128), the others the lengths the length program chooses for
    /// that many levels, as in Table 11 of Srinivasan and Varghese, "Fast
    /// address lookups using controlled prefix expansion". The length
    /// program's and the hash seed search's run times are shown apart.
    BsplLevels {
        #[command(flatten)]
        table: TableArgs,
        /// Level counts (the first level included), as FIRST..LAST or one
        /// number.
        #[arg(long, default_value = "2..8", value_parser = parse_levels)]
        levels: std::ops::RangeInclusive<u8>,
        /// Family: v4 or v6 (default: every family the table has).
        #[arg(long, value_parser = ["v4", "v6"])]
        family: Option<String>,
        /// Random addresses timed per layout.
        #[arg(long, default_value_t = 1 << 20)]
        keys: usize,
    },
    /// Replay an update stream onto a live table while reader threads look
    /// up keys: changes applied per second, update-to-visible latency,
    /// reader throughput during the churn against idle, and a final check
    /// against the reference table on every range boundary.
    Replay(replay::ReplayArgs),
    /// Generate synthetic traces, or summarise a trace against a table.
    #[command(subcommand)]
    Trace(TraceCommand),
    /// The performance model of the `levels` engine (Narlikar and Zane):
    /// trace summaries, calibration, predicted vs measured lookup times.
    #[command(subcommand)]
    Model(model::ModelCommand),
    /// Print a shell completion script for SHELL (bash, zsh, fish,
    /// elvish, powershell) on standard output.
    ///
    /// For example `fibkit completions bash > ~/.local/share/bash-completion/completions/fibkit`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff) on standard output, e.g.
    /// `fibkit man > ~/.local/share/man/man1/fibkit.1`.
    Man,
}

#[derive(Subcommand, Debug)]
enum TraceCommand {
    /// Write COUNT addresses drawn from the table, one per line.
    Gen {
        #[command(flatten)]
        table: TableArgs,
        /// Distribution: randip, randnet, by-space, by-count, zipf:S, mix.
        #[arg(long, value_name = "KIND")]
        kind: fibkit::trace::TraceKind,
        /// Number of addresses (at most 2^28).
        #[arg(long, default_value_t = 1_000_000, value_parser = parse_address_count)]
        count: usize,
        /// Seed of the generator.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Family to draw from: v4 or v6 (default: v4 if the table has IPv4 prefixes).
        #[arg(long, value_parser = ["v4", "v6"])]
        family: Option<String>,
        /// Output file (default: standard output).
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Write the compact binary trace format instead of text (magic
        /// `FKTR\x01`, family byte, then big-endian addresses).
        #[arg(long)]
        binary: bool,
    },
    /// Share of traffic per prefix and length, top prefixes, and the total
    /// variation distance between the trace's halves.
    Stats {
        #[command(flatten)]
        table: TableArgs,
        /// The trace: one address per line (plain, gzip or bzip2).
        #[arg(value_name = "TRACE")]
        trace: PathBuf,
        /// How many of the most popular prefixes to list.
        #[arg(long, default_value_t = 10)]
        top: usize,
    },
}

/// What `lookup` prints for a match.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Show {
    /// The label (the interned index for next-hop tables).
    Label,
    /// The next-hop address, or `AS<number>` for origin-AS labels.
    Nexthop,
    /// The label, then the next hop.
    Both,
}

/// How to read a table file.
#[derive(Args, Debug, Clone)]
struct TableArgs {
    /// The table file (`-`: standard input).
    #[arg(value_name = "TABLE")]
    path: PathBuf,
    /// Input format instead of detecting it: table, nexthop, updates, mrt,
    /// pfx2as, bgpdump.
    #[arg(long, value_name = "FORMAT")]
    format: Option<Format>,
    /// Clear host bits of prefixes like 10.0.0.1/8 instead of rejecting them.
    #[arg(long)]
    lenient: bool,
    /// Skip bad lines or records (and count them) instead of stopping.
    #[arg(long)]
    skip_bad: bool,
    /// MRT and bgpdump RIB dumps: keep this peer's routes (address, or AS
    /// number like AS64500); default: the peer with most prefixes.
    #[arg(long, value_name = "PEER")]
    peer: Option<PeerSelector>,
    /// MRT and bgpdump: label routes by next hop or by origin AS.
    #[arg(long, value_name = "SOURCE", default_value = "nexthop")]
    label: LabelSource,
}

fn parse_levels(text: &str) -> Result<std::ops::RangeInclusive<u8>, String> {
    let bad = || format!("`{text}` is not a level range like 2..12 (levels 1..=128)");
    let (first, last) = match text.split_once("..") {
        Some((first, last)) => (first, last.strip_prefix('=').unwrap_or(last)),
        None => (text, text),
    };
    let first: u8 = first.trim().parse().map_err(|_| bad())?;
    let last: u8 = last.trim().parse().map_err(|_| bad())?;
    if first == 0 || first > last || last > 128 {
        return Err(bad());
    }
    Ok(first..=last)
}

/// A count of addresses to generate or check: at most
/// [`fibkit::trace::MAX_ADDRESSES`], refused before anything is allocated.
pub(crate) fn parse_address_count(text: &str) -> Result<usize, String> {
    let count = text
        .parse::<usize>()
        .map_err(|_| format!("`{text}` is not a count"))?;
    fibkit::trace::check_address_count(count)
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
        Command::Stats {
            table,
            engines,
            nexthops,
            trace,
            json,
        } => commands::stats(&table, &engines, nexthops, trace.as_deref(), json),
        Command::Lookup {
            table,
            addrs,
            show,
            json,
            engines,
        } => commands::lookup(&table, &addrs, &engines, show, json),
        Command::Verify {
            table,
            image: Some(image),
            random,
            seed,
            ..
        } => image::verify(&table, &image, random, seed),
        Command::Verify {
            table,
            engines,
            random,
            seed,
            updates,
            updates_format,
            check_every,
            json,
            image: None,
        } => commands::verify(
            &table,
            &engines,
            random,
            seed,
            updates.as_deref().map(|path| (path, updates_format)),
            check_every,
            json,
        ),
        Command::Convert {
            table,
            output,
            nexthops_out,
        } => commands::convert(&table, output.as_deref(), nexthops_out.as_deref()),
        Command::Bench(args) => bench::bench(&args),
        Command::Plot { json, out } => plots::plot_stored_run(&json, &out).map(|written| {
            for path in written {
                eprintln!("fibkit: wrote {}", path.display());
            }
            true
        }),
        Command::Build(args) => image::build(&args),
        Command::Replay(args) => replay::replay_command(&args),
        Command::Strides {
            table,
            levels,
            cap,
            family,
        } => commands::strides(&table, levels, cap, family.as_deref()),
        Command::BsplLevels {
            table,
            levels,
            family,
            keys,
        } => commands::bspl_levels(&table, levels, family.as_deref(), keys),
        Command::Trace(TraceCommand::Gen {
            table,
            kind,
            count,
            seed,
            family,
            output,
            binary,
        }) => commands::trace_gen(
            &table,
            &kind,
            count,
            seed,
            family.as_deref(),
            output.as_deref(),
            binary,
        ),
        Command::Model(command) => model::model(&command),
        Command::Trace(TraceCommand::Stats { table, trace, top }) => {
            commands::trace_stats(&table, &trace, top)
        }
        Command::Completions { shell } => {
            let mut command = Cli::command();
            let mut out = std::io::stdout().lock();
            clap_complete::generate(shell, &mut command, "fibkit", &mut out);
            Ok(true)
        }
        Command::Man => clap_mangen::Man::new(Cli::command())
            .render(&mut std::io::stdout().lock())
            .map(|()| true)
            .map_err(anyhow::Error::from),
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
