//! Building `levels`: the entries and leaf trees of each level filled from
//! the range view, with weight-balanced search trees.

use super::*;

/// The depth in nodes of the tree at `root`.
pub(super) fn tree_depth<A: Addr>(tree: &[TreeNode<A>], root: u32) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(root, 1usize)];
    while let Some((node, depth)) = stack.pop() {
        deepest = deepest.max(depth);
        let node = &tree[node as usize];
        for child in [node.left, node.right] {
            if child != NO_CHILD {
                stack.push((child, depth + 1));
            }
        }
    }
    deepest
}

const NO_CHILD: u32 = u32::MAX;

/// The lookups per address of the prefixes of `rib` from the summary at
/// `path`; an error if the file is bad or matches no prefix of the table.
pub(super) fn read_densities<A: Addr>(
    config: &LevelsConfig,
    path: &std::path::Path,
    rib: &Rib<A>,
) -> Result<HashMap<Prefix<A>, f64>, BuildError> {
    let bad = |why: String| BuildError::BadSpec {
        spec: config.to_string(),
        why,
    };
    let summary = TraceSummary::<A>::read(path).map_err(|e| bad(e.to_string()))?;
    let densities = prefix_densities(rib, &summary);
    if densities.values().all(|&d| d == 0.0) {
        return Err(bad(format!(
            "{}: the summary's lookups match no prefix of this table (summarise a trace \
             against this table with `fibkit model summary`)",
            path.display()
        )));
    }
    Ok(densities)
}

/// Trie entries `strides` need for a table with these merged `ranges`:
/// the root table plus, per level below, one table for each node of the
/// level above that a range boundary falls inside of (each padded to a
/// line).
pub fn entries_needed<A: Addr>(strides: &[u8], ranges: &[Range<A>]) -> u128 {
    let mut depth = 0u32;
    let mut total = 0u128;
    for (level, &stride) in strides.iter().enumerate() {
        let tables = if level == 0 {
            1
        } else {
            inner_nodes(ranges, depth) as u128
        };
        total += tables * (1u128 << stride).next_multiple_of(LINE_ENTRIES as u128);
        depth += stride as u32;
    }
    total
}

/// Nodes at `depth` (aligned blocks of `2^(BITS - depth)` addresses) that
/// more than one range overlaps.
pub fn inner_nodes<A: Addr>(ranges: &[Range<A>], depth: u32) -> usize {
    let shift = A::BITS as u32 - depth;
    let mut count = 0;
    let mut last_node = None;
    for range in ranges.iter().skip(1) {
        let first = range.first.to_u128();
        if shift < 128 && first & ((1u128 << shift) - 1) == 0 {
            continue;
        }
        let node = if shift >= 128 { 0 } else { first >> shift };
        if last_node != Some(node) {
            count += 1;
            last_node = Some(node);
        }
    }
    count
}

/// Writes trie tables and trees into a snapshot.
pub(super) struct Filler<'a, A: Addr>
where
    TreeNode<A>: Plain,
{
    pub(super) strides: &'a [u8],
    pub(super) labels: &'a mut LabelIndex,
    pub(super) snapshot: &'a mut Levels<A>,
    pub(super) engine: &'a LevelsConfig,
}

impl<A: Addr> Filler<'_, A>
where
    TreeNode<A>: Plain,
{
    /// Fills the whole table of `level` at `base`, whose first address is
    /// `first`, from `ranges` (covering exactly that table's addresses).
    pub(super) fn fill_table(
        &mut self,
        level: usize,
        base: usize,
        first: A,
        ranges: &[Range<A>],
        weights: &[f64],
    ) -> Result<(), BuildError> {
        let size = 1usize << self.strides[level];
        self.fill_entries(level, base, 0..=size - 1, first, ranges, weights)
    }

    /// Fills entries `indices` of the table of `level` at `base`; `first`
    /// is the first address of entry `indices.start()` and `ranges` cover
    /// exactly the entries' addresses.
    pub(super) fn fill_entries(
        &mut self,
        level: usize,
        base: usize,
        indices: std::ops::RangeInclusive<usize>,
        first: A,
        ranges: &[Range<A>],
        weights: &[f64],
    ) -> Result<(), BuildError> {
        let depth: u32 = self.strides[..=level].iter().map(|&s| s as u32).sum();
        let span = 1u128 << (A::BITS as u32 - depth);
        let mut lo = first.to_u128();
        let mut next = 0; // first range overlapping the entry
        for index in indices {
            let hi = lo + (span - 1);
            while ranges[next].last.to_u128() < lo {
                next += 1;
            }
            let mut end = next; // last range overlapping the entry
            while ranges[end].last.to_u128() < hi {
                end += 1;
            }
            let entry = if next == end {
                self.labels.index(ranges[next].label)? | TAG_LABEL << TAG_SHIFT
            } else if level + 1 < self.strides.len() {
                let child = self.allocate_table(level + 1)?;
                self.fill_table(
                    level + 1,
                    child,
                    A::from_u128(lo),
                    &ranges[next..=end],
                    &weights[next..=end],
                )?;
                child as u32 | TAG_CHILD << TAG_SHIFT
            } else {
                let root = self.add_tree(lo, hi, &ranges[next..=end], &weights[next..=end])?;
                root | TAG_TREE << TAG_SHIFT
            };
            self.snapshot.entries[base + index] = entry;
            lo = hi.wrapping_add(1);
        }
        Ok(())
    }

    /// Appends a zeroed table for `level`, starting on a cache line.
    fn allocate_table(&mut self, level: usize) -> Result<usize, BuildError> {
        let entries = &mut self.snapshot.entries;
        let base = entries.len().next_multiple_of(LINE_ENTRIES);
        let end = base + (1usize << self.strides[level]);
        if end > MAX_ENTRIES {
            return Err(BuildError::Limit {
                engine: self.engine.to_string(),
                why: format!(
                    "more than {MAX_ENTRIES} trie entries (1 GiB); use narrower strides below \
                     the first level (e.g. `levels:strides=16+8`)"
                ),
            });
        }
        entries.resize(end, 0);
        Ok(base)
    }

    /// Appends the weight-balanced tree of `ranges` clipped to `lo..=hi`
    /// and returns its root.
    fn add_tree(
        &mut self,
        lo: u128,
        hi: u128,
        ranges: &[Range<A>],
        weights: &[f64],
    ) -> Result<u32, BuildError> {
        let mut clipped = Vec::with_capacity(ranges.len());
        for (range, &weight) in ranges.iter().zip(weights) {
            let first = range.first.to_u128().max(lo);
            let last = range.last.to_u128().min(hi);
            let part = Range {
                first: A::from_u128(first),
                last: A::from_u128(last),
                label: range.label,
            };
            // A range's lookups are spread evenly over its addresses.
            let weight = weight * (range_size(&part) / range_size(range));
            clipped.push((part, weight));
        }
        let weights: Vec<f64> = clipped.iter().map(|(_, w)| *w).collect();
        let cumulative = tree_cumulative(&weights);
        let start = self.snapshot.tree.len();
        if start + clipped.len() > MAX_PAYLOAD {
            return Err(BuildError::Limit {
                engine: self.engine.to_string(),
                why: format!(
                    "more than {MAX_PAYLOAD} tree nodes; use wider strides so fewer intervals \
                     end up in trees"
                ),
            });
        }
        let mut labels = Vec::with_capacity(clipped.len());
        for (range, _) in &clipped {
            labels.push(self.labels.index(range.label)?);
        }
        let tree = &mut self.snapshot.tree;
        tree.reserve(clipped.len());
        let root = place(tree, &clipped, &labels, &cumulative, 0, clipped.len());
        Ok(root)
    }
}

/// Cumulative tree weights of intervals with lookups `weights`: entry `i`
/// is the weight of the intervals before `i`. A small floor per interval
/// (1% of the mean) keeps untraced intervals near the middle and the tree
/// height bounded (about `log2(100 n) + 2`).
pub fn tree_cumulative(weights: &[f64]) -> Vec<f64> {
    let total: f64 = weights.iter().sum();
    let floor = total.max(1.0) / weights.len().max(1) as f64 * 0.01;
    let mut cumulative = Vec::with_capacity(weights.len() + 1);
    let mut sum = 0.0;
    cumulative.push(sum);
    for weight in weights {
        sum += weight + floor;
        cumulative.push(sum);
    }
    cumulative
}

/// The root of the tree of intervals `lo..hi` (`lo < hi`): the interval
/// whose weight straddles the middle of theirs (Mehlhorn's rule).
pub fn weight_balanced_split(cumulative: &[f64], lo: usize, hi: usize) -> usize {
    debug_assert!(lo < hi);
    let half = (cumulative[lo] + cumulative[hi]) / 2.0;
    let split = lo + cumulative[lo + 1..=hi].partition_point(|&c| c < half);
    split.min(hi - 1)
}

/// Appends the subtree of intervals `lo..hi` in pre-order, the root at the
/// interval that splits their weight in half; returns the root's node.
pub(super) fn place<A: Addr>(
    tree: &mut Vec<TreeNode<A>>,
    intervals: &[(Range<A>, f64)],
    labels: &[u32],
    cumulative: &[f64],
    lo: usize,
    hi: usize,
) -> u32 {
    let split = weight_balanced_split(cumulative, lo, hi);
    let node = tree.len() as u32;
    let range = intervals[split].0;
    tree.push(TreeNode {
        first: range.first,
        last: range.last,
        left: NO_CHILD,
        right: NO_CHILD,
        label: labels[split],
        pad: 0,
    });
    if lo < split {
        let left = place(tree, intervals, labels, cumulative, lo, split);
        tree[node as usize].left = left;
    }
    if split + 1 < hi {
        let right = place(tree, intervals, labels, cumulative, split + 1, hi);
        tree[node as usize].right = right;
    }
    node
}
