//! The lookup engines, one module each. See `docs/ENGINES.md` for their
//! layouts, memory per prefix and memory accesses per lookup.

pub mod bloom;
pub mod bspl;
pub mod cpe;
pub mod dir24_8;
pub mod dxr;
pub mod dxr6;
pub mod lctrie;
pub mod levels;
pub mod radix;

/// The blocks of `2^shift` addresses that `changed` prefixes touch, as
/// sorted, disjoint `(first, last)` block-number windows, adjacent windows
/// joined: what block-structured engines (dir24-8, DXR) rebuild on update.
pub(crate) fn touched_blocks(changed: &[crate::Prefix<u32>], shift: u32) -> Vec<(u32, u32)> {
    let mut windows: Vec<(u32, u32)> = changed
        .iter()
        .map(|p| (p.first() >> shift, p.last() >> shift))
        .collect();
    windows.sort_unstable();
    let mut merged: Vec<(u32, u32)> = Vec::with_capacity(windows.len());
    for (lo, hi) in windows {
        match merged.last_mut() {
            Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
            _ => merged.push((lo, hi)),
        }
    }
    merged
}

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

#[cfg(test)]
mod tests {
    #[test]
    fn touched_blocks_are_sorted_and_joined() {
        let p = |t: &str| t.parse::<crate::Prefix<u32>>().unwrap();
        let changed = [
            p("10.0.1.0/24"),
            p("10.0.0.0/24"),
            p("10.0.3.128/25"),
            p("0.0.0.0/0"),
        ];
        assert_eq!(
            super::touched_blocks(&changed[..3], 8),
            vec![(0x0a0000, 0x0a0001), (0x0a0003, 0x0a0003)]
        );
        assert_eq!(super::touched_blocks(&changed, 8), vec![(0, (1 << 24) - 1)]);
        assert!(super::touched_blocks(&[], 16).is_empty());
    }
}
