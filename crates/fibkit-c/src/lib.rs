//! fibkit as a C library (`libfibkit.a`, `libfibkit.so`, `include/fibkit.h`),
//! in the shape of DPDK's `rte_fib`: open a table or an image, look up one
//! address or a bulk array, apply batches of changes, read statistics.
//!
//! Every entry point runs inside `catch_unwind`: no panic crosses into C; a
//! bug shows as `FIBKIT_ERR_PANIC`. Errors are negative return codes and a
//! message per thread ([`fibkit_last_error`]) naming the problem (the
//! `file:line` of a bad table line, the index of a bad change). Pointers
//! are checked for NULL and alignment before any slice is made of them.
//!
//! A `fibkit_fib` wraps [`fibkit::AnyFib`]: lookups read the published
//! snapshot without locks or reference counts, so any number of threads may
//! look up through one handle while one thread applies changes.
//!
//! Bulk results are `uint64_t`: a label (any `uint32_t`) or
//! [`FIBKIT_NO_ROUTE`], which lies outside the label range, so one array
//! and one compare answer both questions (as `rte_fib_lookup_bulk` writes
//! 64-bit next hops). A separate found mask would cost a second output
//! stream; a sentinel inside `uint32_t` would take a label value away.

#![allow(non_camel_case_types)]
#![deny(missing_docs)]

// cbindgen reads this file's items, then the modules in the order they
// are declared: the order of the functions in include/fibkit.h. Each
// stands apart so that rustfmt keeps that order. The modules name this
// file's items as `super::`, not `crate::`: the benchmarks compile this
// file as a module of their own (`#[path = "../src/lib.rs"]`).

/// Checks of the C arguments: pointers, arrays, strings, family values.
mod args;

/// What differs between the IPv4 and IPv6 entry points.
mod family;

/// Return codes, `fibkit_last_error` and the guard around every call.
mod error;

/// `fibkit_table_*`: loading table files.
mod table;

/// `fibkit_fib_*`: building, opening and describing tables.
mod fib;

/// `fibkit_lookup_v4`, `_v6` and their bulk forms.
mod lookup;

/// `fibkit_reader_*`: one thread's reader and its lookups.
mod reader;

/// `fibkit_lookup_text`: lookups of addresses given as text.
mod text;

/// `fibkit_apply_v4`, `_v6`: batches of changes.
mod update;

use std::ffi::{c_char, c_int};

use fibkit::load::LoadedTable;
use fibkit::AnyFib;

use family::AnyReader;

pub use error::fibkit_last_error;
pub use fib::{
    fibkit_fib_build, fibkit_fib_free, fibkit_fib_new, fibkit_fib_open_image, fibkit_fib_spec,
    fibkit_fib_stats,
};
pub use lookup::{
    fibkit_lookup_v4, fibkit_lookup_v4_bulk, fibkit_lookup_v6, fibkit_lookup_v6_bulk,
};
pub use reader::{
    fibkit_reader_free, fibkit_reader_lookup_v4, fibkit_reader_lookup_v4_bulk,
    fibkit_reader_lookup_v6, fibkit_reader_lookup_v6_bulk, fibkit_reader_new,
};
pub use table::{
    fibkit_table_free, fibkit_table_load, fibkit_table_load_with, fibkit_table_nexthop,
    fibkit_table_prefixes,
};
pub use text::fibkit_lookup_text;
pub use update::{fibkit_apply_v4, fibkit_apply_v6};

/// Success; for lookups: a route was found.
pub const FIBKIT_OK: c_int = 0;
/// A lookup found no route (not an error).
pub const FIBKIT_NOT_FOUND: c_int = 1;
/// A required pointer was NULL (or misaligned for its type).
pub const FIBKIT_ERR_NULL: c_int = -1;
/// An argument is invalid: a family value, a change (the message names its
/// index), a text address, a path or spec that is not UTF-8, a buffer too
/// small.
pub const FIBKIT_ERR_ARGUMENT: c_int = -2;
/// Addresses or changes of one family given to a table of the other.
pub const FIBKIT_ERR_FAMILY: c_int = -3;
/// A table file could not be read (the message gives `file:line`).
pub const FIBKIT_ERR_LOAD: c_int = -4;
/// An engine could not be built or updated (unknown spec, a layout limit);
/// after a failed `fibkit_apply_*` the table answers as before the batch.
pub const FIBKIT_ERR_BUILD: c_int = -5;
/// An image could not be opened: missing, truncated, damaged, from another
/// fibkit version or machine, or of an engine that cannot be saved.
pub const FIBKIT_ERR_IMAGE: c_int = -6;
/// Changes given to a table opened from an image, which cannot change.
pub const FIBKIT_ERR_READ_ONLY: c_int = -7;
/// An internal error (a bug in fibkit); the message says where.
pub const FIBKIT_ERR_PANIC: c_int = -8;

/// The bulk-lookup result of an address no prefix matches: outside the
/// `uint32_t` range of labels.
pub const FIBKIT_NO_ROUTE: u64 = u64::MAX;
// The engines' batch loops write this word themselves.
const _: () = assert!(FIBKIT_NO_ROUTE == fibkit::labels::NO_ROUTE_WORD);
/// Family value for IPv4.
pub const FIBKIT_IPV4: c_int = 4;
/// Family value for IPv6.
pub const FIBKIT_IPV6: c_int = 6;
/// Family value for "the table's family" (IPv4 if it has IPv4 prefixes).
pub const FIBKIT_ANY_FAMILY: c_int = 0;
/// Bytes that always hold a prefix as text with its NUL
/// (`ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128` is 43 characters).
pub const FIBKIT_PREFIX_TEXT_BYTES: usize = 48;

/// `fibkit_load_options::label`: routes of an MRT dump (or its bgpdump text) labelled by next
/// hop (an index of the table's next hops: `fibkit_table_nexthop`).
pub const FIBKIT_LABEL_NEXTHOP: c_int = 0;
/// `fibkit_load_options::label`: routes of an MRT dump (or its bgpdump text) labelled by origin
/// AS (0 where the path has none or ends in an AS set).
pub const FIBKIT_LABEL_ORIGIN_AS: c_int = 1;

/// How `fibkit_table_load_with` reads a file; a zeroed struct gives the
/// defaults of `fibkit_table_load`.
#[repr(C)]
pub struct fibkit_load_options {
    /// The format instead of detecting it (`"table"`, `"nexthop"`, `"mrt"`,
    /// `"pfx2as"`, `"bgpdump"`), or NULL.
    pub format: *const c_char,
    /// MRT and bgpdump: `FIBKIT_LABEL_NEXTHOP` or `FIBKIT_LABEL_ORIGIN_AS`.
    pub label: c_int,
    /// MRT and bgpdump RIB dumps: the peer whose routes are kept (`"192.0.2.1"`,
    /// `"AS64500"`), or NULL for the peer with most prefixes.
    pub peer: *const c_char,
    /// Non-zero: clear host bits of prefixes like 10.0.0.1/8 instead of
    /// failing.
    pub lenient: c_int,
    /// Non-zero: skip bad lines or records instead of failing.
    pub skip_bad: c_int,
}

/// A loaded table file: its IPv4 and IPv6 prefixes. Opaque.
pub struct fibkit_table {
    table: LoadedTable,
}

/// A forwarding table of one family, built by engine spec from a table
/// (live: changes can be applied) or opened from an image. Opaque.
pub struct fibkit_fib {
    fib: AnyFib,
}

/// One thread's reader of a table: its lookups check for a newer snapshot
/// with one atomic load per call, where the `fibkit_lookup_*` calls on the
/// table take and release a snapshot guard per call. Opaque; one per
/// thread, not shared.
pub struct fibkit_reader {
    reader: AnyReader,
}

/// One IPv4 change: announce `addr/plen` with `label`, or withdraw it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct fibkit_change_v4 {
    /// The prefix's address, host order (`0x0a000000` for 10.0.0.0); host
    /// bits must be clear.
    pub addr: u32,
    /// The prefix length, 0..=32.
    pub plen: u8,
    /// 0: announce (insert or relabel), 1: withdraw.
    pub withdraw: u8,
    /// The label of an announce (ignored for a withdraw).
    pub label: u32,
}

/// One IPv6 change: announce `addr/plen` with `label`, or withdraw it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct fibkit_change_v6 {
    /// The prefix's address, network order; host bits must be clear.
    pub addr: [u8; 16],
    /// The prefix length, 0..=128.
    pub plen: u8,
    /// 0: announce (insert or relabel), 1: withdraw.
    pub withdraw: u8,
    /// The label of an announce (ignored for a withdraw).
    pub label: u32,
}

/// Statistics of a table.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct fibkit_stats {
    /// `FIBKIT_IPV4` or `FIBKIT_IPV6`.
    pub family: c_int,
    /// 1 if opened from an image (no reference table, no changes), else 0.
    pub is_image: c_int,
    /// Prefixes in the reference table (0 for an image, which has none).
    pub prefixes: u64,
    /// Bytes of the lookup structures (for an image: the mapped arrays,
    /// shared by every process mapping the file).
    pub memory_bytes: u64,
    /// Batches of changes published so far.
    pub version: u64,
}

/// What one applied batch did.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct fibkit_summary {
    /// Changes that altered the table.
    pub effective: u64,
    /// Changes that did not (withdraw of an absent prefix, same label).
    pub no_ops: u64,
    /// 1 if the engine was rebuilt rather than patched.
    pub rebuilt: c_int,
    /// The version published.
    pub version: u64,
}
