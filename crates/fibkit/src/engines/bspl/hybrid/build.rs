//! Building the hybrid: its hashed lengths, each block's tries (the
//! strides from the variable-stride program) and their table entries.

use std::collections::HashMap;

use super::{flags, pointer, MAX_LABELS, TRIE_LEVELS};
use crate::addr::Addr;
use crate::engine::BuildError;
use crate::engines::bspl::place::{
    assemble, choose_lengths, group_blocks, paint, Assembly, Placed, SearchTree,
};
use crate::engines::bspl::{
    entry_value, first_entry, Bspl, BsplConfig, BsplUpdater, LengthPlan, MAX_HASH_LEVELS, NO_TABLES,
};
use crate::engines::shared::strides::{variable_strides, MemoryModel, MAX_STRIDE};
use crate::labels::LabelIndex;
use crate::prefix::{Label, Prefix};
use crate::rib::Rib;
use flags::{BASE_MASK, LABEL_MASK, LEAF, STRIDE_SHIFT};

/// The hybrid's hashed lengths for `config` and `rib`'s prefixes: every
/// quarter of the address above the first level by default.
fn hybrid_lengths<A: Addr>(
    config: &BsplConfig,
    prefixes: &[(Prefix<A>, Label)],
    engine: &str,
) -> Result<(Vec<u8>, f64, f64), BuildError> {
    let (lengths, program_ms, estimate) = match config.plan {
        LengthPlan::Auto => {
            let quarter = A::BITS / 4;
            let lengths = (1..4)
                .map(|q| q * quarter)
                .filter(|&l| l > config.first)
                .collect();
            (lengths, 0.0, 0.0)
        }
        _ => choose_lengths(config, prefixes, engine)?,
    };
    // Each trie covers at most 32 bits (its index is Addr::bits).
    let mut previous = config.first;
    for &length in lengths.iter().chain(std::iter::once(&A::BITS)) {
        if length.saturating_sub(previous) > 32 {
            return Err(BuildError::Limit {
                engine: engine.to_string(),
                why: format!(
                    "the hybrid's tries span at most 32 bits, but {previous} and {length} are \
                     {} apart (add hashed lengths at most 32 apart, e.g. `bspl:hybrid` hashes \
                     every {} bits)",
                    length - previous,
                    A::BITS / 4
                ),
            });
        }
        previous = length;
    }
    Ok((lengths, program_ms, estimate))
}

/// The build side of the hybrid's tries: the node array and its free
/// nodes, by stride.
pub(crate) struct TrieBuilder<'a> {
    pub(super) trie: &'a mut Vec<u32>,
    pub(super) free: &'a mut [Vec<u32>],
    pub(super) labels: &'a mut LabelIndex,
}

impl TrieBuilder<'_> {
    /// A node of `2^stride` entries (a freed one if there is one).
    fn allocate(&mut self, stride: u32) -> Result<u32, String> {
        if let Some(base) = self.free[stride as usize].pop() {
            return Ok(base);
        }
        let base = self.trie.len();
        if base + (1 << stride) > BASE_MASK as usize + 1 {
            return Err(format!(
                "the tries need more than 2^{STRIDE_SHIFT} entries (node bases are \
                 {STRIDE_SHIFT} bits; hash more lengths or use `bspl` without `hybrid`)"
            ));
        }
        self.trie.resize(base + (1 << stride), 0);
        Ok(base as u32)
    }

    /// A leaf for `label`.
    pub(super) fn leaf(&mut self, label: Option<Label>) -> Result<u32, BuildError> {
        Ok(LEAF | self.labels.index(label)?)
    }

    /// The value of the trie over bits `depth..depth + span` below one
    /// string: `prefixes` (sorted) are the prefixes below it with lengths in
    /// `depth + 1..=depth + span`, `default` the best match no longer than
    /// `depth`. Appends the pointers of the nodes it allocates to `nodes`.
    pub(super) fn build<A: Addr>(
        &mut self,
        depth: u8,
        span: u8,
        default: Option<Label>,
        prefixes: &[(Prefix<A>, Label)],
        nodes: &mut Vec<u32>,
        engine: &str,
    ) -> Result<u32, BuildError> {
        if prefixes.is_empty() {
            return self.leaf(default);
        }
        let limit = |why: String| BuildError::Limit {
            engine: engine.to_string(),
            why,
        };
        // The trie's own table: its bits as a 32-bit address, left-aligned.
        let relative = |prefix: Prefix<A>| {
            let plen = prefix.plen() - depth;
            let bits = prefix.addr().bits(depth as u32, span as u32) << (32 - span as u32);
            Prefix::new_masked(bits, plen)
        };
        let mut sub = Rib::<u32>::new();
        if let Some(label) = default {
            sub.insert(Prefix::default_route(), label);
        }
        let mut sorted: Vec<(u32, u8)> = Vec::with_capacity(prefixes.len());
        for &(prefix, label) in prefixes {
            let rel = relative(prefix);
            sub.insert(rel, label);
            sorted.push((rel.addr(), rel.plen()));
        }
        sorted.sort_unstable();
        // No stride reaches past the span (the walk would shorten it), so
        // capping the program there only spares it the strides it cannot
        // use: a third of the work for the 8-bit spans of IPv4.
        let cap = MAX_STRIDE.min(span);
        let plan =
            variable_strides(&sub, TRIE_LEVELS, cap, MemoryModel::LEAF_PUSHED).map_err(limit)?;
        let ranges = sub.ranges();
        let mut walk = TrieWalk {
            plan: plan.nodes.iter().map(|&(stride, _)| stride),
            sorted: &sorted,
            ranges: &ranges,
            cursor: 0,
            span,
        };
        walk.node(self, 0, 0, nodes).map_err(|e| match e {
            WalkError::Limit(why) => limit(why),
            WalkError::Build(e) => e,
        })
    }
}

/// Why a trie could not be built.
enum WalkError {
    Limit(String),
    Build(BuildError),
}

/// The nodes of one trie, built in the order the stride program lists
/// them (a node, then its children by index).
struct TrieWalk<'r, I> {
    plan: I,
    /// The trie's prefixes `(address, length)`, relative and sorted.
    sorted: &'r [(u32, u8)],
    /// Its merged range view (leaf labels), consumed in address order.
    ranges: &'r [crate::rib::Range<u32>],
    cursor: usize,
    span: u8,
}

impl<I: Iterator<Item = u8>> TrieWalk<'_, I> {
    /// Whether a prefix longer than `plen` lies in the `plen`-bit string
    /// at `addr`.
    fn has_longer(&self, addr: u32, plen: u32) -> bool {
        let last = (addr as u64 | (u32::MAX as u64 >> plen)) as u32;
        let lo = self.sorted.partition_point(|&(a, _)| a < addr);
        let hi = self.sorted.partition_point(|&(a, _)| a <= last);
        self.sorted[lo..hi].iter().any(|&(_, l)| l as u32 > plen)
    }

    /// The label of the range holding `addr` (addresses asked in order).
    fn label_at(&mut self, addr: u32) -> Option<Label> {
        while self.ranges[self.cursor].last < addr {
            self.cursor += 1;
        }
        self.ranges[self.cursor].label
    }

    /// Builds the node for the string `addr` of `depth` bits, consuming its
    /// stride (and its descendants') from the plan; returns its pointer.
    fn node(
        &mut self,
        builder: &mut TrieBuilder,
        addr: u32,
        depth: u32,
        nodes: &mut Vec<u32>,
    ) -> Result<u32, WalkError> {
        let planned = self
            .plan
            .next()
            .ok_or_else(|| WalkError::Limit("the stride plan ended early".into()))?
            as u32;
        // A stride past the trie's span has nothing below it: shorten it.
        let stride = planned.min(self.span as u32 - depth);
        let base = builder.allocate(stride).map_err(WalkError::Limit)?;
        nodes.push(pointer(stride, base));
        let child_bits = depth + stride;
        for index in 0..1u32 << stride {
            let child = addr | index.checked_shl(32 - child_bits).unwrap_or(0);
            let value = if child_bits < self.span as u32 && self.has_longer(child, child_bits) {
                self.node(builder, child, child_bits, nodes)?
            } else {
                let label = self.label_at(child);
                builder.leaf(label).map_err(WalkError::Build)?
            };
            builder.trie[base as usize + index as usize] = value;
        }
        Ok(pointer(stride, base))
    }
}

/// The entries of one block of the hybrid: the first level's value, the
/// table entries with their tries, and the block's tables `lo..=hi`.
pub(super) struct HybridBlock<A> {
    pub(super) first_value: u32,
    pub(super) entries: Vec<Placed<A>>,
    pub(super) tables: (usize, usize),
    pub(super) nodes: Vec<u32>,
}

/// Builds block tries and entries for `inner` (the block's prefixes longer
/// than the first level, sorted), whose best match of length `<= F` is
/// `block_bmp`.
pub(super) fn hybrid_block<A: Addr>(
    builder: &mut TrieBuilder,
    first_bits: u8,
    lengths: &[u8],
    block_bmp: Option<Label>,
    inner: &[(Prefix<A>, Label)],
    engine: &str,
) -> Result<HybridBlock<A>, BuildError> {
    let mut nodes = Vec::new();
    let span_end = |j: usize| lengths.get(j).copied().unwrap_or(A::BITS);
    // The first level's trie: lengths F+1..=h1 below the block.
    let top: Vec<(Prefix<A>, Label)> = inner
        .iter()
        .copied()
        .filter(|(p, _)| p.plen() <= span_end(0))
        .collect();
    let first_value = builder.build(
        first_bits,
        span_end(0) - first_bits,
        block_bmp,
        &top,
        &mut nodes,
        engine,
    )?;
    let mut entries = Vec::new();
    let mut hi = None;
    for (j, &h) in lengths.iter().enumerate() {
        let end = span_end(j + 1);
        let mut ancestors: Vec<(Prefix<A>, Label)> = Vec::new();
        let mut i = 0;
        while i < inner.len() {
            let (prefix, label) = inner[i];
            while ancestors.last().is_some_and(|(a, _)| !a.covers(prefix)) {
                ancestors.pop();
            }
            if prefix.plen() <= h {
                ancestors.push((prefix, label));
                i += 1;
                continue;
            }
            // A string of length h with longer prefixes below: its run of
            // prefixes is contiguous in sorted order.
            let string = prefix.addr().masked(h);
            let run = inner[i..]
                .iter()
                .take_while(|(p, _)| p.addr().masked(h) == string)
                .count();
            let default = ancestors
                .last()
                .map_or(block_bmp, |&(_, label)| Some(label));
            let below: Vec<(Prefix<A>, Label)> = inner[i..i + run]
                .iter()
                .copied()
                .filter(|(p, _)| p.plen() <= end)
                .collect();
            let value = builder.build(h, end - h, default, &below, &mut nodes, engine)?;
            entries.push(Placed {
                level: j as u8,
                key: string,
                value,
            });
            hi = Some(j);
            i += run;
        }
    }
    Ok(HybridBlock {
        first_value,
        entries,
        tables: hi.map_or(NO_TABLES, |hi| (0, hi)),
        nodes,
    })
}

/// The best match of length `<= first_bits` of a block, from `covering`:
/// every prefix intersecting the block, in sorted order.
pub(super) fn block_bmp<A: Addr>(
    covering: impl Iterator<Item = (Prefix<A>, Label)>,
    first_bits: u8,
) -> Option<Label> {
    covering
        .filter(|(p, _)| (1..=first_bits).contains(&p.plen()))
        .last()
        .map(|(_, label)| label)
}

/// Builds the hybrid from `rib`.
pub(crate) fn build<A: Addr>(
    config: &BsplConfig,
    rib: &Rib<A>,
) -> Result<(BsplUpdater<A>, Bspl<A>), BuildError> {
    let engine = config.to_string();
    let limit = |why: String| BuildError::Limit {
        engine: engine.clone(),
        why,
    };
    let first_bits = config.first;
    let prefixes: Vec<(Prefix<A>, Label)> = rib.iter().collect();
    let (lengths, program_ms, estimate) = hybrid_lengths(config, &prefixes, &engine)?;
    if lengths.len() > MAX_HASH_LEVELS {
        return Err(limit(format!("more than {MAX_HASH_LEVELS} hashed lengths")));
    }
    let inner: Vec<(Prefix<A>, Label)> = prefixes
        .iter()
        .copied()
        .filter(|(p, _)| p.plen() > first_bits)
        .collect();
    let mut labels = LabelIndex::new(&engine, MAX_LABELS);
    let mut first = vec![first_entry(LEAF, NO_TABLES, 0); 1 << first_bits];
    paint(
        &mut first,
        first_bits,
        prefixes.iter().copied(),
        (0, (1 << first_bits) - 1),
        &mut labels,
        LEAF,
    )?;
    // The hashed search ends at the deepest hit whatever the order: a
    // balanced tree bounds it.
    let tree = SearchTree::weighted(&vec![1.0; lengths.len()]);
    let mut trie = Vec::new();
    let mut free = vec![Vec::new(); 32];
    let mut per_level: Vec<Vec<(A, u32)>> = vec![Vec::new(); lengths.len()];
    let mut blocks = HashMap::new();
    let mut trie_nodes = HashMap::new();
    let mut builder = TrieBuilder {
        trie: &mut trie,
        free: &mut free,
        labels: &mut labels,
    };
    for (block, range) in group_blocks(&inner, first_bits) {
        let painted = entry_value(first[block as usize]) & LABEL_MASK;
        // Index 0 is the default route (slot 0, set after the tries are
        // built): the tries' leaves keep it as index 0.
        let bmp = match painted {
            0 => None,
            index => builder.labels.slots()[index as usize].get(),
        };
        let built = hybrid_block(
            &mut builder,
            first_bits,
            &lengths,
            bmp,
            &inner[range],
            &engine,
        )?;
        for e in &built.entries {
            per_level[e.level as usize].push((e.key, e.value));
        }
        first[block as usize] = first_entry(
            built.first_value,
            built.tables,
            tree.root(built.tables.0, built.tables.1),
        );
        trie_nodes.insert(block, built.nodes);
        blocks.insert(
            block,
            built.entries.iter().map(|e| (e.level, e.key)).collect(),
        );
    }
    labels.set_default(rib.default_route());
    assemble(Assembly {
        config,
        engine,
        labels,
        first,
        first_bits,
        lengths,
        tree,
        trie,
        trie_nodes,
        trie_free: free,
        per_level,
        blocks,
        program_ms,
        estimate,
    })
}
