//! What the DXR and CPE models share: the lookups falling in any address
//! interval of a weighted range view, per-cache-line access counts of a flat
//! array, and the step from those counts to Equation 2's misses per cache
//! level (Narlikar and Zane §4.2) in a [`Prediction`].
//!
//! A lookup of an engine made of flat arrays reads a few array elements one
//! after the other; the memory blocks of Equation 2 are the arrays' cache
//! lines. Every model here simulates the engine's reads for every range of
//! the view (a range's lookups are spread uniformly over its addresses, the
//! paper's assumption) and adds the range's lookups to each line it reads.

use super::predict::{Blocks, EqTwo, Prediction};
use super::{CacheLevel, ModelError, WeightedRanges};
use crate::addr::Addr;

/// The lookups of a range view as a function of the address: lookups in
/// `0..=x` for any `x`, interpolated uniformly inside each range.
pub(crate) struct Spread {
    firsts: Vec<u128>,
    lasts: Vec<u128>,
    weights: Vec<f64>,
    /// Lookups in ranges `0..i`.
    cumulative: Vec<f64>,
}

impl Spread {
    /// The spread of `view`; fails when it carries no lookups.
    pub(crate) fn new<A: Addr>(view: &WeightedRanges<A>) -> Result<Self, ModelError> {
        let firsts: Vec<u128> = view.ranges.iter().map(|r| r.first.to_u128()).collect();
        let lasts: Vec<u128> = view.ranges.iter().map(|r| r.last.to_u128()).collect();
        let mut cumulative = Vec::with_capacity(view.weights.len() + 1);
        cumulative.push(0.0);
        for w in &view.weights {
            cumulative.push(cumulative.last().copied().unwrap_or(0.0) + w);
        }
        let spread = Spread {
            firsts,
            lasts,
            weights: view.weights.clone(),
            cumulative,
        };
        if spread.ranges() == 0 || spread.total() <= 0.0 {
            return Err(ModelError::Input(
                "no lookup falls into the table's ranges: nothing to model \
                 (an empty table, or a trace that matches none of its prefixes)"
                    .into(),
            ));
        }
        Ok(spread)
    }

    /// Ranges in the view.
    pub(crate) fn ranges(&self) -> usize {
        self.firsts.len()
    }

    /// All lookups.
    pub(crate) fn total(&self) -> f64 {
        self.cumulative.last().copied().unwrap_or(0.0)
    }

    /// `(first, last)` of range `i`.
    pub(crate) fn range(&self, i: usize) -> (u128, u128) {
        (self.firsts[i], self.lasts[i])
    }

    /// The index of the range holding `addr`.
    pub(crate) fn range_of(&self, addr: u128) -> usize {
        self.lasts
            .partition_point(|&last| last < addr)
            .min(self.ranges() - 1)
    }

    /// Lookups in addresses `0..=x`. `cursor` remembers the range of the
    /// last call: increasing `x` (the usual order) walks it forward.
    pub(crate) fn upto(&self, x: u128, cursor: &mut usize) -> f64 {
        if *cursor >= self.ranges() || self.firsts[*cursor] > x {
            *cursor = self.range_of(x);
        }
        while *cursor + 1 < self.ranges() && self.lasts[*cursor] < x {
            *cursor += 1;
        }
        let i = *cursor;
        let size = (self.lasts[i] - self.firsts[i]) as f64 + 1.0;
        let inside = (x.min(self.lasts[i]) - self.firsts[i]) as f64 + 1.0;
        self.cumulative[i] + self.weights[i] * (inside / size)
    }

    /// Lookups in addresses `lo..=hi`.
    pub(crate) fn between(&self, lo: u128, hi: u128, cursor: &mut usize) -> f64 {
        let before = if lo == 0 {
            0.0
        } else {
            self.upto(lo - 1, cursor)
        };
        (self.upto(hi, cursor) - before).max(0.0)
    }

    /// The lookups in each of `count` consecutive intervals of
    /// `2^span_bits` addresses from `lo` (the entries of one direct table),
    /// in order.
    pub(crate) fn entry_lookups(
        &self,
        lo: u128,
        count: usize,
        span_bits: u32,
        cursor: &mut usize,
    ) -> Vec<f64> {
        let mut before = if lo == 0 {
            0.0
        } else {
            self.upto(lo - 1, cursor)
        };
        (0..count)
            .map(|e| {
                // `first + (2^span - 1)`: no overflow at the top of the space.
                let last = lo + ((e as u128) << span_bits) + ((1u128 << span_bits) - 1);
                let upto = self.upto(last, cursor);
                let lookups = (upto - before).max(0.0);
                before = upto;
                lookups
            })
            .collect()
    }
}

/// The walk of an array of direct tables of 4-byte entries (`cpe`'s node
/// array, `dxr6`'s root and node tables), counted against the ranges'
/// lookups: what the two models' walks share.
pub(crate) struct TableWalk<'a> {
    spread: &'a Spread,
    /// Accesses per line of the entries.
    pub(crate) lines: ArrayLines,
    /// Reads, summed over the lookups.
    pub(crate) reads: f64,
    /// The ranges already passed (the walk moves forward in address order).
    cursor: usize,
}

impl<'a> TableWalk<'a> {
    /// A walk over `spread`'s lookups, counting lines of `line_bytes`.
    pub(crate) fn new(spread: &'a Spread, line_bytes: usize) -> Self {
        TableWalk {
            spread,
            lines: ArrayLines::new(line_bytes),
            reads: 0.0,
            cursor: 0,
        }
    }

    /// Counts one read of each entry of the table `entries[base..base +
    /// 2^stride]` by the lookups of its addresses (the table sits at
    /// `depth` bits of `bits`, its first address `lo`), and returns every
    /// entry read, with its lookups and its first address, in order, for
    /// the caller to count what the entries lead to (tables below must be
    /// walked in that order). `None` if the table does not lie inside
    /// `entries` or the stride passes the address width.
    pub(crate) fn table(
        &mut self,
        entries: &[u32],
        base: usize,
        stride: u32,
        depth: u32,
        bits: u32,
        lo: u128,
    ) -> Option<Vec<(u32, f64, u128)>> {
        if stride == 0 || depth + stride > bits {
            return None;
        }
        let span_bits = bits - depth - stride;
        let table = entries.get(base..base.checked_add(1usize.checked_shl(stride)?)?)?;
        let lookups = self
            .spread
            .entry_lookups(lo, table.len(), span_bits, &mut self.cursor);
        let mut read = Vec::new();
        for (e, (&entry, accesses)) in table.iter().zip(lookups).enumerate() {
            if accesses <= 0.0 {
                continue;
            }
            self.lines.add((base + e) * 4, accesses);
            self.reads += accesses;
            read.push((entry, accesses, lo + ((e as u128) << span_bits)));
        }
        Some(read)
    }
}

/// Accesses per cache line of one flat array.
pub(crate) struct ArrayLines {
    line_bytes: usize,
    /// Accesses per line, by line number.
    pub(crate) counts: Vec<f64>,
}

impl ArrayLines {
    /// No accesses yet, for lines of `line_bytes`.
    pub(crate) fn new(line_bytes: usize) -> Self {
        ArrayLines {
            line_bytes: line_bytes.max(1),
            counts: Vec::new(),
        }
    }

    /// `accesses` to the line holding byte `offset` of the array.
    pub(crate) fn add(&mut self, offset: usize, accesses: f64) {
        let line = offset / self.line_bytes;
        if line >= self.counts.len() {
            self.counts.resize((line + 1).next_power_of_two(), 0.0);
        }
        self.counts[line] += accesses;
    }

    /// `accesses` to every line the bytes `offset..offset + len` touch.
    pub(crate) fn add_span(&mut self, offset: usize, len: usize, accesses: f64) {
        let first = offset / self.line_bytes;
        let last = (offset + len.max(1) - 1) / self.line_bytes;
        for line in first..=last {
            self.add(line * self.line_bytes, accesses);
        }
    }
}

/// The line size the models simulate: the innermost cache's (the levels
/// of x86 machines, and the paper's, share one line size).
pub(crate) fn line_bytes(caches: &[CacheLevel]) -> usize {
    caches.first().map_or(64, |c| c.line_bytes as usize).max(1)
}

/// What a model counted: accesses per line of each array the lookups
/// read, and their dependent reads in all.
pub(crate) struct Accesses {
    /// Each array's lines.
    pub(crate) arrays: Vec<ArrayLines>,
    /// Dependent reads of all lookups.
    pub(crate) reads: f64,
    /// Lookups.
    pub(crate) lookups: f64,
    /// Bytes of the arrays.
    pub(crate) memory_bytes: u64,
}

impl Accesses {
    /// Equation 2 per cache level over every counted line: the prediction.
    pub(crate) fn predict(self, caches: &[CacheLevel]) -> Prediction {
        let mut counts: Vec<f64> = self.arrays.into_iter().flat_map(|a| a.counts).collect();
        let total_accesses: f64 = counts.iter().sum();
        let blocks = Blocks::from_counts(&mut counts);
        let misses = caches
            .iter()
            .map(|cache| {
                let eq = EqTwo {
                    blocks: (cache.size_bytes / cache.line_bytes.max(1) as u64) as f64,
                    ways: cache.ways.max(1) as f64,
                    total_accesses,
                };
                blocks.misses(0, &eq) / self.lookups
            })
            .collect();
        Prediction {
            strides: Vec::new(),
            trie_visits: self.reads / self.lookups,
            tree_visits: 0.0,
            misses,
            tree_misses: Vec::new(),
            memory_bytes: self.memory_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rib::Range;

    #[test]
    fn lookups_spread_uniformly_inside_ranges() {
        let view = WeightedRanges {
            ranges: vec![
                Range {
                    first: 0u32,
                    last: 99,
                    label: None,
                },
                Range {
                    first: 100,
                    last: u32::MAX,
                    label: Some(1),
                },
            ],
            weights: vec![10.0, 0.0],
        };
        let spread = Spread::new(&view).unwrap();
        let mut cursor = 0;
        assert!((spread.between(0, 49, &mut cursor) - 5.0).abs() < 1e-9);
        assert!((spread.between(50, 1000, &mut cursor) - 5.0).abs() < 1e-9);
        assert!((spread.between(10, 19, &mut cursor) - 1.0).abs() < 1e-9);
        let empty = WeightedRanges::<u32> {
            ranges: view.ranges.clone(),
            weights: vec![0.0, 0.0],
        };
        assert!(Spread::new(&empty).is_err());
    }

    #[test]
    fn spans_count_every_line_they_touch() {
        let mut lines = ArrayLines::new(64);
        lines.add_span(60, 8, 1.0);
        lines.add_span(0, 32, 2.0);
        assert_eq!(&lines.counts[..2], &[3.0, 1.0]);
    }
}
