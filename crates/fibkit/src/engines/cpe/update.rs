//! The `cpe` updater: the updater of the trie the spec chose.

use super::*;

/// The `cpe` build state: the updater of the trie the spec chose.
#[derive(Clone, Debug)]
pub enum CpeUpdater<A> {
    /// Leaf-pushed (optionally packed).
    Leaf(LeafUpdater<A>),
    /// Not leaf-pushed (`nopush`).
    Nopush(NopushUpdater<A>),
}

impl<A: Addr> Updater<A> for CpeUpdater<A> {
    type Config = CpeConfig;
    type Snapshot = CpeTrie<A>;
    type Stats = CpeStats;

    fn build(config: &CpeConfig, rib: &Rib<A>) -> Result<(Self, CpeTrie<A>), BuildError> {
        let strides = config.plan(rib)?;
        Ok(if config.nopush {
            let (updater, trie) = NopushUpdater::build(config, rib, strides)?;
            (CpeUpdater::Nopush(updater), CpeTrie::Nopush(trie))
        } else {
            let (updater, trie) = LeafUpdater::build(config, rib, strides)?;
            (CpeUpdater::Leaf(updater), CpeTrie::Leaf(trie))
        })
    }

    fn config(&self) -> CpeConfig {
        match self {
            CpeUpdater::Leaf(updater) => updater.shape.config.clone(),
            CpeUpdater::Nopush(updater) => updater.shape.config.clone(),
        }
    }

    fn patches(&self) -> bool {
        match self {
            CpeUpdater::Leaf(updater) => updater.patches(),
            CpeUpdater::Nopush(_) => true,
        }
    }

    fn update(
        &mut self,
        snapshot: &mut CpeTrie<A>,
        rib: &Rib<A>,
        changed: &[Prefix<A>],
    ) -> Result<(), BuildError> {
        match (&mut *self, &mut *snapshot) {
            (CpeUpdater::Leaf(updater), CpeTrie::Leaf(trie)) => {
                if updater.update(trie, rib, changed, true)? {
                    return Ok(());
                }
                // Patching would cost more than a build: build anew, or, if
                // the table does not fit a fresh layout, patch after all
                // (the patch was rolled back, so the trie is intact).
                match Self::build(&updater.shape.config, rib) {
                    Ok(built) => {
                        (*self, *snapshot) = built;
                        Ok(())
                    }
                    Err(_) => updater.update(trie, rib, changed, false).map(drop),
                }
            }
            (CpeUpdater::Nopush(updater), CpeTrie::Nopush(trie)) => {
                updater.update(trie, rib, changed)
            }
            // Not a snapshot this updater built: ask for a rebuild.
            (updater, _) => Err(BuildError::UpdateUnsupported {
                engine: updater.config().to_string(),
            }),
        }
    }

    fn stats(&self, snapshot: &CpeTrie<A>) -> CpeStats {
        match (self, snapshot) {
            (CpeUpdater::Leaf(updater), CpeTrie::Leaf(trie)) => updater.stats(trie),
            (CpeUpdater::Nopush(updater), CpeTrie::Nopush(trie)) => updater.stats(trie),
            _ => CpeStats::default(),
        }
    }
}
