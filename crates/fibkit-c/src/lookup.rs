//! Lookups on a table: one address, or a bulk array into `uint64_t`
//! results. The readers (`reader.rs`) answer the same way.

use std::ffi::c_int;

use fibkit::Label;

use super::args::{array, array_mut, non_null};
use super::error::{fail, guard, Failure};
use super::family::{side, CFamily};
use super::{fibkit_fib, FIBKIT_ERR_NULL, FIBKIT_NOT_FOUND, FIBKIT_OK};

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
pub(crate) unsafe fn answer(found: Option<Label>, label: *mut u32) -> Result<c_int, Failure> {
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

/// `fibkit_lookup_v4` and `fibkit_lookup_v6`: one address of family `A`.
///
/// # Safety
/// `fib` must be a live table, `addr` valid for [`CFamily::addr`] and
/// `label` valid for writing.
#[inline(always)]
unsafe fn lookup_one<A: CFamily>(fib: *const fibkit_fib, addr: A::Arg, label: *mut u32) -> c_int {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let fib = side::<A>(&unsafe { non_null(fib, "fib") }?.fib)?;
        // SAFETY: forwarded from the caller.
        let addr = unsafe { A::addr(addr) }?;
        // SAFETY: forwarded from the caller.
        unsafe { answer(fib.lookup(addr), label) }
    })
}

/// `fibkit_lookup_v4_bulk` and `fibkit_lookup_v6_bulk`: `n` addresses of
/// family `A` into `results`.
///
/// # Safety
/// `fib` must be a live table, `addrs` point to `n` addresses and
/// `results` to room for `n` results.
#[inline(always)]
unsafe fn lookup_bulk<A: CFamily>(
    fib: *const fibkit_fib,
    addrs: *const A::Key,
    results: *mut u64,
    n: usize,
) -> c_int {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let fib = side::<A>(&unsafe { non_null(fib, "fib") }?.fib)?;
        // SAFETY: forwarded from the caller.
        let addrs = unsafe { array(addrs, n, "addrs") }?;
        // SAFETY: forwarded from the caller.
        let results = unsafe { array_mut(results, n, "results") }?;
        // PERF: the engine's batch loop writes the words straight into the
        // caller's array (`Lookup::lookup_batch_words`), with no buffer
        // and no conversion pass (docs/bench/c-library.md, "C bulk lookup").
        A::lookup_words(fib, addrs, results);
        Ok(FIBKIT_OK)
    })
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
    // SAFETY: forwarded from the caller.
    unsafe { lookup_one::<u32>(fib, addr, label) }
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
    // SAFETY: forwarded from the caller.
    unsafe { lookup_one::<u128>(fib, addr, label) }
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
    // SAFETY: forwarded from the caller.
    unsafe { lookup_bulk::<u32>(fib, addrs, results, n) }
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
    // SAFETY: forwarded from the caller.
    unsafe { lookup_bulk::<u128>(fib, addrs, results, n) }
}

#[cfg(test)]
mod tests {
    use fibkit::any::FamilyFib;
    use fibkit::Rib;

    use super::super::FIBKIT_NO_ROUTE;

    #[test]
    fn bulk_results_match_single_lookups_at_every_length() {
        let mut rib = Rib::<u32>::new();
        rib.insert("10.0.0.0/8".parse().unwrap(), 7);
        rib.insert("10.1.0.0/16".parse().unwrap(), u32::MAX);
        let chunk = fibkit::any::WORDS_CHUNK;
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
