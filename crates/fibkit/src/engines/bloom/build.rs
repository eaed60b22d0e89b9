//! Building `bloom` from the reference table: the keys and markers with
//! their BMPs, the lengths' search tree, the filter and the exact table.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::path::Path;

use super::exact::{self, MAX_LABELS};
use super::filter::{CountingFilter, FilterBlock, KeyHash, BLOCK_BITS};
use super::tree::{self, TreeNode};
use super::{default_k, Bloom, BloomConfig, FilterSize, Search, TreeShape, MAX_FILTER_BITS};
use crate::addr::Addr;
use crate::engine::BuildError;
use crate::labels::LabelIndex;
use crate::prefix::Prefix;
use crate::rib::Rib;
use crate::storage::Plain;

// The updater's struct and the helpers that build and update share (key
// bits, BMP codes, the counting filter's bit changes) live here, below
// `update`: the build is written as methods on the updater, which fill
// its marker map, label index and counts along with the snapshot.

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

    pub(super) fn limit(&self, why: String) -> BuildError {
        BuildError::Limit {
            engine: self.config.to_string(),
            why,
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
}

impl<A: Addr + Plain> BloomUpdater<A> {
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

    /// Builds the engine from `rib` into this updater's and `snapshot`'s
    /// own memory, emptied first (the marker map keeps its capacity, the
    /// filter, counters and exact table their pages): how a build and a
    /// rebuild in place after a large change both run, the latter without
    /// fresh pages or frees. On an error the snapshot is half built and the
    /// caller must rebuild (as after any failed update).
    pub(super) fn fill(&mut self, snapshot: &mut Bloom<A>, rib: &Rib<A>) -> Result<(), BuildError> {
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
}

/// The index of each prefix length in `lengths` ([`NOT_A_LENGTH`] if absent).
pub(super) fn index_of<A: Addr>(lengths: &[u8]) -> Vec<u8> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
