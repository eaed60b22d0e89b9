//! The `dxr6` lookup snapshot and its walks: per key, the portable batch
//! and the choice of batch walk (the vector walks are in `simd/`).

use super::*;
use crate::engine::Lookup;
use crate::engines::shared::prefetch;
use crate::labels::{Answer, LabelSlot};
use crate::prefix::Label;
use crate::storage::{Owned, Storage};

/// The answers the batch loops write: [`Answer`]s that the AVX-512 path
/// can also store from a vector of results slots.
#[cfg(target_arch = "x86_64")]
use crate::engines::shared::wide::WideAnswer as BatchAnswer;
#[cfg(not(target_arch = "x86_64"))]
use Answer as BatchAnswer;

/// The lookup snapshot of `dxr6`: entries (root, then node tables), leaf
/// words and results, in storage `S`.
pub struct Dxr6<S: Storage = Owned> {
    /// `K`, the root's address bits.
    pub(super) root_bits: u32,
    /// `log2(align)`: how leaf entries split their place into line and
    /// word offset.
    pub(super) align_shift: u32,
    /// The root (`2^K` entries), then every node table.
    pub(super) entries: S::Array<u32>,
    /// Lines of leaves.
    pub(super) leaves: S::Array<LeafLine>,
    /// Label slots by label index.
    pub(super) results: S::Array<LabelSlot>,
}

impl<S: Storage> Clone for Dxr6<S> {
    fn clone(&self) -> Self {
        Dxr6 {
            root_bits: self.root_bits,
            align_shift: self.align_shift,
            entries: self.entries.clone(),
            leaves: self.leaves.clone(),
            results: self.results.clone(),
        }
    }

    /// Reuses this snapshot's vectors instead of allocating new ones.
    fn clone_from(&mut self, source: &Self) {
        self.root_bits = source.root_bits;
        self.align_shift = source.align_shift;
        self.entries.clone_from(&source.entries);
        self.leaves.clone_from(&source.leaves);
        self.results.clone_from(&source.results);
    }
}

/// Keys per group of the batch lookup: the lookups in flight together.
// PERF: see docs/bench/dxr6.md, "IPv6: dxr6".
pub(super) const GROUP: usize = 32;
const _: () = assert!(GROUP <= 64, "a u64 marks the group's keys");

/// A lookup under way: the entry it has reached, and the address bits
/// after that entry's depth, left-aligned, so that a node's index is the
/// top bits of `rest` and a leaf's probe the top 16, 32, 64 or 128.
#[derive(Clone, Copy, Debug)]
pub(super) struct Walk {
    pub(super) entry: u32,
    pub(super) rest: u128,
}

impl Walk {
    /// The top `bits` bits of `rest` (`1 <= bits <= 64`).
    #[inline(always)]
    fn top(self, bits: u32) -> u64 {
        debug_assert!((1..=64).contains(&bits));
        ((self.rest >> 64) as u64) >> (64 - bits)
    }
}

impl<S: Storage> Dxr6<S> {
    /// The index of `addr`'s root entry.
    #[inline(always)]
    pub(super) fn root_index(&self, addr: u128) -> usize {
        // `& 31`: K <= 24 (const-asserted), and the compiler learns the
        // shift stays within one 64-bit half.
        ((addr >> 64) as u64 >> (64 - (self.root_bits & 31))) as usize
    }

    /// The walk at `addr`'s root entry.
    #[inline(always)]
    fn start(&self, addr: u128) -> Walk {
        Walk {
            entry: self.entries[self.root_index(addr)],
            rest: addr << (self.root_bits & 31),
        }
    }

    /// The first pass of a batch group for one key: the answer written to
    /// `answer` when `addr`'s root entry is a label, otherwise its walk,
    /// whose next read is requested.
    #[inline(always)]
    pub(super) fn start_or_answer<T: Answer>(&self, addr: u128, answer: &mut T) -> Option<Walk> {
        let walk = self.start(addr);
        // A branch: it goes the same way for nearly every key of a
        // pattern (random keys: labels; announced keys: nodes).
        if is_label(walk.entry) {
            *answer = T::from_slot(self.results[label_of(walk.entry)]);
            return None;
        }
        prefetch(self.next_read(walk));
        Some(walk)
    }

    /// The index of the child entry of the node `walk` has reached.
    #[inline(always)]
    fn child_index(walk: Walk) -> usize {
        node_base(walk.entry) + walk.top(stride_of(walk.entry)) as usize
    }

    /// One step down from the node `walk` has reached.
    #[inline(always)]
    fn step(&self, walk: Walk) -> Walk {
        Walk {
            entry: self.entries[Self::child_index(walk)],
            rest: walk.rest << stride_of(walk.entry),
        }
    }

    /// The label index at the label or leaf entry `walk` has reached.
    #[inline(always)]
    fn finish(&self, walk: Walk) -> usize {
        if is_label(walk.entry) {
            label_of(walk.entry)
        } else {
            self.leaf_label(walk)
        }
    }

    /// [`Self::finish`] without a branch on label or leaf: a label entry
    /// searches line 0 as a one-start leaf, then keeps its own index.
    #[inline(always)]
    pub(super) fn finish_branchless(&self, walk: Walk) -> usize {
        // INVARIANT: line 0 exists (the build adds it to a table without
        // leaves).
        const LINE_0: u32 = LEAF_BIT | 1 << STARTS_SHIFT;
        let leaf = is_leaf(walk.entry);
        let searched = self.leaf_label(Walk {
            entry: if leaf { walk.entry } else { LINE_0 },
            rest: walk.rest,
        });
        if leaf {
            searched
        } else {
            label_of(walk.entry)
        }
    }

    /// The label index of `walk`'s address in the leaf it has reached.
    #[inline(always)]
    pub(super) fn leaf_label(&self, walk: Walk) -> usize {
        let entry = walk.entry;
        let line = &self.leaves[line_of(entry, self.align_shift)].0;
        let (at, starts) = (offset_of(entry, self.align_shift), starts_of(entry));
        // A branch on the width rather than both narrow widths counted and
        // one picked by a select: nine keys in ten reach a 16-bit leaf (or a
        // label, searched as one), so the branch is mostly predicted, and
        // the select's second count ran announced keys at 0.87-0.98x
        // (docs/bench/dxr6.md, the newest run on Zen 3).
        let (range, labels) = match width_code(entry) {
            0 => Self::range::<u16>(line, at, starts, walk.rest),
            1 => Self::range::<u32>(line, at, starts, walk.rest),
            2 => Self::range::<u64>(line, at, starts, walk.rest),
            _ => Self::range::<u128>(line, at, starts, walk.rest),
        };
        if has_wide_labels(entry) {
            let at = labels + 2 * range;
            line[at] as usize | (line[at + 1] as usize) << 16
        } else {
            line[labels + range] as usize
        }
    }

    /// The index of the range of `rest` (the address bits after the
    /// leaf's depth) among a leaf's ranges, and the word where the leaf's
    /// labels begin.
    #[inline(always)]
    fn range<B: Bound>(
        line: &[u16; LINE_WORDS],
        at: usize,
        starts: usize,
        rest: u128,
    ) -> (usize, usize) {
        let probe = B::from_bits(rest >> (128 - B::BITS));
        (
            search::range_in_line::<B>(line, at, starts, probe),
            at + starts * B::WORDS,
        )
    }

    /// Where `walk` reads next: its child entry at a node, its line at a
    /// leaf, entry 0 at a label. Chosen without a branch.
    #[inline(always)]
    fn next_read(&self, walk: Walk) -> *const u8 {
        let index = if is_node(walk.entry) {
            Self::child_index(walk)
        } else {
            0
        };
        let entry = self.entries.as_ptr().wrapping_add(index) as *const u8;
        let line = self
            .leaves
            .as_ptr()
            .wrapping_add(line_of(walk.entry, self.align_shift)) as *const u8;
        if is_leaf(walk.entry) {
            line
        } else {
            entry
        }
    }

    /// Looks up one group of at most [`GROUP`] keys in three passes:
    /// 1. the root entries: a label is the result; otherwise the key is
    ///    marked, and at a node also marked as walking, and the entry or
    ///    line it reads next is prefetched;
    /// 2. rounds over the walking keys, one node level per round, until
    ///    none is at a node;
    /// 3. the marked keys' leaves (or labels).
    ///
    /// The bodies of passes 2 and 3 do not branch on the node depth: on
    /// announced keys it varies from key to key, and a branch on it
    /// mispredicts often enough to drain the loads in flight. The leaf
    /// search branches on its starts' width, which nine keys in ten of a
    /// batch share (see [`Self::leaf_label`]).
    ///
    /// Pass 2 prefetches nothing: the reads of one round are independent
    /// of each other, so the core already overlaps their misses, and a
    /// prefetch of each key's next read, whose address waits for the read
    /// before it, only added work (without it the portable batch ran
    /// 1.3–1.4x faster on announced keys on an AMD Zen 3, the same on
    /// random ones).
    ///
    /// Nor are the next group's root entries prefetched: the root (2^K
    /// u32) mostly stays in the L2 cache, and the loop that read the next
    /// keys to prefetch their entries cost random public keys, which end
    /// at the root, a sixth of their speed (and announced keys 2–9%) on
    /// an AMD Zen 3.
    ///
    /// The walks are kept as two arrays, entries and address bits, rather
    /// than one of `Walk`s, which u128 alignment pads to 32 bytes each:
    /// every group clears them, and 640 bytes instead of 1,024 made whole
    /// batches of random public keys 1.07–1.08x faster on that CPU.
    // PERF: docs/bench/dxr6.md, "IPv6: dxr6", "Batch lookup", "The
    // portable batch without the walk's prefetches" and "Nor the next
    // group's roots".
    #[inline(always)]
    fn lookup_group<const N: usize, T: Answer>(&self, keys: &[u128], out: &mut [T]) {
        debug_assert!(keys.len() <= N && N <= GROUP && out.len() == keys.len());
        let mut entries = [0u32; N];
        let mut rests = [0u128; N];
        let mut marked = 0u64;
        let mut walking = 0u64;
        for (j, (&addr, result)) in keys.iter().zip(out.iter_mut()).enumerate() {
            let Some(walk) = self.start_or_answer(addr, result) else {
                continue;
            };
            (entries[j], rests[j]) = (walk.entry, walk.rest);
            marked |= 1 << j;
            walking |= (is_node(walk.entry) as u64) << j;
        }
        while walking != 0 {
            let mut keys_left = walking;
            walking = 0;
            while keys_left != 0 {
                let j = keys_left.trailing_zeros() as usize;
                keys_left &= keys_left - 1;
                let walk = self.step(Walk {
                    entry: entries[j],
                    rest: rests[j],
                });
                (entries[j], rests[j]) = (walk.entry, walk.rest);
                walking |= (is_node(walk.entry) as u64) << j;
            }
        }
        while marked != 0 {
            let j = marked.trailing_zeros() as usize;
            marked &= marked - 1;
            let walk = Walk {
                entry: entries[j],
                rest: rests[j],
            };
            out[j] = T::from_slot(self.results[self.finish_branchless(walk)]);
        }
    }
}

impl<S: Storage> Dxr6<S> {
    /// [`Lookup::lookup_batch`] in groups of `N` keys.
    #[inline(always)]
    fn lookup_groups<const N: usize, T: Answer>(&self, addrs: &[u128], out: &mut [T]) {
        let mut start = 0;
        while start < addrs.len() {
            let end = addrs.len().min(start + N);
            self.lookup_group::<N, T>(&addrs[start..end], &mut out[start..end]);
            start = end;
        }
    }
}

impl<S: Storage> Lookup<u128> for Dxr6<S> {
    #[inline(always)]
    fn lookup(&self, addr: u128) -> Option<Label> {
        let mut walk = self.start(addr);
        while is_node(walk.entry) {
            walk = self.step(walk);
        }
        self.results[self.finish(walk)].get()
    }

    fn lookup_batch(&self, addrs: &[u128], out: &mut [Option<Label>]) {
        self.batch(addrs, out);
    }

    /// The batch loops write the C library's words themselves: no buffer
    /// of answers to clear and convert per call.
    fn lookup_batch_words(&self, addrs: &[u128], out: &mut [u64]) {
        self.batch(addrs, out);
    }

    fn memory_bytes(&self) -> usize {
        self.entries.len() * 4
            + self.leaves.len() * std::mem::size_of::<LeafLine>()
            + self.results.len() * std::mem::size_of::<LabelSlot>()
    }
}

/// The batch walks, widest first; the one a batch runs is the widest the
/// CPU has within [`crate::cpu::max_simd`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BatchWalk {
    #[cfg(target_arch = "x86_64")]
    Avx512,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    Portable,
}

impl BatchWalk {
    /// The walk to run now: `available` caches the CPU's answer, so a call
    /// costs a few loads and tests.
    #[inline]
    fn now() -> BatchWalk {
        #[cfg(target_arch = "x86_64")]
        {
            use crate::cpu::{allows, Simd};
            if allows(Simd::Avx512) && wide::available() {
                return BatchWalk::Avx512;
            }
            if allows(Simd::Avx2) && avx2::available() {
                return BatchWalk::Avx2;
            }
        }
        BatchWalk::Portable
    }
}

impl<S: Storage> Dxr6<S> {
    /// Which walk [`Self::batch`] runs now: `AVX-512`, `AVX2` or
    /// `portable`.
    pub(crate) fn batch_walk() -> &'static str {
        match BatchWalk::now() {
            #[cfg(target_arch = "x86_64")]
            BatchWalk::Avx512 => "AVX-512",
            #[cfg(target_arch = "x86_64")]
            BatchWalk::Avx2 => "AVX2",
            BatchWalk::Portable => "portable",
        }
    }

    /// The batch lookup into answers of type `T`: the AVX-512 walk where
    /// the CPU has it, else the AVX2 walk where it has that, otherwise the
    /// portable one, within [`crate::cpu::max_simd`].
    #[inline]
    fn batch<T: BatchAnswer>(&self, addrs: &[u128], out: &mut [T]) {
        assert!(out.len() >= addrs.len(), "output slice shorter than input");
        match BatchWalk::now() {
            // SAFETY: `BatchWalk::now` checked the CPU's AVX-512 F and BW.
            #[cfg(target_arch = "x86_64")]
            BatchWalk::Avx512 => unsafe { self.lookup_batch_wide(addrs, out) },
            // SAFETY: `BatchWalk::now` checked the CPU's AVX2.
            #[cfg(target_arch = "x86_64")]
            BatchWalk::Avx2 => unsafe { self.lookup_batch_avx2(addrs, out) },
            BatchWalk::Portable => self.batch_portable(addrs, out),
        }
    }

    /// [`Self::lookup_batch_portable`] into answers of type `T`.
    pub(super) fn batch_portable<T: Answer>(&self, addrs: &[u128], out: &mut [T]) {
        assert!(out.len() >= addrs.len(), "output slice shorter than input");
        // PERF: a short burst gets a group no larger than itself: clearing
        // the walks of a 32-key group cost bursts of 8 random keys a
        // quarter of their speed (docs/bench/dxr6.md, "IPv6: dxr6").
        match addrs.len() {
            0..=8 => self.lookup_groups::<8, T>(addrs, out),
            9..=16 => self.lookup_groups::<16, T>(addrs, out),
            _ => self.lookup_groups::<GROUP, T>(addrs, out),
        }
    }

    /// The batch lookup without vector walks: groups of keys walked in
    /// passes with prefetches ([`Self::lookup_group`]). What `lookup_batch`
    /// runs on a CPU with neither AVX-512 F and BW nor AVX2; public so that
    /// tests and benchmarks on a CPU with them can run it too.
    #[doc(hidden)]
    pub fn lookup_batch_portable(&self, addrs: &[u128], out: &mut [Option<Label>]) {
        self.batch_portable(addrs, out);
    }
}

/// What an entry of a `dxr6` table leads to, for the performance model's
/// walk (`model::dxr6`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ModelEntry {
    /// A label: the lookup ends here.
    Label,
    /// A node table of `2^stride` entries from entry `base`.
    Node { base: usize, stride: u32 },
    /// A leaf in line `line` of the leaves.
    Leaf { line: usize },
}

impl ModelEntry {
    /// Decodes `entry` of a table at `align = 2^align_shift`.
    pub(crate) fn of(entry: u32, align_shift: u32) -> Self {
        if is_node(entry) {
            ModelEntry::Node {
                base: node_base(entry),
                stride: stride_of(entry),
            }
        } else if is_leaf(entry) {
            ModelEntry::Leaf {
                line: line_of(entry, align_shift),
            }
        } else {
            ModelEntry::Label
        }
    }
}

impl<S: Storage> Dxr6<S> {
    /// The root's bits, the entries (root, then every node table), the
    /// number of leaf lines and `log2(align)` (to decode leaf entries with
    /// [`ModelEntry::of`]): what the performance model walks.
    pub(crate) fn model_parts(&self) -> (u32, &[u32], usize, u32) {
        (
            self.root_bits,
            &self.entries[..],
            self.leaves.len(),
            self.align_shift,
        )
    }
}
