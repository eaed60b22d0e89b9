//! The C arguments made safe to use: pointers checked for NULL and
//! alignment before a reference or slice is made of them, strings checked
//! for UTF-8, family values checked, and text written back as `snprintf`
//! does.

use std::ffi::{c_char, c_int, CStr};

use fibkit::Family;

use super::error::{fail, Failure};
use super::{FIBKIT_ANY_FAMILY, FIBKIT_ERR_ARGUMENT, FIBKIT_ERR_NULL, FIBKIT_IPV4, FIBKIT_IPV6};

/// `ptr` as a reference, or a NULL error naming `what`.
///
/// # Safety
/// A non-NULL `ptr` must point to a live `T` for the returned lifetime.
pub(crate) unsafe fn non_null<'a, T>(ptr: *const T, what: &str) -> Result<&'a T, Failure> {
    // SAFETY: the caller guarantees a non-NULL pointer is valid.
    unsafe { ptr.as_ref() }.ok_or_else(|| fail(FIBKIT_ERR_NULL, format!("`{what}` is NULL")))
}

/// Writes `value` through an output pointer, or a NULL error naming `what`.
///
/// # Safety
/// A non-NULL `ptr` must be valid for writing a `T`.
pub(crate) unsafe fn write_out<T>(ptr: *mut T, value: T, what: &str) -> Result<(), Failure> {
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
pub(crate) unsafe fn array<'a, T>(ptr: *const T, n: usize, what: &str) -> Result<&'a [T], Failure> {
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
pub(crate) unsafe fn array_mut<'a, T>(
    ptr: *mut T,
    n: usize,
    what: &str,
) -> Result<&'a mut [T], Failure> {
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
pub(crate) unsafe fn text<'a>(ptr: *const c_char, what: &str) -> Result<&'a str, Failure> {
    if ptr.is_null() {
        return Err(fail(FIBKIT_ERR_NULL, format!("`{what}` is NULL")));
    }
    // SAFETY: non-NULL and NUL-terminated by the caller's contract.
    unsafe { CStr::from_ptr(ptr) }
        .to_str()
        .map_err(|_| fail(FIBKIT_ERR_ARGUMENT, format!("`{what}` is not UTF-8")))
}

/// Copies `text` into `buf` as `snprintf` does (cut, NUL-terminated).
pub(crate) fn copy_text(text: &str, buf: &mut [u8]) {
    if let Some(room) = buf.len().checked_sub(1) {
        let n = text.len().min(room);
        buf[..n].copy_from_slice(&text.as_bytes()[..n]);
        buf[n] = 0;
    }
}

pub(crate) fn family_of(value: c_int, allow_any: bool) -> Result<Option<Family>, Failure> {
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

pub(crate) fn family_code(family: Family) -> c_int {
    match family {
        Family::V4 => FIBKIT_IPV4,
        Family::V6 => FIBKIT_IPV6,
    }
}
