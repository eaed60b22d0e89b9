//! Traffic traces: the trace file format, trace statistics and, with the
//! `bench` feature, seeded synthetic generators.
//!
//! Trace files ([`read_trace`], [`write_binary_trace`]) hold one address
//! per line as text, or a binary header ([`BINARY_TRACE_MAGIC`]) followed
//! by big-endian addresses; the benchmark's `trace:FILE` keys, the
//! Bloom-filter engine's tuning and the cost model read them.
//!
//! [`trace_stats`] summarises a trace against a table as \[NZ01\]'s Table 1
//! does: the share of traffic per matched prefix and per prefix length, the
//! most popular prefixes, and the total variation distance between the
//! first and second half of the trace (how stationary the traffic is).
//!
//! The generators (`generate` and its `TraceKind`s, `random_table`,
//! `generate_changes`, `generate_large_batches`, the adversarial update
//! streams) need the `bench` feature (rand): benchmarks and tests draw
//! their workloads from them, an embedder does not need them.

use crate::addr::Addr;

mod stats;
#[cfg(feature = "bench")]
mod synthetic;

pub use stats::{trace_stats, TraceStats};
#[cfg(feature = "bench")]
pub use synthetic::{
    adversarial_streams_v4, generate, generate_changes, generate_large_batches, host_routes_v4,
    random_table, AdversarialStream, TraceKind,
};

/// The most addresses a trace, a benchmark's key array or a set of random
/// check addresses may hold: 2^28, 16 times the benchmark's default key
/// array (1 GiB of IPv4 or 4 GiB of IPv6 addresses). A larger count is
/// refused before anything is allocated: it is a slip of the keyboard, not
/// a workload.
pub const MAX_ADDRESSES: usize = 1 << 28;

/// `count`, or an error naming [`MAX_ADDRESSES`] when it is over it.
pub fn check_address_count(count: usize) -> Result<usize, String> {
    if count > MAX_ADDRESSES {
        return Err(format!(
            "{count} addresses is over the limit of {MAX_ADDRESSES} (2^28)"
        ));
    }
    Ok(count)
}

pub use crate::error::KeyError;

/// The first bytes of a binary trace: magic, format version, then the family
/// (4 or 6) and two zero bytes; addresses follow as big-endian 4- or 16-byte
/// integers.
pub const BINARY_TRACE_MAGIC: &[u8; 5] = b"FKTR\x01";

/// Writes `addrs` as a binary trace (see [`BINARY_TRACE_MAGIC`]).
pub fn write_binary_trace<A: Addr>(
    out: &mut dyn std::io::Write,
    addrs: &[A],
) -> std::io::Result<()> {
    let family = if A::BITS == 32 { 4 } else { 6 };
    out.write_all(BINARY_TRACE_MAGIC)?;
    out.write_all(&[family, 0, 0])?;
    let width = A::BITS as usize / 8;
    for addr in addrs {
        out.write_all(&addr.to_u128().to_be_bytes()[16 - width..])?;
    }
    Ok(())
}

/// Reads a trace: a binary trace (see [`BINARY_TRACE_MAGIC`]; empty if of
/// the other family), or text with one address per line, where blank lines, `#`
/// comments and addresses of the other family are ignored.
pub fn read_trace<A: Addr>(path: &std::path::Path) -> Result<Vec<A>, KeyError> {
    use std::io::{BufRead, Read};
    let io = |error| KeyError::Io {
        path: path.to_path_buf(),
        error,
    };
    let too_many = || {
        KeyError::Load(crate::load::LoadError::file(
            path,
            format!("more than {} addresses in the trace", MAX_ADDRESSES),
        ))
    };
    let mut input = crate::load::open(path).map_err(|e| match e {
        crate::load::LoadError::Io { error, .. } => io(error),
        other => KeyError::Empty(other.to_string()),
    })?;
    if input
        .reader
        .fill_buf()
        .map_err(io)?
        .starts_with(BINARY_TRACE_MAGIC)
    {
        let family = if A::BITS == 32 { 4 } else { 6 };
        let width = A::BITS as usize / 8;
        let header_len = BINARY_TRACE_MAGIC.len() + 3;
        let most_bytes = header_len + MAX_ADDRESSES * width;
        let mut bytes = Vec::new();
        (&mut input.reader)
            .take(most_bytes as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(io)?;
        if bytes.len() > most_bytes {
            return Err(too_many());
        }
        if bytes.len() < header_len || !matches!(bytes[BINARY_TRACE_MAGIC.len()], 4 | 6) {
            return Err(KeyError::Empty(format!(
                "{}: truncated or unknown binary trace header",
                path.display()
            )));
        }
        if bytes[BINARY_TRACE_MAGIC.len()] != family {
            // As in text traces, addresses of the other family are ignored.
            return Ok(Vec::new());
        }
        let body = &bytes[header_len..];
        if body.len() % width != 0 {
            return Err(KeyError::Empty(format!(
                "{}: binary trace of {} bytes is not a whole number of {width}-byte addresses",
                path.display(),
                body.len()
            )));
        }
        return Ok(body
            .chunks_exact(width)
            .map(|chunk| A::from_u128(chunk.iter().fold(0u128, |acc, &b| acc << 8 | b as u128)))
            .collect());
    }
    let mut keys = Vec::new();
    let mut lines = crate::load::LineReader::new(input.reader, path);
    while let Some((line, bytes)) = lines.next_line().map_err(KeyError::Load)? {
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        let other_family = text.contains(':') != (A::BITS == 128);
        if other_family {
            continue;
        }
        match A::parse_addr(text) {
            Some(_) if keys.len() == MAX_ADDRESSES => return Err(too_many()),
            Some(addr) => keys.push(addr),
            None => {
                return Err(KeyError::BadAddress {
                    path: path.to_path_buf(),
                    line,
                    text: crate::prefix::excerpt(text),
                    family: A::FAMILY,
                })
            }
        }
    }
    Ok(keys)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::rib::Rib;

    /// A small IPv4 table the trace modules' tests share.
    pub(crate) fn table() -> Rib<u32> {
        Rib::from_pairs(
            [
                ("10.0.0.0/8", 1),
                ("10.1.0.0/16", 2),
                ("192.0.2.0/24", 3),
                ("198.51.100.7/32", 4),
            ]
            .iter()
            .map(|(t, l)| (t.parse().unwrap(), *l)),
        )
    }

    #[test]
    fn trace_files_parse_with_line_errors() {
        let dir = std::env::temp_dir().join(format!("fibkit-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.txt");
        std::fs::write(&good, "# comment\n10.0.0.1\n\n2001:db8::1\n192.0.2.3\n").unwrap();
        assert_eq!(
            read_trace::<u32>(&good).unwrap(),
            vec![0x0a00_0001, 0xc000_0203]
        );
        assert_eq!(read_trace::<u128>(&good).unwrap().len(), 1);
        let bad = dir.join("bad.txt");
        std::fs::write(&bad, "10.0.0.1\n10.0.0.256\n").unwrap();
        let binary = dir.join("trace.bin");
        let mut bytes = Vec::new();
        write_binary_trace::<u32>(&mut bytes, &[1, 0xc000_0203]).unwrap();
        std::fs::write(&binary, &bytes).unwrap();
        assert_eq!(read_trace::<u32>(&binary).unwrap(), vec![1, 0xc000_0203]);
        assert_eq!(read_trace::<u128>(&binary).unwrap(), vec![]);
        std::fs::write(&binary, &bytes[..6]).unwrap();
        assert!(read_trace::<u32>(&binary)
            .unwrap_err()
            .to_string()
            .contains("truncated"));
        std::fs::write(&binary, &bytes[..bytes.len() - 1]).unwrap();
        assert!(read_trace::<u32>(&binary)
            .unwrap_err()
            .to_string()
            .contains("not a whole number"));
        let mut v6 = Vec::new();
        write_binary_trace::<u128>(&mut v6, &[u128::MAX, 5]).unwrap();
        std::fs::write(&binary, &v6).unwrap();
        assert_eq!(read_trace::<u128>(&binary).unwrap(), vec![u128::MAX, 5]);
        let err = read_trace::<u32>(&bad).unwrap_err().to_string();
        assert!(
            err.ends_with("bad.txt:2: `10.0.0.256` is not an IPv4 address"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
