//! Insert, delete and resize (inflate, halve, collapse) of the LC-trie, as
//! fib_trie does them; plus structural checks for tests.

use super::*;

/// Resizes per node per rebalance step (fib_trie's `MAX_WORK`): bounds the
/// cost of one update when a node could keep doubling.
const MAX_WORK: u32 = 10;
/// Fill thresholds in percent (fib_trie's defaults).
const INFLATE_THRESHOLD: usize = 50;
const INFLATE_THRESHOLD_ROOT: usize = 30;
const HALVE_THRESHOLD: usize = 25;
const HALVE_THRESHOLD_ROOT: usize = 15;

impl<A: LcKey> LcTrie<A> {
    fn limit_error(&self) -> BuildError {
        BuildError::Limit {
            engine: self.name(),
            why: format!(
                "the trie needs more than {MAX_SLAB} key-vector slots; \
                 use `dxr` or `radix` for a table this large"
            ),
        }
    }

    /// The header of block `block`: the node's own key vector, ptr = parent.
    #[inline]
    fn header(&self, block: usize) -> Kv<A> {
        self.kv(block - HEADER)
    }

    /// The key vector that describes block `block` in its parent.
    fn kv_of(&self, block: usize) -> Kv<A> {
        Kv {
            ptr: block as u32,
            ..self.header(block)
        }
    }

    /// `(full, empty)` child counts of `block`.
    fn counts(&self, block: usize) -> (usize, usize) {
        let kv = self.kv(block - 1);
        (kv.key.low_usize(), kv.ptr as usize)
    }

    fn set_counts(&mut self, block: usize, full: usize, empty: usize) {
        let kv = self.kv_mut(block - 1);
        kv.key = A::from_usize(full);
        kv.ptr = empty as u32;
    }

    /// Which child of `block` holds `key` (whose bits above the node agree).
    #[inline]
    fn index_in(&self, block: usize, key: A) -> usize {
        if block == ROOT {
            return 0;
        }
        let header = self.header(block);
        key.xor(header.key).shr(header.pos as u32).low_usize() & ((1usize << header.bits) - 1)
    }

    /// The slot (in the parent's block) holding the key vector of `block`.
    fn slot_of(&self, block: usize) -> usize {
        let header = self.header(block);
        let parent = header.ptr as usize;
        parent + self.index_in(parent, header.key)
    }

    fn set_slen(&mut self, block: usize, slen: u8) {
        self.kv_mut(block - HEADER).slen = slen;
        let slot = self.slot_of(block);
        self.kv_mut(slot).slen = slen;
    }

    /// A child of a node is "full" when it is a tnode with no skipped bits.
    fn is_full(node: &Kv<A>, child: &Kv<A>) -> bool {
        child.kind == TNODE && child.pos + child.bits == node.pos
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
        let block = match self.free_blocks[bits as usize].pop() {
            Some(block) => {
                let block = block as usize;
                self.slab[block..block + size].fill(A::slot(Kv::EMPTY));
                block
            }
            None => {
                let block = self.slab.len() + HEADER;
                if block + size > MAX_SLAB {
                    return Err(self.limit_error());
                }
                self.slab.resize(block + size, A::slot(Kv::EMPTY));
                block
            }
        };
        let shift = pos as u32 + bits as u32;
        let key = if shift >= A::BITS as u32 {
            A::ZERO
        } else {
            key.shr(shift).shl(shift)
        };
        *self.kv_mut(block - HEADER) = Kv {
            key,
            ptr: parent as u32,
            pos,
            bits,
            slen: pos,
            kind: TNODE,
        };
        self.set_counts(block, 0, size);
        Ok(block)
    }

    fn free_block(&mut self, block: usize) {
        let bits = self.header(block).bits;
        self.free_blocks[bits as usize].push(block as u32);
    }

    /// Stores `kv` as child `index` of `block`, keeping the child counts and
    /// the child's parent link.
    fn put_child(&mut self, block: usize, index: usize, kv: Kv<A>) {
        let node = self.header(block);
        let old = self.kv(block + index);
        let (mut full, mut empty) = self.counts(block);
        if old.kind == EMPTY && kv.kind != EMPTY {
            empty -= 1;
        } else if old.kind != EMPTY && kv.kind == EMPTY {
            empty += 1;
        }
        match (Self::is_full(&node, &old), Self::is_full(&node, &kv)) {
            (true, false) => full -= 1,
            (false, true) => full += 1,
            _ => {}
        }
        self.set_counts(block, full, empty);
        *self.kv_mut(block + index) = kv;
        if kv.kind == TNODE {
            self.kv_mut(kv.ptr as usize - HEADER).ptr = block as u32;
        }
    }

    /// The longest suffix below `block`: `max(pos, children's slen)`. A
    /// child at index `i` holds keys with bit `pos + tz(i)` set, so its
    /// suffixes are at most that long; only indices that are multiples of a
    /// growing stride can raise the maximum (fib_trie's `update_suffix`).
    fn compute_slen(&self, block: usize) -> u8 {
        let node = self.header(block);
        let size = 1usize << node.bits;
        let mut slen = node.pos;
        let mut index = 0;
        while index < size {
            let child = self.kv(block + index);
            if child.kind != EMPTY && child.slen > slen {
                slen = child.slen;
            }
            let stride_bits = (slen - node.pos) as u32 + 1;
            if stride_bits >= node.bits as u32 {
                break;
            }
            let stride = 1usize << stride_bits;
            index = (index & !(stride - 1)) + stride;
        }
        slen
    }

    /// Raises the suffix length of `block` and its ancestors to `slen`.
    fn push_suffix(&mut self, mut block: usize, slen: u8) {
        while block != ROOT {
            let header = self.header(block);
            if header.slen >= slen {
                break;
            }
            self.set_slen(block, slen);
            block = header.ptr as usize;
        }
    }

    /// Recomputes suffix lengths upwards after a suffix of length `removed`
    /// left `block`'s sub-trie.
    fn pull_suffix(&mut self, mut block: usize, removed: u8) {
        while block != ROOT {
            let header = self.header(block);
            if header.slen != removed {
                break;
            }
            let slen = self.compute_slen(block);
            if slen == header.slen {
                break;
            }
            self.set_slen(block, slen);
            block = header.ptr as usize;
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
            let child = key.xor(n.key).shr(n.pos as u32);
            if !child.shr(n.bits as u32).is_zero() {
                return (block, index);
            }
            block = n.ptr as usize;
            index = child.low_usize();
        }
    }

    fn leaf_entries(&self, leaf: &Kv<A>) -> Vec<Entry> {
        match leaf.kind {
            LEAF => vec![Entry {
                label: leaf.ptr,
                slen: leaf.slen,
            }],
            _ => {
                let base = leaf.ptr as usize;
                let count = self.entries[base].slen as usize;
                self.entries[base + 1..base + 1 + count].to_vec()
            }
        }
    }

    /// A leaf key vector for `entries` (sorted by `slen`, not empty),
    /// reusing or freeing the entry block of `old`.
    fn make_leaf(&mut self, key: A, entries: &[Entry], old: &Kv<A>) -> Kv<A> {
        let old_class = (old.kind == LEAF_LIST).then(|| self.entries[old.ptr as usize].label);
        let slen = entries.last().map_or(0, |e| e.slen);
        if entries.len() == 1 {
            if let Some(class) = old_class {
                self.free_entries[class as usize].push(old.ptr);
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
        // Blocks of 2^class entries, the first one a header (count, class).
        let class = (entries.len() + 1).next_power_of_two().trailing_zeros();
        let base = match old_class {
            Some(old_class) if old_class == class => old.ptr as usize,
            _ => {
                if let Some(old_class) = old_class {
                    self.free_entries[old_class as usize].push(old.ptr);
                }
                match self.free_entries[class as usize].pop() {
                    Some(base) => base as usize,
                    None => {
                        let base = self.entries.len();
                        self.entries
                            .resize(base + (1 << class), Entry { label: 0, slen: 0 });
                        base
                    }
                }
            }
        };
        self.entries[base] = Entry {
            label: class,
            slen: entries.len() as u8,
        };
        self.entries[base + 1..base + 1 + entries.len()].copy_from_slice(entries);
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
        if (n.kind == LEAF || n.kind == LEAF_LIST) && n.key == key {
            let mut entries = self.leaf_entries(&n);
            match entries.binary_search_by_key(&slen, |e| e.slen) {
                Ok(at) => entries[at].label = label,
                Err(at) => {
                    entries.insert(at, Entry { label, slen });
                    self.prefixes += 1;
                }
            }
            let leaf = self.make_leaf(key, &entries, &n);
            // A leaf is never "full" and stays non-empty: counts unchanged.
            *self.kv_mut(tp + index) = leaf;
            if leaf.slen > n.slen {
                self.push_suffix(tp, leaf.slen);
            }
            return Ok(());
        }
        self.prefixes += 1;
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
            let pos = (A::BITS as u32 - 1 - key.xor(n.key).leading_zeros()) as u8;
            let tn = self.alloc_block(1, key, pos, tp)?;
            let at = self.index_in(tn, n.key);
            self.put_child(tn, at, n);
            self.kv_mut(tn - HEADER).slen = pos.max(n.slen);
            let kv = self.kv_of(tn);
            self.put_child(tp, index, kv);
            tp = tn;
        }
        let at = self.index_in(tp, key);
        self.put_child(tp, at, leaf);
        self.push_suffix(tp, slen);
        self.rebalance(tp)
    }

    /// Removes `prefix` if present.
    pub(super) fn remove(&mut self, prefix: Prefix<A>) {
        let key = prefix.addr();
        let slen = A::BITS - prefix.plen();
        let (tp, index) = self.find(key);
        let n = self.kv(tp + index);
        if !((n.kind == LEAF || n.kind == LEAF_LIST) && n.key == key) {
            return;
        }
        let mut entries = self.leaf_entries(&n);
        let Ok(at) = entries.binary_search_by_key(&slen, |e| e.slen) else {
            return;
        };
        entries.remove(at);
        self.prefixes -= 1;
        if !entries.is_empty() {
            let leaf = self.make_leaf(key, &entries, &n);
            *self.kv_mut(tp + index) = leaf;
            if leaf.slen < n.slen {
                self.pull_suffix(tp, n.slen);
            }
            return;
        }
        self.put_child(tp, index, Kv::EMPTY);
        self.pull_suffix(tp, n.slen);
        // Rebalancing only allocates when inflating, and a removal never
        // makes a node fuller; the error cannot occur.
        let _ = self.rebalance(tp);
    }

    /// Resizes `block` and every ancestor, bottom up.
    fn rebalance(&mut self, mut block: usize) -> Result<(), BuildError> {
        while block != ROOT {
            block = self.resize(block)?;
        }
        Ok(())
    }

    fn should_inflate(&self, parent: usize, block: usize) -> bool {
        let node = self.header(block);
        let size = 1usize << node.bits;
        let (full, empty) = self.counts(block);
        let used = size - empty + full;
        let threshold = size
            * if parent == ROOT {
                INFLATE_THRESHOLD_ROOT
            } else {
                INFLATE_THRESHOLD
            };
        used > 1 && node.pos > 0 && node.bits < MAX_BITS && 50 * used >= threshold
    }

    fn should_halve(&self, parent: usize, block: usize) -> bool {
        let node = self.header(block);
        let size = 1usize << node.bits;
        let (_, empty) = self.counts(block);
        let used = size - empty;
        let threshold = size
            * if parent == ROOT {
                HALVE_THRESHOLD_ROOT
            } else {
                HALVE_THRESHOLD
            };
        used > 1 && node.bits > 1 && 100 * used < threshold
    }

    fn should_collapse(&self, block: usize) -> bool {
        let size = 1usize << self.header(block).bits;
        size - self.counts(block).1 < 2
    }

    /// Inflates or halves `block` while the thresholds say so, collapses it
    /// if it has fewer than two children; returns its parent.
    fn resize(&mut self, block: usize) -> Result<usize, BuildError> {
        let parent = self.header(block).ptr as usize;
        let mut block = block;
        let mut work = MAX_WORK;
        while work > 0 && self.should_inflate(parent, block) {
            block = self.inflate(block)?;
            work -= 1;
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
        }
        if self.should_collapse(block) {
            self.collapse(block);
        }
        Ok(parent)
    }

    /// Replaces `block` by one of twice the stride, one bit lower.
    fn inflate(&mut self, old: usize) -> Result<usize, BuildError> {
        let node = self.header(old);
        let tn = self.alloc_block(node.bits + 1, node.key, node.pos - 1, node.ptr as usize)?;
        // The bit the new node tests on top of the old ones.
        let high = A::from_usize(1).shl(node.pos as u32 - 1);
        for i in (0..1usize << node.bits).rev() {
            let inode = self.kv(old + i);
            if inode.kind == EMPTY {
                continue;
            }
            if !Self::is_full(&node, &inode) {
                let at = self.index_in(tn, inode.key);
                self.put_child(tn, at, inode);
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
            let node1 = self.alloc_block(inode.bits - 1, inode.key.or(high), inode.pos, tn)?;
            let node0 = self.alloc_block(inode.bits - 1, inode.key, inode.pos, tn)?;
            for j in 0..half {
                let (zero, one) = (self.kv(iblock + j), self.kv(iblock + half + j));
                self.put_child(node0, j, zero);
                self.put_child(node1, j, one);
            }
            for half_block in [node0, node1] {
                self.kv_mut(half_block - HEADER).slen = self.compute_slen(half_block);
            }
            self.free_block(iblock);
            let (kv1, kv0) = (self.kv_of(node1), self.kv_of(node0));
            self.put_child(tn, 2 * i + 1, kv1);
            self.put_child(tn, 2 * i, kv0);
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
                    self.kv_mut(pair - HEADER).slen = self.compute_slen(pair);
                    let kv = self.kv_of(pair);
                    self.put_child(tn, i / 2, kv);
                }
            }
        }
        self.replace(old, tn)
    }

    /// Puts the new block `tn` where `old` was, frees `old`, fixes suffix
    /// lengths and resizes the new node's full children; returns `tn`.
    fn replace(&mut self, old: usize, tn: usize) -> Result<usize, BuildError> {
        let old_node = self.header(old);
        let parent = old_node.ptr as usize;
        self.kv_mut(tn - HEADER).slen = self.compute_slen(tn);
        let kv = self.kv_of(tn);
        let at = self.index_in(parent, kv.key);
        self.put_child(parent, at, kv);
        self.free_block(old);
        if kv.slen > old_node.slen {
            self.push_suffix(parent, kv.slen);
        } else if kv.slen < old_node.slen {
            self.pull_suffix(parent, old_node.slen);
        }
        for i in (0..1usize << kv.bits).rev() {
            let child = self.kv(tn + i);
            if Self::is_full(&kv, &child) {
                self.resize(child.ptr as usize)?;
            }
        }
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
        let at = self.index_in(parent, node.key);
        self.put_child(parent, at, child);
        self.free_block(old);
        if child.kind == EMPTY || child.slen < node.slen {
            self.pull_suffix(parent, node.slen);
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
        let mut stack = vec![(top, 1usize)];
        while let Some((kv, depth)) = stack.pop() {
            match kv.kind {
                EMPTY => {}
                LEAF | LEAF_LIST => {
                    shape.leaves += 1;
                    depth_sum += depth;
                    shape.max_depth = shape.max_depth.max(depth);
                }
                _ => {
                    shape.tnodes += 1;
                    shape.slab_in_use += HEADER + (1 << kv.bits);
                    let block = kv.ptr as usize;
                    for i in 0..1usize << kv.bits {
                        stack.push((self.kv(block + i), depth + 1));
                    }
                }
            }
        }
        shape.average_leaf_depth = depth_sum as f64 / shape.leaves.max(1) as f64;
        shape
    }

    /// Every prefix and label held, sorted by address then length.
    pub fn prefixes(&self) -> Vec<(Prefix<A>, Label)> {
        let mut out = Vec::with_capacity(self.prefixes);
        let mut stack = vec![self.kv(ROOT)];
        while let Some(kv) = stack.pop() {
            match kv.kind {
                EMPTY => {}
                LEAF | LEAF_LIST => {
                    for entry in self.leaf_entries(&kv) {
                        out.push((
                            Prefix::new_masked(kv.key, A::BITS - entry.slen),
                            entry.label,
                        ));
                    }
                }
                _ => {
                    for i in 0..1usize << kv.bits {
                        stack.push(self.kv(kv.ptr as usize + i));
                    }
                }
            }
        }
        out.sort_unstable_by_key(|&(prefix, _)| (prefix.addr(), prefix.plen()));
        out
    }

    /// Checks every structural invariant look-ups and updates rely on;
    /// returns the first violation found. For tests.
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut stack = vec![(ROOT, 0usize)];
        let mut count = 0usize;
        while let Some((block, index)) = stack.pop() {
            let kv = self.kv(block + index);
            let parent = self.header(block);
            let here = format!("slot {} of block {block} (key {:?})", index, kv.key);
            if kv.kind == EMPTY {
                continue;
            }
            // The key agrees with the parent's bits and the slot index.
            if block != ROOT {
                let above = parent.pos as u32 + parent.bits as u32;
                let agree = above >= A::BITS as u32 || kv.key.xor(parent.key).shr(above).is_zero();
                if !agree || self.index_in(block, kv.key) != index {
                    return Err(format!("{here}: key does not belong in this slot"));
                }
            }
            if kv.kind != TNODE {
                let entries = self.leaf_entries(&kv);
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
                if kv.slen < A::BITS
                    && !kv
                        .key
                        .shl(A::BITS as u32 - 1 - kv.slen as u32)
                        .shl(1)
                        .is_zero()
                {
                    return Err(format!("{here}: host bits set under a prefix"));
                }
                continue;
            }
            let child_block = kv.ptr as usize;
            let header = self.header(child_block);
            if header.ptr as usize != block {
                return Err(format!("{here}: parent link points to {}", header.ptr));
            }
            if self.kv_of(child_block) != kv {
                return Err(format!("{here}: key vector differs from header {header:?}"));
            }
            if kv.bits == 0 || kv.bits > MAX_BITS {
                return Err(format!("{here}: stride {}", kv.bits));
            }
            let shift = kv.pos as u32 + kv.bits as u32;
            if block != ROOT && shift > parent.pos as u32 {
                return Err(format!("{here}: node overlaps its parent's bits"));
            }
            if shift < A::BITS as u32 && !kv.key.shl(A::BITS as u32 - shift).is_zero() {
                return Err(format!("{here}: key bits below pos + bits"));
            }
            let size = 1usize << kv.bits;
            let children: Vec<Kv<A>> = (child_block..child_block + size)
                .map(|i| self.kv(i))
                .collect();
            let empty = children.iter().filter(|c| c.kind == EMPTY).count();
            let full = children.iter().filter(|c| Self::is_full(&kv, c)).count();
            if self.counts(child_block) != (full, empty) {
                return Err(format!(
                    "{here}: counts {:?}, actual (full, empty) = ({full}, {empty})",
                    self.counts(child_block)
                ));
            }
            if size - empty < 2 {
                return Err(format!("{here}: node with {} children", size - empty));
            }
            let slen = children
                .iter()
                .filter(|c| c.kind != EMPTY)
                .map(|c| c.slen)
                .fold(kv.pos, u8::max);
            if slen != kv.slen {
                return Err(format!("{here}: slen {} but children say {slen}", kv.slen));
            }
            for i in 0..size {
                stack.push((child_block, i));
            }
        }
        if count != self.prefixes {
            return Err(format!("{count} prefixes found, {} counted", self.prefixes));
        }
        Ok(())
    }
}
