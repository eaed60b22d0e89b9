//! Checking every engine's results against the reference, and the report.

use std::fmt::Write as _;

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
}

/// The report table: engine, kind, Mlps median (min-max), build time, and
/// the ratio of each row's median to each peer's median.
pub fn table(rows: &[Row]) -> String {
    let peers: Vec<&Row> = rows.iter().filter(|r| r.timing.kind == "peer").collect();
    let mut header = vec![
        "engine".to_string(),
        "kind".to_string(),
        "Mlps median (min-max)".to_string(),
        "build s".to_string(),
        "agrees".to_string(),
    ];
    header.extend(peers.iter().map(|p| format!("/{}", p.timing.engine)));
    let mut lines = vec![header];
    for row in rows {
        let (median, min, max) = row.timing.summary();
        let mut line = vec![
            row.timing.engine.clone(),
            row.timing.kind.clone(),
            format!("{median:.1} ({min:.1}-{max:.1})"),
            format!("{:.2}", row.timing.build_seconds),
            match (row.timing.kind.as_str(), row.agrees) {
                ("ceiling", _) => "-",
                (_, true) => "yes",
                (_, false) => "NO",
            }
            .to_string(),
        ];
        line.extend(peers.iter().map(|p| {
            let peer_median = p.timing.summary().0;
            if peer_median > 0.0 {
                format!("{:.2}x", median / peer_median)
            } else {
                "-".to_string()
            }
        }));
        lines.push(line);
    }
    let columns = lines[0].len();
    let widths: Vec<usize> = (0..columns)
        .map(|c| lines.iter().map(|l| l[c].len()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        let cells: Vec<String> = line
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (cell, width))| {
                if c == 0 || c == 1 {
                    format!("{cell:<width$}")
                } else {
                    format!("{cell:>width$}")
                }
            })
            .collect();
        let _ = writeln!(out, "{}", cells.join("  ").trim_end());
        if i == 0 {
            let total = widths.iter().sum::<usize>() + 2 * (columns - 1);
            let _ = writeln!(out, "{}", "-".repeat(total));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timing(kind: &str, engine: &str, mlps: f64) -> Timing {
        Timing {
            kind: kind.into(),
            engine: engine.into(),
            keys: 4,
            build_seconds: 0.1,
            runs_mlps: vec![mlps; 5],
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
    fn table_has_a_ratio_column_per_peer() {
        let rows = vec![
            Row {
                timing: timing("fibkit", "dir24-8", 100.0),
                agrees: true,
            },
            Row {
                timing: timing("peer", "rte_lpm", 50.0),
                agrees: true,
            },
            Row {
                timing: timing("peer", "bart", 25.0),
                agrees: false,
            },
        ];
        let text = table(&rows);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].contains("/rte_lpm") && lines[0].contains("/bart"));
        assert!(lines[2].starts_with("dir24-8") && lines[2].ends_with("2.00x  4.00x"));
        assert!(lines[4].contains("NO"));
        assert_eq!(show(None), "none");
        assert_eq!(show(Some(7)), "7");
    }
}
