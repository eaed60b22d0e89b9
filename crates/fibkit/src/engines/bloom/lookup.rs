//! The lookup snapshot of `bloom` and its searches (linear and guided,
//! per key and in batches), with the counting probe.

use super::exact::{self, ExactSlot};
use super::filter::{FilterBlock, KeyHash};
use super::tree::{TreeNode, NO_NODE};
use super::Search;
use crate::addr::Addr;
use crate::engine::Lookup;
use crate::labels::LabelSlot;
use crate::prefix::Label;
use crate::storage::{Owned, Plain, Storage};

/// Observes a lookup: [`NoProbe`] compiles away, [`Counter`] counts.
trait Probe {
    fn hash(&mut self);
    fn bit(&mut self);
    fn exact(&mut self);
    fn fallback(&mut self);
}

struct NoProbe;

impl Probe for NoProbe {
    #[inline(always)]
    fn hash(&mut self) {}
    #[inline(always)]
    fn bit(&mut self) {}
    #[inline(always)]
    fn exact(&mut self) {}
    #[inline(always)]
    fn fallback(&mut self) {}
}

/// Per-lookup work as \[Yeg18\] counts it, summed over many lookups
/// ([`Bloom::count_lookups`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct LookupCounts {
    /// Lookups counted.
    pub lookups: u64,
    /// Filter bits read.
    pub bit_lookups: u64,
    /// Keys hashed (one hash computation per key, whatever number of its
    /// bits is read).
    pub hashes: u64,
    /// Exact-table lookups (the paper's FIB lookups).
    pub exact_lookups: u64,
    /// Guided lookups that fell back to the linear search (the paper's
    /// defaults).
    pub fallbacks: u64,
}

impl Probe for LookupCounts {
    fn hash(&mut self) {
        self.hashes += 1;
    }
    fn bit(&mut self) {
        self.bit_lookups += 1;
    }
    fn exact(&mut self) {
        self.exact_lookups += 1;
    }
    fn fallback(&mut self) {
        self.fallbacks += 1;
    }
}

impl LookupCounts {
    fn per_lookup(&self, count: u64) -> f64 {
        count as f64 / self.lookups.max(1) as f64
    }

    /// Average filter bits read per lookup.
    pub fn bit_lookups_per_lookup(&self) -> f64 {
        self.per_lookup(self.bit_lookups)
    }

    /// Average hash computations per lookup.
    pub fn hashes_per_lookup(&self) -> f64 {
        self.per_lookup(self.hashes)
    }

    /// Average exact-table lookups per lookup.
    pub fn exact_lookups_per_lookup(&self) -> f64 {
        self.per_lookup(self.exact_lookups)
    }

    /// Share of lookups that fell back to the linear search.
    pub fn fallback_rate(&self) -> f64 {
        self.per_lookup(self.fallbacks)
    }

    /// The averages as `(name, value)` rows.
    pub fn rows(&self) -> Vec<(String, String)> {
        vec![
            ("lookups counted".into(), self.lookups.to_string()),
            (
                "bit lookups".into(),
                format!("{:.2}", self.bit_lookups_per_lookup()),
            ),
            (
                "hash computations".into(),
                format!("{:.2}", self.hashes_per_lookup()),
            ),
            (
                "exact-table lookups".into(),
                format!("{:.2}", self.exact_lookups_per_lookup()),
            ),
            (
                "fallbacks (default)".into(),
                format!("{:.1}%", 100.0 * self.fallback_rate()),
            ),
        ]
    }
}

/// The lookup snapshot of a `bloom` engine (see the module header), in
/// storage `S`.
pub struct Bloom<A: Addr + Plain, S: Storage = Owned> {
    pub(super) search: Search,
    /// Bits per key.
    pub(super) k: u32,
    /// Bits of a marker's BMP code (guided; 0 for linear).
    pub(super) bmp_bits: u32,
    pub(super) filter: S::Array<FilterBlock>,
    pub(super) lengths: S::Array<u8>,
    pub(super) tree: S::Array<TreeNode>,
    pub(super) table: S::Array<ExactSlot<A>>,
    pub(super) results: S::Array<LabelSlot>,
}

impl<A: Addr + Plain, S: Storage> Clone for Bloom<A, S> {
    fn clone(&self) -> Self {
        Bloom {
            search: self.search,
            k: self.k,
            bmp_bits: self.bmp_bits,
            filter: self.filter.clone(),
            lengths: self.lengths.clone(),
            tree: self.tree.clone(),
            table: self.table.clone(),
            results: self.results.clone(),
        }
    }

    /// Reuses this snapshot's memory (filter and exact table) instead of
    /// allocating and faulting in new pages.
    fn clone_from(&mut self, source: &Self) {
        self.search = source.search;
        self.k = source.k;
        self.bmp_bits = source.bmp_bits;
        self.filter.clone_from(&source.filter);
        self.lengths.clone_from(&source.lengths);
        self.tree.clone_from(&source.tree);
        self.table.clone_from(&source.table);
        self.results.clone_from(&source.results);
    }
}

impl<A: Addr + Plain, S: Storage> Bloom<A, S> {
    /// The BMP code of a key that is itself a prefix: all `bmp_bits` ones.
    #[inline(always)]
    fn prefix_code(&self) -> u32 {
        (1 << self.bmp_bits) - 1
    }

    #[inline(always)]
    fn hash<P: Probe>(&self, addr: A, plen: u8, probe: &mut P) -> KeyHash {
        probe.hash();
        KeyHash::of(addr.masked(plen), plen)
    }

    #[inline(always)]
    fn block(&self, hash: KeyHash) -> &FilterBlock {
        &self.filter[hash.block(self.filter.len())]
    }

    /// Whether the key's bits `from..to` are all set (reading up to the
    /// first clear one).
    #[inline(always)]
    fn has_bits<P: Probe>(&self, hash: KeyHash, from: u32, to: u32, probe: &mut P) -> bool {
        let block = self.block(hash);
        for i in from..to {
            probe.bit();
            if !block.bit(hash.position(i)) {
                return false;
            }
        }
        true
    }

    /// The key's BMP code, bits `1..=bmp_bits` (all read, as the paper's
    /// decode does).
    #[inline(always)]
    fn decode<P: Probe>(&self, hash: KeyHash, probe: &mut P) -> u32 {
        let block = self.block(hash);
        let mut code = 0;
        for j in 0..self.bmp_bits {
            probe.bit();
            code |= (block.bit(hash.position(1 + j)) as u32) << j;
        }
        code
    }

    /// The exact table's value for the key `addr/plen` (0: not held).
    #[inline(always)]
    fn exact<P: Probe>(&self, addr: A, plen: u8, hash: KeyHash, probe: &mut P) -> u32 {
        probe.exact();
        exact::get(&self.table, addr.masked(plen), plen, hash)
    }

    #[inline(always)]
    fn label(&self, index: usize) -> Option<Label> {
        self.results[index].get()
    }

    /// Algorithm 1 over the lengths of index `top` down to 1, then the
    /// default route.
    ///
    /// The lengths' filter lines are requested [`LINEAR_AHEAD`] lengths
    /// before they are tested: a test's miss does not decide which line
    /// comes next, so the misses of successive lengths can overlap. Each
    /// key is hashed once, when its line is requested, and counted when it
    /// is tested (a search that stops early never tested the keys it
    /// requested past its end, and the paper does not count them).
    #[inline]
    fn linear<P: Probe>(&self, addr: A, top: usize, probe: &mut P) -> Option<Label> {
        let request = |index: usize| {
            let plen = self.lengths[index];
            let hash = KeyHash::of(addr.masked(plen), plen);
            crate::engines::shared::prefetch(self.block(hash));
            hash
        };
        // Slot `index % LINEAR_AHEAD` holds the hash of length `index` from
        // its request until its test.
        let mut requested = [KeyHash::of(A::ZERO, 0); LINEAR_AHEAD];
        for index in (top.saturating_sub(LINEAR_AHEAD - 1).max(1)..=top).rev() {
            requested[index % LINEAR_AHEAD] = request(index);
        }
        for index in (1..=top).rev() {
            let plen = self.lengths[index];
            let hash = requested[index % LINEAR_AHEAD];
            probe.hash();
            if index > LINEAR_AHEAD {
                requested[index % LINEAR_AHEAD] = request(index - LINEAR_AHEAD);
            }
            if self.has_bits(hash, 0, self.k, probe) {
                let value = self.exact(addr, plen, hash, probe);
                if value != 0 && !exact::is_marker(value) {
                    return self.label(exact::label_of(value));
                }
            }
        }
        self.label(0)
    }

    /// Algorithm 3, with the exact table confirming the last-hit key (see
    /// the module header).
    #[inline]
    fn guided<P: Probe>(&self, addr: A, probe: &mut P) -> Option<Label> {
        if self.tree.is_empty() {
            return self.label(0);
        }
        let mut node = self.tree[0];
        let mut hash = self.hash(addr, node.plen, probe);
        let mut last_hit = None;
        loop {
            // Which child the walk takes depends on this node's filter
            // line, a cache miss: both children's lines are requested
            // first, so the next step's miss overlaps this one instead of
            // following it. The extra hash per step is a few nanoseconds;
            // the filter's lines mostly miss the L2. Only the key of the
            // child taken is counted, as the paper counts hashes.
            let left = self.child_hash(addr, node.left);
            let right = self.child_hash(addr, node.right);
            let (next, next_hash) = if self.has_bits(hash, 0, 1, probe) {
                // The exact slot of the last hit is read at the end:
                // requested now, it arrives while the walk goes on.
                self.prefetch_exact(hash);
                last_hit = Some((node, hash));
                (node.right, right)
            } else {
                (node.left, left)
            };
            if next == NO_NODE {
                break;
            }
            probe.hash();
            node = self.tree[next as usize];
            hash = next_hash;
        }
        let Some((hit, hash)) = last_hit else {
            // No key of any tree length: no prefix but the default route.
            return self.label(0);
        };
        self.resolve(addr, hit, hash, probe)
    }

    /// The key hash of tree node `child` for `addr`, its filter line
    /// requested; for [`NO_NODE`] a constant the walk never uses (no hash
    /// computed at the leaves).
    #[inline(always)]
    fn child_hash(&self, addr: A, child: u8) -> KeyHash {
        match self.tree.get(child as usize) {
            Some(n) => {
                let hash = KeyHash::of(addr.masked(n.plen), n.plen);
                crate::engines::shared::prefetch(self.block(hash));
                hash
            }
            None => KeyHash::of(A::ZERO, 0),
        }
    }

    /// The key whose remaining bits confirm the BMP code of a walk that
    /// last hit `hit` (key hash `hash`): the hit itself for a prefix, the
    /// coded length's key for a marker; `None` for a code no walk can
    /// confirm.
    #[inline(always)]
    fn confirming_key<P: Probe>(
        &self,
        addr: A,
        hit: TreeNode,
        hash: KeyHash,
        probe: &mut P,
    ) -> Option<KeyHash> {
        let code = self.decode(hash, probe);
        if code == self.prefix_code() {
            Some(hash)
        } else if code < hit.index as u32 {
            Some(self.hash(addr, self.lengths[code as usize], probe))
        } else {
            None
        }
    }

    /// The end of a guided lookup whose walk last hit `hit` (key hash
    /// `hash`): decode, confirm, exact lookup, or fall back.
    #[inline]
    fn resolve<P: Probe>(
        &self,
        addr: A,
        hit: TreeNode,
        hash: KeyHash,
        probe: &mut P,
    ) -> Option<Label> {
        let confirm_from = 1 + self.bmp_bits;
        let confirmed = self
            .confirming_key(addr, hit, hash, probe)
            .is_some_and(|key| self.has_bits(key, confirm_from, self.k, probe));
        if confirmed {
            let value = self.exact(addr, hit.plen, hash, probe);
            if value != 0 {
                return self.label(exact::label_of(value));
            }
        }
        probe.fallback();
        self.linear(addr, hit.index as usize - 1, probe)
    }

    #[inline(always)]
    fn lookup_with<P: Probe>(&self, addr: A, probe: &mut P) -> Option<Label> {
        match self.search {
            Search::Linear => self.linear(addr, self.lengths.len() - 1, probe),
            Search::Guided => self.guided(addr, probe),
        }
    }

    /// Looks up every address of `addrs` through the counting path and
    /// returns the work done, as \[Yeg18\] counts it. Slower than
    /// [`Lookup::lookup`]; for measurements.
    pub fn count_lookups(&self, addrs: &[A]) -> LookupCounts {
        let mut counts = LookupCounts::default();
        for &addr in addrs {
            self.lookup_with(addr, &mut counts);
        }
        counts.lookups = addrs.len() as u64;
        counts
    }

    /// The search this snapshot runs.
    pub fn search(&self) -> Search {
        self.search
    }
}

/// Keys a batch lookup searches together: each step of their searches
/// (a filter line, an exact-table slot) is prefetched for every key of the
/// group before any is read, so the group's cache misses overlap instead of
/// queueing.
const GROUP: usize = 32;
/// How many lengths ahead of its test the per-key linear search requests a
/// filter line.
const LINEAR_AHEAD: usize = 4;
/// Keys whose guided searches end together, each stage (decode and
/// confirming line, exact-table slot) prefetched for all of them before
/// the next reads: far enough apart that the lines arrive in time.
const RESOLVE: usize = 128;
/// Keys of a batch whose guided walks run before their fallbacks to linear
/// search run together (indices of `u16`).
const CHUNK: usize = 1024;
/// Slices this short (a datapath's bursts) use chunk arrays of this many
/// keys, so that a call does not clear arrays sized for [`CHUNK`] keys.
const SHORT: usize = 64;
const _: () = assert!(CHUNK <= 1 << 16 && GROUP <= 32 && RESOLVE <= 128 && SHORT <= CHUNK);

impl<A: Addr + Plain, S: Storage> Bloom<A, S> {
    /// Starts loading the exact-table slot where key `addr/plen` (hash
    /// `hash`) begins its probe.
    #[inline(always)]
    fn prefetch_exact(&self, hash: KeyHash) {
        crate::engines::shared::prefetch(
            self.table
                .as_ptr()
                .wrapping_add(hash.slot(self.table.len())),
        );
    }

    /// Algorithm 1 for the keys `queue` (`(index in addrs, top length
    /// index)`), [`GROUP`] of them searching at any time. The searching
    /// keys move down their lengths in lockstep: a round hashes and
    /// prefetches the filter line of each, then tests their bits and
    /// prefetches the exact-table slot of each filter hit, then reads those
    /// slots; a key whose search ends hands its place to the next key of
    /// the queue, so the group stays full however long single searches
    /// run. The answers are written to `out`.
    #[inline]
    fn linear_rolling(&self, addrs: &[A], queue: &[(u16, u8)], out: &mut [Option<Label>]) {
        let mut lanes = [(0u16, 0u8); GROUP];
        let mut hash = [KeyHash::of(A::ZERO, 0); GROUP];
        let mut queued = queue.iter();
        let mut count = 0;
        loop {
            // Refill the free lanes; a key with no length left answers
            // the default route at once.
            while count < GROUP {
                let Some(&(key, top)) = queued.next() else {
                    break;
                };
                if top == 0 {
                    out[key as usize] = self.label(0);
                } else {
                    lanes[count] = (key, top);
                    count += 1;
                }
            }
            if count == 0 {
                return;
            }
            for (lane, hash) in lanes[..count].iter().zip(&mut hash) {
                let (key, index) = *lane;
                let plen = self.lengths[index as usize];
                *hash = KeyHash::of(addrs[key as usize].masked(plen), plen);
                crate::engines::shared::prefetch(self.block(*hash));
            }
            let mut hits = 0u32;
            for (a, hash) in hash[..count].iter().enumerate() {
                if self.has_bits(*hash, 0, self.k, &mut NoProbe) {
                    self.prefetch_exact(*hash);
                    hits |= 1 << a;
                }
            }
            let mut next = 0;
            for a in 0..count {
                let (key, index) = lanes[a];
                if hits & (1 << a) != 0 {
                    let plen = self.lengths[index as usize];
                    let value = self.exact(addrs[key as usize], plen, hash[a], &mut NoProbe);
                    if value != 0 && !exact::is_marker(value) {
                        out[key as usize] = self.label(exact::label_of(value));
                        continue;
                    }
                }
                if index == 1 {
                    out[key as usize] = self.label(0);
                    continue;
                }
                lanes[next] = (key, index - 1);
                next += 1;
            }
            count = next;
        }
    }

    /// The guided search of [`Bloom::guided`] for up to `N` keys, in
    /// stages that each prefetch before they read. The tree walks run
    /// [`GROUP`] at a time in lockstep (one filter line per key and step),
    /// a finished walk handing its place to the next key, so the group
    /// stays full whatever the walks' depths (a weighted tree's differ).
    /// Then, [`RESOLVE`] keys at a time, the BMP decode and the confirming
    /// key's line, then the exact-table slot. The keys that fall back are
    /// appended to `fallbacks` (`(index in addrs, top length index)`) for
    /// [`Bloom::linear_rolling`]; the others are answered in `out`.
    #[inline]
    fn guided_chunk<const N: usize>(
        &self,
        addrs: &[A],
        out: &mut [Option<Label>],
        fallbacks: &mut [(u16, u8); N],
    ) -> usize {
        debug_assert!(addrs.len() <= N && out.len() == addrs.len());
        // The last node each walk hit (NO_NODE: none) and its key's hash.
        let mut hit_node = [NO_NODE; N];
        let mut hit_hash = [KeyHash::of(A::ZERO, 0); N];
        let root = if self.tree.is_empty() { NO_NODE } else { 0 };
        let mut lanes = [(0u16, 0u8); GROUP];
        let mut hash = [KeyHash::of(A::ZERO, 0); GROUP];
        let mut count = 0;
        let mut queued = 0;
        if root != NO_NODE {
            loop {
                while count < GROUP && queued < addrs.len() {
                    lanes[count] = (queued as u16, root);
                    count += 1;
                    queued += 1;
                }
                if count == 0 {
                    break;
                }
                for (lane, hash) in lanes[..count].iter().zip(&mut hash) {
                    let (key, node) = *lane;
                    let plen = self.tree[node as usize].plen;
                    *hash = KeyHash::of(addrs[key as usize].masked(plen), plen);
                    crate::engines::shared::prefetch(self.block(*hash));
                }
                let mut next = 0;
                for a in 0..count {
                    let (key, node) = lanes[a];
                    let n = self.tree[node as usize];
                    let child = if self.block(hash[a]).bit(hash[a].position(0)) {
                        hit_node[key as usize] = node;
                        hit_hash[key as usize] = hash[a];
                        n.right
                    } else {
                        n.left
                    };
                    if child != NO_NODE {
                        lanes[next] = (key, child);
                        next += 1;
                    }
                }
                count = next;
            }
        }
        let mut fallen = 0;
        let confirm_from = 1 + self.bmp_bits;
        for start in (0..addrs.len()).step_by(RESOLVE) {
            let end = (start + RESOLVE).min(addrs.len());
            // Each walk's confirming key, its line prefetched (a prefix's
            // own line is already cached).
            let mut confirm: [Option<KeyHash>; RESOLVE] = [None; RESOLVE];
            for i in start..end {
                if hit_node[i] == NO_NODE {
                    out[i] = self.label(0);
                    continue;
                }
                let hit = self.tree[hit_node[i] as usize];
                let key = self.confirming_key(addrs[i], hit, hit_hash[i], &mut NoProbe);
                if let Some(key) = key {
                    crate::engines::shared::prefetch(self.block(key));
                }
                confirm[i - start] = key;
            }
            let mut confirmed = 0u128;
            for i in start..end {
                if let Some(check) = confirm[i - start] {
                    if self.has_bits(check, confirm_from, self.k, &mut NoProbe) {
                        self.prefetch_exact(hit_hash[i]);
                        confirmed |= 1 << (i - start);
                    }
                }
            }
            for i in start..end {
                if hit_node[i] == NO_NODE {
                    continue;
                }
                let hit = self.tree[hit_node[i] as usize];
                if confirmed & (1 << (i - start)) != 0 {
                    let value = self.exact(addrs[i], hit.plen, hit_hash[i], &mut NoProbe);
                    if value != 0 {
                        out[i] = self.label(exact::label_of(value));
                        continue;
                    }
                }
                fallbacks[fallen] = (i as u16, hit.index - 1);
                fallen += 1;
            }
        }
        fallen
    }

    /// The guided batch lookup in chunks of `N` keys: each chunk's walks
    /// and ends, then its fallbacks together.
    #[inline]
    fn guided_batch<const N: usize>(&self, addrs: &[A], out: &mut [Option<Label>]) {
        let mut fallbacks = [(0u16, 0u8); N];
        for (addrs, out) in addrs.chunks(N).zip(out.chunks_mut(N)) {
            let count = self.guided_chunk(addrs, out, &mut fallbacks);
            self.linear_rolling(addrs, &fallbacks[..count], out);
        }
    }

    /// The linear batch lookup in chunks of `N` keys, each key from the
    /// longest length.
    #[inline]
    fn linear_batch<const N: usize>(&self, addrs: &[A], out: &mut [Option<Label>]) {
        let top = (self.lengths.len() - 1) as u8;
        let mut queue = [(0u16, top); N];
        for (i, key) in queue.iter_mut().enumerate() {
            key.0 = i as u16;
        }
        for (addrs, out) in addrs.chunks(N).zip(out.chunks_mut(N)) {
            self.linear_rolling(addrs, &queue[..addrs.len()], out);
        }
    }
}

impl<A: Addr + Plain, S: Storage> Lookup<A> for Bloom<A, S> {
    #[inline]
    fn lookup(&self, addr: A) -> Option<Label> {
        self.lookup_with(addr, &mut NoProbe)
    }

    fn lookup_batch(&self, addrs: &[A], out: &mut [Option<Label>]) {
        assert!(out.len() >= addrs.len(), "output slice shorter than input");
        let out = &mut out[..addrs.len()];
        match self.search {
            Search::Guided if addrs.len() > 1 => {
                if addrs.len() <= SHORT {
                    self.guided_batch::<SHORT>(addrs, out);
                } else {
                    self.guided_batch::<CHUNK>(addrs, out);
                }
            }
            Search::Linear if addrs.len() > 1 => {
                if addrs.len() <= SHORT {
                    self.linear_batch::<SHORT>(addrs, out);
                } else {
                    self.linear_batch::<CHUNK>(addrs, out);
                }
            }
            _ => self.lookup_each(addrs, out),
        }
    }

    fn memory_bytes(&self) -> usize {
        use std::mem::size_of;
        self.filter.len() * size_of::<FilterBlock>()
            + self.lengths.len()
            + self.tree.len() * size_of::<TreeNode>()
            + self.table.len() * size_of::<ExactSlot<A>>()
            + self.results.len() * size_of::<LabelSlot>()
    }
}
