//! Trace summaries: how often each prefix of a table is the longest match
//! of a trace's addresses (Narlikar and Zane §4.2, "lookup frequency"), kept
//! in a small text file the model and the `levels` engine read instead of
//! the whole trace.
//!
//! File format (text, one record per line):
//! ```text
//! # fibkit trace summary v1
//! family IPv4
//! lookups 1000000
//! unmatched 0
//! 10.0.0.0/8 12345
//! ...
//! ```
//! The summary also spreads each prefix's lookups over the address space
//! it is the longest match for (uniformly, the paper's assumption that a
//! prefix "is looked up equally often along each branch"), which gives every
//! range of the table's range view a weight: [`weighted_ranges`].

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::addr::Addr;
use crate::prefix::Prefix;
use crate::rib::{Range, Rib};

use crate::error::ModelError;

/// The first line of every summary file; the version changes with the format.
pub const SUMMARY_HEADER: &str = "# fibkit trace summary v1";

/// Lookups per longest-matching prefix for one trace against one table.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceSummary<A> {
    /// Addresses in the trace.
    pub lookups: u64,
    /// Addresses no prefix matched.
    pub unmatched: u64,
    /// Matched prefixes with their lookup counts, in prefix order.
    pub counts: Vec<(Prefix<A>, u64)>,
}

impl<A: Addr> TraceSummary<A> {
    /// Counts the longest match of every address of `trace` in `rib`.
    pub fn from_trace(rib: &Rib<A>, trace: &[A]) -> Self {
        let mut counts: HashMap<Prefix<A>, u64> = HashMap::new();
        let mut unmatched = 0;
        for &addr in trace {
            match rib.longest_match(addr) {
                Some((prefix, _)) => *counts.entry(prefix).or_insert(0) += 1,
                None => unmatched += 1,
            }
        }
        let mut counts: Vec<(Prefix<A>, u64)> = counts.into_iter().collect();
        counts.sort_unstable();
        TraceSummary {
            lookups: trace.len() as u64,
            unmatched,
            counts,
        }
    }

    /// Matched lookups (the weight the model spreads over the table).
    pub fn matched(&self) -> u64 {
        self.lookups - self.unmatched
    }

    /// Total variation distance to `other` (Narlikar and Zane §3.2, their
    /// Table 1) between the matched lookups' distributions by prefix and by
    /// prefix length: `(by_prefix, by_length)`, each from 0 (same) to 1.
    pub fn distance(&self, other: &TraceSummary<A>) -> (f64, f64) {
        let (n1, n2) = (self.matched().max(1) as f64, other.matched().max(1) as f64);
        let mut by_prefix: HashMap<Prefix<A>, (f64, f64)> = HashMap::new();
        let mut by_length = vec![(0.0, 0.0); A::BITS as usize + 1];
        for &(prefix, count) in &self.counts {
            by_prefix.entry(prefix).or_default().0 += count as f64 / n1;
            by_length[prefix.plen() as usize].0 += count as f64 / n1;
        }
        for &(prefix, count) in &other.counts {
            by_prefix.entry(prefix).or_default().1 += count as f64 / n2;
            by_length[prefix.plen() as usize].1 += count as f64 / n2;
        }
        // Both histograms sum to one, so the paper's normalisation is 2.
        let tvd = |pairs: &mut dyn Iterator<Item = (f64, f64)>| {
            pairs.map(|(a, b)| (a - b).abs()).sum::<f64>() / 2.0
        };
        (
            tvd(&mut by_prefix.into_values()),
            tvd(&mut by_length.into_iter()),
        )
    }

    /// The summary as file text.
    pub fn to_text(&self) -> String {
        let mut text = format!(
            "{SUMMARY_HEADER}\nfamily {}\nlookups {}\nunmatched {}\n",
            A::FAMILY,
            self.lookups,
            self.unmatched
        );
        for (prefix, count) in &self.counts {
            let _ = writeln!(text, "{prefix} {count}");
        }
        text
    }

    /// Writes the summary to `path`.
    pub fn write(&self, path: &Path) -> Result<(), ModelError> {
        std::fs::write(path, self.to_text()).map_err(|e| ModelError::Io {
            path: path.display().to_string(),
            why: e.to_string(),
        })
    }

    /// Reads a summary written by [`TraceSummary::write`].
    pub fn read(path: &Path) -> Result<Self, ModelError> {
        let text = std::fs::read_to_string(path).map_err(|e| ModelError::Io {
            path: path.display().to_string(),
            why: e.to_string(),
        })?;
        Self::parse(&text).map_err(|(line, why)| ModelError::BadFile {
            path: path.display().to_string(),
            line,
            why,
        })
    }

    /// Parses file text; on error the 1-based line and what is wrong.
    pub fn parse(text: &str) -> Result<Self, (usize, String)> {
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim()));
        match lines.next() {
            Some((_, SUMMARY_HEADER)) => {}
            Some((n, other)) => {
                return Err((
                    n,
                    format!(
                        "`{}` is not a fibkit trace summary (expected `{SUMMARY_HEADER}`; \
                         write one with `fibkit model summary`)",
                        crate::prefix::excerpt(other)
                    ),
                ))
            }
            None => return Err((1, "empty file".to_string())),
        }
        let mut field = |name: &str| -> Result<String, (usize, String)> {
            match lines.next() {
                Some((n, line)) => match line.strip_prefix(name) {
                    Some(value) => Ok(value.trim().to_string()),
                    None => Err((n, format!("expected `{name} ...`"))),
                },
                None => Err((0, format!("missing `{name}` line"))),
            }
        };
        let family = field("family")?;
        if family != A::FAMILY.to_string() {
            return Err((2, format!("a summary of {family}, not {}", A::FAMILY)));
        }
        let number = |text: String, line: usize| {
            text.parse::<u64>()
                .map_err(|_| (line, format!("`{text}` is not a count")))
        };
        let lookups = number(field("lookups")?, 3)?;
        let unmatched = number(field("unmatched")?, 4)?;
        let mut counts = Vec::new();
        let mut matched: u64 = 0;
        for (n, line) in lines {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (prefix, count) = line
                .split_once(char::is_whitespace)
                .ok_or((n, "expected `prefix count`".to_string()))?;
            let prefix: Prefix<A> = prefix.parse().map_err(|e| (n, format!("{e}")))?;
            let count = number(count.trim().to_string(), n)?;
            matched = matched.saturating_add(count);
            counts.push((prefix, count));
        }
        if unmatched > lookups || matched != lookups - unmatched {
            return Err((
                0,
                format!(
                    "the counts add up to {matched} matched lookups, but the header says \
                     {lookups} lookups of which {unmatched} unmatched"
                ),
            ));
        }
        counts.sort_unstable();
        Ok(TraceSummary {
            lookups,
            unmatched,
            counts,
        })
    }
}

/// The merged range view of a table with each range's expected lookups.
#[derive(Clone, Debug, Default)]
pub struct WeightedRanges<A> {
    /// Sorted, disjoint ranges covering the window they were made for.
    pub ranges: Vec<Range<A>>,
    /// Lookups per range (same index as `ranges`).
    pub weights: Vec<f64>,
}

/// Lookups per address of each prefix's own address space (where it is the
/// longest match): the density a prefix's lookups are spread with.
pub fn prefix_densities<A: Addr>(
    rib: &Rib<A>,
    summary: &TraceSummary<A>,
) -> HashMap<Prefix<A>, f64> {
    let mut stretches = Vec::new();
    rib.ranges_in(A::ZERO, A::MAX, false, &mut stretches);
    let mut own_size: HashMap<Prefix<A>, f64> = HashMap::new();
    for range in stretches.iter().filter(|r| r.label.is_some()) {
        if let Some((prefix, _)) = rib.longest_match(range.first) {
            *own_size.entry(prefix).or_insert(0.0) += range_size(range);
        }
    }
    summary
        .counts
        .iter()
        .filter_map(|&(prefix, count)| {
            own_size
                .get(&prefix)
                .map(|&size| (prefix, count as f64 / size))
        })
        .collect()
}

/// Addresses in `range`, as a float (IPv6 ranges exceed every integer type
/// but `u128`, and the model works in floats).
pub fn range_size<A: Addr>(range: &Range<A>) -> f64 {
    (range.last.to_u128() - range.first.to_u128()) as f64 + 1.0
}

/// The merged ranges of `rib` in `lo..=hi` with their lookups under
/// `densities` (from [`prefix_densities`]); with no densities every range
/// weighs one.
pub fn weighted_ranges<A: Addr>(
    rib: &Rib<A>,
    lo: A,
    hi: A,
    densities: Option<&HashMap<Prefix<A>, f64>>,
) -> WeightedRanges<A> {
    weighted_view(rib, lo, hi, densities, Rib::ranges_in)
}

/// [`weighted_ranges`] over the range view without the default route
/// ([`Rib::ranges_in_without_default`]): where only the `/0` matches the
/// label is `None`, weighed by the `/0`'s lookups.
pub fn weighted_ranges_without_default<A: Addr>(
    rib: &Rib<A>,
    lo: A,
    hi: A,
    densities: Option<&HashMap<Prefix<A>, f64>>,
) -> WeightedRanges<A> {
    weighted_view(rib, lo, hi, densities, Rib::ranges_in_without_default)
}

/// A range view of a window: [`Rib::ranges_in`] or one of its variants.
type RangeView<A> = fn(&Rib<A>, A, A, bool, &mut Vec<Range<A>>);

/// The weighted ranges of the range view `view` gives.
fn weighted_view<A: Addr>(
    rib: &Rib<A>,
    lo: A,
    hi: A,
    densities: Option<&HashMap<Prefix<A>, f64>>,
    view: RangeView<A>,
) -> WeightedRanges<A> {
    let mut out = WeightedRanges::default();
    let Some(densities) = densities else {
        view(rib, lo, hi, true, &mut out.ranges);
        out.weights = vec![1.0; out.ranges.len()];
        return out;
    };
    let mut stretches = Vec::new();
    view(rib, lo, hi, false, &mut stretches);
    for stretch in stretches {
        // The longest match, not the stretch's label: a view without the
        // default route shows `None` where the `/0` matches.
        let weight = rib
            .longest_match(stretch.first)
            .and_then(|(prefix, _)| densities.get(&prefix))
            .map_or(0.0, |density| density * range_size(&stretch));
        match out.ranges.last_mut() {
            Some(last) if last.label == stretch.label => {
                last.last = stretch.last;
                *out.weights.last_mut().expect("same length") += weight;
            }
            _ => {
                out.ranges.push(stretch);
                out.weights.push(weight);
            }
        }
    }
    out
}

/// The merged ranges of `rib` over the whole address space, each with
/// lookups in proportion to its size: the summary of a uniformly random
/// trace (the RND pattern), computed without one. The weights are shares of
/// the address space (they sum to one).
pub fn uniform_ranges<A: Addr>(rib: &Rib<A>) -> WeightedRanges<A> {
    let mut out = WeightedRanges::default();
    rib.ranges_in(A::ZERO, A::MAX, true, &mut out.ranges);
    let space = (A::BITS as f64).exp2();
    out.weights = out.ranges.iter().map(|r| range_size(r) / space).collect();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Prefix<u32> {
        text.parse().unwrap()
    }

    #[test]
    fn summaries_round_trip_and_bad_files_are_named() {
        let rib = Rib::from_pairs([(p("10.0.0.0/8"), 1), (p("10.1.0.0/16"), 2)]);
        let trace = [0x0a01_0000, 0x0a01_0001, 0x0a02_0000, 0x0b00_0000];
        let summary = TraceSummary::from_trace(&rib, &trace);
        assert_eq!(summary.unmatched, 1);
        assert_eq!(
            summary.counts,
            vec![(p("10.0.0.0/8"), 1), (p("10.1.0.0/16"), 2)]
        );
        let text = summary.to_text();
        assert_eq!(TraceSummary::<u32>::parse(&text).unwrap(), summary);
        assert!(TraceSummary::<u128>::parse(&text)
            .unwrap_err()
            .1
            .contains("IPv4"));
        let bad = text.replace("lookups 4", "lookups 9");
        assert!(TraceSummary::<u32>::parse(&bad)
            .unwrap_err()
            .1
            .contains("add up"));
        assert!(TraceSummary::<u32>::parse("hello")
            .unwrap_err()
            .1
            .contains("not a fibkit"));
        assert!(TraceSummary::<u32>::parse("").is_err());
        let (by_prefix, by_length) = summary.distance(&summary);
        assert_eq!((by_prefix, by_length), (0.0, 0.0));
        let other = TraceSummary::from_trace(&rib, &[0x0a02_0000]);
        let (by_prefix, by_length) = summary.distance(&other);
        assert!((by_prefix - 2.0 / 3.0).abs() < 1e-9, "{by_prefix}");
        assert!((by_length - 2.0 / 3.0).abs() < 1e-9, "{by_length}");
    }

    #[test]
    fn weights_spread_over_each_prefix_own_space() {
        let rib = Rib::from_pairs([(p("10.0.0.0/8"), 1), (p("10.0.0.0/9"), 2)]);
        let summary = TraceSummary {
            lookups: 30,
            unmatched: 0,
            counts: vec![(p("10.0.0.0/8"), 10), (p("10.0.0.0/9"), 20)],
        };
        let densities = prefix_densities(&rib, &summary);
        let view = weighted_ranges(&rib, 0x0a00_0000, 0x0aff_ffff, Some(&densities));
        assert_eq!(view.ranges.len(), 2);
        assert!((view.weights[0] - 20.0).abs() < 1e-9);
        assert!((view.weights[1] - 10.0).abs() < 1e-9);
        let half = weighted_ranges(&rib, 0x0a80_0000, 0x0abf_ffff, Some(&densities));
        assert!((half.weights[0] - 5.0).abs() < 1e-9);
        let plain = weighted_ranges(&rib, 0, u32::MAX, None);
        assert!(plain.weights.iter().all(|&w| w == 1.0));
        let uniform = uniform_ranges(&rib);
        assert_eq!(uniform.ranges.len(), 4);
        assert!((uniform.weights[1] - 1.0 / 512.0).abs() < 1e-12);
        assert!((uniform.weights.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }
}
