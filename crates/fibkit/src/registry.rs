//! The registry: every engine fibkit has, per address family, behind one
//! enum whose lookups dispatch with a `match` (so a per-key lookup is
//! inlined into the caller's loop instead of going through a dynamic call),
//! and the spec strings that choose among them at run time.
//!
//! Everything here is derived from one list, [`engine_list!`]'s invocation
//! below, one line per engine: for each family the updater ([`EngineV4`],
//! [`EngineV6`]), snapshot ([`SnapshotV4`], [`SnapshotV6`]), parsed spec
//! ([`ConfigV4`], [`ConfigV6`]), statistics ([`StatsV4`], [`StatsV6`]) and
//! image ([`MappedV4`], [`MappedV6`]) enums, the spec parsing, the image
//! dispatch and [`ENGINES`], from which the CLI, the Python package and the
//! shared test suite take their lists. What an engine says of itself (its
//! names, one-line description, test layouts, whether it has images) comes
//! from its own folder, through [`EngineConfig`] and [`Saved`].
//! [`EngineFamily`] names a family's enums for generic code.

use std::fmt;

use crate::addr::{Addr, Family};
use crate::engine::{BuildError, EngineConfig, EngineStats, Layout, Lookup, Updater};
use crate::engines;
use crate::image::{Image, ImageError, Saved, SectionData};
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
    /// Whether its snapshots can be saved as images.
    pub savable: bool,
    /// Parameters and what the engine is.
    pub about: &'static str,
    /// The layouts the shared test suite checks (the default first).
    pub layouts: &'static [Layout],
    /// Further layouts the fuzz targets cover.
    pub more_layouts: &'static [Layout],
    /// Whether its lookups take vector paths that `FIBKIT_MAX_SIMD` caps.
    pub vector_paths: bool,
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

/// The names of the engines that build tables of `family` (every engine
/// with `None`), comma separated, in [`ENGINES`]' order.
pub fn engine_names(family: Option<Family>, savable_only: bool) -> String {
    ENGINES
        .iter()
        .filter(|info| family.is_none_or(|f| info.supports(f)))
        .filter(|info| info.savable || !savable_only)
        .map(|info| info.name)
        .collect::<Vec<_>>()
        .join(", ")
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

/// Defines, for one address family, the updater, snapshot, config,
/// statistics and image enums over the listed engines, and their trait
/// impls by `match`.
macro_rules! engine_set {
    (
        family: $A:ty,
        engine: $(#[$engine_doc:meta])* $Engine:ident,
        snapshot: $(#[$snapshot_doc:meta])* $Snapshot:ident,
        config: $(#[$config_doc:meta])* $Config:ident,
        stats: $(#[$stats_doc:meta])* $Stats:ident,
        mapped: $(#[$mapped_doc:meta])* $Mapped:ident,
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
            const ABOUT: &'static str = "any engine of the family";
            const LAYOUTS: &'static [Layout] = &[];

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
            $crate::engine::forward_lookup!($A; match self { $( Self::$Variant(snapshot) => snapshot ),* });
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

            fn lookup_work(snapshot: &$Snapshot, addrs: &[$A]) -> Option<Vec<(String, String)>> {
                match snapshot {
                    $( $Snapshot::$Variant(snapshot) => <$Upd>::lookup_work(snapshot, addrs), )*
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

        $(#[$mapped_doc])*
        #[derive(Clone)]
        pub enum $Mapped {
            $( $(#[$variant_doc])* $Variant(<<$Upd as Updater<$A>>::Snapshot as Saved<$A>>::Mapped), )*
        }

        impl Lookup<$A> for $Mapped {
            $crate::engine::forward_lookup!($A; match self { $( Self::$Variant(snapshot) => snapshot ),* });
        }

        impl ImageFamily for $A {
            type Mapped = $Mapped;

            fn image_sections(snapshot: &$Snapshot) -> Option<Vec<SectionData<'_>>> {
                match snapshot {
                    $( $Snapshot::$Variant(snapshot) => Saved::<$A>::sections(snapshot), )*
                }
            }

            fn open_image(image: &Image) -> Result<$Mapped, ImageError> {
                let name = image_engine(image, <$A as Addr>::FAMILY)?;
                $(
                    type $Variant = <$Upd as Updater<$A>>::Snapshot;
                    if <<$Upd as Updater<$A>>::Config as EngineConfig>::NAMES.contains(&name.as_str())
                        && <$Variant as Saved<$A>>::SAVABLE
                    {
                        return Ok($Mapped::$Variant(<$Variant as Saved<$A>>::open(image)?));
                    }
                )*
                Err(image_unsupported(image.spec()))
            }
        }
    };
}

/// Declares the engines: each line names the variant the per-family enums
/// give the engine and its updater type for each family it builds. The
/// enums, [`ENGINES`] and the image dispatch are all derived from it.
macro_rules! engine_list {
    ( $( $Variant:ident: $(v4 = $V4:ty,)? $(v6 = $V6:ty,)? ; )* ) => {
        /// Every engine [`build`] knows, in the order `--help` lists them.
        pub const ENGINES: &[EngineInfo] = &[
            $(
                EngineInfo {
                    name: [$(<<$V4 as Updater<u32>>::Config as EngineConfig>::NAMES[0],)?
                           $(<<$V6 as Updater<u128>>::Config as EngineConfig>::NAMES[0],)?][0],
                    ipv4: [$({ let _ = stringify!($V4); true },)? false][0],
                    ipv6: [$({ let _ = stringify!($V6); true },)? false][0],
                    savable: [$(<<$V4 as Updater<u32>>::Snapshot as Saved<u32>>::SAVABLE,)?
                              $(<<$V6 as Updater<u128>>::Snapshot as Saved<u128>>::SAVABLE,)?][0],
                    about: [$(<<$V4 as Updater<u32>>::Config as EngineConfig>::ABOUT,)?
                            $(<<$V6 as Updater<u128>>::Config as EngineConfig>::ABOUT,)?][0],
                    layouts: [$(<<$V4 as Updater<u32>>::Config as EngineConfig>::LAYOUTS,)?
                              $(<<$V6 as Updater<u128>>::Config as EngineConfig>::LAYOUTS,)?][0],
                    more_layouts: [$(<<$V4 as Updater<u32>>::Config as EngineConfig>::MORE_LAYOUTS,)?
                                   $(<<$V6 as Updater<u128>>::Config as EngineConfig>::MORE_LAYOUTS,)?][0],
                    vector_paths: [$(<<$V4 as Updater<u32>>::Config as EngineConfig>::VECTOR_PATHS,)?
                                   $(<<$V6 as Updater<u128>>::Config as EngineConfig>::VECTOR_PATHS,)?][0],
                },
            )*
        ];

        engine_set! {
            family: u32,
            engine:
                /// Every IPv4 engine's updater: what [`crate::Fib`] holds when
                /// the engine is chosen at run time.
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
            mapped:
                /// An IPv4 snapshot read in place from an image (the
                /// variants of engines without images are never built).
                MappedV4,
            variants: { $( $(
                #[doc = concat!("The `", stringify!($Variant), "` engine.")]
                $Variant($V4),
            )? )* }
        }

        engine_set! {
            family: u128,
            engine:
                /// Every IPv6 engine's updater: what [`crate::Fib`] holds when
                /// the engine is chosen at run time.
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
            mapped:
                /// An IPv6 snapshot read in place from an image (the
                /// variants of engines without images are never built).
                MappedV6,
            variants: { $( $(
                #[doc = concat!("The `", stringify!($Variant), "` engine.")]
                $Variant($V6),
            )? )* }
        }
    };
}

// THE ENGINE LIST. Adding an engine: its folder under `engines/`, its
// `pub mod` line in `engines/mod.rs`, and one line here (docs/ENGINES.md,
// "Adding an engine"). The order is `--help`'s.
engine_list! {
    Radix: v4 = engines::radix::RadixUpdater<u32>, v6 = engines::radix::RadixUpdater<u128>,;
    Dir24_8: v4 = engines::dir24_8::Dir24_8Updater,;
    Cpe: v4 = engines::cpe::CpeUpdater<u32>, v6 = engines::cpe::CpeUpdater<u128>,;
    Dxr: v4 = engines::dxr::DxrUpdater,;
    Dxr6: v6 = engines::dxr6::Dxr6Updater,;
    Btree: v4 = engines::btree::BtreeUpdater<u32>, v6 = engines::btree::BtreeUpdater<u128>,;
    Poptrie: v4 = engines::poptrie::PoptrieUpdater<u32>, v6 = engines::poptrie::PoptrieUpdater<u128>,;
    Bspl: v4 = engines::bspl::BsplUpdater<u32>, v6 = engines::bspl::BsplUpdater<u128>,;
    LcTrie: v4 = engines::lctrie::LcTrieUpdater<u32>, v6 = engines::lctrie::LcTrieUpdater<u128>,;
    Levels: v4 = engines::levels::LevelsUpdater<u32>, v6 = engines::levels::LevelsUpdater<u128>,;
    Bloom: v4 = engines::bloom::BloomUpdater<u32>, v6 = engines::bloom::BloomUpdater<u128>,;
    Auto: v4 = crate::choice::auto::AutoUpdater<u32>, v6 = crate::choice::auto::AutoUpdater<u128>,;
}

/// The error for a spec whose name no engine of family `A` has.
pub(crate) fn unknown<A: Addr>(spec: &EngineSpec) -> BuildError {
    let known = |family: Option<Family>| engine_names(family, false);
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

/// Address families the registry can build engines for (`u32` and `u128`):
/// names the family's engine enums for generic code.
pub trait EngineFamily: Addr {
    /// Every engine of the family, chosen at run time by spec.
    type Engine: Updater<Self, Config = Self::Config, Snapshot = Self::Snapshot>;
    /// A parsed spec of any engine of the family.
    type Config: EngineConfig + std::str::FromStr<Err = BuildError>;
    /// Any engine's snapshot.
    type Snapshot: Lookup<Self> + Clone + 'static;

    /// The work `snapshot` does per lookup over `addrs`, as the engine
    /// counts it ([`Updater::lookup_work`]); `None` for engines without a
    /// counting path.
    fn lookup_work(snapshot: &Self::Snapshot, addrs: &[Self]) -> Option<Vec<(String, String)>> {
        Self::Engine::lookup_work(snapshot, addrs)
    }
}

impl EngineFamily for u32 {
    type Engine = EngineV4;
    type Config = ConfigV4;
    type Snapshot = SnapshotV4;
}

impl EngineFamily for u128 {
    type Engine = EngineV6;
    type Config = ConfigV6;
    type Snapshot = SnapshotV6;
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

fn image_unsupported(spec: &str) -> ImageError {
    ImageError::Unsupported {
        engine: spec.to_string(),
        engines: engine_names(None, true),
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
