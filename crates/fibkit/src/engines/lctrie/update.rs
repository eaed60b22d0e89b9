//! The updater of the LC-trie: insert, delete and resize (inflate, halve,
//! collapse) as fib_trie does them, on the snapshot's slab in place; plus
//! structural checks for tests.
//!
//! Besides free block lists, the updater keeps per node what fib_trie keeps
//! in its `tnode` info: the non-empty and full child counts the resize
//! thresholds need, and, unlike fib_trie, a count of children per suffix
//! length, so that a node's longest suffix is known without scanning its
//! children:
//!
//! ```text
//! node_counts: Vec<u32>, as long as the slab; for the node whose children
//! block starts at p (2^b slots, b >= 1, so the b + 1 counts fit):
//!   node_counts[p]          non-empty children
//!   node_counts[p + 1]      full children (tnodes with no skipped bits)
//!   node_counts[p + 1 + r]  children at index != 0 whose slen is pos + r,
//!                           for r in 1..b
//! ```
//!
//! A child at index `i != 0` has bit `pos + tz(i)` of its key set, so its
//! suffixes are at most `pos + tz(i) <= pos + b - 1` long; child 0 may hold
//! any suffix and is read directly. A node's `slen` is then the largest of
//! its `pos`, child 0's `slen` and the largest `pos + r` with a count: at
//! most `b` reads, where fib_trie's `update_suffix` scans the children
//! (half of them when no child has a longer suffix than `pos`). That scan,
//! run on every withdrawal under a wide node, made a storm of withdrawals
//! quadratic.

use std::marker::PhantomData;

use super::*;
use crate::engine::Updater;
use crate::rib::Rib;

/// Resizes per node per rebalance step (fib_trie's `MAX_WORK`): bounds the
/// cost of one update when a node could keep doubling.
const MAX_WORK: u32 = 10;
/// Fill thresholds in percent (fib_trie's defaults).
const INFLATE_THRESHOLD: usize = 50;
const INFLATE_THRESHOLD_ROOT: usize = 30;
const HALVE_THRESHOLD: usize = 25;
const HALVE_THRESHOLD_ROOT: usize = 15;
/// Entry block size classes: blocks of 2^0 .. 2^8 entries.
const ENTRY_CLASSES: usize = 9;
/// The slab is compacted once its dead slots (blocks on the free lists)
/// pass `DEAD_PER_LIVE` times the live ones plus `DEAD_SLOTS_SLACK`: that
/// costs, amortised, a third of a copy per slot allocated since the last
/// compaction and bounds the slab at four times the trie (twice made a
/// million consecutive IPv6 host routes build in 5.7 s instead of 4.4 for
/// a peak of 0.46 GB instead of 0.60); the slack keeps small tries from
/// compacting often.
const DEAD_PER_LIVE: usize = 3;
const DEAD_SLOTS_SLACK: usize = 1 << 16;
/// A batch of changes is applied by a build from scratch when the table
/// grows or shrinks by at least `REBUILD_MIN_CHANGES` prefixes and more
/// than one in `REBUILD_SHARE` of the larger of its sizes before and
/// after. Only that net change, which counts inserts and removals,
/// decides: a relabel in a sorted batch costs about what a build spends
/// per prefix. Inserts cost from several times that (announcing half of
/// dfz-v4-nh back into the other half: 0.37–0.57 s patched, 0.30–0.33 s
/// rebuilt) to more than ten times (the whole table onto a default
/// route, where nodes inflate again and again: 1.75–1.87 s against
/// 0.27–0.34 s); patching a quarter back costs 0.20–0.28 s, so the two
/// meet near a third. Smaller changes always patch, so that small
/// tables are not rebuilt change by change.
const REBUILD_MIN_CHANGES: usize = 1024;
const REBUILD_SHARE: usize = 3;
/// The largest entry block: the header and one entry per IPv6 prefix length.
const MAX_LIST_SLOTS: usize = 1 + (u128::BITS as usize + 1);
const _: () = assert!(1 << (ENTRY_CLASSES - 1) >= MAX_LIST_SLOTS);

/// The build and update state of an LC-trie: per-node counts, free blocks,
/// the prefix count (see the module header).
#[derive(Clone, Debug)]
pub struct LcTrieUpdater<A> {
    config: LcTrieConfig,
    /// Child and suffix-length counts of every node, at its block's offsets.
    node_counts: Vec<u32>,
    /// Free child blocks by `bits`.
    free_blocks: Vec<Vec<u32>>,
    /// Free entry blocks by log2 of their size.
    free_entries: Vec<Vec<u32>>,
    /// Slab slots in live blocks (headers included) and the root pseudo
    /// block: the slab's length less the free lists' blocks.
    live_slots: usize,
    prefixes: usize,
    _family: PhantomData<fn() -> A>,
}

impl<A: SlotLayout> Updater<A> for LcTrieUpdater<A> {
    type Config = LcTrieConfig;
    type Snapshot = LcTrie<A>;
    type Stats = LcTrieStats;

    /// Builds the trie from `rib`'s sorted prefixes top down
    /// ([`Editor::build_subtrie`]).
    fn build(config: &LcTrieConfig, rib: &Rib<A>) -> Result<(Self, LcTrie<A>), BuildError> {
        let mut trie = LcTrie::empty(config.lookup);
        let mut updater = LcTrieUpdater {
            config: *config,
            node_counts: vec![0; trie.slab.len()],
            free_blocks: vec![Vec::new(); MAX_BITS as usize + 1],
            free_entries: vec![Vec::new(); ENTRY_CLASSES],
            live_slots: trie.slab.len(),
            prefixes: 0,
            _family: PhantomData,
        };
        let leaves = Leaves::of(rib);
        updater.prefixes = rib.len();
        let mut editor = updater.editor(&mut trie);
        if !leaves.keys.is_empty() {
            let top = editor.build_subtrie(&leaves, 0..leaves.keys.len(), ROOT)?;
            editor.put_child(ROOT, 0, top);
        }
        Ok((updater, trie))
    }

    fn config(&self) -> LcTrieConfig {
        self.config
    }

    fn patches(&self) -> bool {
        true
    }

    /// Never before the patch: [`Updater::update`] builds anew by its own
    /// rule, measured on this engine ([`REBUILD_MIN_CHANGES`],
    /// [`REBUILD_SHARE`]), which the handles' default would preempt.
    fn builds_anew(&self, _changed: usize, _prefixes: usize) -> bool {
        false
    }

    /// Inserts, relabels or removes each changed prefix; a batch that
    /// grows or shrinks the table by at least [`REBUILD_MIN_CHANGES`]
    /// prefixes and by more than a third ([`REBUILD_SHARE`]) is built from
    /// scratch instead.
    fn update(
        &mut self,
        snapshot: &mut LcTrie<A>,
        rib: &Rib<A>,
        changed: &[Prefix<A>],
    ) -> Result<(), BuildError> {
        let net = rib.len().abs_diff(self.prefixes);
        if net >= REBUILD_MIN_CHANGES && net * REBUILD_SHARE > rib.len().max(self.prefixes) {
            let (updater, trie) = Self::build(&self.config, rib)?;
            *self = updater;
            *snapshot = trie;
            return Ok(());
        }
        let mut editor = self.editor(snapshot);
        for &prefix in changed {
            match rib.get(prefix) {
                Some(label) => editor.insert(prefix, label)?,
                None => editor.remove(prefix)?,
            }
            editor.compact_if_sparse();
        }
        Ok(())
    }

    /// Key vectors, backtracking steps and cache lines per lookup, with
    /// the snapshot's own look-up algorithm.
    fn lookup_work(snapshot: &LcTrie<A>, addrs: &[A]) -> Option<Vec<(String, String)>> {
        let counts = snapshot.count_lookups(addrs, snapshot.algo());
        Some(vec![
            ("lookups counted".into(), addrs.len().to_string()),
            (
                "key vectors".into(),
                format!("{:.2}", counts.nodes_per_lookup()),
            ),
            (
                "backtracking steps".into(),
                format!("{:.2}", counts.backtracks_per_lookup()),
            ),
            (
                "cache lines".into(),
                format!("{:.2}", counts.cache_lines_per_lookup()),
            ),
        ])
    }

    fn stats(&self, snapshot: &LcTrie<A>) -> LcTrieStats {
        LcTrieStats {
            prefixes: self.prefixes,
            shape: snapshot.shape(),
            slab_slots: snapshot.slab.len(),
            entry_slots: snapshot.entries.len(),
        }
    }
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
    fn compact(&mut self, trie: &mut LcTrie<A>, tracked: &mut [usize]) {
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

    fn editor<'a>(&'a mut self, trie: &'a mut LcTrie<A>) -> Editor<'a, A> {
        debug_assert_eq!(self.node_counts.len(), trie.slab.len());
        Editor {
            trie,
            updater: self,
            nested: 0,
        }
    }

    /// Number of prefixes held.
    pub fn len(&self) -> usize {
        self.prefixes
    }

    /// Whether no prefix is held.
    pub fn is_empty(&self) -> bool {
        self.prefixes == 0
    }

    /// Checks every structural invariant look-ups and updates rely on, in
    /// `trie` (the snapshot this updater last built or updated) and in the
    /// updater's counts; returns the first violation found. For tests.
    pub fn check_invariants(&self, trie: &LcTrie<A>) -> Result<(), String> {
        if self.node_counts.len() != trie.slab.len() {
            return Err(format!(
                "{} node counts for {} slab slots",
                self.node_counts.len(),
                trie.slab.len()
            ));
        }
        let mut stack = vec![(ROOT, 0usize)];
        let mut count = 0usize;
        while let Some((block, index)) = stack.pop() {
            let kv = trie.kv(block + index);
            let parent = trie.header(block);
            let here = format!("slot {index} of block {block} (key {:?})", kv.key);
            if kv.kind == EMPTY {
                continue;
            }
            // The key agrees with the parent's bits and the slot index.
            if block != ROOT {
                let above = parent.pos as u32 + parent.bits as u32;
                let agree = above >= A::BITS as u32 || (kv.key ^ parent.key) >> above == A::ZERO;
                if !agree || index_in(&parent, kv.key) != index {
                    return Err(format!("{here}: key does not belong in this slot"));
                }
            }
            if kv.kind != TNODE {
                let entries = Editor::entries_of(trie, &kv);
                count += entries.len();
                if kv.pos != 0 || kv.bits != 0 {
                    return Err(format!("{here}: leaf with pos/bits"));
                }
                if entries.windows(2).any(|w| w[0].slen >= w[1].slen)
                    || (kv.kind == LEAF_LIST && entries.len() < 2)
                {
                    return Err(format!("{here}: leaf entries unsorted or too few"));
                }
                if entries.last().map(|e| e.slen) != Some(kv.slen) {
                    return Err(format!("{here}: leaf slen is not its longest suffix"));
                }
                if kv.slen < A::BITS && (kv.key << (A::BITS - 1 - kv.slen) as u32) << 1 != A::ZERO {
                    return Err(format!("{here}: host bits set under a prefix"));
                }
                continue;
            }
            let child_block = kv.ptr as usize;
            let header = trie.header(child_block);
            if header.ptr as usize != block {
                return Err(format!("{here}: parent link points to {}", header.ptr));
            }
            if (Kv {
                ptr: child_block as u32,
                ..header
            }) != kv
            {
                return Err(format!("{here}: key vector differs from header {header:?}"));
            }
            if kv.bits == 0 || kv.bits > MAX_BITS {
                return Err(format!("{here}: stride {}", kv.bits));
            }
            let shift = kv.pos as u32 + kv.bits as u32;
            if block != ROOT && shift > parent.pos as u32 {
                return Err(format!("{here}: node overlaps its parent's bits"));
            }
            if shift < A::BITS as u32 && kv.key << (A::BITS as u32 - shift) != A::ZERO {
                return Err(format!("{here}: key bits below pos + bits"));
            }
            let size = 1usize << kv.bits;
            let children: Vec<Kv<A>> = (child_block..child_block + size)
                .map(|i| trie.kv(i))
                .collect();
            let mut want = vec![0u32; kv.bits as usize + 1];
            for (i, child) in children.iter().enumerate() {
                if child.kind != EMPTY {
                    want[0] += 1;
                }
                if is_full(&kv, child) {
                    want[1] += 1;
                }
                if let Some(r) = suffix_rank(&kv, i, child) {
                    if r as u32 > i.trailing_zeros() {
                        return Err(format!("{here}: child {i} has suffix {}", child.slen));
                    }
                    want[1 + r as usize] += 1;
                }
            }
            let counts = &self.node_counts[child_block..child_block + want.len()];
            if counts != want {
                return Err(format!("{here}: counts {counts:?}, children say {want:?}"));
            }
            if want[0] < 2 {
                return Err(format!("{here}: node with {} children", want[0]));
            }
            let slen = children
                .iter()
                .filter(|c| c.kind != EMPTY)
                .map(|c| c.slen)
                .fold(kv.pos, u8::max);
            if slen != kv.slen {
                return Err(format!("{here}: slen {} but children say {slen}", kv.slen));
            }
            stack.extend((0..size).map(|i| (child_block, i)));
        }
        if count != self.prefixes {
            return Err(format!("{count} prefixes found, {} counted", self.prefixes));
        }
        let live = ROOT + 1 + trie.shape().slab_in_use;
        if live != self.live_slots {
            return Err(format!(
                "{live} live slab slots found, {} counted",
                self.live_slots
            ));
        }
        Ok(())
    }

    /// Non-empty and full children of the node at `block`.
    fn children(&self, block: usize) -> (usize, usize) {
        let counts = &self.node_counts;
        (counts[block] as usize, counts[block + 1] as usize)
    }

    /// Checks that no node of `trie` has a stride the resize rules would
    /// change (none would inflate or halve): what a build from scratch
    /// leaves. For tests.
    pub fn check_settled(&self, trie: &LcTrie<A>) -> Result<(), String> {
        let mut stack = vec![(ROOT, ROOT)];
        while let Some((parent, slot)) = stack.pop() {
            let kv = trie.kv(slot);
            if kv.kind != TNODE {
                continue;
            }
            let block = kv.ptr as usize;
            let (children, full) = self.children(block);
            let top = parent == ROOT;
            if inflates(&kv, children, full, top) || halves(&kv, children, top) {
                return Err(format!(
                    "node at block {block} ({} bits at {}, {children} children, {full} full) \
                     would be resized",
                    kv.bits, kv.pos
                ));
            }
            stack.extend((block..block + (1 << kv.bits)).map(|child| (block, child)));
        }
        Ok(())
    }
}

/// A table's prefixes grouped by address, in ascending address order:
/// the leaves of its trie, what a build from scratch reads.
struct Leaves<A> {
    /// Distinct prefix addresses, ascending.
    keys: Vec<A>,
    /// `entries[starts[i]..starts[i + 1]]` are the prefixes at `keys[i]`,
    /// by ascending suffix length.
    starts: Vec<u32>,
    entries: Vec<Entry>,
    /// `splits[i]`: the highest bit where `keys[i]` and `keys[i + 1]`
    /// differ. In sorted keys the highest bit where any two keys of a run
    /// differ is the largest split between them, so a node's stride, its
    /// children and which of them are full follow from these alone.
    splits: Vec<u8>,
}

impl<A: Addr> Leaves<A> {
    fn of(rib: &Rib<A>) -> Self {
        let mut leaves = Leaves {
            keys: Vec::new(),
            starts: Vec::new(),
            entries: Vec::with_capacity(rib.len()),
            splits: Vec::new(),
        };
        for (prefix, label) in rib.iter() {
            let key = prefix.addr();
            if leaves.keys.last() != Some(&key) {
                if let Some(&last) = leaves.keys.last() {
                    leaves
                        .splits
                        .push((A::BITS as u32 - 1 - (last ^ key).leading_zeros()) as u8);
                }
                leaves.keys.push(key);
                leaves.starts.push(leaves.entries.len() as u32);
            }
            leaves
                .entries
                .push(Entry::new(label, A::BITS - prefix.plen()));
        }
        leaves.starts.push(leaves.entries.len() as u32);
        // The table lists an address's prefixes by ascending length, the
        // leaf wants them by ascending suffix length.
        for run in leaves.starts.windows(2) {
            leaves.entries[run[0] as usize..run[1] as usize].reverse();
        }
        leaves
    }

    fn entries(&self, leaf: usize) -> &[Entry] {
        &self.entries[self.starts[leaf] as usize..self.starts[leaf + 1] as usize]
    }
}

/// Which child of a node with header `node` holds `key` (whose bits above
/// the node agree with the node's key). The root pseudo block has one.
#[inline]
fn index_in<A: Addr>(node: &Kv<A>, key: A) -> usize {
    if node.bits == 0 {
        return 0;
    }
    ((key ^ node.key) >> node.pos as u32).low_u64() as usize & ((1usize << node.bits) - 1)
}

/// Whether fib_trie's rule doubles the stride of `node`, which has
/// `children` non-empty children, `full` of them full; `top` for the node
/// under the root pseudo block.
fn inflates<A>(node: &Kv<A>, children: usize, full: usize, top: bool) -> bool {
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
fn halves<A>(node: &Kv<A>, children: usize, top: bool) -> bool {
    let threshold = if top {
        HALVE_THRESHOLD_ROOT
    } else {
        HALVE_THRESHOLD
    };
    children > 1 && node.bits > 1 && 100 * children < threshold << node.bits
}

/// A child of a node is "full" when it is a tnode with no skipped bits.
#[inline]
fn is_full<A>(node: &Kv<A>, child: &Kv<A>) -> bool {
    child.kind == TNODE && child.pos + child.bits == node.pos
}

/// The suffix-length count a child at `index` of `node` goes in: `slen -
/// pos` for children at index != 0 with a suffix longer than `pos`.
#[inline]
fn suffix_rank<A>(node: &Kv<A>, index: usize, child: &Kv<A>) -> Option<u8> {
    (index != 0 && child.kind != EMPTY && child.slen > node.pos).then(|| child.slen - node.pos)
}

/// The snapshot being changed and the updater's state, borrowed together
/// for one batch.
struct Editor<'a, A: SlotLayout> {
    trie: &'a mut LcTrie<A>,
    updater: &'a mut LcTrieUpdater<A>,
    /// Resizes in progress above the current one (`replace` resizes the
    /// full children of the node it placed): only the outermost may
    /// compact, since the others' callers hold block indices.
    nested: u32,
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
    fn header(&self, block: usize) -> Kv<A> {
        self.trie.header(block)
    }

    fn set_header(&mut self, block: usize, header: Kv<A>) {
        self.trie.slab[block - HEADER] = A::pack(header);
    }

    /// The key vector that describes block `block` in its parent.
    fn kv_of(&self, block: usize) -> Kv<A> {
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
    fn alloc_block(
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
    fn compact_if_sparse(&mut self) {
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
    fn put_child(&mut self, block: usize, index: usize, kv: Kv<A>) {
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
    fn entries_of(trie: &LcTrie<A>, leaf: &Kv<A>) -> Vec<Entry> {
        match leaf.kind {
            LEAF => vec![Entry::new(leaf.ptr, leaf.slen)],
            _ => trie.list_entries(leaf).to_vec(),
        }
    }

    /// A leaf key vector for `entries` (sorted by `slen`, not empty),
    /// reusing or freeing the entry block of `old`.
    fn make_leaf(&mut self, key: A, entries: &[Entry], old: &Kv<A>) -> Kv<A> {
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

    /// Builds the sub-trie of the leaves in `run` (at least one) under the
    /// node at `parent` and returns its key vector, for the caller to store.
    ///
    /// Each node gets at once the stride the resize rules settle on:
    /// starting from the binary node at the run's highest differing bit,
    /// it doubles while fib_trie's inflation rule ([`inflates`]) holds for
    /// the children it would have. A doubling turns each full child into
    /// two children, so the next stride's count is at most twice this
    /// one's and the rule, once false, stays false; where it stops, the
    /// non-empty children still fill half the slots (30% at the top),
    /// above the halving thresholds, so updates would resize no node of
    /// the result. Inserting 8.4M consecutive IPv6 host routes one by one,
    /// each inflation copying the node's whole top, took 75–89 s; this
    /// reads each leaf once per level and stride tried (1.2 s), and leaves
    /// no dead slot.
    fn build_subtrie(
        &mut self,
        leaves: &Leaves<A>,
        run: std::ops::Range<usize>,
        parent: usize,
    ) -> Result<Kv<A>, BuildError> {
        let first = run.start;
        if run.len() == 1 {
            return Ok(self.make_leaf(leaves.keys[first], leaves.entries(first), &Kv::EMPTY));
        }
        let splits = &leaves.splits[first..run.end - 1];
        let top = splits.iter().copied().max().unwrap_or(0) + 1;
        let mut bits = 1u8;
        while bits < top {
            // Would the node of `bits` bits at `pos` inflate? Its children
            // are the runs between splits at or above `pos`; a child is
            // full when its own highest split is `pos - 1`.
            let pos = top - bits;
            let (mut children, mut full, mut this_full) = (1usize, 0usize, false);
            for &split in splits {
                if split >= pos {
                    children += 1;
                    full += this_full as usize;
                    this_full = false;
                } else if split == pos - 1 {
                    this_full = true;
                }
            }
            full += this_full as usize;
            let node: Kv<A> = Kv {
                pos,
                bits,
                ..Kv::EMPTY
            };
            if !inflates(&node, children, full, parent == ROOT) {
                break;
            }
            bits += 1;
        }
        let pos = top - bits;
        let block = self.alloc_block(bits, leaves.keys[first], pos, parent)?;
        let header = self.header(block);
        let mut start = first;
        for end in first + 1..=run.end {
            if end == run.end || leaves.splits[end - 1] >= pos {
                let child = self.build_subtrie(leaves, start..end, block)?;
                self.put_child(block, index_in(&header, leaves.keys[start]), child);
                start = end;
            }
        }
        self.seal(block);
        Ok(self.kv_of(block))
    }

    /// Inserts `prefix` with `label`, or relabels it.
    fn insert(&mut self, prefix: Prefix<A>, label: Label) -> Result<(), BuildError> {
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
    fn remove(&mut self, prefix: Prefix<A>) -> Result<(), BuildError> {
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
    fn seal(&mut self, block: usize) {
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
