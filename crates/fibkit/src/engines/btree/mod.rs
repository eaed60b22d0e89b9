//! `btree`: a static B+-tree over the table's range starts, sixteen 64-bit
//! keys to a node, each node searched by one count of the keys `<=` the
//! address (two 512-bit compares where the CPU has AVX-512, the idea of
//! PlanB and of Algorithmica's "S+ tree"), under a direct root table on the
//! top `K` address bits as in DXR. For IPv4 and IPv6.
//!
//! Why: `dxr6`'s walk passes node entries whose kind, stride and base must
//! be decoded before the next read, and ends in a leaf searched by four
//! dependent probes; on keys inside announced IPv6 prefixes that is about
//! 35 cycles per key. Here every step is the same few instructions (load
//! two lines, compare, count, multiply-add), the tree's shape is implicit
//! (a child's position is computed, never read), and its height is
//! `log17` of the keys: five levels for the 97,000 range starts of
//! `dfz-v6-nh`, of which the root table skips the upper ones. Measured
//! (docs/bench/btree.md, "`btree` and `dxr6:k=12` beside `rte_fib6`"): level
//! with `dxr6` on keys inside announced IPv6 prefixes, 0.8–0.9x on random
//! public keys and 0.3–0.6x `dxr` on IPv4; the five levels cost what
//! `dxr6`'s decode and leaf cost, so `dxr6` stays the default.
//!
//! Keys are the top 64 bits of the range starts. Announced IPv6 prefixes
//! are nearly all /64 or shorter, so nearly every range start is one; a
//! /64 holding starts in its low 64 bits (a longer prefix) gets one key
//! whose value names a short sorted list of those low halves ("sub-lists",
//! searched by binary search), and a key at the next /64 carries on the
//! label after them. For IPv4 the low half is always zero.
//!
//! ```text
//! root[top64 >> (64 - K)]          2^K x u32
//!   bit 31 clear: label index (the whole 2^(128-K) chunk is one range)
//!   bit 31 set:   [30:26] level, [25:0] node: where the chunk's search starts
//! level l: nodes of 16 u64 keys (128 bytes, two lines), all levels in one
//!   array; a leaf node holds keys 16i..16i+16 in order; an inner node the
//!   first key of its children 1..16 (child c of node i is node 17i + c of
//!   the level below); missing keys are u64::MAX
//! values[key index]                 u32: label index, or bit 31 | sub-list
//! sub_first[list], sub_first[list + 1]: the list's entries in sub_starts
//!   (low 64 bits of range starts, the first 0) and sub_labels
//! results[label index]              label slot, index 0 = no route
//! ```
//!
//! A search from level `l` and node `i`: at an inner node, `c` = the count
//! of its keys `<=` the address's top 64 bits, the next node `17i + c`
//! (clamped to the level's last node, which alone has padding); at a leaf,
//! the key index is `16i + c - 1`. Every chunk of the root that is not one
//! range starts with a key of its own (the build adds one where no range
//! starts at the chunk's first address), so the chunk's search starts at
//! the deepest node holding all its keys.
//!
//! Memory accesses per lookup: the root entry; for the others, one node
//! (two adjacent lines) per level below the starting one, the key's value,
//! the results slot (and a sub-list for the rare /64 with longer
//! prefixes).
//!
//! Updates rebuild: the snapshot is a sorted array and has no room to
//! patch (a build of `dfz-v6-nh` takes about 20 ms).
//!
//! Limits (a [`BuildError::Limit`] naming them): at most 2^26 nodes per
//! level and 2^31 label indices and sub-lists.
//!
//! Files: this one holds the snapshot, its search and the build (which
//! is the update: every update rebuilds); `simd/` holds the AVX2 node
//! search and the AVX-512 batch; `tests` the tests.

#[cfg(target_arch = "x86_64")]
#[path = "simd/avx2.rs"]
mod avx2;
#[cfg(target_arch = "x86_64")]
#[path = "simd/wide.rs"]
mod wide;

use std::fmt;
use std::marker::PhantomData;

use crate::addr::Addr;
use crate::engine::Layout;
use crate::engine::{BuildError, EngineConfig, EngineStats, Lookup, Updater};
use crate::labels::{LabelIndex, LabelSlot};
use crate::prefix::Label;
use crate::rib::Rib;
use crate::spec::EngineSpec;
use crate::storage::{Owned, Storage};

/// Keys per node: two 64-byte lines of u64.
pub const NODE_KEYS: usize = 16;
/// Children per inner node.
const FANOUT: usize = NODE_KEYS + 1;
/// Most levels: 17^8 x 16 keys is far beyond any table.
const MAX_LEVELS: usize = 8;
/// Root entries that start a search: bit 31.
const DESCEND: u32 = 1 << 31;
const LEVEL_SHIFT: u32 = 26;
const LEVEL_MASK: u32 = 0x1f;
const NODE_MASK: u32 = (1 << LEVEL_SHIFT) - 1;
/// Values naming a sub-list: bit 31.
const SUB: u32 = 1 << 31;
/// Label indices and sub-lists a value or root entry can name.
const MAX_INDEX: usize = (1 << 31) - 1;

/// Smallest root: 2^8 entries.
pub const MIN_K: u32 = 8;
/// Largest root: 2^24 entries (64 MiB).
pub const MAX_K: u32 = 24;

const _: () = assert!(MAX_LEVELS <= LEVEL_MASK as usize + 1);

/// The parameters of `btree`: `btree:k=K`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BtreeConfig {
    /// `K`: the address bits the root table resolves (8..=24).
    pub root_bits: u32,
}

/// The default parameters: a 2^16 root (256 KiB), as `dxr6`'s.
pub const DEFAULT_CONFIG: BtreeConfig = BtreeConfig { root_bits: 16 };

impl Default for BtreeConfig {
    fn default() -> Self {
        DEFAULT_CONFIG
    }
}

impl fmt::Display for BtreeConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "btree:k={}", self.root_bits)
    }
}

crate::image::not_saved!([A: Addr] Btree<A>, A);

impl EngineConfig for BtreeConfig {
    const NAMES: &'static [&'static str] = &["btree"];
    const ABOUT: &'static str =
        "static B+-tree over range starts (top 64 bits), 16 keys per node counted by \
        SIMD compares (AVX-512 or AVX2), under a 2^K root; rebuilt on change (k=8..24)";
    const LAYOUTS: &'static [Layout] = &[
        Layout::both("btree"),
        Layout::both("btree:k=8"),
        Layout::both("btree:k=24"),
    ];
    const MORE_LAYOUTS: &'static [Layout] = &[Layout::v4("btree:k=16"), Layout::v6("btree:k=12")];
    const VECTOR_PATHS: bool = true;

    fn from_spec(spec: &EngineSpec) -> Result<Self, BuildError> {
        spec.expect_only(&["k"])?;
        Ok(BtreeConfig {
            root_bits: spec
                .number("k", MIN_K..=MAX_K)?
                .unwrap_or(DEFAULT_CONFIG.root_bits),
        })
    }
}

/// The top 64 bits of `addr`, left-aligned (an IPv4 address in the high
/// half).
#[inline(always)]
fn top64<A: Addr>(addr: A) -> u64 {
    ((addr.to_u128() << (128 - A::BITS as u32)) >> 64) as u64
}

/// The bits of `addr` after its top 64 (zero for IPv4).
#[inline(always)]
fn low64<A: Addr>(addr: A) -> u64 {
    (addr.to_u128() << (128 - A::BITS as u32)) as u64
}

/// The lookup snapshot of a `btree` engine (see the module header), in
/// storage `S`.
pub struct Btree<A: Addr, S: Storage = Owned> {
    root_bits: u32,
    root: S::Array<u32>,
    /// Every level's nodes, the top level first.
    nodes: S::Array<u64>,
    /// Per level: its first node in `nodes`, and its node count.
    level_first: [u32; MAX_LEVELS],
    level_nodes: [u32; MAX_LEVELS],
    /// Levels in use; the last is the leaf level.
    levels: usize,
    /// Keys (the leaf level's keys that are not padding).
    keys: usize,
    values: S::Array<u32>,
    sub_first: S::Array<u32>,
    sub_starts: S::Array<u64>,
    sub_labels: S::Array<u32>,
    results: S::Array<LabelSlot>,
    /// How this CPU counts a node's keys (decided at build).
    count: Count,
    family: PhantomData<A>,
}

impl<A: Addr, S: Storage> Clone for Btree<A, S> {
    fn clone(&self) -> Self {
        Btree {
            root_bits: self.root_bits,
            root: self.root.clone(),
            nodes: self.nodes.clone(),
            level_first: self.level_first,
            level_nodes: self.level_nodes,
            levels: self.levels,
            keys: self.keys,
            values: self.values.clone(),
            sub_first: self.sub_first.clone(),
            sub_starts: self.sub_starts.clone(),
            sub_labels: self.sub_labels.clone(),
            results: self.results.clone(),
            count: self.count,
            family: PhantomData,
        }
    }
}

/// The count of `node`'s keys `<= x`, in plain code (the compiler
/// vectorises it where the target allows).
#[inline(always)]
fn count_le(node: &[u64], x: u64) -> usize {
    node[..NODE_KEYS]
        .iter()
        .map(|&key| (key <= x) as usize)
        .sum()
}

/// The per-key search, with `$count(node, x)` counting a node's keys
/// `<= x` (a macro for the same reason as [`descend_groups`]): the root
/// entry, then one node per level from the one it names down to the leaf.
macro_rules! search_one {
    ($engine:expr, $addr:expr, $count:expr) => {{
        let (engine, addr) = ($engine, $addr);
        let count_le = $count;
        let x = top64(addr);
        match engine.start(x) {
            Err(label) => engine.results[label as usize].get(),
            Ok((mut level, mut node)) => {
                let leaf = engine.levels - 1;
                while level < leaf {
                    node = engine.child(level, node, count_le(engine.node(level, node), x));
                    level += 1;
                }
                let index = engine.key_index(node, count_le(engine.node(leaf, node), x));
                engine.answer(index, addr)
            }
        }
    }};
}
pub(crate) use search_one;

/// The batch lookup, with `$count(node, x)` counting a node's keys `<= x`
/// (a macro, so that the AVX-512 count is inlined into the function that
/// enables it): groups of [`GROUP`] keys. The root pass answers the keys at
/// label entries and sorts the others by the level their search starts at;
/// then a round per level steps every search already under way (a prefix
/// of the sorted searches, so no search tests whether it takes part), each
/// requesting its next node before the next search computes, so that the
/// group's reads overlap. Searches starting at different levels (the root
/// entry starts each chunk at its own subtree) would otherwise branch on
/// their level in every round.
macro_rules! descend_groups {
    ($engine:expr, $addrs:expr, $out:expr, $count:expr) => {{
        let engine = $engine;
        let count_le = $count;
        let leaf = engine.levels - 1;
        // Declared once per call: a burst of a few keys should not clear
        // arrays per group.
        let mut pending = [(0u64, 0u32, 0u32); GROUP];
        let mut pending_level = [0u8; GROUP];
        let mut walks = [(0u64, 0u32, 0u32); GROUP];
        for (keys, out) in $addrs.chunks(GROUP).zip($out.chunks_mut(GROUP)) {
            // (top half, node, position) of each search, and its level.
            let mut at_level = [0usize; MAX_LEVELS + 1];
            let mut searches = 0;
            for (j, (&addr, answer)) in keys.iter().zip(out.iter_mut()).enumerate() {
                let x = top64(addr);
                match engine.start(x) {
                    Err(label) => *answer = engine.results[label as usize].get(),
                    Ok((level, node)) => {
                        engine.request(level, node);
                        pending[searches] = (x, node as u32, j as u32);
                        pending_level[searches] = level as u8;
                        at_level[level + 1] += 1;
                        searches += 1;
                    }
                }
            }
            // Counting sort by start level: `at_level[l]` becomes the first
            // place of level l, and after the placing the end of level l.
            for level in 1..=MAX_LEVELS {
                at_level[level] += at_level[level - 1];
            }
            for (&walk, &level) in pending[..searches].iter().zip(&pending_level[..searches]) {
                walks[at_level[level as usize]] = walk;
                at_level[level as usize] += 1;
            }
            for level in 0..leaf {
                // The searches started at this level or above.
                for walk in &mut walks[..at_level[level]] {
                    let (x, node, j) = *walk;
                    let next = engine.child(
                        level,
                        node as usize,
                        count_le(engine.node(level, node as usize), x),
                    );
                    engine.request(level + 1, next);
                    *walk = (x, next as u32, j);
                }
            }
            for &(x, node, j) in &walks[..searches] {
                let index =
                    engine.key_index(node as usize, count_le(engine.node(leaf, node as usize), x));
                out[j as usize] = engine.answer(index, keys[j as usize]);
            }
        }
    }};
}
pub(crate) use descend_groups;

impl<A: Addr, S: Storage> Btree<A, S> {
    /// The root index of the top 64 bits `x`.
    #[inline(always)]
    fn root_index(&self, x: u64) -> usize {
        // `& 31`: K <= 24, and the shift stays below 64.
        (x >> (64 - (self.root_bits & 31))) as usize
    }

    /// The keys of node `node` of level `level`.
    #[inline(always)]
    fn node(&self, level: usize, node: usize) -> &[u64] {
        let first = (self.level_first[level] as usize + node) * NODE_KEYS;
        &self.nodes[first..first + NODE_KEYS]
    }

    /// Starts loading node `node` of `level` (two lines), and for a leaf
    /// its keys' values, which the search reads next.
    #[inline(always)]
    fn request(&self, level: usize, node: usize) {
        let keys = self.node(level, node);
        crate::engines::shared::prefetch(keys.as_ptr());
        crate::engines::shared::prefetch(keys[8..].as_ptr());
        if level == self.levels - 1 {
            let values = self.values.as_ptr().wrapping_add(node * NODE_KEYS);
            crate::engines::shared::prefetch(values);
            crate::engines::shared::prefetch(values.wrapping_add(NODE_KEYS - 1));
        }
    }

    /// The child of node `node` at `level` that `count` keys lead to.
    #[inline(always)]
    fn child(&self, level: usize, node: usize, count: usize) -> usize {
        (node * FANOUT + count).min(self.level_nodes[level + 1] as usize - 1)
    }

    /// The key index that a leaf count `count` at leaf node `node` gives.
    #[inline(always)]
    fn key_index(&self, node: usize, count: usize) -> usize {
        // Every search passes a key <= the address (its chunk's first key),
        // so the count is at least 1; `max` keeps a corrupt count in bounds.
        (node * NODE_KEYS + count).min(self.keys).max(1) - 1
    }

    /// The answer of key `index` for `addr`.
    #[inline(always)]
    fn answer(&self, index: usize, addr: A) -> Option<Label> {
        let value = self.values[index];
        let label = if value & SUB == 0 {
            value
        } else {
            self.sub_label(value & !SUB, low64(addr))
        };
        self.results[label as usize].get()
    }

    /// The label index of sub-list `list` at low half `low`.
    #[cold]
    fn sub_label(&self, list: u32, low: u64) -> u32 {
        let first = self.sub_first[list as usize] as usize;
        let end = self.sub_first[list as usize + 1] as usize;
        let starts = &self.sub_starts[first..end];
        // The list's first start is 0, so at least one start is <= low.
        let at = starts.partition_point(|&start| start <= low).max(1) - 1;
        self.sub_labels[first + at]
    }

    /// The per-key search in plain code.
    #[inline(always)]
    fn lookup_portable(&self, addr: A) -> Option<Label> {
        search_one!(self, addr, |node: &[u64], x: u64| count_le(node, x))
    }

    /// Where key `addr`'s search starts, or its label index: the root
    /// entry decoded.
    #[inline(always)]
    fn start(&self, x: u64) -> Result<(usize, usize), u32> {
        let entry = self.root[self.root_index(x)];
        if entry & DESCEND == 0 {
            Err(entry)
        } else {
            Ok((
                ((entry >> LEVEL_SHIFT) & LEVEL_MASK) as usize,
                (entry & NODE_MASK) as usize,
            ))
        }
    }

    /// The batch lookup in plain code (see [`descend_groups`]): what
    /// `lookup_batch` runs on a CPU without AVX-512 F; public so that
    /// benchmarks on a CPU with it can run it too.
    #[doc(hidden)]
    pub fn lookup_batch_portable(&self, addrs: &[A], out: &mut [Option<Label>]) {
        descend_groups!(self, addrs, out, |node: &[u64], x: u64| count_le(node, x));
    }
}

/// Keys per group of the batch lookup.
const GROUP: usize = 16;

impl<A: Addr, S: Storage> Lookup<A> for Btree<A, S> {
    #[inline]
    fn lookup(&self, addr: A) -> Option<Label> {
        match self.count {
            // SAFETY: `Count::Avx512` is chosen only where the CPU has
            // AVX-512 F and POPCNT (`Count::best`, or a test that checked).
            #[cfg(target_arch = "x86_64")]
            Count::Avx512 => return unsafe { self.lookup_wide(addr) },
            // SAFETY: likewise AVX2 and POPCNT.
            #[cfg(target_arch = "x86_64")]
            Count::Avx2 => return unsafe { self.lookup_avx2(addr) },
            Count::Plain => {}
        }
        self.lookup_portable(addr)
    }

    fn lookup_batch(&self, addrs: &[A], out: &mut [Option<Label>]) {
        assert!(out.len() >= addrs.len(), "output slice shorter than input");
        match self.count {
            // SAFETY: as in `lookup`.
            #[cfg(target_arch = "x86_64")]
            Count::Avx512 => return unsafe { self.lookup_batch_wide(addrs, out) },
            // SAFETY: as in `lookup`.
            #[cfg(target_arch = "x86_64")]
            Count::Avx2 => return unsafe { self.lookup_batch_avx2(addrs, out) },
            Count::Plain => {}
        }
        self.lookup_batch_portable(addrs, out);
    }

    fn memory_bytes(&self) -> usize {
        self.root.len() * 4
            + self.nodes.len() * 8
            + self.values.len() * 4
            + self.sub_first.len() * 4
            + self.sub_starts.len() * 8
            + self.sub_labels.len() * 4
            + self.results.len() * std::mem::size_of::<LabelSlot>()
    }
}

/// The build state of a `btree` engine: its parameters (updates rebuild).
#[derive(Clone, Debug)]
pub struct BtreeUpdater<A: Addr> {
    config: BtreeConfig,
    family: PhantomData<A>,
}

/// What a `btree` engine looks like.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct BtreeStats {
    /// `K`, the root's address bits.
    pub root_bits: u32,
    /// Keys (range starts' top halves, with the chunks' own).
    pub keys: usize,
    /// Nodes per level, the top level first.
    pub level_nodes: Vec<usize>,
    /// Root entries that hold a label (their chunk is one range).
    pub root_labels: usize,
    /// Root entries whose search starts at each level.
    pub root_starts: Vec<usize>,
    /// /64s with range starts in their low half, and those starts.
    pub sub_lists: usize,
    /// Entries of the sub-lists.
    pub sub_entries: usize,
    /// How lookups count a node's keys: `plain`, `AVX2` or `AVX-512`.
    pub count: &'static str,
}

impl EngineStats for BtreeStats {
    fn rows(&self) -> Vec<(String, String)> {
        let list = |v: &[usize]| {
            v.iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        vec![
            ("root bits".into(), self.root_bits.to_string()),
            ("keys".into(), self.keys.to_string()),
            ("nodes per level".into(), list(&self.level_nodes)),
            ("root entries: labels".into(), self.root_labels.to_string()),
            (
                "root entries: searches starting at level".into(),
                list(&self.root_starts),
            ),
            (
                "sub-lists (entries)".into(),
                format!("{} ({})", self.sub_lists, self.sub_entries),
            ),
            ("node count".into(), self.count.into()),
        ]
    }
}

/// How a snapshot counts a node's keys `<=` an address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Count {
    /// Plain code, key by key.
    Plain,
    /// Four 256-bit compares (`simd/avx2.rs`).
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// Two 512-bit compares (`simd/wide.rs`).
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

impl Count {
    /// The fastest count this CPU runs within [`crate::cpu::max_simd`].
    fn best() -> Count {
        #[cfg(target_arch = "x86_64")]
        {
            use crate::cpu::{allows, Simd};
            if allows(Simd::Avx512) && wide::available() {
                return Count::Avx512;
            }
            if allows(Simd::Avx2) && avx2::available() {
                return Count::Avx2;
            }
        }
        Count::Plain
    }

    /// Every count this CPU runs, the plain one first.
    #[cfg(test)]
    fn all_available() -> Vec<Count> {
        let mut counts = vec![Count::Plain];
        #[cfg(target_arch = "x86_64")]
        {
            if avx2::available() {
                counts.push(Count::Avx2);
            }
            if wide::available() {
                counts.push(Count::Avx512);
            }
        }
        counts
    }

    /// Its name in the engine's statistics.
    fn name(self) -> &'static str {
        match self {
            Count::Plain => "plain",
            #[cfg(target_arch = "x86_64")]
            Count::Avx2 => "AVX2",
            #[cfg(target_arch = "x86_64")]
            Count::Avx512 => "AVX-512",
        }
    }
}

impl<A: Addr> BtreeUpdater<A> {
    fn limit(&self, why: String) -> BuildError {
        BuildError::Limit {
            engine: self.config.to_string(),
            why,
        }
    }

    /// The snapshot of `rib`.
    fn snapshot(&self, rib: &Rib<A>, count: Count) -> Result<Btree<A>, BuildError> {
        let root_bits = self.config.root_bits;
        let mut labels = LabelIndex::new(self.config, MAX_INDEX);
        let ranges = rib.ranges();
        // Keys (top halves) and values, in address order.
        let mut keys: Vec<u64> = Vec::with_capacity(ranges.len() + 1);
        let mut values: Vec<u32> = Vec::with_capacity(ranges.len() + 1);
        let mut sub_first = vec![0u32];
        let mut sub_starts = Vec::new();
        let mut sub_labels = Vec::new();
        let mut i = 0;
        while i < ranges.len() {
            let hi = top64(ranges[i].first);
            let mut j = i;
            while j + 1 < ranges.len() && top64(ranges[j + 1].first) == hi {
                j += 1;
            }
            if i == j && low64(ranges[i].first) == 0 {
                keys.push(hi);
                values.push(labels.index(ranges[i].label)?);
            } else {
                // Ranges i..=j start in the /64 `hi` (range i maybe past its
                // first address, which the range before covers).
                let first_label = if low64(ranges[i].first) == 0 {
                    ranges[i].label
                } else {
                    ranges[i - 1].label
                };
                if sub_first.len() > MAX_INDEX {
                    return Err(self.limit(format!("more than {MAX_INDEX} sub-lists")));
                }
                sub_starts.push(0);
                sub_labels.push(labels.index(first_label)?);
                for range in &ranges[i..=j] {
                    if low64(range.first) != 0 {
                        sub_starts.push(low64(range.first));
                        sub_labels.push(labels.index(range.label)?);
                    }
                }
                keys.push(hi);
                values.push(SUB | (sub_first.len() as u32 - 1));
                sub_first.push(sub_starts.len() as u32);
                // The rest of the /64's span takes the last range's label.
                let next = ranges.get(j + 1).map(|r| top64(r.first));
                if hi != u64::MAX && next != Some(hi + 1) {
                    keys.push(hi + 1);
                    values.push(labels.index(ranges[j].label)?);
                }
            }
            i = j + 1;
        }
        // The root: a chunk inside one key's span with a plain label is a
        // label entry; any other chunk gets a key at its first address.
        let chunks = 1usize << root_bits;
        let chunk_shift = 64 - root_bits;
        let mut root = vec![0u32; chunks];
        let mut with_starts: Vec<u64> = Vec::with_capacity(keys.len() + chunks.min(keys.len()));
        let mut with_values: Vec<u32> = Vec::with_capacity(with_starts.capacity());
        let mut descends = vec![false; chunks];
        let mut next = 0; // the first key not yet copied
        for (chunk, descend) in descends.iter_mut().enumerate() {
            let lo = (chunk as u64) << chunk_shift;
            let hi = lo | ((1u64 << chunk_shift) - 1);
            // Copy the keys before the chunk.
            while next < keys.len() && keys[next] < lo {
                with_starts.push(keys[next]);
                with_values.push(values[next]);
                next += 1;
            }
            // The keys inside it.
            let mut end = next;
            while end < keys.len() && keys[end] <= hi {
                end += 1;
            }
            let at_start = next < end && keys[next] == lo;
            let covering = if at_start {
                values[next]
            } else {
                // keys[0] = 0, so a chunk not starting with a key has one
                // before it.
                *with_values.last().expect("the first key is at address 0")
            };
            let inside = end - next - at_start as usize;
            if inside == 0 && covering & SUB == 0 {
                root[chunk] = covering;
                continue;
            }
            *descend = true;
            if !at_start {
                with_starts.push(lo);
                with_values.push(covering);
            }
            // (The covering value of a chunk not starting with a key is
            // never a sub-list: a sub-list's key is followed by one at the
            // next /64.)
            debug_assert!(at_start || covering & SUB == 0);
        }
        with_starts.extend_from_slice(&keys[next..]);
        with_values.extend_from_slice(&values[next..]);
        let keys = with_starts;
        let values = with_values;

        // The levels, leaves first.
        let mut levels_up: Vec<Vec<u64>> = Vec::new();
        let mut firsts: Vec<u64> = keys.chunks(NODE_KEYS).map(|c| c[0]).collect();
        let mut leaf = keys.clone();
        leaf.resize(firsts.len() * NODE_KEYS, u64::MAX);
        levels_up.push(leaf);
        while firsts.len() > 1 {
            let groups: Vec<&[u64]> = firsts.chunks(FANOUT).collect();
            let mut level = vec![u64::MAX; groups.len() * NODE_KEYS];
            for (g, children) in groups.iter().enumerate() {
                for (s, &first) in children.iter().skip(1).enumerate() {
                    level[g * NODE_KEYS + s] = first;
                }
            }
            firsts = groups.iter().map(|children| children[0]).collect();
            levels_up.push(level);
        }
        let levels = levels_up.len();
        if levels > MAX_LEVELS {
            return Err(self.limit(format!("more than {MAX_LEVELS} levels")));
        }
        let mut level_first = [0u32; MAX_LEVELS];
        let mut level_nodes = [0u32; MAX_LEVELS];
        let mut nodes = Vec::with_capacity(levels_up.iter().map(Vec::len).sum());
        for (level, keys_of_level) in levels_up.iter().rev().enumerate() {
            let count = keys_of_level.len() / NODE_KEYS;
            if count > NODE_MASK as usize + 1 {
                return Err(self.limit(format!(
                    "{count} nodes in one level, more than the root's 2^{LEVEL_SHIFT}"
                )));
            }
            level_first[level] = (nodes.len() / NODE_KEYS) as u32;
            level_nodes[level] = count as u32;
            nodes.extend_from_slice(keys_of_level);
        }
        if nodes.len() / NODE_KEYS > u32::MAX as usize {
            return Err(self.limit("more than 2^32 nodes".into()));
        }

        // Each searching chunk starts at the deepest node holding all its
        // keys.
        let mut key = 0;
        for (chunk, &descend) in descends.iter().enumerate() {
            if !descend {
                continue;
            }
            let lo = (chunk as u64) << chunk_shift;
            let hi = lo | ((1u64 << chunk_shift) - 1);
            while keys[key] < lo {
                key += 1;
            }
            let first = key;
            while key + 1 < keys.len() && keys[key + 1] <= hi {
                key += 1;
            }
            let (mut a, mut b) = (first / NODE_KEYS, key / NODE_KEYS);
            let mut level = levels - 1;
            while a != b {
                a /= FANOUT;
                b /= FANOUT;
                level -= 1;
            }
            root[chunk] = DESCEND | (level as u32) << LEVEL_SHIFT | a as u32;
        }

        let mut results = Vec::new();
        labels.sync(&mut results);
        Ok(Btree {
            root_bits,
            root,
            nodes,
            level_first,
            level_nodes,
            levels,
            keys: keys.len(),
            values,
            sub_first,
            sub_starts,
            sub_labels,
            results,
            count,
            family: PhantomData,
        })
    }
}

impl<A: Addr> Updater<A> for BtreeUpdater<A> {
    type Config = BtreeConfig;
    type Snapshot = Btree<A>;
    type Stats = BtreeStats;

    fn build(config: &BtreeConfig, rib: &Rib<A>) -> Result<(Self, Btree<A>), BuildError> {
        let updater = BtreeUpdater {
            config: *config,
            family: PhantomData,
        };
        let snapshot = updater.snapshot(rib, Count::best())?;
        Ok((updater, snapshot))
    }

    fn config(&self) -> BtreeConfig {
        self.config
    }

    fn stats(&self, snapshot: &Btree<A>) -> BtreeStats {
        let mut root_starts = vec![0; snapshot.levels];
        let mut root_labels = 0;
        for &entry in snapshot.root.iter() {
            if entry & DESCEND == 0 {
                root_labels += 1;
            } else {
                root_starts[((entry >> LEVEL_SHIFT) & LEVEL_MASK) as usize] += 1;
            }
        }
        BtreeStats {
            root_bits: snapshot.root_bits,
            keys: snapshot.keys,
            level_nodes: snapshot.level_nodes[..snapshot.levels]
                .iter()
                .map(|&n| n as usize)
                .collect(),
            root_labels,
            root_starts,
            sub_lists: snapshot.sub_first.len() - 1,
            sub_entries: snapshot.sub_starts.len(),
            count: snapshot.count.name(),
        }
    }
}

#[cfg(test)]
mod tests;
