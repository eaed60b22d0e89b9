//! The benchmark method of thesis 003, section 3.6.
//!
//! Keys are generated before timing starts into one array (default 2^24 keys,
//! seeded); every result is stored into a result array, so no lookup can be
//! optimised away; each measurement loops over the key array until at least
//! `min_seconds` have passed; a configuration is measured `runs` times and
//! reported by median, minimum and maximum, in million lookups per second
//! (Mlps) and nanoseconds per lookup.
//!
//! Key patterns ([`Pattern`]):
//! - `rnd`: uniform over the whole address space;
//! - `rnd-public`: uniform, but outside multicast and reserved space (IPv4, as
//!   the thesis does) or inside the global unicast `2000::/3` (IPv6);
//! - `announced`: uniform inside uniformly chosen prefixes of the table;
//! - `seq`: random keys, each XORed with the previous lookup's result, so the
//!   lookups serialise and latency, not throughput, is measured;
//! - `rep`: each key looked up 8 times within a sliding window of 8 keys
//!   (temporal locality, as in real traffic);
//! - `trace:FILE`: addresses from a file, one per line.
//!
//! With several threads, each looks up its own slice of the key array, pinned
//! to its own core when possible; the aggregate rate is reported.
//!
//! Modes: `plain` ([`Fib::lookup_each`], one lookup after another) and `batch`
//! ([`Fib::lookup_batch`], where engines keep several lookups in flight).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::addr::Addr;
use crate::engine::Lookup;
use crate::prefix::{Label, Prefix};
use crate::rib::Rib;

/// A key pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// Uniform over the whole space.
    Rnd,
    /// Uniform outside reserved and multicast space (IPv4) / inside 2000::/3 (IPv6).
    RndPublic,
    /// Uniform inside uniformly chosen prefixes of the table.
    Announced,
    /// Random keys chained through the previous result.
    Seq,
    /// Each key 8 times in a sliding window of 8.
    Rep,
    /// Keys read from a file, one address per line.
    Trace(PathBuf),
}

impl Pattern {
    /// The name used on the command line and in results.
    pub fn name(&self) -> String {
        match self {
            Pattern::Rnd => "rnd".into(),
            Pattern::RndPublic => "rnd-public".into(),
            Pattern::Announced => "announced".into(),
            Pattern::Seq => "seq".into(),
            Pattern::Rep => "rep".into(),
            Pattern::Trace(path) => format!("trace:{}", path.display()),
        }
    }
}

impl std::str::FromStr for Pattern {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        Ok(match text {
            "rnd" => Pattern::Rnd,
            "rnd-public" => Pattern::RndPublic,
            "announced" => Pattern::Announced,
            "seq" => Pattern::Seq,
            "rep" => Pattern::Rep,
            _ => match text.strip_prefix("trace:") {
                Some(path) if !path.is_empty() => Pattern::Trace(PathBuf::from(path)),
                _ => {
                    return Err(format!(
                        "unknown key pattern `{text}` (known: rnd, rnd-public, announced, seq, rep, trace:FILE)"
                    ))
                }
            },
        })
    }
}

/// How lookups are issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// One lookup after another ([`Fib::lookup_each`]).
    Plain,
    /// The engine's batch lookup ([`Fib::lookup_batch`]).
    Batch,
}

/// Why keys could not be generated.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The trace file could not be read.
    #[error("{path}: {error}")]
    Io {
        /// The trace file.
        path: PathBuf,
        /// The error (in the message, not a `source()`, so that a printed
        /// chain of causes does not repeat it).
        error: std::io::Error,
    },
    /// A line of the trace is over the length limit or unreadable, or the
    /// trace holds more than [`crate::trace::MAX_ADDRESSES`] addresses.
    #[error(transparent)]
    Load(crate::load::LoadError),
    /// A line of the trace file is not an address of the family.
    #[error("{path}:{line}: `{text}` is not an {family} address")]
    BadAddress {
        /// The trace file.
        path: PathBuf,
        /// Line number from 1.
        line: u64,
        /// The offending text.
        text: String,
        /// The family expected.
        family: crate::addr::Family,
    },
    /// The trace file holds no address, or the table no prefix for `announced`.
    #[error("{0}")]
    Empty(String),
}

fn is_public_v4(addr: u32) -> bool {
    // 0/8, 10/8, 100.64/10, 127/8, 169.254/16, 172.16/12, 192.168/16, and
    // 224/3 (multicast and class E).
    const RESERVED: [(u32, u8); 8] = [
        (0x0000_0000, 8),
        (0x0a00_0000, 8),
        (0x6440_0000, 10),
        (0x7f00_0000, 8),
        (0xa9fe_0000, 16),
        (0xac10_0000, 12),
        (0xc0a8_0000, 16),
        (0xe000_0000, 3),
    ];
    !RESERVED.iter().any(|&(net, plen)| addr.masked(plen) == net)
}

/// Generates `count` keys of `pattern` (for `seq`, the random base keys).
pub fn generate_keys<A: Addr>(
    pattern: &Pattern,
    count: usize,
    seed: u64,
    rib: &Rib<A>,
) -> Result<Vec<A>, KeyError> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut uniform = || A::from_u128(rng.random::<u128>());
    Ok(match pattern {
        Pattern::Rnd | Pattern::Seq => (0..count).map(|_| uniform()).collect(),
        Pattern::RndPublic => {
            let mut keys = Vec::with_capacity(count);
            while keys.len() < count {
                let key = uniform();
                let public = match A::BITS {
                    32 => is_public_v4(key.to_u128() as u32),
                    _ => key.to_u128() >> 125 == 1, // 2000::/3
                };
                if public {
                    keys.push(key);
                }
            }
            keys
        }
        Pattern::Announced => {
            let prefixes: Vec<Prefix<A>> = rib.iter().map(|(prefix, _)| prefix).collect();
            if prefixes.is_empty() {
                return Err(KeyError::Empty(
                    "the table has no prefix to draw `announced` keys from".into(),
                ));
            }
            let mut rng = SmallRng::seed_from_u64(seed ^ 0xa11_0ced);
            (0..count)
                .map(|_| {
                    let prefix = prefixes[rng.random_range(0..prefixes.len())];
                    let host = rng.random::<u128>() & !A::mask(prefix.plen()).to_u128();
                    A::from_u128(prefix.addr().to_u128() | host)
                })
                .collect()
        }
        Pattern::Rep => {
            let base: Vec<A> = (0..count / 8 + 8).map(|_| uniform()).collect();
            (0..count).map(|i| base[i / 8 + i % 8]).collect()
        }
        Pattern::Trace(path) => {
            let keys = read_trace::<A>(path)?;
            if keys.is_empty() {
                return Err(KeyError::Empty(format!(
                    "{}: no {} address in the trace",
                    path.display(),
                    A::FAMILY
                )));
            }
            // Repeat the trace to `count` keys, so every pattern times the same work.
            (0..count).map(|i| keys[i % keys.len()]).collect()
        }
    })
}

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
            format!(
                "more than {} addresses in the trace",
                crate::trace::MAX_ADDRESSES
            ),
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
        let most_bytes = header_len + crate::trace::MAX_ADDRESSES * width;
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
            Some(_) if keys.len() == crate::trace::MAX_ADDRESSES => return Err(too_many()),
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

/// Timing settings.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Settings {
    /// Each run lasts at least this long (whole passes over the keys).
    pub min_seconds: f64,
    /// Runs per configuration (the median is reported).
    pub runs: usize,
    /// Threads, each looking up its own slice of the keys.
    pub threads: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            min_seconds: 1.0,
            runs: 5,
            threads: 1,
        }
    }
}

/// The result of timing one engine on one key pattern and mode.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Measurement {
    /// Engine spec.
    pub engine: String,
    /// Key pattern name.
    pub pattern: String,
    /// Plain or batch.
    pub mode: Mode,
    /// Threads used.
    pub threads: usize,
    /// Keys in the array.
    pub keys: usize,
    /// Mlps of every run, in order.
    pub runs_mlps: Vec<f64>,
    /// Median Mlps.
    pub median_mlps: f64,
    /// Slowest run.
    pub min_mlps: f64,
    /// Fastest run.
    pub max_mlps: f64,
    /// Nanoseconds per lookup at the median (per thread: threads / median).
    pub ns_per_lookup: f64,
    /// A checksum of the results (same keys and table give the same value for
    /// every correct engine; for `seq` it depends on the chaining too).
    pub checksum: u64,
}

fn checksum(results: &[Option<Label>]) -> u64 {
    results.iter().fold(0u64, |sum, r| {
        sum.wrapping_mul(31)
            .wrapping_add(r.map_or(0, |l| l as u64 + 1))
    })
}

/// One timed pass set on one thread: passes over `keys` until `min` elapsed.
/// Returns (lookups done, elapsed).
fn timed_passes<A: Addr, L: Lookup<A> + ?Sized>(
    engine: &L,
    keys: &[A],
    out: &mut [Option<Label>],
    chained: bool,
    mode: Mode,
    min: Duration,
) -> (u64, Duration) {
    let start = Instant::now();
    let mut lookups = 0u64;
    let mut chain = 0;
    loop {
        if chained {
            chain = engine.lookup_chained(keys, out, chain);
        } else {
            match mode {
                Mode::Plain => engine.lookup_each(keys, out),
                Mode::Batch => engine.lookup_batch(keys, out),
            }
        }
        lookups += keys.len() as u64;
        let elapsed = start.elapsed();
        if elapsed >= min {
            std::hint::black_box(&*out);
            return (lookups, elapsed);
        }
    }
}

/// Times `engine` on `keys` (generated for `pattern`): `settings.runs` runs of
/// at least `settings.min_seconds` each, on `settings.threads` threads.
/// `seq` always runs chained (its mode is reported as plain).
pub fn measure<A: Addr, L: Lookup<A> + ?Sized>(
    name: &str,
    engine: &L,
    pattern: &Pattern,
    keys: &[A],
    mode: Mode,
    settings: &Settings,
) -> Measurement {
    let chained = *pattern == Pattern::Seq;
    let mode = if chained { Mode::Plain } else { mode };
    let threads = settings.threads.max(1);
    let min = Duration::from_secs_f64(settings.min_seconds.max(0.0));
    let slice_len = keys.len().div_ceil(threads).max(1);
    let mut outs: Vec<Vec<Option<Label>>> = keys
        .chunks(slice_len)
        .map(|slice| vec![None; slice.len()])
        .collect();
    // Threads are pinned to distinct cores where the system allows it, so
    // runs do not migrate; with more threads than cores they wrap around.
    let cores = core_affinity::get_core_ids().unwrap_or_default();
    let mut runs = Vec::with_capacity(settings.runs);
    for _ in 0..settings.runs.max(1) {
        let wall = Instant::now();
        let lookups: u64 = std::thread::scope(|scope| {
            let handles: Vec<_> = keys
                .chunks(slice_len)
                .zip(outs.iter_mut())
                .enumerate()
                .map(|(index, (slice, out))| {
                    let core = cores.get(index % cores.len().max(1)).copied();
                    scope.spawn(move || {
                        if let Some(core) = core {
                            core_affinity::set_for_current(core);
                        }
                        timed_passes(engine, slice, out, chained, mode, min).0
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("benchmark thread panicked"))
                .sum()
        });
        runs.push(lookups as f64 / wall.elapsed().as_secs_f64() / 1e6);
    }
    let mut sorted = runs.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    Measurement {
        engine: name.to_string(),
        pattern: pattern.name(),
        mode,
        threads,
        keys: keys.len(),
        runs_mlps: runs,
        median_mlps: median,
        min_mlps: sorted[0],
        max_mlps: sorted[sorted.len() - 1],
        ns_per_lookup: 1e3 * threads as f64 / median,
        checksum: outs
            .iter()
            .map(|out| checksum(out))
            .fold(0, |a, b| a.wrapping_mul(1_000_003).wrapping_add(b)),
    }
}

/// The practical per-core ceiling: one load from a 2^16-entry array per key
/// (indexed by the key's top 16 bits), through the same loops as an engine.
#[derive(Clone, Debug)]
pub struct Ceiling {
    table: Vec<Option<Label>>,
}

impl Default for Ceiling {
    fn default() -> Self {
        Ceiling {
            table: (0..1u32 << 16).map(Some).collect(),
        }
    }
}

impl<A: Addr> Lookup<A> for Ceiling {
    fn memory_bytes(&self) -> usize {
        self.table.len() * std::mem::size_of::<Option<Label>>()
    }
    #[inline]
    fn lookup(&self, addr: A) -> Option<Label> {
        self.table[(addr.to_u128() >> (A::BITS - 16)) as usize & 0xffff]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_parse_and_name() {
        for name in [
            "rnd",
            "rnd-public",
            "announced",
            "seq",
            "rep",
            "trace:/tmp/x",
        ] {
            assert_eq!(name.parse::<Pattern>().unwrap().name(), name);
        }
        assert!("trace:".parse::<Pattern>().is_err());
        assert!("zipf"
            .parse::<Pattern>()
            .unwrap_err()
            .contains("known: rnd"));
    }

    #[test]
    fn keys_are_seeded_and_shaped() {
        let rib = Rib::<u32>::from_pairs([("10.0.0.0/8".parse().unwrap(), 1)]);
        let a = generate_keys::<u32>(&Pattern::Rnd, 1000, 1, &rib).unwrap();
        let b = generate_keys::<u32>(&Pattern::Rnd, 1000, 1, &rib).unwrap();
        let c = generate_keys::<u32>(&Pattern::Rnd, 1000, 2, &rib).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        let public = generate_keys::<u32>(&Pattern::RndPublic, 1000, 1, &rib).unwrap();
        assert!(public.iter().all(|&k| is_public_v4(k)));
        let announced = generate_keys::<u32>(&Pattern::Announced, 1000, 1, &rib).unwrap();
        assert!(announced.iter().all(|&k| k >> 24 == 10));
        let rep = generate_keys::<u32>(&Pattern::Rep, 800, 1, &rib).unwrap();
        // Every key of the middle of the stream occurs exactly 8 times.
        let middle = rep[400];
        assert_eq!(rep.iter().filter(|&&k| k == middle).count(), 8);
        let v6 = generate_keys::<u128>(&Pattern::RndPublic, 100, 1, &Rib::new()).unwrap();
        assert!(v6.iter().all(|&k| k >> 125 == 1));
        assert!(generate_keys::<u128>(&Pattern::Announced, 10, 1, &Rib::new()).is_err());
    }

    #[test]
    fn measure_reports_runs_and_checksums_agree() {
        let rib = Rib::<u32>::from_pairs([
            ("10.0.0.0/8".parse().unwrap(), 1),
            ("0.0.0.0/1".parse().unwrap(), 2),
        ]);
        let radix = crate::build("radix", &rib).unwrap();
        let dir = crate::build("dir24-8", &rib).unwrap();
        let keys = generate_keys::<u32>(&Pattern::Rnd, 4096, 3, &rib).unwrap();
        let settings = Settings {
            min_seconds: 0.0,
            runs: 3,
            threads: 2,
        };
        let a = measure(
            "radix",
            &radix,
            &Pattern::Rnd,
            &keys,
            Mode::Plain,
            &settings,
        );
        let b = measure(
            "dir24-8",
            &dir,
            &Pattern::Rnd,
            &keys,
            Mode::Batch,
            &settings,
        );
        assert_eq!(a.runs_mlps.len(), 3);
        assert!(a.min_mlps <= a.median_mlps && a.median_mlps <= a.max_mlps);
        assert_eq!(a.checksum, b.checksum);
        let seq_a = measure(
            "radix",
            &radix,
            &Pattern::Seq,
            &keys,
            Mode::Batch,
            &settings,
        );
        let seq_b = measure(
            "dir24-8",
            &dir,
            &Pattern::Seq,
            &keys,
            Mode::Plain,
            &settings,
        );
        assert_eq!(seq_a.mode, Mode::Plain);
        assert_eq!(seq_a.checksum, seq_b.checksum);
        let json = serde_json::to_value(&a).unwrap();
        for field in [
            "engine",
            "pattern",
            "mode",
            "threads",
            "runs_mlps",
            "median_mlps",
            "ns_per_lookup",
        ] {
            assert!(json.get(field).is_some(), "{field} missing");
        }
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
