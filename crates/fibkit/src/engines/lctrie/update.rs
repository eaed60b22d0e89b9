//! The updater of the LC-trie: insert, delete and resize (inflate, halve,
//! collapse) as fib_trie does them, on the snapshot's slab in place (the
//! edits are in `editor`, the build in `build`, the checks for tests in
//! `checks`).
//!
//! Besides free block lists, the updater keeps per node what fib_trie keeps
//! in its `tnode` info: the non-empty and full child counts the resize
//! thresholds need, and, unlike fib_trie, a count of children per suffix
//! length, so that a node's longest suffix is known without scanning its
//! children:
//!
//! ```text
//! node_counts: Vec<u32>, as long as the slab; for the node whose children
//! block starts at p (2^b slots, b >= 1, so the b + 1 counts fit):
//!   node_counts[p]          non-empty children
//!   node_counts[p + 1]      full children (tnodes with no skipped bits)
//!   node_counts[p + 1 + r]  children at index != 0 whose slen is pos + r,
//!                           for r in 1..b
//! ```
//!
//! A child at index `i != 0` has bit `pos + tz(i)` of its key set, so its
//! suffixes are at most `pos + tz(i) <= pos + b - 1` long; child 0 may hold
//! any suffix and is read directly. A node's `slen` is then the largest of
//! its `pos`, child 0's `slen` and the largest `pos + r` with a count: at
//! most `b` reads, where fib_trie's `update_suffix` scans the children
//! (half of them when no child has a longer suffix than `pos`). That scan,
//! run on every withdrawal under a wide node, made a storm of withdrawals
//! quadratic.

use std::marker::PhantomData;

use super::build::Leaves;
use super::editor::{Editor, LcTrieUpdater};
use super::*;
use crate::engine::Updater;
use crate::rib::Rib;

/// Entry block size classes: blocks of 2^0 .. 2^8 entries.
const ENTRY_CLASSES: usize = 9;
/// A batch of changes is applied by a build from scratch when the table
/// grows or shrinks by at least `REBUILD_MIN_CHANGES` prefixes and more
/// than one in `REBUILD_SHARE` of the larger of its sizes before and
/// after. Only that net change, which counts inserts and removals,
/// decides: a relabel in a sorted batch costs about what a build spends
/// per prefix. Inserts cost from several times that (announcing half of
/// dfz-v4-nh back into the other half: 0.37–0.57 s patched, 0.30–0.33 s
/// rebuilt) to more than ten times (the whole table onto a default
/// route, where nodes inflate again and again: 1.75–1.87 s against
/// 0.27–0.34 s); patching a quarter back costs 0.20–0.28 s, so the two
/// meet near a third. Smaller changes always patch, so that small
/// tables are not rebuilt change by change.
const REBUILD_MIN_CHANGES: usize = 1024;
const REBUILD_SHARE: usize = 3;
/// The largest entry block: the header and one entry per IPv6 prefix length.
const MAX_LIST_SLOTS: usize = 1 + (u128::BITS as usize + 1);
const _: () = assert!(1 << (ENTRY_CLASSES - 1) >= MAX_LIST_SLOTS);

impl<A: SlotLayout> Updater<A> for LcTrieUpdater<A> {
    type Config = LcTrieConfig;
    type Snapshot = LcTrie<A>;
    type Stats = LcTrieStats;

    /// Builds the trie from `rib`'s sorted prefixes top down
    /// ([`Editor::build_subtrie`]).
    fn build(config: &LcTrieConfig, rib: &Rib<A>) -> Result<(Self, LcTrie<A>), BuildError> {
        let mut trie = LcTrie::empty(config.lookup);
        let mut updater = LcTrieUpdater {
            config: *config,
            node_counts: vec![0; trie.slab.len()],
            free_blocks: vec![Vec::new(); MAX_BITS as usize + 1],
            free_entries: vec![Vec::new(); ENTRY_CLASSES],
            live_slots: trie.slab.len(),
            prefixes: 0,
            _family: PhantomData,
        };
        let leaves = Leaves::of(rib);
        updater.prefixes = rib.len();
        let mut editor = updater.editor(&mut trie);
        if !leaves.keys.is_empty() {
            let top = editor.build_subtrie(&leaves, 0..leaves.keys.len(), ROOT)?;
            editor.put_child(ROOT, 0, top);
        }
        Ok((updater, trie))
    }

    fn config(&self) -> LcTrieConfig {
        self.config
    }

    fn patches(&self) -> bool {
        true
    }

    /// Never before the patch: [`Updater::update`] builds anew by its own
    /// rule, measured on this engine ([`REBUILD_MIN_CHANGES`],
    /// [`REBUILD_SHARE`]), which the handles' default would preempt.
    fn builds_anew(&self, _changed: usize, _prefixes: usize) -> bool {
        false
    }

    /// Inserts, relabels or removes each changed prefix; a batch that
    /// grows or shrinks the table by at least [`REBUILD_MIN_CHANGES`]
    /// prefixes and by more than a third ([`REBUILD_SHARE`]) is built from
    /// scratch instead.
    fn update(
        &mut self,
        snapshot: &mut LcTrie<A>,
        rib: &Rib<A>,
        changed: &[Prefix<A>],
    ) -> Result<(), BuildError> {
        let net = rib.len().abs_diff(self.prefixes);
        if net >= REBUILD_MIN_CHANGES && net * REBUILD_SHARE > rib.len().max(self.prefixes) {
            let (updater, trie) = Self::build(&self.config, rib)?;
            *self = updater;
            *snapshot = trie;
            return Ok(());
        }
        let mut editor = self.editor(snapshot);
        for &prefix in changed {
            match rib.get(prefix) {
                Some(label) => editor.insert(prefix, label)?,
                None => editor.remove(prefix)?,
            }
            editor.compact_if_sparse();
        }
        Ok(())
    }

    /// Key vectors, backtracking steps and cache lines per lookup, with
    /// the snapshot's own look-up algorithm.
    fn lookup_work(snapshot: &LcTrie<A>, addrs: &[A]) -> Option<Vec<(String, String)>> {
        let counts = snapshot.count_lookups(addrs, snapshot.algo());
        Some(vec![
            ("lookups counted".into(), addrs.len().to_string()),
            (
                "key vectors".into(),
                format!("{:.2}", counts.nodes_per_lookup()),
            ),
            (
                "backtracking steps".into(),
                format!("{:.2}", counts.backtracks_per_lookup()),
            ),
            (
                "cache lines".into(),
                format!("{:.2}", counts.cache_lines_per_lookup()),
            ),
        ])
    }

    fn stats(&self, snapshot: &LcTrie<A>) -> LcTrieStats {
        LcTrieStats {
            prefixes: self.prefixes,
            shape: snapshot.shape(),
            slab_slots: snapshot.slab.len(),
            entry_slots: snapshot.entries.len(),
        }
    }
}

impl<A: SlotLayout> LcTrieUpdater<A> {
    fn editor<'a>(&'a mut self, trie: &'a mut LcTrie<A>) -> Editor<'a, A> {
        debug_assert_eq!(self.node_counts.len(), trie.slab.len());
        Editor {
            trie,
            updater: self,
            nested: 0,
        }
    }

    /// Number of prefixes held.
    pub fn len(&self) -> usize {
        self.prefixes
    }

    /// Whether no prefix is held.
    pub fn is_empty(&self) -> bool {
        self.prefixes == 0
    }
}
