//! The build state of a `bloom` engine, and the patches after changes
//! (module header of `bloom`, "Updates"); the build itself, with the
//! updater's struct, is in `build`.

use std::collections::HashMap;

use super::build::{index_of, marker_mask, BloomUpdater, Marker, NOT_A_LENGTH};
use super::exact::{self, MAX_LABELS};
use super::filter::{CountingFilter, KeyHash, BLOCK_BITS};
use super::tree::{self};
use super::{Bloom, BloomConfig, BloomStats, FilterSize, Search};
use crate::addr::Addr;
use crate::engine::{BuildError, Updater};
use crate::labels::LabelIndex;
use crate::prefix::Prefix;
use crate::rib::Rib;
use crate::storage::Plain;

impl<A: Addr + Plain> BloomUpdater<A> {
    /// The lengths at which prefixes of length `plen` (in the tree) leave
    /// markers.
    fn turns(&self, plen: u8) -> &[u8] {
        &self.right_turns[self.index_of[plen as usize] as usize]
    }

    fn rebuild(&self) -> BuildError {
        BuildError::UpdateUnsupported {
            engine: self.config.to_string(),
        }
    }

    /// The BMP code and label index of the marker `key` (not a prefix): its
    /// longest covering prefix, or code 0 and the default route's slot.
    fn best_match(&mut self, rib: &Rib<A>, key: Prefix<A>) -> Result<(u8, u32), BuildError> {
        match rib.longest_match_within(key.addr(), key.plen()) {
            Some((bmp, label)) if bmp.plen() > 0 => Ok((
                self.index_of[bmp.plen() as usize],
                self.labels.index(Some(label))?,
            )),
            _ => Ok((0, 0)),
        }
    }

    /// Brings `key`'s filter bits and exact-table entry in line with `rib`
    /// and the markers' reference counts.
    fn sync_key(
        &mut self,
        snapshot: &mut Bloom<A>,
        rib: &Rib<A>,
        key: Prefix<A>,
    ) -> Result<(), BuildError> {
        let (addr, plen) = (key.addr(), key.plen());
        let hash = KeyHash::of(addr, plen);
        let old_value = exact::get(&snapshot.table, addr, plen, hash);
        let marker = self.markers.get(&key).copied();
        let old_bits = match (old_value, marker) {
            (0, _) => 0,
            (value, Some(marker)) if exact::is_marker(value) => marker_mask(marker.code),
            (value, None) if exact::is_marker(value) => return Err(self.rebuild()),
            _ => self.all_bits(),
        };
        let refs = marker.map_or(0, |marker| marker.refs);
        let (new_value, new_bits) = if let Some(label) = rib.get(key) {
            let label_index = self.labels.index(Some(label))?;
            (exact::pack(plen, false, label_index), self.all_bits())
        } else if refs > 0 {
            let (code, label_index) = self.best_match(rib, key)?;
            if let Some(marker) = self.markers.get_mut(&key) {
                marker.code = code;
            }
            (exact::pack(plen, true, label_index), marker_mask(code))
        } else {
            (0, 0)
        };
        if marker.is_some() && refs == 0 {
            self.markers.remove(&key);
        }
        self.change_bits(&mut snapshot.filter, hash, old_bits, new_bits);
        if new_value == 0 {
            if old_value != 0 {
                exact::remove(&mut snapshot.table, addr, plen);
                self.keys -= 1;
            }
        } else if new_value != old_value {
            if old_value == 0 {
                if !exact::fits(self.keys + 1, snapshot.table.len()) {
                    let slots = exact::capacity_for(self.keys + 1).max(2 * snapshot.table.len());
                    if slots > u32::MAX as usize {
                        return Err(
                            self.limit(format!("more than 2^32 exact-table slots ({slots})"))
                        );
                    }
                    snapshot.table = exact::rehash(&snapshot.table, slots);
                }
                self.keys += 1;
            }
            exact::insert(&mut snapshot.table, addr, new_value);
        }
        Ok(())
    }

    /// Adds the length `plen` to a linear search (no tree to rebuild).
    fn add_length(&mut self, snapshot: &mut Bloom<A>, plen: u8) {
        let at = snapshot.lengths.partition_point(|&l| l < plen);
        snapshot.lengths.insert(at, plen);
        self.index_of = index_of::<A>(&snapshot.lengths);
        self.right_turns.push(Vec::new());
    }
}

impl<A: Addr + Plain> Updater<A> for BloomUpdater<A> {
    type Config = BloomConfig;
    type Snapshot = Bloom<A>;
    type Stats = BloomStats;

    fn build(config: &BloomConfig, rib: &Rib<A>) -> Result<(Self, Bloom<A>), BuildError> {
        let mut updater = BloomUpdater {
            config: Box::new(config.clone()),
            k: 0,
            index_of: Vec::new(),
            right_turns: Vec::new(),
            markers: HashMap::new(),
            labels: LabelIndex::new(config, MAX_LABELS),
            counts: CountingFilter::new(0),
            keys: 0,
            set_bits: 0,
            built_set_bits: 0,
        };
        let mut snapshot: Bloom<A> = Bloom {
            search: config.search,
            k: 0,
            bmp_bits: 0,
            filter: Vec::new(),
            lengths: Vec::new(),
            tree: Vec::new(),
            table: Vec::new(),
            results: Vec::new(),
        };
        updater.fill(&mut snapshot, rib)?;
        Ok((updater, snapshot))
    }

    fn config(&self) -> BloomConfig {
        (*self.config).clone()
    }

    fn patches(&self) -> bool {
        true
    }

    fn update(
        &mut self,
        snapshot: &mut Bloom<A>,
        rib: &Rib<A>,
        changed: &[Prefix<A>],
    ) -> Result<(), BuildError> {
        // A filter sized by its fill that filled up half as much again:
        // a rebuild sizes it afresh.
        if matches!(self.config.size, FilterSize::Fill(_))
            && self.set_bits * 2 > self.built_set_bits * 3
        {
            return self.fill(snapshot, rib);
        }
        for &prefix in changed {
            let plen = prefix.plen();
            if plen > 0 && self.index_of[plen as usize] == NOT_A_LENGTH && rib.get(prefix).is_some()
            {
                match self.config.search {
                    // The tree, and with it every marker, changes shape:
                    // nothing is changed yet, so rebuild in place.
                    Search::Guided => return self.fill(snapshot, rib),
                    Search::Linear => self.add_length(snapshot, plen),
                }
            }
        }
        // Beyond this many keys to bring in line, a rebuild is cheaper.
        let budget = (self.keys / 2).max(64);
        let guided = self.config.search == Search::Guided;
        let mut dirty = Vec::new();
        let mut came_or_went = Vec::new();
        for &prefix in changed {
            let plen = prefix.plen();
            if plen == 0 || self.index_of[plen as usize] == NOT_A_LENGTH {
                continue; // the default route is results[0]; absent lengths hold nothing
            }
            let hash = KeyHash::of(prefix.addr(), plen);
            let value = exact::get(&snapshot.table, prefix.addr(), plen, hash);
            let was = value != 0 && !exact::is_marker(value);
            let now = rib.get(prefix).is_some();
            dirty.push(prefix);
            if !guided {
                continue;
            }
            if was != now {
                came_or_went.push((prefix, now));
            }
            // The markers under the prefix may have it as their BMP.
            for (inner, _) in rib.prefixes_within(prefix) {
                for &turn in self.turns(inner.plen()) {
                    if turn > plen {
                        dirty.push(Prefix::new_masked(inner.addr(), turn));
                    }
                }
                if dirty.len() > budget {
                    // Nothing is changed yet (the lists are local).
                    return self.fill(snapshot, rib);
                }
            }
        }
        for (prefix, now) in came_or_went {
            for turn in self.turns(prefix.plen()).to_vec() {
                let marker = Prefix::new_masked(prefix.addr(), turn);
                dirty.push(marker);
                if now {
                    self.markers
                        .entry(marker)
                        .or_insert(Marker { refs: 0, code: 0 })
                        .refs += 1;
                } else {
                    match self.markers.get_mut(&marker) {
                        Some(entry) if entry.refs > 0 => entry.refs -= 1,
                        _ => return Err(self.rebuild()),
                    }
                }
            }
        }
        dirty.sort_unstable();
        dirty.dedup();
        for key in dirty {
            self.sync_key(snapshot, rib, key)?;
        }
        self.labels.set_default(rib.default_route());
        self.labels.sync(&mut snapshot.results);
        Ok(())
    }

    /// \[Yeg18\]'s per-lookup counts: filter bits, hashes, exact-table
    /// lookups and fallbacks.
    fn lookup_work(snapshot: &Bloom<A>, addrs: &[A]) -> Option<Vec<(String, String)>> {
        Some(snapshot.count_lookups(addrs).rows())
    }

    fn stats(&self, snapshot: &Bloom<A>) -> BloomStats {
        let (prefixes, markers) = exact::count(&snapshot.table);
        let filter_bits = (snapshot.filter.len() * BLOCK_BITS as usize) as u64;
        let set_bits: u64 = snapshot
            .filter
            .iter()
            .map(|block| block.count_ones() as u64)
            .sum();
        BloomStats {
            search: snapshot.search,
            k: snapshot.k,
            bmp_bits: snapshot.bmp_bits,
            lengths: snapshot.lengths.len() - 1,
            tree_depth: tree::gap_depths(&snapshot.tree)
                .into_iter()
                .max()
                .unwrap_or(0),
            filter_bits,
            fill_percent: 100.0 * set_bits as f64 / filter_bits as f64,
            prefixes,
            markers,
            exact_slots: snapshot.table.len(),
            exact_bytes: snapshot.table.len() * std::mem::size_of::<exact::ExactSlot<A>>(),
            counting_filter_bytes: self.counts.memory_bytes(),
            labels: self.labels.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EngineConfig;

    /// A new length under guided search and a change covering most keys
    /// rebuild in place: the handle sees a patch, and the engine answers
    /// like the reference.
    #[test]
    fn large_changes_rebuild_in_place() {
        let mut rib = Rib::new();
        let mut addr = 0x0a00_0000u32;
        for i in 0..4000u32 {
            addr = addr.wrapping_mul(0x9e37_79b9).wrapping_add(i);
            let plen = [8, 12, 16, 22, 24][i as usize % 5];
            rib.insert(Prefix::new_masked(addr >> 1, plen), i % 40);
        }
        let config = BloomConfig::parse("bloom").unwrap();
        let mut fib = crate::LocalFib::<u32, BloomUpdater<u32>>::with_config(config, rib).unwrap();
        let p = |text: &str| text.parse::<Prefix<u32>>().unwrap();
        let changes = [
            // A length the table does not have: the tree changes shape.
            crate::Change::Announce(p("10.1.16.0/20"), 1_000),
            // Every key lies under it: past the patch's budget.
            crate::Change::Announce(p("0.0.0.0/1"), 1_001),
            crate::Change::Withdraw(p("0.0.0.0/1")),
        ];
        for (i, change) in changes.into_iter().enumerate() {
            let summary = fib.apply(&[change]).unwrap();
            assert!(summary.rebuilt.is_none(), "{change:?}");
            let report = crate::verify::verify(fib.snapshot(), fib.rib(), 20_000, i as u64);
            assert_eq!(report.failed, 0, "{change:?}: {:?}", report.mismatches);
            if i == 0 {
                assert_eq!(fib.stats().lengths, 6, "the /20 joined the tree");
            }
        }
    }
}
