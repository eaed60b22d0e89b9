//! A forwarding table of either family, live or read from an image: the
//! one handle that callers outside Rust (the C library, the Python package)
//! hold, so that family dispatch and the live-or-image choice are written
//! once.
//!
//! - *Live* ([`FamilyFib::Live`]): a [`Fib`] built from a reference table
//!   by engine spec. It answers the matched prefix as well as the label and
//!   takes batches of changes while other threads look up.
//! - *Image* ([`FamilyFib::Image`]): a snapshot looked up in place from a
//!   memory-mapped image ([`crate::image`]). Opening it costs the checks,
//!   not a build; it answers labels only (an image holds no reference
//!   table) and cannot change.
//!
//! Lookups go through [`Fib::with_snapshot`] (no reference count taken),
//! so any number of threads can share one handle; batches of changes are
//! serialised by the [`Fib`]'s writer lock.

use std::path::Path;

use crate::addr::Family;
use crate::engine::{BuildError, Lookup};
use crate::error::Error;
use crate::fib::{Fib, Reader, UpdateSummary};
use crate::image::{Image, ImageError};
use crate::load::{FamilyPart, LoadedTable};
use crate::prefix::{Label, Prefix};
use crate::registry::ImageFamily;
use crate::rib::{Change, Rib};

pub use crate::choice::default_spec;

/// Addresses per batch of [`FamilyFib::lookup_iter`]: enough to keep the
/// engines' batch lookups busy, small enough that the batch and its answers
/// stay in L1.
pub const BATCH: usize = 64;

/// Addresses per call of the engine's batch lookup in
/// [`FamilyFib::lookup_slice`]: long enough that DXR's batch lookup runs
/// its prefetching loop (which needs 128 keys past a group) over nearly
/// every key, short enough that the answers stay in L2 (64 KiB) and that a
/// live table's snapshot is held only briefly.
// PERF: C bulk / Rust lookup_batch on 4M keys (c_vs_rust bench, dfz-v4-nh,
// dxr, machine loaded): median 0.76 with chunks of
// 2048, 0.87 with 8192; per-64-key lookup_iter 0.35-0.40.
pub const SLICE_CHUNK: usize = 8192;

/// Addresses per snapshot load in [`FamilyFib::lookup_words`]: the answers
/// go straight into the caller's array, so the chunk only bounds how long
/// a live table's snapshot is held (about half a millisecond) and how
/// often the engine's prefetch pipeline restarts.
pub const WORDS_CHUNK: usize = 1 << 16;

/// `look` on each run of [`WORDS_CHUNK`] keys and its answers (the unit
/// a live table's snapshot is taken for).
fn by_word_chunks<K>(keys: &[K], out: &mut [u64], mut look: impl FnMut(&[K], &mut [u64])) {
    for (keys, words) in keys.chunks(WORDS_CHUNK).zip(out.chunks_mut(WORDS_CHUNK)) {
        look(keys, words);
    }
}

/// One thread's reader of a [`FamilyFib`]: a live table's [`Reader`],
/// which checks for a newer snapshot with one atomic load per call (where
/// [`FamilyFib::lookup`] takes and releases a snapshot guard per call), or
/// an image's snapshot, which never changes. It keeps what it reads alive:
/// after its table is dropped it answers from the table's last snapshot.
pub enum FamilyReader<A: ImageFamily> {
    /// Reads a live table's newest snapshot.
    Live(Reader<A::Snapshot>),
    /// Reads an image in place.
    Image(A::Mapped),
}

impl<A: ImageFamily> FamilyReader<A> {
    /// The label of the longest prefix containing `addr`.
    #[inline]
    pub fn lookup(&mut self, addr: A) -> Option<Label> {
        match self {
            FamilyReader::Live(reader) => reader.lookup(addr),
            FamilyReader::Image(snapshot) => snapshot.lookup(addr),
        }
    }

    /// Looks up `addrs` into `out` as words, as [`FamilyFib::lookup_words`]
    /// (a live table's newest snapshot per [`WORDS_CHUNK`] addresses).
    ///
    /// # Panics
    /// If `out` is shorter than `addrs`.
    pub fn lookup_words(&mut self, addrs: &[A], out: &mut [u64]) {
        assert!(out.len() >= addrs.len(), "output slice shorter than input");
        match self {
            FamilyReader::Live(reader) => by_word_chunks(addrs, out, |keys, words| {
                reader.snapshot().lookup_batch_words(keys, words)
            }),
            FamilyReader::Image(snapshot) => snapshot.lookup_batch_words(addrs, out),
        }
    }

    /// [`Self::lookup_words`] on keys given as their network-order bytes
    /// (the C library's IPv6 keys), as [`FamilyFib::lookup_words_be`].
    ///
    /// # Panics
    /// If `out` is shorter than `keys`.
    pub fn lookup_words_be(&mut self, keys: &[A::Bytes], out: &mut [u64]) {
        assert!(out.len() >= keys.len(), "output slice shorter than input");
        match self {
            FamilyReader::Live(reader) => by_word_chunks(keys, out, |keys, words| {
                reader.snapshot().lookup_batch_words_be(keys, words)
            }),
            FamilyReader::Image(snapshot) => snapshot.lookup_batch_words_be(keys, out),
        }
    }
}

/// One family's table: live or from an image.
pub enum FamilyFib<A: ImageFamily> {
    /// Built from a reference table; changes can be applied.
    Live(Fib<A>),
    /// Read in place from an image.
    Image {
        /// The opened image (path and spec, for messages and statistics).
        image: Image,
        /// The snapshot over the image's bytes.
        snapshot: A::Mapped,
    },
}

impl<A: ImageFamily> FamilyFib<A> {
    /// Builds the engine `spec` from `rib`.
    pub fn build(spec: &str, rib: Rib<A>) -> Result<Self, BuildError> {
        Ok(FamilyFib::Live(Fib::new(spec, rib)?))
    }

    /// The snapshot saved in `image` (whose family must be `A`).
    pub fn open(image: Image) -> Result<Self, ImageError> {
        let snapshot = A::open_image(&image)?;
        Ok(FamilyFib::Image { image, snapshot })
    }

    /// The label of the longest prefix containing `addr`.
    #[inline]
    pub fn lookup(&self, addr: A) -> Option<Label> {
        match self {
            FamilyFib::Live(fib) => fib.with_snapshot(|snapshot| snapshot.lookup(addr)),
            FamilyFib::Image { snapshot, .. } => snapshot.lookup(addr),
        }
    }

    /// Looks up `addrs` into `out` (one snapshot for the whole slice).
    ///
    /// # Panics
    /// If `out` is shorter than `addrs`.
    #[inline]
    pub fn lookup_batch(&self, addrs: &[A], out: &mut [Option<Label>]) {
        match self {
            FamilyFib::Live(fib) => fib.with_snapshot(|snapshot| snapshot.lookup_batch(addrs, out)),
            FamilyFib::Image { snapshot, .. } => snapshot.lookup_batch(addrs, out),
        }
    }

    /// Looks up `addrs` into `out` as words: the label, or
    /// [`NO_ROUTE_WORD`](crate::labels::NO_ROUTE_WORD) (see
    /// [`Lookup::lookup_batch_words`]); a live table is read one snapshot
    /// per [`WORDS_CHUNK`] addresses. The C library's bulk lookup.
    ///
    /// # Panics
    /// If `out` is shorter than `addrs`.
    pub fn lookup_words(&self, addrs: &[A], out: &mut [u64]) {
        assert!(out.len() >= addrs.len(), "output slice shorter than input");
        match self {
            FamilyFib::Live(fib) => by_word_chunks(addrs, out, |keys, words| {
                fib.with_snapshot(|snapshot| snapshot.lookup_batch_words(keys, words))
            }),
            FamilyFib::Image { snapshot, .. } => snapshot.lookup_batch_words(addrs, out),
        }
    }

    /// [`Self::lookup_words`] on keys given as their network-order bytes
    /// (the C library's IPv6 keys, `struct in6_addr`): one snapshot per
    /// [`WORDS_CHUNK`] keys, each chunk through the engine's
    /// [`Lookup::lookup_batch_words_be`] (which swaps the bytes inside its
    /// vector walk where it has one, or converts
    /// [`CONVERT_CHUNK`](crate::engine::CONVERT_CHUNK) keys at a time).
    ///
    /// # Panics
    /// If `out` is shorter than `keys`.
    pub fn lookup_words_be(&self, keys: &[A::Bytes], out: &mut [u64]) {
        assert!(out.len() >= keys.len(), "output slice shorter than input");
        match self {
            FamilyFib::Live(fib) => by_word_chunks(keys, out, |keys, words| {
                fib.with_snapshot(|snapshot| snapshot.lookup_batch_words_be(keys, words))
            }),
            FamilyFib::Image { snapshot, .. } => snapshot.lookup_batch_words_be(keys, out),
        }
    }

    /// A reader for one thread ([`FamilyReader`]).
    pub fn reader(&self) -> FamilyReader<A> {
        match self {
            FamilyFib::Live(fib) => FamilyReader::Live(fib.reader()),
            FamilyFib::Image { snapshot, .. } => FamilyReader::Image(snapshot.clone()),
        }
    }

    /// Looks up every address `addrs` yields, [`BATCH`] at a time through
    /// [`Lookup::lookup_batch`] (so the engine keeps several lookups in
    /// flight), and hands each batch's answers to `write` with the position
    /// of its first address: the loop behind the bindings' bulk lookups,
    /// whatever their key and result representations.
    #[inline]
    pub fn lookup_iter(
        &self,
        addrs: impl IntoIterator<Item = A>,
        mut write: impl FnMut(usize, &[Option<Label>]),
    ) {
        let mut addrs = addrs.into_iter();
        let mut batch = [A::ZERO; BATCH];
        let mut found = [None; BATCH];
        let mut start = 0;
        loop {
            let mut n = 0;
            for (slot, addr) in batch.iter_mut().zip(addrs.by_ref()) {
                *slot = addr;
                n += 1;
            }
            if n == 0 {
                return;
            }
            self.lookup_batch(&batch[..n], &mut found[..n]);
            write(start, &found[..n]);
            start += n;
        }
    }

    /// Looks up a slice of addresses in chunks of [`SLICE_CHUNK`], each
    /// one call of the snapshot's own batch lookup (one snapshot per
    /// chunk), and hands each chunk's answers to `write` with the position
    /// of its first address: the bindings' bulk lookups over an array.
    pub fn lookup_slice(&self, addrs: &[A], mut write: impl FnMut(usize, &[Option<Label>])) {
        if addrs.len() <= BATCH {
            // A burst: no allocation, a small buffer to clear.
            let mut found = [None; BATCH];
            let found = &mut found[..addrs.len()];
            self.lookup_batch(addrs, found);
            write(0, found);
            return;
        }
        let mut found = vec![None; addrs.len().min(SLICE_CHUNK)];
        for (i, chunk) in addrs.chunks(SLICE_CHUNK).enumerate() {
            let found = &mut found[..chunk.len()];
            self.lookup_batch(chunk, found);
            write(i * SLICE_CHUNK, found);
        }
    }

    /// The longest matching prefix (`None` from an image, which holds no
    /// reference table) and its label, or `None` when no prefix matches.
    /// A live table answers from the reference trie: for reporting, not
    /// for every packet.
    pub fn lookup_prefix(&self, addr: A) -> Option<(Option<Prefix<A>>, Label)> {
        match self {
            FamilyFib::Live(fib) => fib
                .lookup_prefix(addr)
                .map(|(prefix, label)| (Some(prefix), label)),
            FamilyFib::Image { snapshot, .. } => snapshot.lookup(addr).map(|label| (None, label)),
        }
    }

    /// Applies a batch of changes (see [`Fib::apply`]); an image cannot
    /// change.
    pub fn apply(&self, changes: &[Change<A>]) -> Result<UpdateSummary, Error> {
        match self {
            FamilyFib::Live(fib) => Ok(fib.apply(changes)?),
            FamilyFib::Image { image, .. } => Err(Error::ReadOnlyImage {
                path: image.path().to_path_buf(),
            }),
        }
    }

    /// The engine's spec in canonical form.
    pub fn spec(&self) -> String {
        match self {
            FamilyFib::Live(fib) => fib.spec(),
            FamilyFib::Image { image, .. } => image.spec().to_string(),
        }
    }

    /// Bytes the lookup structures occupy (for an image: the mapped
    /// arrays, shared with every process that maps the same file).
    pub fn memory_bytes(&self) -> usize {
        match self {
            FamilyFib::Live(fib) => fib.with_snapshot(|snapshot| snapshot.memory_bytes()),
            FamilyFib::Image { snapshot, .. } => snapshot.memory_bytes(),
        }
    }

    /// Prefixes in the reference table; `None` for an image.
    pub fn prefixes(&self) -> Option<usize> {
        match self {
            FamilyFib::Live(fib) => Some(fib.with_rib(Rib::len)),
            FamilyFib::Image { .. } => None,
        }
    }

    /// Batches published so far (0 for an image).
    pub fn version(&self) -> u64 {
        match self {
            FamilyFib::Live(fib) => fib.version(),
            FamilyFib::Image { .. } => 0,
        }
    }
}

/// A table of either family, live or from an image.
pub enum AnyFib {
    /// An IPv4 table.
    V4(FamilyFib<u32>),
    /// An IPv6 table.
    V6(FamilyFib<u128>),
}

/// Runs `$body` with `$fib` bound to the family's [`FamilyFib`].
macro_rules! each_family {
    ($any:expr, $fib:ident => $body:expr) => {
        match $any {
            AnyFib::V4($fib) => $body,
            AnyFib::V6($fib) => $body,
        }
    };
}

impl AnyFib {
    /// Builds the engine `spec` (default: [`default_spec`]) from the
    /// prefixes of `family` in `table` (default: IPv4 if the table has
    /// any, else IPv6).
    pub fn build(
        table: &LoadedTable,
        family: Option<Family>,
        spec: Option<&str>,
    ) -> Result<AnyFib, BuildError> {
        let family = family.unwrap_or(if table.v4.is_empty() {
            Family::V6
        } else {
            Family::V4
        });
        let spec = spec.unwrap_or(default_spec(family));
        Ok(match family {
            Family::V4 => AnyFib::V4(FamilyFib::build(spec, u32::rib(table).clone())?),
            Family::V6 => AnyFib::V6(FamilyFib::build(spec, u128::rib(table).clone())?),
        })
    }

    /// Maps the image at `path`, validates it and opens its snapshot.
    pub fn open_image(path: &Path) -> Result<AnyFib, ImageError> {
        let image = Image::open(path)?;
        Ok(match image.family() {
            Family::V4 => AnyFib::V4(FamilyFib::open(image)?),
            Family::V6 => AnyFib::V6(FamilyFib::open(image)?),
        })
    }

    /// The address family.
    pub fn family(&self) -> Family {
        match self {
            AnyFib::V4(_) => Family::V4,
            AnyFib::V6(_) => Family::V6,
        }
    }

    /// Whether the table was opened from an image.
    pub fn is_image(&self) -> bool {
        each_family!(self, fib => matches!(fib, FamilyFib::Image { .. }))
    }

    /// The engine's spec in canonical form.
    pub fn spec(&self) -> String {
        each_family!(self, fib => fib.spec())
    }

    /// Bytes the lookup structures occupy.
    pub fn memory_bytes(&self) -> usize {
        each_family!(self, fib => fib.memory_bytes())
    }

    /// Prefixes in the reference table; `None` for an image.
    pub fn prefixes(&self) -> Option<usize> {
        each_family!(self, fib => fib.prefixes())
    }

    /// Batches published so far (0 for an image).
    pub fn version(&self) -> u64 {
        each_family!(self, fib => fib.version())
    }

    /// The error for an address array of the other family.
    pub fn wrong_family(&self, given: Family) -> String {
        format!(
            "{given} addresses given to an {} table (use the {} functions or a table of that family)",
            self.family(),
            self.family()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::CONVERT_CHUNK;
    use crate::load::{read_table, Input, LoadOptions};

    fn table() -> LoadedTable {
        let text = "10.0.0.0/8 1\n10.1.0.0/16 2\n2001:db8::/32 3\n";
        read_table(
            Input::from_bytes(text.as_bytes().to_vec(), "t.txt").unwrap(),
            &LoadOptions::default(),
        )
        .unwrap()
    }

    #[test]
    fn live_tables_answer_prefixes_and_change() {
        let table = table();
        let AnyFib::V4(v4) = AnyFib::build(&table, None, Some("dir24-8")).unwrap() else {
            panic!("a table with IPv4 prefixes builds IPv4 by default");
        };
        assert_eq!(v4.lookup(0x0a01_0203), Some(2));
        assert_eq!(
            v4.lookup_prefix(0x0a02_0000),
            Some((Some("10.0.0.0/8".parse().unwrap()), 1))
        );
        let mut out = [None; 3];
        v4.lookup_batch(&[0x0a01_0000, 0x0b00_0000, 0x0a00_0001], &mut out);
        assert_eq!(out, [Some(2), None, Some(1)]);
        // Every length, across batch boundaries, equals per-key lookups.
        let addrs: Vec<u32> = (0..300u32).map(|i| 0x09ff_0000 + i * 0x0000_9100).collect();
        for n in [
            0,
            1,
            BATCH - 1,
            BATCH,
            BATCH + 1,
            2 * BATCH + 7,
            addrs.len(),
        ] {
            let mut answers = vec![Some(u32::MAX); n];
            v4.lookup_iter(addrs[..n].iter().copied(), |start, found| {
                answers[start..start + found.len()].copy_from_slice(found);
            });
            let expected: Vec<_> = addrs[..n].iter().map(|&a| v4.lookup(a)).collect();
            assert_eq!(answers, expected, "{n} addresses");
        }
        let summary = v4
            .apply(&[Change::Withdraw("10.1.0.0/16".parse().unwrap())])
            .unwrap();
        assert_eq!((summary.effective, v4.version()), (1, 1));
        assert_eq!(v4.lookup(0x0a01_0203), Some(1));
        assert_eq!(v4.prefixes(), Some(1));

        let v6 = AnyFib::build(&table, Some(Family::V6), None).unwrap();
        assert_eq!(v6.family(), Family::V6);
        assert!(
            v6.spec().starts_with(crate::default_spec(Family::V6)),
            "{}",
            v6.spec()
        );
        assert!(v6.wrong_family(Family::V4).contains("IPv4 addresses"));
        let err = AnyFib::build(&table, Some(Family::V6), Some("dir24-8"))
            .err()
            .unwrap();
        assert!(err.to_string().contains("does not support IPv6"), "{err}");
    }

    #[test]
    fn images_answer_labels_only_and_refuse_changes() {
        let table = table();
        let path = std::env::temp_dir().join(format!("fibkit-any-{}.fib", std::process::id()));
        crate::registry::save_image("dir24-8", &table.v4, &path).unwrap();
        let any = AnyFib::open_image(&path).unwrap();
        assert!(any.is_image() && any.prefixes().is_none());
        assert_eq!(any.spec(), "dir24-8");
        let AnyFib::V4(v4) = &any else {
            panic!("an IPv4 image opens as IPv4");
        };
        assert_eq!(v4.lookup_prefix(0x0a01_0203), Some((None, 2)));
        let err = v4
            .apply(&[Change::Withdraw("10.1.0.0/16".parse().unwrap())])
            .unwrap_err();
        assert!(err.to_string().contains("cannot change"), "{err}");
        std::fs::remove_file(&path).unwrap();
    }

    /// `fib`'s words for the first `n` of `bytes` (the network-order form
    /// of `keys`), for each of `lengths`, live and through a reader,
    /// against its per-key answers.
    fn check_network_order<A: ImageFamily>(
        spec: &str,
        fib: &FamilyFib<A>,
        keys: &[A],
        bytes: &[A::Bytes],
        lengths: impl IntoIterator<Item = usize>,
    ) {
        let mut reader = fib.reader();
        for n in lengths {
            let want: Vec<u64> = keys[..n]
                .iter()
                .map(|&k| crate::labels::word_of(fib.lookup(k)))
                .collect();
            let mut words = vec![7u64; n];
            fib.lookup_words_be(&bytes[..n], &mut words);
            assert_eq!(words, want, "{spec}, {n} keys");
            let mut words = vec![7u64; n];
            reader.lookup_words_be(&bytes[..n], &mut words);
            assert_eq!(words, want, "{spec}, {n} keys through a reader");
        }
    }

    /// Network-order keys give every key its own word, at every length
    /// around the burst, run and vector group sizes, live and through a
    /// reader, for an engine that swaps the bytes in its vector walk
    /// (`poptrie` on AVX-512), one that writes words from host-order keys
    /// (`dxr6`) and one that converts answers (`radix`); keys deep enough
    /// that a walk reads their low 64 bits.
    #[test]
    fn network_order_keys_answer_as_host_order_keys() {
        let mut rib = Rib::<u128>::new();
        rib.insert("2001:db8::/32".parse().unwrap(), 3);
        rib.insert("2001:db8:1::/48".parse().unwrap(), 4);
        rib.insert("2001:db8:1:2::/64".parse().unwrap(), u32::MAX);
        rib.insert("2001:db8:1:2:8000::/66".parse().unwrap(), 5);
        rib.insert("2001:db8:1:2::1:0/112".parse().unwrap(), 6);
        rib.insert("2001:db8:1:2::1:7/128".parse().unwrap(), 7);
        let mut keys: Vec<u128> = (0..200u128)
            .map(|i| {
                (0x2001_0db8_0001_0002u128 << 64)
                    .wrapping_add(i.wrapping_mul(0x9e37_79b9_7f4a_7c15 << 40))
            })
            .collect();
        let deep = 0x2001_0db8_0001_0002_0000_0000_0001_0000u128;
        for (i, key) in keys.iter_mut().enumerate().step_by(3) {
            *key = deep + (i as u128 % 11) + ((i as u128 % 2) << 63);
        }
        for (i, key) in keys.iter_mut().enumerate().skip(1).step_by(7) {
            *key = (0x2001_0db8_ff00u128 << 80) + i as u128;
        }
        for (i, key) in keys.iter_mut().enumerate().skip(2).step_by(7) {
            *key = (0x2001_0db8_0001_ff00u128 << 64) + i as u128;
        }
        for (i, key) in keys.iter_mut().enumerate().skip(4).step_by(7) {
            *key = (0x2001_0db8_0001_0002_4000u128 << 48) + i as u128;
        }
        let bytes: Vec<[u8; 16]> = keys.iter().map(|k| k.to_be_bytes()).collect();
        for spec in layouts(Family::V6) {
            let fib = FamilyFib::build(spec, rib.clone()).unwrap();
            let lengths = (0..=70).chain([CONVERT_CHUNK * 3 + 1, keys.len()]);
            check_network_order(spec, &fib, &keys, &bytes, lengths);
            for label in [3, 4, 5, 6, 7, u32::MAX] {
                assert!(
                    keys.iter().any(|&k| fib.lookup(k) == Some(label)),
                    "{spec}: {label}"
                );
            }
            assert!(keys.iter().any(|&k| fib.lookup(k).is_none()));
        }
    }

    /// Every engine's test layouts for `family`, from the registry.
    fn layouts(family: Family) -> Vec<&'static str> {
        crate::registry::ENGINES
            .iter()
            .flat_map(|info| info.layouts)
            .filter(|layout| layout.supports(family))
            .map(|layout| layout.spec)
            .collect()
    }

    /// IPv4 keys as network-order bytes (the default conversion) answer as
    /// host-order ones.
    #[test]
    fn network_order_ipv4_keys_answer_as_host_order_keys() {
        let table = table();
        let keys: Vec<u32> = (0..300u32)
            .map(|i| 0x0a01_0000 ^ i.wrapping_mul(0x9e37_79b9))
            .collect();
        let bytes: Vec<[u8; 4]> = keys.iter().map(|k| k.to_be_bytes()).collect();
        for spec in layouts(Family::V4) {
            let fib = FamilyFib::build(spec, table.v4.clone()).unwrap();
            check_network_order(spec, &fib, &keys, &bytes, [0, 1, 8, 9, 33, keys.len()]);
        }
    }
}
