//! The picked engine's updater and snapshot, one variant per candidate engine.

use super::family::AutoFamily;

use crate::engine::{Lookup, Updater};
use crate::engines::cpe::{CpeTrie, CpeUpdater};

/// The picked engine's build state.
#[derive(Clone)]
// One per handle, built once (as the registry's updater enums).
#[allow(clippy::large_enum_variant)]
pub enum AutoEngine<A: AutoFamily> {
    /// DXR.
    Direct(A::Direct),
    /// CPE.
    Cpe(CpeUpdater<A>),
}

/// The picked engine's snapshot.
pub enum AutoSnapshot<A: AutoFamily> {
    /// DXR.
    Direct(<A::Direct as Updater<A>>::Snapshot),
    /// CPE.
    Cpe(CpeTrie<A>),
}

impl<A: AutoFamily> Clone for AutoSnapshot<A> {
    fn clone(&self) -> Self {
        match self {
            AutoSnapshot::Direct(s) => AutoSnapshot::Direct(s.clone()),
            AutoSnapshot::Cpe(s) => AutoSnapshot::Cpe(s.clone()),
        }
    }

    /// Reuses the arrays of a snapshot of the same engine.
    fn clone_from(&mut self, source: &Self) {
        match (self, source) {
            (AutoSnapshot::Direct(s), AutoSnapshot::Direct(source)) => s.clone_from(source),
            (AutoSnapshot::Cpe(s), AutoSnapshot::Cpe(source)) => s.clone_from(source),
            (this, source) => *this = source.clone(),
        }
    }
}

impl<A: AutoFamily> Lookup<A> for AutoSnapshot<A> {
    crate::engine::forward_lookup!(A; match self {
        AutoSnapshot::Direct(s) => s,
        AutoSnapshot::Cpe(s) => s,
    });
}
