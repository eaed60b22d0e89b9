//! The answers the AVX-512 batch paths of `dxr6` and `poptrie` store.

use crate::labels::Answer;
#[cfg(doc)]
use crate::labels::LabelSlot;
use crate::prefix::Label;

/// What a vector batch stores per key from a vector of results slots: an
/// answer (`Option<Label>`, a results slot's bits) or the C library's word
/// (`u64`, converted in the register), so that the C bulk call needs no
/// buffer of answers to convert.
pub(crate) trait WideAnswer: Answer {
    /// Whether the answer is [`LabelSlot::word`] (else the slot's bits).
    const WORDS: bool;
}

impl WideAnswer for Option<Label> {
    const WORDS: bool = false;
}

impl WideAnswer for u64 {
    const WORDS: bool = true;
}

const _: () = assert!(
    std::mem::size_of::<Option<Label>>() == 8 && std::mem::size_of::<u64>() == 8,
    "the vector store writes 8-byte answers"
);
