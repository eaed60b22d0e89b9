//! `poptrie`: a multibit trie of 5-bit nodes whose children are found by a
//! population count (after Asai and Ohara, "Poptrie: A Compressed Trie
//! with Population Count for Fast and Scalable Software IP Routing Table
//! Lookup", SIGCOMM 2015), under a direct root on the top `S` address
//! bits. For IPv4 and IPv6.
//!
//! Why: on keys inside announced IPv6 prefixes `dxr6`'s vector walk is
//! bound by its chain of dependent gathers, most of it the leaf (a
//! four-step binary search, then the label; docs/BENCHMARKS.md, "The
//! vector walk inlined"). Here every step is the same few instructions: a
//! node read, a shift, a popcount; no search ends the walk, and eight
//! lanes take each level together with no per-lane decoding.
//!
//! Why five bits where the paper takes six: a node's child bitmap and its
//! first child's index then share one u64, so a step of the vector walk
//! is one gather instead of two (a /48 below an 18-bit root: six gathers
//! where 6-bit nodes below a 14-bit root took twelve). On announced keys
//! the batch and the per-key walk ran about 1.1x faster than with 6-bit
//! nodes, and at S = 13 in 0.7x their memory (docs/BENCHMARKS.md,
//! "Five-bit nodes").
//!
//! Why a node and its leaves share one array of 8-byte entries: a walk
//! that gathers the entry its count names, a node's or a leaf's, ends as
//! soon as that entry is a leaf, which holds its results slot. With
//! separate node and leaf arrays a walk ending at a leaf child read the
//! node's run bitmap, then the leaf's label index, then the results slot:
//! two dependent gathers more per key. On announced keys the batch ran
//! 1.10-1.14x faster at 2^22 keys and 1.22-1.32x with every line cached
//! (docs/BENCHMARKS.md, "`poptrie` keeps its leaves among its nodes").
//!
//! Why a table under each chunk (`d=D`, 5 on IPv6 by default): a chunk
//! holding more than one range gets 2^D entries for its next D bits, so
//! its keys read their entry at depth S + D straight away where a node
//! took two reads (its entry, then its child's). IPv6 tables hold few
//! such chunks (190 of 2^18 on dfz-v6-nh: 12 KB of tables), and every
//! call shape ran 1.05-1.11x faster on keys inside announced IPv6
//! prefixes (0.99-1.02x on random public ones); an IPv4 table has them
//! nearly everywhere, so D is 0 there by default
//! ([`PoptrieConfig::direct_bits_for`]).
//!
//! ```text
//! root[key >> (128 - S)]           2^S x u32
//!   bit 31 set:   [30:0] label index (the chunk is one range)
//!   bit 31 clear: [30:0] the first of the chunk's 2^D table entries,
//!                 indexed by the next D key bits (D = 0: one, its node)
//! entries[e]                       u64, a node's or a run of leaves'
//!   node  [31:0] bitmap: bit c set if child c (the next 5 key bits) is a
//!                node or starts a run of equal leaves (bit 0 and at least
//!                one more always set);  [63:32] its first child entry
//!   leaf  [31:0] 1, [63:32] the label: the results slot itself
//!         [31:0] 0, [63:32] a label index (the default route's, index 0,
//!                whose slot changes with it)
//! results[label index]             label slot, index 0 = no route
//! ```
//!
//! Keys are walked left-aligned in 128 bits (an IPv4 address in the top
//! 32), so one set of root sizes serves both families: `S` is 8, 13, 18
//! or 23, which leaves 128 bits a whole number of 5-bit levels; an IPv4
//! key ends by bit 32, where every child covers addresses of one range.
//!
//! A step at a node with child bits `c` reads the entry
//! `first child + popcount(bitmap & below) - 1` (`below` = the bits
//! `0..=c`): child `c`'s own entry where bit `c` is set, otherwise the
//! run it continues. A run starts at a leaf child whose label differs
//! from the previous child's or follows a child node, so the count is
//! never zero. A node's child entries are consecutive; nodes are laid out
//! depth first, so a path of nodes with one child node each lies in
//! consecutive lines.
//!
//! Memory accesses per lookup: the root entry, the chunk's table entry,
//! one entry per level below it, and the results slot only where the walk
//! ended at the root or at a leaf of the default route.
//!
//! Updates patch the deepest node whose span holds a changed prefix (its
//! child entries built again, depth first, at the end of the array; the
//! node keeps its entry, which its parent counts), or the table entries
//! of a prefix shorter than the root and table together or under a table
//! entry that was a leaf (rewritten in place), or the root chunks of a
//! prefix shorter than the root or in a chunk that was one range (their
//! entries pointed at new tables). What a patch replaces is left
//! unreachable: a packed node has no room to grow in place, but the
//! subtree under one is a few entries (a build of all of `dfz-v6-nh`
//! takes about 20 ms, a node microseconds). Changes spanning a quarter of
//! the root's chunks or of the entries, and unreachable entries past a
//! quarter of the array, rebuild the engine. A label index past 0 keeps
//! its slot for the updater's life (new labels get new indices), so the
//! slots leaves hold stay right; the default route is results slot 0,
//! read through its index, so a `/0` change rewrites one slot. Snapshots
//! can be saved as images (`image`).
//!
//! Limits (a [`BuildError::Limit`] naming them): at most 2^31 - 1 entries
//! and label indices.

mod image;
#[cfg(target_arch = "x86_64")]
mod wide;

use std::fmt;
use std::marker::PhantomData;

use crate::addr::Addr;
use crate::engine::{BuildError, EngineConfig, EngineStats, Lookup, Updater};
use crate::labels::{word_of, LabelIndex, LabelSlot};
use crate::prefix::{Label, Prefix};
use crate::rib::{Range, Rib};
use crate::spec::EngineSpec;
use crate::storage::{Owned, Storage};

/// Address bits per node level.
pub const STRIDE: u32 = 5;
/// The root sizes `s=` takes: those that leave 128-bit keys a whole
/// number of levels (IPv4 keys are walked left-aligned in 128 bits, where
/// no node lies below bit 32).
pub const ROOT_BITS: [u32; 4] = [8, 13, 18, 23];
/// A root entry's flag: a label index, not a node.
const LEAF: u32 = 1 << 31;
/// Most entries and label indices (31-bit fields).
const MAX_INDEX: usize = (1 << 31) - 1;

/// Whether an entry is a node: its low half is its bitmap, which has bit 0
/// and at least one other bit set, where a leaf's is 0 or 1.
#[inline(always)]
fn is_node(entry: u64) -> bool {
    entry as u32 > 1
}

/// The entry of a run of leaves with label index `index`: the results
/// slot itself (a label in the high half, 1 in the low half) where
/// `labels` holds one that never changes, so a walk ends without reading
/// `results`; index 0, whose slot is the default route's and changes with
/// it, stays an index (0 in both halves).
fn leaf_entry(labels: &LabelIndex, index: u32) -> u64 {
    match index {
        0 => 0,
        _ => labels.slots()[index as usize].bits(),
    }
}

const _: () = {
    let mut i = 0;
    while i < ROOT_BITS.len() {
        assert!(
            (128 - ROOT_BITS[i]).is_multiple_of(STRIDE),
            "every root size leaves 128-bit keys whole levels"
        );
        i += 1;
    }
};

/// The table sizes `d=` takes: a whole number of levels.
pub const DIRECT_BITS: [u32; 4] = [0, 5, 10, 15];
/// The most bits the root and a chunk's table resolve together: their
/// entries then take at most 2^23 x 8 bytes however the table is spread.
pub const MAX_DIRECT_DEPTH: u32 = 23;

/// The parameters of `poptrie`: `poptrie:s=S,d=D`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoptrieConfig {
    /// `S`: the address bits the root resolves (8, 13, 18 or 23).
    pub root_bits: u32,
    /// `D`: the address bits after the root that a chunk holding more than
    /// one range resolves with a table of 2^D entries (0, 5, 10 or 15;
    /// `S + D` at most 23); 0: the chunk's table is its node. `None`:
    /// the family's default ([`PoptrieConfig::direct_bits_for`]).
    pub direct_bits: Option<u32>,
}

/// The default parameters: a 2^18 root (1 MiB), and the family's table
/// size.
pub const DEFAULT_CONFIG: PoptrieConfig = PoptrieConfig {
    root_bits: 18,
    direct_bits: None,
};

/// `D` on IPv6 where the spec names none.
const DEFAULT_DIRECT_BITS_V6: u32 = 5;

impl PoptrieConfig {
    /// `D` for addresses of `A`: as the spec gives it, or by default 5 on
    /// IPv6 (within `S + D <= 23`) and 0 on IPv4. An IPv6 table holds few
    /// chunks with more than one range (190 of 2^18 on dfz-v6-nh), whose
    /// tables of 32 entries cost 12 KB and save every key under them one
    /// dependent read: 1.05-1.11x in every call shape on announced keys
    /// (docs/BENCHMARKS.md, "`poptrie` keeps its leaves among its nodes").
    /// An IPv4 table has such chunks nearly everywhere: 32-entry tables
    /// take dfz-v4-nh from 6.35 to 14.45 bytes per prefix.
    pub fn direct_bits_for<A: Addr>(&self) -> u32 {
        self.direct_bits.unwrap_or(if A::BITS == 128 {
            DEFAULT_DIRECT_BITS_V6.min(MAX_DIRECT_DEPTH - self.root_bits)
        } else {
            0
        })
    }
}

impl Default for PoptrieConfig {
    fn default() -> Self {
        DEFAULT_CONFIG
    }
}

impl fmt::Display for PoptrieConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "poptrie:s={}", self.root_bits)?;
        if let Some(direct_bits) = self.direct_bits {
            write!(f, ",d={direct_bits}")?;
        }
        Ok(())
    }
}

impl EngineConfig for PoptrieConfig {
    const NAMES: &'static [&'static str] = &["poptrie"];

    fn from_spec(spec: &EngineSpec) -> Result<Self, BuildError> {
        spec.expect_only(&["s", "d"])?;
        let root_bits = spec
            .number("s", ROOT_BITS[0]..=ROOT_BITS[ROOT_BITS.len() - 1])?
            .unwrap_or(DEFAULT_CONFIG.root_bits);
        if !ROOT_BITS.contains(&root_bits) {
            return Err(spec.error(format!(
                "`s={root_bits}` leaves the address no whole number of {STRIDE}-bit levels: \
                 use s=8, s=13, s=18 or s=23"
            )));
        }
        let Some(direct_bits) = spec.number("d", 0..=DIRECT_BITS[DIRECT_BITS.len() - 1])? else {
            return Ok(PoptrieConfig {
                root_bits,
                direct_bits: None,
            });
        };
        if !DIRECT_BITS.contains(&direct_bits) {
            return Err(spec.error(format!(
                "`d={direct_bits}` is no whole number of {STRIDE}-bit levels: \
                 use d=0, d=5, d=10 or d=15"
            )));
        }
        if root_bits + direct_bits > MAX_DIRECT_DEPTH {
            return Err(spec.error(format!(
                "`s={root_bits},d={direct_bits}` resolves {} bits before the first node, \
                 more than {MAX_DIRECT_DEPTH}: its tables could take 2^{} bytes; \
                 use d={} or less",
                root_bits + direct_bits,
                root_bits + direct_bits + 3,
                MAX_DIRECT_DEPTH - root_bits
            )));
        }
        Ok(PoptrieConfig {
            root_bits,
            direct_bits: Some(direct_bits),
        })
    }
}

/// `addr` left-aligned in 128 bits (an IPv4 address in the top 32).
#[inline(always)]
fn left<A: Addr>(addr: A) -> u128 {
    addr.to_u128() << (128 - A::BITS as u32)
}

/// The entry a node (a bitmap in bits 0..32, the index of its first
/// child entry in bits 32..64) gives `child`: the first index plus the set
/// bits `0..=child`, less one (bit 0 is always set, so the count is at
/// least one).
#[inline(always)]
fn counted(word: u64, child: u32) -> usize {
    let below = (2u64 << child).wrapping_sub(1);
    (word >> 32) as usize + (word & below).count_ones() as usize - 1
}

/// The lookup snapshot of a `poptrie` engine (see the module header), in
/// storage `S`.
pub struct Poptrie<A: Addr, S: Storage = Owned> {
    root_bits: u32,
    direct_bits: u32,
    root: S::Array<u32>,
    entries: S::Array<u64>,
    results: S::Array<LabelSlot>,
    /// Whether this CPU runs the AVX-512 batch (decided at build).
    wide: bool,
    /// Whether this CPU has POPCNT (the per-key walk uses it).
    popcnt: bool,
    family: PhantomData<A>,
}

impl<A: Addr, S: Storage> Clone for Poptrie<A, S> {
    fn clone(&self) -> Self {
        Poptrie {
            root_bits: self.root_bits,
            direct_bits: self.direct_bits,
            root: self.root.clone(),
            entries: self.entries.clone(),
            results: self.results.clone(),
            wide: self.wide,
            popcnt: self.popcnt,
            family: PhantomData,
        }
    }
}

impl<A: Addr, S: Storage> Poptrie<A, S> {
    /// The entry for `left` (a key left-aligned in 128 bits) in the table
    /// that the root entry `entry` of its chunk names: the table's first
    /// plus the D key bits after the root's (`>> 1` first, so that D = 0
    /// shifts by 127, not 128).
    #[inline(always)]
    fn table_slot(&self, entry: u32, left: u128) -> usize {
        entry as usize + (left << self.root_bits >> 1 >> (127 - self.direct_bits)) as usize
    }

    /// The per-key walk (inlined into the callers that pick the popcount
    /// instruction or not).
    #[inline(always)]
    fn walk(&self, addr: A) -> Option<Label> {
        let left = left(addr);
        let entry = self.root[(left >> (128 - self.root_bits)) as usize];
        if entry & LEAF != 0 {
            return self.results[(entry & !LEAF) as usize].get();
        }
        let mut word = self.entries[self.table_slot(entry, left)];
        let mut rest = left << (self.root_bits + self.direct_bits);
        while is_node(word) {
            let child = (rest >> (128 - STRIDE)) as u32;
            word = self.entries[counted(word, child)];
            rest <<= STRIDE;
        }
        match word as u32 {
            0 => self.results[(word >> 32) as usize].get(),
            _ => Some((word >> 32) as Label),
        }
    }

    /// [`Self::walk`] with the POPCNT instruction.
    ///
    /// # Safety
    /// The CPU must have POPCNT.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "popcnt")]
    unsafe fn walk_popcnt(&self, addr: A) -> Option<Label> {
        self.walk(addr)
    }

    /// The lookup without AVX-512 (and, where the CPU lacks it, without
    /// POPCNT).
    #[inline]
    fn lookup_portable(&self, addr: A) -> Option<Label> {
        #[cfg(target_arch = "x86_64")]
        if self.popcnt {
            // SAFETY: `popcnt` is set only where the CPU has POPCNT.
            return unsafe { self.walk_popcnt(addr) };
        }
        self.walk(addr)
    }

    /// The batch lookup of a CPU without AVX-512: one key at a time (the
    /// walks of consecutive keys are independent, so their reads overlap
    /// in the core); public so that benchmarks on a CPU with AVX-512 can
    /// run it too.
    #[doc(hidden)]
    pub fn lookup_batch_portable(&self, addrs: &[A], out: &mut [Option<Label>]) {
        for (&addr, out) in addrs.iter().zip(out.iter_mut()) {
            *out = self.lookup_portable(addr);
        }
    }
}

impl<A: Addr, S: Storage> Lookup<A> for Poptrie<A, S> {
    #[inline]
    fn lookup(&self, addr: A) -> Option<Label> {
        self.lookup_portable(addr)
    }

    fn lookup_batch(&self, addrs: &[A], out: &mut [Option<Label>]) {
        assert!(out.len() >= addrs.len(), "output slice shorter than input");
        #[cfg(target_arch = "x86_64")]
        if self.wide {
            // SAFETY: `wide` is set only where the CPU has the features
            // `wide::available` checks.
            unsafe { self.lookup_batch_wide::<A, _, false>(addrs, out) };
            return;
        }
        self.lookup_batch_portable(addrs, out);
    }

    /// The AVX-512 batch writes the C library's words itself: no buffer of
    /// answers to clear and convert per call.
    fn lookup_batch_words(&self, addrs: &[A], out: &mut [u64]) {
        assert!(out.len() >= addrs.len(), "output slice shorter than input");
        #[cfg(target_arch = "x86_64")]
        if self.wide {
            // SAFETY: `wide` is set only where the CPU has the features
            // `wide::available` checks.
            unsafe { self.lookup_batch_wide::<A, _, false>(addrs, out) };
            return;
        }
        for (&addr, out) in addrs.iter().zip(out.iter_mut()) {
            *out = word_of(self.lookup_portable(addr));
        }
    }

    /// The AVX-512 batch reads network-order keys in place and swaps their
    /// bytes in the register: no run of keys converted into a buffer and
    /// read back (a store and a reload per key that the walk waits for).
    fn lookup_batch_words_be(&self, keys: &[A::Bytes], out: &mut [u64]) {
        assert!(out.len() >= keys.len(), "output slice shorter than input");
        #[cfg(target_arch = "x86_64")]
        if self.wide {
            // SAFETY: `wide` is set only where the CPU has the features
            // `wide::available` checks; `A::Bytes` is the `A::BITS / 8`
            // network-order bytes of an address.
            unsafe { self.lookup_batch_wide::<A::Bytes, _, true>(keys, out) };
            return;
        }
        crate::engine::words_from_bytes(self, keys, out);
    }

    fn memory_bytes(&self) -> usize {
        self.root.len() * 4
            + self.entries.len() * 8
            + self.results.len() * std::mem::size_of::<LabelSlot>()
    }
}

/// The build state of a `poptrie` engine: its parameters, the label
/// indices its snapshot's entries hold, and what patches left unreachable.
#[derive(Clone, Debug)]
pub struct PoptrieUpdater<A: Addr> {
    config: PoptrieConfig,
    /// The snapshot's label indices (updates add labels; a rebuild
    /// renumbers them).
    labels: LabelIndex,
    /// Entries that patches have left unreachable since the last build.
    dead_entries: usize,
    /// Full builds that updates did: changes spanning a quarter of the
    /// root, or compaction.
    rebuilds: u64,
    family: PhantomData<A>,
}

/// Unreachable entries that start a compaction (with a quarter of the
/// array): below this a rebuild would cost more than the space.
const COMPACT_MIN: usize = 4096;

/// What a `poptrie` engine looks like.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PoptrieStats {
    /// `S`, the root's address bits.
    pub root_bits: u32,
    /// `D`, the address bits of a chunk's table (0: its node).
    pub direct_bits: u32,
    /// Root entries that hold a label (their chunk is one range).
    pub root_labels: usize,
    /// Entries of nodes.
    pub nodes: usize,
    /// Entries of runs of equal leaves.
    pub leaf_runs: usize,
    /// Whether the batch walks eight keys per vector with AVX-512.
    pub avx512: bool,
    /// Whether the other lookups count bits with POPCNT (else in plain
    /// code), as the CPU and [`crate::cpu::max_simd`] allow.
    pub popcnt: bool,
    /// Entries left unreachable by patches (counted in `nodes` and
    /// `leaf_runs`).
    pub dead_entries: usize,
    /// Full builds that updates did (wide changes, compaction).
    pub rebuilds: u64,
}

impl EngineStats for PoptrieStats {
    fn rows(&self) -> Vec<(String, String)> {
        vec![
            ("root bits".into(), self.root_bits.to_string()),
            ("table bits".into(), self.direct_bits.to_string()),
            ("root entries: labels".into(), self.root_labels.to_string()),
            ("nodes".into(), self.nodes.to_string()),
            ("leaf runs".into(), self.leaf_runs.to_string()),
            ("AVX-512 batch".into(), self.avx512.to_string()),
            ("POPCNT".into(), self.popcnt.to_string()),
            ("entries unreachable".into(), self.dead_entries.to_string()),
            ("rebuilds by updates".into(), self.rebuilds.to_string()),
        ]
    }
}

/// Whether this CPU runs the AVX-512 batch (eight keys per vector) and
/// [`crate::cpu::max_simd`] allows it, which also makes `poptrie` the
/// default IPv6 engine (`crate::default_spec`).
pub(crate) fn wide_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        crate::cpu::allows(crate::cpu::Simd::Avx512) && wide::available()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether this CPU has POPCNT and [`crate::cpu::max_simd`] allows it.
fn popcnt_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        crate::cpu::allows(crate::cpu::Simd::Avx2) && std::arch::is_x86_feature_detected!("popcnt")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The merged range view as starts and label indices, for the build's
/// "is this span one range" question.
struct Spans {
    starts: Vec<u128>,
    labels: Vec<u32>,
}

impl Spans {
    fn new<A: Addr>(ranges: &[Range<A>], labels: &mut LabelIndex) -> Result<Spans, BuildError> {
        Ok(Spans {
            starts: ranges.iter().map(|r| left(r.first)).collect(),
            labels: ranges
                .iter()
                .map(|r| labels.index(r.label))
                .collect::<Result<_, _>>()?,
        })
    }

    /// A walk over spans from range `at` on, asked in address order.
    fn walk(&self, at: usize) -> SpanWalk<'_> {
        SpanWalk { spans: self, at }
    }
}

/// Spans asked in address order (a node's children, or the root's
/// chunks): a cursor over the ranges, which starts at the range holding
/// the node's first address (known from its parent's walk) and steps over
/// the node's few ranges. A binary search of the whole array per child
/// misses the cache at most of its steps, 32 searches per node.
struct SpanWalk<'a> {
    spans: &'a Spans,
    /// The range holding the last span's first address.
    at: usize,
}

impl SpanWalk<'_> {
    /// The label index of `lo..=hi` if one range covers it; `lo` must not
    /// be below the last call's, nor below the start of range `at`.
    fn single(&mut self, lo: u128, hi: u128) -> Option<u32> {
        let starts = &self.spans.starts;
        while starts.get(self.at + 1).is_some_and(|&next| next <= lo) {
            self.at += 1;
        }
        let i = self.at;
        (i + 1 == starts.len() || starts[i + 1] > hi).then_some(self.spans.labels[i])
    }
}

/// A node slot allocated and not yet filled in: its span is the addresses
/// agreeing with `lo` (left-aligned) in their top `depth` bits, and `at`
/// is the range of the build's spans holding `lo`.
#[derive(Clone, Copy, Debug)]
struct Pending {
    node: usize,
    lo: u128,
    depth: u32,
    at: usize,
}

impl<A: Addr> PoptrieUpdater<A> {
    fn limit(&self, why: String) -> BuildError {
        BuildError::Limit {
            engine: self.config.to_string(),
            why,
        }
    }

    /// A new entry for the node of the span at `lo` of depth `depth`
    /// (filled in later: it is pushed on `pending` with `at`, the range
    /// holding `lo`).
    fn new_node(
        &self,
        entries: &mut Vec<u64>,
        pending: &mut Vec<Pending>,
        lo: u128,
        depth: u32,
        at: usize,
    ) -> Result<u32, BuildError> {
        let node = entries.len();
        if node >= MAX_INDEX {
            return Err(self.limit(format!("more than {MAX_INDEX} entries")));
        }
        entries.push(0);
        pending.push(Pending {
            node,
            lo,
            depth,
            at,
        });
        Ok(node as u32)
    }

    /// Fills in the entry of node `node`, the span at `lo` of depth
    /// `depth` (`at`: the range holding `lo`): appends its child entries
    /// together, a node's (pushed on `pending`) or a run of leaves' where
    /// the child is the first of the run.
    fn fill_node(
        &self,
        spans: &Spans,
        entries: &mut Vec<u64>,
        pending: &mut Vec<Pending>,
        Pending {
            node,
            lo,
            depth,
            at,
        }: Pending,
    ) -> Result<(), BuildError> {
        // Every key is walked left-aligned in 128 bits.
        let child_bits = 128 - depth - STRIDE;
        let mut starts = 0u32;
        let first = entries.len() as u64;
        // The label of the run the previous child ended (none after a
        // node, whose entry lies between: the run starts again).
        let mut previous = None;
        let mut walk = spans.walk(at);
        for c in 0..1u128 << STRIDE {
            let child_lo = lo | c << child_bits;
            match walk.single(child_lo, child_lo | ((1u128 << child_bits) - 1)) {
                Some(label) => {
                    if previous != Some(label) {
                        starts |= 1 << c;
                        entries.push(leaf_entry(&self.labels, label));
                        previous = Some(label);
                    }
                }
                None => {
                    starts |= 1 << c;
                    self.new_node(entries, pending, child_lo, depth + STRIDE, walk.at)?;
                    previous = None;
                }
            }
        }
        // A node whose children are all one run (a patched node whose span
        // became one range) gets a second run of the same leaf at child
        // 1, so that its bitmap is never a leaf's low half (1).
        if starts == 1 {
            starts |= 2;
            entries.push(entries[entries.len() - 1]);
        }
        if entries.len() > MAX_INDEX {
            return Err(self.limit(format!("more than {MAX_INDEX} entries")));
        }
        entries[node] = u64::from(starts) | first << 32;
        Ok(())
    }

    /// The root entry of chunk `chunk` (its first address's range held
    /// by `walk`), its subtree appended to `entries` depth first.
    fn chunk_entry(
        &self,
        spans: &Spans,
        walk: &mut SpanWalk<'_>,
        chunk: usize,
        entries: &mut Vec<u64>,
        pending: &mut Vec<Pending>,
    ) -> Result<u32, BuildError> {
        let root_bits = self.config.root_bits;
        // Every key is walked left-aligned in 128 bits.
        let chunk_bits = 128 - root_bits;
        let lo = (chunk as u128) << chunk_bits;
        if let Some(label) = walk.single(lo, lo | ((1u128 << chunk_bits) - 1)) {
            return Ok(LEAF | label);
        }
        let entry = entries.len() as u32;
        self.fill_table(walk, lo, entries, pending)?;
        // The root node's subtree depth first, a node's child entries
        // appended together when the node is filled in: they stay
        // consecutive (the walk counts them), and a node with one child
        // node, as on the path to a lone /48, lies right before that
        // child's own children, so a path's entries share lines where
        // breadth first put each level of it in another line. On keys
        // inside announced IPv6 prefixes the batch ran 1.09x faster than
        // breadth first, on random public keys (which mostly end at
        // shallow nodes, whose leaves breadth first kept together) 0.98x
        // (docs/BENCHMARKS.md, "`poptrie` lays its nodes out depth
        // first").
        self.fill_pending(spans, entries, pending)?;
        Ok(entry)
    }

    /// Appends the table of a chunk at `lo` (its first address's range
    /// held by `walk`) holding more than one range: 2^D entries, a leaf's
    /// or a node's (pushed on `pending`).
    fn fill_table(
        &self,
        walk: &mut SpanWalk<'_>,
        lo: u128,
        entries: &mut Vec<u64>,
        pending: &mut Vec<Pending>,
    ) -> Result<(), BuildError> {
        let direct_bits = self.config.direct_bits_for::<A>();
        let depth = self.config.root_bits + direct_bits;
        for slot in 0..1u128 << direct_bits {
            let slot_lo = lo | slot << (128 - depth);
            let entry = self.slot_entry(walk, slot_lo, depth, entries.len(), pending);
            entries.push(entry);
        }
        if entries.len() > MAX_INDEX {
            return Err(self.limit(format!("more than {MAX_INDEX} entries")));
        }
        Ok(())
    }

    /// The entry of table entry `slot`, whose span is the addresses
    /// agreeing with `slot_lo` in their top `depth` bits (its first
    /// address's range held by `walk`): a leaf's where one range covers
    /// it, otherwise a node's, pushed on `pending` (0 until filled in).
    fn slot_entry(
        &self,
        walk: &mut SpanWalk<'_>,
        slot_lo: u128,
        depth: u32,
        slot: usize,
        pending: &mut Vec<Pending>,
    ) -> u64 {
        match walk.single(slot_lo, slot_lo | (u128::MAX >> depth)) {
            Some(label) => leaf_entry(&self.labels, label),
            None => {
                pending.push(Pending {
                    node: slot,
                    lo: slot_lo,
                    depth,
                    at: walk.at,
                });
                0
            }
        }
    }

    /// Fills in the nodes on `pending` and the nodes they add, depth first.
    fn fill_pending(
        &self,
        spans: &Spans,
        entries: &mut Vec<u64>,
        pending: &mut Vec<Pending>,
    ) -> Result<(), BuildError> {
        while let Some(node) = pending.pop() {
            self.fill_node(spans, entries, pending, node)?;
        }
        Ok(())
    }

    /// The snapshot of `rib`, with the label indices renumbered.
    fn snapshot(&mut self, rib: &Rib<A>) -> Result<Poptrie<A>, BuildError> {
        let root_bits = self.config.root_bits;
        // The default route is results slot 0 (label index 0 where only
        // it matches), so that a `/0` change rewrites one slot.
        self.labels = LabelIndex::new(self.config, MAX_INDEX);
        self.labels.set_default(rib.default_route());
        let spans = Spans::new(&rib.ranges_without_default(), &mut self.labels)?;
        let mut root = vec![0u32; 1 << root_bits];
        let mut entries = Vec::new();
        let mut pending = Vec::new();
        let mut walk = spans.walk(0);
        for (chunk, entry) in root.iter_mut().enumerate() {
            *entry = self.chunk_entry(&spans, &mut walk, chunk, &mut entries, &mut pending)?;
        }
        let mut results = Vec::new();
        self.labels.sync(&mut results);
        self.dead_entries = 0;
        let wide = wide_available();
        Ok(Poptrie {
            root_bits,
            direct_bits: self.config.direct_bits_for::<A>(),
            root,
            entries,
            results,
            wide,
            popcnt: popcnt_available(),
            family: PhantomData,
        })
    }

    /// Builds what `patch` names again from `rib`, at the ends of the
    /// snapshot's arrays.
    fn patch(
        &mut self,
        snapshot: &mut Poptrie<A>,
        rib: &Rib<A>,
        patch: Patch,
        ranges: &mut Vec<Range<A>>,
    ) -> Result<(), BuildError> {
        let (lo, hi) = patch.span(snapshot.root_bits, snapshot.direct_bits);
        // The span's addresses in the family's own bits (keys are walked
        // left-aligned in 128).
        let to_family = 128 - A::BITS as u32;
        ranges.clear();
        rib.ranges_in_without_default(
            A::from_u128(lo >> to_family),
            A::from_u128(hi >> to_family),
            true,
            ranges,
        );
        let spans = Spans::new(ranges, &mut self.labels)?;
        let mut walk = spans.walk(0);
        let mut pending = Vec::new();
        match patch {
            Patch::Chunks { first, end } => {
                for chunk in first..end {
                    snapshot.root[chunk] = self.chunk_entry(
                        &spans,
                        &mut walk,
                        chunk,
                        &mut snapshot.entries,
                        &mut pending,
                    )?;
                }
            }
            // Table entries are rewritten in place: a leaf's, or a new
            // node's whose subtree is built at the end of the array.
            Patch::Slots { first, end, lo } => {
                let depth = snapshot.root_bits + snapshot.direct_bits;
                for (i, slot) in (first..end).enumerate() {
                    let slot_lo = lo + ((i as u128) << (128 - depth));
                    snapshot.entries[slot] =
                        self.slot_entry(&mut walk, slot_lo, depth, slot, &mut pending);
                }
                self.fill_pending(&spans, &mut snapshot.entries, &mut pending)?;
            }
            // The node keeps its entry (its parent counts it among its
            // children) and gets new child entries. Where the change
            // left its span one range, it stays a node whose children are
            // all one run: a level more for those keys, the same answer,
            // until the next build.
            Patch::Node { node, lo, depth } => {
                pending.push(Pending {
                    node,
                    lo,
                    depth,
                    at: 0,
                });
                self.fill_pending(&spans, &mut snapshot.entries, &mut pending)?;
            }
        }
        Ok(())
    }
}

/// What a change is patched at: root chunks (a prefix shorter than the
/// root, or one in a chunk that was one range), entries of a chunk's table
/// (a prefix shorter than the root and the table together, or one under a
/// table entry that was a leaf), or the deepest node whose span holds the
/// prefix (its subtree is built again under it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Patch {
    /// Root chunks `first..end`.
    Chunks { first: usize, end: usize },
    /// Table entries `first..end`, the first one's span starting at `lo`.
    Slots { first: usize, end: usize, lo: u128 },
    /// The node of entry `node`, whose span is the addresses agreeing
    /// with `lo` in their top `depth` bits.
    Node { node: usize, lo: u128, depth: u32 },
}

impl Patch {
    /// Where a change to `prefix` is patched in `snapshot`.
    fn of<A: Addr, S: Storage>(snapshot: &Poptrie<A, S>, prefix: Prefix<A>) -> Patch {
        let (root_bits, direct_bits) = (snapshot.root_bits, snapshot.direct_bits);
        // Left-aligned in 128 bits, an IPv4 prefix's bits are the top
        // ones, so its length counts from the top as an IPv6 one does.
        let addr = left(prefix.first());
        let plen = u32::from(prefix.plen());
        let first = (addr >> (128 - root_bits)) as usize;
        let entry = snapshot.root[first];
        if plen < root_bits || entry & LEAF != 0 {
            let end = first + (1usize << root_bits.saturating_sub(plen));
            return Patch::Chunks { first, end };
        }
        // The prefix's first address has no bits past its length, so it
        // is the start of its first table entry's span.
        let depth = root_bits + direct_bits;
        let slot = snapshot.table_slot(entry, addr);
        if plen < depth {
            let end = slot + (1usize << (depth - plen));
            return Patch::Slots {
                first: slot,
                end,
                lo: addr,
            };
        }
        if !is_node(snapshot.entries[slot]) {
            let lo = addr & !(u128::MAX >> depth);
            return Patch::Slots {
                first: slot,
                end: slot + 1,
                lo,
            };
        }
        let (mut node, mut depth) = (slot, depth);
        // Down while the prefix lies inside one child that is a node.
        while depth + STRIDE <= plen {
            let child = (addr << depth >> (128 - STRIDE)) as u32;
            let next = counted(snapshot.entries[node], child);
            if !is_node(snapshot.entries[next]) {
                break;
            }
            node = next;
            depth += STRIDE;
        }
        let lo = addr & !(u128::MAX >> depth);
        Patch::Node { node, lo, depth }
    }

    /// The first and last address (left-aligned) of what it rebuilds.
    fn span(self, root_bits: u32, direct_bits: u32) -> (u128, u128) {
        match self {
            Patch::Slots { first, end, lo } => {
                let slot_bits = 128 - root_bits - direct_bits;
                // Past the last table entry of the last chunk the end
                // wraps to 0 and the last address to all ones.
                let after = lo.wrapping_add(((end - first) as u128) << slot_bits);
                (lo, after.wrapping_sub(1))
            }
            Patch::Chunks { first, end } => {
                let chunk_bits = 128 - root_bits;
                // `end << chunk_bits` is 0 past the last chunk, so the
                // last address wraps to all ones.
                (
                    (first as u128) << chunk_bits,
                    ((end as u128) << chunk_bits).wrapping_sub(1),
                )
            }
            Patch::Node { lo, depth, .. } => (lo, lo | u128::MAX >> depth),
        }
    }

    /// The entries it leaves unreachable in `snapshot` (a patched node
    /// keeps its own).
    fn replaced<A: Addr, S: Storage>(self, snapshot: &Poptrie<A, S>) -> usize {
        match self {
            Patch::Chunks { first, end } => snapshot.root[first..end]
                .iter()
                .filter(|&&entry| entry & LEAF == 0)
                .flat_map(|&entry| {
                    let table = entry as usize;
                    table..table + (1usize << snapshot.direct_bits)
                })
                .map(|slot| subtree_size(&snapshot.entries, slot))
                .sum(),
            // The entries keep their places; what lies under them goes.
            Patch::Slots { first, end, .. } => (first..end)
                .map(|slot| subtree_size(&snapshot.entries, slot) - 1)
                .sum(),
            Patch::Node { node, .. } => subtree_size(&snapshot.entries, node) - 1,
        }
    }
}

/// The entries of the subtree under the node of entry `node`, its own
/// included.
fn subtree_size(entries: &[u64], node: usize) -> usize {
    let mut count = 0;
    let mut stack = vec![node];
    while let Some(entry) = stack.pop() {
        count += 1;
        let word = entries[entry];
        if is_node(word) {
            let first = (word >> 32) as usize;
            stack.extend(first..first + (word as u32).count_ones() as usize);
        }
    }
    count
}

/// Where the changes in `changed` are patched in `snapshot`, in address
/// order, without those inside another (whose rebuild covers them).
fn patches<A: Addr, S: Storage>(snapshot: &Poptrie<A, S>, changed: &[Prefix<A>]) -> Vec<Patch> {
    let mut patches: Vec<((u128, u128), Patch)> = changed
        .iter()
        .map(|&prefix| {
            let patch = Patch::of(snapshot, prefix);
            (patch.span(snapshot.root_bits, snapshot.direct_bits), patch)
        })
        .collect();
    // Spans nest or are disjoint; by first address and the wider first, a
    // span inside another follows it.
    patches.sort_unstable_by_key(|&((lo, hi), _)| (lo, std::cmp::Reverse(hi)));
    let mut last: Option<u128> = None;
    patches.retain(|&((lo, hi), _)| {
        if last.is_some_and(|end| lo <= end) {
            return false;
        }
        last = Some(hi);
        true
    });
    patches.into_iter().map(|(_, patch)| patch).collect()
}

impl<A: Addr> Updater<A> for PoptrieUpdater<A> {
    type Config = PoptrieConfig;
    type Snapshot = Poptrie<A>;
    type Stats = PoptrieStats;

    fn build(config: &PoptrieConfig, rib: &Rib<A>) -> Result<(Self, Poptrie<A>), BuildError> {
        // The table size the family settled on, so that the engine's name
        // and a saved image's spec say it.
        let config = PoptrieConfig {
            direct_bits: Some(config.direct_bits_for::<A>()),
            ..*config
        };
        let mut updater = PoptrieUpdater {
            config,
            labels: LabelIndex::new(config, MAX_INDEX),
            dead_entries: 0,
            rebuilds: 0,
            family: PhantomData,
        };
        let snapshot = updater.snapshot(rib)?;
        Ok((updater, snapshot))
    }

    fn config(&self) -> PoptrieConfig {
        self.config
    }

    fn patches(&self) -> bool {
        true
    }

    fn update(
        &mut self,
        snapshot: &mut Poptrie<A>,
        rib: &Rib<A>,
        changed: &[Prefix<A>],
    ) -> Result<(), BuildError> {
        // The default route is results slot 0: it touches no chunk.
        let changed = crate::engines::shared::without_default(changed);
        let patches = patches(snapshot, changed);
        let chunks: usize = patches
            .iter()
            .map(|patch| match patch {
                Patch::Chunks { first, end } => end - first,
                Patch::Slots { .. } | Patch::Node { .. } => 0,
            })
            .sum();
        let replaced: usize = patches.iter().map(|patch| patch.replaced(snapshot)).sum();
        // PERF: past a quarter of the root's chunks or of the entries (a
        // short covering prefix, or `2000::/4`, nearly every IPv6 prefix),
        // one build of the whole table costs less than the patches, which
        // would also leave that much unreachable.
        if chunks << 2 >= snapshot.root.len()
            || (replaced >= COMPACT_MIN
                && (self.dead_entries + replaced) << 2 >= snapshot.entries.len())
        {
            return self.rebuild(snapshot, rib);
        }
        self.labels.set_default(rib.default_route());
        let mut ranges = Vec::new();
        for &patch in &patches {
            self.patch(snapshot, rib, patch, &mut ranges)?;
        }
        self.dead_entries += replaced;
        self.labels.sync(&mut snapshot.results);
        // Unreachable entries past a quarter of the array (and
        // `COMPACT_MIN`): compact by a build, so that a long stream of
        // changes keeps the footprint (and the lines a walk reads) of a
        // fresh build.
        if self.dead_entries >= COMPACT_MIN && self.dead_entries << 2 >= snapshot.entries.len() {
            return self.rebuild(snapshot, rib);
        }
        Ok(())
    }

    fn stats(&self, snapshot: &Poptrie<A>) -> PoptrieStats {
        let nodes = snapshot.entries.iter().filter(|&&e| is_node(e)).count();
        PoptrieStats {
            root_bits: snapshot.root_bits,
            direct_bits: snapshot.direct_bits,
            root_labels: snapshot.root.iter().filter(|&&e| e & LEAF != 0).count(),
            nodes,
            leaf_runs: snapshot.entries.len() - nodes,
            avx512: snapshot.wide,
            popcnt: snapshot.popcnt,
            dead_entries: self.dead_entries,
            rebuilds: self.rebuilds,
        }
    }
}

impl<A: Addr> PoptrieUpdater<A> {
    /// Builds `snapshot` again from `rib` (wide changes, compaction).
    fn rebuild(&mut self, snapshot: &mut Poptrie<A>, rib: &Rib<A>) -> Result<(), BuildError> {
        *snapshot = self.snapshot(rib)?;
        self.rebuilds += 1;
        Ok(())
    }
}

/// Every root and table size the spec takes, and each root size with the
/// family's default table size.
#[cfg(test)]
fn test_configs() -> impl Iterator<Item = PoptrieConfig> {
    ROOT_BITS.into_iter().flat_map(|root_bits| {
        DIRECT_BITS
            .into_iter()
            .filter(move |&direct_bits| root_bits + direct_bits <= MAX_DIRECT_DEPTH)
            .map(move |direct_bits| PoptrieConfig {
                root_bits,
                direct_bits: Some(direct_bits),
            })
            .chain([PoptrieConfig {
                root_bits,
                direct_bits: None,
            }])
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prefix::Prefix;

    fn table<A: Addr>(pairs: &[(&str, Label)]) -> Rib<A> {
        Rib::from_pairs(
            pairs
                .iter()
                .map(|&(p, l)| (p.parse::<Prefix<A>>().expect("a prefix"), l)),
        )
    }

    /// Every path (portable per key, POPCNT per key, portable batch, the
    /// AVX-512 batch where the CPU has it) against the reference at every
    /// range boundary and its neighbours.
    fn check<A: Addr>(rib: &Rib<A>, config: PoptrieConfig) {
        let (_, trie) = PoptrieUpdater::build(&config, rib).expect("builds");
        let root_bits = format!("{config}");
        let mut addrs = Vec::new();
        for range in rib.ranges() {
            let first = range.first.to_u128();
            addrs.push(range.first);
            addrs.push(A::from_u128(first.wrapping_sub(1) & A::MAX.to_u128()));
            addrs.push(range.last);
            addrs.push(A::from_u128(first.wrapping_add(1) & A::MAX.to_u128()));
        }
        addrs.push(A::ZERO);
        addrs.push(A::MAX);
        for &addr in &addrs {
            assert_eq!(trie.walk(addr), rib.lookup(addr), "{root_bits} at {addr:?}");
            assert_eq!(
                trie.lookup(addr),
                rib.lookup(addr),
                "{root_bits} at {addr:?}"
            );
        }
        let expected: Vec<_> = addrs.iter().map(|&a| rib.lookup(a)).collect();
        for len in [0, 1, 7, 31, 32, 33, 64, 95, addrs.len()] {
            let len = len.min(addrs.len());
            let mut out = vec![Some(u32::MAX); len];
            trie.lookup_batch(&addrs[..len], &mut out);
            assert_eq!(out, expected[..len], "batch of {len}, {root_bits}");
            trie.lookup_batch_portable(&addrs[..len], &mut out);
            assert_eq!(out, expected[..len], "portable batch of {len}, {root_bits}");
            // The C library's words, written by the batch itself (a miss
            // is all ones).
            let mut words = vec![0; len];
            trie.lookup_batch_words(&addrs[..len], &mut words);
            let expected_words: Vec<u64> = expected[..len].iter().map(|&a| word_of(a)).collect();
            assert_eq!(words, expected_words, "words of {len}, {root_bits}");
        }
    }

    /// The snapshot's answers against the reference at every range
    /// boundary and its neighbours, per key and in a batch.
    fn assert_answers<A: Addr>(trie: &Poptrie<A>, rib: &Rib<A>, when: &str) {
        let mut addrs = Vec::new();
        for range in rib.ranges() {
            addrs.push(range.first);
            addrs.push(range.last);
        }
        let expected: Vec<_> = addrs.iter().map(|&a| rib.lookup(a)).collect();
        let per_key: Vec<_> = addrs.iter().map(|&a| trie.lookup(a)).collect();
        assert_eq!(per_key, expected, "per key, {when}");
        let mut batch = vec![Some(u32::MAX); addrs.len()];
        trie.lookup_batch(&addrs, &mut batch);
        assert_eq!(batch, expected, "batch, {when}");
    }

    /// Changes one at a time inside one root chunk, where each patches the
    /// deepest node holding its prefix: withdrawing the only prefix under
    /// a node leaves it a node of one run; long streams compact.
    #[test]
    fn patches_answer_as_the_reference_and_compact() {
        for (root_bits, direct_bits) in [(18, 0), (18, 5), (13, 10), (8, 15)] {
            patches_answer_as_the_reference_and_compact_with(PoptrieConfig {
                root_bits,
                direct_bits: Some(direct_bits),
            });
        }
    }

    fn patches_answer_as_the_reference_and_compact_with(config: PoptrieConfig) {
        use rand::rngs::SmallRng;
        use rand::{Rng, SeedableRng};

        let mut rib = table::<u128>(&[("2001:db8::/32", 2), ("2001:db8:1::/48", 3)]);
        let (mut updater, mut trie) = PoptrieUpdater::build(&config, &rib).expect("builds");
        let lone: Prefix<u128> = "2001:db8:1::/48".parse().expect("a prefix");
        // Its deepest node (bits 43..48) holds nothing else.
        assert!(matches!(
            Patch::of(&trie, lone),
            Patch::Node { depth: 43, .. }
        ));
        rib.remove(lone);
        updater.update(&mut trie, &rib, &[lone]).expect("patches");
        assert_answers(&trie, &rib, "the lone /48 withdrawn");
        rib.insert(lone, 4);
        updater.update(&mut trie, &rib, &[lone]).expect("patches");
        assert_answers(&trie, &rib, "the lone /48 announced again");
        assert_eq!(updater.rebuilds, 0);
        // The node kept its entry; its old child entries are unreachable.
        assert!(
            updater.dead_entries > 0,
            "the old child entries are counted"
        );

        // A dense /32 of /36–/64s and host routes, changed at random.
        let mut rng = SmallRng::seed_from_u64(7);
        let base = 0x2001_0db8u128 << 96;
        let random_prefix = |rng: &mut SmallRng| {
            let plen = [20u8, 36, 40, 44, 48, 48, 52, 56, 64, 128][rng.random_range(0..10)];
            let bits = rng.random::<u128>() & (u128::MAX >> 32);
            Prefix::new_masked(base | bits & !(u128::MAX >> plen), plen)
        };
        for _ in 0..3000 {
            let prefix = random_prefix(&mut rng);
            rib.insert(prefix, rng.random_range(0..8));
        }
        let (mut updater, mut trie) = PoptrieUpdater::build(&config, &rib).expect("builds");
        for step in 0..6000 {
            let prefix = random_prefix(&mut rng);
            match rng.random_range(0..3) {
                0 => {
                    rib.remove(prefix);
                }
                _ => {
                    rib.insert(prefix, rng.random_range(0..8));
                }
            }
            updater.update(&mut trie, &rib, &[prefix]).expect("patches");
            if step % 500 == 0 {
                assert_answers(&trie, &rib, &format!("after change {step}"));
            }
        }
        assert_answers(&trie, &rib, "after every change");
        assert!(updater.rebuilds > 0, "the stream compacted");
        let (_, fresh) = PoptrieUpdater::build(&config, &rib).expect("builds");
        let entries = trie.entries.len();
        assert!(
            entries - updater.dead_entries <= fresh.entries.len() + entries / 4,
            "reachable entries stay near a fresh build's"
        );

        // A batch with nested prefixes and one shorter than the root.
        let batch: Vec<Prefix<u128>> = [
            "2001::/16",
            "2001:c00::/22",
            "2001:db8::/33",
            "2001:db8::/40",
            "2001:db8::/48",
            "2000::/12",
        ]
        .iter()
        .map(|p| p.parse().expect("a prefix"))
        .collect();
        for (&prefix, label) in batch.iter().zip(10..) {
            rib.insert(prefix, label);
        }
        let mut sorted = batch.clone();
        sorted.sort();
        updater.update(&mut trie, &rib, &sorted).expect("patches");
        assert_answers(&trie, &rib, "after a nested batch");
    }

    #[test]
    fn nested_prefixes_and_host_routes_both_families() {
        let v6 = table::<u128>(&[
            ("::/0", 1),
            ("2001:db8::/32", 2),
            ("2001:db8:1::/48", 3),
            ("2001:db8:1:2::/64", 4),
            ("2001:db8:1:2::1/128", 5),
            ("2001:db8:1:2::3/128", 4),
            ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128", 6),
            ("8000::/1", 7),
            ("::1/128", 8),
        ]);
        let v4 = table::<u32>(&[
            ("10.0.0.0/8", 1),
            ("10.1.0.0/16", 2),
            ("10.1.2.0/24", 3),
            ("10.1.2.3/32", 4),
            ("255.255.255.255/32", 5),
            ("0.0.0.0/32", 6),
            ("128.0.0.0/1", 7),
        ]);
        for config in test_configs() {
            check(&v6, config);
            check(&v4, config);
        }
    }

    #[test]
    fn trivial_tables() {
        for config in test_configs() {
            check(&Rib::<u128>::new(), config);
            check(&table::<u128>(&[("::/0", 9)]), config);
            check(&Rib::<u32>::new(), config);
            check(&table::<u32>(&[("0.0.0.0/0", 9)]), config);
        }
    }

    #[test]
    fn specs_parse_and_print_canonically() {
        for (text, root_bits, direct_bits, v6, v4) in [
            ("poptrie", 18, None, 5, 0),
            ("poptrie:s=8", 8, None, 5, 0),
            ("poptrie:s=23", 23, None, 0, 0),
            ("poptrie:s=18,d=0", 18, Some(0), 0, 0),
            ("poptrie:s=13,d=10", 13, Some(10), 10, 10),
            ("poptrie:s=18,d=5", 18, Some(5), 5, 5),
            ("poptrie:d=5", 18, Some(5), 5, 5),
            ("poptrie:s=8,d=15", 8, Some(15), 15, 15),
        ] {
            let config = PoptrieConfig::parse(text).expect("parses");
            assert_eq!(
                (config.root_bits, config.direct_bits),
                (root_bits, direct_bits)
            );
            assert_eq!(config.direct_bits_for::<u128>(), v6, "{text} on IPv6");
            assert_eq!(config.direct_bits_for::<u32>(), v4, "{text} on IPv4");
            assert_eq!(PoptrieConfig::parse(&config.to_string()), Ok(config));
        }
        for bad in [
            "poptrie:s=16",
            "poptrie:s=7",
            "poptrie:s=24",
            "poptrie:k=14",
            "poptrie:d=3",
            "poptrie:d=20",
            "poptrie:s=18,d=10",
            "poptrie:s=23,d=5",
        ] {
            let error = PoptrieConfig::parse(bad).expect_err(bad).to_string();
            assert!(!error.is_empty(), "{bad}");
        }
        let error = PoptrieConfig::parse("poptrie:s=16")
            .expect_err("16")
            .to_string();
        assert!(error.contains("s=13"), "{error}");
        let error = PoptrieConfig::parse("poptrie:s=18,d=10")
            .expect_err("28 bits")
            .to_string();
        assert!(error.contains("d=5 or less"), "{error}");
    }
}
