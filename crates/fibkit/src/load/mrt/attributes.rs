//! Route decoding: prefixes checked for host bits, path attributes (by
//! bgpkit-parser's attribute parser), the label a route gets (next hop or
//! origin AS), and the `BGP4MP_ENTRY` records bgpkit-parser does not read.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use bgpkit_parser::models::{AsPathSegment, Attributes, NetworkPrefix, Safi};

use super::framing::Fields;
use crate::load::text::AnyPrefix;
use crate::load::{LabelSource, LoadStats, NextHopTable};
use crate::prefix::{Label, Prefix};

/// A prefix from the parser, checked for host bits.
pub(super) fn to_prefix(
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
pub(super) fn to_prefix_parts(
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
pub(super) struct Dropped {
    /// ADD-PATH paths after the first of a peer for one prefix.
    pub(super) extra_paths: u64,
    /// Records or prefixes of other address families or SAFIs.
    pub(super) non_unicast: u64,
    /// Routes without a next hop (labelled with the unspecified address).
    pub(super) no_next_hop: u64,
    /// Messages sent by the collector itself.
    pub(super) local: u64,
}

impl Dropped {
    pub(super) fn notes(&self, notes: &mut Vec<String>) {
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
pub(super) fn label_of(
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

/// Decodes a `TABLE_DUMP_V2` RIB entry's attributes as bgpkit-parser's RIB
/// decoder does: 4-byte ASes, and an `MP_REACH_NLRI` abbreviated to its next
/// hop (RFC 6396 section 4.3.4). The parser wants the entry's prefix only
/// to fill in that attribute's NLRI, which is not used here: any prefix of
/// the family will do.
pub(super) fn decode_rib_attributes(
    bytes: &[u8],
    v6: bool,
    add_path: bool,
) -> Result<Attributes, String> {
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

/// A route from a `BGP4MP_ENTRY` record.
pub(super) struct Bgp4mpEntry {
    pub(super) peer_ip: IpAddr,
    pub(super) peer_asn: u32,
    pub(super) next_hop: Option<IpAddr>,
    pub(super) addr: IpAddr,
    pub(super) plen: u8,
    pub(super) attributes: Attributes,
}

/// Decodes a `BGP4MP_ENTRY` body (2-byte ASes; the layout OpenBGPD writes
/// and libbgpdump reads): the BGP4MP peer header (peer AS, local AS,
/// interface, AFI, peer and local address), then view, status, time, AFI,
/// SAFI, next hop, prefix and path attributes. `Ok(None)`: not unicast.
/// bgpkit-parser does not read this subtype; its attribute parser does
/// the attributes.
pub(super) fn parse_bgp4mp_entry(body: &[u8]) -> Result<Option<Bgp4mpEntry>, String> {
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
