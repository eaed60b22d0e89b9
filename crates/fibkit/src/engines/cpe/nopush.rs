//! The non-leaf-pushed multibit trie (section 5.1): every entry holds a
//! child pointer and the label of the longest prefix expanded into it
//! within its node, so an update rewrites one node. Lookup first, then
//! build and update.

use std::collections::HashMap;
use std::marker::PhantomData;

use super::build::{group_end, labelled_prefixes, too_big, FreeNodes, Shape, Strides};
use super::{
    child_base, child_ptr, child_stride, is_child, results_bytes, CpeConfig, CpeStats, MAX_LABELS,
};
use crate::addr::Addr;
use crate::engine::{BuildError, Lookup};
use crate::labels::{LabelIndex, LabelSlot};
use crate::prefix::{Label, Prefix};
use crate::rib::Rib;
use crate::storage::{Owned, Storage};

/// The lookup snapshot of a non-leaf-pushed trie: the root's pointer word,
/// `[child pointer, label index]` per entry (one 8-byte read per node
/// visited) and the results, in storage `S`.
pub struct NopushTrie<A, S: Storage = Owned> {
    pub(super) root: u32,
    pub(super) entries: S::Array<[u32; 2]>,
    pub(super) results: S::Array<LabelSlot>,
    pub(super) _family: PhantomData<fn() -> A>,
}

impl<A, S: Storage> Clone for NopushTrie<A, S> {
    fn clone(&self) -> Self {
        NopushTrie {
            root: self.root,
            entries: self.entries.clone(),
            results: self.results.clone(),
            _family: PhantomData,
        }
    }

    /// Reuses this snapshot's arrays instead of allocating new ones.
    fn clone_from(&mut self, source: &Self) {
        self.root = source.root;
        self.entries.clone_from(&source.entries);
        self.results.clone_from(&source.results);
    }
}

impl<A: Addr, S: Storage> Lookup<A> for NopushTrie<A, S> {
    #[inline]
    fn lookup(&self, addr: A) -> Option<Label> {
        let mut ptr = self.root;
        let mut depth = 0;
        let mut best = 0;
        loop {
            let stride = child_stride(ptr);
            let [child, label] = self.entries[child_base(ptr) + addr.bits(depth, stride) as usize];
            // Section 5.1: remember the last prefix seen beside the path.
            if label != 0 {
                best = label;
            }
            if !is_child(child) {
                break;
            }
            depth += stride;
            ptr = child;
        }
        self.results[best as usize].get()
    }

    fn memory_bytes(&self) -> usize {
        self.entries.len() * 8 + results_bytes(self.results.len())
    }
}

/// The build state of a non-leaf-pushed trie: the layout updates keep, the
/// label index, the length of the prefix each entry's label comes from, a
/// record per node and the free nodes.
#[derive(Clone, Debug)]
pub struct NopushUpdater<A> {
    pub(super) shape: Shape,
    labels: LabelIndex,
    /// Length + 1 of the prefix whose label an entry holds (0: none).
    plens: Vec<u8>,
    /// Levels of the longest path.
    height: u32,
    /// Per node base: (stride, entries holding a label or a pointer).
    nodes: HashMap<u32, (u8, u32)>,
    free: FreeNodes,
    /// `(slot, old entry, old prefix length)` of every entry the update in
    /// progress wrote.
    undo_entries: Vec<(u32, [u32; 2], u8)>,
    /// `(base, old record)` of every node record it changed.
    undo_nodes: Vec<(u32, Option<(u8, u32)>)>,
    _family: PhantomData<fn() -> A>,
}

impl<A: Addr> NopushUpdater<A> {
    /// Builds the trie for `rib` with the given stride choices.
    pub(super) fn build(
        config: &CpeConfig,
        rib: &Rib<A>,
        strides: Strides,
    ) -> Result<(Self, NopushTrie<A>), BuildError> {
        let mut labels = LabelIndex::new(config, MAX_LABELS);
        let prefixes = labelled_prefixes(rib, &mut labels)?;
        let shape = Shape::new(config, &strides);
        let mut builder = NopushBuilder {
            prefixes: &prefixes,
            entries: Vec::new(),
            plens: Vec::new(),
            nodes: HashMap::new(),
            strides,
            config,
            height: 0,
        };
        let root = builder.node(0, 0, prefixes.len(), 0)?;
        let NopushBuilder {
            mut entries,
            mut plens,
            nodes,
            height,
            ..
        } = builder;
        // Headroom for nodes added by updates: growing the arrays copies
        // them (milliseconds on a full table), which would be an update's
        // worst case. Untouched capacity costs no physical memory.
        let headroom = entries.len() / 8 + (1 << 16);
        entries.reserve_exact(headroom);
        plens.reserve_exact(headroom);
        let mut trie = NopushTrie {
            root,
            entries,
            results: Vec::new(),
            _family: PhantomData,
        };
        labels.sync(&mut trie.results);
        let updater = NopushUpdater {
            shape,
            labels,
            plens,
            height: height as u32,
            nodes,
            free: FreeNodes::new(A::BITS),
            undo_entries: Vec::new(),
            undo_nodes: Vec::new(),
            _family: PhantomData,
        };
        Ok((updater, trie))
    }

    /// Applies each changed prefix to the one node it expands into. All or
    /// nothing: on an error (a limit) the trie and this updater are put
    /// back as they were before the batch (labels indexed meanwhile stay in
    /// the index, unused).
    pub(super) fn update(
        &mut self,
        trie: &mut NopushTrie<A>,
        rib: &Rib<A>,
        changed: &[Prefix<A>],
    ) -> Result<(), BuildError> {
        let (entries, height) = (trie.entries.len(), self.height);
        // The default route is results slot 0, in no entry.
        let changed = crate::engines::shared::without_default(changed);
        let result = changed.iter().try_for_each(|&prefix| {
            let label = match rib.get(prefix) {
                Some(label) => Some(self.labels.index(Some(label))?),
                None => None,
            };
            self.apply(trie, rib, prefix, label)
        });
        if result.is_err() {
            for (slot, entry, plen) in self.undo_entries.drain(..).rev() {
                trie.entries[slot as usize] = entry;
                self.plens[slot as usize] = plen;
            }
            for (base, record) in self.undo_nodes.drain(..).rev() {
                match record {
                    Some(record) => self.nodes.insert(base, record),
                    None => self.nodes.remove(&base),
                };
            }
            trie.entries.truncate(entries);
            self.plens.truncate(entries);
            self.free.rollback();
            self.height = height;
            return result;
        }
        self.undo_entries.clear();
        self.undo_nodes.clear();
        self.free.commit();
        self.labels.set_default(rib.default_route());
        self.labels.sync(&mut trie.results);
        Ok(())
    }

    pub(super) fn stats(&self, trie: &NopushTrie<A>) -> CpeStats {
        let free_nodes = self.free.len();
        CpeStats {
            leaf_pushed: false,
            nodes: self.nodes.len(),
            packed_nodes: 0,
            free_nodes,
            height: self.height,
            max_entries: self.shape.max_entries,
            entries: trie.entries.len(),
            root_stride: child_stride(trie.root),
            labels: self.labels.len(),
            update_state_bytes: self.plens.len() + self.nodes.len() * 16 + free_nodes * 4,
        }
    }

    /// A zeroed node of `stride` bits: a free one or new entries.
    fn alloc(&mut self, trie: &mut NopushTrie<A>, stride: u32) -> Result<u32, BuildError> {
        // A node that was free before this update holds no entry in use.
        let base = match self.free.take(stride) {
            Some(base) => base,
            None => {
                let base = trie.entries.len();
                let size = 1usize << stride;
                self.shape.check_entries(base + size)?;
                trie.entries.resize(base + size, [0, 0]);
                self.plens.resize(base + size, 0);
                base as u32
            }
        };
        self.set_node(base, Some((stride as u8, 0)));
        Ok(base)
    }

    /// Sets (or removes) the record of the node at `base`, remembering the
    /// old one for a rollback.
    fn set_node(&mut self, base: u32, record: Option<(u8, u32)>) {
        let old = match record {
            Some(record) => self.nodes.insert(base, record),
            None => self.nodes.remove(&base),
        };
        self.undo_nodes.push((base, old));
    }

    /// Writes `entry`, from a prefix of length `plen - 1` (0: none), to
    /// `slot` of the node at `base`, counting the node's entries in use and
    /// remembering the old entry for a rollback.
    fn set(&mut self, trie: &mut NopushTrie<A>, base: u32, slot: usize, entry: [u32; 2], plen: u8) {
        let old = trie.entries[slot];
        self.undo_entries.push((slot as u32, old, self.plens[slot]));
        trie.entries[slot] = entry;
        self.plens[slot] = plen;
        let (was_used, now_used) = (old != [0, 0], entry != [0, 0]);
        if was_used != now_used {
            if let Some(&(stride, used)) = self.nodes.get(&base) {
                let used = if now_used { used + 1 } else { used - 1 };
                self.set_node(base, Some((stride, used)));
            }
        }
    }

    /// Section 5.1 "Insertion and Deletion": finds the node `prefix` expands
    /// into (adding nodes on the way for an insert, as the layout allows)
    /// and rewrites its expansion there: an insert or relabel takes every
    /// entry not captured by a longer prefix; a delete hands the entries it
    /// held to the next shorter prefix expanded into the same node. Emptied
    /// nodes are freed.
    fn apply(
        &mut self,
        trie: &mut NopushTrie<A>,
        rib: &Rib<A>,
        prefix: Prefix<A>,
        label: Option<u32>,
    ) -> Result<(), BuildError> {
        let plen = prefix.plen() as u32;
        let addr = prefix.addr();
        let mut path: Vec<(u32, usize)> = Vec::new(); // (node base, slot) of pointers followed
        let mut ptr = trie.root;
        let mut depth = 0u32;
        let mut min_len = 0u32;
        loop {
            let stride = child_stride(ptr);
            let base = child_base(ptr) as u32;
            if plen <= depth + stride {
                break;
            }
            let slot = base as usize + addr.bits(depth, stride) as usize;
            let [mut child, slot_label] = trie.entries[slot];
            if !is_child(child) {
                if label.is_none() {
                    return Ok(()); // nothing of this prefix was ever here
                }
                let level = path.len() as u32 + 1;
                let child_stride =
                    self.shape
                        .new_node_stride(level, depth + stride, A::BITS as u32);
                child = child_ptr(child_stride, self.alloc(trie, child_stride)?);
                self.set(trie, base, slot, [child, slot_label], self.plens[slot]);
            }
            path.push((base, slot));
            self.height = self.height.max(path.len() as u32 + 1);
            depth += stride;
            min_len = depth + 1;
            ptr = child;
        }
        let stride = child_stride(ptr);
        let base = child_base(ptr) as u32;
        let first = base as usize + addr.bits(depth, stride) as usize;
        let last = first + (1usize << (depth + stride - plen));
        let own = plen as u8 + 1;
        let (new_label, new_plen, replace_if): (u32, u8, fn(u8, u8) -> bool) = match label {
            Some(label) => (label, own, |old, own| old <= own),
            None => {
                // The next shorter prefix expanded into this node, if any
                // (not the default route: it is in no entry).
                let shorter = (min_len.max(1)..plen).rev().find_map(|len| {
                    rib.get(Prefix::new_masked(addr, len as u8))
                        .map(|l| (l, len as u8 + 1))
                });
                match shorter {
                    Some((l, p)) => (self.labels.index(Some(l))?, p, |old, own| old == own),
                    None => (0, 0, |old, own| old == own),
                }
            }
        };
        for slot in first..last {
            if replace_if(self.plens[slot], own) {
                let [child, _] = trie.entries[slot];
                self.set(trie, base, slot, [child, new_label], new_plen);
            }
        }
        // Free nodes left empty, bottom up (never the root).
        let mut base = base;
        while let Some((parent, slot)) = path.pop() {
            let Some(&(stride, used)) = self.nodes.get(&base) else {
                break;
            };
            if used != 0 {
                break;
            }
            self.set_node(base, None);
            self.free.give(stride as u32, base);
            let [_, slot_label] = trie.entries[slot];
            self.set(trie, parent, slot, [0, slot_label], self.plens[slot]);
            base = parent;
        }
        Ok(())
    }
}

struct NopushBuilder<'a, A> {
    prefixes: &'a [(A, u8, u32)],
    entries: Vec<[u32; 2]>,
    plens: Vec<u8>,
    nodes: HashMap<u32, (u8, u32)>,
    strides: Strides,
    config: &'a CpeConfig,
    height: usize,
}

impl<A: Addr> NopushBuilder<'_, A> {
    fn node(&mut self, depth: u32, lo: usize, hi: usize, level: usize) -> Result<u32, BuildError> {
        let (stride, _) = self.strides.next(level, self.config)?;
        let stride = stride as u32;
        self.height = self.height.max(level + 1);
        let end = depth + stride;
        let base = self.entries.len();
        let size = 1usize << stride;
        if base + size > self.config.max_entries() {
            return Err(too_big(self.config, (base + size) as u64));
        }
        self.entries.resize(base + size, [0, 0]);
        self.plens.resize(base + size, 0);
        for &(addr, plen, label) in &self.prefixes[lo..hi] {
            if plen as u32 <= end {
                let first = base + addr.bits(depth, stride) as usize;
                let last = first + (1usize << (end - plen as u32));
                for entry in &mut self.entries[first..last] {
                    entry[1] = label;
                }
                self.plens[first..last].fill(plen + 1);
            }
        }
        let mut i = lo;
        while i < hi {
            if self.prefixes[i].1 as u32 <= end {
                i += 1;
                continue;
            }
            let j = group_end(self.prefixes, i, hi, depth, stride);
            let slot = base + self.prefixes[i].0.bits(depth, stride) as usize;
            let ptr = self.node(end, i, j, level + 1)?;
            self.entries[slot][0] = ptr;
            i = j;
        }
        let used = self.entries[base..base + size]
            .iter()
            .filter(|e| e[0] != 0 || e[1] != 0)
            .count() as u32;
        self.nodes.insert(base as u32, (stride as u8, used));
        Ok(child_ptr(stride, base as u32))
    }
}

#[cfg(test)]
mod tests {
    use super::super::{CpeConfig, CpeTrie, CpeUpdater};
    use crate::engine::EngineConfig;
    use crate::engines::shared::testing::{assert_default_route_is_one_slot, nested_table};

    /// The entries: all but the results.
    fn tables<A>(snapshot: &CpeTrie<A>) -> (u32, Vec<[u32; 2]>) {
        let CpeTrie::Nopush(trie) = snapshot else {
            unreachable!("a nopush spec builds a nopush trie")
        };
        (trie.root, trie.entries.clone())
    }

    #[test]
    fn the_default_route_is_one_results_slot() {
        let config = CpeConfig::parse("cpe:levels=4,nopush").unwrap();
        let rib = nested_table(0x0a01_0203u32);
        assert_default_route_is_one_slot::<u32, CpeUpdater<u32>, _>(&config, &rib, tables);
        let config = CpeConfig::parse("cpe:levels=12,nopush").unwrap();
        let rib = nested_table(0x2001_0db8_0001_0002_0003_0004_0005_0006u128);
        assert_default_route_is_one_slot::<u128, CpeUpdater<u128>, _>(&config, &rib, tables);
    }
}
