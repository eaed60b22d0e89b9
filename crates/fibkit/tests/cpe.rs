//! `cpe` engine tests: the full variant matrix on the shared tables, the
//! stride programs against brute force, and update replay.

mod common;

use std::time::Instant;

use common::*;
use fibkit::registry::EngineFamily;
use fibkit::verify::verify;
use fibkit::Lookup;
use fibkit::{build, Change, Rib};

/// Builds `spec` and verifies it; `Err` carries the build error text.
fn check<A: EngineFamily>(spec: &str, rib: &Rib<A>, random: usize) -> Result<usize, String> {
    let started = Instant::now();
    let engine = build(spec, rib).map_err(|e| e.to_string())?;
    let built = started.elapsed();
    let report = verify(&engine, rib, random, 0x5eed);
    eprintln!(
        "{spec}: {} KB, build {:.2?}, verify {:.2?}, {} checked",
        engine.memory_bytes() / 1024,
        built,
        started.elapsed() - built,
        report.checked
    );
    assert!(
        report.ok(),
        "{spec}: {} failed: {:?}",
        report.failed,
        report
            .mismatches
            .iter()
            .map(|m| m.to_string())
            .collect::<Vec<_>>()
    );
    Ok(engine.memory_bytes())
}

const VARIANTS: &[&str] = &["", ",fixed", ",nopush", ",packed"];

#[test]
fn dfz_v4_nh_matrix() {
    let rib = &shared_table("dfz-v4-nh.txt.gz").v4;
    for levels in [2, 3, 4, 6] {
        for variant in VARIANTS {
            check(&format!("cpe:levels={levels}{variant}"), rib, 20_000).unwrap();
        }
    }
}

#[test]
fn dfz_v4_asn_matrix() {
    let rib = &shared_table("dfz-v4-asn.txt.gz").v4;
    for levels in [2, 3, 4, 6] {
        for variant in VARIANTS {
            check(&format!("cpe:levels={levels}{variant}"), rib, 20_000).unwrap();
        }
    }
}

/// dfz-v6 has /128 prefixes: with strides capped at 24, fewer than 6 levels
/// cannot reach them, and 6 (variable) or 8 (fixed) levels need more than
/// 2^26 entries; both fail with a `Limit` error naming the problem. From 9
/// levels on every variant builds.
#[test]
fn dfz_v6_nh_matrix() {
    let rib = &shared_table("dfz-v6-nh.txt.gz").v6;
    for levels in [2, 3, 4, 6] {
        for variant in VARIANTS {
            let spec = format!("cpe:levels={levels}{variant}");
            let err = check(&spec, rib, 20_000).unwrap_err();
            assert!(
                err.contains("cannot encode this table") && err.contains("levels"),
                "{spec}: {err}"
            );
        }
    }
    for variant in VARIANTS {
        check(&format!("cpe:levels=9{variant}"), rib, 20_000).unwrap();
    }
}

/// A trie past the entry limit names the layout with the fewest levels
/// whose trie fits: that layout builds and verifies, and one level fewer
/// does not fit.
#[test]
fn too_big_names_the_fewest_levels_that_fit() {
    let rib = &shared_table("dfz-v6-nh.txt.gz").v6;
    for (variant, start) in [("", 6), (",fixed", 6)] {
        let spec = format!("cpe:levels={start}{variant}");
        let err = check(&spec, rib, 0).unwrap_err();
        let named = err
            .split("; `")
            .nth(1)
            .and_then(|rest| rest.split('`').next())
            .unwrap_or_else(|| panic!("{spec}: no layout named: {err}"));
        assert!(
            err.ends_with("is the fewest levels whose trie fits"),
            "{spec}: {err}"
        );
        let levels: u8 = named
            .split("levels=")
            .nth(1)
            .and_then(|rest| rest.split(',').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{spec}: {named} names no level count"));
        assert!(levels > start, "{spec}: {named}");
        assert_eq!(named, format!("cpe:levels={levels}{variant}"), "{err}");
        check(named, rib, 20_000).unwrap();
        let fewer = format!("cpe:levels={}{variant}", levels - 1);
        let err = check(&fewer, rib, 0).unwrap_err();
        assert!(err.contains("cannot encode this table"), "{fewer}: {err}");
    }
    // A host route needs 32 levels of 2 entries at the least: no trie fits
    // 16 entries, and the error names the smallest trie's size, a spec that
    // builds it, and other engines.
    let rib = rib_of_strs(&[("10.0.0.0/8", 1), ("10.1.2.3/32", 2)]);
    for variant in ["", ",fixed"] {
        let spec = format!("cpe:max-entries=16{variant}");
        let err = check(&spec, &rib, 0).unwrap_err();
        assert!(
            err.contains("no trie of at most 32 levels fits in 2^4 entries; the smallest needs "),
            "{err}"
        );
        assert!(err.ends_with(", or try `dxr` or `lctrie`"), "{err}");
        let named = err
            .split("(`")
            .nth(1)
            .and_then(|rest| rest.split('`').next())
            .unwrap_or_else(|| panic!("{spec}: no layout named: {err}"));
        let needed: u32 = named
            .split("max-entries=")
            .nth(1)
            .and_then(|rest| rest.split(',').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{spec}: {named} names no entry count"));
        assert!(needed > 16, "{err}");
        assert!(
            err.contains(&format!("the smallest needs {needed} ")),
            "{err}"
        );
        check(named, &rib, 20_000).unwrap_or_else(|e| panic!("{named}: {e}"));
        let tighter = named.replace(
            &format!("max-entries={needed}"),
            &format!("max-entries={}", needed - 1),
        );
        assert!(check(&tighter, &rib, 0).is_err(), "{tighter} builds");
    }
}

/// Where the builder, not the stride program, finds the trie too big (given
/// strides, packed nodes), the error says what to change in the spec and
/// names an engine without the limit.
#[test]
fn builder_limit_errors_name_a_remedy() {
    let rib = rib_of_strs(&[("10.0.0.0/8", 1), ("10.1.2.0/24", 2), ("10.1.2.3/32", 3)]);
    let err = check("cpe:strides=16+16,max-entries=2000", &rib, 0).unwrap_err();
    assert!(err.contains("cannot encode this table"), "{err}");
    assert!(
        err.contains("raise max-entries, or give more, narrower strides"),
        "{err}"
    );
    assert!(err.ends_with("`lctrie` has no such limit"), "{err}");
    let err = check("cpe:levels=2,packed,max-entries=2000", &rib, 0).unwrap_err();
    assert!(err.contains("use more levels or a smaller cap"), "{err}");
    assert!(err.ends_with("`lctrie` has no such limit"), "{err}");
    // The layouts the errors point to build.
    check("cpe:strides=8+8+8+8,max-entries=2000", &rib, 1000).unwrap();
    check("lctrie", &rib, 1000).unwrap();
}

/// linx-rib-ipv6 ends at /48: 2 levels of at most 24 bits would need a
/// 2^24-entry node below every /24 with longer prefixes (over 2^26 entries);
/// 3, 4 and 6 levels build.
#[test]
fn linx_rib_ipv6_matrix() {
    let rib = &shared_table("linx-rib-ipv6.20141225.txt.gz").v6;
    for variant in VARIANTS {
        let spec = format!("cpe:levels=2{variant}");
        let err = check(&spec, rib, 20_000).unwrap_err();
        assert!(err.contains("cannot encode this table"), "{spec}: {err}");
        for levels in [3, 4, 6] {
            check(&format!("cpe:levels={levels}{variant}"), rib, 20_000).unwrap();
        }
    }
}

/// IPv6 tries trade memory for levels by default (`level-cost`), but only
/// while the trie fits: with `max-entries` at the least-memory plan's size
/// the default falls back to that plan, and a level cost the spec names
/// fails naming the limit instead.
#[test]
fn ipv6_level_cost_within_the_entry_limit() {
    let rib = &shared_table("linx-rib-ipv6.20141225.txt.gz").v6;
    let least = variable_strides(rib, 12, 24, MemoryModel::LEAF_PUSHED).unwrap();
    let least_entries = least.bytes / 4;
    let plain_bytes = check("cpe:level-cost=0", rib, 20_000).unwrap();
    let default_bytes = check("cpe", rib, 20_000).unwrap();
    assert!(
        default_bytes > plain_bytes,
        "{default_bytes} <= {plain_bytes}"
    );
    let bounded = format!("cpe:max-entries={least_entries}");
    assert_eq!(check(&bounded, rib, 20_000).unwrap(), plain_bytes);
    let err = check(&format!("{bounded},level-cost=64"), rib, 0).unwrap_err();
    assert!(err.contains("raise max-entries"), "{err}");
}

#[test]
fn spec_errors_are_clear() {
    let rib4 = Rib::<u32>::new();
    let rib6 = Rib::<u128>::new();
    let err = build("cpe:strides=16+8+8", &rib6)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("sum to 32 bits but IPv6 addresses have 128"),
        "{err}"
    );
    let err = build("cpe:strides=16+8", &rib4).err().unwrap().to_string();
    assert!(err.contains("sum to 24 bits"), "{err}");
    let err = build("cpe:strides=16+x", &rib4).err().unwrap().to_string();
    assert!(err.contains("not a list"), "{err}");
    let err = build("cpe:strides=32", &rib4).err().unwrap().to_string();
    assert!(err.contains("1..=24"), "{err}");
    let err = build("cpe:levels=3,nopush,packed", &rib4)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("packed nodes are built"), "{err}");
    let err = build("cpe:levels=3,cap=25", &rib4)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("cap=25"), "{err}");
    let err = build("cpe:levels=3,strides=16+16", &rib4)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("takes no"), "{err}");
    assert!(build("cpe:strides=16+8+8,nopush", &rib4).is_ok());
    assert!(build("cpe", &rib4).is_ok());
    assert!(build("cpe", &rib6).is_ok());
}

// ---- The stride programs against brute force -------------------------------

use std::collections::HashSet;

use fibkit::engines::cpe::{fixed_strides, variable_strides, MemoryModel};
use fibkit::{Addr, Prefix};
use proptest::prelude::*;

/// Small tables in the first 12 bits of the address space, so brute force
/// over every stride choice stays cheap.
fn small_table() -> impl Strategy<Value = Vec<(u32, u8)>> {
    prop::collection::vec((any::<u32>(), 0u8..=12), 0..40)
}

/// 1-bit trie nodes at `depth` with a longer prefix below them.
fn inner_nodes(prefixes: &HashSet<(u32, u8)>, depth: u8) -> HashSet<u32> {
    prefixes
        .iter()
        .filter(|&&(_, plen)| plen > depth)
        .map(|&(addr, _)| addr.masked(depth))
        .collect()
}

/// Every way of writing `total` as `parts` strides in 1..=cap.
fn compositions(total: u32, parts: u32, cap: u32, prefix: &mut Vec<u32>, out: &mut Vec<Vec<u32>>) {
    if parts == 0 {
        if total == 0 {
            out.push(prefix.clone());
        }
        return;
    }
    for s in 1..=cap.min(total) {
        prefix.push(s);
        compositions(total - s, parts - 1, cap, prefix, out);
        prefix.pop();
    }
}

fn brute_fixed(prefixes: &HashSet<(u32, u8)>, levels: u32, cap: u32) -> Option<u64> {
    let max_len = prefixes.iter().map(|p| p.1 as u32).max().unwrap_or(0);
    let target = max_len.max(levels);
    let mut all = Vec::new();
    compositions(target, levels, cap, &mut Vec::new(), &mut all);
    all.iter()
        .map(|strides| {
            let mut depth = 0u32;
            let mut bytes = 0u64;
            for &s in strides {
                let nodes = if depth == 0 {
                    1
                } else {
                    inner_nodes(prefixes, depth as u8).len() as u64
                };
                bytes += nodes * (1u64 << s) * 4;
                depth += s;
            }
            bytes
        })
        .min()
}

/// Figure 5's recursion, evaluated naively: the node `addr/depth` with `r` levels.
fn brute_variable(
    prefixes: &HashSet<(u32, u8)>,
    addr: u32,
    depth: u8,
    r: u32,
    cap: u8,
) -> Option<u64> {
    if r == 0 {
        return None;
    }
    let mut best: Option<u64> = None;
    for s in 1..=cap.min(32 - depth) {
        let end = depth + s;
        let below: HashSet<u32> = prefixes
            .iter()
            .filter(|&&(a, plen)| plen > end && a.masked(depth) == addr)
            .map(|&(a, _)| a.masked(end))
            .collect();
        let mut total = Some((1u64 << s) * 4);
        for child in below {
            total = match (total, brute_variable(prefixes, child, end, r - 1, cap)) {
                (Some(t), Some(c)) => Some(t + c),
                _ => None,
            };
        }
        if let Some(t) = total {
            best = Some(best.map_or(t, |b| b.min(t)));
        }
    }
    best
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn stride_programs_match_brute_force(entries in small_table(), levels in 1u8..=4, cap in 3u8..=6) {
        let rib = Rib::from_pairs(entries.iter().map(|&(a, l)| (Prefix::new_masked(a, l), 1)));
        let set: HashSet<(u32, u8)> = rib.iter().map(|(p, _)| (p.addr(), p.plen())).collect();
        let fixed = fixed_strides(&rib, levels, cap, MemoryModel::LEAF_PUSHED).ok().map(|p| p.bytes);
        prop_assert_eq!(fixed, brute_fixed(&set, levels as u32, cap as u32));
        let has_below = set.iter().any(|p| p.1 > 0);
        let want = if has_below {
            brute_variable(&set, 0, 0, levels as u32, cap)
        } else {
            Some(8) // a 1-bit root holding the default route
        };
        let got = variable_strides(&rib, levels, cap, MemoryModel::LEAF_PUSHED).ok();
        prop_assert_eq!(got.as_ref().map(|p| p.bytes), want);
        // The engines are exactly as big as the programs say (plus labels:
        // the results slot 0, which holds the default route, and one slot
        // for the label of the longer prefixes, if any).
        let labels = if has_below { 16 } else { 8 };
        if let Some(plan) = got {
            let spec = format!("cpe:levels={levels},cap={cap}");
            let engine = build(&spec, &rib).unwrap();
            prop_assert_eq!(engine.memory_bytes() as u64, plan.bytes + labels);
            let nopush = build(&format!("{spec},nopush"), &rib).unwrap();
            prop_assert_eq!(nopush.memory_bytes() as u64, plan.bytes * 2 + labels);
            assert_engine_matches(&spec, &rib, 200);
            assert_engine_matches(&format!("{spec},packed"), &rib, 200);
        }
        if let Some(bytes) = fixed {
            let engine = build(&format!("cpe:levels={levels},cap={cap},fixed"), &rib).unwrap();
            prop_assert_eq!(engine.memory_bytes() as u64, bytes + labels);
        }
    }
}

// ---- Update replay -----------------------------------------------------------

use fibkit::load::AnyChange;
use fibkit::LocalFib;

/// Replays the LINX update stream onto dfz-v4-nh; the non-leaf-pushed trie
/// is patched in place, the leaf-pushed one rebuilds the affected subtrees
/// (neither is rebuilt whole), and both agree with the reference table at
/// several points and at the end.
#[test]
fn nopush_update_replay() {
    let table = shared_table("dfz-v4-nh.txt.gz");
    let updates = linx_updates(table);
    let changes: Vec<_> = updates
        .updates
        .iter()
        .filter_map(|u| match u.change {
            AnyChange::V4(change) => Some(change),
            AnyChange::V6(_) => None,
        })
        .collect();
    assert!(changes.len() > 20_000);
    for spec in [
        "cpe:levels=4,nopush",
        "cpe:levels=3,fixed,nopush,cap=24",
        "cpe:levels=3",
    ] {
        let mut engine = LocalFib::<u32>::new(spec, table.v4.clone()).unwrap();
        let checkpoints = [changes.len() / 4, changes.len() / 2, changes.len()];
        let mut done = 0;
        for checkpoint in checkpoints {
            for change in &changes[done..checkpoint] {
                let summary = engine.apply(std::slice::from_ref(change)).unwrap();
                assert!(summary.rebuilt.is_none(), "{spec} was rebuilt");
            }
            done = checkpoint;
            let report = verify(&engine, engine.rib(), 20_000, 7);
            assert!(
                report.ok(),
                "{spec} after {done} updates: {} failed: {:?}",
                report.failed,
                report
                    .mismatches
                    .iter()
                    .map(|m| m.to_string())
                    .collect::<Vec<_>>()
            );
        }
    }
}

/// Random insert/delete/relabel sequences on small tables keep the
/// non-leaf-pushed and leaf-pushed tries equal to the reference, including nodes added
/// below the built trie and nodes freed again.
mod random_updates {
    use super::*;
    use fibkit::rib::Change;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn tries_follow_random_updates(
            entries in random_table_v4(),
            ops in prop::collection::vec((any::<u32>(), 0u8..=32, 0u32..4, any::<bool>()), 0..120),
        ) {
            let rib = rib_from_triples(&entries);
            let mut engine = LocalFib::<u32>::new("cpe:levels=4,nopush,cap=8", rib.clone()).unwrap();
            let mut leaf = LocalFib::<u32>::new("cpe:levels=4,cap=8", rib).unwrap();
            for (i, &(addr, plen, label, withdraw)) in ops.iter().enumerate() {
                // Mostly near existing prefixes, so updates hit built nodes.
                let addr = if i % 2 == 0 { (addr & 0x000f_ffff) | 0x0a00_0000 } else { addr };
                let prefix = Prefix::new_masked(addr, plen);
                let change = if withdraw {
                    Change::Withdraw(prefix)
                } else {
                    Change::Announce(prefix, label)
                };
                let summary = engine.apply(&[change]).unwrap();
                prop_assert!(summary.rebuilt.is_none());
                let summary = leaf.apply(&[change]).unwrap();
                prop_assert!(summary.rebuilt.is_none());
            }
            assert_engine_matches_engine(&engine, engine.rib());
            assert_engine_matches_engine(&leaf, leaf.rib());
        }
    }

    fn assert_engine_matches_engine(engine: &impl fibkit::Lookup<u32>, rib: &Rib<u32>) {
        let report = verify(engine, rib, 500, 3);
        assert!(
            report.ok(),
            "{:?}",
            report
                .mismatches
                .iter()
                .map(|m| m.to_string())
                .collect::<Vec<_>>()
        );
    }
}

/// The batch lookups agree with single lookups on every slice length from
/// 0 to 300 (around every window and lane count they use), for both
/// families and every trie kind, and write nothing past the keys.
#[test]
fn batch_lookup_every_slice_length() {
    fn check<A: EngineFamily>(spec: &str, rib: &Rib<A>, addrs: &[A]) {
        let engine = build(spec, rib).unwrap();
        let want: Vec<_> = addrs.iter().map(|&a| engine.lookup(a)).collect();
        for len in 0..=addrs.len() {
            let mut out = vec![Some(u32::MAX); len + 1];
            engine.lookup_batch(&addrs[..len], &mut out);
            assert_eq!(&out[..len], &want[..len], "{spec}, {len} keys");
            assert_eq!(out[len], Some(u32::MAX), "{spec}: wrote past the keys");
        }
    }
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let v4 = &shared_table("dfz-v4-nh.txt.gz").v4;
    let addrs: Vec<u32> = (0..300).map(|_| (next() >> 32) as u32).collect();
    for spec in [
        "cpe:strides=20+4+8",
        "cpe:levels=3",
        "cpe:levels=4,packed",
        "cpe:levels=3,nopush",
    ] {
        check(spec, v4, &addrs);
    }
    // IPv6 keys inside announced prefixes, so walks go deep.
    let v6 = &shared_table("dfz-v6-nh.txt.gz").v6;
    let prefixes: Vec<Prefix<u128>> = v6.iter().map(|(p, _)| p).collect();
    let addrs: Vec<u128> = (0..300)
        .map(|_| {
            let prefix = prefixes[next() as usize % prefixes.len()];
            let host = ((next() as u128) << 64 | next() as u128) & !u128::mask(prefix.plen());
            prefix.addr() | host
        })
        .collect();
    for spec in [
        "cpe",
        "cpe:levels=9",
        "cpe:levels=10,nopush",
        "cpe:levels=10,packed",
    ] {
        check(spec, v6, &addrs);
    }
}

// ---- Failed updates are atomic ----------------------------------------------

/// Random tables in the first 12 bits (so tiny layouts can build them).
fn short_table() -> impl Strategy<Value = Vec<(u32, u8, u32)>> {
    random_table_v4().prop_map(|entries| {
        entries
            .into_iter()
            .map(|(addr, plen, label)| (addr, plen.min(12), label))
            .collect()
    })
}

/// Small layouts: few levels and small strides, so that random batches of
/// prefixes up to /32 add chains of small nodes and, past an entry limit
/// set just above the built trie (see [`with_entry_limit`]), fail; some
/// tables do not fit them at all.
const TINY_LAYOUTS: &[&str] = &[
    "cpe:levels=2,cap=6",
    "cpe:levels=3,cap=4",
    "cpe:levels=2,cap=8,nopush",
    "cpe:levels=3,cap=5,fixed",
    "cpe:levels=3,cap=6,fixed,nopush",
    "cpe:levels=2,cap=6,packed",
];

/// `spec` with `max-entries` set `slack` entries above what `rib` needs,
/// or `None` if `rib` does not fit `spec` at all.
fn with_entry_limit(spec: &str, rib: &Rib<u32>, slack: usize) -> Option<String> {
    let fib = LocalFib::<u32>::new(spec, rib.clone()).ok()?;
    let fibkit::registry::StatsV4::Cpe(stats) = fib.stats() else {
        unreachable!("a cpe spec builds a cpe engine")
    };
    Some(format!("{spec},max-entries={}", stats.entries + slack))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Random batches pushed past small layouts through both handles: each
    /// batch is applied entirely or not at all (see `assert_batches_atomic`).
    #[test]
    fn failed_updates_are_atomic(entries in short_table(), batches in random_batches_v4(32)) {
        let rib = rib_from_triples(&entries);
        for layout in TINY_LAYOUTS {
            if let Some(spec) = with_entry_limit(layout, &rib, 300) {
                assert_batches_atomic(&spec, &rib, &batches, 200);
            }
        }
    }
}

/// Seeded streams from `trace::generate_changes` (nested, covering, /0 and
/// /32 announcements, relabels, withdrawals) cut into batches: with small
/// layouts and entry limits some batches fail and some are applied, and
/// every one is all or nothing; without a limit every batch is applied (by
/// a patch or a rebuild).
#[test]
fn seeded_streams_past_the_limits_are_atomic() {
    let base = rib_of_strs(&[("10.0.0.0/8", 1), ("10.16.0.0/12", 2), ("192.0.0.0/10", 3)]);
    for layout in TINY_LAYOUTS {
        let (mut failed, mut applied) = (0, 0);
        for seed in 0..8 {
            let spec = with_entry_limit(layout, &base, 200).unwrap();
            let changes = fibkit::trace::generate_changes(&base, 60, seed);
            let batches: Vec<Vec<Change<u32>>> = changes.chunks(6).map(|c| c.to_vec()).collect();
            let count = assert_batches_atomic(&spec, &base, &batches, 100);
            failed += count;
            applied += batches.len() - count;
        }
        assert!(
            failed > 0 && applied > 0,
            "{layout}: {failed} failed, {applied} applied"
        );
    }
    for spec in [
        "cpe",
        "cpe:levels=3",
        "cpe:levels=3,nopush",
        "cpe:strides=16+8+8",
        "cpe:levels=2,cap=6",
    ] {
        let changes = fibkit::trace::generate_changes(&base, 200, 9);
        let batches: Vec<Vec<Change<u32>>> = changes.chunks(10).map(|c| c.to_vec()).collect();
        assert_eq!(
            assert_batches_atomic(spec, &base, &batches, 100),
            0,
            "{spec}"
        );
    }
}

/// An update past the entry limit fails with a `Limit` naming it; the
/// handle then rebuilds from a new stride plan when the new table fits
/// one (saying why), and keeps the old table when it does not.
#[test]
fn updates_past_the_entry_limit_rebuild_or_fail() {
    let rib = rib_of_strs(&[("10.0.0.0/8", 1), ("11.0.0.0/8", 2)]);
    // Two levels of at most 8 bits: the plan for the two /8s is a 4-bit
    // root and one 4-bit node (32 entries). A /12 below needs an 8-bit node
    // (256 more entries); the best plan with it is 6 + 6 bits (128).
    for (spec, outcome) in [
        ("cpe:levels=2,cap=8,max-entries=100", "fails"),
        ("cpe:levels=2,cap=8,max-entries=200", "rebuilds"),
        ("cpe:levels=2,cap=8,max-entries=300", "patches"),
        ("cpe:levels=2,cap=8,nopush,max-entries=100", "fails"),
        ("cpe:levels=2,cap=8,nopush,max-entries=200", "rebuilds"),
        ("cpe:levels=2,cap=8,nopush,max-entries=300", "patches"),
    ] {
        let mut fib = LocalFib::<u32>::new(spec, rib.clone()).unwrap();
        let result = fib.apply(&[Change::Announce("10.16.0.0/12".parse().unwrap(), 3)]);
        match (outcome, result) {
            ("fails", Err(err)) => {
                let err = err.to_string();
                assert!(
                    err.contains("limit of 100") && err.contains("max-entries"),
                    "{spec}: {err}"
                );
                assert_eq!(
                    (fib.lookup(0x0a10_0000), fib.rib().len()),
                    (Some(1), 2),
                    "{spec}"
                );
            }
            ("rebuilds", Ok(summary)) => {
                let why = summary
                    .rebuilt
                    .unwrap_or_else(|| panic!("{spec} was patched"));
                assert!(why.contains("limit of 200"), "{spec}: {why}");
                assert_eq!(fib.lookup(0x0a10_0000), Some(3), "{spec}");
            }
            ("patches", Ok(summary)) => {
                assert!(summary.rebuilt.is_none(), "{spec}: {summary:?}");
                assert_eq!(fib.lookup(0x0a10_0000), Some(3), "{spec}");
            }
            (outcome, result) => panic!("{spec}: expected it {outcome}, got {result:?}"),
        }
    }
}

fn rib_of_strs(entries: &[(&str, u32)]) -> Rib<u32> {
    Rib::from_pairs(
        entries
            .iter()
            .map(|(t, l)| (t.parse::<Prefix<u32>>().unwrap(), *l)),
    )
}

/// Batches of thousands of changes, short prefixes among them, each of
/// which rewrites a whole subtree: the leaf-pushed layouts stop patching
/// once the patch has cost what a build would, and build the table anew.
/// Every batch is applied, through both handles, and answers as the
/// reference table.
#[test]
fn large_batches_of_short_prefixes_answer_as_the_reference() {
    let mut lcg = lcg(0x9e37_79b9_7f4a_7c15);
    let mut next = move || lcg() as u32;
    let mut pairs: Vec<(fibkit::Prefix<u32>, u32)> = Vec::new();
    for _ in 0..4000 {
        let plen = [16, 20, 24, 24, 24, 28][next() as usize % 6];
        pairs.push((fibkit::Prefix::new_masked(next(), plen), next() % 50));
    }
    let rib = Rib::from_pairs(pairs.iter().copied());
    // Grow: short prefixes over the table, and host routes; then relabel
    // and withdraw most of what is there.
    let grow: Vec<Change<u32>> = (0..3000)
        .map(|i| {
            let plen = if i % 3 == 0 { 2 + next() % 10 } else { 32 };
            Change::Announce(fibkit::Prefix::new_masked(next(), plen as u8), next() % 50)
        })
        .collect();
    let mut grown = rib.clone();
    for change in &grow {
        grown.apply(*change);
    }
    let shrink: Vec<Change<u32>> = grown
        .iter()
        .filter(|_| next() % 4 != 0)
        .map(|(prefix, label)| {
            if prefix.plen() < 12 {
                Change::Announce(prefix, label + 1)
            } else {
                Change::Withdraw(prefix)
            }
        })
        .collect();
    for spec in [
        "cpe",
        "cpe:levels=2",
        "cpe:levels=3,fixed",
        "cpe:levels=3,nopush",
    ] {
        let failed =
            assert_batches_atomic::<u32>(spec, &rib, &[grow.clone(), shrink.clone()], 2000);
        assert_eq!(failed, 0, "{spec}: every batch fits");
    }
}
