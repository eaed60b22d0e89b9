//! The reference table: a path-compressed binary (PATRICIA) trie.
//!
//! [`Rib`] is fibkit's control plane and test oracle. It holds the
//! authoritative prefix → label map, answers longest-prefix matches plainly
//! (no tricks to get wrong), and produces the **range view** every engine is
//! built from: the sorted, disjoint address ranges that cover the whole space,
//! each with the label of its longest match (\[Zec19\], Figures 3.1–3.3).
//!
//! Nodes live in one flat arena addressed by `u32` indices; freed nodes are
//! recycled through a free list, so a long update stream does not grow it.
//! A node either carries a label (a real prefix) or is a *glue* node that only
//! joins two subtries diverging at its length.

use std::ops::RangeInclusive;

use crate::addr::Addr;
use crate::prefix::{Label, Prefix};

const NIL: u32 = u32::MAX;

#[derive(Clone, Debug)]
struct Node<A> {
    prefix: Prefix<A>,
    /// `None` for glue nodes.
    label: Option<Label>,
    /// Children by the bit after `prefix.plen()`; `NIL` where absent.
    children: [u32; 2],
}

/// A reference routing table: prefix → label, longest-prefix match, range view.
#[derive(Clone, Debug)]
pub struct Rib<A> {
    nodes: Vec<Node<A>>,
    free: Vec<u32>,
    root: u32,
    len: usize,
}

/// One change to a table, as read from an update stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change<A> {
    /// Insert the prefix, or replace its label.
    Announce(Prefix<A>, Label),
    /// Remove the prefix if present.
    Withdraw(Prefix<A>),
}

impl<A: Addr> Change<A> {
    /// The prefix this change is about.
    pub fn prefix(&self) -> Prefix<A> {
        match *self {
            Change::Announce(prefix, _) | Change::Withdraw(prefix) => prefix,
        }
    }
}

/// One range of the range view: every address in `first..=last` has the same
/// longest match result `label` (`None`: no route).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range<A> {
    /// First address of the range.
    pub first: A,
    /// Last address of the range (inclusive).
    pub last: A,
    /// Label of the longest matching prefix, or `None` where no prefix matches.
    pub label: Option<Label>,
}

/// Whether a range view shows the default route's label where only it
/// matches.
#[derive(Clone, Copy, PartialEq, Eq)]
enum DefaultRoute {
    Included,
    Excluded,
}

/// Where a node index is stored: the root slot or a child slot of a node.
#[derive(Clone, Copy)]
enum Slot {
    Root,
    Child(u32, usize),
}

impl<A: Addr> Default for Rib<A> {
    fn default() -> Self {
        Self::new()
    }
}

impl<A: Addr> Rib<A> {
    /// An empty table.
    pub fn new() -> Self {
        Rib {
            nodes: Vec::new(),
            free: Vec::new(),
            root: NIL,
            len: 0,
        }
    }

    /// Builds a table from `(prefix, label)` pairs; later duplicates replace earlier ones.
    pub fn from_pairs(pairs: impl IntoIterator<Item = (Prefix<A>, Label)>) -> Self {
        let mut rib = Rib::new();
        for (prefix, label) in pairs {
            rib.insert(prefix, label);
        }
        rib
    }

    /// Number of prefixes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the table has no prefix.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many prefixes of each length the table holds (index = length).
    pub fn prefix_length_histogram(&self) -> Vec<usize> {
        let mut counts = vec![0; A::BITS as usize + 1];
        for (prefix, _) in self.iter() {
            counts[prefix.plen() as usize] += 1;
        }
        counts
    }

    /// Number of distinct labels.
    pub fn distinct_labels(&self) -> usize {
        self.iter()
            .map(|(_, label)| label)
            .collect::<std::collections::HashSet<_>>()
            .len()
    }

    /// Bytes of heap memory held by the trie.
    pub fn memory_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node<A>>()
            + self.free.capacity() * std::mem::size_of::<u32>()
    }

    fn slot(&self, slot: Slot) -> u32 {
        match slot {
            Slot::Root => self.root,
            Slot::Child(node, dir) => self.nodes[node as usize].children[dir],
        }
    }

    fn set_slot(&mut self, slot: Slot, value: u32) {
        match slot {
            Slot::Root => self.root = value,
            Slot::Child(node, dir) => self.nodes[node as usize].children[dir] = value,
        }
    }

    fn alloc(&mut self, node: Node<A>) -> u32 {
        if let Some(index) = self.free.pop() {
            self.nodes[index as usize] = node;
            index
        } else {
            let index = self.nodes.len();
            assert!(
                index < NIL as usize,
                "reference trie is full (2^32 - 1 nodes)"
            );
            self.nodes.push(node);
            index as u32
        }
    }

    fn release(&mut self, index: u32) {
        self.nodes[index as usize].label = None;
        self.nodes[index as usize].children = [NIL, NIL];
        self.free.push(index);
    }

    /// Inserts `prefix` with `label`; returns the label it replaced, if any.
    /// Other prefix types convert with `.into()` (`ipnet::Ipv4Net`, with the
    /// `ipnet` feature) or `try_into()` (`(Ipv4Addr, u8)`).
    pub fn insert(&mut self, prefix: Prefix<A>, label: Label) -> Option<Label> {
        let mut slot = Slot::Root;
        loop {
            let current = self.slot(slot);
            if current == NIL {
                let leaf = self.alloc(Node {
                    prefix,
                    label: Some(label),
                    children: [NIL, NIL],
                });
                self.set_slot(slot, leaf);
                self.len += 1;
                return None;
            }
            let node_prefix = self.nodes[current as usize].prefix;
            if node_prefix == prefix {
                let old = self.nodes[current as usize].label.replace(label);
                if old.is_none() {
                    self.len += 1;
                }
                return old;
            }
            if node_prefix.covers(prefix) {
                slot = Slot::Child(current, prefix.addr().bit(node_prefix.plen()) as usize);
                continue;
            }
            // The new prefix goes above `current`: either it covers it, or
            // the two diverge and a glue node joins them.
            let mut children = [NIL, NIL];
            let new_node = if prefix.covers(node_prefix) {
                children[node_prefix.addr().bit(prefix.plen()) as usize] = current;
                self.len += 1;
                self.alloc(Node {
                    prefix,
                    label: Some(label),
                    children,
                })
            } else {
                let glue = prefix.common(node_prefix);
                let leaf = self.alloc(Node {
                    prefix,
                    label: Some(label),
                    children: [NIL, NIL],
                });
                self.len += 1;
                children[prefix.addr().bit(glue.plen()) as usize] = leaf;
                children[node_prefix.addr().bit(glue.plen()) as usize] = current;
                self.alloc(Node {
                    prefix: glue,
                    label: None,
                    children,
                })
            };
            self.set_slot(slot, new_node);
            return None;
        }
    }

    /// Removes `prefix`; returns its label if it was present.
    pub fn remove(&mut self, prefix: Prefix<A>) -> Option<Label> {
        // Slots from the root down to the node, to splice glue nodes out.
        let mut path: Vec<Slot> = Vec::with_capacity(A::BITS as usize);
        let mut slot = Slot::Root;
        let found = loop {
            let current = self.slot(slot);
            if current == NIL {
                return None;
            }
            let node_prefix = self.nodes[current as usize].prefix;
            if node_prefix == prefix {
                break current;
            }
            if !node_prefix.covers(prefix) {
                return None;
            }
            path.push(slot);
            slot = Slot::Child(current, prefix.addr().bit(node_prefix.plen()) as usize);
        };
        let old = self.nodes[found as usize].label.take()?;
        self.len -= 1;
        // The node is now glue: remove it if it joins fewer than two subtries,
        // and then its parent if that is glue left with a single child.
        let mut node = found;
        let mut node_slot = slot;
        loop {
            let children = self.nodes[node as usize].children;
            if self.nodes[node as usize].label.is_some()
                || (children[0] != NIL && children[1] != NIL)
            {
                break;
            }
            let only_child = if children[0] != NIL {
                children[0]
            } else {
                children[1]
            };
            self.set_slot(node_slot, only_child);
            self.release(node);
            // A parent that lost a child becomes a candidate only if the
            // removed node left nothing behind.
            if only_child != NIL {
                break;
            }
            match path.pop() {
                Some(parent_slot) => {
                    node = self.slot(parent_slot);
                    node_slot = parent_slot;
                }
                None => break,
            }
        }
        Some(old)
    }

    /// Applies one change; returns whether the table changed.
    pub fn apply(&mut self, change: Change<A>) -> bool {
        match change {
            Change::Announce(prefix, label) => self.insert(prefix, label) != Some(label),
            Change::Withdraw(prefix) => self.remove(prefix).is_some(),
        }
    }

    /// The label of exactly `prefix`, if present.
    pub fn get(&self, prefix: Prefix<A>) -> Option<Label> {
        let mut current = self.root;
        while current != NIL {
            let node = &self.nodes[current as usize];
            if node.prefix == prefix {
                return node.label;
            }
            if !node.prefix.covers(prefix) {
                return None;
            }
            current = node.children[prefix.addr().bit(node.prefix.plen()) as usize];
        }
        None
    }

    /// The longest prefix containing `addr`, with its label.
    pub fn longest_match(&self, addr: A) -> Option<(Prefix<A>, Label)> {
        self.longest_match_within(addr, A::BITS)
    }

    /// The longest prefix of at most `max_plen` bits containing `addr`, with
    /// its label: the best match of a marker of binary search on prefix
    /// lengths (the marker `addr/max_plen` itself included).
    pub fn longest_match_within(&self, addr: A, max_plen: u8) -> Option<(Prefix<A>, Label)> {
        let mut best = None;
        let mut current = self.root;
        while current != NIL {
            let node = &self.nodes[current as usize];
            if !node.prefix.contains(addr) || node.prefix.plen() > max_plen {
                break;
            }
            if let Some(label) = node.label {
                best = Some((node.prefix, label));
            }
            if node.prefix.plen() == A::BITS {
                break;
            }
            current = node.children[addr.bit(node.prefix.plen()) as usize];
        }
        best
    }

    /// The label of the longest prefix containing `addr`.
    #[inline]
    pub fn lookup(&self, addr: A) -> Option<Label> {
        self.longest_match(addr).map(|(_, label)| label)
    }

    /// Every prefix and label, sorted by address then length.
    pub fn iter(&self) -> impl Iterator<Item = (Prefix<A>, Label)> + '_ {
        self.iter_in(A::ZERO, A::MAX)
    }

    /// Every prefix intersecting `lo..=hi` (those covering the window and
    /// those inside it), with its label, sorted by address then length: what
    /// an engine rebuilding one block of the address space reads.
    pub fn iter_in(&self, lo: A, hi: A) -> impl Iterator<Item = (Prefix<A>, Label)> + '_ {
        self.nodes_in(lo, hi)
            .filter_map(|node| node.label.map(|label| (node.prefix, label)))
    }

    /// Every prefix inside `outer` (`outer` itself included, if present),
    /// with its label, sorted by address then length.
    pub fn prefixes_within(
        &self,
        outer: Prefix<A>,
    ) -> impl Iterator<Item = (Prefix<A>, Label)> + '_ {
        self.nodes_in(outer.first(), outer.last())
            .filter(move |node| outer.covers(node.prefix))
            .filter_map(|node| node.label.map(|label| (node.prefix, label)))
    }

    /// Whether a prefix inside `outer` (`outer` itself included) has a
    /// length in `lengths`. The walk skips every subtree whose top is
    /// already longer than the range (everything below it is longer
    /// still), so it reads only the nodes inside `outer` no longer than
    /// `lengths.end()`, and stops at the first match: what binary search on
    /// prefix lengths asks to know whether a marker is still needed.
    pub fn has_prefix_within(&self, outer: Prefix<A>, lengths: RangeInclusive<u8>) -> bool {
        let mut stack = Vec::with_capacity(A::BITS as usize + 1);
        // The topmost node inside `outer`: follow `outer`'s bits down.
        let mut current = self.root;
        while current != NIL {
            let node = &self.nodes[current as usize];
            if outer.covers(node.prefix) {
                stack.push(current);
                break;
            }
            if !node.prefix.covers(outer) {
                break;
            }
            current = node.children[outer.addr().bit(node.prefix.plen()) as usize];
        }
        while let Some(index) = stack.pop() {
            let node = &self.nodes[index as usize];
            let plen = node.prefix.plen();
            if plen > *lengths.end() {
                continue;
            }
            if node.label.is_some() && lengths.contains(&plen) {
                return true;
            }
            stack.extend(node.children.iter().copied().filter(|&child| child != NIL));
        }
        false
    }

    /// Nodes whose prefix intersects `lo..=hi`, in pre-order (sorted).
    fn nodes_in(&self, lo: A, hi: A) -> impl Iterator<Item = &Node<A>> + '_ {
        let mut stack = Vec::with_capacity(A::BITS as usize + 1);
        if self.root != NIL {
            stack.push(self.root);
        }
        std::iter::from_fn(move || {
            while let Some(index) = stack.pop() {
                let node = &self.nodes[index as usize];
                if node.prefix.first() > hi || node.prefix.last() < lo {
                    continue;
                }
                for child in [node.children[1], node.children[0]] {
                    if child != NIL {
                        stack.push(child);
                    }
                }
                return Some(node);
            }
            None
        })
    }

    /// The merged range view of the whole address space.
    pub fn ranges(&self) -> Vec<Range<A>> {
        let mut out = Vec::with_capacity(self.len * 2 + 1);
        self.ranges_in(A::ZERO, A::MAX, true, &mut out);
        out
    }

    /// Appends to `out` the range view of `lo..=hi` (`lo <= hi`): sorted,
    /// disjoint ranges exactly covering the window. With `merge`, neighbours
    /// with equal labels are joined; without, each range is the stretch of one
    /// longest-matching prefix (or of no route).
    pub fn ranges_in(&self, lo: A, hi: A, merge: bool, out: &mut Vec<Range<A>>) {
        self.range_view(lo, hi, merge, DefaultRoute::Included, out);
    }

    /// The label of the default route (`/0`), if the table has one.
    pub fn default_route(&self) -> Option<Label> {
        self.get(Prefix::default_route())
    }

    /// The merged range view of the whole address space as if the table had
    /// no default route: where only the `/0` matches, the label is `None`.
    /// Engines build from it and keep the default route's label in their
    /// results table's slot 0 (what a miss returns), so that announcing,
    /// relabelling or withdrawing the `/0` writes one slot.
    pub fn ranges_without_default(&self) -> Vec<Range<A>> {
        let mut out = Vec::with_capacity(self.len * 2 + 1);
        self.ranges_in_without_default(A::ZERO, A::MAX, true, &mut out);
        out
    }

    /// [`Rib::ranges_in`] as if the table had no default route (see
    /// [`Rib::ranges_without_default`]).
    pub fn ranges_in_without_default(&self, lo: A, hi: A, merge: bool, out: &mut Vec<Range<A>>) {
        self.range_view(lo, hi, merge, DefaultRoute::Excluded, out);
    }

    fn range_view(
        &self,
        lo: A,
        hi: A,
        merge: bool,
        default: DefaultRoute,
        out: &mut Vec<Range<A>>,
    ) {
        debug_assert!(lo <= hi);
        let start_len = out.len();
        let mut emit = |first: A, last: A, label: Option<Label>| {
            if merge && out.len() > start_len {
                let previous = out.last_mut().expect("checked non-empty");
                if previous.label == label {
                    previous.last = last;
                    return;
                }
            }
            out.push(Range { first, last, label });
        };
        // Open prefixes, outermost first: (last address clipped to hi, label).
        let mut open: Vec<(A, Label)> = Vec::with_capacity(A::BITS as usize + 1);
        let mut cursor = lo;
        for node in self.nodes_in(lo, hi) {
            let Some(label) = node.label else { continue };
            if default == DefaultRoute::Excluded && node.prefix.plen() == 0 {
                continue;
            }
            let start = node.prefix.first().max(lo);
            while let Some(&(last, top_label)) = open.last() {
                if last >= start {
                    break;
                }
                if cursor <= last {
                    emit(cursor, last, Some(top_label));
                    // last < start <= hi, so this cannot overflow.
                    cursor = A::from_u128(last.to_u128() + 1);
                }
                open.pop();
            }
            if cursor < start {
                emit(
                    cursor,
                    A::from_u128(start.to_u128() - 1),
                    open.last().map(|&(_, l)| l),
                );
                cursor = start;
            }
            open.push((node.prefix.last().min(hi), label));
        }
        let mut done = false;
        while let Some((last, label)) = open.pop() {
            if !done && cursor <= last {
                emit(cursor, last, Some(label));
                match last.checked_next() {
                    Some(next) if last < hi => cursor = next,
                    _ => done = true,
                }
            }
        }
        if !done {
            emit(cursor, hi, None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Prefix<u32> {
        text.parse().unwrap()
    }

    fn addr(text: &str) -> u32 {
        u32::parse_addr(text).unwrap()
    }

    #[test]
    fn empty_table() {
        let rib = Rib::<u32>::new();
        assert!(rib.is_empty());
        assert_eq!(rib.lookup(0), None);
        assert_eq!(
            rib.ranges(),
            vec![Range {
                first: 0,
                last: u32::MAX,
                label: None
            }]
        );
        assert_eq!(rib.iter().count(), 0);
    }

    #[test]
    fn prefixes_within_by_length() {
        let mut rib = Rib::new();
        for (text, label) in [
            ("10.0.0.0/8", 1),
            ("10.1.0.0/16", 2),
            ("10.1.2.0/24", 3),
            ("10.1.3.0/24", 4),
            ("10.1.2.7/32", 5),
            ("11.0.0.0/8", 6),
        ] {
            rib.insert(p(text), label);
        }
        let within = |outer: &str, lengths: RangeInclusive<u8>| {
            // The same question answered by a plain scan.
            let plain = rib
                .prefixes_within(p(outer))
                .any(|(prefix, _)| lengths.contains(&prefix.plen()));
            let walked = rib.has_prefix_within(p(outer), lengths);
            assert_eq!(walked, plain, "{outer}");
            walked
        };
        assert!(within("10.1.0.0/16", 17..=24));
        assert!(within("10.1.0.0/16", 16..=16), "outer itself counts");
        assert!(!within("10.1.0.0/16", 17..=23));
        assert!(within("10.1.0.0/16", 25..=32));
        assert!(!within("10.1.3.0/24", 25..=32));
        assert!(within("10.1.2.0/23", 24..=24), "below a glue node");
        assert!(
            !within("10.1.2.0/23", 23..=23),
            "the glue node is no prefix"
        );
        assert!(!within("12.0.0.0/8", 0..=32), "nothing there");
        assert!(within("0.0.0.0/0", 8..=8));
        assert!(!within("0.0.0.0/0", 9..=15));
        assert!(!Rib::<u32>::new().has_prefix_within(p("0.0.0.0/0"), 0..=32));
    }

    #[test]
    fn insert_lookup_replace_remove() {
        let mut rib = Rib::new();
        assert_eq!(rib.insert(p("10.0.0.0/8"), 1), None);
        assert_eq!(rib.insert(p("10.1.0.0/16"), 2), None);
        assert_eq!(rib.insert(p("10.2.0.0/16"), 3), None);
        assert_eq!(rib.insert(p("0.0.0.0/0"), 4), None);
        assert_eq!(rib.insert(p("10.1.0.0/16"), 5), Some(2));
        assert_eq!(rib.len(), 4);
        assert_eq!(rib.lookup(addr("10.1.2.3")), Some(5));
        assert_eq!(rib.lookup(addr("10.2.2.3")), Some(3));
        assert_eq!(rib.lookup(addr("10.3.2.3")), Some(1));
        assert_eq!(rib.lookup(addr("11.0.0.0")), Some(4));
        assert_eq!(
            rib.longest_match(addr("10.1.0.0")),
            Some((p("10.1.0.0/16"), 5))
        );
        assert_eq!(rib.get(p("10.0.0.0/9")), None);
        assert_eq!(rib.remove(p("10.0.0.0/9")), None);
        assert_eq!(rib.remove(p("10.0.0.0/8")), Some(1));
        assert_eq!(rib.lookup(addr("10.3.2.3")), Some(4));
        assert_eq!(rib.remove(p("10.0.0.0/8")), None);
        assert_eq!(rib.len(), 3);
        for prefix in ["10.1.0.0/16", "10.2.0.0/16", "0.0.0.0/0"] {
            assert!(rib.remove(p(prefix)).is_some());
        }
        assert!(rib.is_empty());
        assert_eq!(rib.root, NIL);
        // Every node went back to the free list.
        assert_eq!(rib.free.len(), rib.nodes.len());
    }

    #[test]
    fn prefixes_in_a_window_cover_and_lie_inside_it() {
        let rib = Rib::from_pairs(
            [
                "0.0.0.0/0",
                "10.0.0.0/8",
                "10.1.0.0/16",
                "10.1.2.0/24",
                "10.2.0.0/16",
            ]
            .iter()
            .enumerate()
            .map(|(i, text)| (p(text), i as Label)),
        );
        let window: Vec<String> = rib
            .iter_in(addr("10.1.0.0"), addr("10.1.255.255"))
            .map(|(prefix, _)| prefix.to_string())
            .collect();
        assert_eq!(
            window,
            ["0.0.0.0/0", "10.0.0.0/8", "10.1.0.0/16", "10.1.2.0/24"]
        );
        assert_eq!(rib.iter_in(0, u32::MAX).count(), rib.len());
    }

    #[test]
    fn host_routes_and_full_length() {
        let mut rib = Rib::new();
        rib.insert(p("255.255.255.255/32"), 7);
        rib.insert(p("0.0.0.0/32"), 8);
        assert_eq!(rib.lookup(u32::MAX), Some(7));
        assert_eq!(rib.lookup(0), Some(8));
        assert_eq!(rib.lookup(1), None);
        assert_eq!(
            rib.ranges(),
            vec![
                Range {
                    first: 0,
                    last: 0,
                    label: Some(8)
                },
                Range {
                    first: 1,
                    last: u32::MAX - 1,
                    label: None
                },
                Range {
                    first: u32::MAX,
                    last: u32::MAX,
                    label: Some(7)
                },
            ]
        );
    }

    #[test]
    fn the_range_view_without_default_leaves_only_the_default_route_out() {
        let mut rib = Rib::from_pairs([
            (p("10.0.0.0/8"), 1),
            (p("10.2.0.0/16"), 2),
            (p("11.0.0.0/8"), 7),
        ]);
        let without = rib.ranges();
        assert_eq!(rib.ranges_without_default(), without);
        rib.insert(Prefix::default_route(), 7);
        assert_eq!(rib.default_route(), Some(7));
        assert_ne!(rib.ranges(), without);
        assert_eq!(rib.ranges_without_default(), without);
        let (lo, hi) = (addr("10.1.0.0"), addr("10.3.0.0"));
        let (mut windowed, mut expected) = (Vec::new(), Vec::new());
        rib.ranges_in_without_default(lo, hi, false, &mut windowed);
        rib.remove(Prefix::default_route());
        rib.ranges_in(lo, hi, false, &mut expected);
        assert_eq!(windowed, expected);
    }

    #[test]
    fn range_view_merges_and_windows() {
        let rib = Rib::from_pairs([
            (p("10.0.0.0/8"), 1),
            (p("10.1.0.0/16"), 1),
            (p("10.2.0.0/16"), 2),
            (p("10.2.3.0/24"), 3),
        ]);
        let merged = rib.ranges();
        assert_eq!(
            merged,
            vec![
                Range {
                    first: 0,
                    last: addr("9.255.255.255"),
                    label: None
                },
                Range {
                    first: addr("10.0.0.0"),
                    last: addr("10.1.255.255"),
                    label: Some(1)
                },
                Range {
                    first: addr("10.2.0.0"),
                    last: addr("10.2.2.255"),
                    label: Some(2)
                },
                Range {
                    first: addr("10.2.3.0"),
                    last: addr("10.2.3.255"),
                    label: Some(3)
                },
                Range {
                    first: addr("10.2.4.0"),
                    last: addr("10.2.255.255"),
                    label: Some(2)
                },
                Range {
                    first: addr("10.3.0.0"),
                    last: addr("10.255.255.255"),
                    label: Some(1)
                },
                Range {
                    first: addr("11.0.0.0"),
                    last: u32::MAX,
                    label: None
                },
            ]
        );
        let mut unmerged = Vec::new();
        rib.ranges_in(0, u32::MAX, false, &mut unmerged);
        assert_eq!(unmerged.len(), merged.len() + 1);
        let mut window = Vec::new();
        rib.ranges_in(addr("10.1.255.0"), addr("10.2.3.7"), true, &mut window);
        assert_eq!(
            window,
            vec![
                Range {
                    first: addr("10.1.255.0"),
                    last: addr("10.1.255.255"),
                    label: Some(1)
                },
                Range {
                    first: addr("10.2.0.0"),
                    last: addr("10.2.2.255"),
                    label: Some(2)
                },
                Range {
                    first: addr("10.2.3.0"),
                    last: addr("10.2.3.7"),
                    label: Some(3)
                },
            ]
        );
    }

    #[test]
    fn bounded_matches_and_prefixes_within() {
        let rib = Rib::from_pairs([
            (p("0.0.0.0/0"), 0),
            (p("10.0.0.0/8"), 1),
            (p("10.1.0.0/16"), 2),
            (p("10.1.1.0/24"), 3),
            (p("11.0.0.0/8"), 4),
        ]);
        let a = addr("10.1.1.1");
        let within = |plen| rib.longest_match_within(a, plen).map(|(p, _)| p);
        assert_eq!(within(32), Some(p("10.1.1.0/24")));
        assert_eq!(within(23), Some(p("10.1.0.0/16")));
        assert_eq!(within(16), Some(p("10.1.0.0/16")));
        assert_eq!(within(15), Some(p("10.0.0.0/8")));
        assert_eq!(within(7), Some(p("0.0.0.0/0")));
        assert_eq!(within(0), Some(p("0.0.0.0/0")));
        let inside: Vec<_> = rib.prefixes_within(p("10.0.0.0/8")).collect();
        assert_eq!(
            inside,
            vec![
                (p("10.0.0.0/8"), 1),
                (p("10.1.0.0/16"), 2),
                (p("10.1.1.0/24"), 3)
            ]
        );
        assert_eq!(rib.prefixes_within(p("10.1.0.0/17")).count(), 1);
        assert_eq!(rib.prefixes_within(p("12.0.0.0/8")).count(), 0);
        assert_eq!(rib.prefixes_within(p("0.0.0.0/0")).count(), 5);
    }

    #[test]
    fn ipv6_basics() {
        let mut rib = Rib::<u128>::new();
        rib.insert("2001:db8::/32".parse().unwrap(), 1);
        rib.insert("::/0".parse().unwrap(), 0);
        assert_eq!(
            rib.lookup(u128::parse_addr("2001:db8::1").unwrap()),
            Some(1)
        );
        assert_eq!(
            rib.lookup(u128::parse_addr("2001:db9::1").unwrap()),
            Some(0)
        );
        assert_eq!(rib.ranges().len(), 3);
    }
}
