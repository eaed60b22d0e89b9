//! Where a lookup snapshot's arrays live.
//!
//! Every engine's snapshot is generic over a [`Storage`]: today the arrays
//! are vectors the process owns ([`Owned`], what a build produces and what
//! updates patch); a saved image maps the same arrays from a file, so the
//! lookup code is written once for both. Only [`Plain`] element types are
//! allowed, because a mapped array is a reinterpretation of file bytes.

use std::fmt::Debug;
use std::ops::Deref;

/// The kind of memory a snapshot's arrays are held in.
pub trait Storage: Send + Sync + 'static {
    /// A read-only array of `T`.
    type Array<T: Plain>: Deref<Target = [T]> + Clone + Debug + Send + Sync;
}

/// Arrays in vectors the process owns (the result of a build or update).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Owned;

impl Storage for Owned {
    type Array<T: Plain> = Vec<T>;
}

/// Element types that may be read straight from bytes: fixed size, no
/// padding, every bit pattern a valid value, no pointers.
///
/// # Safety
/// Implement only for types whose every bit pattern of `size_of::<Self>()`
/// bytes is a valid value and that have no padding bytes (`u8`..`u128` and
/// `#[repr(C)]`/`#[repr(transparent)]` structs of them laid out without
/// gaps).
pub unsafe trait Plain: Copy + Debug + Send + Sync + 'static {}

// SAFETY: primitive integers have no padding and no invalid bit patterns.
unsafe impl Plain for u8 {}
// SAFETY: as above.
unsafe impl Plain for u16 {}
// SAFETY: as above.
unsafe impl Plain for u32 {}
// SAFETY: as above.
unsafe impl Plain for u64 {}
// SAFETY: as above.
unsafe impl Plain for u128 {}
// SAFETY: arrays of plain values are plain (no padding between elements).
unsafe impl<T: Plain, const N: usize> Plain for [T; N] {}
