//! The lookup snapshot of the LC-trie and its look-ups (module header,
//! "Look-up"): Duyck's walk for one key and as a batch of interleaved
//! walks, the classic walk of Linux 3.19, and counting versions of both
//! for measurements.

use std::ops::ControlFlow;

use super::*;
use crate::engines::shared::prefetch;

/// The lookup snapshot of the LC-trie: the slab of key vectors, the leaf
/// entries and the look-up algorithm, in storage `S`.
pub struct LcTrie<A: SlotLayout, S: Storage = Owned> {
    pub(super) slab: S::Array<A::Slot>,
    pub(super) entries: S::Array<Entry>,
    pub(super) algo: LookupAlgo,
}

impl<A: SlotLayout, S: Storage> Clone for LcTrie<A, S> {
    fn clone(&self) -> Self {
        LcTrie {
            slab: self.slab.clone(),
            entries: self.entries.clone(),
            algo: self.algo,
        }
    }

    /// Reuses this snapshot's memory instead of allocating a new slab.
    fn clone_from(&mut self, source: &Self) {
        self.slab.clone_from(&source.slab);
        self.entries.clone_from(&source.entries);
        self.algo = source.algo;
    }
}

impl<A: SlotLayout, S: Storage> fmt::Debug for LcTrie<A, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LcTrie")
            .field("slab_slots", &self.slab.len())
            .field("entry_slots", &self.entries.len())
            .field("algo", &self.algo)
            .finish()
    }
}

impl<A: SlotLayout, S: Storage> Lookup<A> for LcTrie<A, S> {
    #[inline(always)]
    fn lookup(&self, addr: A) -> Option<Label> {
        match self.algo {
            LookupAlgo::Improved => self.lookup_improved(addr),
            LookupAlgo::Classic => self.lookup_classic(addr, &mut lookup::NoProbe),
        }
    }

    #[inline]
    fn lookup_batch(&self, addrs: &[A], out: &mut [Option<Label>]) {
        match self.algo {
            LookupAlgo::Improved => self.lookup_batch_improved(addrs, out),
            // The historical algorithm is kept as it was, for comparison.
            LookupAlgo::Classic => self.lookup_each(addrs, out),
        }
    }

    fn memory_bytes(&self) -> usize {
        self.slab.len() * std::mem::size_of::<A::Slot>()
            + self.entries.len() * std::mem::size_of::<Entry>()
    }
}

impl<A: SlotLayout> LcTrie<A> {
    /// An empty trie running `algo`: the root pseudo block and no node.
    pub(super) fn empty(algo: LookupAlgo) -> Self {
        let root_header = Kv {
            key: A::ZERO,
            ptr: NONE,
            pos: A::BITS,
            bits: 0,
            slen: A::BITS,
            kind: TNODE,
        };
        LcTrie {
            slab: vec![A::pack(root_header), A::pack(Kv::EMPTY)],
            entries: Vec::new(),
            algo,
        }
    }
}

impl<A: SlotLayout, S: Storage> LcTrie<A, S> {
    /// The algorithm [`Lookup::lookup`] runs.
    pub fn algo(&self) -> LookupAlgo {
        self.algo
    }

    /// The key vector in slot `index`.
    #[inline(always)]
    pub(super) fn kv(&self, index: usize) -> Kv<A> {
        A::unpack(&self.slab[index])
    }

    /// The header of block `block`: the node's own key vector, ptr = parent.
    #[inline(always)]
    pub(super) fn header(&self, block: usize) -> Kv<A> {
        self.kv(block - HEADER)
    }

    /// The prefixes of a `LEAF_LIST` leaf, by ascending suffix length
    /// (longest prefix first).
    #[inline(always)]
    pub(super) fn list_entries(&self, leaf: &Kv<A>) -> &[Entry] {
        debug_assert_eq!(leaf.kind, LEAF_LIST);
        let base = leaf.ptr as usize;
        let count = self.entries[base].slen as usize;
        &self.entries[base + 1..base + 1 + count]
    }

    /// Calls `visit(kv, depth)` for every non-empty key vector below the
    /// root, top node at depth 1.
    fn walk(&self, mut visit: impl FnMut(&Kv<A>, usize)) {
        let mut stack = vec![(self.kv(ROOT), 1usize)];
        while let Some((kv, depth)) = stack.pop() {
            if kv.kind == EMPTY {
                continue;
            }
            visit(&kv, depth);
            if kv.kind == TNODE {
                let block = kv.ptr as usize;
                stack.extend((block..block + (1 << kv.bits)).map(|i| (self.kv(i), depth + 1)));
            }
        }
    }

    /// Shape statistics (one walk over the trie).
    pub fn shape(&self) -> Shape {
        let mut shape = Shape::default();
        let top = self.kv(ROOT);
        if top.kind == TNODE {
            shape.top_bits = top.bits;
        }
        let mut depth_sum = 0usize;
        self.walk(|kv, depth| {
            if kv.is_leaf() {
                shape.leaves += 1;
                depth_sum += depth;
                shape.max_depth = shape.max_depth.max(depth);
            } else {
                shape.tnodes += 1;
                shape.slab_in_use += HEADER + (1 << kv.bits);
            }
        });
        shape.average_leaf_depth = depth_sum as f64 / shape.leaves.max(1) as f64;
        shape
    }

    /// Every prefix and label held, sorted by address then length.
    pub fn prefixes(&self) -> Vec<(Prefix<A>, Label)> {
        let mut out = Vec::new();
        self.walk(|kv, _| {
            let prefix = |slen: u8| Prefix::new_masked(kv.key, A::BITS - slen);
            match kv.kind {
                LEAF => out.push((prefix(kv.slen), kv.ptr)),
                LEAF_LIST => out.extend(
                    self.list_entries(kv)
                        .iter()
                        .map(|entry| (prefix(entry.slen), entry.label)),
                ),
                _ => {}
            }
        });
        out.sort_unstable_by_key(|&(prefix, _)| (prefix.addr(), prefix.plen()));
        out
    }
}

/// Per-look-up work, summed over many look-ups ([`LcTrie::count_lookups`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LookupCounts {
    /// Look-ups counted.
    pub lookups: u64,
    /// Key vectors read (child slots, not headers or leaf entries).
    pub nodes: u64,
    /// Backtracking steps: child-index bits stripped (improved) or chopped (classic).
    pub backtracks: u64,
    /// Distinct 64-byte cache lines read, summed over look-ups.
    pub cache_lines: u64,
}

impl LookupCounts {
    /// Average key vectors read per look-up.
    pub fn nodes_per_lookup(&self) -> f64 {
        self.nodes as f64 / self.lookups.max(1) as f64
    }
    /// Average backtracking steps per look-up.
    pub fn backtracks_per_lookup(&self) -> f64 {
        self.backtracks as f64 / self.lookups.max(1) as f64
    }
    /// Average distinct cache lines per look-up.
    pub fn cache_lines_per_lookup(&self) -> f64 {
        self.cache_lines as f64 / self.lookups.max(1) as f64
    }
}

/// Observes a look-up; the no-op version compiles away.
pub(super) trait Probe {
    fn touch<T>(&mut self, item: &T);
    fn node(&mut self);
    fn backtrack(&mut self);
}

pub(super) struct NoProbe;

impl Probe for NoProbe {
    #[inline(always)]
    fn touch<T>(&mut self, _: &T) {}
    #[inline(always)]
    fn node(&mut self) {}
    #[inline(always)]
    fn backtrack(&mut self) {}
}

struct Counter {
    counts: LookupCounts,
    lines: Vec<usize>,
}

impl Probe for Counter {
    fn touch<T>(&mut self, item: &T) {
        let addr = item as *const T as usize;
        for line in addr >> 6..=(addr + std::mem::size_of::<T>() - 1) >> 6 {
            if !self.lines.contains(&line) {
                self.lines.push(line);
            }
        }
    }
    fn node(&mut self) {
        self.counts.nodes += 1;
    }
    fn backtrack(&mut self) {
        self.counts.backtracks += 1;
    }
}

/// A look-up of the improved algorithm in progress: what a walk needs for
/// its next step, so that a batch can keep several walks in flight.
#[derive(Clone, Copy, Debug)]
struct Walk<A> {
    key: A,
    /// The slab slot the next step reads.
    slot: u32,
    /// The shortest suffix worth finding in that slot: after a bit of a
    /// child index was stripped, a match must have that bit in its host
    /// part (0 when descending).
    min_slen: u32,
    /// Still following the key exactly (no skipped-bit mismatch yet).
    exact: bool,
    /// The deepest node worth backtracking into (its block)...
    pn: u32,
    /// ...its position...
    pn_pos: u32,
    /// ...and what is left of the child index taken there.
    cindex: u32,
}

impl<A: Addr> Walk<A> {
    #[inline(always)]
    fn new(key: A) -> Self {
        Walk {
            key,
            slot: ROOT as u32,
            min_slen: 0,
            exact: true,
            pn: ROOT as u32,
            pn_pos: 0,
            cindex: 0,
        }
    }
}

// PERF: the batch look-up's shape, from interleaved A/B runs against the
// per-key loop at each slice length (docs/bench/lctrie.md, "LC-trie:
// snapshot split, linear withdrawals, batch lookup"): with 1 or 2 keys the
// walk bookkeeping costs more than the overlap gains (0.6-0.9x on RND
// keys); 8 walks beat 12 and 16 on short slices (4-8 keys), 16 beat 8 on
// long ones of dfz-v4-nh (1.70x against 1.39x at 32 keys) and dfz-v6-nh
// announced keys.
/// Slices shorter than this take the per-key loop.
const BATCH_FROM_KEYS: usize = 4;
/// Slices this long or longer run [`WIDE_WALKS`] walks.
const WIDE_FROM_KEYS: usize = 32;
/// Walks in flight for short slices.
const NARROW_WALKS: usize = 8;
/// Walks in flight for long slices.
const WIDE_WALKS: usize = 16;

impl<A: SlotLayout, S: Storage> LcTrie<A, S> {
    #[inline(always)]
    fn read<P: Probe>(&self, index: usize, probe: &mut P) -> Kv<A> {
        let slot = &self.slab[index];
        probe.touch(slot);
        A::unpack(slot)
    }

    /// The label of the first (longest) prefix of leaf `n`.
    #[inline(always)]
    fn first_label<P: Probe>(&self, n: Kv<A>, probe: &mut P) -> Label {
        if n.kind == LEAF {
            n.ptr
        } else {
            let entry = &self.entries[n.ptr as usize + 1];
            probe.touch(entry);
            entry.label
        }
    }

    /// The longest prefix of leaf `n` containing `key`, by suffix length:
    /// a prefix with suffix `slen` matches when `key ^ n.key` has no bit at
    /// or above `slen`.
    #[inline(always)]
    fn leaf_match<P: Probe>(&self, n: Kv<A>, key: A, probe: &mut P) -> Option<Label> {
        let diff = key ^ n.key;
        let fits = |slen: u8| slen >= A::BITS || diff >> slen as u32 == A::ZERO;
        if n.kind == LEAF {
            return fits(n.slen).then_some(n.ptr);
        }
        probe.touch(&self.entries[n.ptr as usize]);
        for entry in self.list_entries(&n) {
            probe.touch(entry);
            if fits(entry.slen) {
                return Some(entry.label);
            }
        }
        None
    }

    /// One step of Duyck's look-up (module header, first algorithm): reads
    /// the slot `walk.slot` and decides the next one, or the answer.
    #[inline(always)]
    fn step<P: Probe>(&self, walk: &mut Walk<A>, probe: &mut P) -> ControlFlow<Option<Label>> {
        probe.node();
        let n = self.read(walk.slot as usize, probe);
        let key = walk.key;
        'candidate: {
            if n.kind == EMPTY || (n.slen as u32) < walk.min_slen {
                break 'candidate;
            }
            if walk.exact {
                // Bits of the key above pos + bits that differ from the
                // node key land above the index: one compare checks the
                // skipped bits and bounds the index.
                let index = (key ^ n.key) >> n.pos as u32;
                if index >> n.bits as u32 == A::ZERO {
                    if n.bits == 0 {
                        // A leaf whose key is the whole address.
                        return ControlFlow::Break(Some(self.first_label(n, probe)));
                    }
                    let index = index.low_u64() as u32;
                    if n.slen > n.pos {
                        walk.pn = n.ptr;
                        walk.pn_pos = n.pos as u32;
                        walk.cindex = index;
                    }
                    walk.slot = n.ptr + index;
                    walk.min_slen = 0;
                    return ControlFlow::Continue(());
                }
                walk.exact = false;
            }
            // Prefix-match mode: a prefix below `n` can match only if the
            // key agrees with the node key from its lowest set bit up.
            let mismatch = (key ^ n.key) & (n.key | n.key.wrapping_neg());
            if mismatch != A::ZERO || n.slen == n.pos {
                break 'candidate;
            }
            if n.bits != 0 {
                // Every candidate prefix ends above the first differing
                // bit, so its host bits, and this child index, are zero.
                walk.slot = n.ptr;
                walk.min_slen = 0;
                return ControlFlow::Continue(());
            }
            if let Some(label) = self.leaf_match(n, key, probe) {
                return ControlFlow::Break(Some(label));
            }
        }
        // Backtrack: strip the lowest set bit of the child index, walking up
        // to the parent when none is left.
        walk.exact = false;
        while walk.cindex == 0 {
            if walk.pn as usize == ROOT {
                return ControlFlow::Break(None);
            }
            let header = self.read(walk.pn as usize - HEADER, probe);
            if header.ptr as usize == ROOT {
                return ControlFlow::Break(None);
            }
            let parent_header = self.read(header.ptr as usize - HEADER, probe);
            walk.cindex =
                ((header.key ^ parent_header.key) >> parent_header.pos as u32).low_u64() as u32;
            walk.pn = header.ptr;
            walk.pn_pos = parent_header.pos as u32;
        }
        probe.backtrack();
        // A match in the stripped child must leave the stripped bit in its
        // host part.
        walk.min_slen = walk.pn_pos + walk.cindex.trailing_zeros() + 1;
        walk.cindex &= walk.cindex - 1;
        walk.slot = walk.pn + walk.cindex;
        ControlFlow::Continue(())
    }

    /// Duyck's look-up of one key.
    #[inline(always)]
    pub(super) fn lookup_improved(&self, key: A) -> Option<Label> {
        self.walk_to_end(Walk::new(key), &mut NoProbe)
    }

    #[inline(always)]
    fn walk_to_end<P: Probe>(&self, mut walk: Walk<A>, probe: &mut P) -> Option<Label> {
        loop {
            if let ControlFlow::Break(label) = self.step(&mut walk, probe) {
                return label;
            }
        }
    }

    /// Duyck's look-up of every key of `addrs`: the per-key loop for a
    /// few keys, else [`LcTrie::lookup_walks`] with as many walks as the
    /// slice length pays for.
    // PERF: inlined into `lookup_batch`, so a slice of 1-3 keys runs the
    // per-key loop with no call in between. Against `lookup_each` at 1-3
    // keys: 0.92-0.98x (IPv6 rnd) with the call, 0.88-1.05x without; both
    // within the pair-to-pair noise of the loaded machine (0.7-1.25).
    #[inline(always)]
    pub(super) fn lookup_batch_improved(&self, addrs: &[A], out: &mut [Option<Label>]) {
        match addrs.len() {
            0..BATCH_FROM_KEYS => self.lookup_each(addrs, out),
            BATCH_FROM_KEYS..WIDE_FROM_KEYS => self.lookup_walks::<NARROW_WALKS>(addrs, out),
            _ => self.lookup_walks::<WIDE_WALKS>(addrs, out),
        }
    }

    /// Duyck's look-up of every key of `addrs`, `W` walks at a time: each
    /// round takes one step of every walk in flight (one slot read) and
    /// prefetches the slot its next step reads, so the cache misses of
    /// different keys overlap instead of following each other.
    fn lookup_walks<const W: usize>(&self, addrs: &[A], out: &mut [Option<Label>]) {
        assert!(out.len() >= addrs.len(), "output slice shorter than input");
        let mut walks = [Walk::new(A::ZERO); W];
        // The key each walk looks up (its index in `addrs`). Walks
        // `0..live` are in flight; a finished walk with no key left to
        // start is replaced by the last one in flight.
        let mut owners = [0usize; W];
        let mut next = 0;
        let mut live = 0;
        while live < W {
            let Some((walk, owner)) = self.start_walk(addrs, out, &mut next) else {
                break;
            };
            (walks[live], owners[live]) = (walk, owner);
            live += 1;
        }
        while live > 0 {
            let mut lane = 0;
            while lane < live {
                match self.step(&mut walks[lane], &mut NoProbe) {
                    ControlFlow::Continue(()) => {
                        prefetch(self.slab.as_ptr().wrapping_add(walks[lane].slot as usize));
                        lane += 1;
                    }
                    ControlFlow::Break(label) => {
                        out[owners[lane]] = label;
                        match self.start_walk(addrs, out, &mut next) {
                            Some((walk, owner)) => {
                                (walks[lane], owners[lane]) = (walk, owner);
                                lane += 1;
                            }
                            None => {
                                live -= 1;
                                (walks[lane], owners[lane]) = (walks[live], owners[live]);
                            }
                        }
                    }
                }
            }
        }
    }

    /// Starts the walk of key `*next` and takes its first step at once
    /// (the top node's slot is always cached); keys answered by that step
    /// are written to `out` and the next key taken. Returns the walk in
    /// flight, its next slot prefetched, and its key's index, or `None`
    /// when no key is left.
    #[inline(always)]
    fn start_walk(
        &self,
        addrs: &[A],
        out: &mut [Option<Label>],
        next: &mut usize,
    ) -> Option<(Walk<A>, usize)> {
        while let Some(&key) = addrs.get(*next) {
            let index = *next;
            *next += 1;
            let mut walk = Walk::new(key);
            match self.step(&mut walk, &mut NoProbe) {
                ControlFlow::Break(label) => out[index] = label,
                ControlFlow::Continue(()) => {
                    prefetch(self.slab.as_ptr().wrapping_add(walk.slot as usize));
                    return Some((walk, index));
                }
            }
        }
        None
    }

    /// Looks `addr` up with `algo` and adds its work to `counts`. Slower
    /// than [`Lookup::lookup`] (it records cache lines); for measurements only.
    pub fn lookup_counted(
        &self,
        addr: A,
        algo: LookupAlgo,
        counts: &mut LookupCounts,
    ) -> Option<Label> {
        let mut counter = Counter {
            counts: LookupCounts::default(),
            lines: Vec::new(),
        };
        let result = match algo {
            LookupAlgo::Improved => self.walk_to_end(Walk::new(addr), &mut counter),
            LookupAlgo::Classic => self.lookup_classic(addr, &mut counter),
        };
        counts.lookups += 1;
        counts.nodes += counter.counts.nodes;
        counts.backtracks += counter.counts.backtracks;
        counts.cache_lines += counter.lines.len() as u64;
        result
    }

    /// Sums [`LcTrie::lookup_counted`] over `addrs`.
    pub fn count_lookups(&self, addrs: &[A], algo: LookupAlgo) -> LookupCounts {
        let mut counts = LookupCounts::default();
        for &addr in addrs {
            self.lookup_counted(addr, algo, &mut counts);
        }
        counts
    }

    /// The look-up of Linux 3.19 (module header, second algorithm), in
    /// positions counted from the most significant bit as that code had them.
    #[inline(always)]
    pub(super) fn lookup_classic<P: Probe>(&self, key: A, probe: &mut P) -> Option<Label> {
        let width = A::BITS as u32;
        // Bits [offset, offset + len) from the top, as an integer.
        let extract = |value: A, offset: u32, len: u32| -> A {
            if len == 0 {
                A::ZERO
            } else {
                (value << offset) >> (width - len)
            }
        };
        let mask_pfx = |value: A, plen: u32| -> A {
            if plen == 0 {
                A::ZERO
            } else {
                value & (A::MAX << (width - plen))
            }
        };
        let msb_pos = |n: &Kv<A>| width - n.pos as u32 - n.bits as u32;
        // Leaves compare the masked key with each prefix, longest first.
        let check_leaf = |n: Kv<A>, probe: &mut P| -> Option<Label> {
            if n.kind == LEAF {
                let plen = width - n.slen as u32;
                return (mask_pfx(key, plen) == n.key).then_some(n.ptr);
            }
            probe.touch(&self.entries[n.ptr as usize]);
            for entry in self.list_entries(&n) {
                probe.touch(entry);
                if mask_pfx(key, width - entry.slen as u32) == n.key {
                    return Some(entry.label);
                }
            }
            None
        };

        probe.node();
        let top = self.read(ROOT, probe);
        match top.kind {
            EMPTY => return None,
            LEAF | LEAF_LIST => return check_leaf(top, probe),
            _ => {}
        }
        let mut pn = top.ptr as usize;
        let mut pos = msb_pos(&top);
        let mut bits = top.bits as u32;
        let mut chopped_off = 0u32;
        let mut current_prefix_length = width;
        let mut cindex = 0u32;
        'walk: loop {
            if chopped_off == 0 {
                cindex = extract(mask_pfx(key, current_prefix_length), pos, bits).low_u64() as u32;
            }
            probe.node();
            let n = self.read(pn + cindex as usize, probe);
            'descend: {
                match n.kind {
                    EMPTY => break 'descend,
                    LEAF | LEAF_LIST => {
                        if let Some(label) = check_leaf(n, probe) {
                            return Some(label);
                        }
                        break 'descend;
                    }
                    _ => {}
                }
                let cn_pos = msb_pos(&n);
                // Doing prefix matching already: the skipped bits of the new
                // node below the prefix length must be zero, and it must
                // have a zero child to follow.
                if current_prefix_length < pos + bits {
                    probe.node();
                    if extract(n.key, current_prefix_length, cn_pos - current_prefix_length)
                        != A::ZERO
                        || self.read(n.ptr as usize, probe).kind == EMPTY
                    {
                        break 'descend;
                    }
                }
                // Skipped bits that differ from the key: the node key must
                // be zero from the first mismatch on, and matching goes on
                // with the prefix length cut there.
                let pref_mismatch = mask_pfx(n.key ^ key, cn_pos);
                if pref_mismatch != A::ZERO {
                    let mp = pref_mismatch.leading_zeros();
                    if extract(n.key, mp, cn_pos - mp) != A::ZERO {
                        break 'descend;
                    }
                    if current_prefix_length >= cn_pos {
                        current_prefix_length = mp;
                    }
                }
                pn = n.ptr as usize;
                pos = cn_pos;
                bits = n.bits as u32;
                chopped_off = 0;
                continue 'walk;
            }
            // Backtrack: chop the next set bit off the index, or go up.
            loop {
                chopped_off += 1;
                while chopped_off <= bits && cindex & (1 << (chopped_off - 1)) == 0 {
                    chopped_off += 1;
                }
                let remaining = (pos + bits) as i64 - chopped_off as i64;
                if remaining >= 0 && current_prefix_length as i64 > remaining {
                    current_prefix_length = remaining as u32;
                }
                if chopped_off <= bits {
                    probe.backtrack();
                    cindex &= !(1 << (chopped_off - 1));
                    break;
                }
                let header = self.read(pn - HEADER, probe);
                let parent = header.ptr as usize;
                if parent == ROOT {
                    return None;
                }
                let parent_header = self.read(parent - HEADER, probe);
                pos = msb_pos(&parent_header);
                bits = parent_header.bits as u32;
                cindex = extract(header.key, pos, bits).low_u64() as u32;
                pn = parent;
                chopped_off = 0;
            }
        }
    }
}
