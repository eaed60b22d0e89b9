//! Failures: the return code and message of a failed call, the message
//! kept per thread for [`fibkit_last_error`], and the guard that runs every
//! entry point so that no panic unwinds into C.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use super::{
    FIBKIT_ERR_ARGUMENT, FIBKIT_ERR_BUILD, FIBKIT_ERR_IMAGE, FIBKIT_ERR_LOAD, FIBKIT_ERR_PANIC,
    FIBKIT_ERR_READ_ONLY,
};

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// A failed call: its return code and message.
pub(crate) struct Failure {
    code: c_int,
    message: String,
}

pub(crate) fn fail(code: c_int, message: impl Into<String>) -> Failure {
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
// PERF: inlined into every entry point, as it was while they shared one
// module: a call per lookup costs the per-key C calls
// (`benches/c_per_key.rs`).
#[inline(always)]
pub(crate) fn guard(call: impl FnOnce() -> Result<c_int, Failure>) -> c_int {
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

/// The message of the last call on this thread that failed, naming the
/// problem (`file:line: what` for a bad table line). Never NULL; valid
/// until the next failing fibkit call on this thread. Successful calls
/// leave it unchanged.
#[no_mangle]
pub extern "C" fn fibkit_last_error() -> *const c_char {
    LAST_ERROR.with(|last| last.borrow().as_ptr())
}

#[cfg(test)]
mod tests {
    use std::ffi::CStr;

    use super::*;

    #[test]
    fn panics_become_an_error_code_and_a_message() {
        let code = guard(|| panic!("boom"));
        assert_eq!(code, FIBKIT_ERR_PANIC);
        // SAFETY: the message is a valid C string owned by this thread.
        let message = unsafe { CStr::from_ptr(fibkit_last_error()) };
        assert!(message.to_str().unwrap().contains("boom"));
    }
}
