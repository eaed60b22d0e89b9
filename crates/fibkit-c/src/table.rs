//! Table files: loading one (with options), its next hops and prefix
//! counts, freeing it.

use std::ffi::{c_char, c_int};
use std::path::Path;

use fibkit::load::{load_table, Format, LabelSource, LoadOptions, PeerSelector};

use super::args::{array_mut, copy_text, non_null, text, write_out};
use super::error::{fail, guard, Failure};
use super::{
    fibkit_load_options, fibkit_table, FIBKIT_ERR_ARGUMENT, FIBKIT_ERR_NULL, FIBKIT_LABEL_NEXTHOP,
    FIBKIT_LABEL_ORIGIN_AS, FIBKIT_NOT_FOUND, FIBKIT_OK,
};

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
