//! MRT (RFC 6396) RIB dumps and BGP4MP update streams, through `bgpkit-parser`.
//!
//! The record framing (the 12-byte common header: timestamp, type, subtype,
//! length) is read by fibkit, not by the parser, so that a truncated or corrupt
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
//!
//! One module per job: `framing` (the common header, record by record, and
//! the whole-body decoder), `attributes` (prefixes, path attributes, labels,
//! `BGP4MP_ENTRY` bodies), `rib` (RIB dumps) and
//! `updates` (update streams); the choice of peer and the peers' counts
//! are `load::peers`, shared with bgpdump's text of these files.

mod attributes;
mod framing;
mod rib;
mod updates;

use super::peers::matches_selector;

pub use rib::read_rib;
pub use updates::read_updates;

/// How often (in records) the progress callback is called.
const PROGRESS_EVERY_RECORDS: u64 = 1 << 12;
