//! `bspl`: binary search on prefix lengths with controlled prefix expansion
//! (Srinivasan & Varghese, \[SV98\] §6, after Waldvogel, Varghese, Turner
//! and Plattner, SIGCOMM 1997), for IPv4 and IPv6, and the IPv6 hybrid of
//! \[SV98\] §7 (hash tables on a few lengths, short multibit tries between
//! them).
//!
//! The prefixes longer than the first level are expanded (\[SV98\] §4.1,
//! [`crate::engines::shared::expand`]) to a few target lengths chosen by a
//! dynamic program minimising memory ([`levels`], §6.2), one hash table per
//! length. A table holds the expanded prefixes and *markers* (a longer
//! entry's first bits, placed where the search must turn towards longer
//! lengths), each with its precomputed best matching prefix (BMP), so a
//! search never backtracks: a hit sets the answer and, if it is a marker,
//! moves to longer lengths; a miss moves to shorter ones.
//!
//! Layout (`W` the address width, `F` the first level's bits, `k <= 15`
//! tables):
//! ```text
//! first[addr >> (W - F)]                 2^F x u64, one per block of 2^(W-F) addresses
//!   bits  0..32  BMP label index of the block (prefixes of length <= F)
//!                (hybrid: a leaf or trie pointer for the lengths F+1..L1)
//!   bits 32..36  lo, bits 36..40 hi: the tables the block has entries in
//!                (lo > hi: none, the BMP is the answer)
//!   bits 40..44  the table the block's search probes first
//! tables[j], j < k: buckets of 64 bytes and a seed byte per bucket (see
//!   `table`), key = the address's first L_j bits, value:
//!   bit 31       marker: longer entries of this block lie beyond
//!   bits 0..31   BMP label index (0: no prefix longer than F covers it,
//!                the block's BMP stands)
//! roots[lo][hi]  which table of lo..=hi a search probes first
//! results[index] label slot, index 0 = the default route (or none)
//! ```
//! The default route is in no entry: blocks and leaves that only it covers
//! hold index 0, so a change to it writes results slot 0 and nothing else.
//! Memory accesses per lookup: the first-level entry, then per probe one
//! seed byte (from an array 1/64 of the table, mostly cached) and one
//! 64-byte bucket, at most `ceil(log2(k + 1))` probes (the search tree has
//! the least height and, among those, the least depth weighted by the
//! address space each table's prefixes cover), then the results slot.
//! Blocks with nothing longer than `F` take one access (plus the results).
//!
//! The search tree is restricted to the tables a block uses (`lo..=hi`),
//! and markers are placed per block along that restricted tree, so a block
//! whose prefixes all expand to one length takes one probe. Every entry
//! lies in the one bucket its key hashes to: the build searches a seed per
//! small group of keys so that no bucket overflows (\[SV98\] §6.3 searches
//! one hash function per table with at most 6 collisions per bucket).
//!
//! Limits: the first level takes `F` in 8..=24 bits (2^24 entries = 128
//! MiB); at most [`MAX_HASH_LEVELS`] tables (4-bit `lo`/`hi`); a prefix
//! expands by at most 2^[`levels::MAX_EXPANSION_BITS`]; at most 2^31 - 1
//! distinct labels. A table the chosen lengths cannot hold (a prefix longer
//! than the longest length, or an expansion too large) fails with
//! [`BuildError::Limit`] naming lengths or a level count that would work.
//!
//! Updates rewrite what a change touches: a prefix of length `<= F`
//! rewrites the BMP of the first-level entries it covers (the tables' BMPs
//! only hold prefixes longer than `F`, so they stand); a longer prefix is
//! patched where its block keeps its tables and first probe: the entries
//! whose key lies inside it (its expansion, the BMPs below it) and the
//! markers on its search path are recomputed from the reference table, key
//! by key (see `patch`), so a host route costs a few entries whatever its
//! block holds. A prefix of a table its block does not use, or one with
//! many prefixes inside it, re-plans its block instead: the block's entries
//! are removed, recomputed from the reference table and placed. A table
//! whose window fills is placed anew at twice its entries' size (the other
//! tables are moved, not re-placed). A batch that would re-plan blocks
//! holding more than half of the entries, or a prefix the lengths cannot
//! hold, asks for a full rebuild instead, so no update costs more than a
//! build.

pub mod build;
pub mod hybrid;
pub mod levels;
mod patch;
pub mod table;

use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;

use crate::addr::Addr;
use crate::engine::{BuildError, EngineConfig, EngineStats, Lookup, Updater};
use crate::labels::{LabelIndex, LabelSlot};
use crate::prefix::{Label, Prefix};
use crate::rib::Rib;
use crate::spec::EngineSpec;
use crate::storage::{Owned, Storage};
use build::SearchTree;
use table::{bucket, home, Bucket, Bucket128, Bucket32, Bucket64, Home, Kind, Level, SeedWork};

/// Most hash tables (target lengths after the first level): `lo` and `hi`
/// are 4-bit fields of a first-level entry.
pub const MAX_HASH_LEVELS: usize = 15;
/// Default bits of the first level (\[SV98\] §6.3: "the first 16-17 bit
/// table is implemented as a full array").
pub const DEFAULT_FIRST_BITS: u8 = 16;
/// Largest first level: 2^24 entries of 8 bytes.
pub const MAX_FIRST_BITS: u8 = 24;
/// Smallest first level.
pub const MIN_FIRST_BITS: u8 = 8;

/// A table entry's marker flag.
const MARKER: u32 = 1 << 31;
/// A table entry's BMP label index.
const BMP_MASK: u32 = MARKER - 1;
/// Label indices must stay clear of [`MARKER`].
const MAX_LABELS: usize = BMP_MASK as usize;
/// The range of a first-level entry whose block has no table entries.
const NO_TABLES: (usize, usize) = (1, 0);

const _: () = assert!(MAX_HASH_LEVELS < 16, "lo and hi are 4-bit fields");
const _: () = assert!(MAX_FIRST_BITS <= 32, "the block index is Addr::bits(0, F)");

/// A first-level entry from its fields.
#[inline]
fn first_entry(value: u32, (lo, hi): (usize, usize), root: usize) -> u64 {
    debug_assert!(lo < 16 && hi < 16 && root < 16);
    value as u64 | (lo as u64) << 32 | (hi as u64) << 36 | (root as u64) << 40
}

/// The table a first-level entry's block probes first.
#[inline(always)]
fn entry_root(entry: u64) -> usize {
    ((entry >> 40) & 0xf) as usize
}

/// The BMP index (or, in the hybrid, the leaf or trie pointer) of a
/// first-level entry.
#[inline(always)]
fn entry_value(entry: u64) -> u32 {
    entry as u32
}

/// The tables `lo..=hi` a first-level entry's block has entries in (`lo >
/// hi`: none).
#[inline(always)]
fn entry_tables(entry: u64) -> (usize, usize) {
    (
        ((entry >> 32) & 0xf) as usize,
        ((entry >> 36) & 0xf) as usize,
    )
}

/// The lookup snapshot of `bspl`: the first level, the hash tables and the
/// results, in storage `S`.
pub struct Bspl<A, S: Storage = Owned> {
    first: S::Array<u64>,
    first_bits: u8,
    // 16 so that any 4-bit table index is in bounds without a check;
    // boxed, like the tree, to keep the snapshot enum small.
    levels: Box<[Level; 16]>,
    level_count: u8,
    // Boxed: the 256-byte tree would make the snapshot enum of every
    // engine as large.
    tree: Box<SearchTree>,
    b32: S::Array<Bucket32>,
    b64: S::Array<Bucket64>,
    b128: S::Array<Bucket128>,
    /// The group seeds of each layout's buckets, one per bucket.
    s32: S::Array<u8>,
    s64: S::Array<u8>,
    s128: S::Array<u8>,
    /// Hybrid only: the multibit trie nodes between the hashed lengths.
    trie: S::Array<u32>,
    hybrid: bool,
    results: S::Array<LabelSlot>,
    _family: PhantomData<fn() -> A>,
}

impl<A, S: Storage> Clone for Bspl<A, S> {
    fn clone(&self) -> Self {
        Bspl {
            first: self.first.clone(),
            first_bits: self.first_bits,
            levels: self.levels.clone(),
            level_count: self.level_count,
            tree: self.tree.clone(),
            b32: self.b32.clone(),
            b64: self.b64.clone(),
            b128: self.b128.clone(),
            s32: self.s32.clone(),
            s64: self.s64.clone(),
            s128: self.s128.clone(),
            trie: self.trie.clone(),
            hybrid: self.hybrid,
            results: self.results.clone(),
            _family: PhantomData,
        }
    }

    /// Reuses this snapshot's arrays (the first level and the tables are
    /// megabytes) instead of allocating new ones.
    fn clone_from(&mut self, source: &Self) {
        self.first.clone_from(&source.first);
        self.first_bits = source.first_bits;
        self.levels.clone_from(&source.levels);
        self.level_count = source.level_count;
        self.tree.clone_from(&source.tree);
        self.b32.clone_from(&source.b32);
        self.b64.clone_from(&source.b64);
        self.b128.clone_from(&source.b128);
        self.s32.clone_from(&source.s32);
        self.s64.clone_from(&source.s64);
        self.s128.clone_from(&source.s128);
        self.trie.clone_from(&source.trie);
        self.hybrid = source.hybrid;
        self.results.clone_from(&source.results);
    }
}

/// Keys looked up together by the level-by-level batch lookup of short
/// slices: enough to keep a few dozen bucket reads in flight.
const BATCH: usize = 64;
/// Keys per group of the pipelined batch lookup (the width of the mask of
/// keys that search the tables).
const GROUP: usize = 64;
/// How far ahead the pipelined lookup prefetches first-level entries.
const AHEAD_KEYS: usize = 64;
/// Slices this long or longer go through the pipeline (of tables with at
/// most [`PIPELINE_MAX_LEVELS`] lengths).
const PIPELINE_MIN: usize = 4 * GROUP;
/// The most hashed lengths for which long slices take the pipeline. The
/// pipeline overlaps only a search's first probe across keys, the rest of
/// each search running key by key, while the level-by-level chunks
/// overlap every probe. With three lengths (IPv4's default: a search of
/// one or two probes) the pipeline ran 1.0-1.3x faster than the chunks on
/// random keys; with four, level on IPv4 and 1.05x (random) to 3.4x
/// (announced keys) slower on IPv6; with IPv6's six and ten, 1.2-1.5x
/// slower (docs/BENCHMARKS.md, "`bspl` pipelines only short searches").
const PIPELINE_MAX_LEVELS: u8 = 3;

/// A group of the pipelined batch lookup between its passes: where it
/// starts, which keys search the tables, their first-level entries, their
/// first probe's home and, after the seed pass, its bucket.
struct Group {
    start: usize,
    marked: u64,
    entries: [u64; GROUP],
    homes: [Home; GROUP],
    buckets: [u32; GROUP],
}

impl Default for Group {
    fn default() -> Self {
        Group {
            start: 0,
            marked: 0,
            entries: [0; GROUP],
            homes: [Home::default(); GROUP],
            buckets: [0; GROUP],
        }
    }
}
const _: () = assert!(BATCH <= 256, "active keys are u8 indices");

/// One key's search in the batch lookup: the key's index in the chunk,
/// its answer so far, the tables left, the one it probes next, where the
/// key may be there (window, group, mixed hash) and, once the group's seed is
/// read, its bucket.
#[derive(Clone, Copy, Default)]
struct Search {
    key: u8,
    lo: u8,
    hi: u8,
    mid: u8,
    best: u32,
    window: u32,
    group: u32,
    bucket: u32,
    mixed: u64,
}

impl<A: Addr, S: Storage> Bspl<A, S> {
    /// The first-level index of `addr`.
    #[inline(always)]
    fn block(&self, addr: A) -> usize {
        addr.bits(0, self.first_bits as u32) as usize
    }

    /// The bucket of `addr` in table `level`.
    #[inline(always)]
    fn locate(&self, level: &Level, addr: A) -> usize {
        // IPv4 has only 32-bit keys: the constant test removes the others.
        if A::BITS <= 32 || level.kind == Kind::K32 {
            let home = home(level, Bucket32::fold(Bucket32::key(addr, level.plen)));
            bucket(&home, self.s32[home.window + home.group])
        } else if level.kind == Kind::K64 {
            let home = home(level, Bucket64::fold(Bucket64::key(addr, level.plen)));
            bucket(&home, self.s64[home.window + home.group])
        } else {
            let home = home(level, Bucket128::fold(Bucket128::key(addr, level.plen)));
            bucket(&home, self.s128[home.window + home.group])
        }
    }

    /// The value stored for `addr` in bucket `index` of table `level`
    /// (0: none).
    #[inline(always)]
    fn read(&self, level: &Level, index: usize, addr: A) -> u32 {
        if A::BITS <= 32 || level.kind == Kind::K32 {
            self.b32[index].find(Bucket32::key(addr, level.plen))
        } else if level.kind == Kind::K64 {
            self.b64[index].find(Bucket64::key(addr, level.plen))
        } else {
            self.b128[index].find(Bucket128::key(addr, level.plen))
        }
    }

    /// Starts loading bucket `index` of table `level`.
    #[inline(always)]
    fn prefetch_bucket(&self, level: &Level, index: usize) {
        if A::BITS <= 32 || level.kind == Kind::K32 {
            crate::engines::shared::prefetch(self.b32.as_ptr().wrapping_add(index));
        } else if level.kind == Kind::K64 {
            crate::engines::shared::prefetch(self.b64.as_ptr().wrapping_add(index));
        } else {
            crate::engines::shared::prefetch(self.b128.as_ptr().wrapping_add(index));
        }
    }

    /// One search step: folds the value `value` read from table `mid` into
    /// the answer `best` and narrows `lo..=hi`; false when the search ends.
    #[inline(always)]
    fn step(value: u32, mid: usize, best: &mut u32, lo: &mut usize, hi: &mut usize) -> bool {
        if value != 0 {
            let bmp = value & BMP_MASK;
            if bmp != 0 {
                *best = bmp;
            }
            if value & MARKER == 0 || mid == *hi {
                return false;
            }
            *lo = mid + 1;
        } else {
            if mid == *lo {
                return false;
            }
            *hi = mid - 1;
        }
        true
    }

    /// The results index for `addr`, whose first-level entry is `entry`.
    #[inline(always)]
    fn search(&self, addr: A, entry: u64) -> usize {
        let (lo, hi) = entry_tables(entry);
        if lo > hi {
            return entry_value(entry) as usize;
        }
        self.search_from(addr, entry_value(entry), (lo, hi), entry_root(entry), None)
    }

    /// The search for `addr` from table `mid` of `lo..=hi` with answer so
    /// far `best`; `bucket` is `mid`'s bucket if already located.
    #[inline(always)]
    fn search_from(
        &self,
        addr: A,
        mut best: u32,
        (mut lo, mut hi): (usize, usize),
        mut mid: usize,
        mut bucket: Option<usize>,
    ) -> usize {
        loop {
            let level = &self.levels[mid];
            let index = bucket.take().unwrap_or_else(|| self.locate(level, addr));
            let value = self.read(level, index, addr);
            if !Self::step(value, mid, &mut best, &mut lo, &mut hi) {
                return best as usize;
            }
            mid = self.tree.root(lo, hi);
        }
    }

    /// Pass one of the pipelined batch lookup over the group at `start`:
    /// stores the result of every key whose block has no table entries
    /// (the others get slot 0's result for now: a select, not a
    /// branch) and, with `AHEAD`, prefetches the first-level entries
    /// [`AHEAD_KEYS`] keys ahead; then notes, for each key that searches
    /// the tables, its first-level entry and its first probe's home, and
    /// prefetches that probe's group seed.
    #[inline(always)]
    fn first_pass<const AHEAD: bool>(
        &self,
        addrs: &[A],
        start: usize,
        out: &mut [Option<Label>],
        group: &mut Group,
    ) {
        let keys: &[A; GROUP] = addrs[start..start + GROUP]
            .try_into()
            .expect("a group of keys");
        let results: &mut [Option<Label>; GROUP] = (&mut out[start..start + GROUP])
            .try_into()
            .expect("a group of results");
        let ahead: &[A] = if AHEAD {
            &addrs[start + AHEAD_KEYS..start + AHEAD_KEYS + GROUP]
        } else {
            &[]
        };
        let mut marked = 0u64;
        for (j, (&addr, result)) in keys.iter().zip(results.iter_mut()).enumerate() {
            if AHEAD {
                crate::engines::shared::prefetch(
                    self.first.as_ptr().wrapping_add(self.block(ahead[j])),
                );
            }
            let entry = self.first[self.block(addr)];
            let (lo, hi) = entry_tables(entry);
            let searches = lo <= hi;
            *result = self.results[if searches {
                0
            } else {
                entry_value(entry) as usize
            }]
            .get();
            marked |= (searches as u64) << j;
            group.entries[j] = entry;
        }
        group.start = start;
        group.marked = marked;
        let mut pending = marked;
        while pending != 0 {
            let j = pending.trailing_zeros() as usize;
            pending &= pending - 1;
            let level = &self.levels[entry_root(group.entries[j])];
            let home = self.home(level, keys[j]);
            crate::engines::shared::prefetch(
                self.seeds(level)
                    .as_ptr()
                    .wrapping_add(home.window + home.group),
            );
            group.homes[j] = home;
        }
    }

    /// Pass two over the searching keys of `group`: reads their first
    /// probe's seed and prefetches its bucket.
    #[inline(always)]
    fn seed_pass(&self, group: &mut Group) {
        let mut pending = group.marked;
        while pending != 0 {
            let j = pending.trailing_zeros() as usize;
            pending &= pending - 1;
            let level = &self.levels[entry_root(group.entries[j])];
            let home = &group.homes[j];
            let index = bucket(home, self.seeds(level)[home.window + home.group]);
            self.prefetch_bucket(level, index);
            group.buckets[j] = index as u32;
        }
    }

    /// Pass three over the searching keys of `group`: reads their first
    /// probe's bucket and finishes their search.
    #[inline(always)]
    fn bucket_pass(&self, addrs: &[A], group: &Group, out: &mut [Option<Label>]) {
        let mut pending = group.marked;
        while pending != 0 {
            let j = pending.trailing_zeros() as usize;
            pending &= pending - 1;
            let entry = group.entries[j];
            let index = self.search_from(
                addrs[group.start + j],
                entry_value(entry),
                entry_tables(entry),
                entry_root(entry),
                Some(group.buckets[j] as usize),
            );
            out[group.start + j] = self.results[index].get();
        }
    }

    /// The pipelined batch lookup over whole groups of [`GROUP`] keys: the
    /// first pass of a group, the seed pass of the group before it and the
    /// bucket pass of the one before that run together, so each group's
    /// seeds and buckets arrive while other groups are worked on.
    fn lookup_groups(&self, addrs: &[A], out: &mut [Option<Label>]) {
        let groups = addrs.len() / GROUP;
        let ahead = addrs.len().saturating_sub(AHEAD_KEYS) / GROUP;
        let mut ring = [Group::default(), Group::default(), Group::default()];
        for g in 0..groups + 2 {
            if g >= 2 {
                self.bucket_pass(addrs, &ring[(g - 2) % 3], out);
            }
            if g >= 1 && g <= groups {
                self.seed_pass(&mut ring[(g - 1) % 3]);
            }
            if g < groups {
                let group = &mut ring[g % 3];
                if g + 1 < ahead {
                    self.first_pass::<true>(addrs, g * GROUP, out, group);
                } else {
                    self.first_pass::<false>(addrs, g * GROUP, out, group);
                }
            }
        }
    }

    /// How many tables a lookup of `addr` probes: what the search tree
    /// bounds and the build's choice of first probes minimises.
    pub fn probes(&self, addr: A) -> usize {
        let entry = self.first[self.block(addr)];
        let (mut lo, mut hi) = entry_tables(entry);
        if lo > hi {
            return 0;
        }
        let (mut best, mut mid, mut probes) = (entry_value(entry), entry_root(entry), 1);
        loop {
            let level = &self.levels[mid];
            let found = self.read(level, self.locate(level, addr), addr);
            let more = if !self.hybrid {
                Self::step(found, mid, &mut best, &mut lo, &mut hi)
            } else if found != 0 {
                // The hybrid's tables hold markers only: a hit goes longer.
                lo = mid + 1;
                mid < hi
            } else {
                hi = mid.wrapping_sub(1);
                mid > lo
            };
            if !more {
                return probes;
            }
            mid = self.tree.root(lo, hi);
            probes += 1;
        }
    }

    /// The hash tables' lengths, shortest first.
    pub fn lengths(&self) -> Vec<u8> {
        self.levels[..self.level_count as usize]
            .iter()
            .map(|l| l.plen)
            .collect()
    }

    /// Bits of the first level.
    pub fn first_bits(&self) -> u8 {
        self.first_bits
    }

    /// Where `addr` may be in table `level`.
    #[inline(always)]
    fn home(&self, level: &Level, addr: A) -> Home {
        if A::BITS <= 32 || level.kind == Kind::K32 {
            home(level, Bucket32::fold(Bucket32::key(addr, level.plen)))
        } else if level.kind == Kind::K64 {
            home(level, Bucket64::fold(Bucket64::key(addr, level.plen)))
        } else {
            home(level, Bucket128::fold(Bucket128::key(addr, level.plen)))
        }
    }

    /// The seeds of table `level`'s layout.
    #[inline(always)]
    fn seeds(&self, level: &Level) -> &[u8] {
        if A::BITS <= 32 || level.kind == Kind::K32 {
            &self.s32
        } else if level.kind == Kind::K64 {
            &self.s64
        } else {
            &self.s128
        }
    }

    /// Looks up up to [`BATCH`] keys level by level: each step (group
    /// seeds, then buckets) is prefetched for every key still searching
    /// before any is read, so their cache misses overlap. Keys whose block
    /// has no table entries are answered on the way.
    ///
    /// `N` (at most [`BATCH`]) sizes the search array, so a burst of 8
    /// keys does not clear the 2.5 KB array of 64 searches that a chunk of
    /// 64 needs: on keys that end in the first level, clearing it costs
    /// more than the burst's own lookups.
    fn lookup_chunk<const N: usize>(&self, addrs: &[A], out: &mut [Option<Label>]) {
        debug_assert!(addrs.len() <= N && N <= BATCH && out.len() >= addrs.len());
        let mut searches = [Search::default(); N];
        let mut count = 0;
        for (i, (&addr, result)) in addrs.iter().zip(out.iter_mut()).enumerate() {
            let entry = self.first[self.block(addr)];
            let (lo, hi) = entry_tables(entry);
            if lo <= hi {
                searches[count] =
                    self.start(i, entry_value(entry), (lo, hi), entry_root(entry), addr);
                count += 1;
            } else {
                *result = self.results[entry_value(entry) as usize].get();
            }
        }
        while count > 0 {
            for s in &mut searches[..count] {
                let level = &self.levels[s.mid as usize];
                let seed = self.seeds(level)[s.window as usize + s.group as usize];
                let home = Home {
                    window: s.window as usize,
                    group: s.group as usize,
                    mixed: s.mixed,
                };
                s.bucket = bucket(&home, seed) as u32;
                self.prefetch_bucket(level, s.bucket as usize);
            }
            let mut next = 0;
            for a in 0..count {
                let s = searches[a];
                let addr = addrs[s.key as usize];
                let mid = s.mid as usize;
                let value = self.read(&self.levels[mid], s.bucket as usize, addr);
                let (mut best, mut lo, mut hi) = (s.best, s.lo as usize, s.hi as usize);
                if Self::step(value, mid, &mut best, &mut lo, &mut hi) {
                    let mid = self.tree.root(lo, hi);
                    searches[next] = self.start(s.key as usize, best, (lo, hi), mid, addr);
                    next += 1;
                } else {
                    out[s.key as usize] = self.results[best as usize].get();
                }
            }
            count = next;
        }
    }

    /// The probe of table `mid` in the search for key `key` (answer so far
    /// `best`) over tables `lo..=hi`, its group seed prefetched.
    #[inline(always)]
    fn start(
        &self,
        key: usize,
        best: u32,
        (lo, hi): (usize, usize),
        mid: usize,
        addr: A,
    ) -> Search {
        let level = &self.levels[mid];
        let home = self.home(level, addr);
        crate::engines::shared::prefetch(
            self.seeds(level)
                .as_ptr()
                .wrapping_add(home.window + home.group),
        );
        Search {
            key: key as u8,
            lo: lo as u8,
            hi: hi as u8,
            mid: mid as u8,
            best,
            window: home.window as u32,
            group: home.group as u32,
            bucket: 0,
            mixed: home.mixed,
        }
    }

    /// Bytes of each part: first level, tables, trie, results.
    fn part_bytes(&self) -> [usize; 4] {
        [
            self.first.len() * 8,
            (self.b32.len() + self.b64.len() + self.b128.len()) * 65,
            self.trie.len() * 4,
            self.results.len() * std::mem::size_of::<LabelSlot>(),
        ]
    }
}

impl<A: Addr, S: Storage> Lookup<A> for Bspl<A, S> {
    #[inline(always)]
    fn lookup(&self, addr: A) -> Option<Label> {
        let entry = self.first[self.block(addr)];
        let index = if self.hybrid {
            self.search_hybrid(addr, entry)
        } else {
            self.search(addr, entry)
        };
        self.results[index].get()
    }

    fn lookup_batch(&self, addrs: &[A], out: &mut [Option<Label>]) {
        assert!(out.len() >= addrs.len(), "output slice shorter than input");
        if self.hybrid {
            return self.lookup_batch_hybrid(addrs, out);
        }
        // Long slices of short searches go through the pipeline; short
        // slices (a datapath's bursts), the tail and longer searches
        // through the level-by-level chunks.
        let piped = if addrs.len() >= PIPELINE_MIN && self.level_count <= PIPELINE_MAX_LEVELS {
            addrs.len() / GROUP * GROUP
        } else {
            0
        };
        // Not called for short slices: its ring of groups is 7 KB to
        // clear, more than a burst's own work.
        if piped > 0 {
            self.lookup_groups(&addrs[..piped], &mut out[..piped]);
        }
        for (keys, results) in addrs[piped..]
            .chunks(BATCH)
            .zip(out[piped..].chunks_mut(BATCH))
        {
            match keys.len() {
                0..=8 => self.lookup_chunk::<8>(keys, results),
                9..=16 => self.lookup_chunk::<16>(keys, results),
                17..=32 => self.lookup_chunk::<32>(keys, results),
                _ => self.lookup_chunk::<BATCH>(keys, results),
            }
        }
    }

    fn memory_bytes(&self) -> usize {
        self.part_bytes().iter().sum()
    }
}

/// How the target lengths are chosen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LengthPlan {
    /// By the dynamic program, with the fewest levels within
    /// [`levels::AUTO_SLACK`] of the least memory; for the hybrid, every
    /// quarter of the address.
    Auto,
    /// By the dynamic program, for this many levels (the first included).
    Levels(u8),
    /// Given: the first level's bits, then the tables' lengths.
    Lengths(Vec<u8>),
}

/// The parameters of `bspl`: `bspl[:levels=K][,first=F]`,
/// `bspl:lengths=16+24+32`, or `bspl:hybrid[,lengths=16+32+64+96]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BsplConfig {
    /// Bits of the first level (with [`LengthPlan::Lengths`], its first
    /// length).
    pub first: u8,
    /// The target lengths after the first level.
    pub plan: LengthPlan,
    /// The hybrid of \[SV98\] §7: hash tables on a few lengths and
    /// multibit tries between them.
    pub hybrid: bool,
}

impl Default for BsplConfig {
    fn default() -> Self {
        BsplConfig {
            first: DEFAULT_FIRST_BITS,
            plan: LengthPlan::Auto,
            hybrid: false,
        }
    }
}

impl fmt::Display for BsplConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut params = Vec::new();
        match &self.plan {
            LengthPlan::Lengths(lengths) => {
                let all: Vec<String> = std::iter::once(self.first)
                    .chain(lengths.iter().copied())
                    .map(|l| l.to_string())
                    .collect();
                params.push(format!("lengths={}", all.join("+")));
            }
            LengthPlan::Auto | LengthPlan::Levels(_) => {
                if self.first != DEFAULT_FIRST_BITS {
                    params.push(format!("first={}", self.first));
                }
                if let LengthPlan::Levels(levels) = self.plan {
                    params.push(format!("levels={levels}"));
                }
            }
        }
        if self.hybrid {
            params.insert(0, "hybrid".to_string());
        }
        if params.is_empty() {
            f.write_str("bspl")
        } else {
            write!(f, "bspl:{}", params.join(","))
        }
    }
}

impl EngineConfig for BsplConfig {
    const NAMES: &'static [&'static str] = &["bspl"];

    fn from_spec(spec: &EngineSpec) -> Result<Self, BuildError> {
        spec.expect_only(&["levels", "first", "lengths", "hybrid"])?;
        let hybrid = spec.flag("hybrid")?;
        let first = spec.number("first", MIN_FIRST_BITS as u32..=MAX_FIRST_BITS as u32)?;
        let levels = spec.number("levels", 2..=MAX_HASH_LEVELS as u32 + 1)?;
        let plan = match spec.value("lengths") {
            Some(text) => {
                if first.is_some() || levels.is_some() {
                    return Err(spec.error(
                        "`lengths` fixes every length (its first is the first level's bits); \
                         it takes no `first` or `levels`"
                            .to_string(),
                    ));
                }
                let lengths = parse_lengths(spec, text)?;
                return Ok(BsplConfig {
                    first: lengths[0],
                    plan: LengthPlan::Lengths(lengths[1..].to_vec()),
                    hybrid,
                });
            }
            None => levels.map_or(LengthPlan::Auto, |l| LengthPlan::Levels(l as u8)),
        };
        Ok(BsplConfig {
            first: first.map_or(DEFAULT_FIRST_BITS, |f| f as u8),
            plan,
            hybrid,
        })
    }
}

/// Parses `16+24+32`: the first level's bits (8..=24), then increasing
/// table lengths, at most [`MAX_HASH_LEVELS`] of them.
fn parse_lengths(spec: &EngineSpec, text: &str) -> Result<Vec<u8>, BuildError> {
    let lengths: Vec<u8> = text
        .split('+')
        .map(|s| s.trim().parse::<u8>())
        .collect::<Result<_, _>>()
        .map_err(|_| spec.error(format!("`lengths={text}` is not a list like 16+24+32")))?;
    if !(MIN_FIRST_BITS..=MAX_FIRST_BITS).contains(&lengths[0]) {
        return Err(spec.error(format!(
            "the first length of `lengths={text}` is the first level's bits, which must be in \
             {MIN_FIRST_BITS}..={MAX_FIRST_BITS}"
        )));
    }
    if lengths.windows(2).any(|w| w[0] >= w[1]) || lengths.len() > MAX_HASH_LEVELS + 1 {
        return Err(spec.error(format!(
            "`lengths={text}` must increase strictly and list at most {} lengths",
            MAX_HASH_LEVELS + 1
        )));
    }
    Ok(lengths)
}

/// One hash table's statistics.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct TableStats {
    /// Its target length.
    pub plen: u8,
    /// Its bucket layout.
    pub kind: Kind,
    /// Entries (expanded prefixes and markers, once each).
    pub entries: usize,
    /// Entries that are markers (in the hybrid: entries with a trie).
    pub markers: usize,
    /// Buckets of 64 bytes.
    pub buckets: usize,
}

/// What a `bspl` table looks like, and what its build cost.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct BsplStats {
    /// Bits of the first level.
    pub first_bits: u8,
    /// The hash tables, shortest length first.
    pub tables: Vec<TableStats>,
    /// First-level blocks with table entries.
    pub hashed_blocks: usize,
    /// Distinct labels in the results table.
    pub labels: usize,
    /// Bytes of the first level, the tables, the tries and the results.
    pub first_bytes: usize,
    /// Bytes of the hash tables (buckets and seeds).
    pub table_bytes: usize,
    /// Bytes of the hybrid's tries.
    pub trie_bytes: usize,
    /// Bytes of the results table.
    pub results_bytes: usize,
    /// The length program's run time at the last full build (0 when the
    /// lengths were given), in milliseconds.
    pub program_ms: f64,
    /// The program's memory estimate for the tables, in bytes.
    pub estimated_table_bytes: f64,
    /// Time spent placing keys and searching their groups' seeds at the
    /// last full build, in milliseconds.
    pub seed_search_ms: f64,
    /// The seed search of the last full build and the updates since.
    pub seeds: SeedWork,
    /// Times the last full build enlarged a table because a window
    /// overflowed or a group found no seed.
    pub table_growths: u32,
    /// Blocks rebuilt by updates since the last full build.
    pub blocks_rebuilt: u64,
    /// Changed prefixes patched in place (their own entries and markers
    /// rewritten, their block's plan kept) since the last full build.
    pub prefixes_patched: u64,
    /// Times an update enlarged a table whose window was full (the table
    /// placed anew at twice its entries' size) since the last full build.
    pub update_growths: u64,
    /// Blocks of `bspl:hybrid` whose trie leaves an update rewrote in place
    /// (below a change no longer than the first level) since the last full
    /// build.
    pub blocks_relabelled: u64,
    /// Tries of `bspl:hybrid` whose leaves an update rewrote in place (the
    /// change above them, or in their span and their nodes still holding
    /// it) instead of building them anew, since the last full build.
    pub tries_relabelled: u64,
}

impl EngineStats for BsplStats {
    fn rows(&self) -> Vec<(String, String)> {
        let mut rows = vec![
            ("first level".into(), format!("{} bits", self.first_bits)),
            (
                "lengths".into(),
                self.tables
                    .iter()
                    .map(|t| t.plen.to_string())
                    .collect::<Vec<_>>()
                    .join(","),
            ),
        ];
        for t in &self.tables {
            rows.push((
                format!("table /{}", t.plen),
                format!(
                    "{} entries ({} markers), {} buckets, {:.0}% full",
                    t.entries,
                    t.markers,
                    t.buckets,
                    100.0 * t.entries as f64 / (t.buckets * t.kind.slots()).max(1) as f64
                ),
            ));
        }
        rows.extend([
            ("hashed blocks".into(), self.hashed_blocks.to_string()),
            ("distinct labels".into(), self.labels.to_string()),
            (
                "bytes: first, tables, tries, results".into(),
                format!(
                    "{}, {}, {}, {}",
                    self.first_bytes, self.table_bytes, self.trie_bytes, self.results_bytes
                ),
            ),
            (
                "program".into(),
                format!(
                    "{:.1} ms, estimate {:.0} table bytes",
                    self.program_ms, self.estimated_table_bytes
                ),
            ),
            (
                "seed search".into(),
                format!(
                    "{:.1} ms, {} seeds tried, largest seed {}, {} windows re-placed, \
                     {} table growths",
                    self.seed_search_ms,
                    self.seeds.seeds_tried,
                    self.seeds.max_seed,
                    self.seeds.windows_replaced,
                    self.table_growths
                ),
            ),
            (
                "updates: blocks re-planned, blocks relabelled, tries relabelled, \
                 prefixes patched, tables enlarged"
                    .into(),
                format!(
                    "{}, {}, {}, {}, {}",
                    self.blocks_rebuilt,
                    self.blocks_relabelled,
                    self.tries_relabelled,
                    self.prefixes_patched,
                    self.update_growths
                ),
            ),
        ]);
        rows
    }
}

/// The build state of `bspl`: the label index, the chosen lengths and the
/// keys each block placed (to remove them when the block is rebuilt).
#[derive(Clone)]
pub struct BsplUpdater<A> {
    config: BsplConfig,
    labels: LabelIndex,
    /// The keys (table, address bits) each hashed block placed, sorted.
    blocks: HashMap<u32, Vec<(u8, A)>>,
    /// Entries of each table.
    table_entries: [usize; 16],
    /// Statistics of the last full build (and seed work since).
    build_stats: Box<BsplStats>,
    /// Hybrid: the trie nodes (as pointers) each block allocated.
    trie_nodes: HashMap<u32, Vec<u32>>,
    /// Hybrid: freed trie nodes' bases, by stride.
    trie_free: Vec<Vec<u32>>,
}

impl<A: Addr> Updater<A> for BsplUpdater<A> {
    type Config = BsplConfig;
    type Snapshot = Bspl<A>;
    type Stats = BsplStats;

    fn build(config: &BsplConfig, rib: &Rib<A>) -> Result<(Self, Bspl<A>), BuildError> {
        build::build(config, rib)
    }

    fn config(&self) -> BsplConfig {
        self.config.clone()
    }

    fn patches(&self) -> bool {
        true
    }

    fn update(
        &mut self,
        snapshot: &mut Bspl<A>,
        rib: &Rib<A>,
        changed: &[Prefix<A>],
    ) -> Result<(), BuildError> {
        if snapshot.hybrid {
            return self.apply_hybrid(snapshot, rib, changed);
        }
        let batch = self.plan_batch(snapshot, rib, changed)?;
        if batch.costs_more_than_builds() {
            // Build anew, unless the table fits no fresh layout: then the
            // batch is written after all (nothing was written yet).
            if let Ok(built) = build::build(&self.config, rib) {
                (*self, *snapshot) = built;
                return Ok(());
            }
        }
        self.write_batch(snapshot, rib, batch)
    }

    fn stats(&self, snapshot: &Bspl<A>) -> BsplStats {
        let mut stats = (*self.build_stats).clone();
        let [first, tables, trie, results] = snapshot.part_bytes();
        stats.first_bytes = first;
        stats.table_bytes = tables;
        stats.trie_bytes = trie;
        stats.results_bytes = results;
        stats.labels = self.labels.len();
        stats.hashed_blocks = self.blocks.len();
        stats.tables = snapshot.levels[..snapshot.level_count as usize]
            .iter()
            .map(|level| {
                let range = level.base as usize..level.base as usize + level.buckets();
                let (entries, markers) = match level.kind {
                    Kind::K32 => count_entries(&snapshot.b32[range], snapshot.hybrid),
                    Kind::K64 => count_entries(&snapshot.b64[range], snapshot.hybrid),
                    Kind::K128 => count_entries(&snapshot.b128[range], snapshot.hybrid),
                };
                TableStats {
                    plen: level.plen,
                    kind: level.kind,
                    entries,
                    markers,
                    buckets: level.buckets(),
                }
            })
            .collect();
        stats
    }
}

/// Entries and markers (hybrid: trie pointers) in `buckets`.
fn count_entries<B: Bucket>(buckets: &[B], hybrid: bool) -> (usize, usize) {
    let mut entries = 0;
    let mut markers = 0;
    let flag = if hybrid {
        hybrid::flags::POINTER
    } else {
        MARKER
    };
    for (_, value) in buckets.iter().flat_map(|b| b.entries()) {
        entries += 1;
        markers += (value & flag != 0) as usize;
    }
    (entries, markers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::shared::testing::{assert_default_route_is_one_slot, nested_table};

    /// Every array but the results.
    #[allow(clippy::type_complexity)]
    fn tables<A>(
        snapshot: &Bspl<A>,
    ) -> (
        Vec<u64>,
        Vec<Bucket32>,
        Vec<Bucket64>,
        Vec<Bucket128>,
        [Vec<u8>; 3],
        Vec<u32>,
    ) {
        (
            snapshot.first.clone(),
            snapshot.b32.clone(),
            snapshot.b64.clone(),
            snapshot.b128.clone(),
            [
                snapshot.s32.clone(),
                snapshot.s64.clone(),
                snapshot.s128.clone(),
            ],
            snapshot.trie.clone(),
        )
    }

    #[test]
    fn the_default_route_is_one_results_slot() {
        let rib = nested_table(0x0a01_0203u32);
        for spec in ["bspl", "bspl:levels=3", "bspl:hybrid"] {
            let config = BsplConfig::parse(spec).unwrap();
            assert_default_route_is_one_slot::<u32, BsplUpdater<u32>, _>(&config, &rib, tables);
        }
        let rib = nested_table(0x2001_0db8_0001_0002_0003_0004_0005_0006u128);
        for spec in ["bspl", "bspl:hybrid"] {
            let config = BsplConfig::parse(spec).unwrap();
            assert_default_route_is_one_slot::<u128, BsplUpdater<u128>, _>(&config, &rib, tables);
        }
    }
}
