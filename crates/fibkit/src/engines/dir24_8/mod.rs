//! `dir24-8`: the DIR-24-8 scheme of Gupta, Lin and McKeown, as DPDK's
//! `rte_lpm` and `rte_fib` implement it; fibkit's IPv4 baseline.
//!
//! Layout:
//! ```text
//! tbl24[addr >> 8]            2^24 x u32 = 64 MiB, one entry per /24
//!   bit 31 clear: result index      -> results[index]
//!   bit 31 set:   group number g    -> tbl8[g * 256 + (addr & 0xff)] = result index
//! results[index]                    label slot; index 0 = the default route (or none)
//! ```
//! A lookup makes two dependent reads for addresses under a /24 or shorter
//! prefix (tbl24, results) and three where a longer prefix forces a group.
//! Labels go through a result table so any `u32` label works; the table is
//! small (one entry per distinct label) and stays in cache.
//!
//! Limits: IPv4 only; at most 2^31 distinct labels (which no valid table
//! reaches) and at most `max-groups` groups, 2^20 by default (1 GiB of
//! tbl8; `dir24-8:max-groups=N` allows up to 2^24, one group per /24 block,
//! 16 GiB). A build counts the groups a table needs from its range view
//! before allocating anything, so a table of millions of scattered long
//! prefixes is refused with the memory it would take, not found out by an
//! allocation failure.
//!
//! The tables are built from the range view without the default route:
//! where only the `/0` matches they hold index 0, and results slot 0 holds
//! the `/0`'s label, so announcing, relabelling or withdrawing the default
//! route writes one slot instead of 2^24 entries. Updates rebuild the /24
//! blocks another changed prefix spans from that range view; groups that
//! become unnecessary go to a free list.
//! The snapshot ([`Dir24_8`]) holds the three arrays; the updater
//! ([`Dir24_8Updater`]) the label index and the free groups.
//!
//! Files: the snapshot, its lookup, the build and the updater stay in this
//! file (about a hundred lines each, and the build is the update of every
//! block); `image` (saved snapshots) and `tests` are beside it.

mod image;

use std::fmt;

use crate::engine::Layout;
use crate::engine::{BuildError, EngineConfig, EngineStats, Lookup, Updater};
use crate::labels::{LabelIndex, LabelSlot};
use crate::prefix::{Label, Prefix};
use crate::rib::{Range, Rib};
use crate::spec::EngineSpec;
use crate::storage::{Owned, Storage};

/// Marks a tbl24 entry that holds a group number instead of a result index.
const GROUP_FLAG: u32 = 1 << 31;
const BLOCKS: usize = 1 << 24;
const GROUP_SIZE: usize = 256;
/// Result indices must stay clear of [`GROUP_FLAG`].
const MAX_LABELS: usize = (GROUP_FLAG - 1) as usize;
/// The most groups a table can need: one per /24 block.
const MAX_GROUPS: u32 = BLOCKS as u32;
/// The groups a build may allocate unless the spec allows more: 1 GiB of
/// tbl8, sixteen times the direct table. A full-Internet table needs a few
/// dozen.
const DEFAULT_MAX_GROUPS: u32 = 1 << 20;
const GROUP_BYTES: usize = GROUP_SIZE * std::mem::size_of::<u32>();
const _: () = assert!(MAX_GROUPS < GROUP_FLAG && DEFAULT_MAX_GROUPS <= MAX_GROUPS);

/// Whether a tbl24 entry points to a group of 256 entries.
#[inline(always)]
fn is_group(entry: u32) -> bool {
    entry & GROUP_FLAG != 0
}

/// The group number of a tbl24 entry for which [`is_group`] holds.
#[inline(always)]
fn group_of(entry: u32) -> usize {
    (entry & !GROUP_FLAG) as usize
}

/// The lookup snapshot of DIR-24-8: the direct table, the groups and the
/// results, in storage `S`.
pub struct Dir24_8<S: Storage = Owned> {
    tbl24: S::Array<u32>,
    tbl8: S::Array<u32>,
    results: S::Array<LabelSlot>,
}

impl<S: Storage> Clone for Dir24_8<S> {
    fn clone(&self) -> Self {
        Dir24_8 {
            tbl24: self.tbl24.clone(),
            tbl8: self.tbl8.clone(),
            results: self.results.clone(),
        }
    }

    /// Reuses this snapshot's memory (the 64 MiB direct table) instead of
    /// allocating and faulting in new pages.
    fn clone_from(&mut self, source: &Self) {
        self.tbl24.clone_from(&source.tbl24);
        self.tbl8.clone_from(&source.tbl8);
        self.results.clone_from(&source.results);
    }
}

impl<S: Storage> Dir24_8<S> {
    /// The lookup, with bounds checks (`UNCHECKED = false`) or without.
    ///
    /// Invariants that make the unchecked reads sound, kept by the build,
    /// every update (successful or not) and checked when an image is
    /// opened: `tbl24` has 2^24 entries and is never resized; a group entry
    /// names a group inside `tbl8` (a group is allocated before an entry
    /// names it, and `tbl8` never shrinks); every other entry of `tbl24`
    /// and every entry of `tbl8` is an index into `results` (the results
    /// table covers every label index an update wrote, on every exit).
    #[inline(always)]
    fn lookup_in<const UNCHECKED: bool>(&self, addr: u32) -> Option<Label> {
        let at = (addr >> 8) as usize;
        let entry = if UNCHECKED {
            debug_assert!(at < self.tbl24.len());
            // SAFETY: `at < 2^24` (a 32-bit address shifted right by 8) and
            // `tbl24` has 2^24 entries (see the invariants above).
            unsafe { *self.tbl24.get_unchecked(at) }
        } else {
            self.tbl24[at]
        };
        let index = if is_group(entry) {
            let at = group_of(entry) * GROUP_SIZE + (addr & 0xff) as usize;
            if UNCHECKED {
                debug_assert!(at < self.tbl8.len());
                // SAFETY: the group is inside `tbl8` and `addr & 0xff` is
                // below the group's 256 entries (see the invariants above).
                unsafe { *self.tbl8.get_unchecked(at) }
            } else {
                self.tbl8[at]
            }
        } else {
            entry
        } as usize;
        if UNCHECKED {
            debug_assert!(index < self.results.len());
            // SAFETY: every index the tables hold is inside `results` (see
            // the invariants above).
            unsafe { self.results.get_unchecked(index) }.get()
        } else {
            self.results[index].get()
        }
    }

    /// [`Lookup::lookup`] with every read bounds-checked: the twin the
    /// tests compare the unchecked lookup with.
    pub fn lookup_checked(&self, addr: u32) -> Option<Label> {
        self.lookup_in::<false>(addr)
    }
}

impl<S: Storage> Lookup<u32> for Dir24_8<S> {
    // PERF: without bounds checks the per-key loop keeps more lookups in
    // flight (docs/bench/peers.md, "Dependent lookups (SEQ) and per key
    // beside DPDK": 1.13x in its own loop, 0.79x -> 0.94x rte_lpm_lookup).
    #[inline(always)]
    fn lookup(&self, addr: u32) -> Option<Label> {
        self.lookup_in::<true>(addr)
    }

    fn memory_bytes(&self) -> usize {
        (self.tbl24.len() + self.tbl8.len()) * 4
            + self.results.len() * std::mem::size_of::<LabelSlot>()
    }
}

/// `dir24-8[:max-groups=N]`: the most tbl8 groups (of 256 entries, 1 KiB
/// each) the engine may allocate, 2^20 by default, at most 2^24.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dir24_8Config {
    /// The most groups a build or an update may allocate.
    pub max_groups: u32,
}

impl Default for Dir24_8Config {
    fn default() -> Self {
        Dir24_8Config {
            max_groups: DEFAULT_MAX_GROUPS,
        }
    }
}

impl fmt::Display for Dir24_8Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("dir24-8")?;
        if self.max_groups != DEFAULT_MAX_GROUPS {
            write!(f, ":max-groups={}", self.max_groups)?;
        }
        Ok(())
    }
}

crate::image::saved!([] Dir24_8 => Dir24_8<crate::image::Mapped>, u32);

impl EngineConfig for Dir24_8Config {
    const NAMES: &'static [&'static str] = &["dir24-8", "dir24_8"];
    const ABOUT: &'static str = "DPDK-style 2^24 direct table plus 256-entry groups; the baseline \
        (max-groups=N, default 2^20)";
    const LAYOUTS: &'static [Layout] = &[Layout::v4("dir24-8")];

    fn from_spec(spec: &EngineSpec) -> Result<Self, BuildError> {
        spec.expect_only(&["max-groups"])?;
        Ok(Dir24_8Config {
            max_groups: spec
                .number("max-groups", 0..=MAX_GROUPS)?
                .unwrap_or(DEFAULT_MAX_GROUPS),
        })
    }
}

/// What a DIR-24-8 table looks like.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Dir24_8Stats {
    /// Entries of the direct table (always 2^24).
    pub tbl24_entries: usize,
    /// Groups of 256 entries that hold a /24 with longer prefixes.
    pub groups_in_use: usize,
    /// Distinct labels in the results table.
    pub labels: usize,
}

impl EngineStats for Dir24_8Stats {
    fn rows(&self) -> Vec<(String, String)> {
        vec![
            ("tbl24 entries".into(), self.tbl24_entries.to_string()),
            ("tbl8 groups in use".into(), self.groups_in_use.to_string()),
            ("distinct labels".into(), self.labels.to_string()),
        ]
    }
}

/// The build state of DIR-24-8: label indices and free groups.
#[derive(Clone, Debug)]
pub struct Dir24_8Updater {
    config: Dir24_8Config,
    labels: LabelIndex,
    free_groups: Vec<u32>,
}

impl Updater<u32> for Dir24_8Updater {
    type Config = Dir24_8Config;
    type Snapshot = Dir24_8;
    type Stats = Dir24_8Stats;

    /// Builds the tables from `rib`'s range view, after checking that the
    /// groups it needs are within the configured limit.
    fn build(config: &Dir24_8Config, rib: &Rib<u32>) -> Result<(Self, Dir24_8), BuildError> {
        let ranges = rib.ranges_without_default();
        let groups = groups_needed(&ranges);
        if groups > config.max_groups as usize {
            return Err(too_many_groups(config, groups));
        }
        let mut updater = Dir24_8Updater {
            config: *config,
            labels: LabelIndex::new(config, MAX_LABELS),
            free_groups: Vec::new(),
        };
        let mut snapshot = Dir24_8 {
            tbl24: vec![0; BLOCKS],
            tbl8: Vec::with_capacity(groups * GROUP_SIZE),
            results: Vec::new(),
        };
        updater.fill_blocks(&mut snapshot, 0, (BLOCKS - 1) as u32, &ranges)?;
        updater.labels.set_default(rib.default_route());
        updater.labels.sync(&mut snapshot.results);
        Ok((updater, snapshot))
    }

    fn config(&self) -> Dir24_8Config {
        self.config
    }

    fn patches(&self) -> bool {
        true
    }

    /// A build writes all 2^24 first-level entries, whatever the table
    /// holds.
    fn builds_anew(&self, changed: usize, prefixes: usize) -> bool {
        crate::engine::larger_than_table(changed, prefixes, BLOCKS)
    }

    fn update(
        &mut self,
        snapshot: &mut Dir24_8,
        rib: &Rib<u32>,
        changed: &[Prefix<u32>],
    ) -> Result<(), BuildError> {
        let mut ranges = Vec::new();
        let mut filled = Ok(());
        for (first_block, last_block) in crate::engines::shared::touched_blocks(
            crate::engines::shared::without_default(changed),
            8,
        ) {
            ranges.clear();
            rib.ranges_in_without_default(
                first_block << 8,
                (last_block << 8) | 0xff,
                true,
                &mut ranges,
            );
            filled = self.fill_blocks(snapshot, first_block, last_block, &ranges);
            if filled.is_err() {
                break;
            }
        }
        if filled.is_ok() {
            self.labels.set_default(rib.default_route());
        }
        // Also after an error: the entries written so far may name labels
        // added on the way, and the unchecked lookup relies on `results`
        // covering every index the tables hold.
        self.labels.sync(&mut snapshot.results);
        filled
    }

    fn stats(&self, snapshot: &Dir24_8) -> Dir24_8Stats {
        Dir24_8Stats {
            tbl24_entries: snapshot.tbl24.len(),
            groups_in_use: snapshot.tbl8.len() / GROUP_SIZE - self.free_groups.len(),
            labels: self.labels.len(),
        }
    }
}

impl Dir24_8Updater {
    /// Rewrites blocks `first_block..=last_block` of `snapshot` from
    /// `ranges`, which must exactly cover those blocks' addresses.
    fn fill_blocks(
        &mut self,
        snapshot: &mut Dir24_8,
        first_block: u32,
        last_block: u32,
        ranges: &[Range<u32>],
    ) -> Result<(), BuildError> {
        debug_assert_eq!(ranges.first().map(|r| r.first), Some(first_block << 8));
        debug_assert_eq!(
            ranges.last().map(|r| r.last),
            Some((last_block << 8) | 0xff)
        );
        let mut next = 0; // index of the range holding the block's first address

        // The label index of the range looked up last: consecutive blocks
        // and group slots mostly lie in one range, so most map lookups are
        // saved (builds in 0.56-0.61x the time on dfz-v4-nh, and 0.47-0.51x
        // on a random table with a label per prefix).
        let mut last = (usize::MAX, 0);
        let mut index_of = |labels: &mut LabelIndex, range: usize| {
            if last.0 != range {
                last = (range, labels.index(ranges[range].label)?);
            }
            Ok::<u32, BuildError>(last.1)
        };
        for block in first_block..=last_block {
            let block_first = block << 8;
            let block_last = block_first | 0xff;
            while ranges[next].last < block_first {
                next += 1;
            }
            let old = snapshot.tbl24[block as usize];
            if is_group(old) {
                self.free_groups.push(group_of(old) as u32);
            }
            if ranges[next].last >= block_last {
                snapshot.tbl24[block as usize] = index_of(&mut self.labels, next)?;
                continue;
            }
            let group = match self.free_groups.pop() {
                Some(group) => group,
                None => {
                    let groups = snapshot.tbl8.len() / GROUP_SIZE;
                    if groups == self.config.max_groups as usize {
                        return Err(too_many_groups(&self.config, groups + 1));
                    }
                    snapshot.tbl8.resize(snapshot.tbl8.len() + GROUP_SIZE, 0);
                    groups as u32
                }
            };
            let base = group as usize * GROUP_SIZE;
            let mut range = next;
            for offset in 0..GROUP_SIZE {
                let addr = block_first + offset as u32;
                while ranges[range].last < addr {
                    range += 1;
                }
                snapshot.tbl8[base + offset] = index_of(&mut self.labels, range)?;
            }
            snapshot.tbl24[block as usize] = group | GROUP_FLAG;
        }
        Ok(())
    }
}
/// How many groups a table with these (merged) `ranges` needs: one for
/// each /24 block that a range starts inside of, after its first address.
fn groups_needed(ranges: &[Range<u32>]) -> usize {
    let mut groups = 0;
    let mut last_block = None;
    for range in ranges {
        let block = range.first >> 8;
        if range.first & 0xff != 0 && last_block != Some(block) {
            groups += 1;
            last_block = Some(block);
        }
    }
    groups
}

/// The error for a table that needs `groups` groups, over the limit.
fn too_many_groups(config: &Dir24_8Config, groups: usize) -> BuildError {
    let gib = |groups: usize| (groups * GROUP_BYTES) as f64 / f64::from(1 << 30);
    BuildError::Limit {
        engine: config.to_string(),
        why: format!(
            "it needs {groups} groups of {GROUP_SIZE} entries ({:.2} GiB of tbl8 beside the \
             64 MiB direct table), over the limit of {} ({:.2} GiB); {}",
            gib(groups),
            config.max_groups,
            gib(config.max_groups as usize),
            if groups <= MAX_GROUPS as usize {
                format!(
                    "allow them with `dir24-8:max-groups={groups}`, or use `dxr`, \
                     whose size follows the table's ranges"
                )
            } else {
                "use `dxr`, whose size follows the table's ranges".to_string()
            }
        ),
    }
}
#[cfg(test)]
mod tests;
