//! What two or more engines use and no engine owns: controlled prefix
//! expansion and the stride dynamic programs (`cpe`, `bspl`), the answers
//! the AVX-512 batch paths store (`dxr6`, `poptrie`), the prefetch hint the
//! batch lookups issue, the blocks an update touches (`dir24_8`, `dxr`), the
//! `align` option (`dxr`, `dxr6`), and test tables and checks every engine
//! runs. Nothing here knows one engine's layout: an engine imports from
//! here, never from another engine.

pub mod expand;
mod prefetch;
pub mod strides;
#[cfg(test)]
pub(crate) mod testing;
#[cfg(target_arch = "x86_64")]
pub(crate) mod wide;

pub(crate) use prefetch::prefetch;

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
) -> Result<Option<u32>, crate::engine::BuildError> {
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
