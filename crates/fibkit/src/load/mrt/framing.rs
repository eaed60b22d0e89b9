//! MRT record framing: the 12-byte common header (timestamp, type, subtype,
//! length) read and checked here, one record at a time, so that a
//! truncated or corrupt file is reported as `record N at byte B: what is
//! wrong` before any body is decoded; the whole-body decoder for the record
//! types bgpkit-parser reads; and a bounds-checked reader of the big-endian
//! fields of the bodies decoded here.

use std::io::ErrorKind;
use std::net::IpAddr;
use std::path::Path;

use bgpkit_parser::models::MrtMessage;
use bgpkit_parser::parser::mrt::mrt_record::parse_mrt_body;
use bgpkit_parser::ParserError;

use crate::load::{Input, LoadError, LoadOptions, LoadStats};

/// Bytes in the MRT common header (RFC 6396 section 2).
const HEADER_BYTES: usize = 12;

/// Longest record body accepted. The largest real records (a `RIB_IPV4_UNICAST`
/// entry with a few hundred peers) are well under 1 MiB; a larger length
/// field means a corrupt file, and trusting it could allocate gigabytes.
/// bgpkit-parser uses the same bound.
const MAX_BODY_BYTES: u32 = 16 << 20;

/// MRT record types (RFC 6396 section 4, IANA registry).
pub(super) mod kind {
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
pub(super) const BGP4MP_ENTRY: u16 = 2;

/// `BGP4MP_SNAPSHOT`: the name of a file holding a dump, from the same draft.
pub(super) const BGP4MP_SNAPSHOT: u16 = 3;

/// One framed record, body not yet decoded.
pub(super) struct RawRecord {
    /// Seconds since the Unix epoch.
    pub(super) time: u32,
    pub(super) kind: u16,
    pub(super) subtype: u16,
    pub(super) body: Vec<u8>,
}

/// Reads records one by one, checking the framing.
pub(super) struct Records {
    pub(super) input: Input,
    /// Number of the last record returned, from 1.
    pub(super) number: u64,
    /// Byte offset (in the decompressed stream) of the last record returned.
    pub(super) offset: u64,
    /// Byte offset of the next record.
    next_offset: u64,
    /// `TABLE_DUMP` records whose length field was four bytes short.
    pub(super) short_lengths: u64,
}

impl Records {
    pub(super) fn new(input: Input) -> Self {
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
    pub(super) fn next(&mut self) -> Result<Option<RawRecord>, String> {
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
    pub(super) fn error(&self, what: &str) -> LoadError {
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

pub(super) fn kind_name(kind: u16) -> String {
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
pub(super) fn message_body(record: &RawRecord) -> Result<&[u8], String> {
    if record.kind == kind::BGP4MP_ET {
        record
            .body
            .get(4..)
            .ok_or_else(|| "a BGP4MP_ET record shorter than its 4-byte microseconds".into())
    } else {
        Ok(&record.body)
    }
}

pub(super) fn is_bgp4mp(kind: u16) -> bool {
    matches!(kind, kind::BGP4MP | kind::BGP4MP_ET)
}

/// Decodes a record body (taking it out of `record`) with bgpkit-parser;
/// `Err` is a bad record (the framing is intact).
pub(super) fn decode(record: &mut RawRecord) -> Result<MrtMessage, String> {
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
pub(super) fn is_rib_record(record: &RawRecord) -> bool {
    matches!(record.kind, kind::TABLE_DUMP | kind::TABLE_DUMP_V2)
        || (is_bgp4mp(record.kind) && record.subtype == BGP4MP_ENTRY)
}

/// What to do after a framing error: stop with it, or (skip_bad) count and stop.
pub(super) fn framing_failure(
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

/// Reads big-endian fields from a record body, with bounds checks.
pub(super) struct Fields<'a> {
    pub(super) bytes: &'a [u8],
}

impl<'a> Fields<'a> {
    pub(super) fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
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

    pub(super) fn u8(&mut self, what: &str) -> Result<u8, String> {
        Ok(self.take(1, what)?[0])
    }

    pub(super) fn u16(&mut self, what: &str) -> Result<u16, String> {
        let b = self.take(2, what)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    /// A prefix as RIB records and NLRI encode it: the length in bits, then
    /// as many bytes as it needs.
    pub(super) fn prefix(&mut self, v6: bool) -> Result<(IpAddr, u8), String> {
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
    pub(super) fn addr(&mut self, afi: u16, what: &str) -> Result<IpAddr, String> {
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
