//! Text formats: `prefix label`, `prefix nexthop-address` and
//! `time a|w prefix nexthop` (one record per line; blank lines and lines
//! starting with `#` are ignored).

use std::io::BufRead;
use std::net::IpAddr;

use super::{
    AnyChange, Format, Input, LoadError, LoadOptions, LoadStats, LoadedTable, LoadedUpdates,
    NextHopTable, Update,
};
use crate::addr::Addr;
use crate::prefix::{Label, Prefix};
use crate::rib::{Change, Rib};

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

/// Reads lines, calling `handle(line_number, trimmed_text)` for each data line;
/// a `Some(what)` from the handler is a bad line (stop, or skip and count).
fn for_each_line(
    mut input: Input,
    options: &LoadOptions,
    stats: &mut LoadStats,
    mut handle: impl FnMut(&str, &mut LoadStats) -> Option<String>,
) -> Result<(), LoadError> {
    let path = input.path.clone();
    let mut buffer = Vec::with_capacity(256);
    let mut line_number = 0u64;
    loop {
        buffer.clear();
        let read = input
            .reader
            .read_until(b'\n', &mut buffer)
            .map_err(|e| LoadError::bad(&path, line_number + 1, format!("read error: {e}")))?;
        if read == 0 {
            break;
        }
        line_number += 1;
        stats.records += 1;
        if line_number.is_multiple_of(PROGRESS_EVERY_LINES) {
            if let Some(progress) = options.progress {
                progress(input.raw_bytes_read());
            }
        }
        let problem = match std::str::from_utf8(&buffer) {
            Err(_) => {
                Some("the line is not UTF-8 text (binary file? try --format mrt)".to_string())
            }
            Ok(text) => {
                let text = text.trim();
                if text.is_empty() || text.starts_with('#') {
                    continue;
                }
                handle(text, stats)
            }
        };
        if let Some(what) = problem {
            if options.skip_bad {
                stats.skip("line", line_number, &what);
            } else {
                return Err(LoadError::bad(&path, line_number, what));
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
            return Some(format!(
                "expected {expected}, found `{}`",
                text.chars().take(120).collect::<String>()
            ));
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
                        "`{value_text}` is not a label (expected an integer in 0..=4294967295)"
                    ))
                }
            }
        } else {
            match value_text.parse::<IpAddr>() {
                Ok(addr) => nexthops.intern(addr),
                Err(_) => return Some(format!("`{value_text}` is not a next-hop address")),
            }
        };
        stats.masked += masked as u64;
        match prefix {
            AnyPrefix::V4(prefix) => insert_counted(v4, prefix, label, stats),
            AnyPrefix::V6(prefix) => insert_counted(v6, prefix, label, stats),
        }
        None
    })?;
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
                    text.chars().take(120).collect::<String>()
                ))
            }
        };
        let Ok(time) = time_text.parse::<u64>() else {
            return Some(format!("`{time_text}` is not a Unix time"));
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
                        nexthop_text.unwrap_or("")
                    ))
                }
            },
            other => return Some(format!("`{other}` is not an action (expected `a` or `w`)")),
        };
        stats.masked += masked as u64;
        stats.routes += 1;
        let change = match (prefix, label) {
            (AnyPrefix::V4(p), Some(label)) => AnyChange::V4(Change::Announce(p, label)),
            (AnyPrefix::V4(p), None) => AnyChange::V4(Change::Withdraw(p)),
            (AnyPrefix::V6(p), Some(label)) => AnyChange::V6(Change::Announce(p, label)),
            (AnyPrefix::V6(p), None) => AnyChange::V6(Change::Withdraw(p)),
        };
        updates.push(Update { time, change });
        None
    })?;
    Ok(loaded)
}
