//! A trace summarised against a table (\[NZ01\], Table 1).

use std::collections::HashMap;

use crate::addr::Addr;
use crate::prefix::Prefix;
use crate::rib::Rib;

/// A summary of a trace against a table.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TraceStats<A> {
    /// Addresses in the trace.
    pub addresses: usize,
    /// Addresses no prefix matched.
    pub unmatched: usize,
    /// Distinct prefixes matched.
    pub distinct_prefixes: usize,
    /// Share of traffic per prefix length (index = length).
    pub share_by_length: Vec<f64>,
    /// The most matched prefixes with their share, most popular first.
    pub top_prefixes: Vec<(Prefix<A>, f64)>,
    /// Share of traffic carried by the top 1% of matched prefixes.
    pub top_percent_share: f64,
    /// Total variation distance between the matched-prefix distributions of
    /// the first and second half (0: identical, 1: disjoint).
    pub halves_tvd: f64,
}

/// Addresses per matched prefix; `None` counts the unmatched ones.
fn prefix_counts<A: Addr>(rib: &Rib<A>, addrs: &[A]) -> HashMap<Option<Prefix<A>>, usize> {
    let mut counts = HashMap::new();
    for &addr in addrs {
        *counts
            .entry(rib.longest_match(addr).map(|(prefix, _)| prefix))
            .or_insert(0) += 1;
    }
    counts
}

/// Summarises `trace` against `rib`, keeping the `top` most popular prefixes.
pub fn trace_stats<A: Addr>(rib: &Rib<A>, trace: &[A], top: usize) -> TraceStats<A> {
    let mut counts = prefix_counts(rib, trace);
    let unmatched = counts.remove(&None).unwrap_or(0);
    let total = trace.len().max(1) as f64;
    let mut share_by_length = vec![0.0; A::BITS as usize + 1];
    for (prefix, &count) in &counts {
        if let Some(prefix) = prefix {
            share_by_length[prefix.plen() as usize] += count as f64 / total;
        }
    }
    let mut ranked: Vec<(Prefix<A>, usize)> = counts
        .iter()
        .filter_map(|(p, c)| p.map(|p| (p, *c)))
        .collect();
    ranked.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let top_count = ranked.len().div_ceil(100);
    let top_percent_share = ranked
        .iter()
        .take(top_count)
        .map(|(_, c)| *c as f64)
        .sum::<f64>()
        / total;
    let half = trace.len() / 2;
    // The unmatched addresses are one more outcome of the distributions.
    let first = prefix_counts(rib, &trace[..half]);
    let second = prefix_counts(rib, &trace[half..]);
    let (n1, n2) = (half.max(1) as f64, (trace.len() - half).max(1) as f64);
    let mut tvd = 0.0;
    for (prefix, &c1) in &first {
        let c2 = second.get(prefix).copied().unwrap_or(0);
        tvd += (c1 as f64 / n1 - c2 as f64 / n2).abs();
    }
    for (prefix, &c2) in &second {
        if !first.contains_key(prefix) {
            tvd += c2 as f64 / n2;
        }
    }
    TraceStats {
        addresses: trace.len(),
        unmatched,
        distinct_prefixes: counts.len(),
        share_by_length,
        top_prefixes: ranked
            .iter()
            .take(top)
            .map(|(p, c)| (*p, *c as f64 / total))
            .collect(),
        top_percent_share,
        halves_tvd: tvd / 2.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::tests::table;

    #[test]
    fn stats_count_unmatched_and_detect_drift() {
        let rib = table();
        let a = u32::parse_addr("10.2.3.4").unwrap();
        let b = u32::parse_addr("192.0.2.1").unwrap();
        let trace = vec![a, a, a, b, b, b, 1];
        let stats = trace_stats(&rib, &trace, 2);
        assert_eq!(
            (stats.addresses, stats.unmatched, stats.distinct_prefixes),
            (7, 1, 2)
        );
        assert_eq!(stats.top_prefixes.len(), 2);
        // First half: a a a; second half: b b b (unmatched) -> disjoint.
        assert!(stats.halves_tvd > 0.9, "{}", stats.halves_tvd);
    }
}
