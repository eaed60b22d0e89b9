//! The exact table (the "FIB" of \[Yeg18\]): every key the filter holds,
//! prefix or marker, with what a lookup that ends on it answers. Open
//! addressing with linear probing from the key's home slot
//! ([`KeyHash::slot`]); a slot is the key's address bits and one packed
//! value, 8 bytes for IPv4 (eight slots per cache line) and 32 for IPv6
//! (two per line), so a probe usually reads one line. Deletion shifts the
//! following slots back (no tombstones), so a probe stops at the first empty
//! slot. The load stays at most [`MAX_LOAD_PERCENT`], which keeps an empty
//! slot (the probe's stop) and short probe runs.

use super::filter::KeyHash;
use crate::addr::Addr;
use crate::storage::Plain;

/// One slot: the key's address bits and its packed value (0 = empty).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct ExactSlot<A> {
    addr: A,
    value: A,
}

// SAFETY: two fields of one plain integer type: no padding, and every bit
// pattern is a valid slot (an empty one, or a value whose fields a lookup
// bounds-checks when it indexes with them).
unsafe impl<A: Plain> Plain for ExactSlot<A> {}

/// Value bits holding the key's prefix length (1..=128; 0 marks an empty slot).
const PLEN_MASK: u32 = 0xff;
/// Set for a marker that is not itself a prefix.
const MARKER_FLAG: u32 = 1 << 8;
/// Where the label index starts.
const LABEL_SHIFT: u32 = 9;

/// Label indices a value can hold (23 bits; index 0 is the default route).
pub const MAX_LABELS: usize = (1 << (32 - LABEL_SHIFT)) - 1;

/// Highest load of the table, in percent, before it grows.
pub const MAX_LOAD_PERCENT: usize = 75;
/// Load of a table built or grown, in percent.
const BUILD_LOAD_PERCENT: usize = 60;

/// The value of a key of length `plen` (at least 1): a prefix answering
/// label index `label`, or a marker whose best matching prefix has it.
#[inline]
pub fn pack(plen: u8, marker: bool, label: u32) -> u32 {
    debug_assert!(plen > 0 && (label as usize) <= MAX_LABELS);
    plen as u32 | if marker { MARKER_FLAG } else { 0 } | label << LABEL_SHIFT
}

/// The prefix length of a non-empty value.
#[inline(always)]
pub fn plen_of(value: u32) -> u8 {
    (value & PLEN_MASK) as u8
}

/// Whether a non-empty value is a marker only (not a prefix).
#[inline(always)]
pub fn is_marker(value: u32) -> bool {
    value & MARKER_FLAG != 0
}

/// The label index a lookup ending on this value answers.
#[inline(always)]
pub fn label_of(value: u32) -> usize {
    (value >> LABEL_SHIFT) as usize
}

impl<A: Addr> ExactSlot<A> {
    #[inline(always)]
    fn value(&self) -> u32 {
        self.value.low_u64() as u32
    }
}

/// Slots for a table of `keys` keys, at the build load (at least one more
/// than `keys`, so a probe always finds an empty slot).
pub fn capacity_for(keys: usize) -> usize {
    (keys * 100 / BUILD_LOAD_PERCENT).max(keys + 1).max(8)
}

/// Whether a table of `slots` slots can take `keys` keys without growing.
pub fn fits(keys: usize, slots: usize) -> bool {
    keys * 100 <= slots * MAX_LOAD_PERCENT && keys < slots
}

/// The value of key `addr/plen` (hash `hash`), or 0 if the table does not
/// hold it.
#[inline(always)]
pub fn get<A: Addr>(table: &[ExactSlot<A>], addr: A, plen: u8, hash: KeyHash) -> u32 {
    table[probe(table, addr, plen, hash)].value()
}

/// The slot index where key `addr/plen` (hash `hash`) is, or the empty
/// slot where it would be inserted.
#[inline(always)]
fn probe<A: Addr>(table: &[ExactSlot<A>], addr: A, plen: u8, hash: KeyHash) -> usize {
    let mut index = hash.slot(table.len());
    // INVARIANT: the table always has an empty slot (`fits`), so the probe
    // stops.
    loop {
        let slot = &table[index];
        let value = slot.value();
        if value == 0 || (slot.addr == addr && plen_of(value) == plen) {
            return index;
        }
        index += 1;
        if index == table.len() {
            index = 0;
        }
    }
}

/// The slot index where key `addr/plen` is or would be inserted.
fn find<A: Addr>(table: &[ExactSlot<A>], addr: A, plen: u8) -> usize {
    probe(table, addr, plen, KeyHash::of(addr, plen))
}

/// Sets the value of key `addr/plen` (non-zero); whether the key is new.
/// The caller keeps the load within [`fits`].
pub fn insert<A: Addr>(table: &mut [ExactSlot<A>], addr: A, value: u32) -> bool {
    let index = find(table, addr, plen_of(value));
    let new = table[index].value() == 0;
    table[index] = ExactSlot {
        addr,
        value: A::from_u64(value as u64),
    };
    new
}

/// Removes key `addr/plen` if present; whether it was.
pub fn remove<A: Addr>(table: &mut [ExactSlot<A>], addr: A, plen: u8) -> bool {
    let mut hole = find(table, addr, plen);
    if table[hole].value() == 0 {
        return false;
    }
    // Shift back every following slot of the run whose home is not between
    // the hole and itself (cyclically), so no probe crosses an empty slot.
    let len = table.len();
    let mut next = hole;
    loop {
        next = if next + 1 == len { 0 } else { next + 1 };
        let slot = table[next];
        let value = slot.value();
        if value == 0 {
            break;
        }
        let home = KeyHash::of(slot.addr, plen_of(value)).slot(len);
        let home_in_gap = if hole <= next {
            hole < home && home <= next
        } else {
            hole < home || home <= next
        };
        if !home_in_gap {
            table[hole] = slot;
            hole = next;
        }
    }
    table[hole] = ExactSlot::default();
    true
}

/// A table of `slots` slots holding every key of `table`.
pub fn rehash<A: Addr>(table: &[ExactSlot<A>], slots: usize) -> Vec<ExactSlot<A>> {
    let mut grown = vec![ExactSlot::default(); slots];
    for slot in table.iter().filter(|slot| slot.value() != 0) {
        insert(&mut grown, slot.addr, slot.value());
    }
    grown
}

/// Keys the table holds: `(prefixes, markers)`.
pub fn count<A: Addr>(table: &[ExactSlot<A>]) -> (usize, usize) {
    table
        .iter()
        .map(ExactSlot::value)
        .filter(|&value| value != 0)
        .fold((0, 0), |(prefixes, markers), value| {
            if is_marker(value) {
                (prefixes, markers + 1)
            } else {
                (prefixes + 1, markers)
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip() {
        let value = pack(128, true, MAX_LABELS as u32);
        assert_eq!(plen_of(value), 128);
        assert!(is_marker(value));
        assert_eq!(label_of(value), MAX_LABELS);
        let value = pack(1, false, 0);
        assert!(value != 0 && !is_marker(value) && label_of(value) == 0);
    }

    /// Inserts and removes keys crowded into a small table (long runs that
    /// wrap around its end) and compares with a map after every step.
    #[test]
    fn probing_and_backward_shift_agree_with_a_map() {
        let mut table = vec![ExactSlot::<u32>::default(); 64];
        let mut model = std::collections::HashMap::new();
        let mut state = 1u64;
        for step in 0..20_000u32 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let plen = 1 + (state >> 60) as u8;
            let addr = (((state >> 40) as u32 & 0xf) << 28).masked(plen);
            let key = (addr, plen);
            if state >> 33 & 1 == 0 && fits(model.len() + 1, table.len()) {
                let value = pack(plen, step % 3 == 0, step % 1000);
                insert(&mut table, addr, value);
                model.insert(key, value);
            } else {
                assert_eq!(remove(&mut table, addr, plen), model.remove(&key).is_some());
            }
            for (&(addr, plen), &value) in &model {
                assert_eq!(get(&table, addr, plen, KeyHash::of(addr, plen)), value);
            }
        }
        assert_eq!(count(&table).0 + count(&table).1, model.len());
        let grown = rehash(&table, 1000);
        for (&(addr, plen), &value) in &model {
            assert_eq!(get(&grown, addr, plen, KeyHash::of(addr, plen)), value);
        }
    }
}
