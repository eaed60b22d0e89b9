//! Key generation: the patterns of [`Pattern`] and [`generate_keys`].

use std::path::PathBuf;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use fibkit::addr::Addr;
use fibkit::prefix::Prefix;
use fibkit::rib::Rib;
use fibkit::trace::KeyError;

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

pub(crate) fn is_public_v4(addr: u32) -> bool {
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
            let keys = fibkit::trace::read_trace::<A>(path)?;
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
