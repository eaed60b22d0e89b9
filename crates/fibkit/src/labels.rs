//! The label table every engine shares: lookups read a small array of
//! [`LabelSlot`]s indexed by a dense label index, so that the engines' own
//! entries hold narrow indices instead of full 32-bit labels; builds and
//! updates assign those indices with a [`LabelIndex`].
//!
//! Index 0 is what a miss of the engine's own entries returns: the default
//! route's label, or "no route". Engines build their entries from the table
//! without its `/0` ([`crate::Rib::ranges_without_default`]), so a zero
//! entry means "nothing longer than the default route matches" and a change
//! to the default route is one write to slot 0 ([`LabelIndex::set_default`]).

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};

use crate::addr::Addr;
use crate::error::BuildError;
use crate::prefix::Label;
use crate::rib::Range;
use crate::storage::Plain;

/// A map keyed by labels, hashed by [`LabelHasher`].
pub(crate) type LabelMap<V> = HashMap<Label, V, LabelHashing>;

/// Builds [`LabelHasher`]s under one random key per map.
///
/// Why not std's SipHash: a build indexes a label per range, and with
/// millions of distinct labels SipHash took about an eighth of a `dxr`
/// build's profile (`perf`, 2M host routes with a label each); a label is
/// one u32, which a 64-bit mix spreads over every bit of the hash with two
/// multiplies.
/// The key, drawn from std's `RandomState` per map, keeps a table file from
/// choosing labels that collide.
#[derive(Clone, Debug)]
pub(crate) struct LabelHashing {
    key: u64,
}

impl Default for LabelHashing {
    fn default() -> Self {
        LabelHashing {
            key: std::collections::hash_map::RandomState::new().hash_one(0u64),
        }
    }
}

impl BuildHasher for LabelHashing {
    type Hasher = LabelHasher;

    fn build_hasher(&self) -> LabelHasher {
        LabelHasher { state: self.key }
    }
}

/// Hashes the u32 of a label: the words written are folded into the state
/// and `finish` mixes it (the finaliser of SplitMix64, a bijection whose
/// output bits each depend on every input bit).
#[derive(Clone, Debug)]
pub(crate) struct LabelHasher {
    state: u64,
}

impl Hasher for LabelHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.write_u8(byte);
        }
    }

    fn write_u8(&mut self, byte: u8) {
        self.state = self.state.rotate_left(8) ^ byte as u64;
    }

    fn write_u32(&mut self, word: u32) {
        self.state = self.state.rotate_left(32) ^ word as u64;
    }

    fn finish(&self) -> u64 {
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// The labels of `ranges` by how many ranges carry them, most first (ties
/// by value): engines index them in this order so that the common labels
/// get the narrowest indices.
pub(crate) fn labels_by_frequency<A: Addr>(ranges: &[Range<A>]) -> Vec<Label> {
    let mut counts: LabelMap<usize> = LabelMap::default();
    for label in ranges.iter().filter_map(|range| range.label) {
        *counts.entry(label).or_default() += 1;
    }
    let mut labels: Vec<(Label, usize)> = counts.into_iter().collect();
    labels.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    labels.into_iter().map(|(label, _)| label).collect()
}

/// One entry of a results table: a label, or "no route", in 8 plain bytes
/// (so the table can be mapped from an image). The low half says whether
/// there is a route (1) or not (0), the high half holds the label: the
/// order of `Option<u32>`'s tag and value, so that a per-key lookup can
/// copy the slot to its answer whole.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct LabelSlot(u64);

// SAFETY: a u64 newtype, no padding. Any bit pattern is a valid u64; the
// lookups' further requirement (low half 0 or 1, see `LabelSlot::get`) is
// checked when an image is opened (`Image::results`).
unsafe impl Plain for LabelSlot {}

impl LabelSlot {
    /// The "no route" slot.
    pub const NONE: LabelSlot = LabelSlot(0);

    /// A slot holding `label`, or none.
    #[inline]
    pub const fn new(label: Option<Label>) -> Self {
        match label {
            Some(label) => LabelSlot((label as u64) << 32 | 1),
            None => LabelSlot::NONE,
        }
    }

    /// The label, or `None` for "no route".
    #[inline(always)]
    pub fn get(self) -> Option<Label> {
        debug_assert!(self.is_well_formed(), "{:#x}", self.0);
        #[allow(clippy::let_unit_value)]
        let () = OPTION_HAS_THE_SLOT_LAYOUT;
        // SAFETY: every slot a lookup reads is well formed (low half 0 or
        // 1): `new` and `NONE` make only such slots, the field is private,
        // and the one other source of slots, an image's results section,
        // is refused when opened if any slot is not (`Image::results`,
        // tested by `tampered_dxr_images_are_rejected_even_with_a_good_checksum`).
        // A well-formed slot is a valid `Option<Label>` of the same value:
        // `OPTION_HAS_THE_SLOT_LAYOUT` checks at compile time that the tag
        // is the low half (0: none, 1: some) and the value the high half.
        unsafe { std::mem::transmute::<u64, Option<Label>>(self.0) }
    }
}

/// The answer a well-formed slot's bits spell when read as an
/// `Option<Label>`: its value. So a per-key lookup's answer is a copy of
/// the slot (one load, one store) instead of a compare and two stores.
// PERF: dir24-8 per key beside rte_lpm_lookup (bench/peers, 7 rounds,
// docs/bench/peers.md, "Dependent lookups (SEQ) and per key"): see there.
const OPTION_HAS_THE_SLOT_LAYOUT: () = {
    assert!(std::mem::size_of::<Option<Label>>() == 8);
    // SAFETY: eight initialized bytes; if the layout were not the one
    // asserted here, compilation stops at the asserts below (a tag the
    // layout does not know would stop const evaluation itself).
    let some = unsafe { std::mem::transmute::<u64, Option<Label>>(0xdead_beef << 32 | 1) };
    assert!(matches!(some, Some(0xdead_beef)));
    // SAFETY: as above.
    let none = unsafe { std::mem::transmute::<u64, Option<Label>>(0) };
    assert!(none.is_none());
    // SAFETY: as above; a label half under "no route" is still none.
    let none = unsafe { std::mem::transmute::<u64, Option<Label>>(5 << 32) };
    assert!(none.is_none());
};

impl LabelSlot {
    /// The answer as a 64-bit word: the label, or [`NO_ROUTE_WORD`] (the
    /// layout of the C library's bulk results and of DPDK's
    /// `rte_fib_lookup_bulk`). Branch-free, for batch loops that write
    /// words straight into a caller's array: the low half minus one is all
    /// ones for "no route" and zero for a label.
    // PERF: c_vs_rust bench, dxr, 4M random keys in one call, quiet core
    // (docs/bench/c-library.md, "C bulk lookup"): C ÷ Rust 1.00 with this form,
    // 0.93 comparing the flag half with zero and negating the result.
    #[inline(always)]
    pub const fn word(self) -> u64 {
        (self.0 >> 32) | (self.0 as u32 as u64).wrapping_sub(1)
    }

    /// The slot's bits: the label in the high half and 1 in the low half,
    /// or 0 for no route (what an engine keeping slots in its own entries
    /// stores).
    pub const fn bits(self) -> u64 {
        self.0
    }

    /// Whether the slot is one [`LabelSlot::new`] makes (low half 0 or 1):
    /// what an image's results table is checked for when it is opened.
    pub const fn is_well_formed(self) -> bool {
        self.0 as u32 <= 1
    }
}

/// The word a lookup that finds no prefix writes ([`LabelSlot::word`]):
/// outside the range of 32-bit labels.
pub const NO_ROUTE_WORD: u64 = u64::MAX;

/// The answer types a batch lookup writes: `Option<Label>` for Rust
/// callers, a word ([`LabelSlot::word`]) for the C library's bulk calls.
/// Engines write their batch loops once, generic over it, so each output
/// comes straight from the loop with no second pass.
pub trait Answer: Copy {
    /// The answer a results-table slot gives.
    fn from_slot(slot: LabelSlot) -> Self;
}

impl Answer for Option<Label> {
    #[inline(always)]
    fn from_slot(slot: LabelSlot) -> Self {
        slot.get()
    }
}

impl Answer for u64 {
    #[inline(always)]
    fn from_slot(slot: LabelSlot) -> Self {
        slot.word()
    }
}

/// The word of an `Option<Label>` answer, as [`LabelSlot::word`].
#[inline(always)]
pub fn word_of(found: Option<Label>) -> u64 {
    found.map_or(NO_ROUTE_WORD, u64::from)
}

impl std::fmt::Debug for LabelSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

/// Assigns dense indices to labels (index 0: the default route, or no route), up to an engine's
/// limit: the build and update side of a results table.
#[derive(Clone, Debug)]
pub struct LabelIndex {
    slots: Vec<LabelSlot>,
    index: LabelMap<u32>,
    max_labels: usize,
    /// The engine's spec, for limit errors.
    engine: String,
}

impl LabelIndex {
    /// An index for `engine` (its spec, named in limit errors) whose
    /// entries can hold at most `max_labels` distinct labels (the "no
    /// route" index aside).
    pub fn new(engine: impl std::fmt::Display, max_labels: usize) -> Self {
        LabelIndex {
            slots: vec![LabelSlot::NONE],
            index: LabelMap::default(),
            max_labels,
            engine: engine.to_string(),
        }
    }

    /// An index holding `labels` first, in that order (engines give the
    /// most frequent labels the narrowest indices this way).
    pub fn with_order(
        engine: impl std::fmt::Display,
        max_labels: usize,
        labels: impl IntoIterator<Item = Label>,
    ) -> Result<Self, BuildError> {
        let mut index = Self::new(engine, max_labels);
        for label in labels {
            index.index(Some(label))?;
        }
        Ok(index)
    }

    /// Sets slot 0 to the default route's label (or no route); returns
    /// whether it changed. [`LabelIndex::sync`] carries it to a snapshot.
    pub fn set_default(&mut self, label: Option<Label>) -> bool {
        let slot = LabelSlot::new(label);
        let changed = self.slots[0] != slot;
        self.slots[0] = slot;
        changed
    }

    /// The index of `label` (0 for `None`, which entries built without the
    /// default route use for "only the default route matches"), adding it
    /// if new; the default route's label gets an index of its own, as slot 0
    /// changes with the default route; a
    /// [`BuildError::Limit`] past the engine's limit.
    #[inline]
    pub fn index(&mut self, label: Option<Label>) -> Result<u32, BuildError> {
        let Some(label) = label else { return Ok(0) };
        if let Some(&index) = self.index.get(&label) {
            return Ok(index);
        }
        if self.index.len() >= self.max_labels {
            return Err(BuildError::Limit {
                engine: self.engine.clone(),
                why: format!(
                    "more than {} distinct labels (its entries hold label indices of that \
                     size); `lctrie` keeps labels as they are and has no such limit",
                    self.max_labels
                ),
            });
        }
        let index = self.slots.len() as u32;
        self.slots.push(LabelSlot::new(Some(label)));
        self.index.insert(label, index);
        Ok(index)
    }

    /// The index of `label` if it has one.
    pub fn get(&self, label: Label) -> Option<u32> {
        self.index.get(&label).copied()
    }

    /// The results table: slot `i` holds the label of index `i`.
    pub fn slots(&self) -> &[LabelSlot] {
        &self.slots
    }

    /// Writes slot 0 (the default route) into `results` and appends the
    /// slots added since it was last synced (past slot 0, a snapshot's copy
    /// of the table only ever grows).
    pub fn sync(&self, results: &mut Vec<LabelSlot>) {
        debug_assert!(results.len() <= self.slots.len());
        debug_assert!(results.iter().zip(&self.slots).skip(1).all(|(a, b)| a == b));
        match results.first_mut() {
            Some(first) => *first = self.slots[0],
            None => results.push(self.slots[0]),
        }
        results.extend_from_slice(&self.slots[results.len()..]);
    }

    /// Distinct labels in the results table: the indexed ones, and the
    /// default route's if no entry uses it.
    pub fn len(&self) -> usize {
        let default_alone = self.slots[0]
            .get()
            .is_some_and(|label| !self.index.contains_key(&label));
        self.slots.len() - 1 + default_alone as usize
    }

    /// Whether the results table holds no label.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_maps_find_labels_that_differ_only_in_high_bits() {
        // Labels sharing their low 16 bits: a hash that kept the low bits
        // would put them all in one group of slots.
        let labels: Vec<Label> = (0..50_000u32).map(|i| i << 16 | 0x00ab).collect();
        let map: LabelMap<usize> = labels.iter().enumerate().map(|(i, &l)| (l, i)).collect();
        assert_eq!(map.len(), labels.len());
        for (i, label) in labels.iter().enumerate() {
            assert_eq!(map.get(label), Some(&i));
        }
        assert_eq!(map.get(&0x00ab_00ac), None);
        let spread: std::collections::HashSet<u64> = labels
            .iter()
            .map(|&l| map.hasher().hash_one(l) & 0xffff)
            .collect();
        assert!(
            spread.len() > 20_000,
            "{} distinct low halves",
            spread.len()
        );
    }

    #[test]
    fn labels_by_frequency_puts_the_common_ones_first() {
        let range = |first: u32, label: Option<Label>| Range {
            first,
            last: first,
            label,
        };
        let ranges = [
            range(0, Some(9)),
            range(1, Some(4)),
            range(2, None),
            range(3, Some(4)),
            range(4, Some(7)),
            range(5, Some(9)),
            range(6, Some(4)),
        ];
        assert_eq!(labels_by_frequency(&ranges), [4, 9, 7]);
    }

    #[test]
    fn slots_round_trip() {
        for label in [None, Some(0), Some(1), Some(u32::MAX)] {
            assert_eq!(LabelSlot::new(label).get(), label);
        }
        assert_eq!(LabelSlot::NONE.get(), None);
        assert_eq!(format!("{:?}", LabelSlot::new(Some(5))), "Some(5)");
    }

    #[test]
    fn words_are_the_label_or_no_route() {
        for label in [None, Some(0), Some(1), Some(0xdead_beef), Some(u32::MAX)] {
            let slot = LabelSlot::new(label);
            assert!(slot.is_well_formed());
            assert_eq!(slot.word(), word_of(label), "{label:?}");
            assert_eq!(<u64 as Answer>::from_slot(slot), word_of(label));
            assert_eq!(<Option<Label> as Answer>::from_slot(slot), label);
        }
        assert_eq!(word_of(None), NO_ROUTE_WORD);
        assert_eq!(word_of(Some(u32::MAX)), u32::MAX as u64);
        assert!(!LabelSlot(2).is_well_formed());
        assert!(!LabelSlot(u64::MAX).is_well_formed());
        assert!(
            LabelSlot(7 << 32).is_well_formed(),
            "a label half under no route"
        );
    }

    #[test]
    fn indices_are_dense_in_first_seen_order() {
        let mut index = LabelIndex::new("test", 10);
        assert_eq!(index.index(None).unwrap(), 0);
        assert_eq!(index.index(Some(700)).unwrap(), 1);
        assert_eq!(index.index(Some(5)).unwrap(), 2);
        assert_eq!(index.index(Some(700)).unwrap(), 1);
        assert_eq!(index.get(5), Some(2));
        assert_eq!(index.get(6), None);
        assert_eq!(index.len(), 2);
        assert_eq!(index.slots()[2].get(), Some(5));
        let mut copy = index.slots()[..2].to_vec();
        index.index(Some(9)).unwrap();
        index.sync(&mut copy);
        assert_eq!(copy, index.slots());
    }

    #[test]
    fn the_default_route_is_slot_0_and_syncs_in_place() {
        let mut index = LabelIndex::new("test", 10);
        assert_eq!(index.index(Some(7)).unwrap(), 1);
        let mut results = Vec::new();
        index.sync(&mut results);
        assert_eq!(results, [LabelSlot::NONE, LabelSlot::new(Some(7))]);
        assert!(index.set_default(Some(7)));
        assert!(!index.set_default(Some(7)));
        assert_eq!(index.len(), 1, "7 is counted once");
        index.sync(&mut results);
        assert_eq!(results[0].get(), Some(7));
        assert!(index.set_default(Some(9)));
        assert_eq!(index.len(), 2, "9 is only in slot 0");
        assert_eq!(
            index.index(Some(9)).unwrap(),
            2,
            "9 gets an index of its own"
        );
        assert_eq!(index.len(), 2);
        assert!(index.set_default(None));
        index.sync(&mut results);
        assert_eq!(results, index.slots());
        assert_eq!(results[0], LabelSlot::NONE);
    }

    #[test]
    fn the_limit_is_an_error_naming_the_spec_and_a_remedy() {
        let mut index = LabelIndex::with_order("tiny:k=3", 2, [1, 2]).unwrap();
        assert_eq!(index.index(Some(2)).unwrap(), 2);
        let err = index.index(Some(3)).unwrap_err().to_string();
        assert!(
            err.contains("`tiny:k=3`")
                && err.contains("more than 2 distinct labels")
                && err.contains("`lctrie`"),
            "{err}"
        );
        assert!(LabelIndex::with_order("tiny", 1, [1, 2]).is_err());
    }
}
