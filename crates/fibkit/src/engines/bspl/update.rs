//! Updating `bspl`: the updater, and the batches of plain `bspl` planned
//! against the tables, then written (the per-key patches are in `patch`,
//! the hybrid's updates in `hybrid::update`).

use std::collections::HashMap;

use super::build::plan_block;
use super::place::{
    block_addrs, block_of, check_lengths, merge_windows, paint, placed_entries, replace_entries,
    reserve_table, Entry,
};
use super::table::{Bucket, Kind, Level};
use super::{
    build, entry_value, first_entry, hybrid, Bspl, BsplConfig, BsplStats, TableStats, MARKER,
};
use crate::addr::Addr;
use crate::engine::{BuildError, Updater};
use crate::engines::shared::expand::expand;
use crate::labels::LabelIndex;
use crate::prefix::{Label, Prefix};
use crate::rib::Rib;

/// Builds `bspl` or, if `config` asks for it, the hybrid from `rib`.
fn build_any<A: Addr>(
    config: &BsplConfig,
    rib: &Rib<A>,
) -> Result<(BsplUpdater<A>, Bspl<A>), BuildError> {
    if config.hybrid {
        return hybrid::build(config, rib);
    }
    build::build(config, rib)
}

/// The build state of `bspl`: the label index, the chosen lengths and the
/// keys each block placed (to remove them when the block is rebuilt).
#[derive(Clone)]
pub struct BsplUpdater<A> {
    pub(super) config: BsplConfig,
    pub(super) labels: LabelIndex,
    /// The keys (table, address bits) each hashed block placed, sorted.
    pub(super) blocks: HashMap<u32, Vec<(u8, A)>>,
    /// Entries of each table.
    pub(super) table_entries: [usize; 16],
    /// Statistics of the last full build (and seed work since).
    pub(super) build_stats: Box<BsplStats>,
    /// Hybrid: the trie nodes (as pointers) each block allocated.
    pub(super) trie_nodes: HashMap<u32, Vec<u32>>,
    /// Hybrid: freed trie nodes' bases, by stride.
    pub(super) trie_free: Vec<Vec<u32>>,
}

impl<A: Addr> Updater<A> for BsplUpdater<A> {
    type Config = BsplConfig;
    type Snapshot = Bspl<A>;
    type Stats = BsplStats;

    fn build(config: &BsplConfig, rib: &Rib<A>) -> Result<(Self, Bspl<A>), BuildError> {
        build_any(config, rib)
    }

    fn config(&self) -> BsplConfig {
        self.config.clone()
    }

    fn patches(&self) -> bool {
        true
    }

    fn update(
        &mut self,
        snapshot: &mut Bspl<A>,
        rib: &Rib<A>,
        changed: &[Prefix<A>],
    ) -> Result<(), BuildError> {
        if snapshot.hybrid {
            return self.apply_hybrid(snapshot, rib, changed);
        }
        let batch = self.plan_batch(snapshot, rib, changed)?;
        if batch.costs_more_than_builds() {
            // Build anew, unless the table fits no fresh layout: then the
            // batch is written after all (nothing was written yet).
            if let Ok(built) = build_any(&self.config, rib) {
                (*self, *snapshot) = built;
                return Ok(());
            }
        }
        self.write_batch(snapshot, rib, batch)
    }

    /// Hash tables probed per lookup.
    fn lookup_work(snapshot: &Bspl<A>, addrs: &[A]) -> Option<Vec<(String, String)>> {
        let probes: usize = addrs.iter().map(|&addr| snapshot.probes(addr)).sum();
        Some(vec![
            ("lookups counted".into(), addrs.len().to_string()),
            (
                "tables probed".into(),
                format!("{:.2}", probes as f64 / addrs.len().max(1) as f64),
            ),
        ])
    }

    fn stats(&self, snapshot: &Bspl<A>) -> BsplStats {
        let mut stats = (*self.build_stats).clone();
        let [first, tables, trie, results] = snapshot.part_bytes();
        stats.first_bytes = first;
        stats.table_bytes = tables;
        stats.trie_bytes = trie;
        stats.results_bytes = results;
        stats.labels = self.labels.len();
        stats.hashed_blocks = self.blocks.len();
        stats.tables = snapshot.levels[..snapshot.level_count as usize]
            .iter()
            .map(|level| {
                let range = level.base as usize..level.base as usize + level.buckets();
                let (entries, markers) = match level.kind {
                    Kind::K32 => count_entries(&snapshot.b32[range], snapshot.hybrid),
                    Kind::K64 => count_entries(&snapshot.b64[range], snapshot.hybrid),
                    Kind::K128 => count_entries(&snapshot.b128[range], snapshot.hybrid),
                };
                TableStats {
                    plen: level.plen,
                    kind: level.kind,
                    entries,
                    markers,
                    buckets: level.buckets(),
                }
            })
            .collect();
        stats
    }
}

/// Entries and markers (hybrid: trie pointers) in `buckets`.
fn count_entries<B: Bucket>(buckets: &[B], hybrid: bool) -> (usize, usize) {
    let mut entries = 0;
    let mut markers = 0;
    let flag = if hybrid {
        hybrid::flags::POINTER
    } else {
        MARKER
    };
    for (_, value) in buckets.iter().flat_map(|b| b.entries()) {
        entries += 1;
        markers += (value & flag != 0) as usize;
    }
    (entries, markers)
}

/// A batch's work, in units of half what a build spends on one table
/// entry (its expansion, grouping and seed search): an insert or a patched
/// key (its value from two searches of the reference table, then a probe)
/// costs two, a removal one, an entry of a table the batch enlarges two
/// (the table placed anew). Fitted to IPv4 and IPv6 batches that re-plan
/// or patch 10^3 to 10^4 blocks of tables of 10^4 to 8·10^7 entries, where
/// the patch ran at 0.3–2.1 builds.
const INSERT_WORK: usize = 2;
/// See [`INSERT_WORK`].
const REMOVE_WORK: usize = 1;
/// See [`INSERT_WORK`].
const KEY_WORK: usize = 2;
/// See [`INSERT_WORK`].
const GROW_WORK: usize = 2;
/// A build's work per entry of the table it builds.
const BUILD_ENTRY_WORK: usize = 2;
/// A build's work per prefix beside its entries (the length program,
/// grouping and expanding): about three entries' worth on dfz-v4-nh.
const BUILD_PREFIX_WORK: usize = 6;
/// How many builds' work a batch may plan before the table is built anew
/// instead: the estimate is rough (what an insert or a build costs per
/// entry varies with the tables' size against the caches), and a batch
/// given up has cost its planning on top of the build.
const BUILDS_PER_BATCH: usize = 2;

/// What a batch does to one block.
pub(crate) enum BlockChange<A> {
    /// Recompute these keys (see [`BsplUpdater::patch_keys`]).
    Patch(Vec<(u8, A)>),
    /// Replace the block's entries with a new plan.
    Replan(BlockPlan<A>),
}

/// A block planned anew: its entries, tables and first probe.
pub(crate) struct BlockPlan<A> {
    entries: Vec<Entry<A>>,
    tables: (usize, usize),
    root: usize,
}

/// A batch of plain `bspl` planned against the tables, nothing written:
/// the first-level windows to repaint, each changed block's patch or new
/// plan, the tables to enlarge once for it, and its work against a
/// build's.
pub(crate) struct PlannedBatch<A> {
    pub(super) windows: Vec<(usize, usize)>,
    /// `(block, changed prefixes in it, change)`.
    pub(super) blocks: Vec<(u32, usize, BlockChange<A>)>,
    /// `(table, entries to make room for)`.
    pub(super) enlarge: Vec<(usize, usize)>,
    pub(super) work: usize,
    pub(super) build_work: usize,
}

impl<A> PlannedBatch<A> {
    /// Whether writing the batch would cost more than [`BUILDS_PER_BATCH`]
    /// builds of the table after it (see [`INSERT_WORK`]).
    pub(crate) fn costs_more_than_builds(&self) -> bool {
        self.work > BUILDS_PER_BATCH * self.build_work
    }
}

/// A batch's planned work against a build's (see [`INSERT_WORK`]).
struct BatchCost {
    work: usize,
    /// Entries of each table before the batch.
    entries: [usize; 16],
    /// Per table, the most entries the batch may add at once: a re-planned
    /// block removes its entries before placing its new ones, a patched
    /// key may be an insert.
    added: [usize; 16],
    /// Entries of all tables after the batch, patched keys aside.
    after: usize,
}

impl BatchCost {
    fn new(entries: [usize; 16]) -> Self {
        BatchCost {
            work: 0,
            entries,
            added: [0; 16],
            after: entries.iter().sum(),
        }
    }

    fn add<A>(&mut self, change: &BlockChange<A>, old: &[(u8, A)]) {
        match change {
            BlockChange::Patch(keys) => {
                self.work += KEY_WORK * keys.len();
                for &(table, _) in keys {
                    self.added[table as usize] += 1;
                }
            }
            BlockChange::Replan(plan) => {
                self.work += REMOVE_WORK * old.len() + INSERT_WORK * plan.entries.len();
                let mut net = [0isize; 16];
                for &(table, _) in old {
                    net[table as usize] -= 1;
                }
                for entry in &plan.entries {
                    net[entry.level as usize] += 1;
                }
                for (added, net) in self.added.iter_mut().zip(net) {
                    *added += net.max(0) as usize;
                }
                self.after = self.after + plan.entries.len() - old.len();
            }
        }
    }

    /// The tables of `levels` the batch fills past the build's fill with a
    /// share of their entries, with the entries to make room for; adds the
    /// work of enlarging them. A table enlarged insert by insert doubles
    /// once per overflow, each time placing all its entries anew, which
    /// made a batch that grows a table twentyfold cost four builds; smaller
    /// additions enlarge a table when a window overflows, as single updates
    /// do.
    fn tables_to_enlarge(&mut self, levels: &[Level]) -> Vec<(usize, usize)> {
        let mut enlarge = Vec::new();
        for (j, level) in levels.iter().enumerate() {
            let (entries, added) = (self.entries[j], self.added[j]);
            let room = level.buckets() as f64 * level.kind.slots() as f64 * level.kind.load();
            if (entries + added) as f64 > room && added * 8 >= entries {
                self.work += GROW_WORK * (entries + added);
                enlarge.push((j, entries + added));
            }
        }
        enlarge
    }
}

impl<A: Addr> BsplUpdater<A> {
    /// Entries in all tables.
    pub(crate) fn entries(&self) -> usize {
        self.table_entries.iter().sum()
    }

    /// Plans bringing `snapshot` (plain `bspl`) in line with `rib` after
    /// `changed` changed: first-level BMPs for short prefixes, a patch or a
    /// new plan for each block of long ones. Writes nothing, so the batch
    /// can be given up for a build ([`PlannedBatch::costs_more_than_builds`]).
    pub(crate) fn plan_batch(
        &self,
        snapshot: &Bspl<A>,
        rib: &Rib<A>,
        changed: &[Prefix<A>],
    ) -> Result<PlannedBatch<A>, BuildError> {
        let first_bits = snapshot.first_bits;
        let mut windows = Vec::new();
        // The longer prefixes by block.
        let mut long: Vec<(u32, Prefix<A>)> = Vec::new();
        // The default route is results slot 0: it paints no block.
        for prefix in crate::engines::shared::without_default(changed) {
            if prefix.plen() <= first_bits {
                windows.push((
                    block_of(prefix.first(), first_bits),
                    block_of(prefix.last(), first_bits),
                ));
            } else {
                long.push((block_of(prefix.addr(), first_bits) as u32, *prefix));
            }
        }
        long.sort_unstable();
        long.dedup();
        let lengths = snapshot.lengths();
        let mut cost = BatchCost::new(self.table_entries);
        let mut blocks = Vec::new();
        let mut prefixes: Vec<Prefix<A>> = Vec::new();
        for group in long.chunk_by(|a, b| a.0 == b.0) {
            let block = group[0].0;
            prefixes.clear();
            prefixes.extend(group.iter().map(|&(_, prefix)| prefix));
            let change = match self.patch_keys(snapshot, &lengths, rib, block, &prefixes) {
                Some(keys) => BlockChange::Patch(keys),
                None => BlockChange::Replan(self.plan_anew(snapshot, &lengths, rib, block)?),
            };
            let old = self.blocks.get(&block).map_or(&[][..], Vec::as_slice);
            cost.add(&change, old);
            blocks.push((block, group.len(), change));
        }
        let count = snapshot.level_count as usize;
        let enlarge = cost.tables_to_enlarge(&snapshot.levels[..count]);
        Ok(PlannedBatch {
            windows: merge_windows(windows),
            blocks,
            enlarge,
            work: cost.work,
            build_work: BUILD_ENTRY_WORK * cost.after + BUILD_PREFIX_WORK * rib.len(),
        })
    }

    /// Writes `batch` (planned by [`Self::plan_batch`] for `rib`) to
    /// `snapshot`: repaints the first level, enlarges the tables the batch
    /// fills, then patches or re-plans each block.
    pub(crate) fn write_batch(
        &mut self,
        snapshot: &mut Bspl<A>,
        rib: &Rib<A>,
        batch: PlannedBatch<A>,
    ) -> Result<(), BuildError> {
        let first_bits = snapshot.first_bits;
        for window in batch.windows {
            let (lo, hi) = block_addrs::<A>(window, first_bits);
            paint(
                &mut snapshot.first,
                first_bits,
                rib.iter_in(lo, hi),
                window,
                &mut self.labels,
                0,
            )?;
        }
        let engine = self.config.to_string();
        for (j, entries) in batch.enlarge {
            reserve_table(snapshot, j, entries, &mut self.build_stats).map_err(|why| {
                BuildError::Limit {
                    engine: engine.clone(),
                    why,
                }
            })?;
        }
        let lengths = snapshot.lengths();
        for (block, patched, change) in batch.blocks {
            match change {
                BlockChange::Patch(keys) => {
                    self.write_patch(snapshot, &lengths, rib, block, &keys, patched)?
                }
                BlockChange::Replan(plan) => self.write_plan(snapshot, block, plan)?,
            }
        }
        self.labels.set_default(rib.default_route());
        self.labels.sync(&mut snapshot.results);
        Ok(())
    }

    /// Asks for a full build when the blocks to re-plan, `blocks`, hold more
    /// than half the entries (re-planning them one by one would cost more).
    pub(crate) fn check_work(&self, blocks: &[u32]) -> Result<(), BuildError> {
        let touched: usize = blocks
            .iter()
            .map(|b| self.blocks.get(b).map_or(0, Vec::len))
            .sum();
        if touched > 1024 && touched * 2 > self.entries() {
            return Err(BuildError::UpdateUnsupported {
                engine: self.config.to_string(),
            });
        }
        Ok(())
    }

    /// Plans block `block` anew from `rib` with the tables' lengths
    /// `lengths` and search tree. Writes nothing.
    fn plan_anew(
        &self,
        snapshot: &Bspl<A>,
        lengths: &[u8],
        rib: &Rib<A>,
        block: u32,
    ) -> Result<BlockPlan<A>, BuildError> {
        let first_bits = snapshot.first_bits;
        let engine = self.config.to_string();
        let limit = |why: String| BuildError::Limit {
            engine: engine.clone(),
            why,
        };
        let (lo, hi) = block_addrs::<A>((block as usize, block as usize), first_bits);
        let inner: Vec<(Prefix<A>, Label)> = rib
            .iter_in(lo, hi)
            .filter(|(p, _)| p.plen() > first_bits)
            .collect();
        check_lengths(&inner, lengths).map_err(limit)?;
        let expanded = expand(&inner, lengths).map_err(|e| limit(e.to_string()))?;
        let mut entries = Vec::new();
        let (tables, root) = plan_block(
            &inner,
            &expanded,
            lengths,
            &snapshot.tree,
            (lo, hi),
            &mut entries,
        );
        Ok(BlockPlan {
            entries,
            tables,
            root,
        })
    }

    /// Replaces block `block`'s entries with `plan`'s and rewrites its
    /// first-level entry.
    fn write_plan(
        &mut self,
        snapshot: &mut Bspl<A>,
        block: u32,
        plan: BlockPlan<A>,
    ) -> Result<(), BuildError> {
        let engine = self.config.to_string();
        let placed = placed_entries(&plan.entries, &mut self.labels)?;
        let old = self.blocks.remove(&block).unwrap_or_default();
        for &(table, _) in &old {
            self.table_entries[table as usize] -= 1;
        }
        for e in &placed {
            self.table_entries[e.level as usize] += 1;
        }
        replace_entries(snapshot, &old, &placed, &mut self.build_stats, &engine)?;
        let entry = &mut snapshot.first[block as usize];
        *entry = first_entry(entry_value(*entry), plan.tables, plan.root);
        if !placed.is_empty() {
            self.blocks
                .insert(block, placed.iter().map(|e| (e.level, e.key)).collect());
        }
        self.build_stats.blocks_rebuilt += 1;
        Ok(())
    }
}
