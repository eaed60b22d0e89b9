//! The subcommands: each loads, calls the library and prints.

use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use fibkit::load::{
    self, FamilyPart, Format, LineReader, LoadOptions, LoadedTable, LoadedUpdates, NextHopTable,
};
use fibkit::prefix::excerpt;
use fibkit::{
    Addr, BuildError, Change, EngineFamily, EngineStats, Family, Fib, Lookup, Rib, Updater,
};
use fibkit_bench as bench;

use crate::family::for_family;
use crate::specs::FamilySpecs;
use crate::{Show, TableArgs};

/// `println!` that returns an error instead of panicking when standard output
/// is closed (`fibkit lookup ... | head`); main exits quietly on a broken pipe.
macro_rules! say {
    ($($arg:tt)*) => {
        writeln!(std::io::stdout(), $($arg)*)?
    };
}
pub(crate) use say;

/// Prints `value` as one line of JSON on standard output.
fn json_line(value: &serde_json::Value) -> Result<()> {
    say!("{value}");
    Ok(())
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
const STDIN_NAME: &str = "standard input";

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

/// An engine built for one family: its updater, its snapshot, its
/// canonical spec and its build time in seconds.
pub(crate) struct Built<A: EngineFamily> {
    pub updater: A::Engine,
    pub snapshot: A::Snapshot,
    pub spec: String,
    pub seconds: f64,
}

/// Builds `spec` for one family, timing it.
pub(crate) fn build_timed<A: EngineFamily>(
    spec: &str,
    rib: &Rib<A>,
) -> Result<Built<A>, BuildError> {
    let config: A::Config = spec.parse()?;
    let start = Instant::now();
    let (updater, snapshot) = A::Engine::build(&config, rib)?;
    // The layout the build settled on (`dxr` may raise its `align`).
    let spec = updater.config().to_string();
    Ok(Built {
        updater,
        snapshot,
        spec,
        seconds: start.elapsed().as_secs_f64(),
    })
}

pub fn stats(
    args: &TableArgs,
    engines: &[String],
    nexthops: bool,
    trace: Option<&Path>,
    json: bool,
) -> Result<bool> {
    let (table, seconds) = load_table(args)?;
    let (trace_v4, trace_v6) = match trace {
        Some(path) => {
            let v4 = fibkit::trace::read_trace::<u32>(path)?;
            let v6 = fibkit::trace::read_trace::<u128>(path)?;
            if v4.is_empty() && v6.is_empty() {
                bail!("{}: no addresses in the trace", path.display());
            }
            (Some(v4), Some(v6))
        }
        None => (None, None),
    };
    let specs = if engines.is_empty() {
        FamilySpecs::default()
    } else {
        FamilySpecs::resolve(engines, !table.v4.is_empty(), !table.v6.is_empty())?
    };
    if json {
        json_line(&serde_json::json!({
            "kind": "table",
            "file": args.path.display().to_string(),
            "format": table.format.map(|f| f.name()),
            "load_seconds": seconds,
            "records": table.stats.records,
            "routes": table.stats.routes,
            "duplicates": table.stats.duplicates,
            "skipped": table.stats.skipped,
            "host_bits_cleared": table.stats.masked,
            "nexthops": table.nexthops.len(),
        }))?;
        family_stats_json(&table.v4, &specs.v4, trace_v4.as_deref())
            .map_err(|error| specs.explain(Family::V4, error))?;
        family_stats_json(&table.v6, &specs.v6, trace_v6.as_deref())
            .map_err(|error| specs.explain(Family::V6, error))?;
        if nexthops {
            for (label, addr) in table.nexthops.iter() {
                json_line(
                    &serde_json::json!({"kind": "nexthop", "label": label, "nexthop": addr}),
                )?;
            }
        }
        return Ok(true);
    }
    say!("file        {}", args.path.display());
    say!(
        "format      {}",
        table.format.map(|f| f.name()).unwrap_or("?")
    );
    say!("load time   {:.3} s", seconds);
    say!(
        "records     {} read, {} routes, {} duplicates, {} skipped, {} host bits cleared",
        table.stats.records,
        table.stats.routes,
        table.stats.duplicates,
        table.stats.skipped,
        table.stats.masked
    );
    family_stats(&table.v4, &specs.v4, trace_v4.as_deref())
        .map_err(|error| specs.explain(Family::V4, error))?;
    family_stats(&table.v6, &specs.v6, trace_v6.as_deref())
        .map_err(|error| specs.explain(Family::V6, error))?;
    if nexthops {
        say!("\nnext hops ({}):", table.nexthops.len());
        for (label, addr) in table.nexthops.iter() {
            say!("  {label:>6} {addr}");
        }
    } else if !table.nexthops.is_empty() {
        say!(
            "next hops   {} distinct (list them with --nexthops)",
            table.nexthops.len()
        );
    }
    Ok(true)
}

/// `stats --json` for one family: a `family` line, then an `engine` line
/// per spec.
fn family_stats_json<A: EngineFamily>(
    rib: &Rib<A>,
    engines: &[String],
    trace: Option<&[A]>,
) -> Result<()> {
    if rib.is_empty() {
        return Ok(());
    }
    let mut unmerged = Vec::new();
    rib.ranges_in(A::ZERO, A::MAX, false, &mut unmerged);
    let per_length: serde_json::Map<String, serde_json::Value> = rib
        .prefix_length_histogram()
        .iter()
        .enumerate()
        .filter(|(_, &count)| count > 0)
        .map(|(plen, &count)| (plen.to_string(), count.into()))
        .collect();
    json_line(&serde_json::json!({
        "kind": "family",
        "family": A::FAMILY.to_string(),
        "prefixes": rib.len(),
        "distinct_labels": rib.distinct_labels(),
        "ranges_unmerged": unmerged.len(),
        "ranges": rib.ranges().len(),
        "reference_bytes": rib.memory_bytes(),
        "prefixes_per_length": per_length,
    }))?;
    for spec in engines {
        let built = build_timed(spec, rib)?;
        let bytes = built.snapshot.memory_bytes();
        json_line(&serde_json::json!({
            "kind": "engine",
            "family": A::FAMILY.to_string(),
            "engine": built.spec,
            "build_ms": built.seconds * 1e3,
            "memory_bytes": bytes,
            "bytes_per_prefix": bytes as f64 / rib.len() as f64,
            "stats": serde_json::to_value(built.updater.stats(&built.snapshot))?,
            "lookup_work": trace
                .filter(|addrs| !addrs.is_empty())
                .and_then(|addrs| A::lookup_work(&built.snapshot, addrs))
                .map(|rows| {
                    rows.into_iter()
                        .map(|(name, value)| (name, serde_json::Value::String(value)))
                        .collect::<serde_json::Map<_, _>>()
                }),
        }))?;
    }
    Ok(())
}

fn family_stats<A: EngineFamily>(
    rib: &Rib<A>,
    engines: &[String],
    trace: Option<&[A]>,
) -> Result<()> {
    if rib.is_empty() {
        say!("\n{}: no prefixes", A::FAMILY);
        return Ok(());
    }
    say!(
        "\n{}: {} prefixes, {} distinct labels",
        A::FAMILY,
        rib.len(),
        rib.distinct_labels()
    );
    let mut unmerged = Vec::new();
    rib.ranges_in(A::ZERO, A::MAX, false, &mut unmerged);
    say!(
        "  ranges: {} before merging, {} after",
        unmerged.len(),
        rib.ranges().len()
    );
    say!("  reference trie: {} bytes", rib.memory_bytes());
    say!("  prefixes per length:");
    let histogram = rib.prefix_length_histogram();
    for (plen, count) in histogram.iter().enumerate().filter(|(_, &c)| c > 0) {
        say!(
            "    /{plen:<3} {count:>9} {:>6.2}%",
            100.0 * *count as f64 / rib.len() as f64
        );
    }
    for spec in engines {
        let built = match build_timed(spec, rib) {
            Ok(built) => built,
            Err(error @ BuildError::UnsupportedFamily { .. }) => {
                say!("  engine {spec}: {error}");
                continue;
            }
            Err(error) => return Err(error.into()),
        };
        let bytes = built.snapshot.memory_bytes();
        say!("  engine {}:", built.spec);
        say!("    build time           {:.1} ms", built.seconds * 1e3);
        say!(
            "    footprint            {} bytes ({:.2} bytes/prefix)",
            bytes,
            bytes as f64 / rib.len() as f64
        );
        for (name, value) in built.updater.stats(&built.snapshot).rows() {
            say!("    {name:<20} {value}");
        }
        match trace {
            None => {}
            Some([]) => say!(
                "    work per lookup      the trace has no {} address",
                A::FAMILY
            ),
            Some(addrs) => match A::lookup_work(&built.snapshot, addrs) {
                Some(rows) => {
                    say!("    work per lookup over the trace:");
                    for (name, value) in rows {
                        say!("      {name:<20} {value}");
                    }
                }
                None => say!("    work per lookup      not counted by this engine"),
            },
        }
    }
    Ok(())
}

/// Addresses answered at most at once when standard input holds more
/// buffered lines.
const LOOKUP_BATCH: usize = 1 << 16;

pub fn lookup(
    args: &TableArgs,
    addrs: &[String],
    engines: &[String],
    show: Show,
    json: bool,
) -> Result<bool> {
    if crate::image::is_image(&args.path) {
        return crate::image::lookup(&args.path, addrs);
    }
    if reads_stdin(args) && addrs.is_empty() {
        bail!("the table is read from standard input (`-`): give the addresses as arguments");
    }
    let (table, _) = load_table(args)?;
    let nexthop = NextHopNaming::of(args, &table);
    if show != Show::Label && nexthop == NextHopNaming::None {
        bail!(
            "{}: the table names no next hops (a `prefix label` table): --show nexthop needs \
             a `prefix nexthop` table or an MRT dump",
            args.path.display()
        );
    }
    // A family without prefixes answers `none` without an engine.
    let specs = FamilySpecs::resolve(engines, !table.v4.is_empty(), !table.v6.is_empty())?;
    let engine4 =
        built_single(&specs.v4, &table.v4).map_err(|error| specs.explain(Family::V4, error))?;
    let engine6 =
        built_single(&specs.v6, &table.v6).map_err(|error| specs.explain(Family::V6, error))?;
    let lookups = Lookups {
        table: &table,
        engine4: engine4.as_ref(),
        engine6: engine6.as_ref(),
        show,
        json,
        nexthop,
    };
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut all_good = true;
    if addrs.is_empty() {
        // Our own buffer (Stdin's is bypassed by reads this large) tells
        // whether more input is already there: when none is, the answers so
        // far are written and flushed before the next read can block, so a
        // co-process gets each answer as soon as it sends the line, and a
        // file or a fast pipe is answered in large batches.
        let stdin = std::io::BufReader::with_capacity(1 << 16, std::io::stdin().lock());
        let mut reader = LineReader::new(stdin, STDIN_NAME);
        let mut lines = Vec::with_capacity(1024);
        loop {
            let (number, bytes) = match reader.next_line() {
                Ok(Some(line)) => line,
                Ok(None) => break,
                Err(error) => {
                    // The answers before the line are still printed.
                    lookups.answer(STDIN_NAME, &lines, &mut out)?;
                    out.flush()?;
                    return Err(error.into());
                }
            };
            match std::str::from_utf8(bytes) {
                Err(_) => {
                    eprintln!(
                        "fibkit: {STDIN_NAME}:{number}: `{}` is not UTF-8 text",
                        excerpt(&String::from_utf8_lossy(bytes))
                    );
                    all_good = false;
                }
                Ok(text) => {
                    let text = text.trim();
                    if !text.is_empty() && !text.starts_with('#') {
                        lines.push((number, text.to_string()));
                    }
                }
            }
            let drained = reader.get_ref().buffer().is_empty();
            if drained || lines.len() >= LOOKUP_BATCH {
                all_good &= lookups.answer(STDIN_NAME, &lines, &mut out)?;
                lines.clear();
                if drained {
                    out.flush()?;
                }
            }
        }
        all_good &= lookups.answer(STDIN_NAME, &lines, &mut out)?;
    } else {
        let lines: Vec<(u64, String)> = addrs
            .iter()
            .enumerate()
            .map(|(i, a)| (i as u64 + 1, a.clone()))
            .collect();
        all_good &= lookups.answer("argument", &lines, &mut out)?;
    }
    out.flush()?;
    Ok(all_good)
}

/// The one spec chosen for `rib`'s family built, or `None` when the family
/// has no prefixes.
fn built_single<A: EngineFamily>(specs: &[String], rib: &Rib<A>) -> Result<Option<A::Snapshot>> {
    // A spec written for the other family (`cpe:strides=16+8+8` on a
    // table with IPv4 prefixes only) is not built for an empty family.
    if rib.is_empty() {
        return Ok(None);
    }
    match specs {
        [] => Ok(None),
        [spec] => Ok(Some(build_timed(spec, rib)?.snapshot)),
        _ => bail!(
            "lookup answers with one engine per family; {} were given for {} ({})",
            specs.len(),
            A::FAMILY,
            specs.join(", ")
        ),
    }
}

/// What a table's labels stand for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NextHopNaming {
    /// Plain labels (`prefix label` tables).
    None,
    /// Indices into the table's next-hop addresses.
    Address,
    /// Origin AS numbers (MRT and bgpdump with `--label origin-as`,
    /// prefix-to-AS files).
    OriginAs,
}

impl NextHopNaming {
    fn of(args: &TableArgs, table: &LoadedTable) -> NextHopNaming {
        match table.format {
            Some(Format::Mrt | Format::Bgpdump) if args.label == load::LabelSource::OriginAs => {
                NextHopNaming::OriginAs
            }
            Some(Format::Pfx2as) => NextHopNaming::OriginAs,
            Some(Format::Mrt | Format::Bgpdump | Format::NextHop) => NextHopNaming::Address,
            _ => NextHopNaming::None,
        }
    }
}

/// One `lookup --json` line; the field names are part of the interface.
#[derive(serde::Serialize)]
struct JsonAnswer {
    addr: String,
    prefix: Option<String>,
    label: Option<fibkit::Label>,
    #[serde(skip_serializing_if = "Option::is_none")]
    nexthop: Option<std::net::IpAddr>,
    #[serde(skip_serializing_if = "Option::is_none")]
    origin_as: Option<fibkit::Label>,
}

/// What `lookup` answers with: the table (which names the matched prefix
/// and the next hops) and the engine of each family that has prefixes.
struct Lookups<'a> {
    table: &'a LoadedTable,
    engine4: Option<&'a fibkit::SnapshotV4>,
    engine6: Option<&'a fibkit::SnapshotV6>,
    show: Show,
    json: bool,
    nexthop: NextHopNaming,
}

impl Lookups<'_> {
    /// Prints the answer for each `(line number, text)` of `source`, in
    /// order; a text that is no address is reported on standard error.
    /// Returns whether every text was an address.
    fn answer(&self, source: &str, lines: &[(u64, String)], out: &mut dyn Write) -> Result<bool> {
        let mut all_good = true;
        let mut v4 = Vec::with_capacity(lines.len());
        let mut v6 = Vec::with_capacity(lines.len());
        for (line, text) in lines {
            if let Some(addr) = u32::parse_addr(text) {
                v4.push(addr);
            } else if let Some(addr) = u128::parse_addr(text) {
                v6.push(addr);
            } else {
                eprintln!(
                    "fibkit: {source}:{line}: `{}` is not an IPv4 or IPv6 address",
                    excerpt(text)
                );
                all_good = false;
            }
        }
        let labels4 = batch(self.engine4, &v4);
        let labels6 = batch(self.engine6, &v6);
        let (mut i4, mut i6) = (0, 0);
        for (_, text) in lines {
            if u32::parse_addr(text).is_some() {
                self.print_match(out, &self.table.v4, v4[i4], labels4[i4])?;
                i4 += 1;
            } else if u128::parse_addr(text).is_some() {
                self.print_match(out, &self.table.v6, v6[i6], labels6[i6])?;
                i6 += 1;
            }
        }
        Ok(all_good)
    }

    fn print_match<A: Addr>(
        &self,
        out: &mut dyn Write,
        rib: &Rib<A>,
        addr: A,
        label: Option<fibkit::Label>,
    ) -> Result<()> {
        // The engine answers the label; the reference trie names the prefix.
        let prefix = label.map(|_| {
            rib.longest_match(addr)
                .map_or_else(|| "?".to_string(), |(prefix, _)| prefix.to_string())
        });
        let nexthop = label.and_then(|label| match self.nexthop {
            NextHopNaming::Address => self.table.nexthops.addr(label),
            _ => None,
        });
        let origin_as = label.filter(|_| self.nexthop == NextHopNaming::OriginAs);
        if self.json {
            let answer = JsonAnswer {
                addr: addr.display().to_string(),
                prefix,
                label,
                nexthop,
                origin_as,
            };
            serde_json::to_writer(&mut *out, &answer)?;
            writeln!(out)?;
            return Ok(());
        }
        let (Some(prefix), Some(label)) = (prefix, label) else {
            writeln!(out, "{} - none", addr.display())?;
            return Ok(());
        };
        let named = match (nexthop, origin_as) {
            (Some(nexthop), _) => nexthop.to_string(),
            (None, Some(asn)) => format!("AS{asn}"),
            (None, None) => "?".to_string(),
        };
        match self.show {
            Show::Label => writeln!(out, "{} {prefix} {label}", addr.display())?,
            Show::Nexthop => writeln!(out, "{} {prefix} {named}", addr.display())?,
            Show::Both => writeln!(out, "{} {prefix} {label} {named}", addr.display())?,
        }
        Ok(())
    }
}

fn batch<A: Addr>(engine: Option<&impl Lookup<A>>, addrs: &[A]) -> Vec<Option<fibkit::Label>> {
    let mut labels = vec![None; addrs.len()];
    if let Some(engine) = engine {
        engine.lookup_batch(addrs, &mut labels);
    }
    labels
}

pub fn verify(
    args: &TableArgs,
    engines: &[String],
    random: usize,
    seed: u64,
    updates: Option<(&Path, Option<Format>)>,
    check_every: usize,
    json: bool,
) -> Result<bool> {
    let (table, _) = load_table(args)?;
    let updates = match updates {
        Some((path, format)) => {
            Some(load_updates(args, path, format, &table.nexthops)?.changes_by_family())
        }
        None => None,
    };
    let (mut passed, mut failed) = (0u64, 0u64);
    // A family only the update stream has still needs an engine.
    let has_v4 = !table.v4.is_empty() || updates.as_ref().is_some_and(|(v4, _)| !v4.is_empty());
    let has_v6 = !table.v6.is_empty() || updates.as_ref().is_some_and(|(_, v6)| !v6.is_empty());
    let specs = FamilySpecs::resolve(engines, has_v4, has_v6)?;
    for spec in &specs.v4 {
        let (p, f) = verify_family(
            spec,
            &table.v4,
            random,
            seed,
            updates.as_ref().map(|(v4, _)| &v4[..]),
            check_every,
            json,
        )
        .map_err(|error| specs.explain(Family::V4, error))?;
        passed += p;
        failed += f;
    }
    for spec in &specs.v6 {
        let (p, f) = verify_family(
            spec,
            &table.v6,
            random,
            seed,
            updates.as_ref().map(|(_, v6)| &v6[..]),
            check_every,
            json,
        )
        .map_err(|error| specs.explain(Family::V6, error))?;
        passed += p;
        failed += f;
    }
    if json {
        json_line(&serde_json::json!({"kind": "total", "passed": passed, "failed": failed}))?;
    } else {
        say!("{passed} passed, {failed} failed");
    }
    Ok(failed == 0)
}

fn verify_family<A: EngineFamily>(
    spec: &str,
    rib: &Rib<A>,
    random: usize,
    seed: u64,
    changes: Option<&[Change<A>]>,
    check_every: usize,
    json: bool,
) -> Result<(u64, u64)> {
    if rib.is_empty() && changes.is_none_or(|c| c.is_empty()) {
        return Ok((0, 0));
    }
    let built = match build_timed(spec, rib) {
        Ok(built) => built,
        // The table has none of this family's prefixes, only the stream
        // does: a spec written for the other family skips them.
        Err(error) if rib.is_empty() => {
            eprintln!(
                "fibkit: {spec}: the stream's {} {} changes are not replayed: {error}",
                changes.map_or(0, <[_]>::len),
                A::FAMILY
            );
            return Ok((0, 0));
        }
        Err(error) => return Err(error.into()),
    };
    let name = built.spec.clone();
    let check = |engine: &A::Snapshot, rib: &Rib<A>, when: &str| -> Result<(u64, u64)> {
        let report = fibkit::verify(engine, rib, random, seed);
        if json {
            let mismatches: Vec<String> =
                report.mismatches.iter().map(ToString::to_string).collect();
            json_line(&serde_json::json!({
                "kind": "check",
                "engine": name,
                "family": A::FAMILY.to_string(),
                "when": when,
                "checked": report.checked,
                "passed": report.passed,
                "failed": report.failed,
                "mismatches": mismatches,
            }))?;
            return Ok((report.passed, report.failed));
        }
        say!(
            "{} {} {}: {} addresses, {} passed, {} failed",
            name,
            A::FAMILY,
            when,
            report.checked,
            report.passed,
            report.failed
        );
        for mismatch in &report.mismatches {
            say!("  mismatch {mismatch}");
        }
        Ok((report.passed, report.failed))
    };
    let (mut passed, mut failed) = check(
        &built.snapshot,
        rib,
        &format!("(built in {:.1} ms)", built.seconds * 1e3),
    )?;
    if let Some(changes) = changes {
        let fib = Fib::<A>::new(&built.spec, rib.clone())?;
        let step = if check_every == 0 {
            changes.len().max(1)
        } else {
            check_every
        };
        let mut update_seconds = 0.0;
        let mut rebuilt = 0;
        for (index, chunk) in changes.chunks(step).enumerate() {
            let start = Instant::now();
            let summary = fib.apply(chunk)?;
            update_seconds += start.elapsed().as_secs_f64();
            rebuilt += summary.rebuilt.is_some() as usize;
            let done = (index * step + chunk.len()).min(changes.len());
            let (p, f) = fib.with_rib(|rib| {
                check(
                    &fib.snapshot(),
                    rib,
                    &format!("after {done} of {} updates", changes.len()),
                )
            })?;
            passed += p;
            failed += f;
        }
        if json {
            json_line(&serde_json::json!({
                "kind": "updates",
                "engine": name,
                "family": A::FAMILY.to_string(),
                "updates": changes.len(),
                "update_ms": update_seconds * 1e3,
                "rebuilds": rebuilt,
            }))?;
            return Ok((passed, failed));
        }
        say!(
            "{} {}: {} updates applied in {:.1} ms ({:.2} us each{})",
            name,
            A::FAMILY,
            changes.len(),
            update_seconds * 1e3,
            update_seconds * 1e6 / changes.len().max(1) as f64,
            if rebuilt > 0 {
                format!(", {rebuilt} full rebuilds")
            } else {
                String::new()
            }
        );
    }
    Ok((passed, failed))
}

pub fn convert(
    args: &TableArgs,
    output: Option<&Path>,
    nexthops_out: Option<&Path>,
) -> Result<bool> {
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

/// A buffered output file, or standard output, whose write errors name it
/// (a full disk shows up as `writing out.txt: No space left on device`).
struct Output {
    writer: BufWriter<Box<dyn Write>>,
    name: String,
}

impl Output {
    /// Creates `path`, or writes to standard output for `None`.
    fn create(path: Option<&Path>) -> Result<Output> {
        let (writer, name): (Box<dyn Write>, String) = match path {
            Some(path) => (
                Box::new(
                    File::create(path).with_context(|| format!("creating {}", path.display()))?,
                ),
                path.display().to_string(),
            ),
            None => (Box::new(std::io::stdout().lock()), "standard output".into()),
        };
        Ok(Output {
            writer: BufWriter::with_capacity(1 << 16, writer),
            name,
        })
    }

    /// `error` with the output's name; the kind is kept, so a closed pipe
    /// is still recognised as one.
    fn named(&self, error: std::io::Error) -> std::io::Error {
        std::io::Error::new(error.kind(), format!("writing {}: {error}", self.name))
    }
}

impl Write for Output {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.writer.write(bytes).map_err(|e| self.named(e))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.writer.flush().map_err(|e| self.named(e))
    }
}

pub fn trace_gen(
    args: &TableArgs,
    kind: &fibkit::trace::TraceKind,
    count: usize,
    seed: u64,
    family: Option<&str>,
    output: Option<&Path>,
    binary: bool,
) -> Result<bool> {
    let (table, _) = load_table(args)?;
    let mut out = Output::create(output)?;
    let family = crate::family::chosen(family, !table.v4.is_empty());
    for_family!(family, A => write_trace(&mut out, A::rib(&table), kind, count, seed, binary))?;
    out.flush()?;
    Ok(true)
}

fn write_trace<A: Addr>(
    out: &mut dyn Write,
    rib: &Rib<A>,
    kind: &fibkit::trace::TraceKind,
    count: usize,
    seed: u64,
    binary: bool,
) -> Result<()> {
    let trace = fibkit::trace::generate(rib, kind, count, seed).map_err(anyhow::Error::msg)?;
    if binary {
        fibkit::trace::write_binary_trace(out, &trace)?;
        return Ok(());
    }
    for addr in trace {
        writeln!(out, "{}", addr.display())?;
    }
    Ok(())
}

pub fn trace_stats(args: &TableArgs, trace: &Path, top: usize) -> Result<bool> {
    let (table, _) = load_table(args)?;
    let v4 = fibkit::trace::read_trace::<u32>(trace)?;
    let v6 = fibkit::trace::read_trace::<u128>(trace)?;
    if v4.is_empty() && v6.is_empty() {
        bail!("{}: no addresses in the trace", trace.display());
    }
    if !v4.is_empty() {
        print_trace_stats(&table.v4, &v4, top)?;
    }
    if !v6.is_empty() {
        print_trace_stats(&table.v6, &v6, top)?;
    }
    Ok(true)
}

fn print_trace_stats<A: Addr>(rib: &Rib<A>, trace: &[A], top: usize) -> Result<()> {
    let stats = fibkit::trace::trace_stats(rib, trace, top);
    say!(
        "{}: {} addresses, {} unmatched, {} distinct prefixes matched",
        A::FAMILY,
        stats.addresses,
        stats.unmatched,
        stats.distinct_prefixes
    );
    say!(
        "  top 1% of matched prefixes carry {:.2}% of the traffic",
        100.0 * stats.top_percent_share
    );
    say!(
        "  total variation distance, first vs second half: {:.4}",
        stats.halves_tvd
    );
    say!("  share of traffic per prefix length:");
    for (plen, share) in stats
        .share_by_length
        .iter()
        .enumerate()
        .filter(|(_, s)| **s > 0.0)
    {
        say!("    /{plen:<3} {:>7.3}%", 100.0 * share);
    }
    say!("  top prefixes:");
    for (prefix, share) in &stats.top_prefixes {
        say!("    {prefix:<24} {:>7.3}%", 100.0 * share);
    }
    Ok(())
}

pub fn strides(
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

pub fn bspl_levels(
    args: &TableArgs,
    levels: std::ops::RangeInclusive<u8>,
    family: Option<&str>,
    keys: usize,
) -> Result<bool> {
    let (table, _) = load_table(args)?;
    for family in crate::family::wanted(family, &table) {
        let fixed = match family {
            fibkit::Family::V4 => "bspl:lengths=16+24+32".to_string(),
            fibkit::Family::V6 => {
                let every_8: Vec<String> =
                    (16..=128).step_by(8).map(|l: u32| l.to_string()).collect();
                format!("bspl:lengths={}", every_8.join("+"))
            }
        };
        for_family!(family, A => bspl_report(A::rib(&table), &fixed, levels.clone(), keys))?;
    }
    Ok(true)
}

/// One `bspl-levels` table: the fixed lengths `fixed`, then the program's
/// lengths for each level count.
fn bspl_report<A: Addr>(
    rib: &Rib<A>,
    fixed: &str,
    levels: std::ops::RangeInclusive<u8>,
    keys: usize,
) -> Result<()> {
    use fibkit::engines::bspl::{BsplConfig, BsplUpdater};
    use fibkit::{EngineConfig, EngineSpec};
    let addrs = bench::generate_keys(&bench::Pattern::Rnd, keys, 1, rib)?;
    say!("{} ({} prefixes)", A::FAMILY, rib.len());
    say!(
        "{:<24} {:<28} {:>17} {:>18} {:>19} {:>21} {:>10} {:>19}",
        "engine spec",
        "prefix lengths (bits)",
        "hash tables (KiB)",
        "total memory (KiB)",
        "length program (ms)",
        "hash seed search (ms)",
        "build (ms)",
        "random lookup (ns)"
    );
    let specs =
        std::iter::once(fixed.to_string()).chain(levels.map(|k| format!("bspl:levels={k}")));
    for spec in specs {
        let config = BsplConfig::from_spec(&EngineSpec::parse(&spec)?)?;
        let started = Instant::now();
        let (updater, snapshot) = match BsplUpdater::<A>::build(&config, rib) {
            Ok(built) => built,
            Err(e) => {
                say!("{spec:<24} {e}");
                continue;
            }
        };
        let build_ms = started.elapsed().as_secs_f64() * 1e3;
        let stats = updater.stats(&snapshot);
        let started = Instant::now();
        for &addr in &addrs {
            std::hint::black_box(snapshot.lookup(std::hint::black_box(addr)));
        }
        let random_ns = started.elapsed().as_secs_f64() * 1e9 / addrs.len().max(1) as f64;
        let lengths: Vec<String> = std::iter::once(snapshot.first_bits())
            .chain(snapshot.lengths())
            .map(|l| l.to_string())
            .collect();
        say!(
            "{spec:<24} {:<28} {:>17.0} {:>18.0} {:>19.1} {:>21.1} {:>10.0} {:>19.1}",
            lengths.join(","),
            stats.table_bytes as f64 / 1024.0,
            snapshot.memory_bytes() as f64 / 1024.0,
            stats.program_ms,
            stats.seed_search_ms,
            build_ms,
            random_ns
        );
    }
    Ok(())
}
