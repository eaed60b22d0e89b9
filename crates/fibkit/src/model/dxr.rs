//! The model of `dxr:k=K` (Zec's D{K}R layout, `engines/dxr`): access
//! counts per cache line, Equation 2 misses and Equation 1 time, as
//! [`super::predict`] does for the `levels` engine (Narlikar and Zane §4).
//!
//! What a lookup of `addr` reads, and what is counted:
//! ```text
//! ext[addr >> (32-K)]                 one u32: its line gets the lookup
//! (chunk of n >= 2 ranges:)
//!   ranges[base]                      size word, when n >= 255
//!   ranges[base + low + half] ...     each halving step of `search_window`
//!                                     while more than 16 words remain
//!   ranges[base + low .. + 16]        the 16-word window (one or two lines)
//!   ranges[base + n + i]              the label word (long and wide chunks)
//! ```
//! The simulation rebuilds the range table's layout the way a fresh build
//! lays it out: label indices by how many ranges carry the label (ties by
//! label), short/long/wide per chunk by the engine's rule, identical chunks
//! stored once, chunks placed one after the other in address order; then,
//! for every range of a chunk, it replays the engine's search (whose reads
//! depend only on which range holds the address) and adds the range's
//! lookups in the chunk to every line read.
//!
//! Departures from the paper and from the engine: the paper's blocks are
//! trie nodes and tree nodes; here they are cache lines of the two arrays
//! (every cache level is assumed to have the innermost level's line size).
//! Every dependent read counts as one trie visit (Equation 1's `t_trie`):
//! DXR has no tree nodes. Not counted: the results table (a `LabelSlot` per
//! distinct label, read once at the end: a few KiB on next-hop tables),
//! chunks an update moved into freed space, and the extended `d=,x=`
//! layout. Memory accesses of the model itself: one pass over the ranges
//! and one over the direct table's lines.

use std::collections::HashMap;

use super::access::{line_bytes, Accesses, ArrayLines, Spread};
use super::{CacheLevel, ModelError, Prediction, WeightedRanges};
use crate::engines::dxr::{MAX_K, MIN_K};
use crate::labels::{labels_by_frequency, LabelMap};
use crate::prefix::Label;

/// Words the engine's window search compares at once (`search_window`).
const WINDOW_WORDS: usize = 16;
/// Chunks of this many ranges or more keep their size in a header word.
const SIZE_ESCAPE: usize = 255;

/// Predicted costs of `dxr:k=K` for the lookups of `view` (the table's
/// merged ranges, the whole IPv4 space, with their lookups) in `caches`.
pub fn predict_dxr(
    view: &WeightedRanges<u32>,
    k_bits: u32,
    caches: &[CacheLevel],
) -> Result<Prediction, ModelError> {
    let mut p = dxr_accesses(view, k_bits, line_bytes(caches))?.predict(caches);
    p.strides = vec![k_bits as u8];
    Ok(p)
}

/// The direct table's and the range table's accesses per line of
/// `line` bytes.
fn dxr_accesses(
    view: &WeightedRanges<u32>,
    k_bits: u32,
    line: usize,
) -> Result<Accesses, ModelError> {
    if !(MIN_K..=MAX_K).contains(&k_bits) {
        return Err(ModelError::Input(format!(
            "dxr:k={k_bits} is outside {MIN_K}..={MAX_K}"
        )));
    }
    let spread = Spread::new(view)?;
    let chunk_shift = 32 - k_bits;
    let offset_mask = (1u128 << chunk_shift) - 1;
    let short_shift = 24 - k_bits;
    let index = label_indices(view);

    // The direct table: one u32 per chunk, lines in address order.
    let mut direct = ArrayLines::new(line);
    let chunks_per_line = (line / 4).max(1) as u128;
    let line_span = chunks_per_line << chunk_shift;
    let mut cursor = 0;
    let lines = (1u128 << 32) / line_span;
    for l in 0..lines {
        let lo = l * line_span;
        let accesses = spread.between(lo, lo + line_span - 1, &mut cursor);
        direct.add(l as usize * line, accesses);
    }
    let mut reads = spread.total();

    // The range table, chunk by chunk.
    let mut ranges = ArrayLines::new(line);
    let mut stored: HashMap<(usize, Vec<u16>), usize> = HashMap::new();
    let mut words_total = 0usize;
    let mut words = Vec::new();
    let mut last_chunk = None;
    for i in 1..spread.ranges() {
        let (first, _) = spread.range(i);
        if first & offset_mask == 0 {
            continue;
        }
        let chunk = first >> chunk_shift;
        if last_chunk == Some(chunk) {
            continue;
        }
        last_chunk = Some(chunk);
        let lo = chunk << chunk_shift;
        let hi = lo | offset_mask;
        let (j, k) = (spread.range_of(lo), spread.range_of(hi));
        let n = k - j + 1;
        let offset = |r: usize| spread.range(r).0.max(lo) - lo;
        let indices: Vec<u32> = (j..=k).map(|r| index(view.ranges[r].label)).collect();
        let max_index = indices.iter().copied().max().unwrap_or(0);
        let short =
            max_index <= 0xff && (j..=k).all(|r| offset(r) & ((1u128 << short_shift) - 1) == 0);
        let label_words = if short {
            0
        } else if max_index <= 0xffff {
            1
        } else {
            2
        };
        // The chunk's words, as the engine writes them (the dedup key).
        words.clear();
        let escaped = n >= SIZE_ESCAPE;
        if escaped {
            words.push((n - 1) as u16);
        }
        if short {
            words.extend(
                (j..=k)
                    .zip(&indices)
                    .map(|(r, &ix)| (((offset(r) >> short_shift) as u32) << 8 | ix) as u16),
            );
        } else {
            words.extend((j..=k).map(|r| offset(r) as u16));
            for &ix in &indices {
                words.push(ix as u16);
                if label_words == 2 {
                    words.push((ix >> 16) as u16);
                }
            }
        }
        // Long and wide chunks of the same words differ in format.
        let base = *stored
            .entry((label_words, words.clone()))
            .or_insert_with(|| {
                let base = words_total;
                words_total += words.len();
                base
            });
        let data = base + usize::from(escaped);
        for (r, range) in (j..=k).enumerate() {
            let (first, last) = spread.range(range);
            let accesses = spread.between(first.max(lo), last.min(hi), &mut cursor);
            if accesses <= 0.0 {
                continue;
            }
            let mut steps = 0.0;
            if escaped {
                ranges.add(base * 2, accesses);
                steps += 1.0;
            }
            let (mut low, mut len) = (0, n);
            while len > WINDOW_WORDS {
                let half = len / 2;
                ranges.add((data + low + half) * 2, accesses);
                steps += 1.0;
                if r >= low + half {
                    low += half;
                }
                len -= half;
            }
            ranges.add_span((data + low) * 2, WINDOW_WORDS * 2, accesses);
            steps += 1.0;
            if label_words > 0 {
                ranges.add_span((data + n + label_words * r) * 2, label_words * 2, accesses);
                steps += 1.0;
            }
            reads += steps * accesses;
        }
    }
    Ok(Accesses {
        arrays: vec![direct, ranges],
        reads,
        lookups: spread.total(),
        memory_bytes: (4u64 << k_bits) + 2 * words_total as u64,
    })
}

/// The engine's label index of every label of `view`: those on most
/// ranges first (ties by label), from 1; 0 is "no route".
fn label_indices(view: &WeightedRanges<u32>) -> impl Fn(Option<Label>) -> u32 {
    let index: LabelMap<u32> = labels_by_frequency(&view.ranges)
        .into_iter()
        .enumerate()
        .map(|(i, label)| (label, i as u32 + 1))
        .collect();
    move |label| label.and_then(|l| index.get(&l).copied()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::summary::weighted_ranges;
    use crate::model::tests::l1;
    use crate::{Prefix, Rib};

    fn rib_of(prefixes: &[(&str, u32)]) -> Rib<u32> {
        Rib::from_pairs(
            prefixes
                .iter()
                .map(|&(p, l)| (p.parse::<Prefix<u32>>().unwrap(), l)),
        )
    }

    #[test]
    fn counts_match_a_hand_worked_table() {
        // 10.1.0.0/24 -> 1 and 10.1.2.0/24 -> 2 with k=16: five ranges; the
        // chunk 10.1/16 holds four of them (10.1.0/24, 10.1.1/24, 10.1.2/24
        // and the rest of 10.1/16), a short chunk (starts on the /24 grid,
        // label indices below 256) of four words; every other chunk is a
        // label entry. Each range weighs one lookup.
        let rib = rib_of(&[("10.1.0.0/24", 1), ("10.1.2.0/24", 2)]);
        let view = weighted_ranges(&rib, 0, u32::MAX, None);
        assert_eq!(view.ranges.len(), 5);
        let p = predict_dxr(&view, 16, &l1()).unwrap();
        // Ranges 1..=3 lie in the chunk whole, range 4 (10.1.3.0 up to the
        // end of the space) with 253 x 256 of its addresses.
        let last_range = (u32::MAX as u128 - (10u128 << 24 | 1 << 16 | 3 << 8) + 1) as f64;
        let in_chunk = 3.0 + (253.0 * 256.0) / last_range;
        // Every lookup reads its direct entry; those in the chunk read the
        // window too (four words: one line), no label word.
        let reads = 5.0 + in_chunk;
        assert!((p.trie_visits - reads / 5.0).abs() < 1e-9, "{p:?}");
        assert_eq!(p.memory_bytes, (4 << 16) + 2 * 4);
        // Per line: the range table's one line is read by the chunk's
        // lookups; the direct line of chunks 10.0..=10.15 by those and by
        // range 0's share of 10.0/16 and range 4's of 10.2/16..10.15/16.
        let counts = dxr_accesses(&view, 16, 64).unwrap();
        assert_eq!(
            counts.arrays[1].counts.iter().filter(|&&c| c > 0.0).count(),
            1
        );
        assert!((counts.arrays[1].counts[0] - in_chunk).abs() < 1e-9);
        let first_range = (10u128 << 24 | 1 << 16) as f64;
        let direct = 65536.0 / first_range + in_chunk + 14.0 * 65536.0 / last_range;
        assert!((counts.arrays[0].counts[(10 << 8) / 16] - direct).abs() < 1e-9);
        // k=20 keeps the chunk short (its grid is 16 addresses): the same
        // reads, by fewer of the last range's lookups (13 /24s, not 253).
        let q = predict_dxr(&view, 20, &l1()).unwrap();
        assert!((q.trie_visits - p.trie_visits).abs() < 1e-4, "{q:?}");
        // A start off the grid makes a long chunk (three starts, then three
        // label words): its lookups read the window and a label word.
        let long = weighted_ranges(&rib_of(&[("10.1.0.4/30", 1)]), 0, u32::MAX, None);
        let p = predict_dxr(&long, 16, &l1()).unwrap();
        assert_eq!(p.memory_bytes, (4 << 16) + 2 * 6);
        let first = (10u128 << 24 | 1 << 16 | 4) as f64;
        let last = (u32::MAX as u128 - (10u128 << 24 | 1 << 16 | 8) + 1) as f64;
        let in_chunk = 4.0 / first + 1.0 + (65536.0 - 8.0) / last;
        assert!(
            (p.trie_visits - (3.0 + 2.0 * in_chunk) / 3.0).abs() < 1e-9,
            "{p:?}"
        );
        assert!(predict_dxr(&view, 15, &l1()).is_err());
    }

    #[test]
    fn halving_steps_are_counted_for_big_chunks() {
        // 40 /24s with alternating labels in 10.1/16: one chunk of 80 ranges
        // with k=16; the search halves 80 -> 40 -> 20 -> 10 (three reads),
        // then reads the window.
        let mut pairs = Vec::new();
        for i in 0..40u32 {
            pairs.push((format!("10.1.{}.0/24", 2 * i), 1 + i % 2));
        }
        let rib = Rib::from_pairs(
            pairs
                .iter()
                .map(|(p, l)| (p.parse::<Prefix<u32>>().unwrap(), *l)),
        );
        let mut view = weighted_ranges(&rib, 0, u32::MAX, None);
        // Lookups only inside 10.1.0.0/16's ranges (all but the outer two).
        let n = view.weights.len();
        view.weights[0] = 0.0;
        view.weights[n - 1] = 0.0;
        let p = predict_dxr(&view, 16, &l1()).unwrap();
        assert!((p.trie_visits - 5.0).abs() < 1e-9, "{p:?}");
        assert_eq!(p.misses.len(), 1);
    }
}
