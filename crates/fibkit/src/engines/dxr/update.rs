//! The DXR updater: the build state a snapshot is patched with, and the
//! patches of the chunks changed prefixes cover (see `build` for how the
//! cost of an update is bounded by a build's).

use super::build::{hash_block, range_table_limit, ChunkError, DedupMap, FreeList};
use super::*;
use crate::engine::Updater;
use crate::labels::LabelIndex;
use crate::prefix::Prefix;
use crate::rib::Rib;

/// Compaction threshold: rebuild when free words exceed `1 / COMPACT_RATIO`
/// of the range table and [`COMPACT_MIN_WORDS`].
const COMPACT_RATIO: usize = 4;
const COMPACT_MIN_WORDS: usize = 4096;
/// An update whose changed prefixes touch more than `1 / REBUILD_SHARE` of
/// the chunks rebuilds the snapshot instead of patching it.
// PERF: a patch of every chunk costs about as much as a build (both run
// `fill_chunks`; the patch also releases the old entries); see
// docs/bench/dxr.md, "DXR update cost bounds".
const REBUILD_SHARE: usize = 2;
/// A patch that leaves the range table due for compaction compacts at once
/// only if it touched at most `1 / COMPACT_NOW_SHARE` of the chunks; after a
/// larger one the next update compacts (rebuilds) instead of patching, so
/// no single update pays for a large patch and a rebuild.
const COMPACT_NOW_SHARE: usize = 16;
/// The DXR build state: the label index, the chunks' and extension blocks'
/// reference counts and dedup maps, and the range table's free space. It
/// builds [`Dxr`] snapshots and patches the one it last produced.
#[derive(Clone, Debug)]
pub struct DxrUpdater {
    /// The layout: the spec's, with the `align` the build settled on.
    pub(super) config: DxrConfig,
    /// Whether the spec left `align` to the build (which may raise it).
    pub(super) align_chosen: bool,
    pub(super) geometry: Geometry,
    /// Label → index into the snapshot's results, most frequent first.
    pub(super) labels: LabelIndex,
    /// References to the chunk starting at each range-table word (physical
    /// `ext` entries pointing at it); 0 elsewhere.
    pub(super) chunk_refs: Vec<u32>,
    /// Content hash → entry of a stored chunk with that content.
    pub(super) chunks: DedupMap<u32>,
    pub(super) free: FreeList,
    /// Extended layout: direct entries pointing at each block.
    pub(super) block_refs: Vec<u32>,
    /// Content hash → block number.
    pub(super) blocks: DedupMap<u16>,
    pub(super) free_blocks: Vec<u16>,
    /// Prefixes in the table last built or updated from.
    pub(super) prefixes: usize,
    /// Wall time of the last full build (the first, or a rebuild).
    pub(super) build_ns: u64,
    /// Rebuilds that compacted the range table.
    pub(super) compactions: u64,
    /// Updates that rebuilt because they touched too many chunks to patch.
    pub(super) span_rebuilds: u64,
    pub(super) scratch_words: Vec<u16>,
    pub(super) scratch_block: Vec<u32>,
}

impl Updater<u32> for DxrUpdater {
    type Config = DxrConfig;
    type Snapshot = Dxr;
    type Stats = DxrStats;

    /// Builds at `config`'s `align`, doubling it while the range table
    /// outgrows the base field (see the module docs).
    fn build(config: &DxrConfig, rib: &Rib<u32>) -> Result<(Self, Dxr), BuildError> {
        let mut updater = DxrUpdater::new(*config);
        let mut snapshot = Dxr::empty(*config);
        match updater.rebuild_growing(&mut snapshot, rib) {
            Ok(()) => Ok((updater, snapshot)),
            Err(ChunkError::Label(error)) => Err(error),
            Err(ChunkError::Base) => Err(range_table_limit(*config, updater.config, Some(rib))),
        }
    }

    fn config(&self) -> DxrConfig {
        self.config
    }

    fn patches(&self) -> bool {
        true
    }

    /// A build writes the whole direct table, whatever the table holds.
    fn builds_anew(&self, changed: usize, prefixes: usize) -> bool {
        let direct = 1usize << self.config.k_bits.max(self.config.d_bits);
        crate::engine::larger_than_table(changed, prefixes, direct)
    }

    /// Rebuilds the chunks the changed prefixes cover (a prefix shorter
    /// than `K` covers `2^(K-len)` of them), or the whole snapshot in place
    /// when they are more than `1/REBUILD_SHARE` of the chunks or the range
    /// table is due for compaction.
    fn update(
        &mut self,
        snapshot: &mut Dxr,
        rib: &Rib<u32>,
        changed: &[Prefix<u32>],
    ) -> Result<(), BuildError> {
        // The default route is results slot 0: a change to it touches no
        // chunk (`patch` writes the slot even with no window to rebuild).
        let windows = crate::engines::shared::touched_blocks(
            crate::engines::shared::without_default(changed),
            self.geometry.chunk_shift,
        );
        let touched: usize = windows.iter().map(|&(lo, hi)| (hi - lo) as usize + 1).sum();
        let chunks = 1usize << self.config.k_bits;
        let result = if touched > chunks / REBUILD_SHARE {
            self.span_rebuilds += 1;
            self.rebuild(snapshot, rib)
        } else if self.compaction_due(snapshot) {
            self.compactions += 1;
            self.rebuild(snapshot, rib)
        } else {
            self.patch(snapshot, rib, &windows).and_then(|()| {
                if self.compaction_due(snapshot) && touched <= chunks / COMPACT_NOW_SHARE {
                    self.compactions += 1;
                    self.rebuild(snapshot, rib)
                } else {
                    Ok(())
                }
            })
        };
        // A range table past the base field's reach: the same table with
        // a coarser base step, built in place.
        let result = match result {
            Err(ChunkError::Base) if self.may_grow() => {
                self.grow_align(snapshot);
                self.rebuild_growing(snapshot, rib)
            }
            other => other,
        };
        // The caller rebuilds after an error; `Updater::build` names the
        // layouts that fit then.
        result.map_err(|error| match error {
            ChunkError::Label(error) => error,
            ChunkError::Base => range_table_limit(self.config, self.config, None),
        })
    }

    fn stats(&self, snapshot: &Dxr) -> DxrStats {
        self.collect_stats(snapshot)
    }
}

impl DxrUpdater {
    /// Whether the range table's free words call for a compaction.
    fn compaction_due(&self, snapshot: &Dxr) -> bool {
        let free = self.free.words;
        free > COMPACT_MIN_WORDS && free > snapshot.ranges.len() / COMPACT_RATIO
    }

    /// Rebuilds the chunks of the `windows` (sorted, disjoint chunk-number
    /// ranges) from `rib`.
    fn patch(
        &mut self,
        snapshot: &mut Dxr,
        rib: &Rib<u32>,
        windows: &[(u32, u32)],
    ) -> Result<(), ChunkError> {
        let g = self.geometry;
        let mut ranges = Vec::new();
        let mut indices = Vec::new();
        let mut group: Vec<(u32, u32)> = Vec::new(); // (chunk, entry) of one block
        let mut result = Ok(());
        for &(lo, hi) in windows {
            ranges.clear();
            indices.clear();
            rib.ranges_in_without_default(
                lo << g.chunk_shift,
                (hi << g.chunk_shift) | g.offset_mask,
                true,
                &mut ranges,
            );
            if let Err(error) = self.index_ranges(&ranges, &mut indices) {
                result = Err(error);
                break;
            }
            result = if !self.config.is_extended() {
                self.fill_chunks(
                    snapshot,
                    &ranges,
                    &indices,
                    lo,
                    hi,
                    |updater, snapshot, chunk, entry| {
                        let old = std::mem::replace(&mut snapshot.ext[chunk as usize], entry);
                        updater.release(&snapshot.ranges, old);
                    },
                )
            } else {
                self.fill_chunks(
                    snapshot,
                    &ranges,
                    &indices,
                    lo,
                    hi,
                    |updater, snapshot, chunk, entry| {
                        if group
                            .first()
                            .is_some_and(|&(c, _)| c >> g.x_bits != chunk >> g.x_bits)
                        {
                            updater.patch_block(snapshot, &group);
                            group.clear();
                        }
                        group.push((chunk, entry));
                    },
                )
            };
            if !group.is_empty() {
                self.patch_block(snapshot, &group);
                group.clear();
            }
            if result.is_err() {
                break;
            }
        }
        // Even after an error: entries may name labels added on the way.
        self.labels.set_default(rib.default_route());
        self.labels.sync(&mut snapshot.results);
        self.prefixes = rib.len();
        result
    }

    /// Puts `group`'s (chunk, entry) pairs, all of one block, sorted by
    /// chunk and each holding one reference, in place of the old entries.
    fn patch_block(&mut self, snapshot: &mut Dxr, group: &[(u32, u32)]) {
        let g = self.geometry;
        let block_len = 1usize << g.x_bits;
        let slot = (group[0].0 >> g.x_bits) as usize;
        let old_id = snapshot.direct[slot];
        let old_start = (old_id as usize) << g.x_bits;
        let mut content = std::mem::take(&mut self.scratch_block);
        content.clear();
        content.extend_from_slice(&snapshot.ext[old_start..old_start + block_len]);
        for &(chunk, entry) in group {
            content[(chunk & g.x_mask) as usize] = entry;
        }
        if let Some(id) = self.find_block(&snapshot.ext, &content) {
            if id != old_id {
                self.block_refs[id as usize] += 1;
                snapshot.direct[slot] = id;
                self.release_block(snapshot, old_id);
            }
            // The found block holds its own references.
            for &(_, entry) in group {
                self.release(&snapshot.ranges, entry);
            }
        } else if self.block_refs[old_id as usize] == 1 {
            // Sole owner: rewrite the block in place.
            let old_hash = hash_block(&snapshot.ext[old_start..old_start + block_len]);
            if self.blocks.get(&old_hash) == Some(&old_id) {
                self.blocks.remove(&old_hash);
            }
            for &(chunk, entry) in group {
                let at = old_start + (chunk & g.x_mask) as usize;
                let old = std::mem::replace(&mut snapshot.ext[at], entry);
                self.release(&snapshot.ranges, old);
            }
            self.blocks.insert(hash_block(&content), old_id);
        } else {
            // Shared: copy on write. Every chunk in the copy gains a
            // reference; the group's own references are then dropped.
            for &entry in &content {
                if !is_label(entry) {
                    self.chunk_refs[g.base_of(entry)] += 1;
                }
            }
            for &(_, entry) in group {
                self.release(&snapshot.ranges, entry);
            }
            let id = self.new_block(snapshot, &content);
            snapshot.direct[slot] = id;
            self.release_block(snapshot, old_id);
        }
        self.scratch_block = content;
    }
}
