//! The `levels` updater: build state, and updates that rebuild the leaves
//! a change touches.

use super::build::{read_densities, tree_depth, Filler};
use super::*;

/// The build state of `levels`: labels, the lookups per address of each
/// prefix (from the trace summary) and the size of the last full build.
#[derive(Clone, Debug)]
pub struct LevelsUpdater<A: Addr> {
    config: LevelsConfig,
    labels: LabelIndex,
    densities: Option<HashMap<Prefix<A>, f64>>,
    built_entries: usize,
    built_nodes: usize,
}

impl<A: Addr> Updater<A> for LevelsUpdater<A>
where
    TreeNode<A>: Plain,
{
    type Config = LevelsConfig;
    type Snapshot = Levels<A>;
    type Stats = LevelsStats;

    fn build(config: &LevelsConfig, rib: &Rib<A>) -> Result<(Self, Levels<A>), BuildError> {
        config.check::<A>()?;
        let densities = match &config.weights {
            Some(path) => Some(read_densities(config, path, rib)?),
            None => None,
        };
        Self::build_weighted(config, rib, densities)
    }

    fn config(&self) -> LevelsConfig {
        self.config.clone()
    }

    fn patches(&self) -> bool {
        true
    }

    fn update(
        &mut self,
        snapshot: &mut Levels<A>,
        rib: &Rib<A>,
        changed: &[Prefix<A>],
    ) -> Result<(), BuildError> {
        self.update_entries(snapshot, rib, changed)
    }

    fn stats(&self, snapshot: &Levels<A>) -> LevelsStats {
        self.describe(snapshot)
    }
}

impl<A: Addr> LevelsUpdater<A>
where
    TreeNode<A>: Plain,
{
    /// Builds with the trees weighted by `densities` (lookups per address
    /// of each prefix, [`prefix_densities`]) instead of the config's file:
    /// what the model uses to build many structures from one summary.
    pub fn build_weighted(
        config: &LevelsConfig,
        rib: &Rib<A>,
        densities: Option<HashMap<Prefix<A>, f64>>,
    ) -> Result<(Self, Levels<A>), BuildError> {
        config.check::<A>()?;
        let mut updater = LevelsUpdater {
            config: config.clone(),
            labels: LabelIndex::new(config, MAX_PAYLOAD),
            densities,
            built_entries: 0,
            built_nodes: 0,
        };
        let mut strides = [0; MAX_LEVELS];
        strides[..config.strides.len()].copy_from_slice(&config.strides);
        let mut snapshot: Levels<A> = Levels {
            strides,
            entries: Vec::new(),
            tree: Vec::new(),
            results: Vec::new(),
        };
        updater.fill_all(&mut snapshot, rib)?;
        Ok((updater, snapshot))
    }

    /// Fills `snapshot`'s arrays from the whole of `rib`, reusing the
    /// memory they hold: the build, and the compaction of an updated
    /// snapshot whose arrays have filled with tables that changes
    /// replaced. The results table is kept (labels only ever gain
    /// indices). On an error the snapshot is half filled and must be
    /// rebuilt.
    fn fill_all(&mut self, snapshot: &mut Levels<A>, rib: &Rib<A>) -> Result<(), BuildError> {
        let config = &self.config;
        let view = weighted_ranges_without_default(rib, A::ZERO, A::MAX, self.densities.as_ref());
        let needed = entries_needed::<A>(&config.strides, &view.ranges);
        if needed > MAX_ENTRIES as u128 {
            return Err(BuildError::Limit {
                engine: config.to_string(),
                why: format!(
                    "its tables need {needed} entries, over the limit of {MAX_ENTRIES} (1 GiB); \
                     use narrower strides below the first level (e.g. `levels:strides=16+8`)"
                ),
            });
        }
        snapshot.entries.clear();
        snapshot.entries.reserve(needed as usize);
        snapshot.tree.clear();
        let top = 1usize << config.strides[0];
        snapshot
            .entries
            .resize(top.next_multiple_of(LINE_ENTRIES), 0);
        let mut filler = Filler {
            strides: &config.strides,
            labels: &mut self.labels,
            snapshot,
            engine: config,
        };
        filler.fill_table(0, 0, A::ZERO, &view.ranges, &view.weights)?;
        self.labels.set_default(rib.default_route());
        self.labels.sync(&mut snapshot.results);
        self.built_entries = snapshot.entries.len();
        self.built_nodes = snapshot.tree.len();
        Ok(())
    }

    fn update_entries(
        &mut self,
        snapshot: &mut Levels<A>,
        rib: &Rib<A>,
        changed: &[Prefix<A>],
    ) -> Result<(), BuildError> {
        if snapshot.entries.len() > 2 * self.built_entries + MAX_STRIDE as usize * LINE_ENTRIES
            || snapshot.tree.len() > 2 * self.built_nodes + 1024
        {
            // Compacting is a build, into the arrays' own memory: deciding
            // it before patching wastes no patch, and refilling vectors
            // that are already allocated and faulted in costs less than
            // the handle's rebuild into fresh ones.
            return self.fill_all(snapshot, rib);
        }
        let first_stride = self.config.strides[0] as u32;
        let shift = A::BITS as u32 - first_stride;
        // The default route is results slot 0: it spans no entry.
        let mut windows: Vec<(usize, usize)> = crate::engines::shared::without_default(changed)
            .iter()
            .map(|p| {
                (
                    (p.first().to_u128() >> shift) as usize,
                    (p.last().to_u128() >> shift) as usize,
                )
            })
            .collect();
        windows.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(windows.len());
        for (lo, hi) in windows {
            match merged.last_mut() {
                Some(last) if lo <= last.1 + 1 => last.1 = last.1.max(hi),
                _ => merged.push((lo, hi)),
            }
        }
        let mut filler = Filler {
            strides: &self.config.strides,
            labels: &mut self.labels,
            snapshot,
            engine: &self.config,
        };
        for (lo, hi) in merged {
            let lo_addr = A::from_u128((lo as u128) << shift);
            // The window's last address: its index, then `shift` one bits
            // (`shift` < 128, since the first stride is at least one bit).
            // Not `((hi + 1) << shift) - 1`, which overflows for the last
            // window of the address space.
            let hi_addr = A::from_u128(((hi as u128) << shift) | ((1u128 << shift) - 1));
            let view =
                weighted_ranges_without_default(rib, lo_addr, hi_addr, self.densities.as_ref());
            filler.fill_entries(0, 0, lo..=hi, lo_addr, &view.ranges, &view.weights)?;
        }
        self.labels.set_default(rib.default_route());
        self.labels.sync(&mut snapshot.results);
        Ok(())
    }

    fn describe(&self, snapshot: &Levels<A>) -> LevelsStats {
        let levels = self.config.strides.len();
        let mut tables_per_level = vec![0; levels];
        tables_per_level[0] = 1;
        let mut trees = 0;
        let mut max_tree_depth = 0;
        // Walk the live tables level by level.
        let mut tables = vec![0usize];
        for level in 0..levels {
            let size = 1usize << self.config.strides[level];
            let mut next = Vec::new();
            for &base in &tables {
                for &entry in &snapshot.entries[base..base + size] {
                    match entry >> TAG_SHIFT {
                        TAG_CHILD => next.push((entry & PAYLOAD_MASK) as usize),
                        TAG_TREE => {
                            trees += 1;
                            max_tree_depth = max_tree_depth
                                .max(tree_depth(&snapshot.tree, entry & PAYLOAD_MASK));
                        }
                        _ => {}
                    }
                }
            }
            if level + 1 < levels {
                tables_per_level[level + 1] = next.len();
            }
            tables = next;
        }
        LevelsStats {
            strides: self.config.strides.clone(),
            tables_per_level,
            entries: snapshot.entries.len(),
            trees,
            tree_nodes: snapshot.tree.len(),
            max_tree_depth,
            weighted: self.densities.is_some(),
            labels: self.labels.len(),
        }
    }
}
