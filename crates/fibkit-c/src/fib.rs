//! Tables built by engine spec from a loaded table or empty, or opened
//! from an image; their statistics and spec; freeing them.

use std::ffi::{c_char, c_int};
use std::path::Path;

use fibkit::load::LoadedTable;
use fibkit::AnyFib;

use super::args::{array_mut, copy_text, family_code, family_of, non_null, text, write_out};
use super::error::{fail, guard, Failure};
use super::{fibkit_fib, fibkit_stats, fibkit_table, FIBKIT_ERR_NULL, FIBKIT_OK};

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
