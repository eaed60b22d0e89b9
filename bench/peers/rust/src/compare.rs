//! Checking every engine's results against the reference, and the report.

use std::fmt::Write as _;

use fibkit_bench::Ratio;

use crate::files::Timing;

/// How one engine's results differ from the reference.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Disagreement {
    /// Keys whose label differs.
    pub count: u64,
    /// The first few: (key index, expected, got).
    pub first: Vec<(usize, Option<u32>, Option<u32>)>,
    /// Set when the result count is not the key count.
    pub wrong_length: Option<(usize, usize)>,
}

impl Disagreement {
    /// True when the results are exactly the reference's.
    pub fn agrees(&self) -> bool {
        self.count == 0 && self.wrong_length.is_none()
    }
}

/// Compares `got` with `expected` key by key, keeping the first `keep`
/// disagreements.
pub fn compare(expected: &[Option<u32>], got: &[Option<u32>], keep: usize) -> Disagreement {
    let mut result = Disagreement::default();
    if expected.len() != got.len() {
        result.wrong_length = Some((expected.len(), got.len()));
    }
    for (index, (e, g)) in expected.iter().zip(got).enumerate() {
        if e != g {
            result.count += 1;
            if result.first.len() < keep {
                result.first.push((index, *e, *g));
            }
        }
    }
    result
}

/// Formats a label for people.
pub fn show(label: Option<u32>) -> String {
    label.map_or_else(|| "none".to_string(), |l| l.to_string())
}

/// One engine's row of the report.
#[derive(Clone, Debug)]
pub struct Row {
    /// Its timing.
    pub timing: Timing,
    /// Whether it agreed with the reference on every key.
    pub agrees: bool,
    /// Keys whose label differs from the reference's.
    pub disagreeing: u64,
}

impl Row {
    /// This row against `baseline`, round by round.
    pub fn ratio(&self, baseline: &Row) -> Ratio {
        Ratio::new(
            baseline.timing.engine.clone(),
            &self.timing.runs_mlps,
            &baseline.timing.runs_mlps,
        )
    }
}

/// Lays out `lines` (the first is the header) in aligned columns, the
/// first `left` of them left-aligned, with a rule under the header.
fn render(lines: &[Vec<String>], left: usize) -> String {
    let columns = lines.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            lines
                .iter()
                .filter_map(|l| l.get(c))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        let cells: Vec<String> = line
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (cell, width))| {
                if c < left {
                    format!("{cell:<width$}")
                } else {
                    format!("{cell:>width$}")
                }
            })
            .collect();
        let _ = writeln!(out, "{}", cells.join("  ").trim_end());
        if i == 0 {
            let total = widths.iter().sum::<usize>() + 2 * columns.saturating_sub(1);
            let _ = writeln!(out, "{}", "-".repeat(total));
        }
    }
    out
}

/// The rounds table: each configuration's kind, shape, agreement, build
/// time, median (min-max) Mlps and the Mlps of every round.
pub fn rounds_table(rows: &[Row]) -> String {
    let rounds = rows
        .iter()
        .map(|r| r.timing.runs_mlps.len())
        .max()
        .unwrap_or(0);
    let mut header: Vec<String> = [
        "engine",
        "kind",
        "shape",
        "agrees",
        "build s",
        "median Mlps (min-max)",
    ]
    .map(String::from)
    .to_vec();
    header.extend((1..=rounds).map(|r| format!("r{r} Mlps")));
    let mut lines = vec![header];
    for row in rows {
        let (median, min, max) = row.timing.summary();
        let mut line = vec![
            row.timing.engine.clone(),
            row.timing.kind.clone(),
            row.timing.shape.clone(),
            match (row.timing.kind.as_str(), row.agrees) {
                ("ceiling", _) => "-",
                (_, true) => "yes",
                (_, false) => "NO",
            }
            .to_string(),
            format!("{:.2}", row.timing.build_seconds),
            format!("{median:.1} ({min:.1}-{max:.1})"),
        ];
        line.extend(row.timing.runs_mlps.iter().map(|r| format!("{r:.1}")));
        lines.push(line);
    }
    render(&lines, 3)
}

/// Each fibkit configuration against each baseline: the median of the
/// per-round ratios of their Mlps (above 1: fibkit is faster).
pub fn ratio_table(rows: &[Row], baselines: &[&Row]) -> String {
    let mut header = vec!["engine".to_string(), "shape".to_string()];
    header.extend(baselines.iter().map(|b| format!("÷ {}", b.timing.engine)));
    let mut lines = vec![header];
    for row in rows.iter().filter(|r| r.timing.kind == "fibkit") {
        let mut line = vec![row.timing.engine.clone(), row.timing.shape.clone()];
        line.extend(
            baselines
                .iter()
                .map(|b| format!("{:.2}x", row.ratio(b).median)),
        );
        lines.push(line);
    }
    render(&lines, 2)
}

/// Each fibkit configuration against each baseline of the same shape
/// (per key with per key, bursts of N with bursts of N, long slices with
/// long slices): the ratio of every round and their median.
pub fn paired_rounds(rows: &[Row], baselines: &[&Row]) -> String {
    let rounds = rows
        .iter()
        .map(|r| r.timing.runs_mlps.len())
        .max()
        .unwrap_or(0);
    let mut header = vec![
        "engine".to_string(),
        "baseline".to_string(),
        "median ratio".to_string(),
    ];
    header.extend((1..=rounds).map(|r| format!("r{r}")));
    let mut lines = vec![header];
    for row in rows.iter().filter(|r| r.timing.kind == "fibkit") {
        for baseline in baselines
            .iter()
            .filter(|b| b.timing.shape == row.timing.shape)
        {
            let ratio = row.ratio(baseline);
            let mut line = vec![
                row.timing.engine.clone(),
                baseline.timing.engine.clone(),
                format!("{:.2}x", ratio.median),
            ];
            line.extend(ratio.rounds.iter().map(|r| format!("{r:.2}")));
            lines.push(line);
        }
    }
    render(&lines, 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timing(kind: &str, engine: &str, shape: &str, runs_mlps: &[f64]) -> Timing {
        Timing {
            kind: kind.into(),
            engine: engine.into(),
            shape: shape.into(),
            keys: 4,
            build_seconds: 0.1,
            runs_mlps: runs_mlps.to_vec(),
        }
    }

    #[test]
    fn compare_finds_every_disagreement_and_keeps_the_first() {
        let expected = vec![Some(1), None, Some(3), Some(4), Some(5)];
        assert!(compare(&expected, &expected, 3).agrees());
        let got = vec![Some(1), Some(2), Some(3), None, Some(6)];
        let d = compare(&expected, &got, 2);
        assert_eq!(d.count, 3);
        assert_eq!(d.first, vec![(1, None, Some(2)), (3, Some(4), None)]);
        assert!(!d.agrees());
        let short = compare(&expected, &expected[..4], 2);
        assert_eq!(short.wrong_length, Some((5, 4)));
        assert!(!short.agrees());
    }

    #[test]
    fn tables_show_rounds_and_ratios_round_by_round() {
        let row = |kind, engine, shape, runs: &[f64], agrees: bool| Row {
            timing: timing(kind, engine, shape, runs),
            agrees,
            disagreeing: u64::from(!agrees),
        };
        // Round 2 ran under load: both halve, the ratio stays 2.
        let rows = vec![
            row(
                "fibkit",
                "dxr/burst32",
                "burst32",
                &[200.0, 100.0, 210.0],
                true,
            ),
            row("fibkit", "dxr/key", "key", &[90.0, 40.0, 100.0], true),
            row(
                "peer",
                "rte_fib/burst32",
                "burst32",
                &[100.0, 50.0, 100.0],
                true,
            ),
            row("peer", "rte_lpm/key", "key", &[100.0, 40.0, 50.0], false),
        ];
        let baselines: Vec<&Row> = rows[2..].iter().collect();
        let text = rounds_table(&rows);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].contains("median Mlps (min-max)") && lines[0].ends_with("r3 Mlps"));
        let fields: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(fields[0], "dxr/burst32");
        assert_eq!(fields[fields.len() - 3..], ["200.0", "100.0", "210.0"]);
        assert!(lines[5].contains("NO"));
        let text = ratio_table(&rows, &baselines);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].contains("÷ rte_fib/burst32") && lines[0].contains("÷ rte_lpm/key"));
        assert_eq!(lines.len(), 4, "one line per fibkit row: {text}");
        assert_eq!(
            lines[2].split_whitespace().collect::<Vec<_>>(),
            ["dxr/burst32", "burst32", "2.00x", "2.50x"],
            "{text}"
        );
        let text = paired_rounds(&rows, &baselines);
        let lines: Vec<&str> = text.lines().collect();
        // Only same-shape pairs.
        assert_eq!(lines.len(), 4, "{text}");
        assert!(lines[2].starts_with("dxr/burst32") && lines[2].contains("rte_fib/burst32"));
        let fields = |line: &str| {
            line.split_whitespace()
                .skip(2)
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(fields(lines[2]), "2.00x 2.00 2.00 2.10", "{text}");
        assert_eq!(fields(lines[3]), "1.00x 0.90 1.00 2.00", "{text}");
        assert_eq!(show(None), "none");
        assert_eq!(show(Some(7)), "7");
    }
}
