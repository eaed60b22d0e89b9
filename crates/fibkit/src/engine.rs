//! The engine contract: what lookups read ([`Lookup`]) apart from what
//! builds and updates need ([`Updater`]).
//!
//! An engine is two types. Its *snapshot* is the read-optimised data plane:
//! immutable once published, `Sync`, holding only what lookups touch, and
//! generic over its [`Storage`](crate::storage::Storage) so it can live in
//! owned vectors or on a memory map. Its *updater* owns the build state
//! (label indices, free lists, reference counts, dedup maps) and turns a
//! batch of changes to the reference table into the next snapshot, as
//! FreeBSD's DXR keeps `struct dxr` apart from `struct dxr_aux`. The
//! [`Fib`](crate::Fib) handle publishes snapshots to lock-free readers.

use std::fmt;

use crate::addr::Addr;
use crate::labels::word_of;
use crate::prefix::{Label, Prefix};
use crate::rib::Rib;
use crate::spec::EngineSpec;

pub use crate::error::BuildError;

/// A longest-prefix-match lookup structure for addresses of type `A`: what
/// an engine's snapshot answers. Lookups never fail: the build establishes
/// every invariant they rely on.
pub trait Lookup<A: Addr>: Send + Sync {
    /// The label of the longest prefix containing `addr`, or `None`.
    fn lookup(&self, addr: A) -> Option<Label>;

    /// Looks up every address of `addrs` into the same position of `out`.
    /// Engines override it to keep several lookups in flight (prefetching);
    /// the default is [`Lookup::lookup_each`].
    ///
    /// # Panics
    /// If `out` is shorter than `addrs`.
    fn lookup_batch(&self, addrs: &[A], out: &mut [Option<Label>]) {
        self.lookup_each(addrs, out);
    }

    /// The plain loop: one [`Lookup::lookup`] per address, in order. Not
    /// meant to be overridden: as a provided method it is compiled for each
    /// engine, so a caller holding a `&dyn Lookup` pays one dynamic call per
    /// slice, not per address.
    ///
    /// # Panics
    /// If `out` is shorter than `addrs`.
    fn lookup_each(&self, addrs: &[A], out: &mut [Option<Label>]) {
        assert!(out.len() >= addrs.len(), "output slice shorter than input");
        for (addr, result) in addrs.iter().zip(out.iter_mut()) {
            *result = self.lookup(*addr);
        }
    }

    /// Dependent lookups (the DXR thesis' SEQ pattern): address `i` is
    /// `addrs[i]` XORed with the label found for address `i - 1` (0 for
    /// none), so each lookup waits for the previous one. `seed` is XORed
    /// into the first address. Returns the last label (or 0), to chain calls.
    ///
    /// # Panics
    /// If `out` is shorter than `addrs`.
    fn lookup_chained(&self, addrs: &[A], out: &mut [Option<Label>], seed: Label) -> Label {
        assert!(out.len() >= addrs.len(), "output slice shorter than input");
        let mut previous = seed;
        for (addr, result) in addrs.iter().zip(out.iter_mut()) {
            let label = self.lookup(*addr ^ A::from_u64(previous as u64));
            *result = label;
            previous = label.unwrap_or(0);
        }
        previous
    }

    /// [`Lookup::lookup_batch`] with each answer written as a 64-bit word:
    /// the label, or [`NO_ROUTE_WORD`](crate::labels::NO_ROUTE_WORD) (the C library's bulk results, laid
    /// out as DPDK's `rte_fib_lookup_bulk` writes them). Engines whose
    /// batch loop is generic over [`Answer`](crate::labels::Answer) write
    /// the words from that loop; the default runs
    /// [`Lookup::lookup_batch`] on chunks and converts each chunk.
    ///
    /// # Panics
    /// If `out` is shorter than `addrs`.
    fn lookup_batch_words(&self, addrs: &[A], out: &mut [u64]) {
        assert!(out.len() >= addrs.len(), "output slice shorter than input");
        // A burst gets a buffer of its own size class: clearing the 8 KiB
        // one on every call of a few keys costs more than their lookups.
        // Otherwise chunks of 1024 keys keep an engine's prefetch pipeline
        // running for most of each chunk while the answers (8 KiB) stay in
        // L1 for the conversion.
        if addrs.len() <= 64 {
            words_through::<A, Self, 64>(self, addrs, out);
        } else {
            words_through::<A, Self, 1024>(self, addrs, out);
        }
    }

    /// [`Lookup::lookup_batch_words`] on keys given as their network-order
    /// bytes ([`Addr::Bytes`]: the C library's `struct in6_addr` keys, a
    /// numpy `(n, 16)` `uint8` array). Engines whose batch reads its keys
    /// in a vector register swap the bytes there; the default is
    /// [`words_from_bytes`].
    ///
    /// # Panics
    /// If `out` is shorter than `keys`.
    fn lookup_batch_words_be(&self, keys: &[A::Bytes], out: &mut [u64]) {
        words_from_bytes(self, keys, out);
    }

    /// Bytes of memory the lookup structures occupy.
    fn memory_bytes(&self) -> usize;
}

/// Keys turned from network-order bytes into addresses per
/// [`Lookup::lookup_batch_words_be`] call of the default path.
///
/// A batch reads its keys inside the walk, where the core overlaps their
/// misses with the walk's; converting a long run of them first reads them
/// in a loop of their own. With 32-key runs the C library's IPv6 keys ran
/// at 0.76-0.81x (`poptrie`) and 0.91-0.93x (`dxr6`) the batch on
/// host-order keys, against 0.63-0.72x and 0.80-0.83x with 1024-key runs
/// (docs/bench/c-library.md, "The C library's IPv6 keys converted 32 at a
/// time").
pub const CONVERT_CHUNK: usize = 32;

/// The default [`Lookup::lookup_batch_words_be`]: `engine`'s
/// [`Lookup::lookup_batch_words`] on the keys turned into addresses,
/// [`CONVERT_CHUNK`] at a time. A burst of at most 8 takes a buffer of its
/// own size: every call clears its buffer, and clearing a larger one cost
/// a burst more than its lookups (docs/bench/c-library.md, "C bursts of IPv6
/// keys"). Public so that an engine's override can fall back to it.
///
/// # Panics
/// If `out` is shorter than `keys`.
pub fn words_from_bytes<A: Addr, L: Lookup<A> + ?Sized>(
    engine: &L,
    keys: &[A::Bytes],
    out: &mut [u64],
) {
    fn through<A: Addr, L: Lookup<A> + ?Sized, const N: usize>(
        engine: &L,
        keys: &[A::Bytes],
        out: &mut [u64],
    ) {
        let mut buffer = [A::ZERO; N];
        for (keys, words) in keys.chunks(N).zip(out.chunks_mut(N)) {
            let addrs = &mut buffer[..keys.len()];
            for (addr, bytes) in addrs.iter_mut().zip(keys) {
                *addr = A::from_be_bytes(*bytes);
            }
            engine.lookup_batch_words(addrs, words);
        }
    }
    assert!(out.len() >= keys.len(), "output slice shorter than input");
    if keys.len() <= 8 {
        through::<A, L, 8>(engine, keys, out);
    } else {
        through::<A, L, CONVERT_CHUNK>(engine, keys, out);
    }
}

/// [`Lookup::lookup_batch_words`] through a buffer of `N` answers:
/// `lookup_batch` on chunks of `N` keys, each chunk's answers converted.
fn words_through<A: Addr, L: Lookup<A> + ?Sized, const N: usize>(
    engine: &L,
    addrs: &[A],
    out: &mut [u64],
) {
    let mut found = [None; N];
    for (keys, words) in addrs.chunks(N).zip(out.chunks_mut(N)) {
        let found = &mut found[..keys.len()];
        engine.lookup_batch(keys, found);
        for (word, answer) in words.iter_mut().zip(found.iter()) {
            *word = word_of(*answer);
        }
    }
}

/// The methods of a [`Lookup`] impl that hands every call to an inner
/// snapshot: the one forwarder of the crate, so a method added to the
/// trait is forwarded by every wrapper at once and none answers through
/// the trait's default where its inner snapshot has a faster path.
///
/// - `forward_lookup!(|this| inner)`: a wrapper of one snapshot (a
///   reference, an `Arc`, a handle), reached as `inner` from `this`, the
///   impl's `self` (`&**this`, `&this.snapshot`); the impl's address
///   type must be named `A`.
/// - `forward_lookup!(Addr; match self { Pattern(s) => s, ... })`: an enum
///   over engines (the registry's snapshots, `auto`'s, `cpe`'s layouts):
///   one `match` per call, per key for `lookup` and per slice for the
///   slice methods.
///
/// The wrappers' test in this module checks every method against a probe
/// that answers each one differently.
macro_rules! forward_lookup {
    (|$this:ident| $inner:expr) => {
        $crate::engine::forward_lookup!(A; match self { $this => $inner });
    };
    ($A:ty; match self { $( $pat:pat => $inner:expr ),+ $(,)? }) => {
        #[inline(always)]
        fn lookup(&self, addr: $A) -> Option<$crate::prefix::Label> {
            match self { $( $pat => $crate::engine::Lookup::<$A>::lookup($inner, addr), )+ }
        }
        #[inline]
        fn lookup_batch(&self, addrs: &[$A], out: &mut [Option<$crate::prefix::Label>]) {
            match self { $( $pat => $crate::engine::Lookup::<$A>::lookup_batch($inner, addrs, out), )+ }
        }
        #[inline]
        fn lookup_each(&self, addrs: &[$A], out: &mut [Option<$crate::prefix::Label>]) {
            match self { $( $pat => $crate::engine::each_apart::<$A, _>($inner, addrs, out), )+ }
        }
        #[inline]
        fn lookup_chained(
            &self,
            addrs: &[$A],
            out: &mut [Option<$crate::prefix::Label>],
            seed: $crate::prefix::Label,
        ) -> $crate::prefix::Label {
            match self { $( $pat => $crate::engine::Lookup::<$A>::lookup_chained($inner, addrs, out, seed), )+ }
        }
        #[inline]
        fn lookup_batch_words(&self, addrs: &[$A], out: &mut [u64]) {
            match self { $( $pat => $crate::engine::Lookup::<$A>::lookup_batch_words($inner, addrs, out), )+ }
        }
        #[inline]
        fn lookup_batch_words_be(
            &self,
            keys: &[<$A as $crate::addr::Addr>::Bytes],
            out: &mut [u64],
        ) {
            match self { $( $pat => $crate::engine::Lookup::<$A>::lookup_batch_words_be($inner, keys, out), )+ }
        }
        fn memory_bytes(&self) -> usize {
            match self { $( $pat => $crate::engine::Lookup::<$A>::memory_bytes($inner), )+ }
        }
    };
}
pub(crate) use forward_lookup;

/// The inner snapshot's per-key loop as a function of its own: the
/// forwarders call it so that an enum's arms do not inline every engine's
/// loop into one function, where the loop under way shares registers with
/// the others'.
#[inline(never)]
#[doc(hidden)]
pub fn each_apart<A: Addr, L: Lookup<A> + ?Sized>(
    engine: &L,
    addrs: &[A],
    out: &mut [Option<Label>],
) {
    engine.lookup_each(addrs, out)
}

impl<A: Addr, L: Lookup<A> + ?Sized> Lookup<A> for &L {
    forward_lookup!(|this| &**this);
}

impl<A: Addr, L: Lookup<A> + ?Sized> Lookup<A> for std::sync::Arc<L> {
    forward_lookup!(|this| &**this);
}

/// One layout of an engine that the shared test suite builds on every
/// family it names (an engine lists its default and the layouts whose
/// code paths differ, in [`EngineConfig::LAYOUTS`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The spec.
    pub spec: &'static str,
    /// Whether it is built and checked on IPv4 tables.
    pub ipv4: bool,
    /// Whether it is built and checked on IPv6 tables.
    pub ipv6: bool,
}

impl Layout {
    /// A layout checked on both families.
    pub const fn both(spec: &'static str) -> Self {
        Layout {
            spec,
            ipv4: true,
            ipv6: true,
        }
    }

    /// A layout checked on IPv4 tables only.
    pub const fn v4(spec: &'static str) -> Self {
        Layout {
            spec,
            ipv4: true,
            ipv6: false,
        }
    }

    /// A layout checked on IPv6 tables only.
    pub const fn v6(spec: &'static str) -> Self {
        Layout {
            spec,
            ipv4: false,
            ipv6: true,
        }
    }

    /// Whether the layout is checked on tables of `family`.
    pub fn supports(&self, family: crate::addr::Family) -> bool {
        match family {
            crate::addr::Family::V4 => self.ipv4,
            crate::addr::Family::V6 => self.ipv6,
        }
    }
}

/// An engine's parameters, parsed once from its spec string (`dxr:k=20`)
/// and printed back in canonical form by `Display`.
pub trait EngineConfig: Clone + fmt::Debug + fmt::Display + Send + Sync + 'static {
    /// The names the spec may use for this engine (the first is canonical).
    const NAMES: &'static [&'static str];

    /// Its parameters and what the engine is, in one line of `--help`.
    const ABOUT: &'static str;

    /// The layouts the shared test suite checks: the default spec first,
    /// then those whose code paths differ.
    const LAYOUTS: &'static [Layout];

    /// Further layouts the fuzz targets cover (checked on fuzzed tables,
    /// not on every real one).
    const MORE_LAYOUTS: &'static [Layout] = &[];

    /// Whether the engine's lookups take vector paths that
    /// `FIBKIT_MAX_SIMD` caps ([`crate::cpu`]).
    const VECTOR_PATHS: bool = false;

    /// Reads the parameters of `spec`, whose name is one of [`Self::NAMES`].
    fn from_spec(spec: &EngineSpec) -> Result<Self, BuildError>;

    /// Parses a whole spec string for this engine.
    fn parse(text: &str) -> Result<Self, BuildError> {
        let spec = EngineSpec::parse(text)?;
        if !Self::NAMES.contains(&spec.name.as_str()) {
            return Err(spec.error(format!("expected engine `{}`", Self::NAMES[0])));
        }
        Self::from_spec(&spec)
    }
}

/// Changes a batch may hold beyond the prefixes left in the table and
/// still be patched ([`Updater::builds_anew`]): such a batch costs at most
/// a few milliseconds either way, and patching it keeps a small table's
/// history (an engine's in-place state, its free lists) as its updates
/// made it.
pub const SMALL_BATCH: usize = 1024;

/// The rule of [`Updater::builds_anew`] for an engine whose build writes
/// `fixed_entries` entries whatever the table holds (a direct table),
/// counted as a prefix per 256 entries.
pub(crate) fn larger_than_table(changed: usize, prefixes: usize, fixed_entries: usize) -> bool {
    changed > prefixes + SMALL_BATCH + fixed_entries / 256
}

/// An engine's build state: builds the first snapshot from a reference
/// table and brings a snapshot in line after changes. `Clone`, so that a
/// [`Fib`](crate::Fib) can keep one updater per snapshot it patches.
pub trait Updater<A: Addr>: Clone + Send + Sync + Sized + 'static {
    /// The engine's parameters.
    type Config: EngineConfig;
    /// What lookups read.
    type Snapshot: Lookup<A> + Clone + 'static;
    /// The engine's statistics.
    type Stats: EngineStats;

    /// Builds the updater and the first snapshot from `rib`.
    fn build(config: &Self::Config, rib: &Rib<A>) -> Result<(Self, Self::Snapshot), BuildError>;

    /// The parameters it was built with (configs are small; a copy keeps
    /// the run-time engine enums free of a second copy of their own).
    fn config(&self) -> Self::Config;

    /// Whether [`Updater::update`] patches a snapshot (the handle then
    /// hands it one no reader sees) rather than always answering
    /// [`BuildError::UpdateUnsupported`] (the handle then rebuilds).
    fn patches(&self) -> bool {
        false
    }

    /// Whether the handles build a batch anew instead of patching it: a
    /// batch that changed `changed` distinct prefixes and left `prefixes`
    /// in the table. The default: more prefixes changed than the table
    /// holds after the batch, plus [`SMALL_BATCH`]. A build then handles
    /// fewer prefixes than the patch, which at least visits each change,
    /// and a patch that withdraws most of a table, or grows a small one
    /// many times over, cost up to 52 times the reference table's update
    /// and a build (docs/bench/updates.md, "Batches larger than the table").
    /// An engine whose build has a large fixed part (a direct table of
    /// millions of entries) counts it as prefixes. When the build fails (a
    /// layout limit), the handles patch after all, so a batch fails only
    /// where both would.
    fn builds_anew(&self, changed: usize, prefixes: usize) -> bool {
        larger_than_table(changed, prefixes, 0)
    }

    /// Brings `snapshot` in line with `rib` after the prefixes in `changed`
    /// (sorted, distinct) were inserted, removed or relabelled there; a
    /// prefix may be listed whose net change is nil (changed and changed
    /// back within a batch, or across the two batches a [`crate::Fib`]
    /// replays when it catches a spare snapshot up). `snapshot` is a
    /// private copy equal to the last snapshot this updater (or the clone
    /// it was made from) built or updated. On an error both are unusable and the caller
    /// rebuilds; [`BuildError::UpdateUnsupported`] (the default) asks for a
    /// rebuild.
    fn update(
        &mut self,
        snapshot: &mut Self::Snapshot,
        rib: &Rib<A>,
        changed: &[Prefix<A>],
    ) -> Result<(), BuildError> {
        let _ = (snapshot, rib, changed);
        Err(BuildError::UpdateUnsupported {
            engine: self.config().to_string(),
        })
    }

    /// Statistics of the engine with its current `snapshot`.
    fn stats(&self, snapshot: &Self::Snapshot) -> Self::Stats;

    /// The work `snapshot` does per lookup over `addrs`, counted by the
    /// engine's counting path, as `(name, average)` rows (`bloom`: filter
    /// bits, hashes, exact-table lookups and fallbacks; `lctrie`: key
    /// vectors, backtracking steps and cache lines; `bspl`: tables probed);
    /// `None` (the default) for engines that do not count.
    fn lookup_work(snapshot: &Self::Snapshot, addrs: &[A]) -> Option<Vec<(String, String)>> {
        let _ = (snapshot, addrs);
        None
    }
}

/// An engine's statistics: a typed value (fields a program reads) that
/// prints as `name: value` rows.
pub trait EngineStats: fmt::Debug + serde::Serialize + Send {
    /// The statistics as `(name, value)` rows, in print order.
    fn rows(&self) -> Vec<(String, String)>;
}

/// Statistics of an engine with nothing to report beyond its footprint.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct NoStats {}

impl EngineStats for NoStats {
    fn rows(&self) -> Vec<(String, String)> {
        Vec::new()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Answers every method of [`Lookup`] with its own marker, so a
    /// wrapper that answers one through the trait's default (which calls
    /// `lookup` or `lookup_batch` instead) gives another marker.
    pub(crate) struct Probe;

    impl Lookup<u32> for Probe {
        fn lookup(&self, _addr: u32) -> Option<Label> {
            Some(1)
        }
        fn lookup_batch(&self, addrs: &[u32], out: &mut [Option<Label>]) {
            out[..addrs.len()].fill(Some(2));
        }
        fn lookup_each(&self, addrs: &[u32], out: &mut [Option<Label>]) {
            out[..addrs.len()].fill(Some(3));
        }
        fn lookup_chained(&self, addrs: &[u32], out: &mut [Option<Label>], _seed: Label) -> Label {
            out[..addrs.len()].fill(Some(4));
            4
        }
        fn lookup_batch_words(&self, addrs: &[u32], out: &mut [u64]) {
            out[..addrs.len()].fill(5);
        }
        fn lookup_batch_words_be(&self, keys: &[[u8; 4]], out: &mut [u64]) {
            out[..keys.len()].fill(6);
        }
        fn memory_bytes(&self) -> usize {
            7
        }
    }

    /// An enum over engines, forwarded as the registry's and `auto`'s are.
    enum Either {
        Left(Probe),
        Right(Probe),
    }

    impl Lookup<u32> for Either {
        forward_lookup!(u32; match self { Either::Left(s) => s, Either::Right(s) => s });
    }

    pub(crate) fn assert_forwards(engine: &impl Lookup<u32>, what: &str) {
        let addrs = [1u32, 2, 3];
        let mut out = [None; 3];
        let mut words = [0u64; 3];
        assert_eq!(engine.lookup(9), Some(1), "{what}: lookup");
        engine.lookup_batch(&addrs, &mut out);
        assert_eq!(out, [Some(2); 3], "{what}: lookup_batch");
        engine.lookup_each(&addrs, &mut out);
        assert_eq!(out, [Some(3); 3], "{what}: lookup_each");
        assert_eq!(
            engine.lookup_chained(&addrs, &mut out, 0),
            4,
            "{what}: lookup_chained"
        );
        assert_eq!(out, [Some(4); 3], "{what}: lookup_chained");
        engine.lookup_batch_words(&addrs, &mut words);
        assert_eq!(words, [5; 3], "{what}: lookup_batch_words");
        engine.lookup_batch_words_be(&[[0; 4]; 3], &mut words);
        assert_eq!(words, [6; 3], "{what}: lookup_batch_words_be");
        assert_eq!(engine.memory_bytes(), 7, "{what}: memory_bytes");
    }

    #[test]
    fn every_wrapper_forwards_every_method() {
        assert_forwards(&Probe, "the probe itself");
        assert_forwards(&&Probe, "a reference");
        assert_forwards(&std::sync::Arc::new(Probe), "an Arc");
        assert_forwards(&Either::Left(Probe), "an enum's first variant");
        assert_forwards(&Either::Right(Probe), "an enum's second variant");
    }
}
