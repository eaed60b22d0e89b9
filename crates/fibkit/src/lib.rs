//! fibkit: longest-prefix-match lookup engines for IPv4 and IPv6 forwarding
//! tables, with the reference table, loaders and verification around them.
//!
//! A [`Rib`] is the authoritative table (prefix → label); engines are
//! read-optimised structures built from it and chosen by a spec string. A
//! [`Fib`] holds both and publishes engine snapshots to lock-free readers
//! while changes are applied.
//!
//! ```
//! use fibkit::{build, Lookup, Prefix, Rib};
//!
//! let mut rib = Rib::<u32>::new();
//! rib.insert("10.0.0.0/8".parse::<Prefix<u32>>()?, 1);
//! rib.insert("10.1.0.0/16".parse::<Prefix<u32>>()?, 2);
//! let engine = build("dir24-8", &rib)?;
//! assert_eq!(engine.lookup(0x0a01_0203), Some(2)); // 10.1.2.3
//! assert_eq!(engine.lookup(0x0a02_0000), Some(1)); // 10.2.0.0
//! assert_eq!(engine.lookup(0x0b00_0000), None);    // 11.0.0.0
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

pub mod addr;
pub mod any;
pub mod bench;
pub mod engine;
pub mod engines;
mod error;
pub mod fib;
pub mod image;
pub mod labels;
pub mod load;
pub mod model;
pub mod prefix;
pub mod registry;
pub mod replay;
pub mod rib;
pub mod spec;
pub mod storage;
pub mod trace;
pub mod verify;

pub use addr::{Addr, Family};
pub use any::{AnyFib, FamilyFib};
pub use engine::{BuildError, EngineConfig, EngineStats, Lookup, Updater};
pub use error::Error;
pub use fib::{Fib, LocalFib, Published, Reader, UpdateSummary};
pub use prefix::{Label, Prefix, PrefixError};
pub use registry::{
    build, default_spec, ConfigV4, ConfigV6, EngineFamily, EngineInfo, EngineV4, EngineV6,
    LookupVisitor, SnapshotV4, SnapshotV6, StatsV4, StatsV6, ENGINES,
};
pub use rib::{Change, Range, Rib};
pub use spec::EngineSpec;
pub use verify::{verify, VerifyReport};

/// The README's Rust example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
