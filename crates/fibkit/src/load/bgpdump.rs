//! bgpdump's one-line text of MRT files (`bgpdump -m`, and `-M` for RIB
//! dumps): the form in which many route collectors' archives and analysis
//! scripts pass RIBs and updates around.
//!
//! Lines are `|`-separated, one route or event each:
//! ```text
//! TABLE_DUMP2|1444842656|B|192.168.1.10|65000|192.168.0.0/16|65015|IGP|192.168.0.15|100|0||NAG||
//! TABLE_DUMP2_AP|1486801684|B|fd02::10|65000|fd01:1::/64|1|64512 64512|IGP|fd02::10|100|10||NAG||
//! BGP4MP|1444841517|A|2001:db8:0:1::10|65000|2001:db8::/64|65010 65020|IGP|2001:db8:0:1::10|100|0||NAG||
//! BGP4MP|1444841520|W|2001:db8:0:1::10|65000|2001:db8::/64
//! BGP4MP|1444841511|STATE|192.168.1.102|65000|2|4
//! ```
//! type (`TABLE_DUMP`, `TABLE_DUMP2`, `BGP4MP`, `BGP4MP_ET`; an `_AP`
//! suffix adds a path identifier after the prefix), time, entry (`B` a RIB
//! entry, `A` an announcement, `W` a withdrawal, `STATE` a session state
//! change), peer address, peer AS, prefix, then for `B` and `A` the AS path,
//! origin, next hop and attributes this loader does not use.
//!
//! Tables (`B` lines) follow the MRT loader's rules: one peer's routes
//! become the table ([`LoadOptions::peer`], by default the peer with the
//! most routes; a note says which), with ADD-PATH the first path of a peer
//! for a prefix is kept (the others counted in a note), and the label is
//! the next hop, interned, or the origin AS ([`LoadOptions::label`]): the
//! last AS of the path, 0 for an empty path or one ending in an AS set
//! (`{A,B}`) or a confederation segment (`(A B)`, `[A,B]`), where no single
//! origin exists. As in the MRT loader, the AS path and next hop of a
//! peer whose routes are not kept (under `--peer`) are not read. The time
//! field is not read, so `-M`'s dates do too. The next hop is the one
//! bgpdump printed: for BIRD's dumps that is `255.255.255.255` for IPv6
//! routes and for BIRD's own routes, where the MRT loader reads
//! `MP_REACH`'s next hop or finds none; the tables are the same otherwise.
//!
//! Update streams (`A` and `W` lines) keep every peer's changes unless
//! [`LoadOptions::peer`] picks some, stamped with the line's Unix time:
//! `-M`'s dates name no time zone, so they are refused in a stream. `STATE`
//! lines are skipped (counted in a note): a session going down does not
//! become withdrawals, as in the MRT loader.
//!
//! A table file of `A`/`W`/`STATE` lines, or a stream of `B` lines, is an
//! error that says which it is. ASes may be plain (`4200000000`) or asdot
//! (`64086.59904`).
//!
//! [`LoadOptions::peer`]: super::LoadOptions::peer
//! [`LoadOptions::label`]: super::LoadOptions::label

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::peers::{matches_selector, Peers, StreamPeers};
use super::text::{for_each_line, parse_any_prefix, AnyPrefix};
use super::{
    AnyChange, Input, LabelSource, LoadError, LoadOptions, LoadStats, LoadedTable, LoadedUpdates,
    NextHopTable, Update,
};
use crate::prefix::{excerpt, Label};

/// What a line holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Entry {
    /// `B`: a RIB entry.
    Rib,
    /// `A`: an announcement.
    Announce,
    /// `W`: a withdrawal.
    Withdraw,
    /// `STATE`: a session state change.
    State,
}

/// A parsed line: the fields this loader reads.
struct Line<'a> {
    entry: Entry,
    time: &'a str,
    peer: IpAddr,
    peer_as: u32,
    /// `None` for `STATE` lines.
    prefix: Option<(AnyPrefix, bool)>,
    /// Whether the type has a path identifier (`_AP`).
    add_path: bool,
    /// AS path and next hop, for `B` and `A` lines.
    route: Option<(&'a str, &'a str)>,
}

/// Fields up to the next hop of an `_AP` line: type, time, entry, peer,
/// peer AS, prefix, path identifier, AS path, origin, next hop.
const FIELDS_READ: usize = 10;

/// Whether `kind` is a record type bgpdump prints, and whether it has a
/// path identifier (`_AP`).
fn record_type(kind: &str) -> Option<bool> {
    let (base, add_path) = match kind.strip_suffix("_AP") {
        Some(base) => (base, true),
        None => (kind, false),
    };
    matches!(base, "TABLE_DUMP" | "TABLE_DUMP2" | "BGP4MP" | "BGP4MP_ET").then_some(add_path)
}

/// Whether `line` (a trimmed data line) looks like bgpdump's output.
pub(crate) fn looks_like(line: &str) -> bool {
    line.split_once('|')
        .is_some_and(|(kind, _)| record_type(kind).is_some())
}

/// Parses an AS number, plain (`4200000000`) or asdot (`64086.59904`).
fn parse_asn(text: &str) -> Option<u32> {
    match text.split_once('.') {
        None => text.parse().ok(),
        Some((high, low)) => {
            let (high, low) = (high.parse::<u16>().ok()?, low.parse::<u16>().ok()?);
            Some(u32::from(high) << 16 | u32::from(low))
        }
    }
}

/// The origin AS of a bgpdump AS path: its last AS when that ends a
/// sequence, 0 for an empty path or one ending in an AS set (`{A,B}`) or a
/// confederation segment (`(A B)`, `[A,B]`). Every AS must be a number.
fn origin_of(path: &str) -> Result<Label, String> {
    let mut last = None;
    for token in path.split_ascii_whitespace() {
        let bare = token.trim_matches(|c| matches!(c, '{' | '}' | '(' | ')' | '[' | ']'));
        if bare.split(',').any(|asn| parse_asn(asn).is_none()) {
            return Err(format!(
                "`{}` in the AS path `{}` is not an AS number",
                excerpt(token),
                excerpt(path)
            ));
        }
        last = Some(token);
    }
    // A set or segment's brackets stay on its last token; a plain number
    // ends a sequence.
    Ok(last.and_then(parse_asn).unwrap_or(0))
}

/// Splits and checks one line; `Err` says what is wrong.
fn parse_line(text: &str, lenient: bool) -> Result<Line<'_>, String> {
    // The fields up to the next hop, and the rest unsplit: the attributes
    // after it are not read, and a line is split without allocating.
    let mut split = [""; FIELDS_READ + 1];
    let mut count = 0;
    for (slot, field) in split.iter_mut().zip(text.splitn(FIELDS_READ + 1, '|')) {
        *slot = field;
        count += 1;
    }
    let fields = &split[..count];
    let too_few = || {
        format!(
            "too few `|` fields for a bgpdump -m line (`type|time|B|A|W|STATE|peer|peer-as|prefix|...`): `{}`",
            excerpt(text)
        )
    };
    let (kind, time, entry, peer, peer_as) = match fields {
        [kind, time, entry, peer, peer_as, ..] => (*kind, *time, *entry, *peer, *peer_as),
        _ => return Err(too_few()),
    };
    let Some(add_path) = record_type(kind) else {
        return Err(format!(
            "`{}` is not a bgpdump record type (TABLE_DUMP, TABLE_DUMP2, BGP4MP, BGP4MP_ET, \
             each also with `_AP`)",
            excerpt(kind)
        ));
    };
    let entry = match entry {
        "B" => Entry::Rib,
        "A" => Entry::Announce,
        "W" => Entry::Withdraw,
        "STATE" => Entry::State,
        other => {
            return Err(format!(
                "`{}` is not a bgpdump entry (B, A, W or STATE)",
                excerpt(other)
            ))
        }
    };
    let peer = peer
        .parse::<IpAddr>()
        .map_err(|_| format!("`{}` is not a peer address", excerpt(peer)))?;
    let peer_as =
        parse_asn(peer_as).ok_or_else(|| format!("`{}` is not a peer AS", excerpt(peer_as)))?;
    let mut line = Line {
        entry,
        time,
        peer,
        peer_as,
        prefix: None,
        add_path,
        route: None,
    };
    if entry == Entry::State {
        return Ok(line);
    }
    let prefix_text = fields.get(5).ok_or_else(too_few)?;
    line.prefix = Some(parse_any_prefix(prefix_text, lenient).map_err(|e| e.to_string())?);
    if entry == Entry::Withdraw {
        return Ok(line);
    }
    // After the prefix (and the path identifier): AS path, origin, next hop.
    let at = 6 + add_path as usize;
    let (Some(path), Some(_origin), Some(next_hop)) =
        (fields.get(at), fields.get(at + 1), fields.get(at + 2))
    else {
        return Err(too_few());
    };
    line.route = Some((path, next_hop));
    Ok(line)
}

/// The label of a route: its next hop interned in `nexthops` (the
/// unspecified address of the prefix's family when the field is empty,
/// counted in `no_next_hop`), or its origin AS.
fn label_of(
    source: LabelSource,
    (path, next_hop): (&str, &str),
    prefix: AnyPrefix,
    nexthops: &mut NextHopTable,
    no_next_hop: &mut u64,
) -> Result<Label, String> {
    // The path is checked whichever label is kept, so both label sources
    // refuse the same lines.
    let origin = origin_of(path)?;
    let addr = if next_hop.is_empty() {
        None
    } else {
        Some(
            next_hop
                .parse::<IpAddr>()
                .map_err(|_| format!("`{}` is not a next-hop address", excerpt(next_hop)))?,
        )
    };
    Ok(match source {
        LabelSource::OriginAs => origin,
        LabelSource::NextHop => nexthops.intern(addr.unwrap_or_else(|| {
            *no_next_hop += 1;
            match prefix {
                AnyPrefix::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
                AnyPrefix::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
            }
        })),
    })
}

/// The note for routes without a next hop.
fn no_next_hop_note(count: u64, notes: &mut Vec<String>) {
    if count > 0 {
        notes.push(format!(
            "bgpdump: {count} routes had no next hop; labelled with the unspecified address"
        ));
    }
}

/// Reads bgpdump's text of a RIB dump (`B` lines) as a table.
pub fn read_rib(input: Input, options: &LoadOptions) -> Result<LoadedTable, LoadError> {
    let path = input.path.clone();
    let mut peers = Peers::new(options.peer);
    let mut scratch_hops = NextHopTable::default();
    let mut stats = LoadStats::default();
    let (mut extra_paths, mut no_next_hop) = (0u64, 0u64);
    for_each_line(input, options, &mut stats, |text, stats| {
        let line = match parse_line(text, options.lenient) {
            Ok(line) => line,
            Err(what) => return Some(what),
        };
        let (Some((prefix, masked)), Some(route)) = (line.prefix, line.route) else {
            // A STATE or W line.
            return Some(
                "a BGP4MP update line in a RIB dump: this is bgpdump's text of an update \
                 stream; load it where updates are expected"
                    .into(),
            );
        };
        if line.entry != Entry::Rib {
            return Some(
                "an announcement (`A`) in a RIB dump: this is bgpdump's text of an update \
                 stream; load it where updates are expected"
                    .into(),
            );
        }
        let peer = peers.id(line.peer, line.peer_as);
        // ADD-PATH: the first path of each peer for a prefix is kept; the
        // prefix's index plus one marks the peer's last route. Checked
        // before the label, so a further path's next hop is not interned.
        let path_mark = line
            .add_path
            .then(|| u64::from(peers.prefix_index(prefix)) + 1);
        if path_mark.is_some_and(|mark| peers.list[peer as usize].last_seen == mark) {
            extra_paths += 1;
            return None;
        }
        let label = if peers.keeps(peer) {
            match label_of(
                options.label,
                route,
                prefix,
                &mut scratch_hops,
                &mut no_next_hop,
            ) {
                Ok(label) => Some(label),
                Err(what) => return Some(what),
            }
        } else {
            None
        };
        // Marked only once the line is good, so a bad first path (skipped
        // under `skip_bad`) does not hide the next.
        if let Some(mark) = path_mark {
            peers.list[peer as usize].last_seen = mark;
        }
        stats.masked += masked as u64;
        peers.commit(peer, prefix, label);
        None
    })?;
    let mut notes = Vec::new();
    if extra_paths > 0 {
        notes.push(format!(
            "bgpdump: ignored {extra_paths} extra ADD-PATH paths (kept the first path of a peer for each prefix)"
        ));
    }
    no_next_hop_note(no_next_hop, &mut notes);
    peers.finish(&path, "bgpdump", options.label, &scratch_hops, stats, notes)
}

/// Reads bgpdump's text of an update stream (`A`, `W` and `STATE` lines).
/// Next hops are interned in `nexthops`, so labels can agree with a table's.
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
        notes,
    } = &mut loaded;
    let path = input.path.clone();
    let mut peers = StreamPeers::default();
    let (mut states, mut no_next_hop) = (0u64, 0u64);
    for_each_line(input, options, stats, |text, stats| {
        let line = match parse_line(text, options.lenient) {
            Ok(line) => line,
            Err(what) => return Some(what),
        };
        let Some((prefix, masked)) = line.prefix else {
            states += 1;
            return None;
        };
        if line.entry == Entry::Rib {
            return Some(
                "a RIB entry (`B`) in an update stream: this is bgpdump's text of a RIB dump; \
                 load it as a table"
                    .into(),
            );
        }
        let Ok(time) = line.time.parse::<u64>() else {
            return Some(format!(
                "`{}` is not a Unix time (bgpdump -M dates name no time zone: give an update \
                 stream as bgpdump -m)",
                excerpt(line.time)
            ));
        };
        // Before the label: another peer's next hops are not interned.
        let slot = peers.slot(line.peer, line.peer_as);
        if !matches_selector(options.peer, line.peer, line.peer_as) {
            return None;
        }
        let label = match line.route {
            Some(route) => match label_of(options.label, route, prefix, nexthops, &mut no_next_hop)
            {
                Ok(label) => Some(label),
                Err(what) => return Some(what),
            },
            None => None,
        };
        stats.masked += masked as u64;
        stats.routes += 1;
        updates.push(Update {
            time,
            change: AnyChange::of(prefix, label),
        });
        peers.count(slot, 1);
        None
    })?;
    if states > 0 {
        notes.push(format!(
            "bgpdump: skipped {states} STATE lines (a session's state changes do not withdraw its routes)"
        ));
    }
    no_next_hop_note(no_next_hop, notes);
    peers.finish(&path, "bgpdump", options.peer, &mut loaded)?;
    Ok(loaded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_of_paths() {
        for (path, origin) in [
            ("", 0),
            ("65015", 65015),
            ("64500 64501 4200000000", 4_200_000_000),
            ("64500 {64510,64511}", 0),
            ("64500 {64510}", 0),
            ("(65001 65002) 64500", 64500),
            ("64500 (65001 65002)", 0),
            ("64500 [65001,65002]", 0),
            ("1.10 64086.59904", (64086 << 16) | 59904),
        ] {
            assert_eq!(origin_of(path), Ok(origin), "{path:?}");
        }
        for bad in [
            "64500 AS1",
            "64500 {64510,}",
            "1 -2",
            "70000.1",
            "4294967296",
        ] {
            assert!(origin_of(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn lines_are_split_by_type() {
        let line = parse_line(
            "TABLE_DUMP2_AP|1|B|fd02::10|65000|fd01:1::/64|7|64512 64513|IGP|fd02::10|100|10||NAG||",
            false,
        )
        .unwrap();
        assert!(line.add_path && line.entry == Entry::Rib);
        assert_eq!(line.route, Some(("64512 64513", "fd02::10")));
        let line = parse_line("BGP4MP|5|W|192.0.2.1|64500|10.0.0.0/8", false).unwrap();
        assert!(line.entry == Entry::Withdraw && line.route.is_none());
        let line = parse_line("BGP4MP|5|STATE|192.0.2.1|64500|2|4", false).unwrap();
        assert!(line.entry == Entry::State && line.prefix.is_none());
        assert!(looks_like("BGP4MP_ET|5|STATE|192.0.2.1|64500|2|4"));
        assert!(looks_like(
            "TABLE_DUMP2_AP|1|B|fd02::10|65000|fd01:1::/64|7|1|IGP|::|0|0||NAG||"
        ));
        assert!(!looks_like("10.0.0.0/8 1"));
        assert!(!looks_like("TABLE_DUMP9|1|B"));
        assert!(!looks_like("BGP4MP"));
    }
}
