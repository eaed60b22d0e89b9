//! Editing the LC-trie's slab in place, as fib_trie does: insert, delete
//! and resize (inflate, halve, collapse), with the free block lists and
//! the per-node counts (see `update`).

use std::marker::PhantomData;

use super::*;

/// Resizes per node per rebalance step (fib_trie's `MAX_WORK`): bounds the
/// cost of one update when a node could keep doubling.
const MAX_WORK: u32 = 10;
/// Fill thresholds in percent (fib_trie's defaults).
const INFLATE_THRESHOLD: usize = 50;
const INFLATE_THRESHOLD_ROOT: usize = 30;
const HALVE_THRESHOLD: usize = 25;
const HALVE_THRESHOLD_ROOT: usize = 15;
/// The slab is compacted once its dead slots (blocks on the free lists)
/// pass `DEAD_PER_LIVE` times the live ones plus `DEAD_SLOTS_SLACK`: that
/// costs, amortised, a third of a copy per slot allocated since the last
/// compaction and bounds the slab at four times the trie (twice made a
/// million consecutive IPv6 host routes build in 5.7 s instead of 4.4 for
/// a peak of 0.46 GB instead of 0.60); the slack keeps small tries from
/// compacting often.
const DEAD_PER_LIVE: usize = 3;
const DEAD_SLOTS_SLACK: usize = 1 << 16;

/// Which child of a node with header `node` holds `key` (whose bits above
/// the node agree with the node's key). The root pseudo block has one.
#[inline]
pub(super) fn index_in<A: Addr>(node: &Kv<A>, key: A) -> usize {
    if node.bits == 0 {
        return 0;
    }
    ((key ^ node.key) >> node.pos as u32).low_u64() as usize & ((1usize << node.bits) - 1)
}

/// Whether fib_trie's rule doubles the stride of `node`, which has
/// `children` non-empty children, `full` of them full; `top` for the node
/// under the root pseudo block.
pub(super) fn inflates<A>(node: &Kv<A>, children: usize, full: usize, top: bool) -> bool {
    let used = children + full;
    let threshold = if top {
        INFLATE_THRESHOLD_ROOT
    } else {
        INFLATE_THRESHOLD
    };
    used > 1 && node.pos > 0 && node.bits < MAX_BITS && 50 * used >= threshold << node.bits
}

/// Whether fib_trie's rule halves the stride of `node` with `children`
/// non-empty children.
pub(super) fn halves<A>(node: &Kv<A>, children: usize, top: bool) -> bool {
    let threshold = if top {
        HALVE_THRESHOLD_ROOT
    } else {
        HALVE_THRESHOLD
    };
    children > 1 && node.bits > 1 && 100 * children < threshold << node.bits
}

/// A child of a node is "full" when it is a tnode with no skipped bits.
#[inline]
pub(super) fn is_full<A>(node: &Kv<A>, child: &Kv<A>) -> bool {
    child.kind == TNODE && child.pos + child.bits == node.pos
}

/// The suffix-length count a child at `index` of `node` goes in: `slen -
/// pos` for children at index != 0 with a suffix longer than `pos`.
#[inline]
pub(super) fn suffix_rank<A>(node: &Kv<A>, index: usize, child: &Kv<A>) -> Option<u8> {
    (index != 0 && child.kind != EMPTY && child.slen > node.pos).then(|| child.slen - node.pos)
}

// The updater's struct and its compaction live here, below `build` and
// `update`: the editor, which the build also runs, borrows the updater's
// counts and free lists and compacts the slab when it grows sparse.

/// The build and update state of an LC-trie: per-node counts, free blocks,
/// the prefix count (see the module header of `update`).
#[derive(Clone, Debug)]
pub struct LcTrieUpdater<A> {
    pub(super) config: LcTrieConfig,
    /// Child and suffix-length counts of every node, at its block's offsets.
    pub(super) node_counts: Vec<u32>,
    /// Free child blocks by `bits`.
    pub(super) free_blocks: Vec<Vec<u32>>,
    /// Free entry blocks by log2 of their size.
    pub(super) free_entries: Vec<Vec<u32>>,
    /// Slab slots in live blocks (headers included) and the root pseudo
    /// block: the slab's length less the free lists' blocks.
    pub(super) live_slots: usize,
    pub(super) prefixes: usize,
    pub(super) _family: PhantomData<fn() -> A>,
}

impl<A: SlotLayout> LcTrieUpdater<A> {
    /// Moves every live child block and entry block of `trie` into new
    /// arrays, blocks in depth-first order, and empties the free lists.
    ///
    /// Changed insert by insert, the trie leaves behind every block its
    /// nodes had before they inflated or halved (fib_trie hands them back
    /// to the kernel's allocator; here they wait on the free lists, which
    /// reuse a block only for a node of the same stride): inserting every
    /// prefix of dfz-v4-nh left 46% of the slab dead, of a million
    /// consecutive IPv6 host routes 91%. Compacting gives the footprint of
    /// the trie itself and puts each node's block next to its first
    /// descendants'. The blocks in `tracked` are replaced by their new
    /// indices.
    pub(super) fn compact(&mut self, trie: &mut LcTrie<A>, tracked: &mut [usize]) {
        // Each tracked block moves once: a new index may equal an old one
        // tracked beside it. The root pseudo block stays where it is.
        let mut moved: Vec<bool> = tracked.iter().map(|&block| block == ROOT).collect();
        let old_slab = std::mem::take(&mut trie.slab);
        let old_entries = std::mem::take(&mut trie.entries);
        let old_counts = std::mem::take(&mut self.node_counts);
        let mut slab = Vec::with_capacity(old_slab.len() / 2);
        let mut counts = Vec::with_capacity(old_slab.len() / 2);
        let mut entries = Vec::with_capacity(old_entries.len());
        // The root pseudo block: its header and the top node's key vector.
        slab.extend_from_slice(&old_slab[..ROOT + 1]);
        counts.extend_from_slice(&old_counts[..ROOT + 1]);
        // Slots (new indices) whose key vector still names old blocks, and
        // the new block holding each.
        let mut pending = vec![(ROOT, ROOT)];
        while let Some((at, parent)) = pending.pop() {
            let mut kv = A::unpack(&slab[at]);
            match kv.kind {
                TNODE => {
                    let old = kv.ptr as usize;
                    let size = 1usize << kv.bits;
                    let block = slab.len() + HEADER;
                    let header = Kv {
                        ptr: parent as u32,
                        ..A::unpack(&old_slab[old - HEADER])
                    };
                    slab.push(A::pack(header));
                    slab.extend_from_slice(&old_slab[old..old + size]);
                    counts.extend_from_slice(&old_counts[old - HEADER..old + size]);
                    kv.ptr = block as u32;
                    // Only the children that name blocks wait (a stack of
                    // every slot would take half the new slab again).
                    pending.extend(
                        (block..block + size)
                            .rev()
                            .filter(|&child| {
                                matches!(A::unpack(&slab[child]).kind, TNODE | LEAF_LIST)
                            })
                            .map(|child| (child, block)),
                    );
                    for (at, done) in tracked.iter_mut().zip(&mut moved) {
                        if !*done && *at == old {
                            *at = block;
                            *done = true;
                        }
                    }
                }
                LEAF_LIST => {
                    let old = kv.ptr as usize;
                    let count = old_entries[old].slen as usize;
                    let size = (count + 1).next_power_of_two();
                    kv.ptr = entries.len() as u32;
                    entries.extend_from_slice(&old_entries[old..old + 1 + count]);
                    entries.resize(kv.ptr as usize + size, Entry::new(0, 0));
                }
                _ => continue,
            }
            slab[at] = A::pack(kv);
        }
        debug_assert_eq!(slab.len(), self.live_slots);
        debug_assert!(
            moved.iter().all(|&done| done),
            "a tracked block is not in the trie"
        );
        self.live_slots = slab.len();
        trie.slab = slab;
        trie.entries = entries;
        self.node_counts = counts;
        self.free_blocks.iter_mut().for_each(Vec::clear);
        self.free_entries.iter_mut().for_each(Vec::clear);
    }
}

/// The snapshot being changed and the updater's state, borrowed together
/// for one batch.
pub(super) struct Editor<'a, A: SlotLayout> {
    pub(super) trie: &'a mut LcTrie<A>,
    pub(super) updater: &'a mut LcTrieUpdater<A>,
    /// Resizes in progress above the current one (`replace` resizes the
    /// full children of the node it placed): only the outermost may
    /// compact, since the others' callers hold block indices.
    pub(super) nested: u32,
}

impl<A: SlotLayout> Editor<'_, A> {
    fn limit_error(&self) -> BuildError {
        BuildError::Limit {
            engine: self.updater.config.to_string(),
            why: format!(
                "the trie needs more than {MAX_SLAB} key-vector slots; \
                 use `dxr` or `radix` for a table this large"
            ),
        }
    }

    #[inline]
    fn kv(&self, index: usize) -> Kv<A> {
        self.trie.kv(index)
    }

    #[inline]
    pub(super) fn header(&self, block: usize) -> Kv<A> {
        self.trie.header(block)
    }

    fn set_header(&mut self, block: usize, header: Kv<A>) {
        self.trie.slab[block - HEADER] = A::pack(header);
    }

    /// The key vector that describes block `block` in its parent.
    pub(super) fn kv_of(&self, block: usize) -> Kv<A> {
        Kv {
            ptr: block as u32,
            ..self.header(block)
        }
    }

    /// Non-empty and full children of the node at `block`.
    fn children(&self, block: usize) -> (usize, usize) {
        self.updater.children(block)
    }

    /// Adds (`add`) or takes away the counts of `child` at `index` of the
    /// node at `block` with header `node`.
    fn tally(&mut self, block: usize, node: &Kv<A>, index: usize, child: &Kv<A>, add: bool) {
        let counts = &mut self.updater.node_counts;
        let mut count = |at: usize| {
            if add {
                counts[at] += 1;
            } else {
                counts[at] -= 1;
            }
        };
        if child.kind != EMPTY {
            count(block);
        }
        if is_full(node, child) {
            count(block + 1);
        }
        if let Some(r) = suffix_rank(node, index, child) {
            debug_assert!(r < node.bits, "child {index} of {node:?}: {child:?}");
            count(block + 1 + r as usize);
        }
    }

    /// The longest suffix below the node at `block`, from its counts.
    fn node_slen(&self, block: usize) -> u8 {
        let node = self.header(block);
        let first = self.kv(block);
        let mut slen = node.pos;
        if first.kind != EMPTY {
            slen = slen.max(first.slen);
        }
        let ranks = &self.updater.node_counts[block + 2..block + 1 + node.bits as usize];
        if let Some(r) = ranks.iter().rposition(|&count| count != 0) {
            slen = slen.max(node.pos + r as u8 + 1);
        }
        slen
    }

    /// A fresh block of `2^bits` empty children for a node at `pos` with
    /// `key` (masked here), under `parent`.
    pub(super) fn alloc_block(
        &mut self,
        bits: u8,
        key: A,
        pos: u8,
        parent: usize,
    ) -> Result<usize, BuildError> {
        let size = 1usize << bits;
        let block = match self.updater.free_blocks[bits as usize].pop() {
            Some(block) => {
                let block = block as usize;
                self.trie.slab[block..block + size].fill(A::pack(Kv::EMPTY));
                block
            }
            None => {
                let block = self.trie.slab.len() + HEADER;
                if block + size > MAX_SLAB {
                    return Err(self.limit_error());
                }
                self.trie.slab.resize(block + size, A::pack(Kv::EMPTY));
                self.updater.node_counts.resize(block + size, 0);
                block
            }
        };
        self.updater.node_counts[block..=block + bits as usize].fill(0);
        self.updater.live_slots += HEADER + size;
        let shift = pos as u32 + bits as u32;
        let key = if shift >= A::BITS as u32 {
            A::ZERO
        } else {
            (key >> shift) << shift
        };
        self.set_header(
            block,
            Kv {
                key,
                ptr: parent as u32,
                pos,
                bits,
                slen: pos,
                kind: TNODE,
            },
        );
        Ok(block)
    }

    fn free_block(&mut self, block: usize) {
        let bits = self.header(block).bits;
        self.updater.free_blocks[bits as usize].push(block as u32);
        self.updater.live_slots -= HEADER + (1usize << bits);
    }

    /// Compacts the slab ([`LcTrieUpdater::compact`]) once its dead slots
    /// outnumber the live ones by more than [`DEAD_SLOTS_SLACK`]; between
    /// changes, when no slot index is held.
    pub(super) fn compact_if_sparse(&mut self) {
        self.compact_if_sparse_tracking(&mut []);
    }

    /// [`Self::compact_if_sparse`] while the blocks in `tracked` are held
    /// (between the steps of the outermost resize), which it moves with the
    /// slab.
    fn compact_if_sparse_tracking(&mut self, tracked: &mut [usize]) {
        let dead = self.trie.slab.len() - self.updater.live_slots;
        if self.nested == 0 && dead > DEAD_PER_LIVE * self.updater.live_slots + DEAD_SLOTS_SLACK {
            self.updater.compact(self.trie, tracked);
        }
    }

    /// Stores `kv` as child `index` of `block`, keeping the node's counts
    /// and the child's parent link. Every write of a child slot goes here,
    /// so the counts always describe the slots.
    pub(super) fn put_child(&mut self, block: usize, index: usize, kv: Kv<A>) {
        if block != ROOT {
            let node = self.header(block);
            let old = self.kv(block + index);
            self.tally(block, &node, index, &old, false);
            self.tally(block, &node, index, &kv, true);
        }
        self.trie.slab[block + index] = A::pack(kv);
        if kv.kind == TNODE {
            let child = kv.ptr as usize;
            let header = Kv {
                ptr: block as u32,
                ..self.header(child)
            };
            self.set_header(child, header);
        }
    }

    /// Sets the `slen` of the node at `block` from its counts (header and
    /// the key vector in its parent), then its ancestors' as far as they
    /// change: each level costs at most `bits` count reads.
    fn refresh_slen(&mut self, mut block: usize) {
        while block != ROOT {
            let header = self.header(block);
            let slen = self.node_slen(block);
            if slen == header.slen {
                return;
            }
            self.set_header(block, Kv { slen, ..header });
            let parent = header.ptr as usize;
            let index = index_in(&self.header(parent), header.key);
            self.put_child(parent, index, self.kv_of(block));
            block = parent;
        }
    }

    /// The block whose child slot `key` belongs in, and that slot's index:
    /// the slot holds the leaf with this key, a node whose skipped bits
    /// differ from it, or nothing.
    fn find(&self, key: A) -> (usize, usize) {
        let mut block = ROOT;
        let mut index = 0;
        loop {
            let n = self.kv(block + index);
            if n.kind != TNODE {
                return (block, index);
            }
            let child = (key ^ n.key) >> n.pos as u32;
            if child >> n.bits as u32 != A::ZERO {
                return (block, index);
            }
            block = n.ptr as usize;
            index = child.low_u64() as usize;
        }
    }

    /// The prefixes of leaf `leaf`, by ascending suffix length.
    pub(super) fn entries_of(trie: &LcTrie<A>, leaf: &Kv<A>) -> Vec<Entry> {
        match leaf.kind {
            LEAF => vec![Entry::new(leaf.ptr, leaf.slen)],
            _ => trie.list_entries(leaf).to_vec(),
        }
    }

    /// A leaf key vector for `entries` (sorted by `slen`, not empty),
    /// reusing or freeing the entry block of `old`.
    pub(super) fn make_leaf(&mut self, key: A, entries: &[Entry], old: &Kv<A>) -> Kv<A> {
        // Blocks of 2^class entries, the first one a header (the count).
        let class_of = |count: usize| (count + 1).next_power_of_two().trailing_zeros();
        let old_class = (old.kind == LEAF_LIST)
            .then(|| class_of(self.trie.entries[old.ptr as usize].slen as usize));
        let slen = entries.last().map_or(0, |e| e.slen);
        if entries.len() == 1 {
            if let Some(class) = old_class {
                self.updater.free_entries[class as usize].push(old.ptr);
            }
            return Kv {
                key,
                ptr: entries[0].label,
                pos: 0,
                bits: 0,
                slen,
                kind: LEAF,
            };
        }
        let class = class_of(entries.len());
        let base = match old_class {
            Some(old_class) if old_class == class => old.ptr as usize,
            _ => {
                if let Some(old_class) = old_class {
                    self.updater.free_entries[old_class as usize].push(old.ptr);
                }
                match self.updater.free_entries[class as usize].pop() {
                    Some(base) => base as usize,
                    None => {
                        let base = self.trie.entries.len();
                        self.trie
                            .entries
                            .resize(base + (1 << class), Entry::new(0, 0));
                        base
                    }
                }
            }
        };
        let block = &mut self.trie.entries[base..base + 1 + entries.len()];
        block[0] = Entry::new(0, entries.len() as u8);
        block[1..].copy_from_slice(entries);
        Kv {
            key,
            ptr: base as u32,
            pos: 0,
            bits: 0,
            slen,
            kind: LEAF_LIST,
        }
    }

    /// Inserts `prefix` with `label`, or relabels it.
    pub(super) fn insert(&mut self, prefix: Prefix<A>, label: Label) -> Result<(), BuildError> {
        let key = prefix.addr();
        let slen = A::BITS - prefix.plen();
        let (tp, index) = self.find(key);
        let n = self.kv(tp + index);
        if n.is_leaf() && n.key == key {
            let mut entries = Self::entries_of(self.trie, &n);
            match entries.binary_search_by_key(&slen, |e| e.slen) {
                Ok(at) => entries[at].label = label,
                Err(at) => {
                    entries.insert(at, Entry::new(label, slen));
                    self.updater.prefixes += 1;
                }
            }
            let leaf = self.make_leaf(key, &entries, &n);
            self.put_child(tp, index, leaf);
            self.refresh_slen(tp);
            return Ok(());
        }
        self.updater.prefixes += 1;
        let leaf = Kv {
            key,
            ptr: label,
            pos: 0,
            bits: 0,
            slen,
            kind: LEAF,
        };
        let mut tp = tp;
        if n.kind != EMPTY {
            // Split the slot: a binary node at the highest bit where the new
            // key and the occupant's key differ.
            let pos = (A::BITS as u32 - 1 - (key ^ n.key).leading_zeros()) as u8;
            let tn = self.alloc_block(1, key, pos, tp)?;
            self.put_child(tn, index_in(&self.header(tn), n.key), n);
            let slen = self.node_slen(tn);
            self.set_header(
                tn,
                Kv {
                    slen,
                    ..self.header(tn)
                },
            );
            self.put_child(tp, index, self.kv_of(tn));
            tp = tn;
        }
        self.put_child(tp, index_in(&self.header(tp), key), leaf);
        self.refresh_slen(tp);
        self.rebalance(tp)
    }

    /// Removes `prefix` if present.
    pub(super) fn remove(&mut self, prefix: Prefix<A>) -> Result<(), BuildError> {
        let key = prefix.addr();
        let slen = A::BITS - prefix.plen();
        let (tp, index) = self.find(key);
        let n = self.kv(tp + index);
        if !(n.is_leaf() && n.key == key) {
            return Ok(());
        }
        let mut entries = Self::entries_of(self.trie, &n);
        let Ok(at) = entries.binary_search_by_key(&slen, |e| e.slen) else {
            return Ok(());
        };
        entries.remove(at);
        self.updater.prefixes -= 1;
        if !entries.is_empty() {
            let leaf = self.make_leaf(key, &entries, &n);
            self.put_child(tp, index, leaf);
            self.refresh_slen(tp);
            return Ok(());
        }
        self.put_child(tp, index, Kv::EMPTY);
        self.refresh_slen(tp);
        // Halving allocates the smaller node, so this can fail too.
        self.rebalance(tp)
    }

    /// Resizes `block` and every ancestor, bottom up.
    fn rebalance(&mut self, mut block: usize) -> Result<(), BuildError> {
        while block != ROOT {
            block = self.resize(block)?;
        }
        Ok(())
    }

    fn should_inflate(&self, parent: usize, block: usize) -> bool {
        let (children, full) = self.children(block);
        inflates(&self.header(block), children, full, parent == ROOT)
    }

    fn should_halve(&self, parent: usize, block: usize) -> bool {
        halves(&self.header(block), self.children(block).0, parent == ROOT)
    }

    fn should_collapse(&self, block: usize) -> bool {
        self.children(block).0 < 2
    }

    /// Inflates or halves `block` while the thresholds say so, collapses it
    /// if it has fewer than two children; returns its parent.
    fn resize(&mut self, block: usize) -> Result<usize, BuildError> {
        let mut parent = self.header(block).ptr as usize;
        let mut block = block;
        let mut work = MAX_WORK;
        while work > 0 && self.should_inflate(parent, block) {
            block = self.inflate(block)?;
            work -= 1;
            // A run of inflations copies the node's whole subtree top each
            // time (on consecutive host routes, ten times a node of a
            // million children in one insert), each copy leaving the last
            // one dead: compacting between them bounds the slab.
            let mut held = [block, parent];
            self.compact_if_sparse_tracking(&mut held);
            [block, parent] = held;
        }
        if work != MAX_WORK {
            // Splitting a full child whose children all fall in one half
            // leaves an empty half, which collapses away; a node that had
            // one full child can end up with one child again. fib_trie
            // leaves such a node until a later update touches it; we
            // collapse it at once.
            if self.should_collapse(block) {
                self.collapse(block);
            }
            return Ok(parent);
        }
        while work > 0 && self.should_halve(parent, block) {
            block = self.halve(block)?;
            work -= 1;
            let mut held = [block, parent];
            self.compact_if_sparse_tracking(&mut held);
            [block, parent] = held;
        }
        if self.should_collapse(block) {
            self.collapse(block);
        }
        Ok(parent)
    }

    /// Sets the `slen` of a node built from scratch (nothing above it
    /// points to it yet).
    pub(super) fn seal(&mut self, block: usize) {
        let slen = self.node_slen(block);
        let header = self.header(block);
        self.set_header(block, Kv { slen, ..header });
    }

    /// Replaces `block` by one of twice the stride, one bit lower.
    fn inflate(&mut self, old: usize) -> Result<usize, BuildError> {
        let node = self.header(old);
        let tn = self.alloc_block(node.bits + 1, node.key, node.pos - 1, node.ptr as usize)?;
        let tn_header = self.header(tn);
        // The bit the new node tests on top of the old ones.
        let high = A::from_u64(1) << (node.pos as u32 - 1);
        for i in (0..1usize << node.bits).rev() {
            let inode = self.kv(old + i);
            if inode.kind == EMPTY {
                continue;
            }
            if !is_full(&node, &inode) {
                self.put_child(tn, index_in(&tn_header, inode.key), inode);
                continue;
            }
            let iblock = inode.ptr as usize;
            if inode.bits == 1 {
                let (zero, one) = (self.kv(iblock), self.kv(iblock + 1));
                self.put_child(tn, 2 * i + 1, one);
                self.put_child(tn, 2 * i, zero);
                self.free_block(iblock);
                continue;
            }
            // Split the full child in two halves one bit narrower; their
            // keys differ in the bit the new node now tests.
            let half = 1usize << (inode.bits - 1);
            let node1 = self.alloc_block(inode.bits - 1, inode.key | high, inode.pos, tn)?;
            let node0 = self.alloc_block(inode.bits - 1, inode.key, inode.pos, tn)?;
            for j in 0..half {
                let (zero, one) = (self.kv(iblock + j), self.kv(iblock + half + j));
                self.put_child(node0, j, zero);
                self.put_child(node1, j, one);
            }
            self.seal(node0);
            self.seal(node1);
            self.free_block(iblock);
            self.put_child(tn, 2 * i + 1, self.kv_of(node1));
            self.put_child(tn, 2 * i, self.kv_of(node0));
        }
        self.replace(old, tn)
    }

    /// Replaces `block` by one of half the stride, one bit higher.
    fn halve(&mut self, old: usize) -> Result<usize, BuildError> {
        let node = self.header(old);
        let tn = self.alloc_block(node.bits - 1, node.key, node.pos + 1, node.ptr as usize)?;
        for i in (0..1usize << node.bits).step_by(2).rev() {
            let (zero, one) = (self.kv(old + i), self.kv(old + i + 1));
            match (zero.kind == EMPTY, one.kind == EMPTY) {
                (true, true) => {}
                (false, true) => self.put_child(tn, i / 2, zero),
                (true, false) => self.put_child(tn, i / 2, one),
                (false, false) => {
                    let pair = self.alloc_block(1, zero.key, node.pos, tn)?;
                    self.put_child(pair, 0, zero);
                    self.put_child(pair, 1, one);
                    self.seal(pair);
                    self.put_child(tn, i / 2, self.kv_of(pair));
                }
            }
        }
        self.replace(old, tn)
    }

    /// Puts the new block `tn` where `old` was, frees `old`, fixes suffix
    /// lengths and resizes the new node's full children; returns `tn`.
    fn replace(&mut self, old: usize, tn: usize) -> Result<usize, BuildError> {
        let parent = self.header(old).ptr as usize;
        self.seal(tn);
        let kv = self.kv_of(tn);
        self.put_child(parent, index_in(&self.header(parent), kv.key), kv);
        self.free_block(old);
        // The new node's position differs by one, and so may its `slen`.
        self.refresh_slen(parent);
        self.nested += 1;
        for i in (0..1usize << kv.bits).rev() {
            let child = self.kv(tn + i);
            if is_full(&kv, &child) {
                self.resize(child.ptr as usize)?;
            }
        }
        self.nested -= 1;
        Ok(tn)
    }

    /// Removes `block`, which has at most one child, lifting the child.
    fn collapse(&mut self, old: usize) {
        let node = self.header(old);
        let parent = node.ptr as usize;
        let child = (0..1usize << node.bits)
            .map(|i| self.kv(old + i))
            .find(|kv| kv.kind != EMPTY)
            .unwrap_or(Kv::EMPTY);
        self.put_child(parent, index_in(&self.header(parent), node.key), child);
        self.free_block(old);
        self.refresh_slen(parent);
    }
}
