//! fibkit: longest-prefix-match lookup engines for IPv4 and IPv6 forwarding
//! tables, with the reference table, loaders and verification around them.
//!
//! Three types cover most programs:
//!
//! - [`Rib`]: the reference table (prefix → label), the one you load or
//!   fill and change; `Rib<u32>` for IPv4, `Rib<u128>` for IPv6.
//! - [`build`]: an engine built from a `Rib` by spec string (`"dxr"`,
//!   `"dxr:k=20"`, [`default_spec`] for the fastest on this CPU), for a
//!   table that does not change; its snapshot answers through [`Lookup`].
//! - [`Fib`]: a table that changes while threads read it: the `Rib`, the
//!   engine, and lock-free readers ([`LocalFib`] for one thread, [`AnyFib`]
//!   for a file of either family or a saved image).
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
//!
//! **The fast loops.** [`build`] returns an enum over every engine
//! ([`registry::SnapshotV4`]), so `engine.lookup(addr)` matches on the
//! engine at every call; in a per-key loop that costs the fastest engines
//! up to half their speed. Two calls run at the engine's own speed: a
//! batch (`lookup_batch`, whose one `match` covers the whole slice), and a
//! loop written once for any [`Lookup`] and run through `dispatch`, which
//! picks the engine once and compiles the loop for each:
//!
//! ```
//! use fibkit::{build, Lookup, LookupVisitor, Prefix, Rib};
//!
//! /// Sums the labels of the addresses that have a route.
//! struct SumLabels<'a>(&'a [u32]);
//!
//! impl LookupVisitor<u32> for SumLabels<'_> {
//!     type Output = u64;
//!     fn visit<L: Lookup<u32>>(self, engine: &L) -> u64 {
//!         // `engine` is the engine's own type: `lookup` is inlined here.
//!         self.0.iter().filter_map(|&addr| engine.lookup(addr)).map(u64::from).sum()
//!     }
//! }
//!
//! let mut rib = Rib::<u32>::new();
//! rib.insert("10.0.0.0/8".parse::<Prefix<u32>>()?, 1);
//! let engine = build(fibkit::default_spec(fibkit::Family::V4), &rib)?;
//! let addrs = [0x0a00_0001, 0x0b00_0001, 0x0a01_0000];
//! assert_eq!(engine.dispatch(SumLabels(&addrs)), 2);
//!
//! let mut out = [None; 3];
//! engine.lookup_batch(&addrs, &mut out);
//! assert_eq!(out, [Some(1), None, Some(1)]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The rest is under its module: the engines ([`engines`]) and their
//! contract ([`engine`]), the per-family enums and the list of engines
//! ([`registry`]), readers and update summaries ([`fib`]), the loaders
//! ([`load`]), saved images ([`image`]), verification against the
//! reference ([`verify`]), the performance model ([`model`]) and engine
//! choice ([`choice`]). The crate's examples (`cargo run --release -p
//! fibkit --example lookup`, `live_updates`, `image`, `dual_stack`,
//! `pick_engine`) show each in a program.
//!
//! Cargo features: `loaders` (on by default: compressed inputs and the MRT
//! loaders: flate2, bzip2, bgpkit-parser), `ipnet` (on by default:
//! conversions to the `ipnet` crate's prefixes), `bench` (off by default:
//! the seeded synthetic generators of [`trace`], rand). Without them the
//! crate builds the engines, the reference table, the [`Fib`] handle,
//! saved images, trace files and the text loaders. The benchmark method
//! and the replay driver behind `fibkit bench` and `fibkit replay` are the
//! unpublished `fibkit-bench` crate's.
//!
//! Addresses convert from `std::net` (`u32::from(Ipv4Addr)`,
//! `u128::from(Ipv6Addr)`), prefixes from `(Ipv4Addr, plen)` pairs and,
//! with the default feature `ipnet`, from `ipnet` prefixes; an `IpAddr`
//! is matched on its family. The matched prefix comes from the reference
//! table ([`LocalFib::lookup_prefix`], [`Fib::lookup_prefix`]): a walk of
//! the trie, about the `radix` engine's cost, for reporting rather than
//! for every packet. Every fibkit error converts into [`Error`], whose
//! variants are the specific errors:
//!
//! ```
//! use std::net::{IpAddr, Ipv4Addr};
//! use fibkit::{LocalFib, Lookup, Prefix, Rib};
//!
//! let mut rib = Rib::<u32>::new();
//! let net: ipnet::Ipv4Net = "192.0.2.0/24".parse()?;
//! rib.insert(net.into(), 7);
//! rib.insert(Prefix::try_from((Ipv4Addr::new(198, 51, 100, 0), 24))?, 8);
//! let fib = LocalFib::<u32>::new("dxr", rib)?;
//! let addr: IpAddr = "192.0.2.9".parse()?;
//! let IpAddr::V4(v4) = addr else { unreachable!("an IPv4 address") };
//! assert_eq!(fib.snapshot().lookup(v4.into()), Some(7));
//! let (prefix, label) = fib.lookup_prefix(v4.into()).unwrap();
//! assert_eq!((ipnet::Ipv4Net::from(prefix), label), (net, 7));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

pub mod addr;
pub mod any;
pub mod choice;
pub mod cpu;
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
pub mod rib;
pub mod spec;
pub mod storage;
pub mod summary;
pub mod trace;
pub mod verify;

// The front door: the types a program holds and the calls it makes.
// Everything else is under its module (engine contract in `engine`, the
// per-family enums in `registry`, readers in `fib`, ...).
pub use addr::{Addr, Family};
pub use any::AnyFib;
pub use choice::default_spec;
pub use engine::Lookup;
pub use error::Error;
pub use fib::{Fib, LocalFib};
pub use prefix::{Label, Prefix};
pub use registry::{build, LookupVisitor};
pub use rib::{Change, Rib};

/// The README's Rust example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
