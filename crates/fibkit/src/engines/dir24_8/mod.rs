//! `dir24-8`: the DIR-24-8 scheme of Gupta, Lin and McKeown, as DPDK's
//! `rte_lpm` and `rte_fib` implement it; fibkit's IPv4 baseline.
//!
//! Layout:
//! ```text
//! tbl24[addr >> 8]            2^24 x u32 = 64 MiB, one entry per /24
//!   bit 31 clear: result index      -> results[index]
//!   bit 31 set:   group number g    -> tbl8[g * 256 + (addr & 0xff)] = result index
//! results[index]                    label slot, index 0 = no route
//! ```
//! A lookup makes two dependent reads for addresses under a /24 or shorter
//! prefix (tbl24, results) and three where a longer prefix forces a group.
//! Labels go through a result table so any `u32` label works; the table is
//! small (one entry per distinct label) and stays in cache.
//!
//! Limits: IPv4 only; at most 2^31 distinct labels and 2^31 groups (more than
//! 2^24 groups cannot occur, so neither limit can be hit by a valid table).
//!
//! Updates rebuild the /24 blocks a changed prefix spans from the reference
//! table's range view; groups that become unnecessary go to a free list.
//! The snapshot ([`Dir24_8`]) holds the three arrays; the updater
//! ([`Dir24_8Updater`]) the label index and the free groups.

use std::fmt;

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

impl<S: Storage> Lookup<u32> for Dir24_8<S> {
    #[inline(always)]
    fn lookup(&self, addr: u32) -> Option<Label> {
        let entry = self.tbl24[(addr >> 8) as usize];
        let index = if is_group(entry) {
            self.tbl8[group_of(entry) * GROUP_SIZE + (addr & 0xff) as usize]
        } else {
            entry
        };
        self.results[index as usize].get()
    }

    fn memory_bytes(&self) -> usize {
        (self.tbl24.len() + self.tbl8.len()) * 4
            + self.results.len() * std::mem::size_of::<LabelSlot>()
    }
}

/// `dir24-8` takes no parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dir24_8Config;

impl fmt::Display for Dir24_8Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("dir24-8")
    }
}

impl EngineConfig for Dir24_8Config {
    const NAMES: &'static [&'static str] = &["dir24-8", "dir24_8"];

    fn from_spec(spec: &EngineSpec) -> Result<Self, BuildError> {
        spec.expect_only(&[])?;
        Ok(Dir24_8Config)
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
    labels: LabelIndex,
    free_groups: Vec<u32>,
}

impl Updater<u32> for Dir24_8Updater {
    type Config = Dir24_8Config;
    type Snapshot = Dir24_8;
    type Stats = Dir24_8Stats;

    /// Builds the tables from `rib`'s range view.
    fn build(_: &Dir24_8Config, rib: &Rib<u32>) -> Result<(Self, Dir24_8), BuildError> {
        let mut updater = Dir24_8Updater {
            labels: LabelIndex::new("dir24-8", MAX_LABELS),
            free_groups: Vec::new(),
        };
        let mut snapshot = Dir24_8 {
            tbl24: vec![0; BLOCKS],
            tbl8: Vec::new(),
            results: Vec::new(),
        };
        updater.fill_blocks(&mut snapshot, 0, (BLOCKS - 1) as u32, &rib.ranges())?;
        updater.labels.sync(&mut snapshot.results);
        Ok((updater, snapshot))
    }

    fn config(&self) -> Dir24_8Config {
        Dir24_8Config
    }

    fn patches(&self) -> bool {
        true
    }

    fn update(
        &mut self,
        snapshot: &mut Dir24_8,
        rib: &Rib<u32>,
        changed: &[Prefix<u32>],
    ) -> Result<(), BuildError> {
        let mut ranges = Vec::new();
        for (first_block, last_block) in super::touched_blocks(changed, 8) {
            ranges.clear();
            rib.ranges_in(
                first_block << 8,
                (last_block << 8) | 0xff,
                true,
                &mut ranges,
            );
            self.fill_blocks(snapshot, first_block, last_block, &ranges)?;
        }
        self.labels.sync(&mut snapshot.results);
        Ok(())
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
                snapshot.tbl24[block as usize] = self.labels.index(ranges[next].label)?;
                continue;
            }
            let group = match self.free_groups.pop() {
                Some(group) => group,
                None => {
                    let group = (snapshot.tbl8.len() / GROUP_SIZE) as u32;
                    snapshot.tbl8.resize(snapshot.tbl8.len() + GROUP_SIZE, 0);
                    group
                }
            };
            let base = group as usize * GROUP_SIZE;
            let mut range = next;
            for offset in 0..GROUP_SIZE {
                let addr = block_first + offset as u32;
                while ranges[range].last < addr {
                    range += 1;
                }
                snapshot.tbl8[base + offset] = self.labels.index(ranges[range].label)?;
            }
            snapshot.tbl24[block as usize] = group | GROUP_FLAG;
        }
        Ok(())
    }
}

impl Dir24_8 {
    /// The arrays to save in an image.
    pub fn image_sections(&self) -> Vec<crate::image::SectionData<'_>> {
        use crate::image::SectionData;
        vec![
            SectionData::new("tbl24", &self.tbl24),
            SectionData::new("tbl8", &self.tbl8),
            SectionData::new("results", &self.results),
        ]
    }
}

impl Dir24_8<crate::image::Mapped> {
    /// The snapshot saved in `image`, read in place, after checking every
    /// invariant the lookup relies on: the direct table's size, whole
    /// groups, and every group number and result index in bounds.
    pub fn from_image(image: &crate::image::Image) -> Result<Self, crate::image::ImageError> {
        let snapshot = Self {
            tbl24: image.array::<u32>("tbl24")?,
            tbl8: image.array::<u32>("tbl8")?,
            results: image.array::<LabelSlot>("results")?,
        };
        if snapshot.tbl24.len() != BLOCKS || !snapshot.tbl8.len().is_multiple_of(GROUP_SIZE) {
            return Err(image.invalid("dir24-8: the tables have the wrong sizes"));
        }
        let (groups, results) = (snapshot.tbl8.len() / GROUP_SIZE, snapshot.results.len());
        if results == 0 {
            return Err(image.invalid("dir24-8: no results table"));
        }
        let bad_entry = |&entry: &u32| {
            if is_group(entry) {
                group_of(entry) >= groups
            } else {
                entry as usize >= results
            }
        };
        if snapshot.tbl24.iter().any(bad_entry)
            || snapshot.tbl8.iter().any(|&index| index as usize >= results)
        {
            return Err(image.invalid("dir24-8: an entry points outside its table"));
        }
        Ok(snapshot)
    }
}
