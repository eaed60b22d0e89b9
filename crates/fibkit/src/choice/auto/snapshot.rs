//! The picked engine's updater and snapshot, one variant per candidate engine.

use super::family::AutoFamily;

use crate::engine::{Lookup, Updater};
use crate::engines::cpe::{CpeTrie, CpeUpdater};
use crate::prefix::Label;

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
    #[inline(always)]
    fn lookup(&self, addr: A) -> Option<Label> {
        match self {
            AutoSnapshot::Direct(s) => s.lookup(addr),
            AutoSnapshot::Cpe(s) => s.lookup(addr),
        }
    }

    #[inline]
    fn lookup_batch(&self, addrs: &[A], out: &mut [Option<Label>]) {
        match self {
            AutoSnapshot::Direct(s) => s.lookup_batch(addrs, out),
            AutoSnapshot::Cpe(s) => s.lookup_batch(addrs, out),
        }
    }

    #[inline]
    fn lookup_each(&self, addrs: &[A], out: &mut [Option<Label>]) {
        match self {
            AutoSnapshot::Direct(s) => s.lookup_each(addrs, out),
            AutoSnapshot::Cpe(s) => s.lookup_each(addrs, out),
        }
    }

    #[inline]
    fn lookup_chained(&self, addrs: &[A], out: &mut [Option<Label>], seed: Label) -> Label {
        match self {
            AutoSnapshot::Direct(s) => s.lookup_chained(addrs, out, seed),
            AutoSnapshot::Cpe(s) => s.lookup_chained(addrs, out, seed),
        }
    }

    fn memory_bytes(&self) -> usize {
        match self {
            AutoSnapshot::Direct(s) => s.memory_bytes(),
            AutoSnapshot::Cpe(s) => s.memory_bytes(),
        }
    }
}
