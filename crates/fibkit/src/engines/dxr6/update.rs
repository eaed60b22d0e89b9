//! The `dxr6` updater: its build state, and the updates that rebuild the
//! smallest chunks a change touches, or the whole engine in place.

use super::build::{span_mask, Dxr6Updater, Labels, LeafSpace};
use super::*;
use crate::engine::Updater;
use crate::labels::LabelIndex;
use crate::prefix::Prefix;
use crate::rib::Rib;

/// Compaction: rebuild when free node entries, or leaf words freed since
/// the last build, exceed `1 / COMPACT_RATIO` of their array and
/// [`COMPACT_MIN`].
const COMPACT_RATIO: usize = 4;
const COMPACT_MIN: usize = 4096;

/// A chunk an update rebuilds: the entry at `at` for the addresses whose
/// first `depth` bits are those of `first`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Slot {
    first: u128,
    depth: u32,
    at: usize,
}

impl Updater<u128> for Dxr6Updater {
    type Config = Dxr6Config;
    type Snapshot = Dxr6;
    type Stats = Dxr6Stats;

    fn build(config: &Dxr6Config, rib: &Rib<u128>) -> Result<(Self, Dxr6), BuildError> {
        let mut updater = Dxr6Updater {
            config: *config,
            align_chosen: config.align.is_none(),
            out_of_lines: false,
            labels: LabelIndex::new(config, MAX_LABELS),
            free_tables: vec![Vec::new(); MAX_STRIDE as usize],
            free_entries: 0,
            space: LeafSpace::default(),
            build_ns: 0,
            compactions: 0,
        };
        let mut snapshot = Dxr6 {
            root_bits: config.root_bits,
            align_shift: config.align_shift(),
            entries: Vec::new(),
            leaves: Vec::new(),
            results: Vec::new(),
        };
        updater.fill_growing(&mut snapshot, rib, Labels::ByFrequency)?;
        Ok((updater, snapshot))
    }

    fn config(&self) -> Dxr6Config {
        self.config
    }

    fn patches(&self) -> bool {
        true
    }

    fn update(
        &mut self,
        snapshot: &mut Dxr6,
        rib: &Rib<u128>,
        changed: &[Prefix<u128>],
    ) -> Result<(), BuildError> {
        // The default route is results slot 0: it touches no chunk.
        let changed = crate::engines::shared::without_default(changed);
        // Decided before any slot is collected, so that a short prefix
        // costs one rebuild, not a walk of its root entries and a rebuild.
        // PERF: patched chunk by chunk (a range-view walk from the trie's
        // root for each), a quarter of the root (`::/2` at K = 16) cost
        // 1.14-1.17x a build, and `2000::/4` (an eighth, but nearly every
        // prefix of the shared table) 1.07x: past a quarter of the root or
        // half of its subtrees, rebuild in place (docs/bench/updates.md,
        // "Worst update against a full build, every engine").
        let spanned = root_entries_spanned(snapshot, changed);
        let root_size = 1usize << snapshot.root_bits;
        if spanned.entries << 2 >= root_size
            || (spanned.subtrees > 0
                && spanned.subtrees * 2 > root_subtrees(&snapshot.entries[..root_size]))
        {
            return self.rebuild(snapshot, rib, Labels::Kept);
        }
        let mut slots = Vec::new();
        for &prefix in changed {
            touched_slots(snapshot, prefix, &mut slots);
        }
        // Chunks nest or are disjoint; sorted by first address and then
        // depth, a chunk inside another follows it and is dropped.
        slots.sort_unstable();
        let mut end_of_last: Option<u128> = None;
        slots.retain(|slot| {
            if end_of_last.is_some_and(|end| slot.first <= end) {
                return false;
            }
            end_of_last = Some(slot.first | span_mask(slot.depth));
            true
        });
        if slots.len() << 2 >= 1 << snapshot.root_bits {
            // PERF: from a quarter of the root on, rebuilding chunk by chunk
            // (a range-view walk from the trie's root for each) costs more
            // than one full build (docs/bench/dxr6.md, "IPv6: dxr6").
            return self.rebuild(snapshot, rib, Labels::Kept);
        }
        match self.patch(snapshot, rib, &slots) {
            Ok(()) => {}
            // The leaves outgrew the line field: the next `align` holds
            // twice the lines; the half-patched arrays are rebuilt.
            Err(_) if self.grows_past_lines() => {
                self.grow_align();
                return self.rebuild(snapshot, rib, Labels::ByFrequency);
            }
            Err(error) => return Err(error),
        }
        self.labels.set_default(rib.default_route());
        self.labels.sync(&mut snapshot.results);
        let freed_words = self
            .space
            .unused_words()
            .saturating_sub(self.space.unused_after_build);
        let freed_word_limit = COMPACT_MIN.max(snapshot.leaves.len() * LINE_WORDS / COMPACT_RATIO);
        let free_entry_limit = COMPACT_MIN.max(snapshot.entries.len() / COMPACT_RATIO);
        if freed_words > freed_word_limit || self.free_entries > free_entry_limit {
            self.rebuild(snapshot, rib, Labels::ByFrequency)?;
        }
        Ok(())
    }

    fn stats(&self, snapshot: &Dxr6) -> Dxr6Stats {
        let mut stats = Dxr6Stats {
            root_bits: snapshot.root_bits,
            align: 1 << snapshot.align_shift,
            node_tables: vec![0; MAX_STRIDE as usize],
            leaves: [0; 4],
            leaf_lines: snapshot.leaves.len(),
            free_leaf_words: self.space.unused_words(),
            free_node_entries: self.free_entries,
            labels: self.labels.len(),
            build_ns: self.build_ns,
            compactions: self.compactions,
            batch_walk: Dxr6::<crate::storage::Owned>::batch_walk(),
            ..Dxr6Stats::default()
        };
        for &entry in &snapshot.entries[..1 << snapshot.root_bits] {
            stats.count(snapshot, entry, 0);
        }
        stats
    }
}

/// Root entries the prefixes of `changed` shorter than the root span, the
/// overlapping spans counted once: what [`touched_slots`] would list of the
/// root, counted from the prefixes alone; and how many of them hold a
/// subtree (a node or a leaf), the ones a patch rebuilds from the range
/// view.
pub(super) fn root_entries_spanned(snapshot: &Dxr6, changed: &[Prefix<u128>]) -> Spanned {
    let mut spans: Vec<(usize, usize)> = changed
        .iter()
        .filter(|prefix| u32::from(prefix.plen()) < snapshot.root_bits)
        .map(|prefix| {
            (
                snapshot.root_index(prefix.first()),
                snapshot.root_index(prefix.last()),
            )
        })
        .collect();
    spans.sort_unstable();
    let (mut spanned, mut end) = (Spanned::default(), None);
    for (first, last) in spans {
        let first = end.map_or(first, |end: usize| first.max(end + 1));
        if first <= last {
            spanned.entries += last - first + 1;
            spanned.subtrees += root_subtrees(&snapshot.entries[first..=last]);
            end = Some(last);
        }
    }
    spanned
}

/// Root entries a batch spans (see [`root_entries_spanned`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Spanned {
    pub(super) entries: usize,
    pub(super) subtrees: usize,
}

/// How many of `root_entries` hold a subtree rather than a label.
fn root_subtrees(root_entries: &[u32]) -> usize {
    root_entries
        .iter()
        .filter(|&&entry| !is_label(entry))
        .count()
}

/// Appends the chunks `prefix` touches: the smallest chunk holding it, or
/// the children of the node it covers part of (for a prefix shorter than
/// `K`, its root chunks).
fn touched_slots(snapshot: &Dxr6, prefix: Prefix<u128>, out: &mut Vec<Slot>) {
    let root_bits = snapshot.root_bits;
    let plen = prefix.plen() as u32;
    let first = prefix.first();
    let root_first = snapshot.root_index(first);
    let root_last = snapshot.root_index(prefix.last());
    if root_first != root_last {
        out.extend((root_first..=root_last).map(|at| Slot {
            first: (at as u128) << (128 - root_bits),
            depth: root_bits,
            at,
        }));
        return;
    }
    let mut slot = Slot {
        first: first & !span_mask(root_bits),
        depth: root_bits,
        at: root_first,
    };
    loop {
        let entry = snapshot.entries[slot.at];
        // A prefix covering the node's whole chunk rebuilds it (its shape
        // may change); one inside a child descends.
        if !is_node(entry) || plen <= slot.depth {
            out.push(slot);
            return;
        }
        let stride = stride_of(entry);
        let child_depth = slot.depth + stride;
        let child_first = bits_after(first, slot.depth, stride) as usize;
        let child_last = bits_after(prefix.last(), slot.depth, stride) as usize;
        let child = |index: usize| Slot {
            first: slot.first | (index as u128) << (128 - child_depth),
            depth: child_depth,
            at: node_base(entry) + index,
        };
        if child_first != child_last {
            out.extend((child_first..=child_last).map(child));
            return;
        }
        slot = child(child_first);
    }
}

impl Dxr6Updater {
    /// Rebuilds the chunks of `slots` from `rib`.
    fn patch(
        &mut self,
        snapshot: &mut Dxr6,
        rib: &Rib<u128>,
        slots: &[Slot],
    ) -> Result<(), BuildError> {
        let mut ranges = Vec::new();
        for slot in slots {
            let old = snapshot.entries[slot.at];
            self.release(snapshot, old);
            ranges.clear();
            rib.ranges_in_without_default(
                slot.first,
                slot.first | span_mask(slot.depth),
                true,
                &mut ranges,
            );
            snapshot.entries[slot.at] =
                self.chunk_entry(snapshot, slot.depth, slot.first, &ranges)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_spans_are_counted_once() {
        let rib = crate::engines::shared::testing::nested_table(
            0x2001_0db8_0001_0002_0003_0004_0005_0006u128,
        );
        let config = Dxr6Config::parse("dxr6:k=8").unwrap();
        let (_, snapshot) = Dxr6Updater::build(&config, &rib).unwrap();
        let p = |text: &str| text.parse::<Prefix<u128>>().unwrap();
        let spanned = |changed: &[&str]| {
            let changed: Vec<Prefix<u128>> = changed.iter().map(|text| p(text)).collect();
            root_entries_spanned(&snapshot, &changed).entries
        };
        assert_eq!(spanned(&[]), 0);
        assert_eq!(spanned(&["::/1"]), 128);
        assert_eq!(spanned(&["::/1", "::/2", "4000::/3"]), 128);
        assert_eq!(spanned(&["::/2", "8000::/2"]), 128);
        assert_eq!(spanned(&["2001:db8::/32", "2000::/8", "2000::/4"]), 16);
    }
}
