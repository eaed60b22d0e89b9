//! The per-length hash tables: buckets of one 64-byte cache line, and
//! searched-for seeds that keep every key in its bucket (\[SV98\] §4.3 and
//! §6.3: hash functions "that have no more than 6 collisions per entry",
//! so a probe is one memory access).
//!
//! A key is the first `plen` bits of an address (`plen` the table's
//! length), right-aligned in the narrowest word that holds it; a bucket
//! holds as many keys and 32-bit values as fit a cache line:
//! ```text
//! plen <= 32   Bucket32   keys [u32; 8]     values [u32; 8]              8 slots
//! plen <= 64   Bucket64   keys [u64; 5]     values [u32; 5]  spare u32   5 slots
//! plen <= 128  Bucket128  keys [[u64;2];3]  values [u32; 3]  spare u32   3 slots
//! ```
//! A stored value is never 0 and an empty slot is all zeros, so a probe
//! ORs the values of the slots whose key equals the searched key
//! (branch-free; an empty slot matching key 0 adds 0) and reads 0 as
//! "absent".
//!
//! Where a key goes: a table is a row of *windows* of [`WINDOW`] buckets.
//! The key's hash picks its window and one of the window's [`WINDOW`]
//! *groups*; the group's one-byte seed (in a byte array beside the
//! buckets, one seed per bucket) picks the bucket inside the window:
//! ```text
//! h      = mix(key, table salt)
//! window = h[32..64] * windows >> 32        group = h[26..32]
//! seed   = seeds[base + window * 64 + group]
//! bucket = base + window * 64 + ((h * K3 + seed * K1) >> 58)
//! ```
//! The build searches each group's seed (first fit, largest groups first)
//! so that no bucket takes more keys than it has slots: a probe reads one
//! bucket line, never a second (the seed byte comes from an array 64 times
//! smaller than the buckets). One seed per table, as in \[SV98\], cannot
//! keep a million keys within 8 per bucket unless the table is mostly
//! empty; a seed per group of a few keys fills tables to 75-85%, and the
//! groups are hash-defined, so clustered address space (IPv6 tables put
//! 20,000 prefixes under one /16) does not make them large. An update
//! inserts a key in its bucket, or re-seeds the key's group (re-placing
//! its window if that fails): it touches one window, 4 KiB.

use crate::addr::Addr;
use crate::storage::Plain;

/// Buckets (and groups) per window.
pub const WINDOW: usize = 64;
const WINDOW_BITS: u32 = WINDOW.trailing_zeros();
const _: () = assert!(WINDOW.is_power_of_two() && WINDOW <= 64);

/// A bucket of 32-bit keys: one cache line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(64))]
pub struct Bucket32 {
    keys: [u32; 8],
    values: [u32; 8],
}

/// A bucket of 64-bit keys: one cache line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(64))]
pub struct Bucket64 {
    keys: [u64; 5],
    values: [u32; 5],
    spare: u32,
}

/// A bucket of 128-bit keys (as `[high, low]` words): one cache line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(64))]
pub struct Bucket128 {
    keys: [[u64; 2]; 3],
    values: [u32; 3],
    spare: u32,
}

const _: () = assert!(std::mem::size_of::<Bucket32>() == 64);
const _: () = assert!(std::mem::size_of::<Bucket64>() == 64);
const _: () = assert!(std::mem::size_of::<Bucket128>() == 64);

// SAFETY: `repr(C)` structs of integer arrays whose fields add up to exactly
// 64 bytes (asserted above), so there is no padding, and every bit pattern
// is a valid value.
unsafe impl Plain for Bucket32 {}
// SAFETY: as above.
unsafe impl Plain for Bucket64 {}
// SAFETY: as above.
unsafe impl Plain for Bucket128 {}

/// A bucket layout: its key word and slot count. Shared by the three
/// layouts so that placement and lookup are written once.
pub(crate) trait Bucket: Plain + Default + PartialEq {
    /// The key word.
    type Key: Copy + Eq + Default;
    /// Slots per bucket.
    const SLOTS: usize;
    /// The share of slots a build fills.
    const LOAD: f64;

    /// The OR of the values of the slots holding `key` (0: absent).
    fn find(&self, key: Self::Key) -> u32;
    /// Stores `key` with `value` (non-zero) in a free slot; false if full.
    fn insert(&mut self, key: Self::Key, value: u32) -> bool;
    /// Empties the slot holding `key`; false if absent.
    fn remove(&mut self, key: Self::Key) -> bool;
    /// Gives the slot holding `key` the value `value` (non-zero); false if
    /// absent.
    fn set(&mut self, key: Self::Key, value: u32) -> bool;
    /// Slots in use.
    fn used(&self) -> usize;
    /// The `(key, value)` of every slot in use.
    fn entries(&self) -> impl Iterator<Item = (Self::Key, u32)> + '_;
    /// The key of an address's first `plen` bits (`plen` within the layout's
    /// width).
    fn key<A: Addr>(addr: A, plen: u8) -> Self::Key;
    /// The key folded to the 64 bits the hash mixes.
    fn fold(key: Self::Key) -> u64;
}

macro_rules! bucket_impl {
    ($Bucket:ty, $Key:ty, $slots:expr, $load:expr, |$addr:ident, $plen:ident| $key:expr,
     |$k:ident| $fold:expr) => {
        impl Bucket for $Bucket {
            type Key = $Key;
            const SLOTS: usize = $slots;
            const LOAD: f64 = $load;

            #[inline(always)]
            fn find(&self, key: $Key) -> u32 {
                // PERF: a mask instead of `if` keeps the compare free of
                // branches (LLVM turned the `if` into one unpredictable
                // branch per slot); on IPv4 it compiles to two vector
                // compares.
                let mut value = 0;
                for (k, v) in self.keys.iter().zip(&self.values) {
                    value |= v & ((*k == key) as u32).wrapping_neg();
                }
                value
            }

            fn insert(&mut self, key: $Key, value: u32) -> bool {
                debug_assert!(value != 0);
                match self.values.iter().position(|&v| v == 0) {
                    Some(slot) => {
                        self.keys[slot] = key;
                        self.values[slot] = value;
                        true
                    }
                    None => false,
                }
            }

            fn remove(&mut self, key: $Key) -> bool {
                let found = self
                    .keys
                    .iter()
                    .zip(&self.values)
                    .position(|(&k, &v)| k == key && v != 0);
                match found {
                    Some(slot) => {
                        self.keys[slot] = Default::default();
                        self.values[slot] = 0;
                        true
                    }
                    None => false,
                }
            }

            fn set(&mut self, key: $Key, value: u32) -> bool {
                debug_assert!(value != 0);
                let found = self
                    .keys
                    .iter()
                    .zip(&self.values)
                    .position(|(&k, &v)| k == key && v != 0);
                match found {
                    Some(slot) => {
                        self.values[slot] = value;
                        true
                    }
                    None => false,
                }
            }

            fn used(&self) -> usize {
                self.values.iter().filter(|&&v| v != 0).count()
            }

            fn entries(&self) -> impl Iterator<Item = ($Key, u32)> + '_ {
                self.keys
                    .iter()
                    .copied()
                    .zip(self.values.iter().copied())
                    .filter(|&(_, v)| v != 0)
            }

            #[inline(always)]
            fn key<A: Addr>($addr: A, $plen: u8) -> $Key {
                $key
            }

            #[inline(always)]
            fn fold($k: $Key) -> u64 {
                $fold
            }
        }
    };
}

bucket_impl!(
    Bucket32,
    u32,
    8,
    0.8,
    |addr, plen| addr.bits(0, plen as u32),
    |key| key as u64
);
bucket_impl!(
    Bucket64,
    u64,
    5,
    0.75,
    |addr, plen| (addr >> (A::BITS - plen) as u32).low_u64(),
    |key| key
);
bucket_impl!(
    Bucket128,
    [u64; 2],
    3,
    0.7,
    |addr, plen| {
        let key = (addr >> (A::BITS - plen) as u32).to_u128();
        [(key >> 64) as u64, key as u64]
    },
    |key| key[0].wrapping_mul(K3).rotate_left(32) ^ key[1]
);

const K1: u64 = 0x9e37_79b9_7f4a_7c15;
const K2: u64 = 0xd6e8_feb8_6659_fd93;
const K3: u64 = 0xa076_1d64_78bd_642f;

/// The bucket layout of a table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// [`Bucket32`]: lengths up to 32.
    #[default]
    K32,
    /// [`Bucket64`]: lengths 33 to 64.
    K64,
    /// [`Bucket128`]: lengths 65 to 128.
    K128,
}

impl Kind {
    /// The layout that holds keys of `plen` bits.
    pub fn of(plen: u8) -> Kind {
        match plen {
            0..=32 => Kind::K32,
            33..=64 => Kind::K64,
            _ => Kind::K128,
        }
    }

    /// Slots per bucket.
    pub fn slots(self) -> usize {
        match self {
            Kind::K32 => Bucket32::SLOTS,
            Kind::K64 => Bucket64::SLOTS,
            Kind::K128 => Bucket128::SLOTS,
        }
    }

    /// The share of slots a build fills.
    pub fn load(self) -> f64 {
        match self {
            Kind::K32 => Bucket32::LOAD,
            Kind::K64 => Bucket64::LOAD,
            Kind::K128 => Bucket128::LOAD,
        }
    }

    /// Bytes a table of this layout spends per entry at the build's fill
    /// (bucket and seed bytes).
    pub fn bytes_per_entry(self) -> f64 {
        65.0 / (self.slots() as f64 * self.load())
    }
}

/// One hash table: the prefixes and markers of one target length.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Level {
    /// The target length.
    pub plen: u8,
    /// Its bucket layout.
    pub kind: Kind,
    /// Index of its first bucket (and seed) in the arrays of its layout.
    pub base: u32,
    /// Its number of windows of [`WINDOW`] buckets (at least 1).
    pub windows: u32,
    /// Mixed into the hash, so the tables hash independently.
    pub salt: u64,
}

impl Level {
    /// The salt of the table at `index`: fixed, so builds are reproducible.
    pub fn salt_of(index: usize) -> u64 {
        (index as u64 + 1).wrapping_mul(K2).rotate_left(29) ^ K1
    }

    /// Buckets of the table.
    pub fn buckets(&self) -> usize {
        self.windows as usize * WINDOW
    }
}

/// Where a key may go: its window's first bucket (also its seeds' first
/// index), its group, and the hash the seed is added to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Home {
    pub window: usize,
    pub group: usize,
    pub mixed: u64,
}

/// The home of a key (folded to 64 bits) in `level`.
#[inline(always)]
pub(crate) fn home(level: &Level, folded: u64) -> Home {
    let hash = (folded.wrapping_mul(K1) ^ level.salt).wrapping_mul(K2);
    let window = ((hash >> 32) * level.windows as u64) >> 32;
    Home {
        window: level.base as usize + ((window as usize) << WINDOW_BITS),
        group: (hash >> 26) as usize & (WINDOW - 1),
        // Mixed before the seed is known, so that once the seed byte
        // arrives one multiply and one add give the bucket.
        mixed: hash.wrapping_mul(K3),
    }
}

/// The bucket a home goes to under `seed`.
#[inline(always)]
pub(crate) fn bucket(home: &Home, seed: u8) -> usize {
    let position = home.mixed.wrapping_add((seed as u64).wrapping_mul(K1)) >> (64 - WINDOW_BITS);
    home.window + position as usize
}

/// Placing keys in one layout's buckets: first fit of each group's seed.
pub(crate) struct Placer<'a, B> {
    pub buckets: &'a mut [B],
    pub seeds: &'a mut [u8],
}

/// What placements cost: seeds tried and windows re-placed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SeedWork {
    /// Seeds tried (one per group at the least).
    pub seeds_tried: u64,
    /// The largest seed a group needed.
    pub max_seed: u8,
    /// Windows re-placed whole because a group found no seed.
    pub windows_replaced: u64,
}

impl<B: Bucket> Placer<'_, B> {
    /// Places `keys` (distinct, with non-zero values) into the empty
    /// window at `window`, all of whose keys they are: groups largest
    /// first, each at the first seed that fits. False if some group fits no
    /// seed (the window is left partly filled).
    fn fill_window(
        &mut self,
        level: &Level,
        window: usize,
        keys: &mut [(B::Key, u32)],
        work: &mut SeedWork,
    ) -> bool {
        // Sort by group, then order the groups by size.
        keys.sort_unstable_by_key(|&(key, _)| home(level, B::fold(key)).group);
        let mut groups: Vec<&[(B::Key, u32)]> = keys
            .chunk_by(|a, b| home(level, B::fold(a.0)).group == home(level, B::fold(b.0)).group)
            .collect();
        groups.sort_by_key(|g| std::cmp::Reverse(g.len()));
        groups.into_iter().all(|group| {
            let group_index = home(level, B::fold(group[0].0)).group;
            match self.seed_for(level, group, work) {
                Some(seed) => {
                    self.seeds[window + group_index] = seed;
                    for &(key, value) in group {
                        let stored = self.buckets[bucket(&home(level, B::fold(key)), seed)]
                            .insert(key, value);
                        debug_assert!(stored, "the seed was checked");
                    }
                    true
                }
                None => false,
            }
        })
    }

    /// The first seed under which every key of `group` (one group of one
    /// window, not stored) finds a free slot.
    fn seed_for(&self, level: &Level, group: &[(B::Key, u32)], work: &mut SeedWork) -> Option<u8> {
        let homes: Vec<Home> = group
            .iter()
            .map(|&(key, _)| home(level, B::fold(key)))
            .collect();
        let mut taken = [0u8; WINDOW];
        (0..=u8::MAX).find(|&seed| {
            work.seeds_tried += 1;
            taken = [0; WINDOW];
            let fits = homes.iter().all(|home| {
                let b = bucket(home, seed);
                let offset = b - home.window;
                taken[offset] += 1;
                self.buckets[b].used() + taken[offset] as usize <= B::SLOTS
            });
            if fits {
                work.max_seed = work.max_seed.max(seed);
            }
            fits
        })
    }

    /// Places `keys` (all of one table, distinct, non-zero values) into the
    /// table's empty buckets. False if a window takes more keys than it has
    /// slots or some group fits no seed: the table needs more windows.
    pub fn fill(&mut self, level: &Level, keys: &mut [(B::Key, u32)], work: &mut SeedWork) -> bool {
        keys.sort_unstable_by_key(|&(key, _)| home(level, B::fold(key)).window);
        for window_keys in keys.chunk_by_mut(|a, b| {
            home(level, B::fold(a.0)).window == home(level, B::fold(b.0)).window
        }) {
            let window = home(level, B::fold(window_keys[0].0)).window;
            if window_keys.len() > WINDOW * B::SLOTS
                || !self.fill_window(level, window, window_keys, work)
            {
                return false;
            }
        }
        true
    }

    /// The value of `key` in `level` (0: absent).
    #[cfg(test)]
    pub fn get(&self, level: &Level, key: B::Key) -> u32 {
        let home = home(level, B::fold(key));
        self.buckets[bucket(&home, self.seeds[home.window + home.group])].find(key)
    }

    /// Removes `key` from `level`; false if absent.
    pub fn remove(&mut self, level: &Level, key: B::Key) -> bool {
        let home = home(level, B::fold(key));
        let seed = self.seeds[home.window + home.group];
        self.buckets[bucket(&home, seed)].remove(key)
    }

    /// Gives `key` of `level` the value `value` where it is; false if
    /// absent.
    pub fn set(&mut self, level: &Level, key: B::Key, value: u32) -> bool {
        let home = home(level, B::fold(key));
        let seed = self.seeds[home.window + home.group];
        self.buckets[bucket(&home, seed)].set(key, value)
    }

    /// Inserts `key` (absent from `level`) with `value`: into its bucket,
    /// else by re-seeding its group, else by re-placing its window. False
    /// if even that fails (the window is full): the table needs more
    /// windows, and the window is left as it was.
    pub fn insert(&mut self, level: &Level, key: B::Key, value: u32, work: &mut SeedWork) -> bool {
        let home = home(level, B::fold(key));
        let slot = home.window + home.group;
        if self.buckets[bucket(&home, self.seeds[slot])].insert(key, value) {
            return true;
        }
        // The group's keys, lifted out of the window, plus the new one.
        let window = home.window..home.window + WINDOW;
        let mut group: Vec<(B::Key, u32)> = vec![(key, value)];
        for b in window.clone() {
            let lifted: Vec<(B::Key, u32)> = self.buckets[b]
                .entries()
                .filter(|&(k, _)| home_of::<B>(level, k).group == home.group)
                .collect();
            for &(k, _) in &lifted {
                self.buckets[b].remove(k);
            }
            group.extend(lifted);
        }
        if let Some(seed) = self.seed_for(level, &group, work) {
            self.seeds[slot] = seed;
            for &(k, v) in &group {
                self.buckets[bucket(&home_of::<B>(level, k), seed)].insert(k, v);
            }
            return true;
        }
        // Re-place the whole window (groups largest first).
        work.windows_replaced += 1;
        let mut all: Vec<(B::Key, u32)> = group;
        for b in window.clone() {
            all.extend(self.buckets[b].entries());
            self.buckets[b] = B::default();
        }
        let saved: Vec<u8> = self.seeds[window.clone()].to_vec();
        if all.len() <= WINDOW * B::SLOTS && self.fill_window(level, home.window, &mut all, work) {
            return true;
        }
        // Put the window back as it was (without the new key).
        for b in window.clone() {
            self.buckets[b] = B::default();
        }
        self.seeds[window].copy_from_slice(&saved);
        for &(k, v) in all.iter().filter(|&&(k, _)| k != key) {
            let h = home_of::<B>(level, k);
            let stored = self.buckets[bucket(&h, self.seeds[h.window + h.group])].insert(k, v);
            debug_assert!(stored, "the window held these keys before");
        }
        false
    }
}

/// The home of `key` of layout `B` in `level`.
#[inline(always)]
fn home_of<B: Bucket>(level: &Level, key: B::Key) -> Home {
    home(level, B::fold(key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_find_insert_remove() {
        let mut bucket = Bucket32::default();
        assert_eq!(bucket.find(0), 0, "an empty slot reads as absent");
        for i in 0..8u32 {
            assert!(bucket.insert(i * 7, i + 1));
        }
        assert!(!bucket.insert(99, 1), "full");
        assert_eq!(bucket.used(), 8);
        assert_eq!(bucket.find(0), 1, "key 0 is a key like any other");
        assert_eq!(bucket.find(21), 4);
        assert_eq!(bucket.find(22), 0);
        assert!(bucket.remove(21));
        assert!(!bucket.remove(21));
        assert_eq!(bucket.find(21), 0);
        assert!(bucket.insert(99, 5));
        assert_eq!(bucket.find(99), 5);
        assert!(bucket.set(99, 6));
        assert_eq!(bucket.find(99), 6);
        assert!(!bucket.set(21, 6), "absent");
        assert_eq!(bucket.used(), 8);
        assert_eq!(bucket.entries().count(), 8);

        let mut wide = Bucket128::default();
        let key = Bucket128::key(u128::MAX, 128);
        assert!(wide.insert(key, 3));
        assert!(wide.insert([0, 0], 9));
        assert_eq!(wide.find(key), 3);
        assert_eq!(wide.find([0, 0]), 9);
        assert_eq!(wide.used(), 2);
        let mut mid = Bucket64::default();
        let key = Bucket64::key(0x2001_0db8_0000_0001u128 << 64, 64);
        assert_eq!(key, 0x2001_0db8_0000_0001);
        assert!(mid.insert(key, 1));
        assert_eq!(mid.find(key), 1);
    }

    #[test]
    fn keys_are_the_leading_bits() {
        assert_eq!(Bucket32::key(0x0a01_0203u32, 24), 0x0a_0102);
        assert_eq!(Bucket32::key(0x0a01_0203u32, 32), 0x0a01_0203);
        assert_eq!(Bucket32::key(0x2001_0db8u128 << 96, 32), 0x2001_0db8);
        assert_eq!(Bucket128::key(u128::MAX, 65), [1, u64::MAX]);
        assert_eq!(Kind::of(32), Kind::K32);
        assert_eq!(Kind::of(33), Kind::K64);
        assert_eq!(Kind::of(65), Kind::K128);
    }

    fn level(windows: u32) -> Level {
        Level {
            plen: 24,
            kind: Kind::K32,
            base: 0,
            windows,
            salt: Level::salt_of(0),
        }
    }

    #[test]
    fn tables_fill_to_their_load_and_take_updates() {
        // 10,000 keys at 85% of 8-slot buckets.
        let n = 10_000usize;
        let windows = (n as f64 / (WINDOW * 8) as f64 / Bucket32::LOAD).ceil() as u32;
        let level = level(windows);
        let mut buckets = vec![Bucket32::default(); level.buckets()];
        let mut seeds = vec![0u8; level.buckets()];
        let mut placer = Placer {
            buckets: &mut buckets,
            seeds: &mut seeds,
        };
        let mut keys: Vec<(u32, u32)> = (0..n as u32).map(|i| (i * 3, i + 1)).collect();
        let mut work = SeedWork::default();
        assert!(placer.fill(&level, &mut keys, &mut work));
        assert!(work.seeds_tried >= (n / 8) as u64);
        for i in 0..n as u32 {
            assert_eq!(placer.get(&level, i * 3), i + 1);
            assert_eq!(placer.get(&level, i * 3 + 1), 0);
        }
        // Removing and inserting keeps every other key where it is found.
        for i in 0..2_000u32 {
            assert!(placer.remove(&level, i * 3));
            assert!(!placer.remove(&level, i * 3));
        }
        for i in 0..2_500u32 {
            assert!(placer.insert(&level, 1_000_000 + i, 7, &mut work));
        }
        for i in 2_000..n as u32 {
            assert_eq!(placer.get(&level, i * 3), i + 1);
        }
        for i in 0..2_500u32 {
            assert_eq!(placer.get(&level, 1_000_000 + i), 7);
        }
        assert_eq!(placer.get(&level, 0), 0);
    }

    #[test]
    fn a_full_window_refuses_and_stays_intact() {
        let level = level(1);
        let mut buckets = vec![Bucket32::default(); WINDOW];
        let mut seeds = vec![0u8; WINDOW];
        let mut placer = Placer {
            buckets: &mut buckets,
            seeds: &mut seeds,
        };
        let mut work = SeedWork::default();
        let mut inserted = Vec::new();
        for key in 0..WINDOW as u32 * 8 + 1 {
            if placer.insert(&level, key, key + 1, &mut work) {
                inserted.push(key);
            } else {
                break;
            }
        }
        assert!(
            inserted.len() > WINDOW * 8 * 9 / 10,
            "{} of 512",
            inserted.len()
        );
        assert!(inserted.len() <= WINDOW * 8);
        let refused = inserted.len() as u32;
        assert!(!placer.insert(&level, refused, 1, &mut work) || inserted.len() < 512);
        for &key in &inserted {
            assert_eq!(placer.get(&level, key), key + 1);
        }
        assert!(work.windows_replaced > 0);
    }
}
