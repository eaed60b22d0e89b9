//! The registry: every engine fibkit has, per address family, behind one
//! enum whose lookups dispatch with a `match` (so a per-key lookup is
//! inlined into the caller's loop instead of going through a dynamic call),
//! and the spec strings that choose among them at run time.
//!
//! For each family the registry defines four enums with one variant per
//! engine: the updater ([`EngineV4`], [`EngineV6`]), the snapshot
//! ([`SnapshotV4`], [`SnapshotV6`]), the parsed spec ([`ConfigV4`],
//! [`ConfigV6`]) and the statistics ([`StatsV4`], [`StatsV6`]).
//! [`EngineFamily`] names them for generic code.

use std::fmt;

use crate::addr::{Addr, Family};
use crate::engine::{BuildError, EngineConfig, EngineStats, Lookup, Updater};
use crate::engines;
use crate::image::{Image, ImageError, Mapped, SectionData};
use crate::prefix::{Label, Prefix};
use crate::rib::Rib;
use crate::spec::EngineSpec;

/// A registered engine: its name, families and one-line description.
#[derive(Clone, Copy, Debug)]
pub struct EngineInfo {
    /// The spec name.
    pub name: &'static str,
    /// Whether it builds IPv4 tables.
    pub ipv4: bool,
    /// Whether it builds IPv6 tables.
    pub ipv6: bool,
    /// Parameters and what the engine is.
    pub about: &'static str,
}

impl EngineInfo {
    /// Whether the engine builds tables of `family`.
    pub fn supports(&self, family: Family) -> bool {
        match family {
            Family::V4 => self.ipv4,
            Family::V6 => self.ipv6,
        }
    }
}

/// Code generic over the engine that a registry snapshot runs with the
/// engine's own type ([`SnapshotV4::dispatch`], [`SnapshotV6::dispatch`]).
///
/// ```
/// use fibkit::{Lookup, LookupVisitor, Prefix, Rib};
///
/// /// Counts the addresses that have a route.
/// struct CountRouted<'a>(&'a [u32]);
///
/// impl LookupVisitor<u32> for CountRouted<'_> {
///     type Output = usize;
///     fn visit<L: Lookup<u32>>(self, engine: &L) -> usize {
///         // Compiled once per engine: `engine.lookup` is inlined here.
///         self.0.iter().filter(|&&addr| engine.lookup(addr).is_some()).count()
///     }
/// }
///
/// let mut rib = Rib::<u32>::new();
/// rib.insert("10.0.0.0/8".parse::<Prefix<u32>>()?, 1);
/// let snapshot = fibkit::build("dxr", &rib)?;
/// let addrs = [0x0a00_0001, 0x0b00_0001];
/// assert_eq!(snapshot.dispatch(CountRouted(&addrs)), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait LookupVisitor<A: Addr> {
    /// What the visit returns.
    type Output;
    /// Runs with the engine's snapshot.
    fn visit<L: Lookup<A>>(self, engine: &L) -> Self::Output;
}

/// Every engine [`build`] knows, in the order `--help` lists them.
pub const ENGINES: &[EngineInfo] = &[
    EngineInfo {
        name: "radix",
        ipv4: true,
        ipv6: true,
        about: "the reference PATRICIA trie itself (slow, always right)",
    },
    EngineInfo {
        name: "dir24-8",
        ipv4: true,
        ipv6: false,
        about: "DPDK-style 2^24 direct table plus 256-entry groups; the baseline \
                (max-groups=N, default 2^20)",
    },
    EngineInfo {
        name: "cpe",
        ipv4: true,
        ipv6: true,
        about: "multibit trie by controlled prefix expansion, DP-chosen strides \
                (levels=K, strides=16+8+8, fixed, nopush (updatable), packed, cap=C, level-cost=B, \
                max-entries=N)",
    },
    EngineInfo {
        name: "dxr",
        ipv4: true,
        ipv6: false,
        about: "Zec's DXR: dxr:k=16..24 direct chunks + range binary search, or dxr:d=12..16,x=X; \
                align=1|2|4|8 range-table words per chunk-base step (default: the least that fits)",
    },
    EngineInfo {
        name: "dxr6",
        ipv4: false,
        ipv6: true,
        about: "DXR for 128-bit keys: 2^K root, nodes of per-chunk stride, one-line leaves of \
                range starts at 16/32/64/128 bits counted by SIMD (k=8..24, stride=1..16, \
                density=1..64; align=1|2|4|8 words per leaf-place step, default: the least \
                that fits)",
    },
    EngineInfo {
        name: "btree",
        ipv4: true,
        ipv6: true,
        about: "static B+-tree over range starts (top 64 bits), 16 keys per node counted by \
                SIMD compares (AVX-512 or AVX2), under a 2^K root; rebuilt on change (k=8..24)",
    },
    EngineInfo {
        name: "poptrie",
        ipv4: true,
        ipv6: true,
        about: "Poptrie: 5-bit nodes whose children are found by popcount, under a 2^S root \
                (s=8, 13, 18, 23; default 18); patched in place on change",
    },
    EngineInfo {
        name: "bspl",
        ipv4: true,
        ipv6: true,
        about: "binary search on prefix lengths with expansion: bspl:levels=K (program-chosen \
                lengths), first=F, lengths=16+24+32, hybrid (hash 32/64/96 + tries)",
    },
    EngineInfo {
        name: "lctrie",
        ipv4: true,
        ipv6: true,
        about: "Linux fib_trie dynamic LC-trie; lookup=improved (default) or lookup=classic",
    },
    EngineInfo {
        name: "levels",
        ipv4: true,
        ipv6: true,
        about: "Narlikar-Zane levelled trie with search-tree leaves: strides=S1[+S2[+S3]] \
                (default 16+8), weights=FILE (trace summary shaping the trees)",
    },
    EngineInfo {
        name: "bloom",
        ipv4: true,
        ipv6: true,
        about: "Bloom filter over (prefix, length) keys + exact table: search=guided (Yegorov, \
                default) or linear (Dharmapurikar); fill=PERCENT or bits=N, k=K, \
                tree=balanced|trace:FILE",
    },
    EngineInfo {
        name: "auto",
        ipv4: true,
        ipv6: true,
        about: "the fastest for this table of dxr:k=16..22 and cpe:levels=2..4 (IPv6: dxr6, \
                cpe): the performance model ranks them, its best measure=N|all (default all; 0: \
                the model alone) are timed for pattern=rnd|seq|both (default both); \
                machine=FILE (fibkit model calibrate), candidates=dxr|cpe, trace=FILE",
    },
];

/// The error for a spec whose name no engine of family `A` has.
pub(crate) fn unknown<A: Addr>(spec: &EngineSpec) -> BuildError {
    let known = |family: Option<Family>| {
        ENGINES
            .iter()
            .filter(|info| family.is_none_or(|f| info.supports(f)))
            .map(|info| info.name)
            .collect::<Vec<_>>()
            .join(", ")
    };
    match ENGINES
        .iter()
        .find(|info| info.name == spec.name || info.name.replace('-', "_") == spec.name)
    {
        Some(info) => BuildError::UnsupportedFamily {
            engine: info.name.to_string(),
            family: A::FAMILY,
            alternatives: known(Some(A::FAMILY)),
        },
        None => BuildError::UnknownEngine {
            name: spec.name.clone(),
            known: known(None),
        },
    }
}

/// Defines, for one address family, the updater, snapshot, config and
/// statistics enums over the listed engines, and their trait impls by
/// `match`.
macro_rules! engine_set {
    (
        family: $A:ty,
        engine: $(#[$engine_doc:meta])* $Engine:ident,
        snapshot: $(#[$snapshot_doc:meta])* $Snapshot:ident,
        config: $(#[$config_doc:meta])* $Config:ident,
        stats: $(#[$stats_doc:meta])* $Stats:ident,
        variants: { $( $(#[$variant_doc:meta])* $Variant:ident($Upd:ty) ),* $(,)? }
    ) => {
        $(#[$engine_doc])*
        // One value per handle, built once and never copied around on a
        // lookup path: boxing a large updater would buy nothing.
        #[allow(clippy::large_enum_variant)]
        #[derive(Clone)]
        pub enum $Engine {
            $( $(#[$variant_doc])* $Variant($Upd), )*
        }

        $(#[$snapshot_doc])*
        #[derive(Clone)]
        // Boxing a large snapshot would put a pointer chase on every lookup.
        #[allow(clippy::large_enum_variant)]
        pub enum $Snapshot {
            $( $(#[$variant_doc])* $Variant(<$Upd as Updater<$A>>::Snapshot), )*
        }

        $(#[$config_doc])*
        #[derive(Clone, Debug)]
        pub enum $Config {
            $( $(#[$variant_doc])* $Variant(<$Upd as Updater<$A>>::Config), )*
        }

        $(#[$stats_doc])*
        #[derive(Debug, serde::Serialize)]
        #[serde(untagged)]
        // Made on request, one at a time (see the updater enum above).
        #[allow(clippy::large_enum_variant)]
        pub enum $Stats {
            $( $(#[$variant_doc])* $Variant(<$Upd as Updater<$A>>::Stats), )*
        }

        impl fmt::Display for $Config {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    $( Self::$Variant(config) => config.fmt(f), )*
                }
            }
        }

        impl std::str::FromStr for $Config {
            type Err = BuildError;
            fn from_str(text: &str) -> Result<Self, BuildError> {
                Self::from_spec(&EngineSpec::parse(text)?)
            }
        }

        impl EngineConfig for $Config {
            const NAMES: &'static [&'static str] = &[];

            fn from_spec(spec: &EngineSpec) -> Result<Self, BuildError> {
                $(
                    if <<$Upd as Updater<$A>>::Config as EngineConfig>::NAMES
                        .contains(&spec.name.as_str())
                    {
                        return Ok(Self::$Variant(EngineConfig::from_spec(spec)?));
                    }
                )*
                Err(unknown::<$A>(spec))
            }

            fn parse(text: &str) -> Result<Self, BuildError> {
                text.parse()
            }
        }

        impl EngineStats for $Stats {
            fn rows(&self) -> Vec<(String, String)> {
                match self {
                    $( Self::$Variant(stats) => stats.rows(), )*
                }
            }
        }

        impl $Snapshot {
            /// The label of the longest prefix containing `addr`, or
            /// `None` (as [`Lookup::lookup`], without importing the trait).
            #[inline(always)]
            pub fn lookup(&self, addr: $A) -> Option<Label> {
                Lookup::lookup(self, addr)
            }

            /// Looks up every address of `addrs` into the same position of
            /// `out` (as [`Lookup::lookup_batch`]).
            #[inline]
            pub fn lookup_batch(&self, addrs: &[$A], out: &mut [Option<Label>]) {
                Lookup::lookup_batch(self, addrs, out)
            }

            /// Bytes of memory the lookup structures occupy.
            pub fn memory_bytes(&self) -> usize {
                Lookup::memory_bytes(self)
            }

            /// Runs `visitor` with the engine's own snapshot type, so a
            /// loop written once for any [`Lookup`] is compiled once per
            /// engine and the engine is chosen once, not per key.
            ///
            /// [`Self::lookup`] matches on the engine at every call; in a
            /// per-key loop the compiler keeps every engine's state live
            /// across the loop, which costs the fast engines up to half
            /// their speed (docs/bench/per-key-call-paths.md, "Per-key call paths").
            /// A loop run through `dispatch` runs at the engine's own speed.
            #[inline]
            pub fn dispatch<V: LookupVisitor<$A>>(&self, visitor: V) -> V::Output {
                match self {
                    $( Self::$Variant(snapshot) => visitor.visit(snapshot), )*
                }
            }
        }

        impl Lookup<$A> for $Snapshot {
            #[inline(always)]
            fn lookup(&self, addr: $A) -> Option<Label> {
                match self {
                    $( Self::$Variant(snapshot) => snapshot.lookup(addr), )*
                }
            }

            #[inline]
            fn lookup_batch(&self, addrs: &[$A], out: &mut [Option<Label>]) {
                match self {
                    $( Self::$Variant(snapshot) => snapshot.lookup_batch(addrs, out), )*
                }
            }

            #[inline]
            fn lookup_each(&self, addrs: &[$A], out: &mut [Option<Label>]) {
                match self {
                    $( Self::$Variant(snapshot) => snapshot.lookup_each(addrs, out), )*
                }
            }

            #[inline]
            fn lookup_chained(
                &self,
                addrs: &[$A],
                out: &mut [Option<Label>],
                seed: Label,
            ) -> Label {
                match self {
                    $( Self::$Variant(snapshot) => snapshot.lookup_chained(addrs, out, seed), )*
                }
            }

            #[inline]
            fn lookup_batch_words(&self, addrs: &[$A], out: &mut [u64]) {
                match self {
                    $( Self::$Variant(snapshot) => snapshot.lookup_batch_words(addrs, out), )*
                }
            }

            #[inline]
            fn lookup_batch_words_be(&self, keys: &[<$A as Addr>::Bytes], out: &mut [u64]) {
                match self {
                    $( Self::$Variant(snapshot) => snapshot.lookup_batch_words_be(keys, out), )*
                }
            }

            fn memory_bytes(&self) -> usize {
                match self {
                    $( Self::$Variant(snapshot) => snapshot.memory_bytes(), )*
                }
            }
        }

        impl Updater<$A> for $Engine {
            type Config = $Config;
            type Snapshot = $Snapshot;
            type Stats = $Stats;

            fn build(config: &$Config, rib: &Rib<$A>) -> Result<(Self, $Snapshot), BuildError> {
                match config {
                    $(
                        $Config::$Variant(config) => {
                            let (updater, snapshot) = <$Upd>::build(config, rib)?;
                            Ok((Self::$Variant(updater), $Snapshot::$Variant(snapshot)))
                        }
                    )*
                }
            }

            fn config(&self) -> $Config {
                match self {
                    $( Self::$Variant(updater) => $Config::$Variant(updater.config()), )*
                }
            }

            fn patches(&self) -> bool {
                match self {
                    $( Self::$Variant(updater) => updater.patches(), )*
                }
            }

            fn builds_anew(&self, changed: usize, prefixes: usize) -> bool {
                match self {
                    $( Self::$Variant(updater) => updater.builds_anew(changed, prefixes), )*
                }
            }

            fn update(
                &mut self,
                snapshot: &mut $Snapshot,
                rib: &Rib<$A>,
                changed: &[Prefix<$A>],
            ) -> Result<(), BuildError> {
                match (self, snapshot) {
                    $(
                        (Self::$Variant(updater), $Snapshot::$Variant(snapshot)) => {
                            updater.update(snapshot, rib, changed)
                        }
                    )*
                    // A snapshot of another engine cannot be patched: ask
                    // for a rebuild, which makes the pair consistent again.
                    #[allow(unreachable_patterns)]
                    (updater, _) => Err(BuildError::UpdateUnsupported {
                        engine: updater.config().to_string(),
                    }),
                }
            }

            fn stats(&self, snapshot: &$Snapshot) -> $Stats {
                match (self, snapshot) {
                    $(
                        (Self::$Variant(updater), $Snapshot::$Variant(snapshot)) => {
                            $Stats::$Variant(updater.stats(snapshot))
                        }
                    )*
                    #[allow(unreachable_patterns)]
                    _ => unreachable!("the handle keeps updater and snapshot of one engine"),
                }
            }
        }

    };
}

engine_set! {
    family: u32,
    engine:
        /// Every IPv4 engine's updater: what [`crate::Fib`] holds when the
        /// engine is chosen at run time.
        EngineV4,
    snapshot:
        /// Every IPv4 engine's snapshot; lookups dispatch with a `match`.
        SnapshotV4,
    config:
        /// A parsed IPv4 engine spec.
        ConfigV4,
    stats:
        /// Any IPv4 engine's statistics.
        StatsV4,
    variants: {
        /// `radix`.
        Radix(engines::radix::RadixUpdater<u32>),
        /// `dir24-8`.
        Dir24_8(engines::dir24_8::Dir24_8Updater),
        /// `cpe`.
        Cpe(engines::cpe::CpeUpdater<u32>),
        /// `dxr`.
        Dxr(engines::dxr::DxrUpdater),
        /// `btree`.
        Btree(engines::btree::BtreeUpdater<u32>),
        /// `poptrie`.
        Poptrie(engines::poptrie::PoptrieUpdater<u32>),
        /// `lctrie`.
        LcTrie(engines::lctrie::LcTrieUpdater<u32>),
        /// `levels`.
        Levels(engines::levels::LevelsUpdater<u32>),
        /// `bspl`.
        Bspl(engines::bspl::BsplUpdater<u32>),
        /// `bloom`.
        Bloom(engines::bloom::BloomUpdater<u32>),
        /// `auto`.
        Auto(crate::choice::auto::AutoUpdater<u32>),
    }
}

engine_set! {
    family: u128,
    engine:
        /// Every IPv6 engine's updater: what [`crate::Fib`] holds when the
        /// engine is chosen at run time.
        EngineV6,
    snapshot:
        /// Every IPv6 engine's snapshot; lookups dispatch with a `match`.
        SnapshotV6,
    config:
        /// A parsed IPv6 engine spec.
        ConfigV6,
    stats:
        /// Any IPv6 engine's statistics.
        StatsV6,
    variants: {
        /// `radix`.
        Radix(engines::radix::RadixUpdater<u128>),
        /// `cpe`.
        Cpe(engines::cpe::CpeUpdater<u128>),
        /// `dxr6`.
        Dxr6(engines::dxr6::Dxr6Updater),
        /// `btree`.
        Btree(engines::btree::BtreeUpdater<u128>),
        /// `poptrie`.
        Poptrie(engines::poptrie::PoptrieUpdater<u128>),
        /// `lctrie`.
        LcTrie(engines::lctrie::LcTrieUpdater<u128>),
        /// `levels`.
        Levels(engines::levels::LevelsUpdater<u128>),
        /// `bspl`.
        Bspl(engines::bspl::BsplUpdater<u128>),
        /// `bloom`.
        Bloom(engines::bloom::BloomUpdater<u128>),
        /// `auto`.
        Auto(crate::choice::auto::AutoUpdater<u128>),
    }
}

/// Address families the registry can build engines for (`u32` and `u128`):
/// names the family's engine enums for generic code.
pub trait EngineFamily: Addr {
    /// Every engine of the family, chosen at run time by spec.
    type Engine: Updater<Self, Config = Self::Config, Snapshot = Self::Snapshot>;
    /// A parsed spec of any engine of the family.
    type Config: EngineConfig + std::str::FromStr<Err = BuildError>;
    /// Any engine's snapshot.
    type Snapshot: Lookup<Self> + Clone + 'static;

    /// The work `snapshot` does per lookup over `addrs`, counted by the
    /// engine's counting path (`bloom`: filter bits, hashes, exact-table
    /// lookups and fallbacks, as \[Yeg18\] counts them; `lctrie`: key
    /// vectors, backtracking steps and cache lines; `bspl`: tables
    /// probed), as `(name, average)` rows; `None` for engines without one.
    fn lookup_work(snapshot: &Self::Snapshot, addrs: &[Self]) -> Option<Vec<(String, String)>>;
}

/// [`EngineFamily::lookup_work`] of the engines that count, in either family.
macro_rules! lookup_work {
    ($Snapshot:ident, $snapshot:expr, $addrs:expr) => {
        match $snapshot {
            $Snapshot::Bloom(bloom) => Some(bloom.count_lookups($addrs).rows()),
            $Snapshot::LcTrie(trie) => {
                let counts = trie.count_lookups($addrs, trie.algo());
                Some(vec![
                    ("lookups counted".into(), $addrs.len().to_string()),
                    (
                        "key vectors".into(),
                        format!("{:.2}", counts.nodes_per_lookup()),
                    ),
                    (
                        "backtracking steps".into(),
                        format!("{:.2}", counts.backtracks_per_lookup()),
                    ),
                    (
                        "cache lines".into(),
                        format!("{:.2}", counts.cache_lines_per_lookup()),
                    ),
                ])
            }
            $Snapshot::Bspl(bspl) => {
                let probes: usize = $addrs.iter().map(|&addr| bspl.probes(addr)).sum();
                Some(vec![
                    ("lookups counted".into(), $addrs.len().to_string()),
                    (
                        "tables probed".into(),
                        format!("{:.2}", probes as f64 / $addrs.len().max(1) as f64),
                    ),
                ])
            }
            _ => None,
        }
    };
}

impl EngineFamily for u32 {
    type Engine = EngineV4;
    type Config = ConfigV4;
    type Snapshot = SnapshotV4;

    fn lookup_work(snapshot: &SnapshotV4, addrs: &[u32]) -> Option<Vec<(String, String)>> {
        lookup_work!(SnapshotV4, snapshot, addrs)
    }
}

impl EngineFamily for u128 {
    type Engine = EngineV6;
    type Config = ConfigV6;
    type Snapshot = SnapshotV6;

    fn lookup_work(snapshot: &SnapshotV6, addrs: &[u128]) -> Option<Vec<(String, String)>> {
        lookup_work!(SnapshotV6, snapshot, addrs)
    }
}

/// Builds the engine described by `spec` (`"dxr:k=20"`) from `rib` and
/// returns its snapshot, for lookups on a table that will not change (use
/// [`crate::Fib`] to apply changes).
pub fn build<A: EngineFamily>(spec: &str, rib: &Rib<A>) -> Result<A::Snapshot, BuildError> {
    let config: A::Config = spec.parse()?;
    let (_, snapshot) = A::Engine::build(&config, rib)?;
    Ok(snapshot)
}

/// The engines that can be saved as an image (`fibkit build`), per family,
/// and the snapshots that read one in place.
pub trait ImageFamily: EngineFamily {
    /// A snapshot read in place from an image.
    type Mapped: Lookup<Self> + Clone;

    /// The arrays of `snapshot` to save, or `None` if its engine cannot be
    /// saved.
    fn image_sections(snapshot: &Self::Snapshot) -> Option<Vec<SectionData<'_>>>;

    /// The snapshot saved in `image` (whose family is this one), checked.
    fn open_image(image: &Image) -> Result<Self::Mapped, ImageError>;
}

/// Engines whose snapshots can be saved as images, for error messages.
const IMAGE_ENGINES: &str = "dir24-8, dxr, dxr6, cpe, lctrie, levels, poptrie";

fn image_unsupported(spec: &str) -> ImageError {
    ImageError::Unsupported {
        engine: spec.to_string(),
        engines: IMAGE_ENGINES.to_string(),
    }
}

/// The engine name of an image's spec, for an image of family `family`
/// (engines such as `cpe` have the same sections in both families, so the
/// header's family is what tells an IPv4 image from an IPv6 one).
fn image_engine(image: &Image, family: Family) -> Result<String, ImageError> {
    if image.family() != family {
        return Err(image.invalid(format!(
            "an {} image cannot be opened as an {family} table",
            image.family()
        )));
    }
    let spec = EngineSpec::parse(image.spec()).map_err(|e| image.invalid(e.to_string()))?;
    Ok(spec.name)
}

/// Declares a family's enum of snapshots read from images and its
/// [`Lookup`] implementation, which dispatches with one `match`.
macro_rules! mapped_set {
    (
        $(#[$doc:meta])* $name:ident: $addr:ty {
            $($(#[$vdoc:meta])* $variant:ident($snapshot:ty),)*
        }
    ) => {
        $(#[$doc])*
        #[derive(Clone)]
        pub enum $name {
            $($(#[$vdoc])* $variant($snapshot),)*
        }

        impl Lookup<$addr> for $name {
            #[inline(always)]
            fn lookup(&self, addr: $addr) -> Option<Label> {
                match self {
                    $($name::$variant(snapshot) => snapshot.lookup(addr),)*
                }
            }
            fn lookup_batch(&self, addrs: &[$addr], out: &mut [Option<Label>]) {
                match self {
                    $($name::$variant(snapshot) => snapshot.lookup_batch(addrs, out),)*
                }
            }
            fn lookup_batch_words(&self, addrs: &[$addr], out: &mut [u64]) {
                match self {
                    $($name::$variant(snapshot) => snapshot.lookup_batch_words(addrs, out),)*
                }
            }
            fn lookup_batch_words_be(&self, keys: &[<$addr as Addr>::Bytes], out: &mut [u64]) {
                match self {
                    $($name::$variant(snapshot) => snapshot.lookup_batch_words_be(keys, out),)*
                }
            }
            fn memory_bytes(&self) -> usize {
                match self {
                    $($name::$variant(snapshot) => snapshot.memory_bytes(),)*
                }
            }
        }
    };
}

mapped_set! {
    /// An IPv4 snapshot read in place from an image.
    MappedV4: u32 {
        /// `dir24-8`.
        Dir24_8(engines::dir24_8::Dir24_8<Mapped>),
        /// `dxr`.
        Dxr(engines::dxr::Dxr<Mapped>),
        /// `cpe`.
        Cpe(engines::cpe::CpeTrie<u32, Mapped>),
        /// `lctrie`.
        LcTrie(engines::lctrie::LcTrie<u32, Mapped>),
        /// `levels`.
        Levels(engines::levels::Levels<u32, Mapped>),
        /// `poptrie`.
        Poptrie(engines::poptrie::Poptrie<u32, Mapped>),
    }
}

impl ImageFamily for u32 {
    type Mapped = MappedV4;

    fn image_sections(snapshot: &SnapshotV4) -> Option<Vec<SectionData<'_>>> {
        match snapshot {
            SnapshotV4::Dir24_8(snapshot) => Some(snapshot.image_sections()),
            SnapshotV4::Dxr(snapshot) => Some(snapshot.image_sections()),
            SnapshotV4::Cpe(snapshot) => Some(snapshot.image_sections()),
            SnapshotV4::LcTrie(snapshot) => Some(snapshot.image_sections()),
            SnapshotV4::Levels(snapshot) => Some(snapshot.image_sections()),
            SnapshotV4::Poptrie(snapshot) => Some(snapshot.image_sections()),
            _ => None,
        }
    }

    fn open_image(image: &Image) -> Result<MappedV4, ImageError> {
        match image_engine(image, Family::V4)?.as_str() {
            "dir24-8" => Ok(MappedV4::Dir24_8(engines::dir24_8::Dir24_8::from_image(
                image,
            )?)),
            "dxr" => Ok(MappedV4::Dxr(engines::dxr::Dxr::from_image(image)?)),
            "cpe" => Ok(MappedV4::Cpe(engines::cpe::CpeTrie::from_image(image)?)),
            "lctrie" => Ok(MappedV4::LcTrie(engines::lctrie::LcTrie::from_image(
                image,
            )?)),
            "poptrie" => Ok(MappedV4::Poptrie(engines::poptrie::Poptrie::from_image(
                image,
            )?)),
            "levels" => Ok(MappedV4::Levels(engines::levels::Levels::from_image(
                image,
            )?)),
            _ => Err(image_unsupported(image.spec())),
        }
    }
}

mapped_set! {
    /// An IPv6 snapshot read in place from an image.
    MappedV6: u128 {
        /// `dxr6`.
        Dxr6(engines::dxr6::Dxr6<Mapped>),
        /// `cpe`.
        Cpe(engines::cpe::CpeTrie<u128, Mapped>),
        /// `lctrie`.
        LcTrie(engines::lctrie::LcTrie<u128, Mapped>),
        /// `levels`.
        Levels(engines::levels::Levels<u128, Mapped>),
        /// `poptrie`.
        Poptrie(engines::poptrie::Poptrie<u128, Mapped>),
    }
}

impl ImageFamily for u128 {
    type Mapped = MappedV6;

    fn image_sections(snapshot: &SnapshotV6) -> Option<Vec<SectionData<'_>>> {
        match snapshot {
            SnapshotV6::Dxr6(snapshot) => Some(snapshot.image_sections()),
            SnapshotV6::Cpe(snapshot) => Some(snapshot.image_sections()),
            SnapshotV6::LcTrie(snapshot) => Some(snapshot.image_sections()),
            SnapshotV6::Levels(snapshot) => Some(snapshot.image_sections()),
            SnapshotV6::Poptrie(snapshot) => Some(snapshot.image_sections()),
            _ => None,
        }
    }

    fn open_image(image: &Image) -> Result<MappedV6, ImageError> {
        match image_engine(image, Family::V6)?.as_str() {
            "dxr6" => Ok(MappedV6::Dxr6(engines::dxr6::Dxr6::from_image(image)?)),
            "cpe" => Ok(MappedV6::Cpe(engines::cpe::CpeTrie::from_image(image)?)),
            "lctrie" => Ok(MappedV6::LcTrie(engines::lctrie::LcTrie::from_image(
                image,
            )?)),
            "poptrie" => Ok(MappedV6::Poptrie(engines::poptrie::Poptrie::from_image(
                image,
            )?)),
            "levels" => Ok(MappedV6::Levels(engines::levels::Levels::from_image(
                image,
            )?)),
            _ => Err(image_unsupported(image.spec())),
        }
    }
}

/// The image of the engine `spec` built from `rib`, as bytes.
pub fn image_bytes<A: ImageFamily>(spec: &str, rib: &Rib<A>) -> Result<Vec<u8>, crate::Error> {
    let config: A::Config = spec.parse()?;
    let (engine, snapshot) = A::Engine::build(&config, rib)?;
    // The layout the build settled on, which may differ from the one asked
    // for (`dxr` raises its `align` for a large range table).
    let canonical = engine.config().to_string();
    let sections = A::image_sections(&snapshot).ok_or_else(|| image_unsupported(&canonical))?;
    Ok(crate::image::to_bytes(A::FAMILY, &canonical, &sections))
}

/// Saves the engine `spec` built from `rib` as an image at `path`.
pub fn save_image<A: ImageFamily>(
    spec: &str,
    rib: &Rib<A>,
    path: &std::path::Path,
) -> Result<(), crate::Error> {
    let bytes = image_bytes(spec, rib)?;
    std::fs::write(path, bytes).map_err(|source| ImageError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_errors_name_the_problem() {
        let rib4 = Rib::<u32>::new();
        let rib6 = Rib::<u128>::new();
        let err = build("nosuch", &rib4).err().unwrap().to_string();
        assert!(
            err.contains("unknown engine `nosuch`") && err.contains("radix"),
            "{err}"
        );
        let err = build("dir24-8", &rib6).err().unwrap().to_string();
        assert!(
            err.contains("does not support IPv6") && err.contains("engines that do: radix"),
            "{err}"
        );
        let alternatives = err.split("engines that do: ").nth(1).unwrap_or_default();
        assert!(
            !alternatives
                .trim_end_matches(')')
                .split(", ")
                .any(|name| name == "dxr"),
            "{err}"
        );
        let err = build("radix:k=3", &rib4).err().unwrap().to_string();
        assert!(err.contains("unknown parameter `k`"), "{err}");
    }

    #[test]
    fn default_specs_build_their_family() {
        let mut rib4 = Rib::<u32>::new();
        rib4.insert(Prefix::new_masked(0x0a00_0000, 8), 1);
        let mut rib6 = Rib::<u128>::new();
        rib6.insert(Prefix::new_masked(0x2001_0db8 << 96, 32), 2);
        let v4 = build(crate::choice::default_spec(Family::V4), &rib4).unwrap();
        assert_eq!(v4.lookup(0x0a01_0203), Some(1));
        let v6 = build(crate::choice::default_spec(Family::V6), &rib6).unwrap();
        assert_eq!(v6.lookup(0x2001_0db8_0001 << 80), Some(2));
        assert_eq!(v6.lookup(1), None);
    }

    #[test]
    fn configs_print_their_canonical_spec() {
        for (text, canonical) in [
            ("radix", "radix"),
            ("dir24_8", "dir24-8"),
            ("dir24-8", "dir24-8"),
            ("dxr", "dxr:k=20"),
            ("dxr:d=16,k=21", "dxr:d=16,x=5"),
        ] {
            let config: ConfigV4 = text.parse().unwrap();
            assert_eq!(config.to_string(), canonical);
        }
    }
}
