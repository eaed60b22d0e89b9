//! Batches of changes, applied all or nothing and published at once.

use std::ffi::c_int;

use fibkit::{Change, Prefix};

use super::args::{array, non_null, write_out};
use super::error::{fail, guard, Failure};
use super::family::{side, CFamily};
use super::{
    fibkit_change_v4, fibkit_change_v6, fibkit_fib, fibkit_summary, FIBKIT_ERR_ARGUMENT, FIBKIT_OK,
};

/// `fibkit_apply_v4` and `fibkit_apply_v6`: applies the `n` changes of
/// family `A` at `changes` as one batch, made from the C structs by
/// [`CFamily::change`] (a bad one is named by its index).
///
/// # Safety
/// `fib` must be a live table, `changes` point to `n` changes and a
/// non-NULL `summary` be valid for writing.
unsafe fn apply<A: CFamily>(
    fib: *const fibkit_fib,
    changes: *const A::Change,
    n: usize,
    summary: *mut fibkit_summary,
) -> c_int {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let fib = side::<A>(&unsafe { non_null(fib, "fib") }?.fib)?;
        // SAFETY: forwarded from the caller.
        let items = unsafe { array(changes, n, "changes") }?;
        let changes = items
            .iter()
            .enumerate()
            .map(|(index, c)| {
                let (addr, plen, withdraw, label) = A::change(*c);
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
    })
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
    // SAFETY: forwarded from the caller.
    unsafe { apply::<u32>(fib, changes, n, summary) }
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
    // SAFETY: forwarded from the caller.
    unsafe { apply::<u128>(fib, changes, n, summary) }
}
