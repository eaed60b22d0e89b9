//! The files the harnesses share (formats in bench/peers/README.md).
//!
//! - `keys.bin`: the keys as a fibkit binary trace (so `fibkit bench
//!   --patterns trace:keys.bin` times the very same keys): the 8-byte header
//!   `FKTR 0x01 family 0 0` (family 4 or 6), then each address big-endian, 4
//!   or 16 bytes (network order: 10.0.0.1 is `0a 00 00 01`).
//! - `results/NAME.res`: one little-endian `u32` label per key, in key order,
//!   `u32::MAX` for no match.
//! - `results/NAME.timing`: one tab-separated line
//!   `kind engine shape keys build_seconds mlps,mlps,...` where kind is
//!   `fibkit`, `peer` or `ceiling` (timed, but its results are no lookups:
//!   not compared), shape the call pattern (`key`, `x4`, `burstN`, `batch`)
//!   and the runs are in round order. The rounds driver writes it.
//! - `info.txt`: `key value` lines written by `prep` (family, pattern, ...).

use std::collections::BTreeMap;
use std::path::Path;

/// A label file's value for "no match"; a table using it as a label is refused.
pub const NO_MATCH: u32 = u32::MAX;

/// Bytes before the first key of `keys.bin`: fibkit's binary trace header
/// (magic, family, two zero bytes).
pub const KEYS_HEADER_BYTES: usize = fibkit::trace::BINARY_TRACE_MAGIC.len() + 3;

/// Writes keys as `keys.bin` holds them: a fibkit binary trace.
pub fn write_keys<A: fibkit::Addr>(path: &Path, keys: &[A]) -> Result<(), String> {
    let mut bytes = Vec::with_capacity(KEYS_HEADER_BYTES + keys.len() * A::BITS as usize / 8);
    fibkit::trace::write_binary_trace(&mut bytes, keys).map_err(|e| e.to_string())?;
    std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// Reads `keys.bin`.
pub fn read_keys<A: fibkit::Addr>(path: &Path) -> Result<Vec<A>, String> {
    fibkit::trace::read_trace(path).map_err(|e| e.to_string())
}

/// Encodes results as a `.res` file holds them.
pub fn encode_results(results: &[Option<u32>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(results.len() * 4);
    for result in results {
        out.extend_from_slice(&result.unwrap_or(NO_MATCH).to_le_bytes());
    }
    out
}

/// Decodes a `.res` file.
pub fn decode_results(bytes: &[u8]) -> Result<Vec<Option<u32>>, String> {
    if !bytes.len().is_multiple_of(4) {
        return Err(format!(
            "result file of {} bytes is not a whole number of u32",
            bytes.len()
        ));
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|raw| {
            let label = u32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]);
            (label != NO_MATCH).then_some(label)
        })
        .collect())
}

/// One engine's timing line.
#[derive(Clone, Debug, PartialEq)]
pub struct Timing {
    /// `fibkit`, `peer` or `ceiling`.
    pub kind: String,
    /// Engine name as reported.
    pub engine: String,
    /// How the lookups are called: `key` (one address per call), `x4`,
    /// `burstN` (N addresses per call) or `batch` (all keys in one call).
    pub shape: String,
    /// Keys per pass.
    pub keys: u64,
    /// Seconds to build the engine from the table.
    pub build_seconds: f64,
    /// Mlps of each run, in round order.
    pub runs_mlps: Vec<f64>,
}

impl Timing {
    /// The `.timing` line.
    pub fn to_line(&self) -> String {
        let runs: Vec<String> = self.runs_mlps.iter().map(|r| format!("{r:.4}")).collect();
        format!(
            "{}\t{}\t{}\t{}\t{:.4}\t{}\n",
            self.kind,
            self.engine,
            self.shape,
            self.keys,
            self.build_seconds,
            runs.join(",")
        )
    }

    /// Parses a `.timing` line.
    pub fn parse(line: &str) -> Result<Timing, String> {
        let fields: Vec<&str> = line.trim_end_matches(['\n', '\r']).split('\t').collect();
        let [kind, engine, shape, keys, build, runs] = fields.as_slice() else {
            return Err(format!(
                "expected 6 tab-separated fields (kind engine shape keys build_seconds runs), got `{line}`"
            ));
        };
        if !["fibkit", "peer", "ceiling"].contains(kind) {
            return Err(format!(
                "kind `{kind}` is none of `fibkit`, `peer`, `ceiling`"
            ));
        }
        let number = |text: &str| {
            text.trim()
                .parse::<f64>()
                .map_err(|_| format!("`{text}` is not a number in `{line}`"))
        };
        let runs_mlps = runs
            .split(',')
            .map(number)
            .collect::<Result<Vec<f64>, String>>()?;
        if runs_mlps.is_empty() {
            return Err(format!("no runs in `{line}`"));
        }
        Ok(Timing {
            kind: kind.to_string(),
            engine: engine.to_string(),
            shape: shape.to_string(),
            keys: keys
                .parse()
                .map_err(|_| format!("`{keys}` is not a key count"))?,
            build_seconds: number(build)?,
            runs_mlps,
        })
    }

    /// (median, min, max) of the runs.
    pub fn summary(&self) -> (f64, f64, f64) {
        let runs = &self.runs_mlps;
        (
            fibkit_bench::median(runs),
            runs.iter().copied().fold(f64::INFINITY, f64::min),
            runs.iter().copied().fold(0.0, f64::max),
        )
    }
}

/// A file-name-safe form of an engine name (`cpe:levels=3` → `cpe_levels_3`).
pub fn file_stem(engine: &str) -> String {
    engine
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Reads `info.txt` (`key value` lines).
pub fn read_info(dir: &Path) -> Result<BTreeMap<String, String>, String> {
    let path = dir.join("info.txt");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(text
        .lines()
        .filter_map(|line| line.split_once(' '))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_a_binary_trace_with_the_documented_layout() {
        // The C and Go harnesses parse this layout themselves: pin it.
        let dir = std::env::temp_dir().join(format!("fibkit-peers-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("keys.bin");
        let v4 = vec![0x0a00_0001u32, u32::MAX, 0];
        write_keys(&path, &v4).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[..KEYS_HEADER_BYTES], b"FKTR\x01\x04\x00\x00");
        assert_eq!(
            &bytes[KEYS_HEADER_BYTES..KEYS_HEADER_BYTES + 4],
            &[0x0a, 0, 0, 1]
        );
        assert_eq!(bytes.len(), KEYS_HEADER_BYTES + 12);
        assert_eq!(read_keys::<u32>(&path).unwrap(), v4);
        let v6 = vec![0x2001_0db8_u128 << 96 | 1];
        write_keys(&path, &v6).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes[5], 6);
        assert_eq!(
            &bytes[KEYS_HEADER_BYTES..KEYS_HEADER_BYTES + 4],
            &[0x20, 0x01, 0x0d, 0xb8]
        );
        assert_eq!(bytes.len(), KEYS_HEADER_BYTES + 16);
        assert_eq!(read_keys::<u128>(&path).unwrap(), v6);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn results_round_trip_with_no_match() {
        let results = vec![Some(0), None, Some(7), Some(u32::MAX - 1)];
        assert_eq!(decode_results(&encode_results(&results)).unwrap(), results);
        assert!(decode_results(&[0; 3]).is_err());
    }

    #[test]
    fn timing_lines_round_trip_and_summarise() {
        let timing = Timing {
            kind: "peer".into(),
            engine: "rte_lpm".into(),
            shape: "burst32".into(),
            keys: 16,
            build_seconds: 0.5,
            runs_mlps: vec![3.0, 1.0, 5.0, 2.0, 4.0],
        };
        assert_eq!(Timing::parse(&timing.to_line()).unwrap(), timing);
        assert_eq!(timing.summary(), (3.0, 1.0, 5.0));
        assert!(Timing::parse("peer\tx\tkey\t1\t0.1").is_err());
        assert!(Timing::parse("other\tx\tkey\t1\t0.1\t1").is_err());
        assert!(Timing::parse("peer\tx\tkey\t1\t0.1\tfast").is_err());
        assert_eq!(file_stem("cpe:levels=3"), "cpe_levels_3");
    }
}
