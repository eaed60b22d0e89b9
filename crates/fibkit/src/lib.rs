//! fibkit: longest-prefix-match lookup engines for IPv4 and IPv6 forwarding
//! tables, with the reference table, loaders and verification around them.
//!
//! A [`Rib`] is the authoritative table (prefix → label); engines are
//! read-optimised structures built from it and chosen by a spec string.
//!
//! ```
//! use fibkit::{build, Prefix, Rib};
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
pub mod bench;
pub mod engines;
pub mod fib;
pub mod load;
pub mod prefix;
pub mod rib;
pub mod trace;
pub mod verify;

pub use addr::{Addr, Family};
pub use fib::{
    apply_changes, build, BuildError, EngineFamily, EngineSpec, Fib, LabelTable, ENGINES,
};
pub use prefix::{Label, Prefix, PrefixError};
pub use rib::{Change, Range, Rib};
pub use verify::{verify, VerifyReport};

/// The README's Rust example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
