//! Patching plain `bspl` for a few changed prefixes of one block without
//! re-planning the block.
//!
//! With a block's tables `lo..=hi` and first probe fixed, every entry of
//! table `t` at key `K` (the first `L_t` bits of an address) is a function
//! of the table alone:
//! - its BMP is the longest prefix longer than the first level and no
//!   longer than `L_t` covering `K`;
//! - it holds an expansion if that prefix's own table is `t` (it is longer
//!   than the table before `t`);
//! - it is a marker if a prefix strictly below `K` has its table in the
//!   right subtree of `t` (the block's search turns towards it at `t`),
//!   that is a length in `L_t + 1 ..= L_h`, `h` the last table of `t`'s
//!   subtree;
//! - it exists if it holds an expansion or is a marker.
//!
//! So a change of prefix `P` (table `v`) can only change the entries whose
//! key lies inside `P` in tables `v` and longer (their BMP, and in `v`
//! `P`'s own expansion), and the markers `P` leaves on its search path
//! (whether another prefix still needs them). The entries inside `P` are
//! `P`'s expansion and the expansions and markers of the prefixes inside
//! `P`; each key is recomputed from the reference table, so a batch's
//! prefixes can be patched in any order. A host route costs its one
//! expansion and a marker per right turn, whatever the block holds.
//!
//! A change that would widen the block's tables (a prefix of a table the
//! block does not use), or whose inside holds too many prefixes to be
//! worth it, re-plans the block instead (`plan_anew`). A withdrawal
//! leaves the tables as wide as they were, which stays correct (markers
//! are placed for the block's tree, whatever its tables hold) at the price
//! of a probe, until the block is re-planned or empty.

use super::levels::MAX_EXPANSION_BITS;
use super::place::{insert_or_grow, level_of, remove_entry, set_entry, SearchTree};
use super::{
    entry_root, entry_tables, entry_value, first_entry, Bspl, BsplUpdater, MARKER, NO_TABLES,
};
use crate::addr::Addr;
use crate::engine::BuildError;
use crate::prefix::Prefix;
use crate::rib::Rib;

/// Most prefixes inside one changed prefix that a patch recomputes; a
/// change covering more re-plans its block (which reads them all once).
const MAX_INSIDE: usize = 64;
/// Most keys one block's patch recomputes before it re-plans the block
/// instead.
const MAX_KEYS: usize = 4096;

/// A block's search: its tables `lo..=hi` and the table probed first.
#[derive(Clone, Copy)]
struct Search<'a> {
    tree: &'a SearchTree,
    lo: usize,
    hi: usize,
    root: usize,
}

impl Search<'_> {
    /// The tables at which the search for a prefix of table `target` turns
    /// towards longer lengths (where it leaves markers), from the root.
    fn right_turns(self, target: usize, mut visit: impl FnMut(usize)) {
        let (mut lo, mut hi, mut at) = (self.lo, self.hi, self.root);
        while at != target {
            if target > at {
                visit(at);
                lo = at + 1;
            } else {
                hi = at - 1;
            }
            at = self.tree.root(lo, hi);
        }
    }

    /// The last table of the subtree whose root is `table`.
    fn subtree_end(self, table: usize) -> usize {
        let (mut lo, mut hi, mut at) = (self.lo, self.hi, self.root);
        while at != table {
            if table > at {
                lo = at + 1;
            } else {
                hi = at - 1;
            }
            at = self.tree.root(lo, hi);
        }
        hi
    }
}

impl<A: Addr> BsplUpdater<A> {
    /// The keys a patch of block `block` of `snapshot` for `changed` (its
    /// prefixes longer than the first level) recomputes from `rib`, keeping
    /// the block's plan, sorted and distinct; `None`: the block must be
    /// re-planned. `lengths` are the tables' lengths. Writes nothing.
    pub(crate) fn patch_keys(
        &self,
        snapshot: &Bspl<A>,
        lengths: &[u8],
        rib: &Rib<A>,
        block: u32,
        changed: &[Prefix<A>],
    ) -> Option<Vec<(u8, A)>> {
        let first = snapshot.first[block as usize];
        let (lo, hi) = entry_tables(first);
        if lo > hi {
            return None;
        }
        let search = Search {
            tree: &snapshot.tree,
            lo,
            hi,
            root: entry_root(first),
        };
        let mut keys: Vec<(u8, A)> = Vec::new();
        for &prefix in changed {
            let table = level_of(lengths, prefix.plen());
            let present = rib.get(prefix).is_some();
            if !(lo..=hi).contains(&table) {
                if present {
                    return None;
                }
                // Absent before too: the block's tables held its table.
                continue;
            }
            if !expands_within_budget(prefix.plen(), lengths[table]) {
                return None;
            }
            push_keys(prefix, table, lengths, search, &mut keys);
            let mut inside = rib.prefixes_within(prefix).filter(|&(p, _)| p != prefix);
            for (q, _) in inside.by_ref().take(MAX_INSIDE) {
                // Present before, or changed in this batch and checked as
                // its own change: within the block's tables.
                let table = level_of(lengths, q.plen());
                if !(lo..=hi).contains(&table) || !expands_within_budget(q.plen(), lengths[table]) {
                    return None;
                }
                push_keys(q, table, lengths, search, &mut keys);
            }
            if inside.next().is_some() || keys.len() > MAX_KEYS {
                return None;
            }
        }
        keys.sort_unstable();
        keys.dedup();
        Some(keys)
    }

    /// Patches block `block` of `snapshot`: recomputes `keys` (from
    /// [`Self::patch_keys`]) from `rib` and writes them; `patched` is the
    /// number of changed prefixes the patch stands for.
    pub(crate) fn write_patch(
        &mut self,
        snapshot: &mut Bspl<A>,
        lengths: &[u8],
        rib: &Rib<A>,
        block: u32,
        keys: &[(u8, A)],
        patched: usize,
    ) -> Result<(), BuildError> {
        let first = snapshot.first[block as usize];
        let (lo, hi) = entry_tables(first);
        let tree = *snapshot.tree;
        let search = Search {
            tree: &tree,
            lo,
            hi,
            root: entry_root(first),
        };
        let first_bits = snapshot.first_bits;
        let mut values = Vec::with_capacity(keys.len());
        for &(table, key) in keys {
            values.push(self.value_of(rib, first_bits, lengths, search, table as usize, key)?);
        }
        let engine = self.config.to_string();
        let record = self.blocks.entry(block).or_default();
        for (&(table, key), value) in keys.iter().zip(values) {
            let level = snapshot.levels[table as usize];
            match value {
                Some(value) => {
                    if !set_entry(snapshot, &level, key, value) {
                        insert_or_grow(snapshot, table as usize, key, value, &mut self.build_stats)
                            .map_err(|why| BuildError::Limit {
                                engine: engine.clone(),
                                why,
                            })?;
                        let at = record.binary_search(&(table, key)).unwrap_err();
                        record.insert(at, (table, key));
                        self.table_entries[table as usize] += 1;
                    }
                }
                None => {
                    if remove_entry(snapshot, &level, key) {
                        let at = record
                            .binary_search(&(table, key))
                            .expect("a block's keys are recorded");
                        record.remove(at);
                        self.table_entries[table as usize] -= 1;
                    }
                }
            }
        }
        if record.is_empty() {
            self.blocks.remove(&block);
            snapshot.first[block as usize] = first_entry(entry_value(first), NO_TABLES, 0);
        }
        self.build_stats.prefixes_patched += patched as u64;
        Ok(())
    }

    /// The value of key `key` in table `table` of a block searched as
    /// `search`, from `rib` (see the module's header); `None`: no entry.
    fn value_of(
        &mut self,
        rib: &Rib<A>,
        first_bits: u8,
        lengths: &[u8],
        search: Search<'_>,
        table: usize,
        key: A,
    ) -> Result<Option<u32>, BuildError> {
        let plen = lengths[table];
        let shorter = if table == 0 { 0 } else { lengths[table - 1] };
        let bmp = rib
            .longest_match_within(key, plen)
            .filter(|(p, _)| p.plen() > first_bits);
        let expansion = bmp.is_some_and(|(p, _)| p.plen() > shorter);
        let end = search.subtree_end(table);
        let marker = end > table
            && rib.has_prefix_within(Prefix::new_masked(key, plen), plen + 1..=lengths[end]);
        if !expansion && !marker {
            return Ok(None);
        }
        let index = self.labels.index(bmp.map(|(_, label)| label))?;
        Ok(Some(if marker { MARKER } else { 0 } | index))
    }
}

/// Whether a prefix of `plen` bits expands to `target` in at most
/// [`MAX_KEYS`] keys (and within the lengths' limit).
fn expands_within_budget(plen: u8, target: u8) -> bool {
    let bits = target - plen;
    bits <= MAX_EXPANSION_BITS && 1usize << bits <= MAX_KEYS
}

/// Appends the keys a prefix of table `table` places: its expansion and
/// the markers on its search path.
fn push_keys<A: Addr>(
    prefix: Prefix<A>,
    table: usize,
    lengths: &[u8],
    search: Search<'_>,
    keys: &mut Vec<(u8, A)>,
) {
    let plen = lengths[table];
    let step = 1u128 << (A::BITS - plen);
    let base = prefix.addr().to_u128();
    for i in 0..1u128 << (plen - prefix.plen()) {
        keys.push((table as u8, A::from_u128(base + i * step)));
    }
    search.right_turns(table, |at| {
        keys.push((at as u8, prefix.addr().masked(lengths[at])));
    });
}
