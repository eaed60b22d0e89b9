//! Updating the hybrid: relabelling leaves under short prefixes, and
//! patching or rebuilding the tries and entries long prefixes touch.

use super::build::{block_bmp, hybrid_block, HybridBlock, TrieBuilder};
use super::{base_of, flags, stride_of, MAX_TRIES};
use crate::addr::Addr;
use crate::engine::BuildError;
use crate::engines::bspl::place::{
    block_addrs, insert_or_grow, merge_windows, paint, remove_entry, replace_entries, set_entry,
};
use crate::engines::bspl::table::Level;
use crate::engines::bspl::{
    entry_root, entry_tables, entry_value, first_entry, Bspl, BsplUpdater, NO_TABLES,
};
use crate::labels::LabelIndex;
use crate::prefix::{Label, Prefix};
use crate::rib::Rib;
use flags::{LEAF, POINTER};

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
        level: &Level,
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
