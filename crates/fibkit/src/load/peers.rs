//! The peers of a collector's RIB dump (MRT, or bgpdump's text of one):
//! every peer's routes counted while the dump is read, and one peer's
//! routes made the table at the end.
//!
//! A collector dump holds the routes of many peers; one peer's routes
//! become the table: [`LoadOptions::peer`](super::LoadOptions::peer) (by
//! address, or by AS: the first peer of that AS), by default the peer with
//! the most routes (ties: the first in the file). Until the end of the
//! dump it is not known which peer that is, so without a selector every
//! peer's routes are kept while reading, in 8 bytes per route (prefix index
//! and label; each prefix is stored once, since dumps list a prefix's
//! routes together).

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::Path;

use super::text::AnyPrefix;
use super::{LabelSource, LoadError, LoadStats, LoadedTable, NextHopTable, PeerSelector};
use crate::prefix::Label;

/// Peers listed in an error message before "and N more".
const PEERS_LISTED: usize = 20;

/// Whether a peer is one `selector` picks (all peers without one).
pub(crate) fn matches_selector(selector: Option<PeerSelector>, addr: IpAddr, asn: u32) -> bool {
    match selector {
        None => true,
        Some(PeerSelector::Addr(a)) => a == addr,
        Some(PeerSelector::Asn(n)) => n == asn,
    }
}

/// A collector peer seen in a RIB dump.
pub(crate) struct Peer {
    pub(crate) addr: IpAddr,
    pub(crate) asn: u32,
    /// Whether its routes are kept (it may be the one selected).
    pub(crate) keep: bool,
    /// `(prefix index, label)`; labels are scratch next-hop labels or ASNs.
    routes: Vec<(u32, Label)>,
    /// Routes counted (also for peers whose routes are not kept).
    count: u64,
    /// The last record (MRT) or prefix (text) this peer had a route in,
    /// plus one, to spot ADD-PATH's further paths.
    pub(crate) last_seen: u64,
}

/// Every peer of a RIB dump and their routes.
pub(crate) struct Peers {
    selector: Option<PeerSelector>,
    pub(crate) list: Vec<Peer>,
    ids: HashMap<(IpAddr, u32), u32>,
    /// Every prefix once (consecutive repeats are merged: dumps are sorted).
    prefixes: Vec<AnyPrefix>,
}

impl Peers {
    /// No peers yet; `selector` says whose routes are kept.
    pub(crate) fn new(selector: Option<PeerSelector>) -> Self {
        Peers {
            selector,
            list: Vec::new(),
            ids: HashMap::new(),
            prefixes: Vec::new(),
        }
    }

    /// The id of the peer `addr` of AS `asn`, added if new.
    pub(crate) fn id(&mut self, addr: IpAddr, asn: u32) -> u32 {
        let selector = self.selector;
        let list = &mut self.list;
        *self.ids.entry((addr, asn)).or_insert_with(|| {
            list.push(Peer {
                addr,
                asn,
                keep: matches_selector(selector, addr, asn),
                routes: Vec::new(),
                count: 0,
                last_seen: 0,
            });
            (list.len() - 1) as u32
        })
    }

    /// Whether `peer`'s routes are kept (their labels are worth working out).
    pub(crate) fn keeps(&self, peer: u32) -> bool {
        self.list.get(peer as usize).is_some_and(|p| p.keep)
    }

    /// The index of `prefix`, the last one read or a new one.
    pub(crate) fn prefix_index(&mut self, prefix: AnyPrefix) -> u32 {
        if self.prefixes.last() != Some(&prefix) {
            self.prefixes.push(prefix);
        }
        (self.prefixes.len() - 1) as u32
    }

    /// Counts `peer`'s route, and keeps it if it has a label. Called only
    /// once a record has been read whole, so a bad record adds nothing.
    pub(crate) fn commit(&mut self, peer: u32, prefix: AnyPrefix, label: Option<Label>) {
        let index = label.map(|_| self.prefix_index(prefix));
        if let Some(entry) = self.list.get_mut(peer as usize) {
            entry.count += 1;
            if let (Some(index), Some(label)) = (index, label) {
                entry.routes.push((index, label));
            }
        }
    }

    /// Picks the peer and builds the table: next-hop labels of
    /// `scratch_hops` are interned anew in the table's own next-hop table,
    /// so its labels count the chosen peer's next hops only. `source`
    /// names the input in the note and the error (`MRT`, `bgpdump`).
    pub(crate) fn finish(
        self,
        path: &Path,
        source: &str,
        label_source: LabelSource,
        scratch_hops: &NextHopTable,
        stats: LoadStats,
        notes: Vec<String>,
    ) -> Result<LoadedTable, LoadError> {
        let chosen = match self.selector {
            Some(selector) => self
                .list
                .iter()
                .position(|p| matches_selector(Some(selector), p.addr, p.asn)),
            // The first of the peers with most routes: max_by_key keeps the last.
            None => self
                .list
                .iter()
                .enumerate()
                .rev()
                .max_by_key(|(_, p)| p.count)
                .map(|(i, _)| i),
        };
        let Some(chosen) = chosen else {
            let wanted = match self.selector {
                Some(PeerSelector::Addr(addr)) => format!("no peer {addr}"),
                Some(PeerSelector::Asn(asn)) => format!("no peer of AS{asn}"),
                None => "no peer".to_string(),
            };
            return Err(LoadError::file(
                path,
                format!("{wanted} in this {source} RIB dump; {}", self.listed()),
            ));
        };
        let mut table = LoadedTable {
            stats,
            notes,
            ..LoadedTable::default()
        };
        let peer = &self.list[chosen];
        for &(index, label) in &peer.routes {
            let label = match label_source {
                LabelSource::OriginAs => label,
                LabelSource::NextHop => match scratch_hops.addr(label) {
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
                "{source}: kept the routes of peer {} (AS{}): {} prefixes of {} peers; choose another with --peer",
                peer.addr,
                peer.asn,
                table.v4.len() + table.v6.len(),
                self.list.len()
            ),
        );
        Ok(table)
    }

    /// `its N peers: 192.0.2.1 (AS64500, 123 routes), ...`, most routes first.
    fn listed(&self) -> String {
        if self.list.is_empty() {
            return "the dump names no peers".into();
        }
        let mut order: Vec<&Peer> = self.list.iter().collect();
        order.sort_by_key(|p| std::cmp::Reverse(p.count));
        let mut text = format!("its {} peers: ", self.list.len());
        let listed: Vec<String> = order
            .iter()
            .take(PEERS_LISTED)
            .map(|p| format!("{} (AS{}, {} routes)", p.addr, p.asn, p.count))
            .collect();
        text.push_str(&listed.join(", "));
        if self.list.len() > PEERS_LISTED {
            text.push_str(&format!(", and {} more", self.list.len() - PEERS_LISTED));
        }
        text
    }
}

/// The peers of an update stream, in the order first seen, and how many
/// changes each gave.
#[derive(Default)]
pub(crate) struct StreamPeers {
    seen: Vec<((IpAddr, u32), u64)>,
    slots: HashMap<(IpAddr, u32), usize>,
}

impl StreamPeers {
    /// The slot of the peer `addr` of AS `asn`, added if new.
    pub(crate) fn slot(&mut self, addr: IpAddr, asn: u32) -> usize {
        let seen = &mut self.seen;
        *self.slots.entry((addr, asn)).or_insert_with(|| {
            seen.push(((addr, asn), 0));
            seen.len() - 1
        })
    }

    /// Counts `changes` more changes of the peer in `slot`.
    pub(crate) fn count(&mut self, slot: usize, changes: u64) {
        self.seen[slot].1 += changes;
    }

    /// The error when `selector` picked no peer's changes; otherwise the
    /// note of how many changes came from how many peers, put first in
    /// `loaded`'s notes. `source` names the input (`MRT`, `bgpdump`).
    pub(crate) fn finish(
        &self,
        path: &Path,
        source: &str,
        selector: Option<PeerSelector>,
        loaded: &mut super::LoadedUpdates,
    ) -> Result<(), LoadError> {
        let taken = self.seen.iter().filter(|(_, n)| *n > 0).count();
        if let (Some(selector), 0) = (selector, taken) {
            let wanted = match selector {
                PeerSelector::Addr(addr) => format!("no updates from peer {addr}"),
                PeerSelector::Asn(asn) => format!("no updates from a peer of AS{asn}"),
            };
            let list: Vec<String> = self
                .seen
                .iter()
                .take(PEERS_LISTED)
                .map(|((addr, asn), _)| format!("{addr} (AS{asn})"))
                .collect();
            return Err(LoadError::file(
                path,
                format!(
                    "{wanted} in this {source} update stream; peers seen: {}",
                    if list.is_empty() {
                        "none".to_string()
                    } else {
                        list.join(", ")
                    }
                ),
            ));
        }
        loaded.notes.insert(
            0,
            format!(
                "{source}: {} changes from {taken} of {} peers{}",
                loaded.updates.len(),
                self.seen.len(),
                if selector.is_none() {
                    " (all peers; choose one with --peer)"
                } else {
                    ""
                }
            ),
        );
        Ok(())
    }
}
