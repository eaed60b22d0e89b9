//! The lookup snapshot of `poptrie` and its walks: per key, and the
//! batch (the AVX-512 batch is in `wide`).

use std::marker::PhantomData;

use super::{counted, is_node, left, LEAF, STRIDE};
use crate::addr::Addr;
use crate::engine::Lookup;
use crate::labels::{word_of, LabelSlot};
use crate::prefix::Label;
use crate::storage::{Owned, Storage};

/// The lookup snapshot of a `poptrie` engine (see the module header), in
/// storage `S`.
pub struct Poptrie<A: Addr, S: Storage = Owned> {
    pub(super) root_bits: u32,
    pub(super) direct_bits: u32,
    pub(super) root: S::Array<u32>,
    pub(super) entries: S::Array<u64>,
    pub(super) results: S::Array<LabelSlot>,
    /// Whether this CPU runs the AVX-512 batch (decided at build).
    pub(super) wide: bool,
    /// Whether this CPU has POPCNT (the per-key walk uses it).
    pub(super) popcnt: bool,
    pub(super) family: PhantomData<A>,
}

impl<A: Addr, S: Storage> Clone for Poptrie<A, S> {
    fn clone(&self) -> Self {
        Poptrie {
            root_bits: self.root_bits,
            direct_bits: self.direct_bits,
            root: self.root.clone(),
            entries: self.entries.clone(),
            results: self.results.clone(),
            wide: self.wide,
            popcnt: self.popcnt,
            family: PhantomData,
        }
    }
}

impl<A: Addr, S: Storage> Poptrie<A, S> {
    /// The entry for `left` (a key left-aligned in 128 bits) in the table
    /// that the root entry `entry` of its chunk names: the table's first
    /// plus the D key bits after the root's (`>> 1` first, so that D = 0
    /// shifts by 127, not 128).
    #[inline(always)]
    pub(super) fn table_slot(&self, entry: u32, left: u128) -> usize {
        entry as usize + (left << self.root_bits >> 1 >> (127 - self.direct_bits)) as usize
    }

    /// The per-key walk (inlined into the callers that pick the popcount
    /// instruction or not).
    #[inline(always)]
    pub(super) fn walk(&self, addr: A) -> Option<Label> {
        let left = left(addr);
        let entry = self.root[(left >> (128 - self.root_bits)) as usize];
        if entry & LEAF != 0 {
            return self.results[(entry & !LEAF) as usize].get();
        }
        let mut word = self.entries[self.table_slot(entry, left)];
        let mut rest = left << (self.root_bits + self.direct_bits);
        while is_node(word) {
            let child = (rest >> (128 - STRIDE)) as u32;
            word = self.entries[counted(word, child)];
            rest <<= STRIDE;
        }
        match word as u32 {
            0 => self.results[(word >> 32) as usize].get(),
            _ => Some((word >> 32) as Label),
        }
    }

    /// [`Self::walk`] with the POPCNT instruction.
    ///
    /// # Safety
    /// The CPU must have POPCNT.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "popcnt")]
    unsafe fn walk_popcnt(&self, addr: A) -> Option<Label> {
        self.walk(addr)
    }

    /// The lookup without AVX-512 (and, where the CPU lacks it, without
    /// POPCNT).
    #[inline]
    fn lookup_portable(&self, addr: A) -> Option<Label> {
        #[cfg(target_arch = "x86_64")]
        if self.popcnt {
            // SAFETY: `popcnt` is set only where the CPU has POPCNT.
            return unsafe { self.walk_popcnt(addr) };
        }
        self.walk(addr)
    }

    /// The batch lookup of a CPU without AVX-512: one key at a time (the
    /// walks of consecutive keys are independent, so their reads overlap
    /// in the core); public so that benchmarks on a CPU with AVX-512 can
    /// run it too.
    #[doc(hidden)]
    pub fn lookup_batch_portable(&self, addrs: &[A], out: &mut [Option<Label>]) {
        for (&addr, out) in addrs.iter().zip(out.iter_mut()) {
            *out = self.lookup_portable(addr);
        }
    }
}

impl<A: Addr, S: Storage> Lookup<A> for Poptrie<A, S> {
    #[inline]
    fn lookup(&self, addr: A) -> Option<Label> {
        self.lookup_portable(addr)
    }

    fn lookup_batch(&self, addrs: &[A], out: &mut [Option<Label>]) {
        assert!(out.len() >= addrs.len(), "output slice shorter than input");
        #[cfg(target_arch = "x86_64")]
        if self.wide {
            // SAFETY: `wide` is set only where the CPU has the features
            // `wide::available` checks.
            unsafe { self.lookup_batch_wide::<A, _, false>(addrs, out) };
            return;
        }
        self.lookup_batch_portable(addrs, out);
    }

    /// The AVX-512 batch writes the C library's words itself: no buffer of
    /// answers to clear and convert per call.
    fn lookup_batch_words(&self, addrs: &[A], out: &mut [u64]) {
        assert!(out.len() >= addrs.len(), "output slice shorter than input");
        #[cfg(target_arch = "x86_64")]
        if self.wide {
            // SAFETY: `wide` is set only where the CPU has the features
            // `wide::available` checks.
            unsafe { self.lookup_batch_wide::<A, _, false>(addrs, out) };
            return;
        }
        for (&addr, out) in addrs.iter().zip(out.iter_mut()) {
            *out = word_of(self.lookup_portable(addr));
        }
    }

    /// The AVX-512 batch reads network-order keys in place and swaps their
    /// bytes in the register: no run of keys converted into a buffer and
    /// read back (a store and a reload per key that the walk waits for).
    fn lookup_batch_words_be(&self, keys: &[A::Bytes], out: &mut [u64]) {
        assert!(out.len() >= keys.len(), "output slice shorter than input");
        #[cfg(target_arch = "x86_64")]
        if self.wide {
            // SAFETY: `wide` is set only where the CPU has the features
            // `wide::available` checks; `A::Bytes` is the `A::BITS / 8`
            // network-order bytes of an address.
            unsafe { self.lookup_batch_wide::<A::Bytes, _, true>(keys, out) };
            return;
        }
        crate::engine::words_from_bytes(self, keys, out);
    }

    fn memory_bytes(&self) -> usize {
        self.root.len() * 4
            + self.entries.len() * 8
            + self.results.len() * std::mem::size_of::<LabelSlot>()
    }
}
