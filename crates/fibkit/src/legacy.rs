//! An adapter for engines whose lookup structure still carries its update
//! state: the whole engine is the snapshot, and an update patches a copy
//! of it. Engines move off it as they gain a snapshot/updater split.

use std::fmt;
use std::marker::PhantomData;

use crate::addr::Addr;
use crate::engine::{BuildError, EngineConfig, EngineStats, Lookup, Updater};
use crate::prefix::{Label, Prefix};
use crate::rib::Rib;
use crate::spec::EngineSpec;

/// An engine whose one type holds both lookup and update state.
#[doc(hidden)]
pub trait LegacyEngine<A: Addr>: Clone + Send + Sync + 'static {
    /// The spec names it answers to (the first is canonical).
    const NAMES: &'static [&'static str];
    /// Builds it from `spec`.
    fn build(spec: &EngineSpec, rib: &Rib<A>) -> Result<Self, BuildError>;
    /// The canonical spec of the built engine.
    fn name(&self) -> String;
    /// Bytes of the lookup structures.
    fn memory_bytes(&self) -> usize;
    /// The longest match.
    fn lookup(&self, addr: A) -> Option<Label>;
    /// Looks up a slice.
    fn lookup_batch(&self, addrs: &[A], out: &mut [Option<Label>]) {
        assert!(out.len() >= addrs.len(), "output slice shorter than input");
        for (addr, result) in addrs.iter().zip(out.iter_mut()) {
            *result = self.lookup(*addr);
        }
    }
    /// Patches itself after `changed` changed in `rib`.
    fn update(&mut self, rib: &Rib<A>, changed: &[Prefix<A>]) -> Result<(), BuildError>;
    /// Rows for `fibkit stats`.
    fn stats(&self) -> Vec<(String, String)>;
}

/// Implements [`Lookup`] for a legacy engine type by delegation, so the
/// engine itself is its snapshot.
macro_rules! legacy_lookup {
    ([$($generics:tt)*] $A:ty, $T:ty) => {
        impl<$($generics)*> $crate::engine::Lookup<$A> for $T {
            #[inline(always)]
            fn lookup(&self, addr: $A) -> Option<$crate::prefix::Label> {
                $crate::legacy::LegacyEngine::lookup(self, addr)
            }
            fn lookup_batch(&self, addrs: &[$A], out: &mut [Option<$crate::prefix::Label>]) {
                $crate::legacy::LegacyEngine::lookup_batch(self, addrs, out)
            }
            fn memory_bytes(&self) -> usize {
                $crate::legacy::LegacyEngine::memory_bytes(self)
            }
        }
    };
}
pub(crate) use legacy_lookup;

/// The config of a [`Legacy`] engine: its spec, checked when built.
#[doc(hidden)]
pub struct LegacyConfig<A, E> {
    spec: EngineSpec,
    _engine: PhantomData<fn() -> (A, E)>,
}

impl<A, E> Clone for LegacyConfig<A, E> {
    fn clone(&self) -> Self {
        LegacyConfig {
            spec: self.spec.clone(),
            _engine: PhantomData,
        }
    }
}

impl<A, E> fmt::Debug for LegacyConfig<A, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("LegacyConfig").field(&self.spec).finish()
    }
}

impl<A, E> fmt::Display for LegacyConfig<A, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.spec.fmt(f)
    }
}

impl<A: Addr, E: LegacyEngine<A>> EngineConfig for LegacyConfig<A, E> {
    const NAMES: &'static [&'static str] = E::NAMES;
    fn from_spec(spec: &EngineSpec) -> Result<Self, BuildError> {
        Ok(LegacyConfig {
            spec: spec.clone(),
            _engine: PhantomData,
        })
    }
}

/// Statistics rows of a [`Legacy`] engine.
#[doc(hidden)]
#[derive(Clone, Debug, serde::Serialize)]
pub struct LegacyStats(pub Vec<(String, String)>);

impl EngineStats for LegacyStats {
    fn rows(&self) -> Vec<(String, String)> {
        self.0.clone()
    }
}

/// The updater of an engine that is still one type.
#[doc(hidden)]
pub struct Legacy<A, E> {
    config: LegacyConfig<A, E>,
}

impl<A: Addr, E: LegacyEngine<A> + Lookup<A>> Updater<A> for Legacy<A, E> {
    type Config = LegacyConfig<A, E>;
    type Snapshot = E;
    type Stats = LegacyStats;

    fn build(config: &Self::Config, rib: &Rib<A>) -> Result<(Self, Self::Snapshot), BuildError> {
        let engine = E::build(&config.spec, rib)?;
        let spec = EngineSpec::parse(&engine.name())?;
        Ok((
            Legacy {
                config: LegacyConfig {
                    spec,
                    _engine: PhantomData,
                },
            },
            engine,
        ))
    }

    fn config(&self) -> Self::Config {
        self.config.clone()
    }

    fn patches(&self) -> bool {
        true
    }

    fn update(
        &mut self,
        snapshot: &mut Self::Snapshot,
        rib: &Rib<A>,
        changed: &[Prefix<A>],
    ) -> Result<(), BuildError> {
        snapshot.update(rib, changed)
    }

    fn stats(&self, snapshot: &Self::Snapshot) -> LegacyStats {
        LegacyStats(snapshot.stats())
    }
}
