//! Lookups of an address given as text, answering the matched prefix as
//! text too: for tools and reports.

use std::ffi::{c_char, c_int};

use fibkit::any::FamilyFib;
use fibkit::registry::ImageFamily;
use fibkit::{AnyFib, Label};

use super::args::{array_mut, copy_text, non_null, text};
use super::error::{fail, guard, Failure};
use super::lookup::answer;
use super::{fibkit_fib, FIBKIT_ERR_ARGUMENT};

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
