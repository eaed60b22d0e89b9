//! Text formats: `prefix label`, `prefix nexthop-address`,
//! `time a|w prefix nexthop` and CAIDA's `address length origin` (one
//! record per line; blank lines and lines starting with `#` or `;` are
//! ignored).

use std::net::IpAddr;

use super::lines::LineReader;
use super::{
    AnyChange, Format, Input, LoadError, LoadOptions, LoadStats, LoadedTable, LoadedUpdates,
    NextHopTable, Update,
};
use crate::addr::Addr;
use crate::prefix::{excerpt, Label, Prefix};
use crate::rib::Rib;

/// How often (in lines) the progress callback is called.
const PROGRESS_EVERY_LINES: u64 = 1 << 16;

/// A prefix of either family, as parsed from text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnyPrefix {
    /// IPv4.
    V4(Prefix<u32>),
    /// IPv6.
    V6(Prefix<u128>),
}

/// Parses a prefix of either family (IPv6 if the text has a `:`); the flag
/// says whether host bits were cleared (only with `lenient`).
pub fn parse_any_prefix(
    text: &str,
    lenient: bool,
) -> Result<(AnyPrefix, bool), crate::prefix::PrefixError> {
    if text.contains(':') {
        Prefix::<u128>::parse_lenient(text, lenient).map(|(p, masked)| (AnyPrefix::V6(p), masked))
    } else {
        Prefix::<u32>::parse_lenient(text, lenient).map(|(p, masked)| (AnyPrefix::V4(p), masked))
    }
}

/// Whether a trimmed line holds no record: blank, or a comment starting
/// with `#` or `;` (pyasn's `prefix origin` files begin with `;` lines).
pub(crate) fn is_blank_or_comment(text: &str) -> bool {
    text.is_empty() || text.starts_with('#') || text.starts_with(';')
}

/// Reads lines, calling `handle(trimmed_text, stats)` for each data line;
/// a `Some(what)` from the handler is a bad line (stop, or skip and count).
/// A line over [`super::MAX_LINE_BYTES`] stops the load even under
/// `skip_bad`: no table or stream has one, and skipping it would mean
/// reading on through what may be gigabytes without a line break.
pub(crate) fn for_each_line(
    mut input: Input,
    options: &LoadOptions,
    stats: &mut LoadStats,
    mut handle: impl FnMut(&str, &mut LoadStats) -> Option<String>,
) -> Result<(), LoadError> {
    let mut lines = LineReader::new(&mut input.reader, &input.path);
    while let Some((line_number, line)) = lines.next_line()? {
        stats.records += 1;
        if line_number.is_multiple_of(PROGRESS_EVERY_LINES) {
            if let Some(progress) = options.progress {
                progress(input.raw_bytes.load(std::sync::atomic::Ordering::Relaxed));
            }
        }
        let problem = match std::str::from_utf8(line) {
            Err(_) => {
                Some("the line is not UTF-8 text (binary file? try --format mrt)".to_string())
            }
            Ok(text) => {
                let text = text.trim();
                if is_blank_or_comment(text) {
                    continue;
                }
                handle(text, stats)
            }
        };
        if let Some(what) = problem {
            if options.skip_bad {
                stats.skip("line", line_number, &what);
            } else {
                return Err(LoadError::bad(lines.path(), line_number, what));
            }
        }
    }
    if let Some(progress) = options.progress {
        progress(input.raw_bytes_read());
    }
    Ok(())
}

fn insert_counted<A: Addr>(
    rib: &mut Rib<A>,
    prefix: Prefix<A>,
    label: Label,
    stats: &mut LoadStats,
) {
    stats.routes += 1;
    if rib.insert(prefix, label).is_some() {
        stats.duplicates += 1;
    }
}

/// Adds a route to its family's table, counted, with whether `lenient`
/// cleared its prefix's host bits.
fn insert_any(
    v4: &mut Rib<u32>,
    v6: &mut Rib<u128>,
    prefix: AnyPrefix,
    masked: bool,
    label: Label,
    stats: &mut LoadStats,
) {
    stats.masked += masked as u64;
    match prefix {
        AnyPrefix::V4(prefix) => insert_counted(v4, prefix, label, stats),
        AnyPrefix::V6(prefix) => insert_counted(v6, prefix, label, stats),
    }
}

/// Reads a `prefix label` (`Format::Table`) or `prefix nexthop`
/// (`Format::NextHop`) file.
pub fn read_table(
    input: Input,
    format: Format,
    options: &LoadOptions,
) -> Result<LoadedTable, LoadError> {
    let mut table = LoadedTable::default();
    let LoadedTable {
        v4,
        v6,
        nexthops,
        stats,
        ..
    } = &mut table;
    let expected = if format == Format::Table {
        "`prefix label`"
    } else {
        "`prefix nexthop-address`"
    };
    for_each_line(input, options, stats, |text, stats| {
        let mut fields = text.split_ascii_whitespace();
        let (Some(prefix_text), Some(value_text), None) =
            (fields.next(), fields.next(), fields.next())
        else {
            return Some(format!("expected {expected}, found `{}`", excerpt(text)));
        };
        let (prefix, masked) = match parse_any_prefix(prefix_text, options.lenient) {
            Ok(parsed) => parsed,
            Err(e) => return Some(e.to_string()),
        };
        let label = if format == Format::Table {
            match value_text.parse::<Label>() {
                Ok(label) => label,
                Err(_) => {
                    return Some(format!(
                        "`{}` is not a label (expected an integer in 0..=4294967295)",
                        excerpt(value_text)
                    ))
                }
            }
        } else {
            match value_text.parse::<IpAddr>() {
                Ok(addr) => nexthops.intern(addr),
                Err(_) => {
                    return Some(format!(
                        "`{}` is not a next-hop address",
                        excerpt(value_text)
                    ))
                }
            }
        };
        insert_any(v4, v6, prefix, masked, label, stats);
        None
    })?;
    Ok(table)
}

/// How many routes of a `pfx2as` file had more than one origin, and how
/// many an AS set first.
#[derive(Default)]
struct OriginCounts {
    several: u64,
    set_first: u64,
}

/// One origin of a `pfx2as` origin field: its members joined by `,`, and
/// whether they form an AS set (`A,B` or `{A,B}`; `{A}` is a set of one).
fn members_of(origin: &str) -> (&str, bool) {
    match origin.strip_prefix('{').and_then(|o| o.strip_suffix('}')) {
        Some(set) => (set, true),
        None => (origin, origin.contains(',')),
    }
}

/// The label of a `pfx2as` origin field: the AS, the first of several
/// joined by `_`, or 0 when that first is an AS set (`A,B` or `{A,B}`),
/// which has no single origin. Every AS of the field must be a number.
fn origin_label(text: &str, counts: &mut OriginCounts) -> Result<Label, String> {
    let all_numbers = text.split('_').all(|origin| {
        members_of(origin)
            .0
            .split(',')
            .all(|member| member.parse::<Label>().is_ok())
    });
    if !all_numbers {
        return Err(format!(
            "`{}` is not an origin AS (expected an AS number, `A_B` for several \
             origins or `A,B` for an AS set)",
            excerpt(text)
        ));
    }
    // Counted only once the whole field is known good, so a line skipped
    // under `skip_bad` is not in the notes.
    counts.several += text.contains('_') as u64;
    let first = text.split('_').next().unwrap_or(text);
    Ok(match members_of(first) {
        (_, true) => {
            counts.set_first += 1;
            0
        }
        (asn, false) => asn.parse::<Label>().unwrap_or(0),
    })
}

/// Reads a CAIDA RouteViews prefix-to-AS file (`Format::Pfx2as`):
/// `address length origin` lines, labelled by [`origin_label`]; a note
/// counts the prefixes with several origins and those labelled 0 for an
/// AS set.
pub fn read_pfx2as(input: Input, options: &LoadOptions) -> Result<LoadedTable, LoadError> {
    let mut table = LoadedTable::default();
    let mut counts = OriginCounts::default();
    let LoadedTable { v4, v6, stats, .. } = &mut table;
    for_each_line(input, options, stats, |text, stats| {
        let mut fields = text.split_ascii_whitespace();
        let (Some(address), Some(length), Some(origin), None) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            return Some(format!(
                "expected `address length origin-as`, found `{}`",
                excerpt(text)
            ));
        };
        if length.parse::<u8>().is_err() {
            return Some(format!("`{}` is not a prefix length", excerpt(length)));
        }
        let (prefix, masked) =
            match parse_any_prefix(&format!("{address}/{length}"), options.lenient) {
                Ok(parsed) => parsed,
                Err(e) => return Some(e.to_string()),
            };
        let label = match origin_label(origin, &mut counts) {
            Ok(label) => label,
            Err(what) => return Some(what),
        };
        insert_any(v4, v6, prefix, masked, label, stats);
        None
    })?;
    if counts.several > 0 {
        table.notes.push(format!(
            "{} prefixes have several origin ASes (`A_B`, most seen first): each is labelled with the first",
            counts.several
        ));
    }
    if counts.set_first > 0 {
        table.notes.push(format!(
            "{} prefixes have an AS set as their (first) origin (`A,B`): labelled 0, no single origin",
            counts.set_first
        ));
    }
    Ok(table)
}

/// Reads a `time a|w prefix nexthop` update stream.
pub fn read_updates(
    input: Input,
    options: &LoadOptions,
    nexthops: NextHopTable,
) -> Result<LoadedUpdates, LoadError> {
    let mut loaded = LoadedUpdates {
        nexthops,
        ..LoadedUpdates::default()
    };
    let LoadedUpdates {
        updates,
        nexthops,
        stats,
        ..
    } = &mut loaded;
    for_each_line(input, options, stats, |text, stats| {
        let fields: Vec<&str> = text.split_ascii_whitespace().collect();
        let (time_text, action, prefix_text, nexthop_text) = match fields.as_slice() {
            [time, action, prefix, nexthop] => (*time, *action, *prefix, Some(*nexthop)),
            [time, "w", prefix] => (*time, "w", *prefix, None),
            _ => {
                return Some(format!(
                    "expected `time a|w prefix nexthop`, found `{}`",
                    excerpt(text)
                ))
            }
        };
        let Ok(time) = time_text.parse::<u64>() else {
            return Some(format!("`{}` is not a Unix time", excerpt(time_text)));
        };
        let (prefix, masked) = match parse_any_prefix(prefix_text, options.lenient) {
            Ok(parsed) => parsed,
            Err(e) => return Some(e.to_string()),
        };
        let label = match action {
            "w" => None,
            "a" => match nexthop_text.and_then(|t| t.parse::<IpAddr>().ok()) {
                Some(addr) => Some(nexthops.intern(addr)),
                None => {
                    return Some(format!(
                        "`{}` is not a next-hop address",
                        excerpt(nexthop_text.unwrap_or(""))
                    ))
                }
            },
            other => {
                return Some(format!(
                    "`{}` is not an action (expected `a` or `w`)",
                    excerpt(other)
                ))
            }
        };
        stats.masked += masked as u64;
        stats.routes += 1;
        updates.push(Update {
            time,
            change: AnyChange::of(prefix, label),
        });
        None
    })?;
    Ok(loaded)
}
