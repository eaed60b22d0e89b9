//! The multibit tries: leaf-pushed ([`LeafTrie`]) and non-leaf-pushed
//! ([`NopushTrie`], incrementally updatable). Lookup first, build and update
//! after; the layouts are described in the module header (`mod.rs`).

use std::collections::HashMap;

use super::{child_ptr, CpeAddr, BASE_MASK, CHILD, MAX_ENTRIES, NEW_NODE_STRIDE, STRIDE_SHIFT};
use crate::engine::BuildError;
use crate::engines::prefetch;
use crate::legacy::LabelTable;
use crate::legacy::LegacyEngine;
use crate::prefix::{Label, Prefix};
use crate::rib::{Range, Rib};

/// A packed node: one cache line holding up to [`PACKED_RUNS`] runs of equal
/// entries. Word 0 is the stride, words 1..=6 the first index of runs 1..=6
/// (unused: `u32::MAX`; run 0 starts at 0), words 8..=14 the runs' entries.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub(crate) struct PackedLine([u32; 16]);

/// Runs a packed leaf-pushed node holds.
pub(crate) const PACKED_RUNS: usize = 7;
const _: () = assert!(std::mem::size_of::<PackedLine>() == 64);

impl PackedLine {
    /// The entry covering `index`: branch-free count of run starts `<= index`.
    #[inline]
    fn find(&self, index: u32) -> u32 {
        let w = &self.0;
        let pos = (w[1] <= index) as usize
            + (w[2] <= index) as usize
            + (w[3] <= index) as usize
            + (w[4] <= index) as usize
            + (w[5] <= index) as usize
            + (w[6] <= index) as usize;
        w[8 + pos]
    }
}

/// Prefetch window of [`LeafTrie::lookup_batch`], in keys: root entries are
/// prefetched `2 * WINDOW` keys ahead, child entries `WINDOW` keys ahead.
// PERF: `fibkit bench` dfz-v4-nh, rnd, batch, medians of 5, 2026-11-22, three
// runs: `cpe:strides=20+4+8` at 64 keys 108/126/121 Mlps against 101/114/98
// at 32 and 79/83 at 16 (dir24-8 58/62/67 in the same runs). A third stage
// (reading the second level `WINDOW` keys ahead, prefetching the third) ran
// 159 against 177 Mlps for two stages in one run (both 16 keys): dropped.
// A branch-free root step (always prefetch, select the second-level read by
// a conditional move) ran 124 against 154 Mlps for `cpe:levels=2`: dropped.
const WINDOW: usize = 64;

/// Stride choices, consumed in depth-first node order by the builders.
pub(crate) enum Strides {
    /// One stride per level.
    Fixed(Vec<u8>),
    /// `(stride, packed)` per node, depth-first.
    Variable(std::vec::IntoIter<(u8, bool)>),
}

impl Strides {
    fn next(&mut self, level: usize, spec: &str) -> Result<(u8, bool), BuildError> {
        let choice = match self {
            Strides::Fixed(strides) => strides.get(level).map(|&s| (s, false)),
            Strides::Variable(nodes) => nodes.next(),
        };
        choice.ok_or_else(|| BuildError::Limit {
            engine: spec.to_string(),
            why: format!(
                "the stride plan has no node for level {level} (a bug: plan and table disagree)"
            ),
        })
    }
}

fn too_big(spec: &str, entries: usize) -> BuildError {
    BuildError::Limit {
        engine: spec.to_string(),
        why: format!(
            "the trie needs more than {entries} entries; a 26-bit node index addresses at most 2^26 \
             (use more levels or a smaller cap)"
        ),
    }
}

/// The label table as engines store it: index 0 is "no route".
fn label_slots(table: &LabelTable) -> Vec<Option<Label>> {
    std::iter::once(None)
        .chain(table.labels().iter().map(|&l| Some(l)))
        .collect()
}

/// The table sorted by address then length, labels as indices + 1.
pub(crate) fn labelled_prefixes<A: CpeAddr>(
    rib: &Rib<A>,
    labels: &mut LabelTable,
) -> Vec<(A, u8, u32)> {
    let mut prefixes: Vec<(A, u8, u32)> = rib
        .iter()
        .map(|(p, label)| (p.addr(), p.plen(), labels.intern(label) + 1))
        .collect();
    prefixes.sort_unstable_by_key(|&(addr, plen, _)| (addr, plen));
    prefixes
}

/// Index just past the run of `prefixes[from..hi]` in the same block as
/// `prefixes[from]` at depth `depth + stride`.
fn group_end<A: CpeAddr>(
    prefixes: &[(A, u8, u32)],
    from: usize,
    hi: usize,
    depth: u32,
    stride: u32,
) -> usize {
    let index = prefixes[from].0.chunk(depth, stride);
    from + 1 + prefixes[from + 1..hi].partition_point(|p| p.0.chunk(depth, stride) == index)
}

/// A leaf-pushed multibit trie: every entry is a label index or a pointer.
#[derive(Clone)]
pub struct LeafTrie<A> {
    /// Pointer word of the root (stride and base 0).
    root: u32,
    entries: Vec<u32>,
    packed: Vec<PackedLine>,
    labels: Vec<Option<Label>>,
    spec: String,
    nodes: usize,
    /// Levels of the longest path (updates may add levels).
    height: u32,
    // Update state, not touched by lookups.
    /// Free node slots by stride.
    free: Vec<Vec<u32>>,
    table: LabelTable,
    /// Scratch range view of the block being rebuilt.
    ranges: Vec<Range<A>>,
    _family: std::marker::PhantomData<A>,
}

impl<A: CpeAddr> LegacyEngine<A> for LeafTrie<A> {
    const NAMES: &'static [&'static str] = &["cpe"];

    fn name(&self) -> String {
        self.spec.clone()
    }

    fn build(spec: &crate::spec::EngineSpec, rib: &Rib<A>) -> Result<Self, BuildError> {
        match super::build(spec, rib)? {
            super::CpeTrie::Leaf(trie) => Ok(trie),
            _ => Err(spec.error("built the other kind of CPE trie".to_string())),
        }
    }

    fn memory_bytes(&self) -> usize {
        self.entries.len() * 4
            + self.packed.len() * std::mem::size_of::<PackedLine>()
            + self.labels.len() * std::mem::size_of::<Option<Label>>()
    }

    #[inline]
    fn lookup(&self, addr: A) -> Option<Label> {
        if self.packed.is_empty() {
            self.lookup_unpacked(addr)
        } else {
            self.lookup_packed(addr)
        }
    }

    fn lookup_batch(&self, addrs: &[A], out: &mut [Option<Label>]) {
        assert!(out.len() >= addrs.len(), "output slice shorter than input");
        if self.packed.is_empty() {
            self.lookup_batch_prefetch(addrs, &mut out[..addrs.len()]);
        } else {
            for (addr, result) in addrs.iter().zip(out.iter_mut()) {
                *result = self.lookup(*addr);
            }
        }
    }

    /// Rebuilds, from the reference table's range view, the entries of
    /// the node each changed prefix expands into and the subtrees below them
    /// (reusing their nodes); tries with packed nodes are rebuilt whole.
    fn update(&mut self, rib: &Rib<A>, changed: &[Prefix<A>]) -> Result<(), BuildError> {
        if !self.packed.is_empty() {
            return Err(BuildError::UpdateUnsupported {
                engine: self.spec.clone(),
            });
        }
        for &prefix in changed {
            self.rebuild_for(rib, prefix)?;
        }
        Ok(())
    }

    fn stats(&self) -> Vec<(String, String)> {
        vec![
            ("multibit nodes".to_string(), self.nodes.to_string()),
            ("packed nodes".to_string(), self.packed.len().to_string()),
            (
                "levels of the longest path".to_string(),
                self.height.to_string(),
            ),
            ("entries".to_string(), self.entries.len().to_string()),
            (
                "root stride".to_string(),
                ((self.root >> STRIDE_SHIFT) & 31).to_string(),
            ),
            (
                "distinct labels".to_string(),
                (self.labels.len() - 1).to_string(),
            ),
        ]
    }
}

struct LeafBuilder<'a, A> {
    prefixes: &'a [(A, u8, u32)],
    entries: Vec<u32>,
    packed: Vec<PackedLine>,
    strides: Strides,
    spec: &'a str,
    nodes: usize,
    height: usize,
}

impl<A: CpeAddr> LeafBuilder<'_, A> {
    /// Builds the node at `depth` over `prefixes[lo..hi]` (the root's slice
    /// is the whole table; a child's holds only prefixes longer than its
    /// depth) and returns its pointer word.
    fn node(
        &mut self,
        depth: u32,
        lo: usize,
        hi: usize,
        inherited: u32,
        level: usize,
    ) -> Result<u32, BuildError> {
        let (stride, packed) = self.strides.next(level, self.spec)?;
        let stride = stride as u32;
        let end = depth + stride;
        self.nodes += 1;
        self.height = self.height.max(level + 1);
        if packed {
            return self.packed_node(depth, stride, lo, hi, inherited, level);
        }
        let base = self.entries.len();
        let size = 1usize << stride;
        if base + size > MAX_ENTRIES {
            return Err(too_big(self.spec, base + size));
        }
        self.entries.resize(base + size, inherited);
        // Sorted order puts a prefix before the prefixes it contains, so
        // painting in order leaves the longest match in every entry (capture).
        for &(addr, plen, label) in &self.prefixes[lo..hi] {
            if plen as u32 <= end {
                let first = base + addr.chunk(depth, stride) as usize;
                self.entries[first..first + (1usize << (end - plen as u32))].fill(label);
            }
        }
        let mut i = lo;
        while i < hi {
            if self.prefixes[i].1 as u32 <= end {
                i += 1;
                continue;
            }
            // INVARIANT: prefixes of this block that end in this node sort
            // before the longer ones, so the rest of the group is all longer.
            let j = group_end(self.prefixes, i, hi, depth, stride);
            let slot = base + self.prefixes[i].0.chunk(depth, stride) as usize;
            let ptr = self.node(end, i, j, self.entries[slot], level + 1)?;
            self.entries[slot] = ptr;
            i = j;
        }
        Ok(child_ptr(stride, base as u32))
    }

    fn packed_node(
        &mut self,
        depth: u32,
        stride: u32,
        lo: usize,
        hi: usize,
        inherited: u32,
        level: usize,
    ) -> Result<u32, BuildError> {
        let end = depth + stride;
        let line = self.packed.len();
        if line >= MAX_ENTRIES {
            return Err(too_big(self.spec, line));
        }
        self.packed.push(PackedLine([u32::MAX; 16]));
        let prefixes = self.prefixes;
        let value_at = |index: u32| {
            let mut value = inherited;
            for &(addr, plen, label) in &prefixes[lo..hi] {
                if plen as u32 <= end {
                    let first = addr.chunk(depth, stride);
                    if index >= first && index - first < 1 << (end - plen as u32) {
                        value = label;
                    }
                }
            }
            value
        };
        let mut bounds = vec![0u32];
        let mut children = Vec::new();
        let mut i = lo;
        while i < hi {
            let (addr, plen, _) = prefixes[i];
            if plen as u32 <= end {
                let first = addr.chunk(depth, stride);
                bounds.push(first);
                bounds.push(first + (1 << (end - plen as u32)));
                i += 1;
                continue;
            }
            let j = group_end(prefixes, i, hi, depth, stride);
            let index = addr.chunk(depth, stride);
            let ptr = self.node(end, i, j, value_at(index), level + 1)?;
            children.push((index, ptr));
            bounds.push(index);
            bounds.push(index + 1);
            i = j;
        }
        bounds.retain(|&b| b < 1 << stride);
        bounds.sort_unstable();
        bounds.dedup();
        let mut runs: Vec<(u32, u32)> = Vec::with_capacity(PACKED_RUNS);
        for &b in &bounds {
            let value = match children.binary_search_by_key(&b, |c| c.0) {
                Ok(at) => children[at].1,
                Err(_) => value_at(b),
            };
            if runs.last().map(|r| r.1) != Some(value) {
                runs.push((b, value));
            }
        }
        if runs.len() > PACKED_RUNS {
            return Err(BuildError::Limit {
                engine: self.spec.to_string(),
                why: format!(
                    "a packed node needs {} runs, more than {PACKED_RUNS} (a bug in the plan)",
                    runs.len()
                ),
            });
        }
        let words = &mut self.packed[line].0;
        words[0] = stride;
        for (at, &(first, value)) in runs.iter().enumerate() {
            if at > 0 {
                words[at] = first;
            }
            words[8 + at] = value;
        }
        Ok(child_ptr(0, line as u32))
    }
}

impl<A: CpeAddr> LeafTrie<A> {
    /// Lookup in a trie without packed nodes: follow pointers to the first
    /// leaf.
    // PERF: rnd keys, 2026-11-22, each against dir24-8 in the same run:
    // walking every level without data-dependent branches (cmov, a finished
    // walk re-reading its leaf) ran cpe:levels=2 at 0.45x dir24-8 against
    // 0.26x for this loop in an earlier run, but IPv6 tries of 10 levels at
    // 8.6 Mlps against 73.6 for this loop (`fibkit bench`, dfz-v6-nh); the
    // root read by one shift, then this loop, measured 0.35x (examples/
    // cpe_ab) where this loop measured 0.55x. On IPv4 the differences are
    // within the noise of the shared machine; the plain loop is kept. An
    // 8-lane interleaved batch lookup measured slower than the plain loop.
    #[inline]
    fn lookup_unpacked(&self, addr: A) -> Option<Label> {
        let mut ptr = self.root;
        let mut depth = 0;
        loop {
            let stride = (ptr >> STRIDE_SHIFT) & 31;
            let base = (ptr & BASE_MASK) as usize;
            let entry = self.entries[base + addr.chunk(depth, stride) as usize];
            if entry & CHILD == 0 {
                return self.labels[entry as usize];
            }
            depth += stride;
            ptr = entry;
        }
    }

    /// Batch lookup as a software pipeline over a sliding window: the root
    /// entry of key `i + 2 * WINDOW` is prefetched, the root entry of key
    /// `i + WINDOW` is read (and its child's entry prefetched), and key `i`
    /// finishes its walk from its root entry. Keys overlap their cache misses
    /// instead of waiting on each other's unpredictable branches.
    fn lookup_batch_prefetch(&self, addrs: &[A], out: &mut [Option<Label>]) {
        let root_stride = (self.root >> STRIDE_SHIFT) & 31;
        let root_base = (self.root & BASE_MASK) as usize;
        let entries = self.entries.as_ptr();
        let mut ring = [0u32; WINDOW];
        for &addr in addrs.iter().take(2 * WINDOW) {
            prefetch(entries.wrapping_add(root_base + addr.chunk(0, root_stride) as usize));
        }
        for (i, &addr) in addrs.iter().enumerate().take(WINDOW) {
            ring[i] = self.root_step(addr, root_base, root_stride);
        }
        for i in 0..addrs.len() {
            if let Some(&ahead) = addrs.get(i + 2 * WINDOW) {
                prefetch(entries.wrapping_add(root_base + ahead.chunk(0, root_stride) as usize));
            }
            let mut entry = ring[i % WINDOW];
            if let Some(&next) = addrs.get(i + WINDOW) {
                ring[i % WINDOW] = self.root_step(next, root_base, root_stride);
            }
            let addr = addrs[i];
            let mut depth = root_stride;
            while entry & CHILD != 0 {
                let stride = (entry >> STRIDE_SHIFT) & 31;
                let base = (entry & BASE_MASK) as usize;
                entry = self.entries[base + addr.chunk(depth, stride) as usize];
                depth += stride;
            }
            out[i] = self.labels[entry as usize];
        }
    }

    /// Reads `addr`'s root entry and, if it points to a child, prefetches
    /// the child's entry.
    #[inline(always)]
    fn root_step(&self, addr: A, root_base: usize, root_stride: u32) -> u32 {
        let entry = self.entries[root_base + addr.chunk(0, root_stride) as usize];
        if entry & CHILD != 0 {
            let stride = (entry >> STRIDE_SHIFT) & 31;
            let base = (entry & BASE_MASK) as usize;
            prefetch(
                self.entries
                    .as_ptr()
                    .wrapping_add(base + addr.chunk(root_stride, stride) as usize),
            );
        }
        entry
    }

    /// Finds the entries `prefix` expands into (or the leaf entry whose
    /// block holds it) and rebuilds them and everything below.
    fn rebuild_for(&mut self, rib: &Rib<A>, prefix: Prefix<A>) -> Result<(), BuildError> {
        let plen = prefix.plen() as u32;
        let addr = prefix.addr();
        let mut ptr = self.root;
        let mut depth = 0u32;
        let mut level = 0;
        let (first, count, lo, hi) = loop {
            let stride = (ptr >> STRIDE_SHIFT) & 31;
            let base = ptr & BASE_MASK;
            let index = addr.chunk(depth, stride);
            if plen <= depth + stride {
                break (
                    index,
                    1u32 << (depth + stride - plen),
                    prefix.first(),
                    prefix.last(),
                );
            }
            let entry = self.entries[(base + index) as usize];
            if entry & CHILD == 0 {
                let end = (depth + stride) as u8;
                let lo = addr.masked(end);
                break (index, 1, lo, lo.with_host_bits_set(end));
            }
            depth += stride;
            ptr = entry;
            level += 1;
        };
        let mut ranges = std::mem::take(&mut self.ranges);
        ranges.clear();
        rib.ranges_in(lo, hi, true, &mut ranges);
        let stride = (ptr >> STRIDE_SHIFT) & 31;
        let result = self.fill(
            depth,
            stride,
            ptr & BASE_MASK,
            first,
            count,
            lo,
            &ranges,
            level,
        );
        self.ranges = ranges;
        result
    }

    /// Rewrites entries `first..first + count` of the node at `depth`
    /// (stride `stride`, entries from `base`) whose blocks start at address
    /// `lo`, from `ranges`, which cover exactly those blocks: a block inside
    /// one range becomes a label, any other a child node (the old child
    /// reused, or a new node of [`NEW_NODE_STRIDE`] bits).
    #[allow(clippy::too_many_arguments)]
    fn fill(
        &mut self,
        depth: u32,
        stride: u32,
        base: u32,
        first: u32,
        count: u32,
        lo: A,
        ranges: &[Range<A>],
        level: u32,
    ) -> Result<(), BuildError> {
        let end = depth + stride;
        let block = 1u128 << (A::BITS as u32 - end);
        let mut r = 0;
        for i in 0..count {
            let block_lo = lo.to_u128() + i as u128 * block;
            let block_hi = A::from_u128(block_lo + (block - 1));
            while ranges[r].last < A::from_u128(block_lo) {
                r += 1;
            }
            let slot = (base + first + i) as usize;
            let old = self.entries[slot];
            if ranges[r].last >= block_hi {
                if old & CHILD != 0 {
                    self.free_subtree(old);
                }
                self.entries[slot] = self.label_index(ranges[r].label)?;
                continue;
            }
            let mut last = r;
            while ranges[last].last < block_hi {
                last += 1;
            }

            let (child_stride, child_base) = if old & CHILD != 0 {
                ((old >> STRIDE_SHIFT) & 31, old & BASE_MASK)
            } else {
                let child_stride = NEW_NODE_STRIDE.min(A::BITS as u32 - end);
                (child_stride, self.alloc(child_stride)?)
            };
            self.height = self.height.max(level + 2);
            self.fill(
                end,
                child_stride,
                child_base,
                0,
                1 << child_stride,
                A::from_u128(block_lo),
                &ranges[r..=last],
                level + 1,
            )?;
            self.entries[slot] = child_ptr(child_stride, child_base);
            r = last;
        }
        Ok(())
    }

    fn label_index(&mut self, label: Option<Label>) -> Result<u32, BuildError> {
        let Some(label) = label else { return Ok(0) };
        let index = self.table.intern(label) + 1;
        if index as usize == self.labels.len() {
            if index >= CHILD {
                return Err(BuildError::Limit {
                    engine: self.spec.clone(),
                    why: "more than 2^31 - 2 distinct labels".to_string(),
                });
            }
            self.labels.push(Some(label));
        }
        Ok(index)
    }

    fn alloc(&mut self, stride: u32) -> Result<u32, BuildError> {
        self.nodes += 1;
        if let Some(base) = self.free[stride as usize].pop() {
            // A freed node still holds its old pointers, which `fill` would
            // take for children to reuse.
            self.entries[base as usize..base as usize + (1usize << stride)].fill(0);
            return Ok(base);
        }
        let base = self.entries.len();
        let size = 1usize << stride;
        if base + size > MAX_ENTRIES {
            return Err(too_big(&self.spec, base + size));
        }
        self.entries.resize(base + size, 0);
        Ok(base as u32)
    }

    fn free_subtree(&mut self, ptr: u32) {
        let stride = (ptr >> STRIDE_SHIFT) & 31;
        let base = (ptr & BASE_MASK) as usize;
        for slot in base..base + (1usize << stride) {
            let entry = self.entries[slot];
            if entry & CHILD != 0 {
                self.free_subtree(entry);
            }
        }
        self.free[stride as usize].push(base as u32);
        self.nodes -= 1;
    }

    /// Lookup through packed and full nodes, leaving at the first leaf.
    #[inline]
    fn lookup_packed(&self, addr: A) -> Option<Label> {
        let mut ptr = self.root;
        let mut depth = 0;
        loop {
            let mut stride = (ptr >> STRIDE_SHIFT) & 31;
            let base = (ptr & BASE_MASK) as usize;
            let entry = if stride != 0 {
                self.entries[base + addr.chunk(depth, stride) as usize]
            } else {
                let line = &self.packed[base];
                stride = line.0[0];
                line.find(addr.chunk(depth, stride))
            };
            if entry & CHILD == 0 {
                return self.labels[entry as usize];
            }
            depth += stride;
            ptr = entry;
        }
    }

    /// Builds the trie for `rib` with the given stride choices.
    pub(crate) fn build(rib: &Rib<A>, strides: Strides, spec: &str) -> Result<Self, BuildError> {
        let mut table = LabelTable::new();
        let prefixes = labelled_prefixes(rib, &mut table);
        if table.len() >= (CHILD - 1) as usize {
            return Err(BuildError::Limit {
                engine: spec.to_string(),
                why: "more than 2^31 - 2 distinct labels".to_string(),
            });
        }
        let mut builder = LeafBuilder {
            prefixes: &prefixes,
            entries: Vec::new(),
            packed: Vec::new(),
            strides,
            spec,
            nodes: 0,
            height: 0,
        };
        let root = builder.node(0, 0, prefixes.len(), 0, 0)?;
        let LeafBuilder {
            mut entries,
            mut packed,
            nodes,
            height,
            ..
        } = builder;
        packed.shrink_to_fit();
        // Headroom for nodes added by updates (see `NopushTrie::build`).
        entries.shrink_to_fit();
        entries.reserve_exact(entries.len() / 16 + (1 << 12));
        Ok(LeafTrie {
            root,
            entries,
            packed,
            labels: label_slots(&table),
            spec: spec.to_string(),
            nodes,
            height: height as u32,
            free: vec![Vec::new(); 33],
            table,
            ranges: Vec::new(),
            _family: std::marker::PhantomData,
        })
    }
}

/// A non-leaf-pushed multibit trie: every entry holds a pointer and the
/// label of the longest prefix expanded into it within its node.
#[derive(Clone)]
pub struct NopushTrie<A> {
    root: u32,
    /// `[pointer, label index]` per entry: one 8-byte read per node visited.
    entries: Vec<[u32; 2]>,
    labels: Vec<Option<Label>>,
    spec: String,
    // Update state, not touched by lookups.
    /// Length + 1 of the prefix whose label an entry holds (0: none).
    plens: Vec<u8>,
    /// Levels of the longest path (updates may add levels).
    height: u32,
    /// Per node base: (stride, entries holding a label or a pointer).
    nodes: HashMap<u32, (u8, u32)>,
    /// Free node slots by stride.
    free: Vec<Vec<u32>>,
    table: LabelTable,
    _family: std::marker::PhantomData<A>,
}

impl<A: CpeAddr> LegacyEngine<A> for NopushTrie<A> {
    const NAMES: &'static [&'static str] = &["cpe"];

    fn name(&self) -> String {
        self.spec.clone()
    }

    fn build(spec: &crate::spec::EngineSpec, rib: &Rib<A>) -> Result<Self, BuildError> {
        match super::build(spec, rib)? {
            super::CpeTrie::Nopush(trie) => Ok(trie),
            _ => Err(spec.error("built the other kind of CPE trie".to_string())),
        }
    }

    fn memory_bytes(&self) -> usize {
        self.entries.len() * 8 + self.labels.len() * std::mem::size_of::<Option<Label>>()
    }

    #[inline]
    fn lookup(&self, addr: A) -> Option<Label> {
        let mut ptr = self.root;
        let mut depth = 0;
        let mut best = 0;
        loop {
            let stride = (ptr >> STRIDE_SHIFT) & 31;
            let base = (ptr & BASE_MASK) as usize;
            let [child, label] = self.entries[base + addr.chunk(depth, stride) as usize];
            // Section 5.1: remember the last prefix seen beside the path.
            if label != 0 {
                best = label;
            }
            if child & CHILD == 0 {
                break;
            }
            depth += stride;
            ptr = child;
        }
        self.labels[best as usize]
    }

    fn update(&mut self, rib: &Rib<A>, changed: &[Prefix<A>]) -> Result<(), BuildError> {
        for &prefix in changed {
            let label = rib.get(prefix).map(|label| self.intern(label));
            self.apply(rib, prefix, label)?;
        }
        Ok(())
    }

    fn stats(&self) -> Vec<(String, String)> {
        let free: usize = self.free.iter().map(|f| f.len()).sum();
        vec![
            ("multibit nodes".to_string(), self.nodes.len().to_string()),
            ("free node slots".to_string(), free.to_string()),
            (
                "levels of the longest path".to_string(),
                self.height.to_string(),
            ),
            ("entries".to_string(), self.entries.len().to_string()),
            (
                "root stride".to_string(),
                ((self.root >> STRIDE_SHIFT) & 31).to_string(),
            ),
            (
                "distinct labels".to_string(),
                (self.labels.len() - 1).to_string(),
            ),
            (
                "update state bytes".to_string(),
                (self.plens.len() + self.nodes.len() * 16).to_string(),
            ),
        ]
    }
}

struct NopushBuilder<'a, A> {
    prefixes: &'a [(A, u8, u32)],
    entries: Vec<[u32; 2]>,
    plens: Vec<u8>,
    nodes: HashMap<u32, (u8, u32)>,
    strides: Strides,
    spec: &'a str,
    height: usize,
}

impl<A: CpeAddr> NopushBuilder<'_, A> {
    fn node(&mut self, depth: u32, lo: usize, hi: usize, level: usize) -> Result<u32, BuildError> {
        let (stride, _) = self.strides.next(level, self.spec)?;
        let stride = stride as u32;
        self.height = self.height.max(level + 1);
        let end = depth + stride;
        let base = self.entries.len();
        let size = 1usize << stride;
        if base + size > MAX_ENTRIES {
            return Err(too_big(self.spec, base + size));
        }
        self.entries.resize(base + size, [0, 0]);
        self.plens.resize(base + size, 0);
        for &(addr, plen, label) in &self.prefixes[lo..hi] {
            if plen as u32 <= end {
                let first = base + addr.chunk(depth, stride) as usize;
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
            let slot = base + self.prefixes[i].0.chunk(depth, stride) as usize;
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

impl<A: CpeAddr> NopushTrie<A> {
    /// Builds the trie for `rib` with the given stride choices.
    pub(crate) fn build(rib: &Rib<A>, strides: Strides, spec: &str) -> Result<Self, BuildError> {
        let mut table = LabelTable::new();
        let prefixes = labelled_prefixes(rib, &mut table);
        let mut builder = NopushBuilder {
            prefixes: &prefixes,
            entries: Vec::new(),
            plens: Vec::new(),
            nodes: HashMap::new(),
            strides,
            spec,
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
        Ok(NopushTrie {
            root,
            entries,
            labels: label_slots(&table),
            spec: spec.to_string(),
            plens,
            height: height as u32,
            nodes,
            free: vec![Vec::new(); 33],
            table,
            _family: std::marker::PhantomData,
        })
    }

    fn intern(&mut self, label: Label) -> u32 {
        let index = self.table.intern(label) + 1;
        if index as usize == self.labels.len() {
            self.labels.push(Some(label));
        }
        index
    }

    /// A zeroed node of `stride` bits: a free slot or new entries.
    fn alloc(&mut self, stride: u32) -> Result<u32, BuildError> {
        let base = match self.free[stride as usize].pop() {
            Some(base) => base,
            None => {
                let base = self.entries.len();
                let size = 1usize << stride;
                if base + size > MAX_ENTRIES {
                    return Err(too_big(&self.spec, base + size));
                }
                self.entries.resize(base + size, [0, 0]);
                self.plens.resize(base + size, 0);
                base as u32
            }
        };
        self.nodes.insert(base, (stride as u8, 0));
        Ok(base)
    }

    /// Counts entry `slot` of node `base` becoming used (+1) or unused (-1).
    fn count(&mut self, base: u32, was_used: bool, slot: usize) {
        let now_used = self.entries[slot] != [0, 0];
        if was_used != now_used {
            if let Some(node) = self.nodes.get_mut(&base) {
                if now_used {
                    node.1 += 1;
                } else {
                    node.1 -= 1;
                }
            }
        }
    }

    /// Section 5.1 "Insertion and Deletion": finds the node `prefix` expands
    /// into (adding nodes on the way for an insert) and rewrites its
    /// expansion there: an insert or relabel takes every entry not captured
    /// by a longer prefix; a delete hands the entries it held to the next
    /// shorter prefix expanded into the same node. Emptied nodes are freed.
    fn apply(
        &mut self,
        rib: &Rib<A>,
        prefix: Prefix<A>,
        label: Option<u32>,
    ) -> Result<(), BuildError> {
        let plen = prefix.plen() as u32;
        let addr = prefix.addr();
        let mut path: Vec<(u32, usize)> = Vec::new(); // (node base, slot) of pointers followed
        let mut ptr = self.root;
        let mut depth = 0u32;
        let mut min_len = 0u32;
        loop {
            let stride = (ptr >> STRIDE_SHIFT) & 31;
            let base = ptr & BASE_MASK;
            if plen <= depth + stride {
                break;
            }
            let slot = base as usize + addr.chunk(depth, stride) as usize;
            let mut child = self.entries[slot][0];
            if child & CHILD == 0 {
                if label.is_none() {
                    return Ok(()); // nothing of this prefix was ever here
                }
                let child_depth = depth + stride;
                let child_stride = NEW_NODE_STRIDE.min(A::BITS as u32 - child_depth);
                let child_base = self.alloc(child_stride)?;
                child = child_ptr(child_stride, child_base);
                let was_used = self.entries[slot] != [0, 0];
                self.entries[slot][0] = child;
                self.count(base, was_used, slot);
            }
            path.push((base, slot));
            self.height = self.height.max(path.len() as u32 + 1);
            depth += stride;
            min_len = depth + 1;
            ptr = child;
        }
        let stride = (ptr >> STRIDE_SHIFT) & 31;
        let base = ptr & BASE_MASK;
        let first = base as usize + addr.chunk(depth, stride) as usize;
        let last = first + (1usize << (depth + stride - plen));
        let own = plen as u8 + 1;
        let (new_label, new_plen, replace_if): (u32, u8, fn(u8, u8) -> bool) = match label {
            Some(label) => (label, own, |old, own| old <= own),
            None => {
                // The next shorter prefix expanded into this node, if any.
                let shorter = (min_len..plen).rev().find_map(|len| {
                    rib.get(Prefix::new_masked(addr, len as u8))
                        .map(|l| (l, len as u8 + 1))
                });
                match shorter {
                    Some((l, p)) => (self.intern(l), p, |old, own| old == own),
                    None => (0, 0, |old, own| old == own),
                }
            }
        };
        for slot in first..last {
            if replace_if(self.plens[slot], own) {
                let was_used = self.entries[slot] != [0, 0];
                self.entries[slot][1] = new_label;
                self.plens[slot] = new_plen;
                self.count(base, was_used, slot);
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
            self.nodes.remove(&base);
            self.free[stride as usize].push(base);
            let was_used = self.entries[slot] != [0, 0];
            self.entries[slot][0] = 0;
            self.count(parent, was_used, slot);
            base = parent;
        }
        Ok(())
    }
}
