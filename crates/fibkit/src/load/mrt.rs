//! MRT (RFC 6396) RIB dumps and BGP4MP update streams, through `bgpkit-parser`.
//!
//! The record framing (the 12-byte common header: timestamp, type, subtype,
//! length) is read here, not by the parser, so that a truncated or corrupt
//! file is reported as `file:N: record N at byte B: what is wrong` before any
//! body is decoded. Records are read and decoded one at a time: the file is
//! never held in memory. A bad record (framing intact) stops the load, or
//! with [`LoadOptions::skip_bad`] is skipped whole and counted; broken
//! framing (a truncated file, an impossible length) stops it either way,
//! with `skip_bad` as a note and one skipped record.
//!
//! Who decodes what:
//! - `TABLE_DUMP_V2` RIB records: their entries are framed here and only the
//!   kept peers' path attributes are decoded, by bgpkit-parser's attribute
//!   parser. With `--peer` most entries of a collector dump stay undecoded
//!   (a 20-peer dump loads about ten times faster), and a corrupt entry is
//!   an error where bgpkit-parser's own RIB decoder would keep the entries
//!   before it with only a log warning. Unicast `RIB_GENERIC`, which
//!   bgpkit-parser 0.23 does not decode, is read as the `RIB_AFI` layout it
//!   reduces to;
//! - `BGP4MP_ENTRY` (one route per record, from the MRT drafts before
//!   RFC 6396; OpenBGPD's `table-mp` dumps), which bgpkit-parser does not
//!   decode: the entry here, its attributes by bgpkit-parser;
//! - everything else (`PEER_INDEX_TABLE`, `TABLE_DUMP`, `BGP4MP`):
//!   `bgpkit_parser::parser::mrt::mrt_record::parse_mrt_body`.
//!
//! RIB dumps (`TABLE_DUMP`, `TABLE_DUMP_V2` including the RFC 8050 ADD-PATH
//! subtypes, `BGP4MP_ENTRY`):
//! - a collector dump holds the routes of many peers; one peer's routes
//!   become the table: [`LoadOptions::peer`] (by address, or by AS: the first
//!   peer of that AS in the peer table), by default the peer with the most
//!   routes (ties: the first in the file; BIRD lists its own routes as a
//!   peer 0.0.0.0 or `::` of AS 0). The choice is written to
//!   [`LoadedTable::notes`]. Until the end of the file it is not known which
//!   peer that is, so the default keeps every peer's routes while reading, in
//!   8 bytes per route (prefix index and label; each prefix is stored once);
//! - with ADD-PATH a peer may have several paths for one prefix in one
//!   record: the first is kept, the others are counted in a note;
//! - a prefix repeated in a later record for the same peer replaces the
//!   earlier route and counts as a duplicate, as in the text loaders;
//! - multicast and VPN RIBs are skipped (counted in a note).
//!
//! Update streams (`BGP4MP`, `BGP4MP_ET`, all `MESSAGE` subtypes with or
//! without AS4 and ADD-PATH): every UPDATE becomes its withdrawals, then its
//! announcements (IPv4 NLRI and unicast `MP_REACH`/`MP_UNREACH`), stamped
//! with the record's timestamp in seconds. All peers are taken unless
//! [`LoadOptions::peer`] picks one (by AS: every peer of that AS). Messages
//! the collector sent itself (`*_LOCAL` subtypes) and state changes are
//! skipped: a session going down does not become withdrawals. ADD-PATH path
//! identifiers are ignored: a withdrawal of any path removes the prefix.
//!
//! Labels ([`LabelSource`]): the next hop (`NEXT_HOP`, or the `MP_REACH`
//! next hop, its global address when a link-local one comes with it),
//! interned in the [`NextHopTable`]; a route without one gets the
//! unspecified address of its family (counted in a note). Or the origin AS:
//! the last AS of the AS path (`AS4_PATH` merged in as RFC 6793 says); 0 when
//! there is no path or the path ends in an `AS_SET` or a confederation
//! segment, where no single origin exists.
//!
//! Not read: `BGP4MP_SNAPSHOT` (a file name, from the same drafts) and the
//! deprecated `BGP` type. Historical `TABLE_DUMP` records whose length field
//! is four bytes short are read whole (and noted).

use std::collections::HashMap;
use std::io::ErrorKind;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;

use bgpkit_parser::models::{
    AsPathSegment, Attributes, Bgp4MpEnum, BgpMessage, MrtMessage, NetworkPrefix, Nlri, Safi,
    TableDumpMessage, TableDumpV2Message,
};
use bgpkit_parser::parser::mrt::mrt_record::parse_mrt_body;
use bgpkit_parser::ParserError;

use super::text::AnyPrefix;
use super::{
    AnyChange, Input, LabelSource, LoadError, LoadOptions, LoadStats, LoadedTable, LoadedUpdates,
    NextHopTable, PeerSelector, Update,
};
use crate::prefix::{Label, Prefix};
use crate::rib::Change;

/// Bytes in the MRT common header (RFC 6396 section 2).
const HEADER_BYTES: usize = 12;

/// Longest record body accepted. The largest real records (a `RIB_IPV4_UNICAST`
/// entry with a few hundred peers) are well under 1 MiB; a larger length
/// field means a corrupt file, and trusting it could allocate gigabytes.
/// bgpkit-parser uses the same bound.
const MAX_BODY_BYTES: u32 = 16 << 20;

/// How often (in records) the progress callback is called.
const PROGRESS_EVERY_RECORDS: u64 = 1 << 12;

/// Peers listed in an error message before "and N more".
const PEERS_LISTED: usize = 20;

/// MRT record types (RFC 6396 section 4, IANA registry).
mod kind {
    pub const BGP: u16 = 5;
    pub const TABLE_DUMP: u16 = 12;
    pub const TABLE_DUMP_V2: u16 = 13;
    pub const BGP4MP: u16 = 16;
    pub const BGP4MP_ET: u16 = 17;
    /// Every type RFC 6396 and its registry define, deprecated ones included.
    pub fn is_known(kind: u16) -> bool {
        matches!(kind, 0..=13 | 16 | 17 | 32 | 33 | 48 | 49)
    }
}

/// `BGP4MP_ENTRY`: one RIB entry per record, from the MRT drafts before
/// RFC 6396, still written by OpenBGPD's `table-mp` dumps.
const BGP4MP_ENTRY: u16 = 2;

/// `BGP4MP_SNAPSHOT`: the name of a file holding a dump, from the same draft.
const BGP4MP_SNAPSHOT: u16 = 3;

/// One framed record, body not yet decoded.
struct RawRecord {
    /// Seconds since the Unix epoch.
    time: u32,
    kind: u16,
    subtype: u16,
    body: Vec<u8>,
}

/// Reads records one by one, checking the framing.
struct Records {
    input: Input,
    /// Number of the last record returned, from 1.
    number: u64,
    /// Byte offset (in the decompressed stream) of the last record returned.
    offset: u64,
    /// Byte offset of the next record.
    next_offset: u64,
    /// `TABLE_DUMP` records whose length field was four bytes short.
    short_lengths: u64,
}

impl Records {
    fn new(input: Input) -> Self {
        Records {
            input,
            number: 0,
            offset: 0,
            next_offset: 0,
            short_lengths: 0,
        }
    }

    fn path(&self) -> &Path {
        &self.input.path
    }

    /// Fills `buf` as far as the input goes; returns the bytes read.
    fn read_full(&mut self, buf: &mut [u8]) -> Result<usize, String> {
        let mut filled = 0;
        while filled < buf.len() {
            match self.input.reader.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("read error: {e} (truncated or corrupt file?)")),
            }
        }
        Ok(filled)
    }

    /// The next record; `Ok(None)` at a clean end of file; `Err` when the
    /// framing is broken (nothing after it can be trusted).
    fn next(&mut self) -> Result<Option<RawRecord>, String> {
        let mut header = [0u8; HEADER_BYTES];
        let got = self.read_full(&mut header)?;
        if got == 0 {
            return Ok(None);
        }
        self.number += 1;
        self.offset = self.next_offset;
        if got < HEADER_BYTES {
            return Err(format!(
                "the file ends inside a record header ({got} of {HEADER_BYTES} bytes): truncated file"
            ));
        }
        let time = u32::from_be_bytes([header[0], header[1], header[2], header[3]]);
        let kind = u16::from_be_bytes([header[4], header[5]]);
        let subtype = u16::from_be_bytes([header[6], header[7]]);
        let length = u32::from_be_bytes([header[8], header[9], header[10], header[11]]);
        if !kind::is_known(kind) {
            let what = if self.number == 1 {
                "this does not look like an MRT file"
            } else {
                "the previous record's length was wrong or the file is corrupt"
            };
            return Err(format!("record type {kind} is not an MRT type: {what}"));
        }
        if length > MAX_BODY_BYTES {
            return Err(format!(
                "the record length {length} bytes is over the {} MiB limit: corrupt file",
                MAX_BODY_BYTES >> 20
            ));
        }
        let mut body = vec![0u8; length as usize];
        let got = self.read_full(&mut body)?;
        if got < body.len() {
            return Err(format!(
                "the record ({} subtype {subtype}) is {length} bytes long but the file ends after {got}: truncated file",
                kind_name(kind)
            ));
        }
        if kind == kind::TABLE_DUMP && table_dump_length_is_short(subtype, &body) {
            let mut rest = [0u8; 4];
            let got = self.read_full(&mut rest)?;
            if got < rest.len() {
                return Err(format!(
                    "the TABLE_DUMP record's entry needs {} bytes but the file ends after {}: truncated file",
                    body.len() + 4,
                    body.len() + got
                ));
            }
            body.extend_from_slice(&rest);
            self.short_lengths += 1;
        }
        self.next_offset += (HEADER_BYTES + body.len()) as u64;
        Ok(Some(RawRecord {
            time,
            kind,
            subtype,
            body,
        }))
    }

    /// `record N at byte B: what`, as a [`LoadError::Bad`].
    fn error(&self, what: &str) -> LoadError {
        LoadError::bad(
            self.path(),
            self.number,
            format!("record {} at byte {}: {what}", self.number, self.offset),
        )
    }
}

/// Whether a `TABLE_DUMP` entry runs exactly four bytes past the record's
/// length: some historical dump writers left the length four bytes short
/// (bgpkit-parser reads such files the same way).
fn table_dump_length_is_short(subtype: u16, body: &[u8]) -> bool {
    let addr_bytes = match subtype {
        1 => 4,
        2 => 16,
        _ => return false,
    };
    // View (2), sequence (2), prefix, length (1), status (1), time (4),
    // peer address, peer AS (2), then the attribute length (2).
    let attributes_len_at = 4 + 2 * addr_bytes + 8;
    let Some(len_bytes) = body.get(attributes_len_at..attributes_len_at + 2) else {
        return false;
    };
    let attributes_len = usize::from(u16::from_be_bytes([len_bytes[0], len_bytes[1]]));
    attributes_len_at + 2 + attributes_len == body.len() + 4
}

fn kind_name(kind: u16) -> String {
    match kind {
        kind::BGP => "BGP (deprecated)".into(),
        kind::TABLE_DUMP => "TABLE_DUMP".into(),
        kind::TABLE_DUMP_V2 => "TABLE_DUMP_V2".into(),
        kind::BGP4MP => "BGP4MP".into(),
        kind::BGP4MP_ET => "BGP4MP_ET".into(),
        other => format!("type {other}"),
    }
}

/// The message in a record's body: after the microseconds of the
/// extended-timestamp type, which counts them in its length.
fn message_body(record: &RawRecord) -> Result<&[u8], String> {
    if record.kind == kind::BGP4MP_ET {
        record
            .body
            .get(4..)
            .ok_or_else(|| "a BGP4MP_ET record shorter than its 4-byte microseconds".into())
    } else {
        Ok(&record.body)
    }
}

fn is_bgp4mp(kind: u16) -> bool {
    matches!(kind, kind::BGP4MP | kind::BGP4MP_ET)
}

/// Decodes a record body (taking it out of `record`) with bgpkit-parser;
/// `Err` is a bad record (the framing is intact).
fn decode(record: &mut RawRecord) -> Result<MrtMessage, String> {
    message_body(record)?;
    let mut body = std::mem::take(&mut record.body);
    if record.kind == kind::BGP4MP_ET {
        body.drain(..4);
    }
    let record = &*record;
    if is_bgp4mp(record.kind) && record.subtype == BGP4MP_SNAPSHOT {
        return Err(
            "BGP4MP_SNAPSHOT records (the name of a dump file, from a draft before RFC 6396) \
             are not supported; load the dump file itself"
                .into(),
        );
    }
    if is_bgp4mp(record.kind) && record.subtype == BGP4MP_ENTRY {
        return Err("a BGP4MP_ENTRY RIB record inside an update stream".into());
    }
    parse_mrt_body(record.kind, record.subtype, body.into()).map_err(|e| describe(&e, record))
}

/// What a `RIB_GENERIC` record turns into.
enum Generic {
    /// Not a `RIB_GENERIC` record: the body unchanged.
    Not(Vec<u8>),
    /// Unicast IPv4/IPv6: the equivalent `RIB_IPV*_UNICAST[_ADDPATH]` subtype and body.
    Unicast(u16, Vec<u8>),
    /// Another AFI/SAFI (VPN, multicast, flowspec, ...): not a forwarding route.
    Other,
}

/// bgpkit-parser 0.23 does not decode `RIB_GENERIC` (RFC 6396 section
/// 4.3.3), and [`RibReader::rib_afi`] reads the `RIB_AFI` layout. With unicast IPv4/IPv6 its NLRI is encoded as the prefix of
/// `RIB_IPV4_UNICAST`/`RIB_IPV6_UNICAST` (length, then the prefix bytes), so
/// dropping the AFI and SAFI fields turns it into one of those.
fn unicast_rib_generic(record: &RawRecord, body: Vec<u8>) -> Generic {
    const RIB_GENERIC: u16 = 6;
    const RIB_GENERIC_ADDPATH: u16 = 12;
    if record.kind != kind::TABLE_DUMP_V2
        || !matches!(record.subtype, RIB_GENERIC | RIB_GENERIC_ADDPATH)
    {
        return Generic::Not(body);
    }
    // Sequence number (4), AFI (2), SAFI (1), NLRI, entries.
    let (Some(afi), Some(&safi)) = (body.get(4..6), body.get(6)) else {
        // Too short: let the parser report it.
        return Generic::Not(body);
    };
    let add_path = record.subtype == RIB_GENERIC_ADDPATH;
    let subtype = match (u16::from_be_bytes([afi[0], afi[1]]), safi, add_path) {
        (1, 1, false) => 2,
        (2, 1, false) => 4,
        (1, 1, true) => 8,
        (2, 1, true) => 10,
        _ => return Generic::Other,
    };
    let mut rewritten = Vec::with_capacity(body.len() - 3);
    rewritten.extend_from_slice(&body[..4]);
    rewritten.extend_from_slice(&body[7..]);
    Generic::Unicast(subtype, rewritten)
}

/// The parser's message, without its `Error: ` prefix, with the record type.
fn describe(error: &ParserError, record: &RawRecord) -> String {
    let text = error.to_string();
    let text = text.strip_prefix("Error: ").unwrap_or(&text);
    format!(
        "cannot decode this {} subtype {} record: {text}",
        kind_name(record.kind),
        record.subtype
    )
}

/// Whether the record holds RIB entries rather than updates.
fn is_rib_record(record: &RawRecord) -> bool {
    matches!(record.kind, kind::TABLE_DUMP | kind::TABLE_DUMP_V2)
        || (is_bgp4mp(record.kind) && record.subtype == BGP4MP_ENTRY)
}

/// A prefix from the parser, checked for host bits.
fn to_prefix(
    prefix: &NetworkPrefix,
    lenient: bool,
    stats: &mut LoadStats,
) -> Result<AnyPrefix, String> {
    to_prefix_parts(
        prefix.prefix.addr(),
        prefix.prefix.prefix_len(),
        lenient,
        stats,
    )
}

/// `addr/plen` as a prefix, checked for host bits.
fn to_prefix_parts(
    addr: IpAddr,
    plen: u8,
    lenient: bool,
    stats: &mut LoadStats,
) -> Result<AnyPrefix, String> {
    let (result, masked) = match addr {
        IpAddr::V4(addr) => {
            let addr = u32::from(addr);
            match Prefix::<u32>::new(addr, plen) {
                Ok(p) => (Ok(AnyPrefix::V4(p)), false),
                Err(_) if lenient && plen <= 32 => {
                    (Ok(AnyPrefix::V4(Prefix::new_masked(addr, plen))), true)
                }
                Err(e) => (Err(e.to_string()), false),
            }
        }
        IpAddr::V6(addr) => {
            let addr = u128::from(addr);
            match Prefix::<u128>::new(addr, plen) {
                Ok(p) => (Ok(AnyPrefix::V6(p)), false),
                Err(_) if lenient && plen <= 128 => {
                    (Ok(AnyPrefix::V6(Prefix::new_masked(addr, plen))), true)
                }
                Err(e) => (Err(e.to_string()), false),
            }
        }
    };
    stats.masked += masked as u64;
    result
}

/// The next hop of a route to a prefix of the family `v6`.
fn next_hop(attributes: &Attributes, v6: bool) -> Option<IpAddr> {
    let mp = attributes
        .get_reachable_nlri()
        .and_then(|nlri| nlri.next_hop)
        .map(|nh| nh.global_addr());
    if v6 {
        mp.or_else(|| attributes.next_hop())
    } else {
        attributes.next_hop().or(mp)
    }
}

/// The origin AS: the last AS of the (RFC 6793 merged) path, 0 if none.
fn origin_asn(attributes: &Attributes) -> u32 {
    let last_segment_origin = |path: &bgpkit_parser::models::AsPath| match path
        .iter_segments()
        .last()
    {
        Some(AsPathSegment::AsSequence(asns)) => asns.last().map(|asn| asn.to_u32()).unwrap_or(0),
        // An AS_SET (aggregate) or a confederation segment has no single origin.
        _ => 0,
    };
    match (attributes.as_path(), attributes.as4_path()) {
        (None, None) => 0,
        (Some(path), None) | (None, Some(path)) => last_segment_origin(path),
        (Some(_), Some(_)) => attributes
            .effective_as_path()
            .map(|path| last_segment_origin(&path))
            .unwrap_or(0),
    }
}

/// Counts of things dropped or patched, for notes.
#[derive(Default)]
struct Dropped {
    /// ADD-PATH paths after the first of a peer for one prefix.
    extra_paths: u64,
    /// Records or prefixes of other address families or SAFIs.
    non_unicast: u64,
    /// Routes without a next hop (labelled with the unspecified address).
    no_next_hop: u64,
    /// Messages sent by the collector itself.
    local: u64,
}

impl Dropped {
    fn notes(&self, notes: &mut Vec<String>) {
        if self.extra_paths > 0 {
            notes.push(format!(
                "MRT: ignored {} extra ADD-PATH paths (kept the first path of a peer for each prefix)",
                self.extra_paths
            ));
        }
        if self.non_unicast > 0 {
            notes.push(format!(
                "MRT: skipped {} non-unicast (multicast, VPN, ...) records or prefixes",
                self.non_unicast
            ));
        }
        if self.no_next_hop > 0 {
            notes.push(format!(
                "MRT: {} routes had no next hop; labelled with the unspecified address",
                self.no_next_hop
            ));
        }
        if self.local > 0 {
            notes.push(format!(
                "MRT: skipped {} messages the collector sent itself",
                self.local
            ));
        }
    }
}

/// Picks the label of a route; next hops go to `nexthops`.
fn label_of(
    attributes: &Attributes,
    explicit_next_hop: Option<IpAddr>,
    v6: bool,
    source: LabelSource,
    nexthops: &mut NextHopTable,
    dropped: &mut Dropped,
) -> Label {
    match source {
        LabelSource::OriginAs => origin_asn(attributes),
        LabelSource::NextHop => {
            let addr = explicit_next_hop
                .or_else(|| next_hop(attributes, v6))
                .unwrap_or_else(|| {
                    dropped.no_next_hop += 1;
                    if v6 {
                        IpAddr::V6(Ipv6Addr::UNSPECIFIED)
                    } else {
                        IpAddr::V4(Ipv4Addr::UNSPECIFIED)
                    }
                });
            nexthops.intern(addr)
        }
    }
}

fn matches_selector(selector: Option<PeerSelector>, addr: IpAddr, asn: u32) -> bool {
    match selector {
        None => true,
        Some(PeerSelector::Addr(a)) => a == addr,
        Some(PeerSelector::Asn(n)) => n == asn,
    }
}

/// A route's attributes, decoded or not yet.
enum Route<'a> {
    /// Decoded by bgpkit-parser, with the next hop when the record has its own.
    Decoded {
        attributes: &'a Attributes,
        next_hop: Option<IpAddr>,
    },
    /// A `TABLE_DUMP_V2` RIB entry's attribute bytes, decoded only if kept.
    Raw {
        attributes: &'a [u8],
        add_path: bool,
    },
}

/// Decodes a `TABLE_DUMP_V2` RIB entry's attributes as bgpkit-parser's RIB
/// decoder does: 4-byte ASes, and an `MP_REACH_NLRI` abbreviated to its next
/// hop (RFC 6396 section 4.3.4). The parser wants the entry's prefix only
/// to fill in that attribute's NLRI, which is not used here: any prefix of
/// the family will do.
fn decode_rib_attributes(bytes: &[u8], v6: bool, add_path: bool) -> Result<Attributes, String> {
    use bgpkit_parser::models::{Afi, AsnLength};
    use bgpkit_parser::parser::bgp::attributes::parse_attributes;

    let (afi, any_prefix) = if v6 {
        (Afi::Ipv6, "::/0")
    } else {
        (Afi::Ipv4, "0.0.0.0/0")
    };
    let any_prefix: Option<NetworkPrefix> = any_prefix.parse().ok();
    parse_attributes(
        bytes.to_vec().into(),
        &AsnLength::Bits32,
        add_path,
        Some(afi),
        Some(Safi::Unicast),
        any_prefix.as_ref().map(std::slice::from_ref),
    )
    .map_err(|e| {
        let text = e.to_string();
        format!(
            "cannot decode a RIB entry's attributes: {}",
            text.strip_prefix("Error: ").unwrap_or(&text)
        )
    })
}

/// A collector peer seen in a RIB dump.
struct RibPeer {
    addr: IpAddr,
    asn: u32,
    /// Whether its routes are kept (it may be the one selected).
    keep: bool,
    /// `(prefix index, label)`; labels are scratch next-hop labels or ASNs.
    routes: Vec<(u32, Label)>,
    /// Routes counted (also for peers whose routes are not kept).
    count: u64,
    /// The last record this peer had a route in, to spot ADD-PATH extras.
    last_record: u64,
}

/// Routes of every peer while a RIB dump is read.
struct RibReader<'o> {
    options: &'o LoadOptions<'o>,
    peers: Vec<RibPeer>,
    peer_ids: HashMap<(IpAddr, u32), u32>,
    /// `TABLE_DUMP_V2` peer index -> position in `peers`.
    peer_table: Option<Vec<u32>>,
    /// Every prefix once (consecutive repeats are merged: dumps are sorted).
    prefixes: Vec<AnyPrefix>,
    /// Next hops of all peers; the chosen peer's are re-interned at the end.
    scratch_hops: NextHopTable,
    dropped: Dropped,
    stats: LoadStats,
    /// Route records seen (to tell a RIB dump from an update stream).
    rib_records: u64,
}

impl<'o> RibReader<'o> {
    fn peer_id(&mut self, addr: IpAddr, asn: u32) -> u32 {
        let selector = self.options.peer;
        let peers = &mut self.peers;
        *self.peer_ids.entry((addr, asn)).or_insert_with(|| {
            peers.push(RibPeer {
                addr,
                asn,
                keep: matches_selector(selector, addr, asn),
                routes: Vec::new(),
                count: 0,
                last_record: 0,
            });
            (peers.len() - 1) as u32
        })
    }

    fn prefix_index(&mut self, prefix: AnyPrefix) -> u32 {
        if self.prefixes.last() != Some(&prefix) {
            self.prefixes.push(prefix);
        }
        (self.prefixes.len() - 1) as u32
    }

    /// The label of `peer`'s route to a prefix of the family `v6`, or `None`
    /// when that peer's routes are not kept (its attributes stay undecoded).
    fn label(&mut self, peer: u32, v6: bool, route: Route) -> Result<Option<Label>, String> {
        if !self.peers.get(peer as usize).is_some_and(|p| p.keep) {
            return Ok(None);
        }
        let decoded;
        let (attributes, next_hop) = match route {
            Route::Decoded {
                attributes,
                next_hop,
            } => (attributes, next_hop),
            Route::Raw {
                attributes,
                add_path,
            } => {
                decoded = decode_rib_attributes(attributes, v6, add_path)?;
                (&decoded, None)
            }
        };
        Ok(Some(label_of(
            attributes,
            next_hop,
            v6,
            self.options.label,
            &mut self.scratch_hops,
            &mut self.dropped,
        )))
    }

    /// Counts `peer`'s route, and keeps it if it has a label. Called only
    /// once a record has been read whole, so a bad record adds nothing.
    fn commit(&mut self, peer: u32, prefix: AnyPrefix, label: Option<Label>) {
        let index = label.map(|_| self.prefix_index(prefix));
        if let Some(entry) = self.peers.get_mut(peer as usize) {
            entry.count += 1;
            if let (Some(index), Some(label)) = (index, label) {
                entry.routes.push((index, label));
            }
        }
    }

    /// `TABLE_DUMP` records: one route each (a batch holds several; there
    /// is no ADD-PATH, so a peer's routes in one batch are all kept).
    fn table_dump(&mut self, messages: &[TableDumpMessage]) -> Result<(), String> {
        let mut routes = Vec::with_capacity(messages.len());
        for message in messages {
            let prefix = to_prefix(&message.prefix, self.options.lenient, &mut self.stats)?;
            let peer = self.peer_id(message.peer_ip, message.peer_asn.to_u32());
            let route = Route::Decoded {
                attributes: &message.attributes,
                next_hop: None,
            };
            let label = self.label(peer, matches!(prefix, AnyPrefix::V6(_)), route)?;
            routes.push((peer, prefix, label));
        }
        for (peer, prefix, label) in routes {
            self.commit(peer, prefix, label);
        }
        Ok(())
    }

    /// Reads a `TABLE_DUMP_V2` RIB record (`RIB_IPV4/IPV6_UNICAST`, their
    /// ADD-PATH forms, and unicast `RIB_GENERIC`).
    ///
    /// The entries are framed here and only the kept peers' attributes are
    /// decoded (by bgpkit-parser's attribute parser): with `--peer`, most
    /// entries of a collector dump are skipped undecoded. Framing them here
    /// also catches a corrupt entry, where bgpkit-parser's own RIB decoder
    /// stops at it with a log warning and returns the entries before it.
    fn rib_afi(&mut self, record_no: u64, record: &mut RawRecord) -> Result<(), String> {
        self.rib_records += 1;
        let body = std::mem::take(&mut record.body);
        let (subtype, body) = match unicast_rib_generic(record, body) {
            Generic::Not(body) => (record.subtype, body),
            Generic::Unicast(subtype, body) => (subtype, body),
            Generic::Other => {
                self.dropped.non_unicast += 1;
                return Ok(());
            }
        };
        let (v6, add_path) = match subtype {
            2 => (false, false),
            4 => (true, false),
            8 => (false, true),
            10 => (true, true),
            // Multicast RIBs.
            3 | 5 | 9 | 11 => {
                self.dropped.non_unicast += 1;
                return Ok(());
            }
            _ => return Err("the RIB_GENERIC record ends inside its AFI and SAFI".into()),
        };
        let mut fields = Fields { bytes: &body };
        fields.take(4, "sequence number")?;
        let (addr, plen) = fields.prefix(v6)?;
        let prefix = to_prefix_parts(addr, plen, self.options.lenient, &mut self.stats)?;
        let count = fields.u16("entry count")?;
        // Frame every entry first, so a bad record adds nothing.
        let mut entries = Vec::with_capacity(usize::from(count).min(body.len() / 8));
        for _ in 0..count {
            let peer_index = fields.u16("peer index")?;
            fields.take(4, "originated time")?;
            if add_path {
                fields.take(4, "path identifier")?;
            }
            let attributes_len = usize::from(fields.u16("attribute length")?);
            let attributes = fields.take(attributes_len, "attributes")?;
            let Some(table) = &self.peer_table else {
                return Err("a RIB record before any PEER_INDEX_TABLE record".into());
            };
            let peer = match table.get(usize::from(peer_index)) {
                Some(&peer) if peer != u32::MAX => peer,
                _ => {
                    return Err(format!(
                        "peer index {peer_index} is not in the PEER_INDEX_TABLE ({} peers)",
                        table.iter().filter(|&&p| p != u32::MAX).count()
                    ))
                }
            };
            entries.push((peer, attributes));
        }
        if !fields.bytes.is_empty() {
            return Err(format!(
                "{} bytes after the {count} entries the record announces",
                fields.bytes.len()
            ));
        }
        let mut routes = Vec::with_capacity(entries.len());
        let mut extra_paths = 0;
        for (peer, attributes) in entries {
            // ADD-PATH: the first path of each peer is kept.
            let Some(entry) = self.peers.get_mut(peer as usize) else {
                continue;
            };
            if entry.last_record == record_no {
                extra_paths += 1;
                continue;
            }
            entry.last_record = record_no;
            let route = Route::Raw {
                attributes,
                add_path,
            };
            routes.push((peer, self.label(peer, v6, route)?));
        }
        self.dropped.extra_paths += extra_paths;
        for (peer, label) in routes {
            self.commit(peer, prefix, label);
        }
        Ok(())
    }

    fn bgp4mp_entry(&mut self, body: &[u8]) -> Result<(), String> {
        self.rib_records += 1;
        let Some(entry) = parse_bgp4mp_entry(body)? else {
            self.dropped.non_unicast += 1;
            return Ok(());
        };
        let prefix = to_prefix_parts(
            entry.addr,
            entry.plen,
            self.options.lenient,
            &mut self.stats,
        )?;
        let peer = self.peer_id(entry.peer_ip, entry.peer_asn);
        let route = Route::Decoded {
            attributes: &entry.attributes,
            next_hop: entry.next_hop,
        };
        let label = self.label(peer, matches!(prefix, AnyPrefix::V6(_)), route)?;
        self.commit(peer, prefix, label);
        Ok(())
    }

    /// Handles one decoded record; `Err` is a bad record.
    fn message(&mut self, message: &MrtMessage) -> Result<(), String> {
        match message {
            MrtMessage::TableDumpMessage(m) => {
                self.rib_records += 1;
                self.table_dump(std::slice::from_ref(m))
            }
            MrtMessage::TableDumpMessageBatch(ms) => {
                self.rib_records += 1;
                self.table_dump(ms)
            }
            MrtMessage::TableDumpV2Message(TableDumpV2Message::PeerIndexTable(table)) => {
                let size = table
                    .id_peer_map
                    .keys()
                    .map(|&i| i as usize + 1)
                    .max()
                    .unwrap_or(0);
                let mut ids = vec![u32::MAX; size];
                let mut indexes: Vec<_> = table.id_peer_map.iter().collect();
                indexes.sort_by_key(|(&i, _)| i);
                for (&index, peer) in indexes {
                    ids[index as usize] = self.peer_id(peer.peer_ip, peer.peer_asn.to_u32());
                }
                self.peer_table = Some(ids);
                Ok(())
            }
            // Read by `rib_afi`, never passed to this decoder.
            MrtMessage::TableDumpV2Message(
                TableDumpV2Message::RibAfi(_) | TableDumpV2Message::RibGeneric(_),
            ) => Ok(()),
            MrtMessage::TableDumpV2Message(TableDumpV2Message::GeoPeerTable(_)) => Ok(()),
            MrtMessage::Bgp4Mp(_) | MrtMessage::LegacyBgp(_) => {
                Err("a BGP4MP update record inside a RIB dump".into())
            }
        }
    }

    /// Picks the peer and builds the table.
    fn finish(mut self, path: &Path, notes: Vec<String>) -> Result<LoadedTable, LoadError> {
        let chosen = match self.options.peer {
            Some(selector) => self
                .peers
                .iter()
                .position(|p| matches_selector(Some(selector), p.addr, p.asn)),
            // The first of the peers with most routes: max_by_key keeps the last.
            None => self
                .peers
                .iter()
                .enumerate()
                .rev()
                .max_by_key(|(_, p)| p.count)
                .map(|(i, _)| i),
        };
        let Some(chosen) = chosen else {
            let wanted = match self.options.peer {
                Some(PeerSelector::Addr(addr)) => format!("no peer {addr}"),
                Some(PeerSelector::Asn(asn)) => format!("no peer of AS{asn}"),
                None => "no peer".to_string(),
            };
            return Err(LoadError::file(
                path,
                format!("{wanted} in this MRT RIB dump; {}", list_peers(&self.peers)),
            ));
        };
        let mut table = LoadedTable {
            stats: std::mem::take(&mut self.stats),
            notes,
            ..LoadedTable::default()
        };
        let peer = &self.peers[chosen];
        for &(index, label) in &peer.routes {
            let label = match self.options.label {
                LabelSource::OriginAs => label,
                LabelSource::NextHop => match self.scratch_hops.addr(label) {
                    Some(addr) => table.nexthops.intern(addr),
                    None => label,
                },
            };
            table.stats.routes += 1;
            let old = match self.prefixes.get(index as usize) {
                Some(AnyPrefix::V4(p)) => table.v4.insert(*p, label),
                Some(AnyPrefix::V6(p)) => table.v6.insert(*p, label),
                None => None,
            };
            table.stats.duplicates += old.is_some() as u64;
        }
        table.notes.insert(
            0,
            format!(
                "MRT: kept the routes of peer {} (AS{}): {} prefixes of {} peers; choose another with --peer",
                peer.addr,
                peer.asn,
                table.v4.len() + table.v6.len(),
                self.peers.len()
            ),
        );
        self.dropped.notes(&mut table.notes);
        Ok(table)
    }
}

/// `its N peers: 192.0.2.1 (AS64500, 123 routes), ...`, most routes first.
fn list_peers(peers: &[RibPeer]) -> String {
    if peers.is_empty() {
        return "the dump names no peers".into();
    }
    let mut order: Vec<&RibPeer> = peers.iter().collect();
    order.sort_by_key(|p| std::cmp::Reverse(p.count));
    let mut text = format!("its {} peers: ", peers.len());
    let listed: Vec<String> = order
        .iter()
        .take(PEERS_LISTED)
        .map(|p| format!("{} (AS{}, {} routes)", p.addr, p.asn, p.count))
        .collect();
    text.push_str(&listed.join(", "));
    if peers.len() > PEERS_LISTED {
        text.push_str(&format!(", and {} more", peers.len() - PEERS_LISTED));
    }
    text
}

/// What to do after a framing error: stop with it, or (skip_bad) count and stop.
fn framing_failure(
    records: &Records,
    options: &LoadOptions,
    stats: &mut LoadStats,
    notes: &mut Vec<String>,
    what: &str,
) -> Result<(), LoadError> {
    if options.skip_bad {
        stats.skip("record", records.number, what);
        notes.push(format!(
            "MRT: stopped reading at record {} (byte {}): {what}",
            records.number, records.offset
        ));
        Ok(())
    } else {
        Err(records.error(what))
    }
}

/// Reads an MRT RIB dump (TABLE_DUMP, TABLE_DUMP_V2, with or without ADD-PATH).
pub fn read_rib(input: Input, options: &LoadOptions) -> Result<LoadedTable, LoadError> {
    let progress = options.progress;
    let mut records = Records::new(input);
    let mut reader = RibReader {
        options,
        peers: Vec::new(),
        peer_ids: HashMap::new(),
        peer_table: None,
        prefixes: Vec::new(),
        scratch_hops: NextHopTable::default(),
        dropped: Dropped::default(),
        stats: LoadStats::default(),
        rib_records: 0,
    };
    let mut notes = Vec::new();
    loop {
        let mut record = match records.next() {
            Ok(Some(record)) => record,
            Ok(None) => break,
            Err(what) => {
                framing_failure(&records, options, &mut reader.stats, &mut notes, &what)?;
                break;
            }
        };
        reader.stats.records += 1;
        if records.number.is_multiple_of(PROGRESS_EVERY_RECORDS) {
            if let Some(progress) = progress {
                progress(records.input.raw_bytes_read());
            }
        }
        if !is_rib_record(&record) && reader.rib_records == 0 && reader.peer_table.is_none() {
            let what = if is_bgp4mp(record.kind) && record.subtype != BGP4MP_SNAPSHOT {
                format!(
                    "this is a {} update stream, not a RIB dump; load it where updates are expected",
                    kind_name(record.kind)
                )
            } else if is_bgp4mp(record.kind) {
                match decode(&mut record) {
                    Err(what) => what,
                    Ok(_) => "unexpected BGP4MP record".into(),
                }
            } else {
                format!(
                    "{} subtype {} records are not a RIB dump (expected TABLE_DUMP or TABLE_DUMP_V2)",
                    kind_name(record.kind),
                    record.subtype
                )
            };
            return Err(records.error(&what));
        }
        let result = if is_bgp4mp(record.kind) && record.subtype == BGP4MP_ENTRY {
            message_body(&record).and_then(|body| reader.bgp4mp_entry(body))
        } else if record.kind == kind::TABLE_DUMP_V2 && (2..=12).contains(&record.subtype) {
            // Every RIB subtype (2-6, 8-12); 7 is GEO_PEER_TABLE.
            if record.subtype == 7 {
                Ok(())
            } else {
                reader.rib_afi(records.number, &mut record)
            }
        } else {
            decode(&mut record).and_then(|message| reader.message(&message))
        };
        if let Err(what) = result {
            if options.skip_bad {
                reader.stats.skip("record", records.number, &what);
            } else {
                return Err(records.error(&what));
            }
        }
    }
    if let Some(progress) = progress {
        progress(records.input.raw_bytes_read());
    }
    if records.short_lengths > 0 {
        notes.push(format!(
            "MRT: {} TABLE_DUMP records declared a length four bytes short (an old writer's bug); read them whole",
            records.short_lengths
        ));
    }
    let path = records.input.path.clone();
    reader.finish(&path, notes)
}

/// Reads an MRT BGP4MP update stream.
pub fn read_updates(
    input: Input,
    options: &LoadOptions,
    nexthops: NextHopTable,
) -> Result<LoadedUpdates, LoadError> {
    let mut records = Records::new(input);
    let mut loaded = LoadedUpdates {
        nexthops,
        ..LoadedUpdates::default()
    };
    let mut dropped = Dropped::default();
    // Peers seen (address, AS) -> changes taken, for notes and errors.
    let mut peers: Vec<((IpAddr, u32), u64)> = Vec::new();
    let mut update_records = 0u64;
    loop {
        let mut record = match records.next() {
            Ok(Some(record)) => record,
            Ok(None) => break,
            Err(what) => {
                framing_failure(
                    &records,
                    options,
                    &mut loaded.stats,
                    &mut loaded.notes,
                    &what,
                )?;
                break;
            }
        };
        loaded.stats.records += 1;
        if records.number.is_multiple_of(PROGRESS_EVERY_RECORDS) {
            if let Some(progress) = options.progress {
                progress(records.input.raw_bytes_read());
            }
        }
        if is_rib_record(&record) && update_records == 0 {
            let kind = if is_bgp4mp(record.kind) {
                "BGP4MP_ENTRY".to_string()
            } else {
                kind_name(record.kind)
            };
            return Err(records.error(&format!(
                "this is a {kind} RIB dump, not an update stream; load it as a table"
            )));
        }
        let result = decode(&mut record).and_then(|message| {
            update_records += 1;
            updates_of(
                &message,
                record.time as u64,
                options,
                &mut loaded,
                &mut dropped,
                &mut peers,
            )
        });
        if let Err(what) = result {
            if options.skip_bad {
                loaded.stats.skip("record", records.number, &what);
            } else {
                return Err(records.error(&what));
            }
        }
    }
    if let Some(progress) = options.progress {
        progress(records.input.raw_bytes_read());
    }
    let taken: Vec<_> = peers.iter().filter(|(_, n)| *n > 0).collect();
    if let Some(selector) = options.peer {
        if taken.is_empty() {
            let wanted = match selector {
                PeerSelector::Addr(addr) => format!("no updates from peer {addr}"),
                PeerSelector::Asn(asn) => format!("no updates from a peer of AS{asn}"),
            };
            let list: Vec<String> = peers
                .iter()
                .take(PEERS_LISTED)
                .map(|((addr, asn), _)| format!("{addr} (AS{asn})"))
                .collect();
            return Err(LoadError::file(
                &records.input.path,
                format!(
                    "{wanted} in this MRT update stream; peers seen: {}",
                    if list.is_empty() {
                        "none".to_string()
                    } else {
                        list.join(", ")
                    }
                ),
            ));
        }
    }
    loaded.notes.insert(
        0,
        format!(
            "MRT: {} changes from {} of {} peers{}",
            loaded.updates.len(),
            taken.len(),
            peers.len(),
            if options.peer.is_none() {
                " (all peers; choose one with --peer)"
            } else {
                ""
            }
        ),
    );
    dropped.notes(&mut loaded.notes);
    Ok(loaded)
}

/// Turns one decoded BGP4MP record into changes.
fn updates_of(
    message: &MrtMessage,
    time: u64,
    options: &LoadOptions,
    loaded: &mut LoadedUpdates,
    dropped: &mut Dropped,
    peers: &mut Vec<((IpAddr, u32), u64)>,
) -> Result<(), String> {
    let message = match message {
        MrtMessage::Bgp4Mp(Bgp4MpEnum::Message(message)) => message,
        MrtMessage::Bgp4Mp(Bgp4MpEnum::StateChange(_)) => return Ok(()),
        MrtMessage::LegacyBgp(_) => {
            return Err("the deprecated BGP record type is not supported".into())
        }
        _ => return Err("a RIB record inside an update stream".into()),
    };
    let BgpMessage::Update(update) = &message.bgp_message else {
        return Ok(());
    };
    if message.is_local() {
        dropped.local += 1;
        return Ok(());
    }
    let key = (message.peer_ip, message.peer_asn.to_u32());
    let slot = match peers.iter().position(|(k, _)| *k == key) {
        Some(slot) => slot,
        None => {
            peers.push((key, 0));
            peers.len() - 1
        }
    };
    if !matches_selector(options.peer, key.0, key.1) {
        return Ok(());
    }
    // Check every prefix before emitting any change, so a bad record is
    // skipped whole.
    let mut changes = Vec::new();
    let unicast = |nlri: &&Nlri| nlri.safi == Safi::Unicast;
    let withdrawn = update.withdrawn_prefixes.iter().chain(
        update
            .attributes
            .get_unreachable_nlri()
            .filter(unicast)
            .into_iter()
            .flat_map(|nlri| nlri.prefixes.iter()),
    );
    for prefix in withdrawn {
        changes.push(
            match to_prefix(prefix, options.lenient, &mut loaded.stats)? {
                AnyPrefix::V4(p) => AnyChange::V4(Change::Withdraw(p)),
                AnyPrefix::V6(p) => AnyChange::V6(Change::Withdraw(p)),
            },
        );
    }
    for nlri in [
        update.attributes.get_reachable_nlri(),
        update.attributes.get_unreachable_nlri(),
    ]
    .into_iter()
    .flatten()
    {
        if nlri.safi != Safi::Unicast {
            dropped.non_unicast += nlri.prefixes.len() as u64;
        }
    }
    let announced = update.announced_prefixes.iter().chain(
        update
            .attributes
            .get_reachable_nlri()
            .filter(unicast)
            .into_iter()
            .flat_map(|nlri| nlri.prefixes.iter()),
    );
    for prefix in announced {
        let prefix = to_prefix(prefix, options.lenient, &mut loaded.stats)?;
        let v6 = matches!(prefix, AnyPrefix::V6(_));
        let label = label_of(
            &update.attributes,
            None,
            v6,
            options.label,
            &mut loaded.nexthops,
            dropped,
        );
        changes.push(match prefix {
            AnyPrefix::V4(p) => AnyChange::V4(Change::Announce(p, label)),
            AnyPrefix::V6(p) => AnyChange::V6(Change::Announce(p, label)),
        });
    }
    peers[slot].1 += changes.len() as u64;
    loaded.stats.routes += changes.len() as u64;
    loaded
        .updates
        .extend(changes.into_iter().map(|change| Update { time, change }));
    Ok(())
}

/// A route from a `BGP4MP_ENTRY` record.
struct Bgp4mpEntry {
    peer_ip: IpAddr,
    peer_asn: u32,
    next_hop: Option<IpAddr>,
    addr: IpAddr,
    plen: u8,
    attributes: Attributes,
}

/// Reads big-endian fields from a record body, with bounds checks.
struct Fields<'a> {
    bytes: &'a [u8],
}

impl<'a> Fields<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        if self.bytes.len() < n {
            return Err(format!(
                "the record ends inside the {what} ({} of {n} bytes)",
                self.bytes.len()
            ));
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    fn u8(&mut self, what: &str) -> Result<u8, String> {
        Ok(self.take(1, what)?[0])
    }

    fn u16(&mut self, what: &str) -> Result<u16, String> {
        let b = self.take(2, what)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    /// A prefix as RIB records and NLRI encode it: the length in bits, then
    /// as many bytes as it needs.
    fn prefix(&mut self, v6: bool) -> Result<(IpAddr, u8), String> {
        let plen = self.u8("prefix length")?;
        let max_plen = if v6 { 128 } else { 32 };
        if plen > max_plen {
            return Err(format!("prefix length {plen} is over {max_plen}"));
        }
        let bytes = self.take(usize::from(plen).div_ceil(8), "prefix")?;
        let addr = if v6 {
            let mut octets = [0u8; 16];
            octets[..bytes.len()].copy_from_slice(bytes);
            IpAddr::from(octets)
        } else {
            let mut octets = [0u8; 4];
            octets[..bytes.len()].copy_from_slice(bytes);
            IpAddr::from(octets)
        };
        Ok((addr, plen))
    }

    /// An address of the family of `afi` (1 IPv4, 2 IPv6).
    fn addr(&mut self, afi: u16, what: &str) -> Result<IpAddr, String> {
        match afi {
            1 => {
                let b = self.take(4, what)?;
                Ok(IpAddr::from([b[0], b[1], b[2], b[3]]))
            }
            2 => {
                let mut octets = [0u8; 16];
                octets.copy_from_slice(self.take(16, what)?);
                Ok(IpAddr::from(octets))
            }
            _ => Err(format!(
                "address family {afi} in the {what} is neither IPv4 (1) nor IPv6 (2)"
            )),
        }
    }
}

/// Decodes a `BGP4MP_ENTRY` body (2-byte ASes; the layout OpenBGPD writes
/// and libbgpdump reads): the BGP4MP peer header (peer AS, local AS,
/// interface, AFI, peer and local address), then view, status, time, AFI,
/// SAFI, next hop, prefix and path attributes. `Ok(None)`: not unicast.
/// bgpkit-parser does not read this subtype; its attribute parser does
/// the attributes.
fn parse_bgp4mp_entry(body: &[u8]) -> Result<Option<Bgp4mpEntry>, String> {
    use bgpkit_parser::models::{Afi, AsnLength};
    use bgpkit_parser::parser::bgp::attributes::parse_attributes;

    let mut fields = Fields { bytes: body };
    let peer_asn = u32::from(fields.u16("peer AS")?);
    fields.take(4, "local AS and interface index")?;
    let peer_afi = fields.u16("peer address family")?;
    let peer_ip = fields.addr(peer_afi, "peer address")?;
    fields.addr(peer_afi, "local address")?;
    fields.take(8, "view, status and time")?;
    let afi = fields.u16("entry address family")?;
    let safi = fields.u8("entry SAFI")?;
    let bgp_afi = match (afi, safi) {
        (1, 1) => Afi::Ipv4,
        (2, 1) => Afi::Ipv6,
        // VPN, multicast, ...: encoded otherwise, and not forwarding routes.
        _ => return Ok(None),
    };
    let next_hop_len = fields.u8("next-hop length")? as usize;
    let next_hop_bytes = fields.take(next_hop_len, "next hop")?;
    // IPv6 next hops may be a global address followed by a link-local one.
    let next_hop = match (afi, next_hop_len) {
        (1, 4) => Some(IpAddr::from([
            next_hop_bytes[0],
            next_hop_bytes[1],
            next_hop_bytes[2],
            next_hop_bytes[3],
        ])),
        (2, 16 | 32) => {
            let mut octets = [0u8; 16];
            octets.copy_from_slice(&next_hop_bytes[..16]);
            Some(IpAddr::from(octets))
        }
        _ => None,
    };
    let (addr, plen) = fields.prefix(afi == 2)?;
    let attributes_len = fields.u16("attribute length")? as usize;
    let attributes = fields.take(attributes_len, "attributes")?.to_vec();
    if !fields.bytes.is_empty() {
        return Err(format!(
            "{} bytes after the entry's attributes",
            fields.bytes.len()
        ));
    }
    let attributes = parse_attributes(
        attributes.into(),
        &AsnLength::Bits16,
        false,
        Some(bgp_afi),
        Some(Safi::Unicast),
        None,
    )
    .map_err(|e| {
        let text = e.to_string();
        format!(
            "cannot decode the attributes of this BGP4MP_ENTRY record: {}",
            text.strip_prefix("Error: ").unwrap_or(&text)
        )
    })?;
    Ok(Some(Bgp4mpEntry {
        peer_ip,
        peer_asn,
        next_hop,
        addr,
        plen,
        attributes,
    }))
}
