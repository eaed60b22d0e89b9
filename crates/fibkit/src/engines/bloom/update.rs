//! The build state of a `bloom` engine, and the patches after changes
//! (module header of `bloom`, "Updates"); the build itself is in `build`.

use std::collections::HashMap;

use super::build::index_of;
use super::exact::{self, MAX_LABELS};
use super::filter::{CountingFilter, FilterBlock, KeyHash, BLOCK_BITS};
use super::tree::{self};
use super::{Bloom, BloomConfig, BloomStats, FilterSize, Search};
use crate::addr::Addr;
use crate::engine::{BuildError, Updater};
use crate::labels::LabelIndex;
use crate::prefix::Prefix;
use crate::rib::Rib;
use crate::storage::Plain;

/// `index_of` entry of a length the table does not have.
pub(super) const NOT_A_LENGTH: u8 = u8::MAX;

/// A marker's build state: how many prefixes leave it (it goes when the
/// last one does), and the BMP code it carries in the filter while it is
/// not itself a prefix.
#[derive(Clone, Copy, Debug)]
pub(super) struct Marker {
    pub(super) refs: u32,
    pub(super) code: u8,
}

/// The build state of a `bloom` engine: label indices, the markers'
/// reference counts and codes, and the counting filter.
#[derive(Clone, Debug)]
pub struct BloomUpdater<A: Addr + Plain> {
    /// Boxed: the registry's engine enums hold updaters by value, and the
    /// config (a trace path) is what made this one the largest.
    pub(super) config: Box<BloomConfig>,
    pub(super) k: u32,
    /// Index of each prefix length in the snapshot's `lengths` (from 1), or
    /// [`NOT_A_LENGTH`]; entry 0 (the default route) is 0.
    pub(super) index_of: Vec<u8>,
    /// Per length index: the lengths where a prefix of that length goes
    /// right in the tree, that is where it leaves markers (guided only).
    pub(super) right_turns: Vec<Vec<u8>>,
    pub(super) markers: HashMap<Prefix<A>, Marker>,
    pub(super) labels: LabelIndex,
    pub(super) counts: CountingFilter,
    /// Keys in the exact table.
    pub(super) keys: usize,
    /// Filter bits set now and right after the build.
    pub(super) set_bits: u64,
    pub(super) built_set_bits: u64,
}

/// Bits of a BMP code for `lengths` tree lengths: codes 0 (the default
/// route) to `lengths`, and all ones reserved for "a prefix".
pub(super) fn code_bits(lengths: usize) -> u32 {
    (lengths as u32 + 2).next_power_of_two().trailing_zeros()
}

/// The key bits (a mask over hash indices `0..k`) of a marker with BMP
/// code `code`: the bit that steers and the code's ones.
pub(super) fn marker_mask(code: u8) -> u32 {
    1 | (code as u32) << 1
}

impl<A: Addr + Plain> BloomUpdater<A> {
    /// All `k` key bits: what a prefix sets.
    pub(super) fn all_bits(&self) -> u32 {
        u32::MAX >> (32 - self.k)
    }

    /// The lengths at which prefixes of length `plen` (in the tree) leave
    /// markers.
    fn turns(&self, plen: u8) -> &[u8] {
        &self.right_turns[self.index_of[plen as usize] as usize]
    }

    pub(super) fn limit(&self, why: String) -> BuildError {
        BuildError::Limit {
            engine: self.config.to_string(),
            why,
        }
    }

    fn rebuild(&self) -> BuildError {
        BuildError::UpdateUnsupported {
            engine: self.config.to_string(),
        }
    }

    /// Sets the key bits in `new` and not in `old`, and clears those in
    /// `old` and not in `new` that no other key sets.
    pub(super) fn change_bits(
        &mut self,
        filter: &mut [FilterBlock],
        hash: KeyHash,
        old: u32,
        new: u32,
    ) {
        let block = hash.block(filter.len());
        for i in 0..self.k {
            let bit = 1 << i;
            let position = hash.position(i);
            let counter = block * BLOCK_BITS as usize + position as usize;
            if new & bit != 0 && old & bit == 0 {
                if self.counts.add(counter) {
                    filter[block].set_bit(position, true);
                    self.set_bits += 1;
                }
            } else if old & bit != 0 && new & bit == 0 && self.counts.remove(counter) {
                filter[block].set_bit(position, false);
                self.set_bits -= 1;
            }
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

    #[test]
    fn code_bits_cover_every_length_and_the_prefix_code() {
        assert_eq!(code_bits(0), 1);
        assert_eq!(code_bits(1), 2);
        assert_eq!(code_bits(25), 5); // IPv4, as the paper's n = 5
        assert_eq!(code_bits(29), 5);
        assert_eq!(code_bits(30), 5);
        assert_eq!(code_bits(31), 6);
        assert_eq!(code_bits(47), 6);
        assert_eq!(code_bits(128), 8);
        for lengths in 0..=128usize {
            let n = code_bits(lengths);
            assert!(lengths < (1 << n) - 1, "{lengths} lengths, {n} bits");
        }
    }
}
