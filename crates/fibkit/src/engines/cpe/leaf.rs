//! The leaf-pushed multibit trie: every entry is a label index or a pointer
//! to a child node (layout in the module header, `mod.rs`). Lookup first,
//! then build and update.

use std::marker::PhantomData;

use super::build::{group_end, labelled_prefixes, too_big, FreeNodes, Shape, Strides};
use super::{
    child_base, child_ptr, child_stride, is_child, results_bytes, CpeConfig, CpeStats, MAX_ENTRIES,
    MAX_LABELS,
};
use crate::addr::Addr;
use crate::engine::{BuildError, Lookup};
use crate::engines::shared::prefetch;
use crate::labels::{LabelIndex, LabelSlot};
use crate::prefix::{Label, Prefix};
use crate::rib::{Range, Rib};
use crate::storage::{Owned, Plain, Storage};

/// A packed node: one cache line holding up to [`PACKED_RUNS`] runs of equal
/// entries. Word 0 is the stride, words 1..=6 the first index of runs 1..=6
/// (unused: `u32::MAX`; run 0 starts at 0), words 8..=14 the runs' entries.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub struct PackedLine(pub(super) [u32; 16]);

// SAFETY: sixteen u32 words and nothing else: 64 bytes, no padding, every
// bit pattern a value (lookups read any word as an index into arrays they
// check).
unsafe impl Plain for PackedLine {}

/// Runs a packed leaf-pushed node holds.
pub(crate) const PACKED_RUNS: usize = 7;
const _: () = assert!(std::mem::size_of::<PackedLine>() == 64);

impl PackedLine {
    /// The stride of the node.
    #[inline(always)]
    fn stride(&self) -> u32 {
        self.0[0]
    }

    /// The entry covering `index`: branch-free count of run starts `<= index`.
    #[inline]
    pub(super) fn find(&self, index: u32) -> u32 {
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
// PERF: `fibkit bench` dfz-v4-nh, rnd, batch, medians of 5, three
// runs: `cpe:strides=20+4+8` at 64 keys 108/126/121 Mlps against 101/114/98
// at 32 and 79/83 at 16 (dir24-8 58/62/67 in the same runs). A third stage
// (reading the second level `WINDOW` keys ahead, prefetching the third) ran
// 159 against 177 Mlps for two stages in one run (both 16 keys): dropped.
// A branch-free root step (always prefetch, select the second-level read by
// a conditional move) ran 124 against 154 Mlps for `cpe:levels=2`: dropped.
const WINDOW: usize = 64;

/// The lookup snapshot of a leaf-pushed trie: the root's pointer word, the
/// node entries, the packed lines and the results, in storage `S`.
pub struct LeafTrie<A, S: Storage = Owned> {
    /// Pointer word of the root (its stride; base 0).
    pub(super) root: u32,
    pub(super) entries: S::Array<u32>,
    pub(super) packed: S::Array<PackedLine>,
    pub(super) results: S::Array<LabelSlot>,
    pub(super) _family: PhantomData<fn() -> A>,
}

impl<A, S: Storage> Clone for LeafTrie<A, S> {
    fn clone(&self) -> Self {
        LeafTrie {
            root: self.root,
            entries: self.entries.clone(),
            packed: self.packed.clone(),
            results: self.results.clone(),
            _family: PhantomData,
        }
    }

    /// Reuses this snapshot's arrays instead of allocating new ones.
    fn clone_from(&mut self, source: &Self) {
        self.root = source.root;
        self.entries.clone_from(&source.entries);
        self.packed.clone_from(&source.packed);
        self.results.clone_from(&source.results);
    }
}

impl<A: Addr, S: Storage> Lookup<A> for LeafTrie<A, S> {
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
            self.lookup_each(addrs, out);
        }
    }

    fn lookup_each(&self, addrs: &[A], out: &mut [Option<Label>]) {
        assert!(out.len() >= addrs.len(), "output slice shorter than input");
        if self.packed.is_empty() {
            for (addr, result) in addrs.iter().zip(out.iter_mut()) {
                *result = self.lookup_unpacked(*addr);
            }
        } else {
            for (addr, result) in addrs.iter().zip(out.iter_mut()) {
                *result = self.lookup_packed(*addr);
            }
        }
    }

    fn memory_bytes(&self) -> usize {
        self.entries.len() * 4
            + self.packed.len() * std::mem::size_of::<PackedLine>()
            + results_bytes(self.results.len())
    }
}

impl<A: Addr, S: Storage> LeafTrie<A, S> {
    /// The root's pointer word and the node entries, for the performance
    /// model's walk (`model::cpe`); `None` when sparse nodes are packed.
    pub(crate) fn unpacked_nodes(&self) -> Option<(u32, &[u32])> {
        self.packed
            .is_empty()
            .then_some((self.root, &self.entries[..]))
    }

    /// Lookup in a trie without packed nodes: follow pointers to the first
    /// leaf.
    // PERF: rnd keys, each against dir24-8 in the same run:
    // walking every level without data-dependent branches (cmov, a finished
    // walk re-reading its leaf) ran cpe:levels=2 at 0.45x dir24-8 against
    // 0.26x for this loop in an earlier run, but IPv6 tries of 10 levels at
    // 8.6 Mlps against 73.6 for this loop (`fibkit bench`, dfz-v6-nh); the
    // root read by one shift, then this loop, measured 0.35x (examples/
    // cpe_ab) where this loop measured 0.55x. On IPv4 the differences are
    // within the noise of the shared machine; the plain loop is kept.
    #[inline]
    fn lookup_unpacked(&self, addr: A) -> Option<Label> {
        let mut ptr = self.root;
        let mut depth = 0;
        loop {
            let stride = child_stride(ptr);
            let entry = self.entries[child_base(ptr) + addr.bits(depth, stride) as usize];
            if !is_child(entry) {
                return self.results[entry as usize].get();
            }
            depth += stride;
            ptr = entry;
        }
    }

    /// Lookup through packed and full nodes, leaving at the first leaf.
    #[inline]
    fn lookup_packed(&self, addr: A) -> Option<Label> {
        let mut ptr = self.root;
        let mut depth = 0;
        loop {
            let mut stride = child_stride(ptr);
            let entry = if stride != 0 {
                self.entries[child_base(ptr) + addr.bits(depth, stride) as usize]
            } else {
                let line = &self.packed[child_base(ptr)];
                stride = line.stride();
                line.find(addr.bits(depth, stride))
            };
            if !is_child(entry) {
                return self.results[entry as usize].get();
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
        let root_stride = child_stride(self.root);
        let root = self.entries.as_ptr().wrapping_add(child_base(self.root));
        let mut ring = [0u32; WINDOW];
        for &addr in addrs.iter().take(2 * WINDOW) {
            prefetch(root.wrapping_add(addr.bits(0, root_stride) as usize));
        }
        for (i, &addr) in addrs.iter().enumerate().take(WINDOW) {
            ring[i] = self.root_step(addr);
        }
        for i in 0..addrs.len() {
            if let Some(&ahead) = addrs.get(i + 2 * WINDOW) {
                prefetch(root.wrapping_add(ahead.bits(0, root_stride) as usize));
            }
            let mut entry = ring[i % WINDOW];
            if let Some(&next) = addrs.get(i + WINDOW) {
                ring[i % WINDOW] = self.root_step(next);
            }
            let addr = addrs[i];
            let mut depth = root_stride;
            while is_child(entry) {
                let stride = child_stride(entry);
                entry = self.entries[child_base(entry) + addr.bits(depth, stride) as usize];
                depth += stride;
            }
            out[i] = self.results[entry as usize].get();
        }
    }

    /// Reads `addr`'s root entry and, if it points to a child, prefetches
    /// the child's entry.
    #[inline(always)]
    fn root_step(&self, addr: A) -> u32 {
        let root_stride = child_stride(self.root);
        let entry = self.entries[child_base(self.root) + addr.bits(0, root_stride) as usize];
        if is_child(entry) {
            let index = child_base(entry) + addr.bits(root_stride, child_stride(entry)) as usize;
            prefetch(self.entries.as_ptr().wrapping_add(index));
        }
        entry
    }
}

/// What a build costs, in a patch's units of work (an entry written or a
/// range read, about 30 ns each as a batch of short prefixes patched
/// dfz-v4-nh): `PREFIX_WORK` per prefix, for the stride program and the
/// labels (dfz-v4-nh, 1.7 million entries and 0.9 million prefixes,
/// builds in 1.0–1.1 s), and one per `ENTRY_SHARE` entries, since a
/// patch spends about three times a build's time per entry it writes (an
/// undo record, a range search per block; profiled on tables of few
/// prefixes and many entries). A batch is built from scratch once its
/// patch has done a build's work, so no batch costs more than about two
/// builds, and one a patch finishes sooner is patched.
const PREFIX_WORK: usize = 32;
/// See [`PREFIX_WORK`].
const ENTRY_SHARE: usize = 4;

/// The build state of a leaf-pushed trie: the layout updates keep, the
/// label index, free nodes and the bookkeeping behind the statistics.
#[derive(Clone, Debug)]
pub struct LeafUpdater<A> {
    pub(super) shape: Shape,
    labels: LabelIndex,
    free: FreeNodes,
    /// Nodes in use.
    nodes: usize,
    /// Levels of the longest path.
    height: u32,
    /// Whether the trie has packed nodes (then updates rebuild it).
    packed: bool,
    /// Scratch range view of the block being rebuilt.
    ranges: Vec<Range<A>>,
    /// `(slot, old entry)` of every entry the update in progress wrote.
    undo: Vec<(u32, u32)>,
    /// The length of `undo` past which the prefix being patched has spent
    /// the batch's budget: `fill` stops there, since one short prefix can
    /// rewrite a subtree several builds' work deep.
    undo_limit: usize,
}

impl<A: Addr> LeafUpdater<A> {
    /// Builds the trie for `rib` with the given stride choices.
    pub(super) fn build(
        config: &CpeConfig,
        rib: &Rib<A>,
        strides: Strides,
    ) -> Result<(Self, LeafTrie<A>), BuildError> {
        let mut labels = LabelIndex::new(config, MAX_LABELS);
        let prefixes = labelled_prefixes(rib, &mut labels)?;
        let shape = Shape::new(config, &strides);
        let mut builder = LeafBuilder {
            prefixes: &prefixes,
            entries: Vec::new(),
            packed: Vec::new(),
            strides,
            config,
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
        // Headroom for nodes added by updates: growing the array copies it
        // (milliseconds on a full table), which would be an update's worst
        // case. Untouched capacity costs no physical memory.
        entries.shrink_to_fit();
        entries.reserve_exact(entries.len() / 16 + (1 << 12));
        let mut trie: LeafTrie<A> = LeafTrie {
            root,
            entries,
            packed,
            results: Vec::new(),
            _family: PhantomData,
        };
        labels.sync(&mut trie.results);
        let updater = LeafUpdater {
            shape,
            labels,
            free: FreeNodes::new(A::BITS),
            nodes,
            height: height as u32,
            packed: !trie.packed.is_empty(),
            ranges: Vec::new(),
            undo: Vec::new(),
            undo_limit: usize::MAX,
        };
        Ok((updater, trie))
    }

    /// Whether updates patch the trie (packed tries are rebuilt whole).
    pub(super) fn patches(&self) -> bool {
        !self.packed
    }

    /// Rebuilds, from the reference table's range view, the entries of the
    /// node each changed prefix expands into and the subtrees below them
    /// (reusing their nodes). All or nothing: on an error (a limit) the
    /// trie and this updater are put back as they were before the batch
    /// (labels indexed meanwhile stay in the index, unused).
    ///
    /// With `budgeted`, a batch whose work would pass what a build costs
    /// ([`PREFIX_WORK`], [`ENTRY_SHARE`]) stops, puts the trie back as for
    /// an error and answers `Ok(false)`, for the caller to build the table
    /// from scratch. Short prefixes rewrite whole subtrees each, so large
    /// batches with short prefixes among them, patched one prefix at a
    /// time, cost up to 21 times a build on IPv4 and 40 times on IPv6
    /// (docs/bench/cpe.md, "Large batches built from scratch").
    pub(super) fn update(
        &mut self,
        trie: &mut LeafTrie<A>,
        rib: &Rib<A>,
        changed: &[Prefix<A>],
        budgeted: bool,
    ) -> Result<bool, BuildError> {
        if self.packed {
            return Err(BuildError::UpdateUnsupported {
                engine: self.shape.config.to_string(),
            });
        }
        let (entries, nodes, height) = (trie.entries.len(), self.nodes, self.height);
        let budget = if budgeted {
            entries / ENTRY_SHARE + PREFIX_WORK * rib.len()
        } else {
            usize::MAX
        };
        let (mut result, mut work) = (Ok(true), 0);
        // The default route is results slot 0, in no entry.
        for &prefix in crate::engines::shared::without_default(changed) {
            result = self.rebuild_for(trie, rib, prefix, &mut work, budget);
            if !matches!(result, Ok(true)) {
                break;
            }
        }
        if !matches!(result, Ok(true)) {
            for (slot, old) in self.undo.drain(..).rev() {
                trie.entries[slot as usize] = old;
            }
            trie.entries.truncate(entries);
            self.free.rollback();
            (self.nodes, self.height) = (nodes, height);
            return result;
        }
        self.undo.clear();
        self.free.commit();
        self.labels.set_default(rib.default_route());
        self.labels.sync(&mut trie.results);
        Ok(true)
    }

    /// Writes `entry` to `slot`, remembering the old entry for a rollback.
    fn write(&mut self, trie: &mut LeafTrie<A>, slot: usize, entry: u32) {
        self.undo.push((slot as u32, trie.entries[slot]));
        trie.entries[slot] = entry;
    }

    pub(super) fn stats(&self, trie: &LeafTrie<A>) -> CpeStats {
        let free_nodes = self.free.len();
        CpeStats {
            leaf_pushed: true,
            nodes: self.nodes,
            packed_nodes: trie.packed.len(),
            free_nodes,
            height: self.height,
            max_entries: self.shape.max_entries,
            entries: trie.entries.len(),
            root_stride: child_stride(trie.root),
            labels: self.labels.len(),
            update_state_bytes: free_nodes * 4,
        }
    }

    /// Finds the entries `prefix` expands into (or the leaf entry whose
    /// block holds it) and rebuilds them and everything below. `work`
    /// counts the batch's entries written and ranges read so far;
    /// `Ok(false)` (without writing) once it would pass `budget`.
    fn rebuild_for(
        &mut self,
        trie: &mut LeafTrie<A>,
        rib: &Rib<A>,
        prefix: Prefix<A>,
        work: &mut usize,
        budget: usize,
    ) -> Result<bool, BuildError> {
        let plen = prefix.plen() as u32;
        let addr = prefix.addr();
        let mut ptr = trie.root;
        let mut depth = 0u32;
        let mut level = 0;
        let (first, count, lo, hi) = loop {
            let stride = child_stride(ptr);
            let index = addr.bits(depth, stride);
            if plen <= depth + stride {
                break (
                    index,
                    1u32 << (depth + stride - plen),
                    prefix.first(),
                    prefix.last(),
                );
            }
            let entry = trie.entries[child_base(ptr) + index as usize];
            if !is_child(entry) {
                let end = (depth + stride) as u8;
                let lo = addr.masked(end);
                break (index, 1, lo, lo.with_host_bits_set(end));
            }
            depth += stride;
            ptr = entry;
            level += 1;
        };
        // The entries the prefix expands into are a lower bound of what it
        // writes; the subtrees below them count once written.
        if *work + count as usize > budget {
            return Ok(false);
        }
        let mut ranges = std::mem::take(&mut self.ranges);
        ranges.clear();
        rib.ranges_in_without_default(lo, hi, true, &mut ranges);
        // Nested prefixes read and rewrite the same blocks again: a batch
        // of short prefixes can cost more in its range views than in the
        // entries it leaves changed.
        let written = self.undo.len();
        self.undo_limit = written.saturating_add(budget.saturating_sub(*work + ranges.len()));
        let node = Node {
            depth,
            stride: child_stride(ptr),
            base: child_base(ptr) as u32,
            level,
        };
        let result = self.fill(trie, node, first, count, lo, &ranges);
        *work += ranges.len() + (self.undo.len() - written);
        self.ranges = ranges;
        result.map(|()| *work <= budget)
    }

    /// Rewrites entries `first..first + count` of `node`, whose blocks start
    /// at address `lo`, from `ranges`, which cover exactly those blocks: a
    /// block inside one range becomes a label, any other a child node (the
    /// old child reused, or a new node the layout allows).
    fn fill(
        &mut self,
        trie: &mut LeafTrie<A>,
        node: Node,
        first: u32,
        count: u32,
        lo: A,
        ranges: &[Range<A>],
    ) -> Result<(), BuildError> {
        let end = node.depth + node.stride;
        let block = 1u128 << (A::BITS as u32 - end);
        let mut r = 0;
        // The label index of range `labelled.0`: a range covers many
        // blocks, and hashing its label once per block made the index
        // most of a patch's time.
        let mut labelled = (usize::MAX, 0);
        for i in 0..count {
            // Past the budget: the caller counts the work written so far,
            // finds it over, and rolls the batch back.
            if self.undo.len() > self.undo_limit {
                return Ok(());
            }
            let block_lo = lo.to_u128() + i as u128 * block;
            let block_hi = A::from_u128(block_lo + (block - 1));
            while ranges[r].last < A::from_u128(block_lo) {
                r += 1;
            }
            let slot = node.base as usize + (first + i) as usize;
            let old = trie.entries[slot];
            if ranges[r].last >= block_hi {
                if is_child(old) {
                    self.free_subtree(trie, old);
                }
                if labelled.0 != r {
                    labelled = (r, self.labels.index(ranges[r].label)?);
                }
                let label = labelled.1;
                self.write(trie, slot, label);
                continue;
            }
            let mut last = r;
            while ranges[last].last < block_hi {
                last += 1;
            }
            let child = if is_child(old) {
                Node {
                    depth: end,
                    stride: child_stride(old),
                    base: child_base(old) as u32,
                    level: node.level + 1,
                }
            } else {
                let stride = self
                    .shape
                    .new_node_stride(node.level + 1, end, A::BITS as u32);
                Node {
                    depth: end,
                    stride,
                    base: self.alloc(trie, stride)?,
                    level: node.level + 1,
                }
            };
            self.height = self.height.max(child.level + 1);
            self.fill(
                trie,
                child,
                0,
                1 << child.stride,
                A::from_u128(block_lo),
                &ranges[r..=last],
            )?;
            self.write(trie, slot, child_ptr(child.stride, child.base));
            r = last;
        }
        Ok(())
    }

    /// A zeroed node of `stride` bits: a free one or new entries.
    fn alloc(&mut self, trie: &mut LeafTrie<A>, stride: u32) -> Result<u32, BuildError> {
        let size = 1usize << stride;
        if let Some(base) = self.free.take(stride) {
            // A freed node still holds its old pointers, which `fill` would
            // take for children to reuse. It was free before this update, so
            // a rollback need not restore them.
            trie.entries[base as usize..base as usize + size].fill(0);
            self.nodes += 1;
            return Ok(base);
        }
        let base = trie.entries.len();
        self.shape.check_entries(base + size)?;
        trie.entries.resize(base + size, 0);
        self.nodes += 1;
        Ok(base as u32)
    }

    fn free_subtree(&mut self, trie: &LeafTrie<A>, ptr: u32) {
        let stride = child_stride(ptr);
        let base = child_base(ptr);
        for slot in base..base + (1usize << stride) {
            let entry = trie.entries[slot];
            if is_child(entry) {
                self.free_subtree(trie, entry);
            }
        }
        self.free.give(stride, base as u32);
        self.nodes -= 1;
    }
}

/// A node of the trie as updates walk it.
#[derive(Clone, Copy, Debug)]
struct Node {
    /// Address bits above it.
    depth: u32,
    stride: u32,
    /// Its first entry.
    base: u32,
    /// 0 for the root.
    level: u32,
}

struct LeafBuilder<'a, A> {
    prefixes: &'a [(A, u8, u32)],
    entries: Vec<u32>,
    packed: Vec<PackedLine>,
    strides: Strides,
    config: &'a CpeConfig,
    nodes: usize,
    height: usize,
}

impl<A: Addr> LeafBuilder<'_, A> {
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
        let (stride, packed) = self.strides.next(level, self.config)?;
        let stride = stride as u32;
        let end = depth + stride;
        self.nodes += 1;
        self.height = self.height.max(level + 1);
        if packed {
            return self.packed_node(depth, stride, lo, hi, inherited, level);
        }
        let base = self.entries.len();
        let size = 1usize << stride;
        if base + size > self.config.max_entries() {
            return Err(too_big(self.config, (base + size) as u64));
        }
        self.entries.resize(base + size, inherited);
        // Sorted order puts a prefix before the prefixes it contains, so
        // painting in order leaves the longest match in every entry (capture).
        for &(addr, plen, label) in &self.prefixes[lo..hi] {
            if plen as u32 <= end {
                let first = base + addr.bits(depth, stride) as usize;
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
            let slot = base + self.prefixes[i].0.bits(depth, stride) as usize;
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
            return Err(too_big(self.config, line as u64));
        }
        self.packed.push(PackedLine([u32::MAX; 16]));
        let prefixes = self.prefixes;
        let value_at = |index: u32| {
            let mut value = inherited;
            for &(addr, plen, label) in &prefixes[lo..hi] {
                if plen as u32 <= end {
                    let first = addr.bits(depth, stride);
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
                let first = addr.bits(depth, stride);
                bounds.push(first);
                bounds.push(first + (1 << (end - plen as u32)));
                i += 1;
                continue;
            }
            let j = group_end(prefixes, i, hi, depth, stride);
            let index = addr.bits(depth, stride);
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
                engine: self.config.to_string(),
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

#[cfg(test)]
mod tests {
    use super::super::{CpeConfig, CpeTrie, CpeUpdater};
    use crate::engine::EngineConfig;
    use crate::engines::shared::testing::{assert_default_route_is_one_slot, nested_table};

    /// The entries and packed lines: all but the results.
    fn tables<A>(snapshot: &CpeTrie<A>) -> (u32, Vec<u32>, usize) {
        let CpeTrie::Leaf(trie) = snapshot else {
            unreachable!("a leaf-pushed spec builds a leaf-pushed trie")
        };
        (trie.root, trie.entries.clone(), trie.packed.len())
    }

    #[test]
    fn the_default_route_is_one_results_slot() {
        for spec in ["cpe:levels=3", "cpe:strides=16+8+8"] {
            let config = CpeConfig::parse(spec).unwrap();
            let rib = nested_table(0x0a01_0203u32);
            assert_default_route_is_one_slot::<u32, CpeUpdater<u32>, _>(&config, &rib, tables);
        }
        let config = CpeConfig::parse("cpe:levels=12").unwrap();
        let rib = nested_table(0x2001_0db8_0001_0002_0003_0004_0005_0006u128);
        assert_default_route_is_one_slot::<u128, CpeUpdater<u128>, _>(&config, &rib, tables);
    }
}

#[cfg(test)]
mod budget_tests {
    use super::super::{CpeConfig, CpeTrie, CpeUpdater};
    use crate::engine::{EngineConfig, Updater};
    use crate::prefix::Prefix;
    use crate::rib::Rib;

    /// One short prefix over thousands of longer ones rewrites a subtree
    /// worth several builds: its patch stops once it has written the
    /// batch's budget (the undo log stays near it), rolls back, and the
    /// table is built anew; the trie answers as the reference.
    #[test]
    fn a_short_prefix_stops_at_the_budget() {
        // Host routes in 3,000 distinct /16s: two nodes of 256 entries
        // each, about 500 entries per prefix.
        let pairs: Vec<(Prefix<u32>, u32)> = (0..3000u32)
            .map(|i| {
                let addr = 0x8000_0000 | i << 16 | (i.wrapping_mul(0x9e37) & 0xffff);
                (Prefix::new_masked(addr, 32), i % 40)
            })
            .collect();
        let mut rib = Rib::from_pairs(pairs);
        let config = CpeConfig::parse("cpe:strides=8+8+8+8").unwrap();
        let (CpeUpdater::Leaf(mut updater), CpeTrie::Leaf(mut trie)) =
            CpeUpdater::build(&config, &rib).unwrap()
        else {
            unreachable!("a leaf-pushed spec builds a leaf-pushed trie")
        };
        let before = trie.entries.clone();
        let short = Prefix::new_masked(0x8000_0000u32, 1);
        rib.insert(short, 41);
        let budget = trie.entries.len() / super::ENTRY_SHARE + super::PREFIX_WORK * rib.len();
        // Unbudgeted, the same patch writes several budgets' worth.
        let mut unbounded = (updater.clone(), trie.clone());
        assert!(unbounded
            .0
            .update(&mut unbounded.1, &rib, &[short], false)
            .unwrap());
        let written = unbounded.0.undo.capacity();
        assert!(
            written > 2 * budget + 64,
            "{written} entries written, budget {budget}"
        );
        assert!(!updater.update(&mut trie, &rib, &[short], true).unwrap());
        assert_eq!(trie.entries, before, "rolled back");
        assert!(
            updater.undo.capacity() <= 2 * budget + 64,
            "{} undo records, budget {budget}",
            updater.undo.capacity()
        );
        let (mut cpe_updater, mut snapshot) = (CpeUpdater::Leaf(updater), CpeTrie::Leaf(trie));
        cpe_updater.update(&mut snapshot, &rib, &[short]).unwrap();
        let report = crate::verify::verify(&snapshot, &rib, 2000, 3);
        assert!(report.ok(), "{}", report.mismatches[0]);
    }
}
