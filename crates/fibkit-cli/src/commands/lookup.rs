//! `fibkit lookup`: the longest match of each address, from the arguments
//! or standard input, answered by an engine built from the table or by a
//! saved image.

use std::io::{BufRead, BufWriter, Write};
use std::path::Path;

use anyhow::{bail, Context, Result};
use clap::Args;

use fibkit::image::Image;
use fibkit::load::{self, Format, LineReader, LoadedTable};
use fibkit::prefix::excerpt;
use fibkit::registry::EngineFamily;
use fibkit::registry::ImageFamily;
use fibkit::{Addr, Family, Lookup, Rib};

use crate::engine::build_timed;
use crate::family::for_family;
use crate::specs::FamilySpecs;
use crate::table::{load_table, reads_stdin, TableArgs, STDIN_NAME};

/// Arguments of `fibkit lookup`.
#[derive(Args, Debug)]
pub struct LookupArgs {
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
}

/// What `lookup` prints for a match.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Show {
    /// The label (the interned index for next-hop tables).
    Label,
    /// The next-hop address, or `AS<number>` for origin-AS labels.
    Nexthop,
    /// The label, then the next hop.
    Both,
}

/// Addresses answered at most at once when standard input holds more
/// buffered lines.
const LOOKUP_BATCH: usize = 1 << 16;

/// Runs `fibkit lookup`.
pub fn run(args: &LookupArgs) -> Result<bool> {
    lookup(
        &args.table,
        &args.addrs,
        &args.engines,
        args.show,
        args.json,
    )
}

fn lookup(
    args: &TableArgs,
    addrs: &[String],
    engines: &[String],
    show: Show,
    json: bool,
) -> Result<bool> {
    if is_image(&args.path) {
        return lookup_image(&args.path, addrs);
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
    engine4: Option<&'a fibkit::registry::SnapshotV4>,
    engine6: Option<&'a fibkit::registry::SnapshotV6>,
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

/// Whether `path` starts with an image's magic bytes.
fn is_image(path: &Path) -> bool {
    let mut magic = [0u8; 8];
    std::fs::File::open(path)
        .and_then(|mut file| std::io::Read::read_exact(&mut file, &mut magic))
        .is_ok()
        && &magic == fibkit::image::MAGIC
}

/// `fibkit lookup IMAGE [ADDR...]`: answers from the image. An image holds
/// no reference table, so the matched prefix is printed as `?`.
fn lookup_image(path: &Path, addrs: &[String]) -> Result<bool> {
    let image = Image::open(path)?;
    for_family!(image.family(), A => lookup_image_family::<A>(&image, addrs))
}

fn lookup_image_family<A: ImageFamily>(image: &Image, addrs: &[String]) -> Result<bool> {
    let snapshot = A::open_image(image)?;
    let mut out = BufWriter::new(std::io::stdout().lock());
    let mut all_good = true;
    let mut answer = |line: u64, text: &str, out: &mut dyn Write| -> Result<()> {
        match A::parse_addr(text) {
            Some(addr) => match snapshot.lookup(addr) {
                Some(label) => writeln!(out, "{} ? {label}", addr.display())?,
                None => writeln!(out, "{} - none", addr.display())?,
            },
            None => {
                eprintln!(
                    "fibkit: input:{line}: `{text}` is not an {} address (the image is {})",
                    A::FAMILY,
                    A::FAMILY
                );
                all_good = false;
            }
        }
        Ok(())
    };
    if addrs.is_empty() {
        for (index, line) in std::io::stdin().lock().lines().enumerate() {
            let line = line.context("reading standard input")?;
            let text = line.trim();
            if !text.is_empty() && !text.starts_with('#') {
                answer(index as u64 + 1, text, &mut out)?;
            }
        }
    } else {
        for (index, text) in addrs.iter().enumerate() {
            answer(index as u64 + 1, text, &mut out)?;
        }
    }
    out.flush()?;
    Ok(all_good)
}
