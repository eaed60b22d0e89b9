//! Access counts and cache misses of every levelled trie at once
//! (Narlikar and Zane §4.1-4.2), from one pass over the binary trie of a
//! table whose ranges carry their expected lookups.
//!
//! For each depth `d` of the binary trie the pass keeps what any level
//! ending at `d` needs: the nodes more than one range overlaps ("inner":
//! they get a child table or a tree), their lookups, the trees they would
//! hold and the nodes one range covers whose
//! parent is inner ("covered": below them every descendant is alike, so a
//! level deeper than they are sees `2^k` copies of `1/2^k` of their weight,
//! the paper's even split). Access counts per memory block go into
//! log-binned histograms; a query for one stride vector then sums Equation
//! 2 over the bins of the blocks it touches.
//!
//! The paper approximates a splay tree's node visits by `1 + E(T)` (`E`
//! the entropy of the interval weights) and gives each node only its own
//! interval's share; the `levels` trees are static, so the pass builds the
//! same weight-balanced tree the engine would and counts each node's
//! accesses exactly (its subtree's lookups). This matters for shallow
//! first levels, whose big trees the paper leaves out of its error figures.
//!
//! Memory blocks: a trie table's cache line of entries (one node at depth
//! `d_k - log2(line / 4)` of the binary trie, as child tables start on a
//! line) and each tree node (the paper's blocks; a node is 24 or 48 bytes).

use super::{CacheLevel, WeightedRanges};
use crate::addr::Addr;
use crate::engines::levels::{
    tree_cumulative, tree_node_bytes, weight_balanced_split, LINE_ENTRIES, MAX_LEVELS, MAX_STRIDE,
};

/// Histogram bins per octave of access counts (a bin's counts differ by at
/// most 4.4%).
const BINS_PER_OCTAVE: f64 = 16.0;

/// Blocks with their access counts, binned by `log2(count)`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Blocks {
    /// (bin, blocks, total accesses), sorted by bin.
    bins: Vec<(i32, f64, f64)>,
}

impl Blocks {
    pub(crate) fn from_counts(counts: &mut Vec<f64>) -> Self {
        let mut bins: Vec<(i32, f64, f64)> = Vec::new();
        counts.retain(|&c| c > 0.0);
        let mut keyed: Vec<(i32, f64)> = counts
            .iter()
            .map(|&c| ((c.log2() * BINS_PER_OCTAVE).floor() as i32, c))
            .collect();
        keyed.sort_unstable_by_key(|&(bin, _)| bin);
        for (bin, count) in keyed {
            match bins.last_mut() {
                Some(last) if last.0 == bin => {
                    last.1 += 1.0;
                    last.2 += count;
                }
                _ => bins.push((bin, 1.0, count)),
            }
        }
        counts.clear();
        Blocks { bins }
    }

    /// Equation 2 summed over the blocks, each split into `2^halvings`
    /// blocks of a `2^halvings`-th of its accesses.
    pub(crate) fn misses(&self, halvings: u32, cache: &EqTwo) -> f64 {
        let copies = (halvings as f64).exp2();
        self.bins
            .iter()
            .map(|&(_, blocks, accesses)| {
                let per_block = accesses / blocks / copies;
                blocks * copies * cache.misses(per_block)
            })
            .sum()
    }
}

/// Equation 2 for one cache: `m = b (1 - C b / (a B))^a`, zero once a
/// block is hot enough to stay cached.
pub(crate) struct EqTwo {
    /// Blocks (lines) the cache holds.
    pub(crate) blocks: f64,
    /// Its associativity.
    pub(crate) ways: f64,
    /// Accesses to all blocks, over the whole trace.
    pub(crate) total_accesses: f64,
}

impl EqTwo {
    fn misses(&self, accesses: f64) -> f64 {
        let share = self.blocks * accesses / (self.ways * self.total_accesses);
        if share >= 1.0 {
            0.0
        } else {
            accesses * (1.0 - share).powf(self.ways)
        }
    }
}

/// What the pass keeps for one depth of the binary trie.
#[derive(Clone, Debug, Default)]
struct Depth {
    /// Inner nodes (more than one range overlaps them).
    inner_nodes: usize,
    /// Lookups that reach inner nodes.
    inner_lookups: f64,
    /// Inner nodes' lookups, as blocks.
    inner: Blocks,
    /// Covered nodes whose parent is inner, as blocks.
    covered: Blocks,
    /// Tree nodes if this depth is the last level.
    tree_nodes: usize,
    /// Tree node visits if this depth is the last level: `(1 + E) H` summed.
    tree_visits: f64,
    /// Tree nodes' accesses, as blocks.
    trees: Blocks,
}

/// Pushes the accesses of every node of the weight-balanced tree of
/// intervals `lo..hi` to `counts` (a node's are its subtree's lookups) and
/// returns their sum: the tree node visits of those lookups.
fn tree_accesses(
    cumulative: &[f64],
    raw: &[f64],
    lo: usize,
    hi: usize,
    counts: &mut Vec<f64>,
) -> f64 {
    if lo >= hi {
        return 0.0;
    }
    let split = weight_balanced_split(cumulative, lo, hi);
    let here = raw[hi] - raw[lo];
    counts.push(here);
    here + tree_accesses(cumulative, raw, lo, split, counts)
        + tree_accesses(cumulative, raw, split + 1, hi, counts)
}

/// One structure's predicted costs per lookup.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Prediction {
    /// Strides, root first (`levels`; empty for the other engines).
    pub strides: Vec<u8>,
    /// Trie entries visited per lookup (the paper's H); for `dxr` and
    /// `cpe`, every dependent array read of a lookup.
    pub trie_visits: f64,
    /// Tree nodes visited per lookup (the paper's S).
    pub tree_visits: f64,
    /// Misses per lookup in each cache level, innermost first.
    pub misses: Vec<f64>,
    /// The part of `misses` that are reads of search-tree nodes, per level
    /// (empty for structures without trees): the machine may time them
    /// with a weight of their own ([`super::Machine::tree_miss_weight`]).
    pub tree_misses: Vec<f64>,
    /// Bytes of trie entries and tree nodes.
    pub memory_bytes: u64,
}

/// The model of one table and trace: what the pass over the binary trie
/// found, ready to predict any stride vector.
#[derive(Clone, Debug)]
pub struct TrieModel {
    bits: u32,
    tree_node_bytes: usize,
    lookups: f64,
    depths: Vec<Depth>,
}

impl TrieModel {
    /// Runs the pass over `view` (the table's merged ranges with their
    /// lookups) for depths up to `max_depth` (at most the address width).
    pub fn new<A: Addr>(view: &WeightedRanges<A>, max_depth: u32) -> Self {
        let bits = A::BITS as u32;
        let max_depth = max_depth.min(bits);
        let ranges = &view.ranges;
        let firsts: Vec<u128> = ranges.iter().map(|r| r.first.to_u128()).collect();
        let lasts: Vec<u128> = ranges.iter().map(|r| r.last.to_u128()).collect();
        let sizes: Vec<f64> = firsts
            .iter()
            .zip(&lasts)
            .map(|(f, l)| (l - f) as f64 + 1.0)
            .collect();
        let mut cumulative = Vec::with_capacity(ranges.len() + 1);
        cumulative.push(0.0);
        for w in &view.weights {
            cumulative.push(cumulative.last().copied().unwrap_or(0.0) + w);
        }
        let lookups = cumulative.last().copied().unwrap_or(0.0);
        // The ranges overlapping lo..=hi and the lookups falling there.
        let span = |lo: u128, hi: u128| -> (usize, usize, f64) {
            let j = lasts.partition_point(|&l| l < lo);
            let k = lasts.partition_point(|&l| l < hi);
            let part = |i: usize, from: u128, to: u128| {
                view.weights[i] * (((to - from) as f64 + 1.0) / sizes[i])
            };
            let weight = if j == k {
                part(j, lo, hi)
            } else {
                part(j, lo, lasts[j]) + (cumulative[k] - cumulative[j + 1]) + part(k, firsts[k], hi)
            };
            (j, k, weight)
        };
        let mut depths = vec![Depth::default(); max_depth as usize + 1];
        let mut inner_counts = Vec::new();
        let mut covered_counts: Vec<Vec<f64>> = vec![Vec::new(); max_depth as usize + 1];
        let mut tree_counts = Vec::new();
        for d in 0..=max_depth {
            // Inner nodes at depth d, as (lo, hi).
            let nodes: Vec<(u128, u128)> = if d == 0 {
                if ranges.len() > 1 {
                    vec![(0, A::MAX.to_u128())]
                } else {
                    Vec::new()
                }
            } else {
                let shift = bits - d;
                let mut nodes = Vec::new();
                let mut last_node = None;
                for &first in firsts.iter().skip(1) {
                    if first & ((1u128 << shift) - 1) == 0 {
                        continue;
                    }
                    let node = first >> shift;
                    if last_node != Some(node) {
                        last_node = Some(node);
                        let lo = node << shift;
                        nodes.push((lo, lo + ((1u128 << shift) - 1)));
                    }
                }
                nodes
            };
            if d == 0 && ranges.len() <= 1 {
                covered_counts[0].push(lookups);
            }
            let depth = &mut depths[d as usize];
            depth.inner_nodes = nodes.len();
            for &(lo, hi) in &nodes {
                let (j, k, weight) = span(lo, hi);
                depth.inner_lookups += weight;
                inner_counts.push(weight);
                if d < max_depth {
                    let mid = lo + ((hi - lo) >> 1);
                    for (clo, chi) in [(lo, mid), (mid + 1, hi)] {
                        let (cj, ck, cweight) = span(clo, chi);
                        if cj == ck {
                            covered_counts[d as usize + 1].push(cweight);
                        }
                    }
                }
                if d >= 1 && weight > 0.0 {
                    // The tree this node would hold as a last-level entry.
                    let parts: Vec<f64> = (j..=k)
                        .map(|i| {
                            let from = firsts[i].max(lo);
                            let to = lasts[i].min(hi);
                            view.weights[i] * (((to - from) as f64 + 1.0) / sizes[i])
                        })
                        .collect();
                    // The engine's own tree over these weights: each node
                    // is read by every lookup of its subtree.
                    let cumulative = tree_cumulative(&parts);
                    let mut raw = Vec::with_capacity(parts.len() + 1);
                    raw.push(0.0);
                    for w in &parts {
                        raw.push(raw.last().copied().unwrap_or(0.0) + w);
                    }
                    depth.tree_visits +=
                        tree_accesses(&cumulative, &raw, 0, parts.len(), &mut tree_counts);
                }
                depth.tree_nodes += k - j + 1;
            }
            depth.inner = Blocks::from_counts(&mut inner_counts);
            depth.trees = Blocks::from_counts(&mut tree_counts);
        }
        for (depth, counts) in depths.iter_mut().zip(covered_counts.iter_mut()) {
            depth.covered = Blocks::from_counts(counts);
        }
        TrieModel {
            bits,
            tree_node_bytes: if bits == 32 {
                tree_node_bytes::<u32>()
            } else {
                tree_node_bytes::<u128>()
            },
            lookups,
            depths,
        }
    }

    /// Matched lookups the model spreads over the table.
    pub fn lookups(&self) -> f64 {
        self.lookups
    }

    /// Equation 2 over the trie blocks at block depth `block` of nodes whose
    /// ancestor at depth `parent` is inner (`None`: every node).
    fn trie_misses(&self, block: u32, parent: Option<u32>, cache: &EqTwo) -> f64 {
        let depth = &self.depths[block as usize];
        let mut misses = depth.inner.misses(0, cache);
        let from = parent.map_or(0, |p| p + 1);
        for covered_at in from..=block {
            misses += self.depths[covered_at as usize]
                .covered
                .misses(block - covered_at, cache);
        }
        misses
    }

    /// The predicted costs of the levelled trie `strides` in `caches`;
    /// `None` if the strides are not a valid `levels` configuration within
    /// the depths this model covers.
    pub fn predict(&self, strides: &[u8], caches: &[CacheLevel]) -> Option<Prediction> {
        if strides.is_empty()
            || strides.len() > MAX_LEVELS
            || strides.iter().any(|&s| s == 0 || s > MAX_STRIDE)
        {
            return None;
        }
        let mut depths = vec![0u32];
        for &s in strides {
            depths.push(depths.last().copied().unwrap_or(0) + s as u32);
        }
        let last = *depths.last()?;
        if last as usize >= self.depths.len() || self.lookups <= 0.0 {
            return None;
        }
        let n = self.lookups;
        let mut trie_visits = 1.0;
        let mut entries: u64 = 0;
        for level in 0..strides.len() {
            let tables = if level == 0 {
                1
            } else {
                trie_visits += self.depths[depths[level] as usize].inner_lookups / n;
                self.depths[depths[level] as usize].inner_nodes as u64
            };
            entries += tables * (1u64 << strides[level]).next_multiple_of(LINE_ENTRIES as u64);
        }
        let leaves = &self.depths[last as usize];
        let tree_visits = leaves.tree_visits / n;
        let total_accesses = n * (trie_visits + tree_visits);
        let mut misses = Vec::with_capacity(caches.len());
        let mut tree_misses = Vec::with_capacity(caches.len());
        for cache in caches {
            let eq = EqTwo {
                blocks: (cache.size_bytes / cache.line_bytes as u64) as f64,
                ways: cache.ways.max(1) as f64,
                total_accesses,
            };
            let line_shift = (cache.line_bytes / 4).max(1).ilog2();
            let tree = leaves.trees.misses(0, &eq);
            tree_misses.push(tree / n);
            let mut sum = tree;
            for level in 0..strides.len() {
                let block = depths[level + 1]
                    .saturating_sub(line_shift)
                    .max(depths[level]);
                let parent = (level > 0).then_some(depths[level]);
                sum += self.trie_misses(block, parent, &eq);
            }
            misses.push(sum / n);
        }
        Some(Prediction {
            strides: strides.to_vec(),
            trie_visits,
            tree_visits,
            misses,
            tree_misses,
            memory_bytes: entries * 4 + (leaves.tree_nodes * self.tree_node_bytes) as u64,
        })
    }

    /// Every stride vector of one to three levels with a first stride of
    /// at least `min_first` bits whose structure takes at most `max_bytes`.
    pub fn structures(&self, min_first: u8, max_bytes: u64) -> Vec<Vec<u8>> {
        let max_depth = (self.depths.len() - 1) as u32;
        let mut out = Vec::new();
        let strides = 1..=MAX_STRIDE;
        let fits = |v: &[u8]| {
            let sum: u32 = v.iter().map(|&s| s as u32).sum();
            sum <= max_depth.min(self.bits)
        };
        for s1 in min_first..=MAX_STRIDE {
            out.push(vec![s1]);
            for s2 in strides.clone() {
                out.push(vec![s1, s2]);
                for s3 in strides.clone() {
                    out.push(vec![s1, s2, s3]);
                }
            }
        }
        out.retain(|v| fits(v));
        out.retain(|v| {
            self.predict(v, &[])
                .is_some_and(|p| p.memory_bytes <= max_bytes)
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::summary::weighted_ranges;
    use crate::model::tests::l1;
    use crate::{Prefix, Rib};

    #[test]
    fn counts_match_a_hand_worked_table() {
        // 10/8 and 10.1/16: two /8 leaves under strides=8 (one tree of three
        // intervals in 10/8), all lookups in 10.0/16.. with weight 1 each.
        let rib = Rib::from_pairs([
            ("10.0.0.0/8".parse::<Prefix<u32>>().unwrap(), 1),
            ("10.1.0.0/16".parse().unwrap(), 2),
        ]);
        let view = weighted_ranges(&rib, 0, u32::MAX, None);
        assert_eq!(view.ranges.len(), 5);
        let model = TrieModel::new(&view, 32);
        let p = model.predict(&[8], &l1()).unwrap();
        // Lookups: 5 (one per range); the /8 node holds 10.0/16, 10.1/16 and
        // the rest of 10/8: weight 3 of the 5.
        assert!((p.trie_visits - 1.0).abs() < 1e-9);
        assert!(
            p.tree_visits > 0.6 && p.tree_visits < 3.0 * (1.0 + 1.6) / 5.0,
            "{p:?}"
        );
        assert_eq!(p.memory_bytes, 256 * 4 + 3 * 24);
        // The tree's misses are part of the misses, level by level.
        assert_eq!(p.tree_misses.len(), p.misses.len());
        assert!(
            p.tree_misses
                .iter()
                .zip(&p.misses)
                .all(|(tree, all)| *tree >= 0.0 && tree <= all),
            "{p:?}"
        );
        let two = model.predict(&[8, 8], &l1()).unwrap();
        assert!(two.trie_visits > 1.0 && two.tree_visits == 0.0, "{two:?}");
        assert!(two.tree_misses.iter().all(|&m| m == 0.0), "{two:?}");
        assert_eq!(two.memory_bytes, 512 * 4);
        assert!(model.predict(&[30, 8], &l1()).is_none());
        let all = model.structures(8, 1 << 30);
        assert!(all.contains(&vec![8]) && all.contains(&vec![16, 8, 8]));
        assert!(!all
            .iter()
            .any(|v| v.iter().map(|&s| s as u32).sum::<u32>() > 32));
    }

    #[test]
    fn a_hot_small_structure_misses_nothing() {
        let misses = EqTwo {
            blocks: 512.0,
            ways: 8.0,
            total_accesses: 1000.0,
        };
        assert_eq!(misses.misses(100.0), 0.0);
        assert!(misses.misses(1.0) > 0.0 && misses.misses(1.0) < 1.0);
    }
}
