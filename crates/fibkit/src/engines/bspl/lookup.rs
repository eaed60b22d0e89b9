//! The lookup snapshot of `bspl` and its lookups (the hybrid's walk of its
//! tries is in `hybrid::lookup`).

use std::marker::PhantomData;

use super::build::SearchTree;
use super::table::{bucket, home, Bucket, Bucket128, Bucket32, Bucket64, Home, Kind, Level};
use super::{entry_root, entry_tables, entry_value, BMP_MASK, MARKER};
use crate::addr::Addr;
use crate::engine::Lookup;
use crate::labels::LabelSlot;
use crate::prefix::Label;
use crate::storage::{Owned, Storage};

/// The lookup snapshot of `bspl`: the first level, the hash tables and the
/// results, in storage `S`.
pub struct Bspl<A, S: Storage = Owned> {
    pub(super) first: S::Array<u64>,
    pub(super) first_bits: u8,
    // 16 so that any 4-bit table index is in bounds without a check;
    // boxed, like the tree, to keep the snapshot enum small.
    pub(super) levels: Box<[Level; 16]>,
    pub(super) level_count: u8,
    // Boxed: the 256-byte tree would make the snapshot enum of every
    // engine as large.
    pub(super) tree: Box<SearchTree>,
    pub(super) b32: S::Array<Bucket32>,
    pub(super) b64: S::Array<Bucket64>,
    pub(super) b128: S::Array<Bucket128>,
    /// The group seeds of each layout's buckets, one per bucket.
    pub(super) s32: S::Array<u8>,
    pub(super) s64: S::Array<u8>,
    pub(super) s128: S::Array<u8>,
    /// Hybrid only: the multibit trie nodes between the hashed lengths.
    pub(super) trie: S::Array<u32>,
    pub(super) hybrid: bool,
    pub(super) results: S::Array<LabelSlot>,
    pub(super) _family: PhantomData<fn() -> A>,
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
pub(super) const BATCH: usize = 64;
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
/// slower (docs/bench/bspl.md, "`bspl` pipelines only short searches").
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
    pub(super) fn block(&self, addr: A) -> usize {
        addr.bits(0, self.first_bits as u32) as usize
    }

    /// The bucket of `addr` in table `level`.
    #[inline(always)]
    pub(super) fn locate(&self, level: &Level, addr: A) -> usize {
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
    pub(super) fn read(&self, level: &Level, index: usize, addr: A) -> u32 {
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
    pub(super) fn part_bytes(&self) -> [usize; 4] {
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
