//! The lookup engines, one module each. See `docs/ENGINES.md` for their
//! layouts, memory per prefix and memory accesses per lookup.

pub mod bloom;
pub mod bspl;
pub mod btree;
pub mod cpe;
pub mod dir24_8;
pub mod dxr;
pub mod dxr6;
pub mod lctrie;
pub mod levels;
pub mod poptrie;
pub mod radix;

pub mod shared;
