//! `radix`: the reference PATRICIA trie ([`Rib`]) used as an engine.
//!
//! It is the slow, obviously-correct baseline (as DPDK's `rte_rib` can serve
//! lookups too): one node visit per branching bit on the path, one pointer
//! chase each. IPv4 and IPv6. The snapshot is a copy of the reference
//! table; an update re-applies the changed prefixes to a copy of it, so the
//! updater holds nothing.
//!
//! One file: the snapshot, its lookup and the updater are a few lines each
//! around the reference trie, which does the work.

use std::fmt;
use std::marker::PhantomData;

use crate::addr::Addr;
use crate::engine::Layout;
use crate::engine::{BuildError, EngineConfig, EngineStats, Lookup, Updater};
use crate::prefix::{Label, Prefix};
use crate::rib::Rib;
use crate::spec::EngineSpec;

/// The reference trie as a lookup snapshot: a private copy of the table.
#[derive(Clone, Debug)]
pub struct Radix<A> {
    rib: Rib<A>,
}

impl<A: Addr> Lookup<A> for Radix<A> {
    #[inline]
    fn lookup(&self, addr: A) -> Option<Label> {
        self.rib.lookup(addr)
    }

    fn memory_bytes(&self) -> usize {
        self.rib.memory_bytes()
    }
}

/// `radix` takes no parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RadixConfig;

impl fmt::Display for RadixConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("radix")
    }
}

crate::image::not_saved!([A: Addr] Radix<A>, A);

impl EngineConfig for RadixConfig {
    const NAMES: &'static [&'static str] = &["radix"];
    const ABOUT: &'static str = "the reference PATRICIA trie itself (slow, always right)";
    const LAYOUTS: &'static [Layout] = &[Layout::both("radix")];

    fn from_spec(spec: &EngineSpec) -> Result<Self, BuildError> {
        spec.expect_only(&[])?;
        Ok(RadixConfig)
    }
}

/// What the copied trie holds.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct RadixStats {
    /// Prefixes in the copy.
    pub prefixes: usize,
}

impl EngineStats for RadixStats {
    fn rows(&self) -> Vec<(String, String)> {
        vec![("prefixes".into(), self.prefixes.to_string())]
    }
}

/// The updater of `radix`: stateless, the snapshot is the whole table.
#[derive(Clone, Copy, Debug, Default)]
pub struct RadixUpdater<A> {
    _family: PhantomData<fn() -> A>,
}

impl<A: Addr> Updater<A> for RadixUpdater<A> {
    type Config = RadixConfig;
    type Snapshot = Radix<A>;
    type Stats = RadixStats;

    fn build(_: &RadixConfig, rib: &Rib<A>) -> Result<(Self, Radix<A>), BuildError> {
        Ok((
            RadixUpdater {
                _family: PhantomData,
            },
            Radix { rib: rib.clone() },
        ))
    }

    fn config(&self) -> RadixConfig {
        RadixConfig
    }

    fn patches(&self) -> bool {
        true
    }

    fn update(
        &mut self,
        snapshot: &mut Radix<A>,
        rib: &Rib<A>,
        changed: &[Prefix<A>],
    ) -> Result<(), BuildError> {
        for &prefix in changed {
            match rib.get(prefix) {
                Some(label) => snapshot.rib.insert(prefix, label),
                None => snapshot.rib.remove(prefix),
            };
        }
        Ok(())
    }

    fn stats(&self, snapshot: &Radix<A>) -> RadixStats {
        RadixStats {
            prefixes: snapshot.rib.len(),
        }
    }
}
