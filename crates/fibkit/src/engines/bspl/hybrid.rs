//! `bspl:hybrid`: \[SV98\] §7's combination for IPv6: hash tables on a few
//! lengths (32, 64 and 96 by default: every quarter of the address), found
//! by binary search, then a short multibit trie over the lengths left
//! between the hashed one found and the next.
//!
//! The table of length `h` holds the `h`-bit strings that have a longer
//! prefix below them (so they are all markers, and "has an entry" is
//! monotone along an address: a binary search finds the longest hashed
//! length `h` whose string has one). Each entry holds the root of a
//! leaf-pushed trie over lengths `h+1..=h'` (`h'` the next hashed length,
//! or the address width) below its string, whose leaves carry the best
//! matching prefix; the first-level entry holds the trie over `F+1..=h1`
//! below its block. The tries' strides come from the variable-stride
//! program of `cpe::strides` (\[SV98\] Figure 5) with at most
//! [`TRIE_LEVELS`] levels, run on each trie's prefixes.
//!
//! Values (first level, table entries and trie entries alike):
//! ```text
//! bit 31 set:   trie pointer: bits 26..31 stride, bits 0..26 node base
//! bit 30 set:   leaf: bits 0..30 label index (0 = the default route)
//! 0:            no entry (tables only)
//! ```
//! Memory accesses per lookup: the first-level entry, at most
//! `ceil(log2(k + 1))` buckets, at most [`TRIE_LEVELS`] trie entries, the
//! results slot. Consecutive hashed lengths may be at most 32 apart (a
//! trie covers at most 32 bits); node bases are 26 bits.
//!
//! Updates: a prefix no longer than the first level repaints the
//! first-level leaves below it and rewrites the leaves of every trie below
//! it in place (the tries' leaves carry the BMP, so a short prefix reaches
//! them all, but it adds no node: each trie keeps its nodes and strides,
//! and no stride program runs). A longer prefix rebuilds only the tries it
//! touches: the one whose span holds its length, those below it (their
//! leaves), and the table entries above it that it creates or empties
//! (whether a string has a longer prefix below it); a change whose inside
//! holds many tries rebuilds its block. Freed trie nodes are reused by
//! stride.

use std::collections::HashMap;

use super::build::{
    assemble, block_addrs, choose_lengths, group_blocks, insert_or_grow, merge_windows, paint,
    remove_entry, replace_entries, set_entry, Assembly, Placed, SearchTree,
};
use super::{
    entry_root, entry_tables, entry_value, first_entry, Bspl, BsplConfig, BsplUpdater, LengthPlan,
    BATCH, MAX_HASH_LEVELS, NO_TABLES,
};
use crate::addr::Addr;
use crate::engine::BuildError;
use crate::engines::shared::strides::{variable_strides, MemoryModel, MAX_STRIDE};
use crate::labels::LabelIndex;
use crate::prefix::{Label, Prefix};
use crate::rib::Rib;

/// Most levels of one trie (\[SV98\] §7 estimates "a 4 level trie").
pub const TRIE_LEVELS: u8 = 4;

/// Most tries below the changed prefixes of one block that an update
/// rebuilds one by one; more rebuild the block.
const MAX_TRIES: usize = 64;

/// Value encodings of the hybrid.
pub mod flags {
    /// A trie pointer.
    pub const POINTER: u32 = 1 << 31;
    /// A leaf.
    pub const LEAF: u32 = 1 << 30;
    /// A leaf's label index.
    pub const LABEL_MASK: u32 = LEAF - 1;
    /// Where a pointer keeps its node's stride.
    pub const STRIDE_SHIFT: u32 = 26;
    /// A pointer's node base.
    pub const BASE_MASK: u32 = (1 << STRIDE_SHIFT) - 1;
}
use flags::{BASE_MASK, LABEL_MASK, LEAF, POINTER, STRIDE_SHIFT};

const _: () = assert!((MAX_STRIDE as u32) < 32, "a stride fits 5 bits");

/// Most distinct labels: leaves keep 30 bits of label index.
const MAX_LABELS: usize = LABEL_MASK as usize;

/// A pointer to a node of `stride` at `base`.
#[inline]
fn pointer(stride: u32, base: u32) -> u32 {
    debug_assert!(stride < 32 && base <= BASE_MASK);
    POINTER | stride << STRIDE_SHIFT | base
}

/// The stride of the node a pointer points to.
#[inline(always)]
fn stride_of(value: u32) -> u32 {
    (value >> STRIDE_SHIFT) & 31
}

/// The base of the node a pointer points to.
#[inline(always)]
fn base_of(value: u32) -> usize {
    (value & BASE_MASK) as usize
}

impl<A: Addr, S: crate::storage::Storage> Bspl<A, S> {
    /// The hashed search of the hybrid: the deepest table whose string of
    /// `addr` has an entry, and that entry's value (or the first level's)
    /// with the depth its trie starts at.
    #[inline(always)]
    fn hybrid_start(&self, addr: A, entry: u64) -> (u32, u32) {
        let mut value = entry_value(entry);
        let mut depth = self.first_bits as u32;
        let (mut lo, mut hi) = entry_tables(entry);
        if lo <= hi {
            let mut mid = entry_root(entry);
            loop {
                let level = &self.levels[mid];
                let found = self.read(level, self.locate(level, addr), addr);
                if found != 0 {
                    value = found;
                    depth = level.plen as u32;
                    if mid == hi {
                        break;
                    }
                    lo = mid + 1;
                } else {
                    if mid == lo {
                        break;
                    }
                    hi = mid - 1;
                }
                mid = self.tree.root(lo, hi);
            }
        }
        (value, depth)
    }

    /// Follows trie pointers from `value` (whose node starts at bit
    /// `depth`) to a leaf; its label index.
    #[inline(always)]
    fn walk(&self, addr: A, mut value: u32, mut depth: u32) -> usize {
        while value & POINTER != 0 {
            let stride = stride_of(value);
            value = self.trie[base_of(value) + addr.bits(depth, stride) as usize];
            depth += stride;
        }
        (value & LABEL_MASK) as usize
    }

    /// The results index for `addr` in the hybrid.
    #[inline(always)]
    pub(super) fn search_hybrid(&self, addr: A, entry: u64) -> usize {
        let (value, depth) = self.hybrid_start(addr, entry);
        self.walk(addr, value, depth)
    }

    /// The hybrid's batch lookup: the first-level entries and the tries'
    /// nodes are prefetched a chunk at a time, the hashed search runs per
    /// key (its probes are few and mostly in cache for IPv6 tables).
    pub(super) fn lookup_batch_hybrid(&self, addrs: &[A], out: &mut [Option<Label>]) {
        for (keys, results) in addrs.chunks(BATCH).zip(out.chunks_mut(BATCH)) {
            let mut state = [(0u32, 0u32); BATCH];
            for &addr in keys {
                crate::engines::shared::prefetch(
                    self.first.as_ptr().wrapping_add(self.block(addr)),
                );
            }
            for (i, &addr) in keys.iter().enumerate() {
                let (value, depth) = self.hybrid_start(addr, self.first[self.block(addr)]);
                if value & POINTER != 0 {
                    let at = base_of(value) + addr.bits(depth, stride_of(value)) as usize;
                    crate::engines::shared::prefetch(self.trie.as_ptr().wrapping_add(at));
                }
                state[i] = (value, depth);
            }
            for ((result, &addr), &(value, depth)) in results.iter_mut().zip(keys).zip(&state) {
                *result = self.results[self.walk(addr, value, depth)].get();
            }
        }
    }
}

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
    trie: &'a mut Vec<u32>,
    free: &'a mut [Vec<u32>],
    labels: &'a mut LabelIndex,
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
    fn leaf(&mut self, label: Option<Label>) -> Result<u32, BuildError> {
        Ok(LEAF | self.labels.index(label)?)
    }

    /// The value of the trie over bits `depth..depth + span` below one
    /// string: `prefixes` (sorted) are the prefixes below it with lengths in
    /// `depth + 1..=depth + span`, `default` the best match no longer than
    /// `depth`. Appends the pointers of the nodes it allocates to `nodes`.
    fn build<A: Addr>(
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
struct HybridBlock<A> {
    first_value: u32,
    entries: Vec<Placed<A>>,
    tables: (usize, usize),
    nodes: Vec<u32>,
}

/// Builds block tries and entries for `inner` (the block's prefixes longer
/// than the first level, sorted), whose best match of length `<= F` is
/// `block_bmp`.
fn hybrid_block<A: Addr>(
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

/// What a table entry's trie needs after a change: ordered so that the
/// most a string needs is the largest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Need {
    /// Nothing beyond the entry's existence (a change below its span).
    Nothing,
    /// New leaf labels (a change above it: the trie's shape stays).
    Relabel,
    /// A change in its span: new labels if its nodes still hold every
    /// changed prefix, else a new trie.
    Reshape,
}

/// Whether the trie whose value is `value`, over bits `depth..depth +
/// span`, can keep its nodes after the changes in `changed` that
/// `in_span` selects: each is still in `rib` (a withdrawal rebuilds, so
/// that nodes made for it are freed) and no leaf stands shallower than it
/// (a leaf must not hide a longer prefix). A leaf value (no trie) holds no
/// prefix.
fn shape_holds<A: Addr>(
    trie: &[u32],
    rib: &Rib<A>,
    value: u32,
    depth: u8,
    span: u8,
    changed: &[Prefix<A>],
    in_span: impl Fn(&Prefix<A>) -> bool,
) -> bool {
    changed.iter().filter(|p| in_span(p)).all(|&prefix| {
        if rib.get(prefix).is_none() {
            return false;
        }
        let plen = (prefix.plen() - depth) as u32;
        let bits = prefix.addr().bits(depth as u32, span as u32) << (32 - span as u32);
        let (mut value, mut at) = (value, 0u32);
        loop {
            if value & POINTER == 0 {
                return plen <= at;
            }
            let next = at + stride_of(value);
            if plen <= next {
                return true;
            }
            value = trie[base_of(value) + bits.bits(at, stride_of(value)) as usize];
            at = next;
        }
    })
}

/// Rewrites the leaves of the trie whose value is `value` (a pointer), over
/// bits `depth..depth + span` below `string` (`at = (string, depth,
/// span)`), keeping its nodes: a leaf's label is the longest of `prefixes`
/// (the string's prefixes with lengths in `depth + 1..=depth + span`,
/// sorted) covering it, else `default`.
fn relabel_trie<A: Addr>(
    trie: &mut [u32],
    labels: &mut LabelIndex,
    value: u32,
    (string, depth, span): (A, u8, u8),
    default: Option<Label>,
    prefixes: &[(Prefix<A>, Label)],
) -> Result<(), BuildError> {
    // The trie's own bits as a left-aligned 32-bit address, as it was built.
    let relative: Vec<(Prefix<u32>, Label)> = prefixes
        .iter()
        .map(|&(prefix, label)| {
            let bits = prefix.addr().bits(depth as u32, span as u32) << (32 - span as u32);
            (Prefix::new_masked(bits, prefix.plen() - depth), label)
        })
        .collect();
    debug_assert!(prefixes
        .iter()
        .all(|(p, _)| p.addr().masked(depth) == string.masked(depth)));
    let mut cover = CoverWalk {
        prefixes: &relative,
        next: 0,
        stack: Vec::new(),
        default,
    };
    relabel_node(trie, labels, value, 0, 0, &mut cover)
}

/// The longest covering prefix of addresses asked in ascending order.
struct CoverWalk<'p> {
    prefixes: &'p [(Prefix<u32>, Label)],
    next: usize,
    stack: Vec<(Prefix<u32>, Label)>,
    default: Option<Label>,
}

impl CoverWalk<'_> {
    fn label_at(&mut self, addr: u32) -> Option<Label> {
        while let Some(&(prefix, label)) = self.prefixes.get(self.next) {
            if prefix.addr() > addr {
                break;
            }
            while self.stack.last().is_some_and(|(p, _)| !p.covers(prefix)) {
                self.stack.pop();
            }
            self.stack.push((prefix, label));
            self.next += 1;
        }
        while self.stack.last().is_some_and(|(p, _)| !p.contains(addr)) {
            self.stack.pop();
        }
        self.stack
            .last()
            .map_or(self.default, |&(_, label)| Some(label))
    }
}

/// [`relabel_trie`]'s walk of the node `value` for the string `addr` of
/// `depth` bits (relative).
fn relabel_node(
    trie: &mut [u32],
    labels: &mut LabelIndex,
    value: u32,
    addr: u32,
    depth: u32,
    cover: &mut CoverWalk,
) -> Result<(), BuildError> {
    let (stride, base) = (stride_of(value), base_of(value));
    let child_bits = depth + stride;
    for index in 0..1u32 << stride {
        let child = addr | index.checked_shl(32 - child_bits).unwrap_or(0);
        let slot = trie[base + index as usize];
        if slot & POINTER != 0 {
            relabel_node(trie, labels, slot, child, child_bits, cover)?;
        } else {
            trie[base + index as usize] = LEAF | labels.index(cover.label_at(child))?;
        }
    }
    Ok(())
}

/// Appends the pointers of the nodes of the trie whose value is `value` (a
/// leaf or no entry: none).
fn collect_nodes(trie: &[u32], value: u32, out: &mut Vec<u32>) {
    if value & POINTER == 0 {
        return;
    }
    out.push(value);
    let base = base_of(value);
    for index in 0..1usize << stride_of(value) {
        collect_nodes(trie, trie[base + index], out);
    }
}

/// The best match of length `<= first_bits` of a block, from `covering`:
/// every prefix intersecting the block, in sorted order.
fn block_bmp<A: Addr>(
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

impl<A: Addr> BsplUpdater<A> {
    /// The hybrid's update: first-level entries under a short prefix get a
    /// new leaf and the tries below it new leaf labels; long prefixes patch
    /// their block's tries and entries, or rebuild the block (always when
    /// the batch also holds a short prefix over it).
    pub(crate) fn apply_hybrid(
        &mut self,
        snapshot: &mut Bspl<A>,
        rib: &Rib<A>,
        changed: &[Prefix<A>],
    ) -> Result<(), BuildError> {
        let first_bits = snapshot.first_bits;
        let mut windows = Vec::new();
        let mut blocks = Vec::new();
        let mut long: Vec<(u32, Prefix<A>)> = Vec::new();
        // The default route is results slot 0: no leaf holds it.
        for prefix in crate::engines::shared::without_default(changed) {
            if prefix.plen() <= first_bits {
                windows.push((
                    prefix.first().bits(0, first_bits as u32) as usize,
                    prefix.last().bits(0, first_bits as u32) as usize,
                ));
            } else {
                long.push((prefix.addr().bits(0, first_bits as u32), *prefix));
            }
        }
        let windows = merge_windows(windows);
        for &(lo, hi) in &windows {
            if hi - lo >= self.trie_nodes.len() {
                blocks.extend(
                    self.trie_nodes
                        .keys()
                        .filter(|&&b| (lo..=hi).contains(&(b as usize))),
                );
            } else {
                blocks.extend(
                    (lo..=hi)
                        .map(|b| b as u32)
                        .filter(|b| self.trie_nodes.contains_key(b)),
                );
            }
        }
        blocks.sort_unstable();
        blocks.dedup();
        long.sort_unstable();
        long.dedup();
        // A block under a short change whose own long prefixes did not
        // change keeps the shape of its tries: only leaves that inherit
        // from the first level change, so their labels are rewritten in
        // place. Its first-level trie pointer is kept across the painting.
        let mut relabel: Vec<(u32, u32)> = Vec::new();
        let mut long_blocks: Vec<u32> = long.iter().map(|&(block, _)| block).collect();
        long_blocks.dedup();
        blocks.retain(|&block| {
            let has_long = long_blocks.binary_search(&block).is_ok();
            if !has_long {
                relabel.push((block, entry_value(snapshot.first[block as usize])));
            }
            has_long
        });
        for window in windows {
            let (lo, hi) = block_addrs::<A>(window, first_bits);
            paint(
                &mut snapshot.first,
                first_bits,
                rib.iter_in(lo, hi),
                window,
                &mut self.labels,
                LEAF,
            )?;
        }
        for &(block, first_value) in &relabel {
            self.relabel_hybrid_block(snapshot, rib, block, first_value)?;
        }
        // Blocks below no short change patch their long ones' tries, after
        // the painting (a block without tries holds a painted leaf, which
        // its first patch turns into a trie).
        let mut prefixes = Vec::new();
        let mut replan = Vec::new();
        for group in long.chunk_by(|a, b| a.0 == b.0) {
            let block = group[0].0;
            if blocks.binary_search(&block).is_ok() {
                continue;
            }
            prefixes.clear();
            prefixes.extend(group.iter().map(|&(_, prefix)| prefix));
            if !self.patch_hybrid_block(snapshot, rib, block, &prefixes)? {
                replan.push(block);
            }
        }
        blocks.extend(replan);
        blocks.sort_unstable();
        self.check_work(&blocks)?;
        for block in blocks {
            self.rebuild_hybrid_block(snapshot, rib, block)?;
        }
        self.labels.set_default(rib.default_route());
        self.labels.sync(&mut snapshot.results);
        Ok(())
    }

    /// Patches block `block` of the hybrid for `changed` (its prefixes
    /// longer than the first level): rebuilds the first level's trie if a
    /// change is in its span, and refreshes each hashed string a change
    /// lies below (its entry comes or goes with the longer prefixes below
    /// it; its trie is rebuilt if the change is in its span) and each
    /// entry inside a change (its trie's leaves carry the change's label).
    /// `Ok(false)` before anything is written: the block must be rebuilt.
    fn patch_hybrid_block(
        &mut self,
        snapshot: &mut Bspl<A>,
        rib: &Rib<A>,
        block: u32,
        changed: &[Prefix<A>],
    ) -> Result<bool, BuildError> {
        let lengths = snapshot.lengths();
        let span_end = |j: usize| lengths.get(j).copied().unwrap_or(A::BITS);
        let empty = Vec::new();
        let record = self.blocks.get(&block).unwrap_or(&empty);
        let mut first_trie = false;
        // (table, string, what its trie needs if the entry stays).
        let mut strings: Vec<(u8, A, Need)> = Vec::new();
        for &prefix in changed {
            let plen = prefix.plen();
            first_trie |= plen <= span_end(0);
            for (j, &h) in lengths.iter().enumerate() {
                if h < plen {
                    let need = if plen <= span_end(j + 1) {
                        Need::Reshape
                    } else {
                        Need::Nothing
                    };
                    strings.push((j as u8, prefix.addr().masked(h), need));
                    continue;
                }
                let from = record.partition_point(|&e| e < (j as u8, prefix.first()));
                let to = record.partition_point(|&e| e <= (j as u8, prefix.last()));
                if strings.len() + (to - from) > MAX_TRIES + changed.len() * lengths.len() {
                    return Ok(false);
                }
                strings.extend(
                    record[from..to]
                        .iter()
                        .map(|&(j, key)| (j, key, Need::Relabel)),
                );
            }
        }
        // The most a string needs wins: sorted so that it is last.
        strings.sort_unstable();
        strings.dedup_by(|later, kept| {
            let same = (later.0, later.1) == (kept.0, kept.1);
            if same {
                kept.2 = kept.2.max(later.2);
            }
            same
        });
        let engine = self.config.to_string();
        let first_bits = snapshot.first_bits;
        let mut freed = Vec::new();
        let mut nodes = Vec::new();
        let at = block as usize;
        if first_trie {
            let (lo, hi) = block_addrs::<A>((at, at), first_bits);
            let bmp = block_bmp(
                rib.iter_in(lo, hi)
                    .take_while(|(p, _)| p.plen() <= first_bits),
                first_bits,
            );
            let top: Vec<(Prefix<A>, Label)> = rib
                .iter_in(lo, hi)
                .filter(|(p, _)| (first_bits + 1..=span_end(0)).contains(&p.plen()))
                .collect();
            let value = entry_value(snapshot.first[at]);
            let span = span_end(0) - first_bits;
            let in_span = |p: &Prefix<A>| p.plen() <= span_end(0);
            if shape_holds(
                &snapshot.trie,
                rib,
                value,
                first_bits,
                span,
                changed,
                in_span,
            ) {
                relabel_trie(
                    &mut snapshot.trie,
                    &mut self.labels,
                    value,
                    (lo, first_bits, span),
                    bmp,
                    &top,
                )?;
                self.build_stats.tries_relabelled += 1;
            } else {
                collect_nodes(&snapshot.trie, value, &mut freed);
                let mut builder = TrieBuilder {
                    trie: &mut snapshot.trie,
                    free: &mut self.trie_free,
                    labels: &mut self.labels,
                };
                let value = builder.build(
                    first_bits,
                    span_end(0) - first_bits,
                    bmp,
                    &top,
                    &mut nodes,
                    &engine,
                )?;
                let entry = snapshot.first[at];
                snapshot.first[at] = first_entry(value, entry_tables(entry), entry_root(entry));
            }
        }
        for (j, string, need) in strings {
            let level = snapshot.levels[j as usize];
            let h = level.plen;
            let old = snapshot.read(&level, snapshot.locate(&level, string), string);
            let below = Prefix::new_masked(string, h);
            let exists = rib.has_prefix_within(below, h + 1..=A::BITS);
            if exists && old != 0 && need == Need::Nothing {
                continue;
            }
            let end = span_end(j as usize + 1);
            if exists && old != 0 {
                let in_span = |p: &Prefix<A>| p.plen() > h && p.plen() <= end && below.covers(*p);
                if need == Need::Relabel
                    || shape_holds(&snapshot.trie, rib, old, h, end - h, changed, in_span)
                {
                    let default = rib
                        .longest_match_within(string, h)
                        .filter(|(p, _)| p.plen() > 0)
                        .map(|(_, label)| label);
                    self.relabel_entry(snapshot, rib, &level, (string, end), old, default)?;
                    continue;
                }
            }
            collect_nodes(&snapshot.trie, old, &mut freed);
            let record = self.blocks.entry(block).or_default();
            if !exists {
                if old != 0 {
                    remove_entry(snapshot, &level, string);
                    let at = record
                        .binary_search(&(j, string))
                        .expect("a block's keys are recorded");
                    record.remove(at);
                    self.table_entries[j as usize] -= 1;
                }
                continue;
            }
            let inside: Vec<(Prefix<A>, Label)> = rib
                .prefixes_within(below)
                .filter(|(p, _)| (h + 1..=end).contains(&p.plen()))
                .collect();
            let default = rib
                .longest_match_within(string, h)
                .filter(|(p, _)| p.plen() > 0)
                .map(|(_, label)| label);
            let mut builder = TrieBuilder {
                trie: &mut snapshot.trie,
                free: &mut self.trie_free,
                labels: &mut self.labels,
            };
            let value = builder.build(h, end - h, default, &inside, &mut nodes, &engine)?;
            if old != 0 {
                let placed = set_entry(snapshot, &level, string, value);
                debug_assert!(placed, "the entry was read");
            } else {
                insert_or_grow(snapshot, j as usize, string, value, &mut self.build_stats)
                    .map_err(|why| BuildError::Limit {
                        engine: engine.clone(),
                        why,
                    })?;
                let at = record.binary_search(&(j, string)).unwrap_err();
                record.insert(at, (j, string));
                self.table_entries[j as usize] += 1;
            }
        }
        // The freed nodes go back to the free lists and leave the block's.
        freed.sort_unstable();
        for &node in &freed {
            self.trie_free[stride_of(node) as usize].push(base_of(node) as u32);
        }
        let list = self.trie_nodes.entry(block).or_default();
        list.retain(|node| freed.binary_search(node).is_err());
        list.extend(nodes);
        let tables = match self.blocks.get(&block).and_then(|r| r.last()) {
            Some(&(hi, _)) => (0, hi as usize),
            None => {
                self.blocks.remove(&block);
                NO_TABLES
            }
        };
        let entry = snapshot.first[at];
        snapshot.first[at] = first_entry(
            entry_value(entry),
            tables,
            snapshot.tree.root(tables.0, tables.1),
        );
        self.build_stats.prefixes_patched += changed.len() as u64;
        Ok(true)
    }

    /// Rewrites the leaves of block `block`'s tries from `rib` after a
    /// change no longer than the first level (the block's longer prefixes
    /// unchanged, so every trie and table entry keeps its shape):
    /// `first_value` is the block's first-level value before the painting.
    fn relabel_hybrid_block(
        &mut self,
        snapshot: &mut Bspl<A>,
        rib: &Rib<A>,
        block: u32,
        first_value: u32,
    ) -> Result<(), BuildError> {
        let lengths = snapshot.lengths();
        let span_end = |j: usize| lengths.get(j).copied().unwrap_or(A::BITS);
        let first_bits = snapshot.first_bits;
        let at = block as usize;
        let mut prefixes: Vec<(Prefix<A>, Label)> = Vec::new();
        if first_value & POINTER != 0 {
            let (lo, _) = block_addrs::<A>((at, at), first_bits);
            let default = rib
                .longest_match_within(lo, first_bits)
                .filter(|(p, _)| p.plen() > 0)
                .map(|(_, label)| label);
            let string = Prefix::new_masked(lo, first_bits);
            prefixes.extend(
                rib.prefixes_within(string)
                    .filter(|(p, _)| (first_bits + 1..=span_end(0)).contains(&p.plen())),
            );
            let entry = snapshot.first[at];
            snapshot.first[at] = first_entry(first_value, entry_tables(entry), entry_root(entry));
            relabel_trie(
                &mut snapshot.trie,
                &mut self.labels,
                first_value,
                (lo, first_bits, span_end(0) - first_bits),
                default,
                &prefixes,
            )?;
        }
        let record = self.blocks.get(&block).cloned().unwrap_or_default();
        for (j, string) in record {
            let level = snapshot.levels[j as usize];
            let h = level.plen;
            let value = snapshot.read(&level, snapshot.locate(&level, string), string);
            let default = rib
                .longest_match_within(string, h)
                .filter(|(p, _)| p.plen() > 0)
                .map(|(_, label)| label);
            let end = span_end(j as usize + 1);
            self.relabel_entry(snapshot, rib, &level, (string, end), value, default)?;
        }
        self.build_stats.blocks_relabelled += 1;
        Ok(())
    }

    /// Rewrites the leaves of the table entry for `string` (value `value`,
    /// its trie over the lengths up to `end`) from `rib`, `default` the
    /// string's best match: a leaf entry is replaced, a trie relabelled.
    fn relabel_entry(
        &mut self,
        snapshot: &mut Bspl<A>,
        rib: &Rib<A>,
        level: &super::Level,
        (string, end): (A, u8),
        value: u32,
        default: Option<Label>,
    ) -> Result<(), BuildError> {
        let h = level.plen;
        if value & POINTER == 0 {
            let leaf = LEAF | self.labels.index(default)?;
            let placed = set_entry(snapshot, level, string, leaf);
            debug_assert!(placed, "the entry was read");
            return Ok(());
        }
        let prefixes: Vec<(Prefix<A>, Label)> = rib
            .prefixes_within(Prefix::new_masked(string, h))
            .filter(|(p, _)| (h + 1..=end).contains(&p.plen()))
            .collect();
        relabel_trie(
            &mut snapshot.trie,
            &mut self.labels,
            value,
            (string, h, end - h),
            default,
            &prefixes,
        )?;
        self.build_stats.tries_relabelled += 1;
        Ok(())
    }

    /// Recomputes block `block` of the hybrid from `rib`: its tries and
    /// table entries, placed with a new seed.
    fn rebuild_hybrid_block(
        &mut self,
        snapshot: &mut Bspl<A>,
        rib: &Rib<A>,
        block: u32,
    ) -> Result<(), BuildError> {
        let engine = self.config.to_string();
        let first_bits = snapshot.first_bits;
        let lengths: Vec<u8> = snapshot.levels[..snapshot.level_count as usize]
            .iter()
            .map(|l| l.plen)
            .collect();
        for node in self.trie_nodes.remove(&block).unwrap_or_default() {
            self.trie_free[stride_of(node) as usize].push(base_of(node) as u32);
        }
        let (lo, hi) = block_addrs::<A>((block as usize, block as usize), first_bits);
        let bmp = block_bmp(rib.iter_in(lo, hi), first_bits);
        let inner: Vec<(Prefix<A>, Label)> = rib
            .iter_in(lo, hi)
            .filter(|(p, _)| p.plen() > first_bits)
            .collect();
        let mut builder = TrieBuilder {
            trie: &mut snapshot.trie,
            free: &mut self.trie_free,
            labels: &mut self.labels,
        };
        let built = if inner.is_empty() {
            HybridBlock {
                first_value: builder.leaf(bmp)?,
                entries: Vec::new(),
                tables: NO_TABLES,
                nodes: Vec::new(),
            }
        } else {
            hybrid_block(&mut builder, first_bits, &lengths, bmp, &inner, &engine)?
        };
        let old = self.blocks.remove(&block).unwrap_or_default();
        for &(table, _) in &old {
            self.table_entries[table as usize] -= 1;
        }
        for e in &built.entries {
            self.table_entries[e.level as usize] += 1;
        }
        replace_entries(
            snapshot,
            &old,
            &built.entries,
            &mut self.build_stats,
            &engine,
        )?;
        let (lo, hi) = built.tables;
        snapshot.first[block as usize] =
            first_entry(built.first_value, built.tables, snapshot.tree.root(lo, hi));
        if !inner.is_empty() {
            self.blocks.insert(
                block,
                built.entries.iter().map(|e| (e.level, e.key)).collect(),
            );
            self.trie_nodes.insert(block, built.nodes);
        }
        self.build_stats.blocks_rebuilt += 1;
        Ok(())
    }
}
