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

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use fibkit::load::{load_table, Format, LabelSource, LoadOptions, LoadedTable, PeerSelector};
use fibkit::registry::ImageFamily;
use fibkit::{AnyFib, Change, Family, FamilyFib, FamilyReader, Label, Prefix};

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

/// A reader of either family.
enum AnyReader {
    V4(FamilyReader<u32>),
    V6(FamilyReader<u128>),
}

impl AnyReader {
    fn family(&self) -> Family {
        match self {
            AnyReader::V4(_) => Family::V4,
            AnyReader::V6(_) => Family::V6,
        }
    }
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

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// A failed call: its return code and message.
struct Failure {
    code: c_int,
    message: String,
}

fn fail(code: c_int, message: impl Into<String>) -> Failure {
    Failure {
        code,
        message: message.into(),
    }
}

impl From<fibkit::Error> for Failure {
    fn from(error: fibkit::Error) -> Self {
        let code = match &error {
            fibkit::Error::Load(_) => FIBKIT_ERR_LOAD,
            fibkit::Error::Image(_) => FIBKIT_ERR_IMAGE,
            fibkit::Error::ReadOnlyImage { .. } => FIBKIT_ERR_READ_ONLY,
            fibkit::Error::Prefix(_) => FIBKIT_ERR_ARGUMENT,
            _ => FIBKIT_ERR_BUILD,
        };
        fail(code, error.to_string())
    }
}

fn set_last_error(message: &str) {
    // A message with an interior NUL (from a file name) is cut there.
    let text = message.split('\0').next().unwrap_or_default();
    let text = CString::new(text).unwrap_or_default();
    LAST_ERROR.with(|last| *last.borrow_mut() = text);
}

/// Runs an entry point: its result code, or the failure's code with the
/// message kept for [`fibkit_last_error`]; a panic becomes
/// `FIBKIT_ERR_PANIC` instead of unwinding into C.
fn guard(call: impl FnOnce() -> Result<c_int, Failure>) -> c_int {
    match catch_unwind(AssertUnwindSafe(call)) {
        Ok(Ok(code)) => code,
        Ok(Err(failure)) => {
            set_last_error(&failure.message);
            failure.code
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            set_last_error(&format!("internal error in fibkit: {what}"));
            FIBKIT_ERR_PANIC
        }
    }
}

/// `ptr` as a reference, or a NULL error naming `what`.
///
/// # Safety
/// A non-NULL `ptr` must point to a live `T` for the returned lifetime.
unsafe fn non_null<'a, T>(ptr: *const T, what: &str) -> Result<&'a T, Failure> {
    // SAFETY: the caller guarantees a non-NULL pointer is valid.
    unsafe { ptr.as_ref() }.ok_or_else(|| fail(FIBKIT_ERR_NULL, format!("`{what}` is NULL")))
}

/// Writes `value` through an output pointer, or a NULL error naming `what`.
///
/// # Safety
/// A non-NULL `ptr` must be valid for writing a `T`.
unsafe fn write_out<T>(ptr: *mut T, value: T, what: &str) -> Result<(), Failure> {
    if ptr.is_null() {
        return Err(fail(FIBKIT_ERR_NULL, format!("`{what}` is NULL")));
    }
    // SAFETY: non-NULL, and the caller guarantees it is valid for writes.
    unsafe { ptr.write_unaligned(value) };
    Ok(())
}

/// Checks `ptr` for NULL and alignment before a slice of `n` elements is
/// made of it.
fn check_array<T>(ptr: *const T, n: usize, what: &str) -> Result<(), Failure> {
    if ptr.is_null() {
        return Err(fail(FIBKIT_ERR_NULL, format!("`{what}` is NULL")));
    }
    if !ptr.is_aligned() {
        return Err(fail(
            FIBKIT_ERR_NULL,
            format!("`{what}` is not aligned for its element type"),
        ));
    }
    if n.checked_mul(std::mem::size_of::<T>())
        .is_none_or(|bytes| bytes > isize::MAX as usize)
    {
        return Err(fail(
            FIBKIT_ERR_ARGUMENT,
            format!("{n} elements of `{what}` exceed the address space"),
        ));
    }
    Ok(())
}

/// The `n` elements at `ptr`.
///
/// # Safety
/// A non-NULL, aligned `ptr` must point to `n` initialised elements that
/// nothing writes while the slice lives.
unsafe fn array<'a, T>(ptr: *const T, n: usize, what: &str) -> Result<&'a [T], Failure> {
    if n == 0 {
        return Ok(&[]);
    }
    check_array(ptr, n, what)?;
    // SAFETY: checked non-NULL, aligned and of a valid size above; the
    // caller guarantees the elements.
    Ok(unsafe { std::slice::from_raw_parts(ptr, n) })
}

/// The `n` elements at `ptr`, to write.
///
/// # Safety
/// A non-NULL, aligned `ptr` must be valid for writing `n` elements that
/// nothing else accesses while the slice lives.
unsafe fn array_mut<'a, T>(ptr: *mut T, n: usize, what: &str) -> Result<&'a mut [T], Failure> {
    if n == 0 {
        return Ok(&mut []);
    }
    check_array(ptr, n, what)?;
    // SAFETY: as in `array`, for writes.
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr, n) })
}

/// A C string argument as UTF-8.
///
/// # Safety
/// A non-NULL `ptr` must point to a NUL-terminated string.
unsafe fn text<'a>(ptr: *const c_char, what: &str) -> Result<&'a str, Failure> {
    if ptr.is_null() {
        return Err(fail(FIBKIT_ERR_NULL, format!("`{what}` is NULL")));
    }
    // SAFETY: non-NULL and NUL-terminated by the caller's contract.
    unsafe { CStr::from_ptr(ptr) }
        .to_str()
        .map_err(|_| fail(FIBKIT_ERR_ARGUMENT, format!("`{what}` is not UTF-8")))
}

fn family_of(value: c_int, allow_any: bool) -> Result<Option<Family>, Failure> {
    match value {
        FIBKIT_IPV4 => Ok(Some(Family::V4)),
        FIBKIT_IPV6 => Ok(Some(Family::V6)),
        FIBKIT_ANY_FAMILY if allow_any => Ok(None),
        other => Err(fail(
            FIBKIT_ERR_ARGUMENT,
            format!(
                "family {other} is not FIBKIT_IPV4 (4){}FIBKIT_IPV6 (6)",
                if allow_any {
                    ", FIBKIT_ANY_FAMILY (0) or "
                } else {
                    " or "
                }
            ),
        )),
    }
}

fn family_code(family: Family) -> c_int {
    match family {
        Family::V4 => FIBKIT_IPV4,
        Family::V6 => FIBKIT_IPV6,
    }
}

/// Hands a new table to C through `out`.
///
/// # Safety
/// A non-NULL `out` must be valid for writing a pointer.
unsafe fn give_fib(out: *mut *mut fibkit_fib, fib: AnyFib) -> Result<c_int, Failure> {
    let raw = Box::into_raw(Box::new(fibkit_fib { fib }));
    // SAFETY: forwarded from the caller.
    if let Err(failure) = unsafe { write_out(out, raw, "out") } {
        // SAFETY: `raw` came from `Box::into_raw` just above and was not
        // handed out.
        drop(unsafe { Box::from_raw(raw) });
        return Err(failure);
    }
    Ok(FIBKIT_OK)
}

/// The message of the last call on this thread that failed, naming the
/// problem (`file:line: what` for a bad table line). Never NULL; valid
/// until the next failing fibkit call on this thread. Successful calls
/// leave it unchanged.
#[no_mangle]
pub extern "C" fn fibkit_last_error() -> *const c_char {
    LAST_ERROR.with(|last| last.borrow().as_ptr())
}

/// Loads a table file in any format fibkit reads (`prefix label` or
/// `prefix nexthop-address` text, CAIDA prefix-to-AS files, MRT RIB dumps;
/// plain, gzip or bzip2),
/// with both families' prefixes. Free it with `fibkit_table_free`.
///
/// # Safety
/// `path` must be a NUL-terminated string and `out` valid for writing.
#[no_mangle]
pub unsafe extern "C" fn fibkit_table_load(
    path: *const c_char,
    out: *mut *mut fibkit_table,
) -> c_int {
    // SAFETY: forwarded from the caller; NULL options are the defaults.
    unsafe { fibkit_table_load_with(path, std::ptr::null(), out) }
}

/// `fibkit_table_load` with options (`options` NULL: the defaults). A
/// format, label or peer the options name badly is `FIBKIT_ERR_ARGUMENT`;
/// a peer the dump does not have is `FIBKIT_ERR_LOAD`, its message listing
/// the dump's peers.
///
/// # Safety
/// `path` must be a NUL-terminated string, `options` NULL or valid for
/// reading (its strings NULL or NUL-terminated), `out` valid for writing.
#[no_mangle]
pub unsafe extern "C" fn fibkit_table_load_with(
    path: *const c_char,
    options: *const fibkit_load_options,
    out: *mut *mut fibkit_table,
) -> c_int {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let path = unsafe { text(path, "path") }?;
        if out.is_null() {
            return Err(fail(FIBKIT_ERR_NULL, "`out` is NULL"));
        }
        // SAFETY: NULL or valid for reading, by the caller's contract.
        let load = match unsafe { options.as_ref() } {
            // SAFETY: the struct's strings are NULL or NUL-terminated.
            Some(options) => unsafe { load_options(options) }?,
            None => LoadOptions::default(),
        };
        let table = load_table(Path::new(path), &load)
            .map_err(|e| Failure::from(fibkit::Error::from(e)))?;
        let raw = Box::into_raw(Box::new(fibkit_table { table }));
        // SAFETY: checked non-NULL above; valid by the caller's contract.
        unsafe { out.write_unaligned(raw) };
        Ok(FIBKIT_OK)
    })
}

/// The loader's options from the C struct.
///
/// # Safety
/// The struct's strings must be NULL or NUL-terminated.
unsafe fn load_options(options: &fibkit_load_options) -> Result<LoadOptions<'static>, Failure> {
    // SAFETY: forwarded from the caller.
    let format = unsafe { parsed_option::<Format>(options.format, "options->format") }?;
    // SAFETY: forwarded from the caller.
    let peer = unsafe { parsed_option::<PeerSelector>(options.peer, "options->peer") }?;
    let label = match options.label {
        FIBKIT_LABEL_NEXTHOP => LabelSource::NextHop,
        FIBKIT_LABEL_ORIGIN_AS => LabelSource::OriginAs,
        other => {
            return Err(fail(
                FIBKIT_ERR_ARGUMENT,
                format!(
                    "options->label {other} is neither FIBKIT_LABEL_NEXTHOP (0) nor \
                     FIBKIT_LABEL_ORIGIN_AS (1)"
                ),
            ))
        }
    };
    Ok(LoadOptions {
        format,
        label,
        peer,
        lenient: options.lenient != 0,
        skip_bad: options.skip_bad != 0,
        ..LoadOptions::default()
    })
}

/// An optional string field of `fibkit_load_options` (`field` in messages)
/// parsed as `T`: `None` when NULL.
///
/// # Safety
/// `ptr` must be NULL or NUL-terminated.
unsafe fn parsed_option<T: std::str::FromStr<Err = String>>(
    ptr: *const c_char,
    field: &str,
) -> Result<Option<T>, Failure> {
    if ptr.is_null() {
        return Ok(None);
    }
    // SAFETY: non-NULL, and NUL-terminated by the caller's contract.
    let value = unsafe { text(ptr, field) }?;
    value
        .parse::<T>()
        .map(Some)
        .map_err(|why| fail(FIBKIT_ERR_ARGUMENT, format!("{field}: {why}")))
}

/// Writes the next-hop address of `label` (`192.0.2.1`, `2001:db8::1`) into
/// `buf` as `snprintf` does, for a table labelled by next hop (`prefix
/// nexthop` text, MRT with `FIBKIT_LABEL_NEXTHOP`). Returns the address's
/// length (`>= len`: cut; `FIBKIT_PREFIX_TEXT_BYTES` always holds it), or
/// `FIBKIT_NOT_FOUND` when the label names no next hop. `buf` may be NULL
/// when `len` is 0.
///
/// # Safety
/// `table` must come from `fibkit_table_load`; `buf` valid for writing
/// `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn fibkit_table_nexthop(
    table: *const fibkit_table,
    label: u32,
    buf: *mut c_char,
    len: usize,
) -> c_int {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let table = &unsafe { non_null(table, "table") }?.table;
        // SAFETY: forwarded from the caller.
        let buf = unsafe { array_mut(buf.cast::<u8>(), len, "buf") }?;
        let Some(addr) = table.nexthops.addr(label) else {
            return Ok(FIBKIT_NOT_FOUND);
        };
        let addr = addr.to_string();
        copy_text(&addr, buf);
        Ok(addr.len() as c_int)
    })
}

/// The numbers of IPv4 and IPv6 prefixes in a loaded table (either output
/// may be NULL).
///
/// # Safety
/// `table` must come from `fibkit_table_load`; non-NULL outputs must be
/// valid for writing.
#[no_mangle]
pub unsafe extern "C" fn fibkit_table_prefixes(
    table: *const fibkit_table,
    v4_prefixes: *mut u64,
    v6_prefixes: *mut u64,
) -> c_int {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let table = &unsafe { non_null(table, "table") }?.table;
        if !v4_prefixes.is_null() {
            // SAFETY: non-NULL; valid by the caller's contract.
            unsafe { write_out(v4_prefixes, table.v4.len() as u64, "v4_prefixes") }?;
        }
        if !v6_prefixes.is_null() {
            // SAFETY: as above.
            unsafe { write_out(v6_prefixes, table.v6.len() as u64, "v6_prefixes") }?;
        }
        Ok(FIBKIT_OK)
    })
}

/// Frees a loaded table (NULL is ignored). Tables built from it keep their
/// own copy of the prefixes.
///
/// # Safety
/// `table` must come from `fibkit_table_load` and not be used afterwards.
#[no_mangle]
pub unsafe extern "C" fn fibkit_table_free(table: *mut fibkit_table) {
    guard(|| {
        if !table.is_null() {
            // SAFETY: the caller hands back a pointer from `Box::into_raw`.
            drop(unsafe { Box::from_raw(table) });
        }
        Ok(FIBKIT_OK)
    });
}

/// Builds the engine `spec` (`"dxr"`, `"dir24-8"`, `"lctrie"`, ...; NULL
/// for the family's default) from the prefixes of `family` in `table`
/// (`FIBKIT_ANY_FAMILY`: IPv4 if the table has any). The result owns a copy
/// of the prefixes: changes can be applied and prefixes looked up. Free it
/// with `fibkit_fib_free`.
///
/// # Safety
/// `table` must come from `fibkit_table_load`, a non-NULL `spec` must be
/// NUL-terminated, and `out` valid for writing.
#[no_mangle]
pub unsafe extern "C" fn fibkit_fib_build(
    table: *const fibkit_table,
    family: c_int,
    spec: *const c_char,
    out: *mut *mut fibkit_fib,
) -> c_int {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let table = &unsafe { non_null(table, "table") }?.table;
        let spec = if spec.is_null() {
            None
        } else {
            // SAFETY: forwarded from the caller.
            Some(unsafe { text(spec, "spec") }?)
        };
        let family = family_of(family, true)?;
        let fib = AnyFib::build(table, family, spec)
            .map_err(|e| Failure::from(fibkit::Error::from(e)))?;
        // SAFETY: forwarded from the caller.
        unsafe { give_fib(out, fib) }
    })
}

/// Builds the engine `spec` (NULL for the default) over an empty table of
/// `family` (`FIBKIT_IPV4` or `FIBKIT_IPV6`), to be filled with
/// `fibkit_apply_v4` / `fibkit_apply_v6` (as routes are added to an
/// `rte_fib`).
///
/// # Safety
/// A non-NULL `spec` must be NUL-terminated and `out` valid for writing.
#[no_mangle]
pub unsafe extern "C" fn fibkit_fib_new(
    family: c_int,
    spec: *const c_char,
    out: *mut *mut fibkit_fib,
) -> c_int {
    guard(|| {
        let family = family_of(family, false)?;
        let spec = if spec.is_null() {
            None
        } else {
            // SAFETY: forwarded from the caller.
            Some(unsafe { text(spec, "spec") }?)
        };
        let fib = AnyFib::build(&LoadedTable::default(), family, spec)
            .map_err(|e| Failure::from(fibkit::Error::from(e)))?;
        // SAFETY: forwarded from the caller.
        unsafe { give_fib(out, fib) }
    })
}

/// Opens an image written by `fibkit build`: maps it, validates it (magic,
/// version, machine, checksum, every offset) and looks up in place, with no
/// build. An image answers labels only and cannot change.
///
/// # Safety
/// `path` must be NUL-terminated and `out` valid for writing.
#[no_mangle]
pub unsafe extern "C" fn fibkit_fib_open_image(
    path: *const c_char,
    out: *mut *mut fibkit_fib,
) -> c_int {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let path = unsafe { text(path, "path") }?;
        if out.is_null() {
            return Err(fail(FIBKIT_ERR_NULL, "`out` is NULL"));
        }
        let fib = AnyFib::open_image(Path::new(path))
            .map_err(|e| Failure::from(fibkit::Error::from(e)))?;
        // SAFETY: forwarded from the caller.
        unsafe { give_fib(out, fib) }
    })
}

/// Frees a table (NULL is ignored). No other thread may use it meanwhile
/// or afterwards.
///
/// # Safety
/// `fib` must come from a `fibkit_fib_*` constructor and not be used
/// afterwards.
#[no_mangle]
pub unsafe extern "C" fn fibkit_fib_free(fib: *mut fibkit_fib) {
    guard(|| {
        if !fib.is_null() {
            // SAFETY: the caller hands back a pointer from `Box::into_raw`.
            drop(unsafe { Box::from_raw(fib) });
        }
        Ok(FIBKIT_OK)
    });
}

/// Statistics of a table.
///
/// # Safety
/// `fib` must be a live table and `stats` valid for writing.
#[no_mangle]
pub unsafe extern "C" fn fibkit_fib_stats(
    fib: *const fibkit_fib,
    stats: *mut fibkit_stats,
) -> c_int {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let fib = &unsafe { non_null(fib, "fib") }?.fib;
        let value = fibkit_stats {
            family: family_code(fib.family()),
            is_image: fib.is_image() as c_int,
            prefixes: fib.prefixes().unwrap_or(0) as u64,
            memory_bytes: fib.memory_bytes() as u64,
            version: fib.version(),
        };
        // SAFETY: forwarded from the caller.
        unsafe { write_out(stats, value, "stats") }?;
        Ok(FIBKIT_OK)
    })
}

/// Writes the engine's canonical spec (`dxr:k=20`) into `buf` as
/// `snprintf` does: at most `len - 1` characters and a NUL. Returns the
/// spec's length (a return `>= len` means it was cut), or an error. `buf`
/// may be NULL when `len` is 0, to ask for the length.
///
/// # Safety
/// `fib` must be a live table; `buf` valid for writing `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn fibkit_fib_spec(
    fib: *const fibkit_fib,
    buf: *mut c_char,
    len: usize,
) -> c_int {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let spec = unsafe { non_null(fib, "fib") }?.fib.spec();
        // SAFETY: forwarded from the caller.
        let buf = unsafe { array_mut(buf.cast::<u8>(), len, "buf") }?;
        copy_text(&spec, buf);
        Ok(spec.len() as c_int)
    })
}

/// Copies `text` into `buf` as `snprintf` does (cut, NUL-terminated).
fn copy_text(text: &str, buf: &mut [u8]) {
    if let Some(room) = buf.len().checked_sub(1) {
        let n = text.len().min(room);
        buf[..n].copy_from_slice(&text.as_bytes()[..n]);
        buf[n] = 0;
    }
}

/// The IPv4 side of a table, or a family error.
fn v4(fib: &AnyFib) -> Result<&FamilyFib<u32>, Failure> {
    match fib {
        AnyFib::V4(fib) => Ok(fib),
        AnyFib::V6(_) => Err(fail(FIBKIT_ERR_FAMILY, fib.wrong_family(Family::V4))),
    }
}

/// The IPv6 side of a table, or a family error.
fn v6(fib: &AnyFib) -> Result<&FamilyFib<u128>, Failure> {
    match fib {
        AnyFib::V6(fib) => Ok(fib),
        AnyFib::V4(_) => Err(fail(FIBKIT_ERR_FAMILY, fib.wrong_family(Family::V6))),
    }
}

/// Writes a lookup's label (0 when no route covers the address) and
/// returns its code.
///
/// # Safety
/// A non-NULL `label` must be valid for writing.
// PERF: no branch on whether a route was found: on random IPv4 keys that
// branch goes either way, and each mispredicted call threw away the
// lookups that had started after it (`benches/c_per_key.rs`; 1.15-1.36x
// through a reader, docs/bench/c-library.md, "C per-key calls").
#[inline(always)]
unsafe fn answer(found: Option<Label>, label: *mut u32) -> Result<c_int, Failure> {
    if label.is_null() {
        return Err(fail(FIBKIT_ERR_NULL, "`label` is NULL"));
    }
    let code = if found.is_some() {
        FIBKIT_OK
    } else {
        FIBKIT_NOT_FOUND
    };
    // SAFETY: non-NULL, and the caller guarantees it is valid for writes.
    unsafe { label.write_unaligned(found.unwrap_or(0)) };
    Ok(code)
}

/// Looks up one IPv4 address (host order: `0x08080808` for 8.8.8.8).
/// Returns `FIBKIT_OK` and writes the label, or `FIBKIT_NOT_FOUND` and
/// writes 0, or an error (`FIBKIT_ERR_FAMILY` on an IPv6 table). For
/// many lookups on one thread a reader (`fibkit_reader_lookup_v4`) is
/// faster: this call takes a guard on the current snapshot each time.
///
/// # Safety
/// `fib` must be a live table and `label` valid for writing.
#[no_mangle]
pub unsafe extern "C" fn fibkit_lookup_v4(
    fib: *const fibkit_fib,
    addr: u32,
    label: *mut u32,
) -> c_int {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let fib = v4(&unsafe { non_null(fib, "fib") }?.fib)?;
        // SAFETY: forwarded from the caller.
        unsafe { answer(fib.lookup(addr), label) }
    })
}

/// Looks up one IPv6 address (16 bytes, network order, as in
/// `struct in6_addr`). Returns as `fibkit_lookup_v4`.
///
/// # Safety
/// `fib` must be a live table, `addr` point to 16 bytes and `label` be
/// valid for writing.
#[no_mangle]
pub unsafe extern "C" fn fibkit_lookup_v6(
    fib: *const fibkit_fib,
    addr: *const [u8; 16],
    label: *mut u32,
) -> c_int {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let fib = v6(&unsafe { non_null(fib, "fib") }?.fib)?;
        // SAFETY: forwarded from the caller.
        let addr = u128::from_be_bytes(*unsafe { non_null(addr, "addr") }?);
        // SAFETY: forwarded from the caller.
        unsafe { answer(fib.lookup(addr), label) }
    })
}

/// Looks up `n` IPv4 addresses (host order) into `results`: the label, or
/// `FIBKIT_NO_ROUTE`. Returns `FIBKIT_OK` or an error (`FIBKIT_ERR_FAMILY`
/// on an IPv6 table, `FIBKIT_ERR_NULL` for a NULL or misaligned array).
///
/// # Safety
/// `fib` must be a live table, `addrs` point to `n` addresses and
/// `results` to room for `n` results.
#[no_mangle]
pub unsafe extern "C" fn fibkit_lookup_v4_bulk(
    fib: *const fibkit_fib,
    addrs: *const u32,
    results: *mut u64,
    n: usize,
) -> c_int {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let fib = v4(&unsafe { non_null(fib, "fib") }?.fib)?;
        // SAFETY: forwarded from the caller.
        let addrs = unsafe { array(addrs, n, "addrs") }?;
        // SAFETY: forwarded from the caller.
        let results = unsafe { array_mut(results, n, "results") }?;
        // PERF: the engine's batch loop writes the words straight into the
        // caller's array (`Lookup::lookup_batch_words`), with no buffer
        // and no conversion pass (docs/bench/c-library.md, "C bulk lookup").
        fib.lookup_words(addrs, results);
        Ok(FIBKIT_OK)
    })
}

/// Looks up `n` IPv6 addresses (16 bytes each, network order) into
/// `results`, as `fibkit_lookup_v4_bulk`.
///
/// # Safety
/// `fib` must be a live table, `addrs` point to `n` addresses and
/// `results` to room for `n` results.
#[no_mangle]
pub unsafe extern "C" fn fibkit_lookup_v6_bulk(
    fib: *const fibkit_fib,
    addrs: *const [u8; 16],
    results: *mut u64,
    n: usize,
) -> c_int {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let fib = v6(&unsafe { non_null(fib, "fib") }?.fib)?;
        // SAFETY: forwarded from the caller.
        let addrs = unsafe { array(addrs, n, "addrs") }?;
        // SAFETY: forwarded from the caller.
        let results = unsafe { array_mut(results, n, "results") }?;
        fib.lookup_words_be(addrs, results);
        Ok(FIBKIT_OK)
    })
}

/// Makes a reader of `fib` for the calling thread (see `fibkit_reader`).
/// It keeps what it reads alive: after `fibkit_fib_free` it answers from
/// the table's last snapshot. Free it with `fibkit_reader_free`.
///
/// # Safety
/// `fib` must be a live table and `out` valid for writing.
#[no_mangle]
pub unsafe extern "C" fn fibkit_reader_new(
    fib: *const fibkit_fib,
    out: *mut *mut fibkit_reader,
) -> c_int {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let fib = &unsafe { non_null(fib, "fib") }?.fib;
        if out.is_null() {
            return Err(fail(FIBKIT_ERR_NULL, "`out` is NULL"));
        }
        let reader = match fib {
            AnyFib::V4(fib) => AnyReader::V4(fib.reader()),
            AnyFib::V6(fib) => AnyReader::V6(fib.reader()),
        };
        let raw = Box::into_raw(Box::new(fibkit_reader { reader }));
        // SAFETY: checked non-NULL above; the caller guarantees it is
        // valid for writing.
        unsafe { out.write(raw) };
        Ok(FIBKIT_OK)
    })
}

/// Frees a reader (NULL is ignored).
///
/// # Safety
/// `reader` must come from `fibkit_reader_new` and not be used afterwards.
#[no_mangle]
pub unsafe extern "C" fn fibkit_reader_free(reader: *mut fibkit_reader) {
    guard(|| {
        if !reader.is_null() {
            // SAFETY: the caller hands back a pointer from `Box::into_raw`.
            drop(unsafe { Box::from_raw(reader) });
        }
        Ok(FIBKIT_OK)
    });
}

/// The reader, or a NULL error.
///
/// # Safety
/// A non-NULL `reader` must be a live reader no other thread uses.
unsafe fn reader_mut<'a>(reader: *mut fibkit_reader) -> Result<&'a mut AnyReader, Failure> {
    // SAFETY: forwarded from the caller.
    unsafe { reader.as_mut() }
        .map(|reader| &mut reader.reader)
        .ok_or_else(|| fail(FIBKIT_ERR_NULL, "`reader` is NULL"))
}

/// The IPv4 side of a reader, or a family error.
fn reader_v4(reader: &mut AnyReader) -> Result<&mut FamilyReader<u32>, Failure> {
    match reader {
        AnyReader::V4(reader) => Ok(reader),
        other => Err(fail(
            FIBKIT_ERR_FAMILY,
            reader_family_error(other, Family::V4),
        )),
    }
}

/// The IPv6 side of a reader, or a family error.
fn reader_v6(reader: &mut AnyReader) -> Result<&mut FamilyReader<u128>, Failure> {
    match reader {
        AnyReader::V6(reader) => Ok(reader),
        other => Err(fail(
            FIBKIT_ERR_FAMILY,
            reader_family_error(other, Family::V6),
        )),
    }
}

fn reader_family_error(reader: &AnyReader, given: Family) -> String {
    format!(
        "{given} addresses given to a reader of an {} table (use the {} functions)",
        reader.family(),
        reader.family()
    )
}

/// `fibkit_lookup_v4` through a reader.
///
/// # Safety
/// `reader` must be a live reader used by this thread only and `label`
/// valid for writing.
#[no_mangle]
pub unsafe extern "C" fn fibkit_reader_lookup_v4(
    reader: *mut fibkit_reader,
    addr: u32,
    label: *mut u32,
) -> c_int {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let reader = reader_v4(unsafe { reader_mut(reader) }?)?;
        // SAFETY: forwarded from the caller.
        unsafe { answer(reader.lookup(addr), label) }
    })
}

/// `fibkit_lookup_v6` through a reader.
///
/// # Safety
/// `reader` must be a live reader used by this thread only, `addr` point
/// to 16 bytes and `label` be valid for writing.
#[no_mangle]
pub unsafe extern "C" fn fibkit_reader_lookup_v6(
    reader: *mut fibkit_reader,
    addr: *const [u8; 16],
    label: *mut u32,
) -> c_int {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let reader = reader_v6(unsafe { reader_mut(reader) }?)?;
        // SAFETY: forwarded from the caller.
        let addr = u128::from_be_bytes(*unsafe { non_null(addr, "addr") }?);
        // SAFETY: forwarded from the caller.
        unsafe { answer(reader.lookup(addr), label) }
    })
}

/// `fibkit_lookup_v4_bulk` through a reader.
///
/// # Safety
/// `reader` must be a live reader used by this thread only, `addrs` point
/// to `n` addresses and `results` to room for `n` results.
#[no_mangle]
pub unsafe extern "C" fn fibkit_reader_lookup_v4_bulk(
    reader: *mut fibkit_reader,
    addrs: *const u32,
    results: *mut u64,
    n: usize,
) -> c_int {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let reader = reader_v4(unsafe { reader_mut(reader) }?)?;
        // SAFETY: forwarded from the caller.
        let addrs = unsafe { array(addrs, n, "addrs") }?;
        // SAFETY: forwarded from the caller.
        let results = unsafe { array_mut(results, n, "results") }?;
        reader.lookup_words(addrs, results);
        Ok(FIBKIT_OK)
    })
}

/// `fibkit_lookup_v6_bulk` through a reader.
///
/// # Safety
/// `reader` must be a live reader used by this thread only, `addrs` point
/// to `n` addresses and `results` to room for `n` results.
#[no_mangle]
pub unsafe extern "C" fn fibkit_reader_lookup_v6_bulk(
    reader: *mut fibkit_reader,
    addrs: *const [u8; 16],
    results: *mut u64,
    n: usize,
) -> c_int {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let reader = reader_v6(unsafe { reader_mut(reader) }?)?;
        // SAFETY: forwarded from the caller.
        let addrs = unsafe { array(addrs, n, "addrs") }?;
        // SAFETY: forwarded from the caller.
        let results = unsafe { array_mut(results, n, "results") }?;
        reader.lookup_words_be(addrs, results);
        Ok(FIBKIT_OK)
    })
}

/// Looks up an address given as text (`"8.8.8.8"`, `"2001:db8::1"`, of the
/// table's family) and writes its label and, if `prefix` is not NULL, the
/// matched prefix as text (empty for an image, which holds no prefixes;
/// `FIBKIT_PREFIX_TEXT_BYTES` always suffice). Returns as
/// `fibkit_lookup_v4`; a malformed address is `FIBKIT_ERR_ARGUMENT` with a
/// message quoting it. Slower than the binary lookups (the prefix comes
/// from the reference table): for tools and reports.
///
/// # Safety
/// `fib` must be a live table, `addr` NUL-terminated, `label` valid for
/// writing and a non-NULL `prefix` valid for writing `prefix_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn fibkit_lookup_text(
    fib: *const fibkit_fib,
    addr: *const c_char,
    label: *mut u32,
    prefix: *mut c_char,
    prefix_len: usize,
) -> c_int {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let fib = &unsafe { non_null(fib, "fib") }?.fib;
        // SAFETY: forwarded from the caller.
        let addr = unsafe { text(addr, "addr") }?;
        let (prefix_text, found) = match fib {
            AnyFib::V4(fib) => lookup_text(fib, addr)?,
            AnyFib::V6(fib) => lookup_text(fib, addr)?,
        };
        if !prefix.is_null() {
            if prefix_text.len() >= prefix_len {
                return Err(fail(
                    FIBKIT_ERR_ARGUMENT,
                    format!(
                        "`prefix_len` {prefix_len} is too small for `{prefix_text}` \
                         (FIBKIT_PREFIX_TEXT_BYTES always suffice)"
                    ),
                ));
            }
            // SAFETY: forwarded from the caller.
            let buf = unsafe { array_mut(prefix.cast::<u8>(), prefix_len, "prefix") }?;
            copy_text(&prefix_text, buf);
        }
        // SAFETY: forwarded from the caller.
        unsafe { answer(found, label) }
    })
}

/// Parses `text` as an address of `A` and looks up its prefix and label.
fn lookup_text<A: ImageFamily>(
    fib: &FamilyFib<A>,
    text: &str,
) -> Result<(String, Option<Label>), Failure> {
    let addr = A::parse_addr(text.trim()).ok_or_else(|| {
        fail(
            FIBKIT_ERR_ARGUMENT,
            format!("`{text}` is not an {} address", A::FAMILY),
        )
    })?;
    Ok(match fib.lookup_prefix(addr) {
        Some((prefix, label)) => (
            prefix.map(|p| p.to_string()).unwrap_or_default(),
            Some(label),
        ),
        None => (String::new(), None),
    })
}

/// Applies a batch of changes of family `A`, made from the C items by
/// `item` (which names a bad one).
fn apply<A: ImageFamily, C: Copy>(
    fib: &FamilyFib<A>,
    items: &[C],
    item: impl Fn(C) -> (A, u8, u8, Label),
    summary: *mut fibkit_summary,
) -> Result<c_int, Failure> {
    let changes = items
        .iter()
        .enumerate()
        .map(|(index, c)| {
            let (addr, plen, withdraw, label) = item(*c);
            let bad = |why: String| fail(FIBKIT_ERR_ARGUMENT, format!("change {index}: {why}"));
            let prefix = Prefix::new(addr, plen).map_err(|e| bad(e.to_string()))?;
            match withdraw {
                0 => Ok(Change::Announce(prefix, label)),
                1 => Ok(Change::Withdraw(prefix)),
                other => Err(bad(format!(
                    "`withdraw` is {other}, expected 0 (announce) or 1 (withdraw)"
                ))),
            }
        })
        .collect::<Result<Vec<Change<A>>, Failure>>()?;
    let done = fib.apply(&changes)?;
    if !summary.is_null() {
        let value = fibkit_summary {
            effective: done.effective as u64,
            no_ops: done.no_ops as u64,
            rebuilt: done.rebuilt.is_some() as c_int,
            version: done.version,
        };
        // SAFETY: non-NULL; valid for writes by the caller's contract.
        unsafe { write_out(summary, value, "summary") }?;
    }
    Ok(FIBKIT_OK)
}

/// Applies `n` IPv4 changes in order, as one batch: lookups on other
/// threads see all of it or none. All or nothing: a bad change (the message
/// names its index) or a table the engine cannot encode leaves the table as
/// it was. `summary` may be NULL. Calls from several threads are
/// serialised.
///
/// # Safety
/// `fib` must be a live table, `changes` point to `n` changes and a
/// non-NULL `summary` be valid for writing.
#[no_mangle]
pub unsafe extern "C" fn fibkit_apply_v4(
    fib: *const fibkit_fib,
    changes: *const fibkit_change_v4,
    n: usize,
    summary: *mut fibkit_summary,
) -> c_int {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let fib = v4(&unsafe { non_null(fib, "fib") }?.fib)?;
        // SAFETY: forwarded from the caller.
        let changes = unsafe { array(changes, n, "changes") }?;
        apply(
            fib,
            changes,
            |c| (c.addr, c.plen, c.withdraw, c.label),
            summary,
        )
    })
}

/// Applies `n` IPv6 changes, as `fibkit_apply_v4`.
///
/// # Safety
/// As `fibkit_apply_v4`.
#[no_mangle]
pub unsafe extern "C" fn fibkit_apply_v6(
    fib: *const fibkit_fib,
    changes: *const fibkit_change_v6,
    n: usize,
    summary: *mut fibkit_summary,
) -> c_int {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let fib = v6(&unsafe { non_null(fib, "fib") }?.fib)?;
        // SAFETY: forwarded from the caller.
        let changes = unsafe { array(changes, n, "changes") }?;
        apply(
            fib,
            changes,
            |c| (u128::from_be_bytes(c.addr), c.plen, c.withdraw, c.label),
            summary,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use fibkit::Rib;

    #[test]
    fn panics_become_an_error_code_and_a_message() {
        let code = guard(|| panic!("boom"));
        assert_eq!(code, FIBKIT_ERR_PANIC);
        // SAFETY: the message is a valid C string owned by this thread.
        let message = unsafe { CStr::from_ptr(fibkit_last_error()) };
        assert!(message.to_str().unwrap().contains("boom"));
    }

    #[test]
    fn bulk_results_match_single_lookups_at_every_length() {
        let mut rib = Rib::<u32>::new();
        rib.insert("10.0.0.0/8".parse().unwrap(), 7);
        rib.insert("10.1.0.0/16".parse().unwrap(), u32::MAX);
        let chunk = fibkit::WORDS_CHUNK;
        let keys: Vec<u32> = (0..2 * chunk as u32 + 5)
            .map(|i| 0x0a00_0000u32.wrapping_add(i.wrapping_mul(0x0000_9100)))
            .collect();
        // dxr writes the words from its own batch loop, dir24-8 through
        // the trait's chunked default.
        for spec in ["dxr", "dir24-8"] {
            let fib = FamilyFib::build(spec, rib.clone()).unwrap();
            // Every burst length, and around the chunk boundaries.
            for n in (0..300).chain([chunk - 1, chunk, chunk + 1, keys.len()]) {
                let mut results = vec![0u64; n];
                fib.lookup_words(&keys[..n], &mut results);
                for (key, result) in keys[..n].iter().zip(&results) {
                    let want = fib.lookup(*key).map_or(FIBKIT_NO_ROUTE, u64::from);
                    assert_eq!(*result, want, "{spec}, {n} keys");
                }
            }
        }
    }
}
