//! Readers: one thread's handle on a table, whose lookups check for a
//! newer snapshot with one atomic load per call.

use std::ffi::c_int;

use fibkit::AnyFib;

use super::args::{array, array_mut, non_null};
use super::error::{fail, guard, Failure};
use super::family::{reader_side, AnyReader, CFamily};
use super::lookup::answer;
use super::{fibkit_fib, fibkit_reader, FIBKIT_ERR_NULL, FIBKIT_OK};

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

/// `fibkit_reader_lookup_v4` and `fibkit_reader_lookup_v6`: one address
/// of family `A`.
///
/// # Safety
/// `reader` must be a live reader used by this thread only, `addr` valid
/// for [`CFamily::addr`] and `label` valid for writing.
#[inline(always)]
unsafe fn reader_lookup_one<A: CFamily>(
    reader: *mut fibkit_reader,
    addr: A::Arg,
    label: *mut u32,
) -> c_int {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let reader = reader_side::<A>(unsafe { reader_mut(reader) }?)?;
        // SAFETY: forwarded from the caller.
        let addr = unsafe { A::addr(addr) }?;
        // SAFETY: forwarded from the caller.
        unsafe { answer(reader.lookup(addr), label) }
    })
}

/// `fibkit_reader_lookup_v4_bulk` and `fibkit_reader_lookup_v6_bulk`: `n`
/// addresses of family `A` into `results`.
///
/// # Safety
/// `reader` must be a live reader used by this thread only, `addrs` point
/// to `n` addresses and `results` to room for `n` results.
#[inline(always)]
unsafe fn reader_lookup_bulk<A: CFamily>(
    reader: *mut fibkit_reader,
    addrs: *const A::Key,
    results: *mut u64,
    n: usize,
) -> c_int {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let reader = reader_side::<A>(unsafe { reader_mut(reader) }?)?;
        // SAFETY: forwarded from the caller.
        let addrs = unsafe { array(addrs, n, "addrs") }?;
        // SAFETY: forwarded from the caller.
        let results = unsafe { array_mut(results, n, "results") }?;
        A::reader_lookup_words(reader, addrs, results);
        Ok(FIBKIT_OK)
    })
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
    // SAFETY: forwarded from the caller.
    unsafe { reader_lookup_one::<u32>(reader, addr, label) }
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
    // SAFETY: forwarded from the caller.
    unsafe { reader_lookup_one::<u128>(reader, addr, label) }
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
    // SAFETY: forwarded from the caller.
    unsafe { reader_lookup_bulk::<u32>(reader, addrs, results, n) }
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
    // SAFETY: forwarded from the caller.
    unsafe { reader_lookup_bulk::<u128>(reader, addrs, results, n) }
}
