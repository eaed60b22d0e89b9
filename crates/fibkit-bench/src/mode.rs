//! How lookups are issued: [`Mode`].

// Named only by the doc links.
#[cfg(doc)]
use fibkit::{engine::Lookup, fib::Reader};

#[cfg(doc)]
use crate::Handle;

/// How lookups are issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// The engine's own per-key loop ([`Lookup::lookup_each`]): one call
    /// per slice, the loop inside the engine.
    Plain,
    /// One call per key through what the caller holds ([`Handle::lookup`];
    /// for `fibkit bench`, the registry's snapshot enum, whose lookup is a
    /// `match`).
    Key,
    /// One call per key through a [`Reader`] of a [`Fib`](fibkit::Fib): one
    /// atomic load per call, then the snapshot's lookup.
    Reader,
    /// The engine's batch lookup ([`Lookup::lookup_batch`]) on the whole
    /// key slice.
    Batch,
    /// The engine's batch lookup on consecutive slices of this many keys
    /// (32 is DPDK's burst).
    Burst(usize),
}

impl Mode {
    /// The modes a command line may name (`burstN` with N keys per call).
    pub const NAMES: &'static str = "plain, key, reader, batch, burstN";

    /// Whether each lookup is a call of its own or part of the engine's
    /// per-key loop: the modes in which `seq` keys can chain.
    pub fn is_per_key(self) -> bool {
        matches!(self, Mode::Plain | Mode::Key | Mode::Reader)
    }
}

/// The modes named by `names` (`plain`, `key`, `reader`, `batch`, `burstN`,
/// and `burst` for one `burstN` per size of `bursts`), in order, each once.
pub fn parse_modes(names: &[String], bursts: &[usize]) -> Result<Vec<Mode>, String> {
    let mut modes = Vec::new();
    for name in names {
        let expanded = match name.as_str() {
            "burst" => bursts.iter().map(|&keys| Mode::Burst(keys)).collect(),
            other => vec![other.parse::<Mode>()?],
        };
        for mode in expanded {
            if mode == Mode::Burst(0) {
                return Err("a burst needs at least 1 key".into());
            }
            if !modes.contains(&mode) {
                modes.push(mode);
            }
        }
    }
    if modes.is_empty() {
        return Err(format!("no mode named ({})", Mode::NAMES));
    }
    Ok(modes)
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Mode::Plain => f.write_str("plain"),
            Mode::Key => f.write_str("key"),
            Mode::Reader => f.write_str("reader"),
            Mode::Batch => f.write_str("batch"),
            Mode::Burst(keys) => write!(f, "burst{keys}"),
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        Ok(match text {
            "plain" => Mode::Plain,
            "key" => Mode::Key,
            "reader" => Mode::Reader,
            "batch" => Mode::Batch,
            _ => match text.strip_prefix("burst").map(str::parse::<usize>) {
                Some(Ok(keys)) if keys > 0 => Mode::Burst(keys),
                _ => {
                    return Err(format!(
                        "`{text}` is not a mode ({}, with N at least 1)",
                        Mode::NAMES
                    ))
                }
            },
        })
    }
}

impl serde::Serialize for Mode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Reads back what `Serialize` wrote (`plain`, `burst32`, ...), so stored
/// results can be plotted again.
impl<'de> serde::Deserialize<'de> for Mode {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = <String as serde::Deserialize>::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}
