//! The lookup engines, one module each. See `docs/ENGINES.md` for their
//! layouts, memory per prefix and memory accesses per lookup.
//!
//! Each engine's folder holds `mod.rs` (its header, config and stats),
//! `lookup.rs` (the snapshot and its lookups), `build.rs`, `update.rs`,
//! `image.rs` where snapshots are saved, and `simd/` where it has vector
//! paths; a small engine keeps fewer files and says why in its header.
//! What several engines use is in [`shared`]; no engine imports another.

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
