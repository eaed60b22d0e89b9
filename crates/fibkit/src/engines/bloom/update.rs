//! The build state of a `bloom` engine: builds the snapshot from the
//! reference table and patches it after changes (module header of
//! `bloom`, "Updates").

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::path::Path;

use super::exact::{self, MAX_LABELS};
use super::filter::{CountingFilter, FilterBlock, KeyHash, BLOCK_BITS};
use super::tree::{self, TreeNode};
use super::{
    default_k, Bloom, BloomConfig, BloomStats, FilterSize, Search, TreeShape, MAX_FILTER_BITS,
};
use crate::addr::Addr;
use crate::engine::{BuildError, Updater};
use crate::labels::LabelIndex;
use crate::prefix::Prefix;
use crate::rib::Rib;
use crate::storage::Plain;

/// `index_of` entry of a length the table does not have.
const NOT_A_LENGTH: u8 = u8::MAX;

/// A marker's build state: how many prefixes leave it (it goes when the
/// last one does), and the BMP code it carries in the filter while it is
/// not itself a prefix.
#[derive(Clone, Copy, Debug)]
struct Marker {
    refs: u32,
    code: u8,
}

/// The build state of a `bloom` engine: label indices, the markers'
/// reference counts and codes, and the counting filter.
#[derive(Clone, Debug)]
pub struct BloomUpdater<A: Addr + Plain> {
    /// Boxed: the registry's engine enums hold updaters by value, and the
    /// config (a trace path) is what made this one the largest.
    config: Box<BloomConfig>,
    k: u32,
    /// Index of each prefix length in the snapshot's `lengths` (from 1), or
    /// [`NOT_A_LENGTH`]; entry 0 (the default route) is 0.
    index_of: Vec<u8>,
    /// Per length index: the lengths where a prefix of that length goes
    /// right in the tree, that is where it leaves markers (guided only).
    right_turns: Vec<Vec<u8>>,
    markers: HashMap<Prefix<A>, Marker>,
    labels: LabelIndex,
    counts: CountingFilter,
    /// Keys in the exact table.
    keys: usize,
    /// Filter bits set now and right after the build.
    set_bits: u64,
    built_set_bits: u64,
}

/// Bits of a BMP code for `lengths` tree lengths: codes 0 (the default
/// route) to `lengths`, and all ones reserved for "a prefix".
fn code_bits(lengths: usize) -> u32 {
    (lengths as u32 + 2).next_power_of_two().trailing_zeros()
}

/// The key bits (a mask over hash indices `0..k`) of a marker with BMP
/// code `code`: the bit that steers and the code's ones.
fn marker_mask(code: u8) -> u32 {
    1 | (code as u32) << 1
}

impl<A: Addr + Plain> BloomUpdater<A> {
    /// All `k` key bits: what a prefix sets.
    fn all_bits(&self) -> u32 {
        u32::MAX >> (32 - self.k)
    }

    /// The lengths at which prefixes of length `plen` (in the tree) leave
    /// markers.
    fn turns(&self, plen: u8) -> &[u8] {
        &self.right_turns[self.index_of[plen as usize] as usize]
    }

    fn limit(&self, why: String) -> BuildError {
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

    /// Every key of `rib` with its exact-table value and key bits, in one
    /// pass over the prefixes in address order, with the prefixes covering
    /// the current one on a stack: a marker's BMP is the longest of them
    /// not longer than the marker. (The paper's Algorithm 2 finds a
    /// prefix's BMP with a guided lookup in the filter built so far; the
    /// reference table gives the marker's own, which lookups need to be
    /// exact.)
    fn collect_keys(&mut self, rib: &Rib<A>) -> Result<Vec<(Prefix<A>, u32, u32)>, BuildError> {
        let mut keys = Vec::with_capacity(rib.len());
        let mut covering: Vec<(Prefix<A>, u32)> = Vec::with_capacity(A::BITS as usize + 1);
        let all = self.all_bits();
        for (prefix, label) in rib.iter() {
            if prefix.plen() == 0 {
                continue; // the default route is results[0]
            }
            while covering
                .last()
                .is_some_and(|(outer, _)| !outer.covers(prefix))
            {
                covering.pop();
            }
            let label_index = self.labels.index(Some(label))?;
            keys.push((prefix, exact::pack(prefix.plen(), false, label_index), all));
            let index = self.index_of[prefix.plen() as usize] as usize;
            for &turn in &self.right_turns[index] {
                let marker = Prefix::new_masked(prefix.addr(), turn);
                match self.markers.entry(marker) {
                    Entry::Occupied(mut entry) => entry.get_mut().refs += 1,
                    Entry::Vacant(entry) => {
                        let bmp = covering
                            .iter()
                            .rev()
                            .find(|(outer, _)| outer.plen() <= turn);
                        let code = match bmp {
                            // The marker is a prefix: its key is in `keys`.
                            Some((outer, _)) if outer.plen() == turn => u8::MAX,
                            Some(&(outer, bmp_label)) => {
                                let code = self.index_of[outer.plen() as usize];
                                keys.push((
                                    marker,
                                    exact::pack(turn, true, bmp_label),
                                    marker_mask(code),
                                ));
                                code
                            }
                            None => {
                                keys.push((marker, exact::pack(turn, true, 0), marker_mask(0)));
                                0
                            }
                        };
                        entry.insert(Marker { refs: 1, code });
                    }
                }
            }
            covering.push((prefix, label_index));
        }
        Ok(keys)
    }

    /// Sets the key bits in `new` and not in `old`, and clears those in
    /// `old` and not in `new` that no other key sets.
    fn change_bits(&mut self, filter: &mut [FilterBlock], hash: KeyHash, old: u32, new: u32) {
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

    /// Builds the engine from `rib` into this updater's and `snapshot`'s
    /// own memory, emptied first (the marker map keeps its capacity, the
    /// filter, counters and exact table their pages): how a build and a
    /// rebuild in place after a large change both run, the latter without
    /// fresh pages or frees. On an error the snapshot is half built and the
    /// caller must rebuild (as after any failed update).
    fn fill(&mut self, snapshot: &mut Bloom<A>, rib: &Rib<A>) -> Result<(), BuildError> {
        let config = self.config.clone();
        let histogram = rib.prefix_length_histogram();
        let mut lengths = vec![0u8];
        lengths.extend((1..=A::BITS).filter(|&plen| histogram[plen as usize] > 0));
        let tree_lengths = &lengths[1..];
        let bmp_bits = match config.search {
            Search::Linear => 0,
            Search::Guided => code_bits(tree_lengths.len()),
        };
        let k = config
            .k
            .unwrap_or_else(|| default_k(config.search, bmp_bits));
        let index_of = index_of::<A>(&lengths);
        let tree: Vec<TreeNode> = match (config.search, &config.tree) {
            (Search::Linear, _) => Vec::new(),
            (Search::Guided, TreeShape::Balanced) => tree::balanced(tree_lengths),
            (Search::Guided, TreeShape::Trace(path)) => {
                let weights = trace_weights(&config, rib, path, &index_of, lengths.len())?;
                tree::optimal(tree_lengths, &weights)
            }
        };
        let right_turns = lengths
            .iter()
            .map(|&plen| match config.search {
                Search::Linear => Vec::new(),
                Search::Guided => tree::right_turns(&tree, plen),
            })
            .collect();
        self.k = k;
        self.index_of = index_of;
        self.right_turns = right_turns;
        self.markers.clear();
        self.labels = LabelIndex::new(&self.config, MAX_LABELS);
        self.keys = 0;
        self.set_bits = 0;
        if config.search == Search::Guided && k <= bmp_bits {
            return Err(self.limit(format!(
                "k={k} leaves no bit for the guided search's BMP code: the table's {} distinct \
                 lengths take {bmp_bits} code bits besides the bit that steers, so k must be at \
                 least {} (the default, k={}, also confirms the code)",
                tree_lengths.len(),
                bmp_bits + 1,
                default_k(Search::Guided, bmp_bits)
            )));
        }
        let keys = self.collect_keys(rib)?;
        // The default route's key is always in the filter (a BMP code of 0
        // is confirmed against it), whether or not the table has one.
        let inserted: u64 = keys
            .iter()
            .map(|&(_, _, bits)| bits.count_ones() as u64)
            .sum::<u64>()
            + k as u64;
        let bits = match config.size {
            FilterSize::Fill(percent) => {
                (inserted as f64 / -(1.0 - percent / 100.0).ln()).ceil() as u64
            }
            FilterSize::Bits(bits) => bits,
        };
        if bits > MAX_FILTER_BITS {
            return Err(self.limit(format!(
                "the filter would need {bits} bits, more than {MAX_FILTER_BITS}: \
                 give a higher fill= or bits="
            )));
        }
        let blocks = bits.div_ceil(BLOCK_BITS as u64).max(1) as usize;
        let slots = exact::capacity_for(keys.len());
        if slots > u32::MAX as usize {
            return Err(self.limit(format!(
                "{} keys need more than 2^32 exact-table slots",
                keys.len()
            )));
        }
        snapshot.search = config.search;
        snapshot.k = k;
        snapshot.bmp_bits = bmp_bits;
        snapshot.filter.clear();
        snapshot.filter.resize(blocks, FilterBlock::default());
        snapshot.lengths = lengths;
        snapshot.tree = tree;
        snapshot.table.clear();
        snapshot.table.resize(slots, exact::ExactSlot::default());
        snapshot.results.clear();
        self.counts.reset(blocks * BLOCK_BITS as usize);
        let all = self.all_bits();
        self.change_bits(&mut snapshot.filter, KeyHash::of(A::ZERO, 0), 0, all);
        for &(key, value, bits) in &keys {
            self.change_bits(
                &mut snapshot.filter,
                KeyHash::of(key.addr(), key.plen()),
                0,
                bits,
            );
            exact::insert(&mut snapshot.table, key.addr(), value);
        }
        self.keys = keys.len();
        self.built_set_bits = self.set_bits;
        self.labels.set_default(rib.default_route());
        self.labels.sync(&mut snapshot.results);
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

/// The index of each prefix length in `lengths` ([`NOT_A_LENGTH`] if absent).
fn index_of<A: Addr>(lengths: &[u8]) -> Vec<u8> {
    let mut index_of = vec![NOT_A_LENGTH; A::BITS as usize + 1];
    for (index, &plen) in lengths.iter().enumerate() {
        index_of[plen as usize] = index as u8;
    }
    index_of
}

/// Gap weights for Knuth's tree (see `tree::optimal`): per gap, one plus
/// the trace's addresses whose longest match ends there (the default route
/// and no match in gap 0). The one is Laplace's rule: a length the trace
/// never matched still gets a walk of bounded length.
fn trace_weights<A: Addr>(
    config: &BloomConfig,
    rib: &Rib<A>,
    path: &Path,
    index_of: &[u8],
    gaps: usize,
) -> Result<Vec<f64>, BuildError> {
    let bad = |why: String| BuildError::BadSpec {
        spec: config.to_string(),
        why,
    };
    let trace = crate::trace::read_trace::<A>(path)
        .map_err(|e| bad(format!("cannot read the trace for the weighted tree: {e}")))?;
    if trace.is_empty() {
        return Err(bad(format!(
            "{}: no {} address in the trace for the weighted tree",
            path.display(),
            A::FAMILY
        )));
    }
    let mut weights = vec![1.0; gaps];
    for addr in trace {
        let gap = rib
            .longest_match(addr)
            .map_or(0, |(prefix, _)| index_of[prefix.plen() as usize] as usize);
        weights[gap] += 1.0;
    }
    Ok(weights)
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
