//! The lookup engines, one module each. See `docs/ENGINES.md` for their
//! layouts, memory per prefix and memory accesses per lookup.

pub mod bloom;
pub mod bspl;
pub mod btree;
pub mod cpe;
pub mod dir24_8;
pub mod dxr;
pub mod dxr6;
pub mod lctrie;
pub mod levels;
pub mod poptrie;
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

/// `changed` (sorted, so a `/0` comes first) without the default route:
/// engines keep the `/0` in their results table's slot 0
/// ([`crate::labels::LabelIndex::set_default`]), so only the other prefixes
/// touch their entries.
pub(crate) fn without_default<A: crate::Addr>(changed: &[crate::Prefix<A>]) -> &[crate::Prefix<A>] {
    debug_assert!(changed.iter().skip(1).all(|prefix| prefix.plen() > 0));
    match changed.split_first() {
        Some((first, rest)) if first.plen() == 0 => rest,
        _ => changed,
    }
}

/// The largest `align` of `dxr` and `dxr6` (their `MAX_ALIGN`).
pub(crate) const MAX_ALIGN: u32 = 8;

/// The `align` a spec states, if any: 1, 2, 4 or 8 words, the steps in
/// which `dxr` counts chunk bases and `dxr6` places leaves (a coarser step
/// trades offset bits for reach).
pub(crate) fn parse_align(
    spec: &crate::spec::EngineSpec,
) -> Result<Option<u32>, crate::BuildError> {
    let align = spec.number("align", 1..=MAX_ALIGN)?;
    match align {
        Some(align) if !align.is_power_of_two() => {
            Err(spec.error(format!("align must be 1, 2, 4 or 8 (got {align})")))
        }
        _ => Ok(align),
    }
}

/// The `align` a build starts at: the stated one, else 1 (the build then
/// raises it while the table needs more).
pub(crate) const fn align_or_one(align: Option<u32>) -> u32 {
    match align {
        Some(align) => align,
        None => 1,
    }
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

/// Nested prefixes of eight lengths (`BITS/8` to `BITS`) around `addr`,
/// labels 1 to 8, and the same lengths around `!addr` with label 7: chunks
/// and nodes of one label, of several, and below them, for every engine.
#[cfg(test)]
pub(crate) fn nested_table<A: crate::Addr>(addr: A) -> crate::Rib<A> {
    let mut rib = crate::Rib::new();
    for step in 1..=8u8 {
        let plen = A::BITS / 8 * step;
        rib.insert(crate::Prefix::new_masked(addr, plen), step as u32);
        rib.insert(crate::Prefix::new_masked(!addr, plen), 7);
    }
    rib
}

/// Checks that the default route is one results slot for the engine `U`:
/// on `rib` with and without a `/0`, announcing, relabelling and
/// withdrawing it through [`crate::engine::Updater::update`] leaves
/// `tables(snapshot)` (the snapshot's arrays but the results) unchanged,
/// and the snapshot answers as the reference after each change.
#[cfg(test)]
pub(crate) fn assert_default_route_is_one_slot<A, U, T>(
    config: &U::Config,
    rib: &crate::Rib<A>,
    tables: impl Fn(&U::Snapshot) -> T,
) where
    A: crate::Addr,
    U: crate::engine::Updater<A>,
    T: PartialEq,
{
    use crate::Change;
    let default = crate::Prefix::default_route();
    for start in [None, Some(3)] {
        let mut rib = rib.clone();
        match start {
            Some(label) => rib.insert(default, label),
            None => rib.remove(default),
        };
        let (mut updater, mut snapshot) = U::build(config, &rib).expect("the table builds");
        let before = tables(&snapshot);
        for change in [
            Change::Announce(default, 9),
            Change::Announce(default, 4),
            Change::Announce(default, 4),
            Change::Withdraw(default),
            Change::Withdraw(default),
            Change::Announce(default, 3),
        ] {
            rib.apply(change);
            updater
                .update(&mut snapshot, &rib, &[default])
                .unwrap_or_else(|e| panic!("{config} after {change:?}: {e}"));
            assert!(
                tables(&snapshot) == before,
                "{config}: {change:?} rewrote the tables"
            );
            let report = crate::verify::verify(&snapshot, &rib, 200, 1);
            assert!(
                report.ok(),
                "{config} after {change:?}: {}",
                report.mismatches[0]
            );
        }
    }
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
