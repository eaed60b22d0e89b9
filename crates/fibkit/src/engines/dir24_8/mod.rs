//! `dir24-8`: the DIR-24-8 scheme of Gupta, Lin and McKeown, as DPDK's
//! `rte_lpm` and `rte_fib` implement it; fibkit's IPv4 baseline.
//!
//! Layout:
//! ```text
//! tbl24[addr >> 8]            2^24 x u32 = 64 MiB, one entry per /24
//!   bit 31 clear: result index      -> results[index]
//!   bit 31 set:   group number g    -> tbl8[g * 256 + (addr & 0xff)] = result index
//! results[index]                    Option<Label>, index 0 = no route
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

use std::collections::HashMap;

use crate::fib::{BuildError, EngineSpec, Fib};
use crate::prefix::{Label, Prefix};
use crate::rib::{Range, Rib};

/// Marks a tbl24 entry that holds a group number instead of a result index.
const GROUP_FLAG: u32 = 1 << 31;
const BLOCKS: usize = 1 << 24;
const GROUP_SIZE: usize = 256;

/// The DIR-24-8 engine.
#[derive(Clone, Debug)]
pub struct Dir24_8 {
    tbl24: Vec<u32>,
    tbl8: Vec<u32>,
    results: Vec<Option<Label>>,
    // Build and update state, not touched by lookups.
    result_index: HashMap<Label, u32>,
    free_groups: Vec<u32>,
}

impl Fib<u32> for Dir24_8 {
    fn name(&self) -> String {
        "dir24-8".to_string()
    }

    fn memory_bytes(&self) -> usize {
        (self.tbl24.len() + self.tbl8.len()) * 4
            + self.results.len() * std::mem::size_of::<Option<Label>>()
    }

    #[inline]
    fn lookup(&self, addr: u32) -> Option<Label> {
        let entry = self.tbl24[(addr >> 8) as usize];
        let index = if entry & GROUP_FLAG == 0 {
            entry
        } else {
            self.tbl8[((entry & !GROUP_FLAG) as usize) * GROUP_SIZE + (addr & 0xff) as usize]
        };
        self.results[index as usize]
    }

    fn update(&mut self, rib: &Rib<u32>, changed: &[Prefix<u32>]) -> Result<(), BuildError> {
        let merged = super::touched_blocks(changed, 8);
        let mut ranges = Vec::new();
        for (first_block, last_block) in merged {
            ranges.clear();
            rib.ranges_in(
                first_block << 8,
                (last_block << 8) | 0xff,
                true,
                &mut ranges,
            );
            self.fill_blocks(first_block, last_block, &ranges)?;
        }
        Ok(())
    }

    fn stats(&self) -> Vec<(String, String)> {
        let groups = self.tbl8.len() / GROUP_SIZE - self.free_groups.len();
        vec![
            ("tbl24 entries".to_string(), self.tbl24.len().to_string()),
            ("tbl8 groups in use".to_string(), groups.to_string()),
            (
                "distinct results".to_string(),
                self.results.len().to_string(),
            ),
        ]
    }
}

impl Dir24_8 {
    /// Builds the tables from `rib`'s range view; the spec takes no parameters.
    pub fn build(spec: &EngineSpec, rib: &Rib<u32>) -> Result<Self, BuildError> {
        spec.expect_only(&[])?;
        let mut engine = Dir24_8 {
            tbl24: vec![0; BLOCKS],
            tbl8: Vec::new(),
            results: vec![None],
            result_index: HashMap::new(),
            free_groups: Vec::new(),
        };
        engine.fill_blocks(0, (BLOCKS - 1) as u32, &rib.ranges())?;
        Ok(engine)
    }

    fn result_index(&mut self, label: Option<Label>) -> Result<u32, BuildError> {
        let Some(label) = label else { return Ok(0) };
        if let Some(&index) = self.result_index.get(&label) {
            return Ok(index);
        }
        let index = self.results.len() as u32;
        if index >= GROUP_FLAG {
            return Err(BuildError::Limit {
                engine: "dir24-8".to_string(),
                why: "more than 2^31 distinct labels".to_string(),
            });
        }
        self.results.push(Some(label));
        self.result_index.insert(label, index);
        Ok(index)
    }

    /// Rewrites blocks `first_block..=last_block` from `ranges`, which must
    /// exactly cover those blocks' addresses.
    fn fill_blocks(
        &mut self,
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
            let old = self.tbl24[block as usize];
            if old & GROUP_FLAG != 0 {
                self.free_groups.push(old & !GROUP_FLAG);
            }
            if ranges[next].last >= block_last {
                self.tbl24[block as usize] = self.result_index(ranges[next].label)?;
                continue;
            }
            let group = match self.free_groups.pop() {
                Some(group) => group,
                None => {
                    let group = (self.tbl8.len() / GROUP_SIZE) as u32;
                    self.tbl8.resize(self.tbl8.len() + GROUP_SIZE, 0);
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
                self.tbl8[base + offset] = self.result_index(ranges[range].label)?;
            }
            self.tbl24[block as usize] = group | GROUP_FLAG;
        }
        Ok(())
    }
}
