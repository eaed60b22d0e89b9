//! Choosing the target lengths (\[SV98\] §6.2): the dynamic program that
//! expands the prefixes longer than the first level to `k` target lengths
//! of least memory, counting expanded prefixes and markers.
//!
//! With target lengths `F = L0 < L1 < ... < Lk` (`F` the first level, a
//! direct array), the table of `Lj` holds the `Lj`-bit strings covered by a
//! prefix of length in `(L(j-1), Lj]` (expansions; a longer prefix captures
//! a shorter one's string) and the truncations of longer prefixes
//! (markers), once each. Its size depends on `L(j-1)` and `Lj` only if
//! every table may hold markers, which the program assumes (an upper
//! bound: the search tree puts markers only where a search turns towards
//! longer lengths), so the program is a chain like the fixed-stride program
//! of `shared::strides` (`T[r][j] = min_m T[r-1][m] + cost(m, j)`), with this
//! cost instead of a trie node's:
//!
//! - expansions: a prefix `p` contributes `2^(Lj - plen(p))` strings when it
//!   is not inside another prefix of length in `(m, plen(p))`, that is when
//!   its nearest enclosing prefix (its parent) is at most `m` long, so
//!   `C(m, j) = sum over plen in (m, Lj] of count(parent <= m, plen) * 2^(Lj - plen)`;
//! - markers: a truncation `t` of longer prefixes to `Lj` is a separate
//!   entry unless a prefix of length in `(m, Lj]` covers it, so with `a(t)`
//!   the length of the longest prefix of length `<= Lj` containing `t`,
//!   `M(m, j) = #{t : a(t) <= m}`.
//!
//! Both come from histograms filled in one pass over the sorted prefixes
//! (`O(N * D)` for `D` distinct lengths), so the program itself is
//! `O(k * D^2)`. Costs are bytes: entries times the bytes an entry takes in
//! its table's bucket layout at the build's fill. Only lengths that occur
//! in the table are candidates (a target length above the longest prefix it
//! serves only adds expansions), and no prefix may expand into more than
//! 2^[`MAX_EXPANSION_BITS`] strings.

use std::time::{Duration, Instant};

use super::table::Kind;
use crate::addr::Addr;

/// Most bits a prefix may be expanded by (2^16 strings per prefix), so one
/// announcement cannot rewrite a large part of a table.
pub const MAX_EXPANSION_BITS: u8 = 16;
/// Without a level count, the program takes the fewest levels whose
/// estimate is within this factor of the least estimate of any count:
/// each level more is a table more to probe, and past a point saves little.
pub const AUTO_SLACK: f64 = 1.25;

/// The target lengths the program chose.
#[derive(Clone, Debug, PartialEq)]
pub struct LevelPlan {
    /// The hash tables' lengths (after the first level), increasing; empty
    /// when no prefix is longer than the first level.
    pub lengths: Vec<u8>,
    /// The program's estimate of the tables' bytes (markers counted in
    /// every table, so an upper bound of what a build allocates).
    pub estimated_bytes: f64,
    /// How long the program took (histograms included).
    pub time: Duration,
}

/// The `levels - 1` hash lengths (or fewer, if the table has fewer distinct
/// lengths above `first`) of least estimated memory for the prefixes
/// `sorted` (`(addr, plen)` sorted by address then length), with a direct
/// first level of `first` bits. Without `levels`, the fewest levels (up to
/// [`super::MAX_HASH_LEVELS`] tables) within [`AUTO_SLACK`] of the least
/// memory. `Err` names the problem (a gap wider than
/// [`MAX_EXPANSION_BITS`] between lengths that the level count cannot
/// close).
pub fn plan_levels<A: Addr>(
    sorted: &[(A, u8)],
    first: u8,
    levels: Option<u8>,
) -> Result<LevelPlan, String> {
    let started = Instant::now();
    let inner: Vec<(A, u8)> = sorted.iter().copied().filter(|p| p.1 > first).collect();
    // Positions: 0 is the first level, 1..=D the distinct longer lengths.
    let mut lengths = vec![first];
    let mut present = [false; 129];
    for &(_, plen) in &inner {
        present[plen as usize] = true;
    }
    lengths.extend((first + 1..=A::BITS).filter(|&l| present[l as usize]));
    let d = lengths.len() - 1;
    if d == 0 {
        return Ok(LevelPlan {
            lengths: Vec::new(),
            estimated_bytes: 0.0,
            time: started.elapsed(),
        });
    }
    let mut position = [0usize; 129];
    for (i, &l) in lengths.iter().enumerate() {
        position[l as usize] = i;
    }
    // parents[m][c]: prefixes of length position c whose parent is at
    // position m (0: none longer than the first level).
    let mut parents = vec![vec![0f64; d + 1]; d + 1];
    // truncations[j][a]: strings at length position j (truncations of
    // longer prefixes) whose longest containing prefix is at position a.
    let mut truncations = vec![vec![0f64; d + 1]; d + 1];
    let mut last: Vec<Option<A>> = vec![None; d + 1];
    let mut stack: Vec<(A, u8)> = Vec::new();
    for &(addr, plen) in &inner {
        while let Some(&(top, top_len)) = stack.last() {
            if addr.masked(top_len) == top {
                break;
            }
            stack.pop();
        }
        let parent = stack.last().map_or(0, |p| position[p.1 as usize]);
        parents[parent][position[plen as usize]] += 1.0;
        // The stack holds the prefix's ancestors, shortest first.
        let mut ancestor = 0;
        for j in 1..position[plen as usize] {
            let t = addr.masked(lengths[j]);
            if last[j] == Some(t) {
                continue;
            }
            last[j] = Some(t);
            while ancestor < stack.len() && stack[ancestor].1 <= lengths[j] {
                ancestor += 1;
            }
            let a = if ancestor == 0 {
                0
            } else {
                position[stack[ancestor - 1].1 as usize]
            };
            truncations[j][a] += 1.0;
        }
        stack.push((addr, plen));
    }
    // Cumulative over the parent / container position.
    let mut parents_upto = vec![vec![0f64; d + 1]; d + 1];
    for c in 0..=d {
        let mut sum = 0.0;
        for m in 0..=d {
            sum += parents[m][c];
            parents_upto[m][c] = sum;
        }
    }
    for row in truncations.iter_mut() {
        for a in 1..=d {
            row[a] += row[a - 1];
        }
    }
    let cost = |m: usize, j: usize| -> f64 {
        // The shortest length served by table j expands the most.
        if lengths[j] - lengths[m + 1] > MAX_EXPANSION_BITS {
            return f64::INFINITY;
        }
        let mut entries = truncations[j][m];
        for c in m + 1..=j {
            entries += parents_upto[m][c] * 2f64.powi((lengths[j] - lengths[c]) as i32);
        }
        entries * Kind::of(lengths[j]).bytes_per_entry()
    };
    let most = levels.map_or(super::MAX_HASH_LEVELS, |l| l.saturating_sub(1) as usize);
    let rounds = most.clamp(1, d);
    // The program runs to the most tables a build allows even when fewer
    // are asked for, so that a refusal can name the fewest that work.
    let all = rounds.max(super::MAX_HASH_LEVELS.min(d));
    // best[r][j]: least bytes covering positions 1..=j with r tables, the
    // last at j; from[r][j] the previous table's position.
    let mut best = vec![vec![f64::INFINITY; d + 1]; all + 1];
    let mut from = vec![vec![0usize; d + 1]; all + 1];
    for (j, bytes) in best[1].iter_mut().enumerate().skip(1) {
        *bytes = cost(0, j);
    }
    for r in 2..=all {
        for j in r..=d {
            for m in r - 1..j {
                let total = best[r - 1][m] + cost(m, j);
                if total < best[r][j] {
                    best[r][j] = total;
                    from[r][j] = m;
                }
            }
        }
    }
    let least = (1..=rounds)
        .map(|r| best[r][d])
        .min_by(f64::total_cmp)
        .expect("at least one round");
    if !least.is_finite() {
        let what = format!(
            "{} levels cannot expand every prefix by at most {MAX_EXPANSION_BITS} bits \
             (the table has {d} lengths above {first}",
            rounds + 1
        );
        return Err(match (rounds + 1..=all).find(|&r| best[r][d].is_finite()) {
            Some(fewest) => format!("{what}; use levels={})", fewest + 1),
            None => format!(
                "{what}, and no level count up to {} can; use a longer first level)",
                all + 1
            ),
        });
    }
    let slack = if levels.is_some() { 1.0 } else { AUTO_SLACK };
    let (rounds, bytes) = (1..=rounds)
        .map(|r| (r, best[r][d]))
        .find(|&(_, bytes)| bytes <= least * slack)
        .expect("the least is among them");
    let mut chosen = Vec::with_capacity(rounds);
    let mut j = d;
    for r in (1..=rounds).rev() {
        chosen.push(lengths[j]);
        j = from[r][j];
    }
    chosen.reverse();
    Ok(LevelPlan {
        lengths: chosen,
        estimated_bytes: bytes,
        time: started.elapsed(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(prefixes: &[(u32, u8)]) -> Vec<(u32, u8)> {
        let mut v: Vec<(u32, u8)> = prefixes.iter().map(|&(a, l)| (a.masked(l), l)).collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn every_length_gets_a_table_when_levels_allow() {
        let table = sorted(&[(0x0a00_0000, 20), (0x0a00_0000, 24), (0x0a00_0000, 32)]);
        let plan = plan_levels(&table, 16, Some(4)).unwrap();
        assert_eq!(plan.lengths, vec![20, 24, 32]);
        // 3 strings and one marker string per table below the longest,
        // all shared: three entries of 8 bytes at the build's fill.
        let per_entry = Kind::K32.bytes_per_entry();
        assert!(
            (plan.estimated_bytes - 3.0 * per_entry).abs() < 1e-9,
            "{plan:?}"
        );
    }

    #[test]
    fn expansion_is_weighed_against_markers() {
        // 64 /17s, 8 of them with a /18 inside: a /17 table and a /18
        // table hold 64 + 8 entries (the markers fall on /17s); expanding
        // the /17s to /18 makes 128.
        let mut prefixes = Vec::new();
        for i in 0..64u32 {
            prefixes.push((0x0a00_0000 | i << 15, 17));
            if i % 8 == 0 {
                prefixes.push((0x0a00_0000 | i << 15, 18));
            }
        }
        let table = sorted(&prefixes);
        let per_entry = Kind::K32.bytes_per_entry();
        let two = plan_levels(&table, 16, Some(3)).unwrap();
        assert_eq!(two.lengths, vec![17, 18]);
        assert!(
            (two.estimated_bytes - 72.0 * per_entry).abs() < 1e-9,
            "{two:?}"
        );
        let one = plan_levels(&table, 16, Some(2)).unwrap();
        assert_eq!(one.lengths, vec![18]);
        assert!(
            (one.estimated_bytes - 128.0 * per_entry).abs() < 1e-9,
            "{one:?}"
        );
    }

    #[test]
    fn wide_gaps_are_refused_or_bridged() {
        let table: Vec<(u128, u8)> = vec![(0, 20), (0, 60), (0, 128)];
        // Three tables are the fewest that work: the refusal names them.
        let err = plan_levels(&table, 16, Some(2)).unwrap_err();
        assert!(err.contains("use levels=4"), "{err}");
        let err = plan_levels(&table, 16, Some(3)).unwrap_err();
        assert!(err.contains("use levels=4"), "{err}");
        let plan = plan_levels(&table, 16, Some(4)).unwrap();
        assert_eq!(plan.lengths, vec![20, 60, 128]);
        assert_eq!(
            plan_levels(&table, 16, None).unwrap().lengths,
            vec![20, 60, 128]
        );
        assert!(plan_levels::<u32>(&[], 16, None)
            .unwrap()
            .lengths
            .is_empty());
    }
}
