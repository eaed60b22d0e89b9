//! RIB dumps (`TABLE_DUMP`, `TABLE_DUMP_V2`, `BGP4MP_ENTRY`): every peer's
//! routes counted while the file is read, and one peer's routes chosen as
//! the table at the end (see the module above for the rules).

use std::net::IpAddr;
use std::path::Path;

use bgpkit_parser::models::{Attributes, MrtMessage, TableDumpMessage, TableDumpV2Message};

use super::attributes::{
    decode_rib_attributes, label_of, parse_bgp4mp_entry, to_prefix, to_prefix_parts, Dropped,
};
use super::framing::{
    decode, framing_failure, is_bgp4mp, is_rib_record, kind, kind_name, message_body, Fields,
    RawRecord, Records, BGP4MP_ENTRY, BGP4MP_SNAPSHOT,
};
use super::PROGRESS_EVERY_RECORDS;
use crate::load::peers::Peers;
use crate::load::text::AnyPrefix;
use crate::load::{Input, LoadError, LoadOptions, LoadStats, LoadedTable, NextHopTable};
use crate::prefix::Label;

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

/// Routes of every peer while a RIB dump is read.
struct RibReader<'o> {
    options: &'o LoadOptions<'o>,
    peers: Peers,
    /// `TABLE_DUMP_V2` peer index -> position in `peers`.
    peer_table: Option<Vec<u32>>,
    /// Next hops of all peers; the chosen peer's are re-interned at the end.
    scratch_hops: NextHopTable,
    dropped: Dropped,
    stats: LoadStats,
    /// Route records seen (to tell a RIB dump from an update stream).
    rib_records: u64,
}

impl<'o> RibReader<'o> {
    /// The label of `peer`'s route to a prefix of the family `v6`, or `None`
    /// when that peer's routes are not kept (its attributes stay undecoded).
    fn label(&mut self, peer: u32, v6: bool, route: Route) -> Result<Option<Label>, String> {
        if !self.peers.keeps(peer) {
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

    /// `TABLE_DUMP` records: one route each (a batch holds several; there
    /// is no ADD-PATH, so a peer's routes in one batch are all kept).
    fn table_dump(&mut self, messages: &[TableDumpMessage]) -> Result<(), String> {
        let mut routes = Vec::with_capacity(messages.len());
        for message in messages {
            let prefix = to_prefix(&message.prefix, self.options.lenient, &mut self.stats)?;
            let peer = self.peers.id(message.peer_ip, message.peer_asn.to_u32());
            let route = Route::Decoded {
                attributes: &message.attributes,
                next_hop: None,
            };
            let label = self.label(peer, matches!(prefix, AnyPrefix::V6(_)), route)?;
            routes.push((peer, prefix, label));
        }
        for (peer, prefix, label) in routes {
            self.peers.commit(peer, prefix, label);
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
            let Some(entry) = self.peers.list.get_mut(peer as usize) else {
                continue;
            };
            // Record numbers count from 1, so 0 is "none yet".
            if entry.last_seen == record_no {
                extra_paths += 1;
                continue;
            }
            entry.last_seen = record_no;
            let route = Route::Raw {
                attributes,
                add_path,
            };
            routes.push((peer, self.label(peer, v6, route)?));
        }
        self.dropped.extra_paths += extra_paths;
        for (peer, label) in routes {
            self.peers.commit(peer, prefix, label);
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
        let peer = self.peers.id(entry.peer_ip, entry.peer_asn);
        let route = Route::Decoded {
            attributes: &entry.attributes,
            next_hop: entry.next_hop,
        };
        let label = self.label(peer, matches!(prefix, AnyPrefix::V6(_)), route)?;
        self.peers.commit(peer, prefix, label);
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
                    ids[index as usize] = self.peers.id(peer.peer_ip, peer.peer_asn.to_u32());
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
    fn finish(self, path: &Path, notes: Vec<String>) -> Result<LoadedTable, LoadError> {
        let mut table = self.peers.finish(
            path,
            "MRT",
            self.options.label,
            &self.scratch_hops,
            self.stats,
            notes,
        )?;
        self.dropped.notes(&mut table.notes);
        Ok(table)
    }
}

/// Reads an MRT RIB dump (TABLE_DUMP, TABLE_DUMP_V2, with or without ADD-PATH).
pub fn read_rib(input: Input, options: &LoadOptions) -> Result<LoadedTable, LoadError> {
    let progress = options.progress;
    let mut records = Records::new(input);
    let mut reader = RibReader {
        options,
        peers: Peers::new(options.peer),
        peer_table: None,
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
