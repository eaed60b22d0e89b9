//! The prefetch hint the batch lookups of several engines issue.

/// Asks the CPU to start loading the cache line holding `ptr`: the batch
/// lookups of several engines keep lookups in flight with it.
#[inline(always)]
pub(crate) fn prefetch<T>(ptr: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint: it never faults, whatever the
    // address (callers pass `wrapping_add` pointers that may be past the end
    // of a table), and it changes no state the program can observe. SSE is
    // part of the x86_64 baseline, so the target feature is always present.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(ptr.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = ptr;
}
