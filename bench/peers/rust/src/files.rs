//! The files the harnesses share (formats in bench/peers/README.md).
//!
//! - `keys.bin`: the keys, IPv4 as little-endian `u32` (the address as an
//!   integer: 10.0.0.1 is 0x0a000001), IPv6 as 16 bytes in network order (the
//!   address as it is on the wire; `u128::from_be_bytes`). No header: the
//!   count is the file size over the key size.
//! - `results/NAME.res`: one little-endian `u32` label per key, in key order,
//!   `u32::MAX` for no match.
//! - `results/NAME.timing`: one tab-separated line
//!   `kind engine keys build_seconds mlps,mlps,...` where kind is `fibkit`
//!   or `peer`.
//! - `info.txt`: `key value` lines written by `prep` (family, pattern, ...).

use std::collections::BTreeMap;
use std::path::Path;

/// A label file's value for "no match"; a table using it as a label is refused.
pub const NO_MATCH: u32 = u32::MAX;

/// An address family as the files store it.
pub trait KeyFormat: Sized + Copy {
    /// Bytes per key in `keys.bin`.
    const KEY_BYTES: usize;
    /// Decodes one key.
    fn decode(bytes: &[u8]) -> Self;
    /// Appends one key's encoding.
    fn encode(self, out: &mut Vec<u8>);
}

impl KeyFormat for u32 {
    const KEY_BYTES: usize = 4;
    fn decode(bytes: &[u8]) -> Self {
        let mut raw = [0; 4];
        raw.copy_from_slice(bytes);
        u32::from_le_bytes(raw)
    }
    fn encode(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
}

impl KeyFormat for u128 {
    const KEY_BYTES: usize = 16;
    fn decode(bytes: &[u8]) -> Self {
        let mut raw = [0; 16];
        raw.copy_from_slice(bytes);
        u128::from_be_bytes(raw)
    }
    fn encode(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_be_bytes());
    }
}

/// Encodes keys as `keys.bin` holds them.
pub fn encode_keys<A: KeyFormat>(keys: &[A]) -> Vec<u8> {
    let mut out = Vec::with_capacity(keys.len() * A::KEY_BYTES);
    for key in keys {
        key.encode(&mut out);
    }
    out
}

/// Decodes `keys.bin`; an error if its size is not a whole number of keys.
pub fn decode_keys<A: KeyFormat>(bytes: &[u8]) -> Result<Vec<A>, String> {
    if !bytes.len().is_multiple_of(A::KEY_BYTES) {
        return Err(format!(
            "key file of {} bytes is not a whole number of {}-byte keys",
            bytes.len(),
            A::KEY_BYTES
        ));
    }
    Ok(bytes.chunks_exact(A::KEY_BYTES).map(A::decode).collect())
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
    /// `fibkit` or `peer`.
    pub kind: String,
    /// Engine name as reported.
    pub engine: String,
    /// Keys per pass.
    pub keys: u64,
    /// Seconds to build the engine from the table.
    pub build_seconds: f64,
    /// Mlps of each run, in order.
    pub runs_mlps: Vec<f64>,
}

impl Timing {
    /// The `.timing` line.
    pub fn to_line(&self) -> String {
        let runs: Vec<String> = self.runs_mlps.iter().map(|r| format!("{r:.4}")).collect();
        format!(
            "{}\t{}\t{}\t{:.4}\t{}\n",
            self.kind,
            self.engine,
            self.keys,
            self.build_seconds,
            runs.join(",")
        )
    }

    /// Parses a `.timing` line.
    pub fn parse(line: &str) -> Result<Timing, String> {
        let fields: Vec<&str> = line.trim_end_matches(['\n', '\r']).split('\t').collect();
        let [kind, engine, keys, build, runs] = fields.as_slice() else {
            return Err(format!(
                "expected 5 tab-separated fields (kind engine keys build_seconds runs), got `{line}`"
            ));
        };
        if *kind != "fibkit" && *kind != "peer" {
            return Err(format!("kind `{kind}` is neither `fibkit` nor `peer`"));
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
            keys: keys
                .parse()
                .map_err(|_| format!("`{keys}` is not a key count"))?,
            build_seconds: number(build)?,
            runs_mlps,
        })
    }

    /// (median, min, max) of the runs.
    pub fn summary(&self) -> (f64, f64, f64) {
        let mut sorted = self.runs_mlps.clone();
        sorted.sort_by(f64::total_cmp);
        (
            sorted[sorted.len() / 2],
            sorted[0],
            sorted[sorted.len() - 1],
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
    fn keys_round_trip_in_their_byte_orders() {
        let v4 = vec![0x0a00_0001u32, u32::MAX, 0];
        let bytes = encode_keys(&v4);
        assert_eq!(&bytes[..4], &[1, 0, 0, 0x0a]); // little-endian integer
        assert_eq!(decode_keys::<u32>(&bytes).unwrap(), v4);
        let v6 = vec![0x2001_0db8_u128 << 96 | 1];
        let bytes = encode_keys(&v6);
        assert_eq!(&bytes[..4], &[0x20, 0x01, 0x0d, 0xb8]); // network order
        assert_eq!(decode_keys::<u128>(&bytes).unwrap(), v6);
        assert!(decode_keys::<u32>(&[0; 5]).is_err());
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
            keys: 16,
            build_seconds: 0.5,
            runs_mlps: vec![3.0, 1.0, 5.0, 2.0, 4.0],
        };
        assert_eq!(Timing::parse(&timing.to_line()).unwrap(), timing);
        assert_eq!(timing.summary(), (3.0, 1.0, 5.0));
        assert!(Timing::parse("peer\tx\t1\t0.1").is_err());
        assert!(Timing::parse("other\tx\t1\t0.1\t1").is_err());
        assert!(Timing::parse("peer\tx\t1\t0.1\tfast").is_err());
        assert_eq!(file_stem("cpe:levels=3"), "cpe_levels_3");
    }
}
