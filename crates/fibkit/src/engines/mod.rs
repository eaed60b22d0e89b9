//! The lookup engines, one module each. See `docs/ENGINES.md` for their
//! layouts, memory per prefix and memory accesses per lookup.

pub mod cpe;
pub mod dir24_8;
pub mod dxr;
pub mod lctrie;
pub mod radix;
