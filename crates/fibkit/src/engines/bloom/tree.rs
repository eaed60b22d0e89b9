//! The search tree of the guided search: a binary search tree over the
//! table's distinct prefix lengths (\[Yeg18\], section 3.2 and Figure 4).
//!
//! A lookup walks from the root to a leaf: at a node of length `plen` it
//! goes right when the filter has the address's `plen`-bit key (a prefix or
//! a marker), left otherwise, so it always ends in a *gap* between two
//! lengths, and the gap after the length of its longest match when no
//! marker leads it astray. Its walk costs one hash and one bit per node on
//! the path to that gap. Two shapes:
//!
//! - [`balanced`]: the median length at every node (the paper's
//!   experiments; the lower median, so the walk to the default route is
//!   the short one: 4 nodes for the 25 IPv4 lengths, as the paper counts);
//! - [`optimal`]: Knuth's optimal binary search tree ("Optimum binary
//!   search trees", Acta Informatica 1, 1971) over gap weights, as section
//!   4.1 proposes and did not run: the weights are the share of traffic
//!   ending in each gap, so frequent lengths get short walks.

use crate::storage::Plain;

/// No node (a leaf's child).
pub const NO_NODE: u8 = u8::MAX;

/// One node: its prefix length, the length's index in the snapshot's
/// `lengths` (1-based; 0 is the default route), and its children.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct TreeNode {
    /// The prefix length tested.
    pub plen: u8,
    /// Index of `plen` in the ascending lengths (from 1).
    pub index: u8,
    /// Child for addresses without a key of this length, or [`NO_NODE`].
    pub left: u8,
    /// Child for addresses with one, or [`NO_NODE`].
    pub right: u8,
}

// SAFETY: four `u8` fields: no padding, every bit pattern valid (a lookup
// bounds-checks the child indices it follows).
unsafe impl Plain for TreeNode {}

/// At most 128 lengths (1..=128), so node indices fit below [`NO_NODE`].
const _: () = assert!(128 < NO_NODE as usize);

/// Appends the subtree over `lengths[lo..hi]` (whose first element has
/// length index `lo + 1`) with roots chosen by `root_of`; returns its root.
fn grow(
    nodes: &mut Vec<TreeNode>,
    lengths: &[u8],
    lo: usize,
    hi: usize,
    root_of: &dyn Fn(usize, usize) -> usize,
) -> u8 {
    if lo >= hi {
        return NO_NODE;
    }
    let root = root_of(lo, hi);
    let at = nodes.len();
    nodes.push(TreeNode {
        plen: lengths[root],
        index: (root + 1) as u8,
        left: NO_NODE,
        right: NO_NODE,
    });
    let left = grow(nodes, lengths, lo, root, root_of);
    let right = grow(nodes, lengths, root + 1, hi, root_of);
    nodes[at].left = left;
    nodes[at].right = right;
    at as u8
}

/// The balanced tree over `lengths` (ascending, at most 128), root first.
pub fn balanced(lengths: &[u8]) -> Vec<TreeNode> {
    let mut nodes = Vec::with_capacity(lengths.len());
    grow(&mut nodes, lengths, 0, lengths.len(), &|lo, hi| {
        lo + (hi - lo - 1) / 2
    });
    nodes
}

/// Knuth's optimal tree over `lengths` (ascending, at most 128) for
/// `gap_weights` (one more than `lengths`: gap 0 before the first length,
/// gap `i` right after length `i`): the tree minimising the sum over gaps
/// of weight times the number of nodes on the walk to the gap. Knuth's
/// monotone roots (the root of a range lies between the roots of its two
/// one-shorter ranges) make it O(n^2). Ties go to the lower root.
pub fn optimal(lengths: &[u8], gap_weights: &[f64]) -> Vec<TreeNode> {
    let n = lengths.len();
    assert_eq!(gap_weights.len(), n + 1, "one weight per gap");
    // cost[i][j] and root[i][j]: the subtree over gaps i..=j, that is over
    // lengths i+1..=j (1-based); root is the 1-based length index.
    let mut cost = vec![vec![0.0f64; n + 1]; n + 1];
    let mut root = vec![vec![0usize; n + 1]; n + 1];
    let mut prefix = vec![0.0f64; n + 2];
    for (g, w) in gap_weights.iter().enumerate() {
        prefix[g + 1] = prefix[g] + w;
    }
    for span in 1..=n {
        for i in 0..=n - span {
            let j = i + span;
            let (lo, hi) = if span == 1 {
                (j, j)
            } else {
                (root[i][j - 1], root[i + 1][j])
            };
            let mut best = (f64::INFINITY, lo);
            for r in lo..=hi {
                let c = cost[i][r - 1] + cost[r][j];
                if c < best.0 {
                    best = (c, r);
                }
            }
            cost[i][j] = best.0 + prefix[j + 1] - prefix[i];
            root[i][j] = best.1;
        }
    }
    // grow() works on 0-based ranges of lengths: lengths lo..hi are gaps
    // lo..=hi, whose 1-based root r is 0-based r - 1.
    let mut nodes = Vec::with_capacity(n);
    grow(&mut nodes, lengths, 0, n, &|lo, hi| root[lo][hi] - 1);
    nodes
}

/// The lengths at which the insertion path of `plen` goes right (where a
/// prefix of that length leaves a marker), root first.
pub fn right_turns(tree: &[TreeNode], plen: u8) -> Vec<u8> {
    let mut turns = Vec::new();
    let mut node = if tree.is_empty() { NO_NODE } else { 0 };
    while node != NO_NODE {
        let n = tree[node as usize];
        if plen == n.plen {
            break;
        }
        node = if plen < n.plen {
            n.left
        } else {
            turns.push(n.plen);
            n.right
        };
    }
    turns
}

/// Nodes on the walk to each gap (gap 0 first).
pub fn gap_depths(tree: &[TreeNode]) -> Vec<u32> {
    fn walk(tree: &[TreeNode], node: u8, depth: u32, out: &mut Vec<u32>) {
        if node == NO_NODE {
            out.push(depth);
            return;
        }
        let n = tree[node as usize];
        walk(tree, n.left, depth + 1, out);
        walk(tree, n.right, depth + 1, out);
    }
    let mut out = Vec::new();
    walk(tree, if tree.is_empty() { NO_NODE } else { 0 }, 0, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost(tree: &[TreeNode], weights: &[f64]) -> f64 {
        gap_depths(tree)
            .iter()
            .zip(weights)
            .map(|(&d, &w)| d as f64 * w)
            .sum()
    }

    /// The cheapest tree over gaps lo..=hi by trying every root.
    fn brute_force(weights: &[f64], lo: usize, hi: usize) -> f64 {
        if lo == hi {
            return 0.0;
        }
        let total: f64 = weights[lo..=hi].iter().sum();
        (lo + 1..=hi)
            .map(|r| brute_force(weights, lo, r - 1) + brute_force(weights, r, hi))
            .fold(f64::INFINITY, f64::min)
            + total
    }

    #[test]
    fn the_balanced_ipv4_tree_walks_four_nodes_to_the_default_route() {
        let lengths: Vec<u8> = (8..=32).collect();
        let tree = balanced(&lengths);
        assert_eq!(tree.len(), 25);
        assert_eq!(tree[0].plen, 20);
        let depths = gap_depths(&tree);
        assert_eq!(depths.len(), 26);
        assert_eq!(depths[0], 4);
        assert!(depths.iter().all(|&d| d == 4 || d == 5), "{depths:?}");
        assert_eq!(right_turns(&tree, 24), vec![20, 23]);
        assert_eq!(right_turns(&tree, 20), Vec::<u8>::new());
        assert_eq!(right_turns(&tree, 32).first(), Some(&20));
        for (i, node) in tree.iter().enumerate() {
            assert_eq!(lengths[node.index as usize - 1], node.plen, "node {i}");
        }
    }

    #[test]
    fn knuth_matches_brute_force() {
        let mut state = 7u64;
        for n in 0..8usize {
            for _ in 0..20 {
                let weights: Vec<f64> = (0..=n)
                    .map(|_| {
                        state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                        ((state >> 40) % 100) as f64
                    })
                    .collect();
                let lengths: Vec<u8> = (1..=n as u8).map(|l| l * 3).collect();
                let tree = optimal(&lengths, &weights);
                assert_eq!(tree.len(), n);
                let want = brute_force(&weights, 0, n);
                assert!((cost(&tree, &weights) - want).abs() < 1e-9, "n={n}");
                assert!(cost(&tree, &weights) <= cost(&balanced(&lengths), &weights) + 1e-9);
            }
        }
    }

    #[test]
    fn a_skewed_weight_gets_a_short_walk() {
        let lengths: Vec<u8> = (8..=32).collect();
        let mut weights = vec![1.0; 26];
        weights[17] = 1000.0; // the gap after /24
        let tree = optimal(&lengths, &weights);
        assert!(gap_depths(&tree)[17] <= 2, "{:?}", gap_depths(&tree));
        // Equal weights give a tree as shallow as the balanced one.
        let even = optimal(&lengths, &[1.0; 26]);
        assert_eq!(gap_depths(&even).iter().max(), Some(&5));
    }
}
