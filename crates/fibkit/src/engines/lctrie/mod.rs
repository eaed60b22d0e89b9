//! `lctrie`: the dynamic level- and path-compressed trie of the Linux IPv4
//! FIB (`net/ipv4/fib_trie.c`), after Nilsson and Tikkanen, "Implementing a
//! dynamic compressed trie" (WAE'98), with the look-up of Duyck, "Picking Low
//! Hanging Fruit from the FIB Tree" (Netdev 0.1, 2015). IPv4 and IPv6.
//!
//! # Structure
//! The trie is a PATRICIA trie over *keys* (prefix addresses), level
//! compressed: an internal node (tnode) tests `bits` key bits starting at bit
//! `pos` (counted from the least significant bit, as in fib_trie) and has
//! `2^bits` children; the bits above `pos + bits` are the node's key (its
//! skipped bits, path compression). A leaf holds every prefix whose address
//! is its key, one entry per prefix length. Every node and leaf is described
//! by one *key vector* `(key, pos, bits, slen, kind, ptr)`: `slen` is the
//! longest suffix (host-part) length of any prefix below, the number that
//! lets backtracking skip sub-tries that cannot hold a match.
//!
//! Following Duyck's "up-level the key vector" (paper, last section), the
//! key vectors live in the parent's child array, not in the child: a step of
//! the look-up reads one 12-byte (IPv4) or 32-byte (IPv6) entry and from it
//! knows the child's key, position, stride and where its own children are.
//!
//! ```text
//! slab: Vec<Kv>   one flat arena of child arrays ("blocks"), u32 indices
//!   block of a tnode with `bits` = b, at index p:
//!     slab[p-2]  header: the node's own key vector, ptr = parent block
//!     slab[p-1]  header: full and empty child counts (resize bookkeeping)
//!     slab[p .. p + 2^b]  the children's key vectors
//!   slab[0..3]    the trie root pseudo block (pos = BITS, bits = 0);
//!                 slab[2] is the key vector of the top node.
//! Kv { key: A, ptr: u32, pos: u8, bits: u8, slen: u8, kind: u8 }
//!   kind TNODE: ptr = child block; LEAF: ptr = the label (one prefix);
//!   LEAF_LIST: ptr = entry block in `entries` (several prefix lengths);
//!   EMPTY: an unused child slot.
//! entries: Vec<Entry>  [count, (slen, label) ascending slen ...] blocks
//! ```
//! Blocks come from per-size free lists, so updates recycle memory; no
//! allocation per node.
//!
//! # Look-up
//! Two algorithms on the same trie, chosen by the spec:
//! - `lctrie` (default), paper sections "Making tnode and leaf function
//!   similarly" to "Avoid diving into shallow suffixes": the child index
//!   `(key ^ n.key) >> n.pos` doubles as the skipped-bit check (`index >>
//!   bits != 0`), prefix mismatch is `(key ^ n.key) & (n.key | -n.key)`,
//!   backtracking strips the lowest set bit of the child index
//!   (`cindex &= cindex - 1`), and only nodes whose `slen > pos` are
//!   remembered as backtrack points; a stripped child whose `slen` does not
//!   reach the stripped bit is not entered.
//! - `lctrie:lookup=classic`: the look-up as fib_trie had it before (Linux
//!   3.19): descend with the key masked to the current prefix length, on a
//!   dead end chop index bits one at a time (`chopped_off`), shorten the
//!   prefix length, mask the key and descend again; the skipped-bit check
//!   finds the mismatch bit with `fls` (paper, Figure 2); leaves compare the
//!   masked key with each prefix. No suffix lengths.
//!
//! Both use the up-levelled layout, so the measured difference between them
//! is the algorithm only (docs/BENCHMARKS.md, "LC-trie").
//!
//! Memory accesses per look-up: one key-vector read per level (average leaf
//! depth 3.2 on dfz-v4-nh, 6.6 on dfz-v6-nh), each within one cache line
//! (IPv6 slots are 32-byte aligned, [`Slot128`]), one more for a leaf with
//! several prefix lengths, plus one
//! per backtracking step (a header read per level walked up, a child read
//! per stripped bit).
//!
//! # Updates
//! Insert and delete follow fib_trie: find the leaf, add or remove the entry,
//! or add a leaf (splitting a slot with a new binary tnode) or remove one;
//! then push or pull the suffix lengths up and rebalance from the changed
//! node to the root, inflating nodes whose non-empty (full children counted
//! twice) share reaches 50% (30% at the top) and halving those whose
//! non-empty share drops under 25% (15% at the top), at most ten resizes per
//! node, collapsing nodes with fewer than two children. The table is built
//! by inserting every prefix.
//!
//! # Limits
//! Strides up to [`MAX_BITS`]; at most 2^32 - 2 slab entries (about 50 GB
//! for IPv4, more than any table needs): a larger table fails with
//! [`BuildError::Limit`]. Any label and any prefix length work.

mod adversarial;
mod update;

pub use adversarial::adversarial_table_v4;

use crate::addr::Addr;
use crate::engine::BuildError;
use crate::legacy::LegacyEngine;
use crate::prefix::{Label, Prefix};
use crate::rib::Rib;
use crate::spec::EngineSpec;

/// The widest stride a node may grow to (2^24 children, 192 MiB of IPv4 key
/// vectors): far above what the fill thresholds reach on real tables (the
/// DFZ root settles at 2^18), so it only bounds pathological growth.
pub const MAX_BITS: u8 = 24;
const _: () = assert!(MAX_BITS < 32, "child indices are shifted in u32/usize");

/// Header entries in front of every child block.
const HEADER: usize = 2;
/// The pseudo block above the top node; `slab[ROOT]` is the top node's key vector.
const ROOT: usize = HEADER;
/// No parent (the root pseudo block's header).
const NONE: u32 = u32::MAX;
/// The largest slab index a `ptr` may hold.
const MAX_SLAB: usize = (u32::MAX - 1) as usize;

const EMPTY: u8 = 0;
const LEAF: u8 = 1;
const LEAF_LIST: u8 = 2;
const TNODE: u8 = 3;

/// Key arithmetic the trie needs beyond [`Addr`]'s, on the native integer.
pub trait LcKey: Addr {
    /// `self ^ other`.
    fn xor(self, other: Self) -> Self;
    /// `self & other`.
    fn and(self, other: Self) -> Self;
    /// `self | other`.
    fn or(self, other: Self) -> Self;
    /// Two's complement negation.
    fn neg(self) -> Self;
    /// Whether all bits are clear.
    fn is_zero(self) -> bool;
    /// The low bits as an index.
    fn low_usize(self) -> usize;
    /// `value` widened.
    fn from_usize(value: usize) -> Self;

    /// How a key vector is stored in the slab: aligned so that one never
    /// straddles two cache lines (12-byte IPv4 vectors mostly don't; the
    /// 32-byte IPv6 ones get 32-byte alignment).
    type Slot: Copy + Send + Sync + std::fmt::Debug + 'static;
    /// Wraps a key vector for the slab.
    fn slot(kv: Kv<Self>) -> Self::Slot;
    /// The key vector in a slot.
    fn kv(slot: &Self::Slot) -> &Kv<Self>;
    /// The key vector in a slot, to change.
    fn kv_mut(slot: &mut Self::Slot) -> &mut Kv<Self>;
}

macro_rules! lc_key {
    ($t:ty, $slot:ty, $wrap:expr, $field:tt) => {
        impl LcKey for $t {
            type Slot = $slot;
            #[inline(always)]
            fn slot(kv: Kv<Self>) -> Self::Slot {
                $wrap(kv)
            }
            #[inline(always)]
            fn kv(slot: &Self::Slot) -> &Kv<Self> {
                &slot.$field
            }
            #[inline(always)]
            fn kv_mut(slot: &mut Self::Slot) -> &mut Kv<Self> {
                &mut slot.$field
            }
            #[inline(always)]
            fn xor(self, other: Self) -> Self {
                self ^ other
            }
            #[inline(always)]
            fn and(self, other: Self) -> Self {
                self & other
            }
            #[inline(always)]
            fn or(self, other: Self) -> Self {
                self | other
            }
            #[inline(always)]
            fn neg(self) -> Self {
                self.wrapping_neg()
            }
            #[inline(always)]
            fn is_zero(self) -> bool {
                self == 0
            }
            #[inline(always)]
            fn low_usize(self) -> usize {
                self as usize
            }
            #[inline(always)]
            fn from_usize(value: usize) -> Self {
                value as $t
            }
        }
    };
}
/// An IPv4 key vector in the slab, unpadded (12 bytes).
#[derive(Clone, Copy, Debug)]
#[repr(transparent)]
pub struct Slot32(Kv<u32>);

/// An IPv6 key vector in the slab, on a 32-byte boundary.
// PERF: without it, half the 32-byte vectors straddle two cache lines
// (large allocations start 16 bytes into a page); docs/BENCHMARKS.md,
// "LC-trie", dfz-v6-nh cache lines per look-up.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(32))]
pub struct Slot128(Kv<u128>);

const _: () = assert!(std::mem::size_of::<Slot32>() == 12);
const _: () = assert!(std::mem::size_of::<Slot128>() == 32);

lc_key!(u32, Slot32, Slot32, 0);
lc_key!(u128, Slot128, Slot128, 0);

/// A key vector: everything a look-up step needs about one node or leaf
/// (see the module header; the fields are private).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct Kv<A> {
    key: A,
    ptr: u32,
    pos: u8,
    bits: u8,
    slen: u8,
    kind: u8,
}

impl<A: LcKey> Kv<A> {
    const EMPTY: Kv<A> = Kv {
        key: A::ZERO,
        ptr: 0,
        pos: 0,
        bits: 0,
        slen: 0,
        kind: EMPTY,
    };
}

/// One prefix of a leaf with several prefix lengths; the first entry of a
/// block is a header whose `slen` is the count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct Entry {
    label: Label,
    slen: u8,
}

/// Which look-up algorithm an engine runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LookupAlgo {
    /// Duyck's look-up (Linux 4.0 onwards): the default.
    Improved,
    /// The look-up of Linux 3.19 and earlier.
    Classic,
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
trait Probe {
    fn touch(&mut self, addr: usize, size: usize);
    fn node(&mut self);
    fn backtrack(&mut self);
}

struct NoProbe;

impl Probe for NoProbe {
    #[inline(always)]
    fn touch(&mut self, _: usize, _: usize) {}
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
    fn touch(&mut self, addr: usize, size: usize) {
        for line in addr >> 6..=(addr + size - 1) >> 6 {
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

/// The dynamic LC-trie engine (see the module header).
#[derive(Clone, Debug)]
pub struct LcTrie<A: LcKey> {
    slab: Vec<A::Slot>,
    entries: Vec<Entry>,
    algo: LookupAlgo,
    // Update state, not touched by look-ups.
    /// Free child blocks by `bits`.
    free_blocks: Vec<Vec<u32>>,
    /// Free entry blocks by log2 of their size.
    free_entries: Vec<Vec<u32>>,
    prefixes: usize,
}

impl<A: LcKey> LegacyEngine<A> for LcTrie<A> {
    const NAMES: &'static [&'static str] = &["lctrie"];

    fn name(&self) -> String {
        LcTrie::name(self)
    }

    fn build(spec: &EngineSpec, rib: &Rib<A>) -> Result<Self, BuildError> {
        LcTrie::build(spec, rib)
    }

    fn memory_bytes(&self) -> usize {
        self.slab.len() * std::mem::size_of::<A::Slot>()
            + self.entries.len() * std::mem::size_of::<Entry>()
    }

    #[inline]
    fn lookup(&self, addr: A) -> Option<Label> {
        match self.algo {
            LookupAlgo::Improved => self.lookup_improved(addr, &mut NoProbe),
            LookupAlgo::Classic => self.lookup_classic(addr, &mut NoProbe),
        }
    }

    fn lookup_batch(&self, addrs: &[A], out: &mut [Option<Label>]) {
        assert!(out.len() >= addrs.len(), "output slice shorter than input");
        match self.algo {
            LookupAlgo::Improved => {
                for (addr, result) in addrs.iter().zip(out.iter_mut()) {
                    *result = self.lookup_improved(*addr, &mut NoProbe);
                }
            }
            LookupAlgo::Classic => {
                for (addr, result) in addrs.iter().zip(out.iter_mut()) {
                    *result = self.lookup_classic(*addr, &mut NoProbe);
                }
            }
        }
    }

    fn update(&mut self, rib: &Rib<A>, changed: &[Prefix<A>]) -> Result<(), BuildError> {
        for &prefix in changed {
            match rib.get(prefix) {
                Some(label) => self.insert(prefix, label)?,
                None => self.remove(prefix),
            }
        }
        Ok(())
    }

    fn stats(&self) -> Vec<(String, String)> {
        let shape = self.shape();
        vec![
            ("prefixes".to_string(), self.prefixes.to_string()),
            ("leaves".to_string(), shape.leaves.to_string()),
            ("tnodes".to_string(), shape.tnodes.to_string()),
            ("top node bits".to_string(), shape.top_bits.to_string()),
            ("max depth".to_string(), shape.max_depth.to_string()),
            (
                "average leaf depth".to_string(),
                format!("{:.2}", shape.average_leaf_depth),
            ),
            (
                "slab entries (in use)".to_string(),
                format!("{} ({})", self.slab.len(), shape.slab_in_use),
            ),
        ]
    }
}

/// Shape of the trie, for stats and benchmarks.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Shape {
    /// Leaves (distinct prefix addresses).
    pub leaves: usize,
    /// Internal nodes.
    pub tnodes: usize,
    /// Stride of the top node (0 if it is a leaf or the trie is empty).
    pub top_bits: u8,
    /// Most key vectors on a path from the top to a leaf.
    pub max_depth: usize,
    /// Average number of key vectors on the path to a leaf.
    pub average_leaf_depth: f64,
    /// Slab entries in live blocks.
    pub slab_in_use: usize,
}

impl<A: LcKey> LcTrie<A> {
    /// Builds the trie by inserting every prefix of `rib`. Spec parameter:
    /// `lookup=improved` (default) or `lookup=classic`.
    pub fn build(spec: &EngineSpec, rib: &Rib<A>) -> Result<Self, BuildError> {
        spec.expect_only(&["lookup"])?;
        let algo = match spec.value("lookup") {
            None | Some("improved") => LookupAlgo::Improved,
            Some("classic") => LookupAlgo::Classic,
            Some(other) => {
                return Err(spec.error(format!(
                    "`lookup={other}` is not a look-up algorithm (known: improved, classic)"
                )))
            }
        };
        let mut trie = LcTrie::new(algo);
        for (prefix, label) in rib.iter() {
            trie.insert(prefix, label)?;
        }
        Ok(trie)
    }

    /// An empty trie running `algo`.
    pub fn new(algo: LookupAlgo) -> Self {
        let root_header = Kv {
            key: A::ZERO,
            ptr: NONE,
            pos: A::BITS,
            bits: 0,
            slen: A::BITS,
            kind: TNODE,
        };
        let counts = Kv {
            ptr: 1,
            ..Kv::EMPTY
        };
        LcTrie {
            slab: vec![A::slot(root_header), A::slot(counts), A::slot(Kv::EMPTY)],
            entries: Vec::new(),
            algo,
            free_blocks: vec![Vec::new(); MAX_BITS as usize + 1],
            free_entries: vec![Vec::new(); 9],
            prefixes: 0,
        }
    }

    /// The engine's spec string.
    pub fn name(&self) -> String {
        match self.algo {
            LookupAlgo::Improved => "lctrie".to_string(),
            LookupAlgo::Classic => "lctrie:lookup=classic".to_string(),
        }
    }

    /// The algorithm [`LegacyEngine::lookup`] runs.
    pub fn algo(&self) -> LookupAlgo {
        self.algo
    }

    /// Number of prefixes held.
    pub fn len(&self) -> usize {
        self.prefixes
    }

    /// Whether no prefix is held.
    pub fn is_empty(&self) -> bool {
        self.prefixes == 0
    }

    /// Looks `addr` up with `algo` and adds its work to `counts`. Slower
    /// than [`LegacyEngine::lookup`] (it records cache lines); for measurements only.
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
            LookupAlgo::Improved => self.lookup_improved(addr, &mut counter),
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

    #[inline(always)]
    fn read<P: Probe>(&self, index: usize, probe: &mut P) -> Kv<A> {
        let kv = A::kv(&self.slab[index]);
        probe.touch(kv as *const Kv<A> as usize, std::mem::size_of::<Kv<A>>());
        *kv
    }

    /// The key vector in slot `index` (update code).
    #[inline(always)]
    fn kv(&self, index: usize) -> Kv<A> {
        *A::kv(&self.slab[index])
    }

    /// The key vector in slot `index`, to change (update code).
    #[inline(always)]
    fn kv_mut(&mut self, index: usize) -> &mut Kv<A> {
        A::kv_mut(&mut self.slab[index])
    }

    /// The label of the first (longest) prefix of leaf `n`.
    #[inline(always)]
    fn first_label<P: Probe>(&self, n: Kv<A>, probe: &mut P) -> Label {
        if n.kind == LEAF {
            n.ptr
        } else {
            let entry = &self.entries[n.ptr as usize + 1];
            probe.touch(entry as *const Entry as usize, std::mem::size_of::<Entry>());
            entry.label
        }
    }

    /// The longest prefix of leaf `n` containing `key`, by suffix length:
    /// a prefix with suffix `slen` matches when `key ^ n.key` has no bit at
    /// or above `slen`.
    #[inline(always)]
    fn leaf_match<P: Probe>(&self, n: Kv<A>, key: A, probe: &mut P) -> Option<Label> {
        let diff = key.xor(n.key);
        let fits = |slen: u8| slen >= A::BITS || diff.shr(slen as u32).is_zero();
        if n.kind == LEAF {
            return fits(n.slen).then_some(n.ptr);
        }
        let base = n.ptr as usize;
        let header = &self.entries[base];
        probe.touch(
            header as *const Entry as usize,
            std::mem::size_of::<Entry>(),
        );
        let count = header.slen as usize;
        for entry in &self.entries[base + 1..base + 1 + count] {
            probe.touch(entry as *const Entry as usize, std::mem::size_of::<Entry>());
            if fits(entry.slen) {
                return Some(entry.label);
            }
        }
        None
    }

    /// Duyck's look-up (module header, first algorithm).
    #[inline(always)]
    fn lookup_improved<P: Probe>(&self, key: A, probe: &mut P) -> Option<Label> {
        // The deepest node worth backtracking into and the child index taken there.
        let mut pn = ROOT;
        let mut pn_pos = 0u32;
        let mut cindex = 0usize;
        let mut exact = true;
        probe.node();
        let mut n = self.read(ROOT, probe);
        'walk: loop {
            'candidate: {
                if n.kind == EMPTY {
                    break 'candidate;
                }
                if exact {
                    // Bits of the key above pos + bits that differ from the
                    // node key land above the index: one compare checks the
                    // skipped bits and bounds the index.
                    let index = key.xor(n.key).shr(n.pos as u32);
                    if index.shr(n.bits as u32).is_zero() {
                        if n.bits == 0 {
                            // A leaf whose key is the whole address.
                            return Some(self.first_label(n, probe));
                        }
                        let index = index.low_usize();
                        if n.slen > n.pos {
                            pn = n.ptr as usize;
                            pn_pos = n.pos as u32;
                            cindex = index;
                        }
                        probe.node();
                        n = self.read(n.ptr as usize + index, probe);
                        continue 'walk;
                    }
                    exact = false;
                }
                // Prefix-match mode: a prefix below `n` can match only if the
                // key agrees with the node key from its lowest set bit up.
                let mismatch = key.xor(n.key).and(n.key.or(n.key.neg()));
                if !mismatch.is_zero() || n.slen == n.pos {
                    break 'candidate;
                }
                if n.bits != 0 {
                    // Every candidate prefix ends above the first differing
                    // bit, so its host bits, and this child index, are zero.
                    probe.node();
                    n = self.read(n.ptr as usize, probe);
                    continue 'walk;
                }
                if let Some(label) = self.leaf_match(n, key, probe) {
                    return Some(label);
                }
            }
            // Backtrack: strip the lowest set bit of the child index, walking
            // up to the parent when none is left.
            exact = false;
            loop {
                while cindex == 0 {
                    if pn == ROOT {
                        return None;
                    }
                    let header = self.read(pn - HEADER, probe);
                    let parent = header.ptr as usize;
                    if parent == ROOT {
                        return None;
                    }
                    let parent_header = self.read(parent - HEADER, probe);
                    cindex = header
                        .key
                        .xor(parent_header.key)
                        .shr(parent_header.pos as u32)
                        .low_usize();
                    pn = parent;
                    pn_pos = parent_header.pos as u32;
                }
                probe.backtrack();
                let stripped_bit = pn_pos + cindex.trailing_zeros();
                cindex &= cindex - 1;
                probe.node();
                n = self.read(pn + cindex, probe);
                // A match must leave the stripped bit in its host part.
                if n.kind != EMPTY && n.slen as u32 > stripped_bit {
                    break;
                }
            }
        }
    }

    /// The look-up of Linux 3.19 (module header, second algorithm), in
    /// positions counted from the most significant bit as that code had them.
    #[inline(always)]
    fn lookup_classic<P: Probe>(&self, key: A, probe: &mut P) -> Option<Label> {
        let width = A::BITS as u32;
        // Bits [offset, offset + len) from the top.
        let extract = |value: A, offset: u32, len: u32| -> usize {
            if len == 0 {
                0
            } else {
                value.shl(offset).shr(width - len).low_usize()
            }
        };
        let mask_pfx = |value: A, plen: u32| -> A {
            if plen == 0 {
                A::ZERO
            } else {
                value.and(A::MAX.shl(width - plen))
            }
        };
        let msb_pos = |n: &Kv<A>| width - n.pos as u32 - n.bits as u32;
        // Leaves compare the masked key with each prefix, longest first.
        let check_leaf = |n: Kv<A>, probe: &mut P| -> Option<Label> {
            if n.kind == LEAF {
                let plen = width - n.slen as u32;
                return (mask_pfx(key, plen) == n.key).then_some(n.ptr);
            }
            let base = n.ptr as usize;
            let count = self.entries[base].slen as usize;
            probe.touch(
                &self.entries[base] as *const Entry as usize,
                std::mem::size_of::<Entry>(),
            );
            for entry in &self.entries[base + 1..base + 1 + count] {
                probe.touch(entry as *const Entry as usize, std::mem::size_of::<Entry>());
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
        let mut cindex = 0usize;
        'walk: loop {
            if chopped_off == 0 {
                cindex = extract(mask_pfx(key, current_prefix_length), pos, bits);
            }
            probe.node();
            let n = self.read(pn + cindex, probe);
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
                    if extract(n.key, current_prefix_length, cn_pos - current_prefix_length) != 0
                        || self.read(n.ptr as usize, probe).kind == EMPTY
                    {
                        break 'descend;
                    }
                }
                // Skipped bits that differ from the key: the node key must
                // be zero from the first mismatch on, and matching goes on
                // with the prefix length cut there.
                let pref_mismatch = mask_pfx(n.key.xor(key), cn_pos);
                if !pref_mismatch.is_zero() {
                    let mp = pref_mismatch.leading_zeros();
                    if extract(n.key, mp, cn_pos - mp) != 0 {
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
                cindex = extract(header.key, pos, bits);
                pn = parent;
                chopped_off = 0;
            }
        }
    }
}

crate::legacy::legacy_lookup!([A: LcKey] A, LcTrie<A>);
