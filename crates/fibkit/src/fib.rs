//! The engine contract, engine specs and the registry.
//!
//! An engine is a read-optimised data plane built from a [`Rib`] (the control
//! plane). Every engine implements [`Fib`]; the command line and library users
//! pick one at run time with a spec string such as `radix`, `dir24-8` or
//! `dxr:k=20`, parsed by [`EngineSpec`] and built by [`build`].
//!
//! Updates go to the reference table first; the engine is then told which
//! prefixes changed ([`Fib::update`]) and either patches itself from the
//! reference table or reports [`BuildError::UpdateUnsupported`], in which case
//! [`apply_changes`] rebuilds it.

use std::collections::HashSet;
use std::fmt;

use crate::addr::{Addr, Family};
use crate::prefix::{Label, Prefix};
use crate::rib::{Change, Rib};

/// A longest-prefix-match lookup engine for addresses of type `A`.
pub trait Fib<A: Addr>: Send + Sync {
    /// The engine's spec string, as [`build`] accepts it (`dxr:k=20`).
    fn name(&self) -> String;

    /// Bytes of memory the lookup structures occupy (build-only state excluded).
    fn memory_bytes(&self) -> usize;

    /// The label of the longest prefix containing `addr`, or `None`.
    fn lookup(&self, addr: A) -> Option<Label>;

    /// Looks up every address of `addrs` into the same position of `out`.
    /// Engines override it to keep several lookups in flight (prefetching);
    /// the default is [`Fib::lookup_each`].
    ///
    /// # Panics
    /// If `out` is shorter than `addrs`.
    fn lookup_batch(&self, addrs: &[A], out: &mut [Option<Label>]) {
        self.lookup_each(addrs, out);
    }

    /// The plain loop: one [`Fib::lookup`] per address, in order. Not meant to
    /// be overridden: as a provided method it is compiled for each engine, so
    /// a caller holding a `&dyn Fib` pays one dynamic call per slice, not per
    /// address (the benchmark's "plain" mode).
    ///
    /// # Panics
    /// If `out` is shorter than `addrs`.
    fn lookup_each(&self, addrs: &[A], out: &mut [Option<Label>]) {
        assert!(out.len() >= addrs.len(), "output slice shorter than input");
        for (addr, result) in addrs.iter().zip(out.iter_mut()) {
            *result = self.lookup(*addr);
        }
    }

    /// Dependent lookups (the thesis' SEQ pattern): address `i` is
    /// `addrs[i]` XORed with the label found for address `i - 1` (0 for none),
    /// so each lookup waits for the previous one. `seed` is XORed into the
    /// first address. Returns the last label (or 0), to chain calls.
    ///
    /// # Panics
    /// If `out` is shorter than `addrs`.
    fn lookup_chained(&self, addrs: &[A], out: &mut [Option<Label>], seed: Label) -> Label {
        assert!(out.len() >= addrs.len(), "output slice shorter than input");
        let mut previous = seed;
        for (addr, result) in addrs.iter().zip(out.iter_mut()) {
            let label = self.lookup(A::from_u128(addr.to_u128() ^ previous as u128));
            *result = label;
            previous = label.unwrap_or(0);
        }
        previous
    }

    /// Brings the engine in line with `rib` after the prefixes in `changed`
    /// were inserted, removed or relabelled there. Engines that cannot patch
    /// themselves return [`BuildError::UpdateUnsupported`] (the default).
    fn update(&mut self, rib: &Rib<A>, changed: &[Prefix<A>]) -> Result<(), BuildError> {
        let _ = (rib, changed);
        Err(BuildError::UpdateUnsupported {
            engine: self.name(),
        })
    }

    /// Engine-specific statistics as `(name, value)` rows, for `fibkit stats`.
    fn stats(&self) -> Vec<(String, String)> {
        Vec::new()
    }
}

/// Why an engine could not be built or updated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// The spec names no known engine.
    #[error("unknown engine `{name}` (known: {known})")]
    UnknownEngine {
        /// The name given.
        name: String,
        /// Comma-separated names of the registered engines.
        known: String,
    },
    /// The spec string is malformed.
    #[error("bad engine spec `{spec}`: {why}")]
    BadSpec {
        /// The whole spec.
        spec: String,
        /// What is wrong.
        why: String,
    },
    /// The engine does not handle this address family.
    #[error("engine `{engine}` does not support {family} (try `radix`)")]
    UnsupportedFamily {
        /// The engine name.
        engine: String,
        /// The family asked for.
        family: Family,
    },
    /// The table does not fit the engine's layout.
    #[error("engine `{engine}` cannot encode this table: {why}")]
    Limit {
        /// The engine spec.
        engine: String,
        /// Which limit was hit and what would work instead.
        why: String,
    },
    /// The engine cannot apply changes in place; rebuild it instead.
    #[error("engine `{engine}` has no incremental update")]
    UpdateUnsupported {
        /// The engine spec.
        engine: String,
    },
}

/// A parsed engine spec: `name` or `name:key=value,flag,...`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineSpec {
    /// The engine name (`dxr`).
    pub name: String,
    /// Parameters in the order given; flags have no value.
    pub params: Vec<(String, Option<String>)>,
    text: String,
}

impl EngineSpec {
    /// Parses `name[:key=value|flag[,...]]`.
    pub fn parse(text: &str) -> Result<Self, BuildError> {
        let bad = |why: &str| BuildError::BadSpec {
            spec: text.to_string(),
            why: why.to_string(),
        };
        let (name, rest) = match text.split_once(':') {
            Some((name, rest)) => (name, Some(rest)),
            None => (text, None),
        };
        let name = name.trim();
        if name.is_empty() {
            return Err(bad("empty engine name"));
        }
        let mut params = Vec::new();
        if let Some(rest) = rest {
            for item in rest.split(',') {
                let item = item.trim();
                if item.is_empty() {
                    return Err(bad("empty parameter"));
                }
                let (key, value) = match item.split_once('=') {
                    Some((key, value)) => (key.trim(), Some(value.trim().to_string())),
                    None => (item, None),
                };
                if key.is_empty() {
                    return Err(bad("parameter without a name"));
                }
                if params.iter().any(|(k, _): &(String, _)| k == key) {
                    return Err(bad(&format!("parameter `{key}` given twice")));
                }
                params.push((key.to_string(), value));
            }
        }
        Ok(EngineSpec {
            name: name.to_string(),
            params,
            text: text.to_string(),
        })
    }

    /// The spec as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Fails unless every parameter is one of `known`.
    pub fn expect_only(&self, known: &[&str]) -> Result<(), BuildError> {
        for (key, _) in &self.params {
            if !known.contains(&key.as_str()) {
                return Err(self.error(format!(
                    "unknown parameter `{key}` for `{}` (known: {})",
                    self.name,
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                )));
            }
        }
        Ok(())
    }

    /// The numeric value of `key`, if given; an error if it is not a number
    /// in `range`.
    pub fn number(
        &self,
        key: &str,
        range: std::ops::RangeInclusive<u32>,
    ) -> Result<Option<u32>, BuildError> {
        let Some((_, value)) = self.params.iter().find(|(k, _)| k == key) else {
            return Ok(None);
        };
        let value = value
            .as_deref()
            .ok_or_else(|| self.error(format!("`{key}` needs a value")))?;
        match value.parse::<u32>() {
            Ok(number) if range.contains(&number) => Ok(Some(number)),
            _ => Err(self.error(format!(
                "`{key}={value}` is not a number in {}..={}",
                range.start(),
                range.end()
            ))),
        }
    }

    /// The comma-free list value of `key` (`strides=16+8+8`), if given.
    pub fn value(&self, key: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| v.as_deref())
    }

    /// Whether the flag `key` is present (with no value, or `=true`/`=1`).
    pub fn flag(&self, key: &str) -> Result<bool, BuildError> {
        match self.params.iter().find(|(k, _)| k == key) {
            None => Ok(false),
            Some((_, None)) => Ok(true),
            Some((_, Some(v))) if v == "true" || v == "1" => Ok(true),
            Some((_, Some(v))) if v == "false" || v == "0" => Ok(false),
            Some((_, Some(v))) => {
                Err(self.error(format!("flag `{key}` takes no value, got `{v}`")))
            }
        }
    }

    /// A [`BuildError::BadSpec`] for this spec.
    pub fn error(&self, why: String) -> BuildError {
        BuildError::BadSpec {
            spec: self.text.clone(),
            why,
        }
    }
}

impl fmt::Display for EngineSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A registered engine: its name, families and one-line description.
#[derive(Clone, Copy, Debug)]
pub struct EngineInfo {
    /// The spec name.
    pub name: &'static str,
    /// Whether it builds IPv4 tables.
    pub ipv4: bool,
    /// Whether it builds IPv6 tables.
    pub ipv6: bool,
    /// Parameters and what the engine is.
    pub about: &'static str,
}

/// Every engine [`build`] knows, in the order `--help` lists them.
pub const ENGINES: &[EngineInfo] = &[
    EngineInfo {
        name: "radix",
        ipv4: true,
        ipv6: true,
        about: "the reference PATRICIA trie itself (slow, always right)",
    },
    EngineInfo {
        name: "dir24-8",
        ipv4: true,
        ipv6: false,
        about: "DPDK-style 2^24 direct table plus 256-entry groups; the baseline",
    },
    EngineInfo {
        name: "cpe",
        ipv4: true,
        ipv6: true,
        about: "multibit trie by controlled prefix expansion, DP-chosen strides \
                (levels=K, strides=16+8+8, fixed, nopush (updatable), packed, cap=C)",
    },
    EngineInfo {
        name: "dxr",
        ipv4: true,
        ipv6: false,
        about: "Zec's DXR: dxr:k=16..24 direct chunks + range binary search, or dxr:d=12..16,x=X",
    },
    EngineInfo {
        name: "lctrie",
        ipv4: true,
        ipv6: true,
        about: "Linux fib_trie dynamic LC-trie; lookup=improved (default) or lookup=classic",
    },
];

/// Address families the registry can build engines for (`u32` and `u128`).
pub trait EngineFamily: Addr {
    /// Builds the engine `spec` for this family from `rib`.
    fn build_engine(spec: &EngineSpec, rib: &Rib<Self>) -> Result<Box<dyn Fib<Self>>, BuildError>;
}

impl EngineFamily for u32 {
    fn build_engine(spec: &EngineSpec, rib: &Rib<u32>) -> Result<Box<dyn Fib<u32>>, BuildError> {
        use crate::engines::*;
        Ok(match spec.name.as_str() {
            "radix" => Box::new(radix::Radix::build(spec, rib)?),
            "dir24-8" | "dir24_8" => Box::new(dir24_8::Dir24_8::build(spec, rib)?),
            "cpe" => cpe::build(spec, rib)?,
            "dxr" => Box::new(dxr::Dxr::build(spec, rib)?),
            "lctrie" => Box::new(lctrie::LcTrie::build(spec, rib)?),
            _ => return Err(unknown::<Self>(spec)),
        })
    }
}

impl EngineFamily for u128 {
    fn build_engine(spec: &EngineSpec, rib: &Rib<u128>) -> Result<Box<dyn Fib<u128>>, BuildError> {
        use crate::engines::*;
        Ok(match spec.name.as_str() {
            "radix" => Box::new(radix::Radix::build(spec, rib)?),
            "cpe" => cpe::build(spec, rib)?,
            "lctrie" => Box::new(lctrie::LcTrie::build(spec, rib)?),
            _ => return Err(unknown::<Self>(spec)),
        })
    }
}

fn unknown<A: Addr>(spec: &EngineSpec) -> BuildError {
    match ENGINES
        .iter()
        .find(|info| info.name == spec.name || info.name.replace('-', "_") == spec.name)
    {
        Some(info) => BuildError::UnsupportedFamily {
            engine: info.name.to_string(),
            family: A::FAMILY,
        },
        None => BuildError::UnknownEngine {
            name: spec.name.clone(),
            known: ENGINES
                .iter()
                .map(|info| info.name)
                .collect::<Vec<_>>()
                .join(", "),
        },
    }
}

/// Builds the engine described by `spec` (`"dxr:k=20"`) from `rib`.
pub fn build<A: EngineFamily>(spec: &str, rib: &Rib<A>) -> Result<Box<dyn Fib<A>>, BuildError> {
    A::build_engine(&EngineSpec::parse(spec)?, rib)
}

/// What [`apply_changes`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UpdateSummary {
    /// Changes that altered the reference table.
    pub effective: usize,
    /// Changes that left it as it was (withdraw of an absent prefix, same label).
    pub no_ops: usize,
    /// Whether the engine had to be rebuilt rather than patched.
    pub rebuilt: bool,
}

/// Applies `changes` to `rib`, then brings `engine` in line: incrementally if
/// it can, by a rebuild from the same spec otherwise.
pub fn apply_changes<A: EngineFamily>(
    engine: &mut Box<dyn Fib<A>>,
    rib: &mut Rib<A>,
    changes: &[Change<A>],
) -> Result<UpdateSummary, BuildError> {
    let mut summary = UpdateSummary::default();
    let mut changed = Vec::with_capacity(changes.len());
    for change in changes {
        if rib.apply(*change) {
            summary.effective += 1;
            changed.push(change.prefix());
        } else {
            summary.no_ops += 1;
        }
    }
    if changed.is_empty() {
        return Ok(summary);
    }
    changed.sort_unstable();
    changed.dedup();
    match engine.update(rib, &changed) {
        Ok(()) => {}
        Err(BuildError::UpdateUnsupported { .. }) => {
            *engine = build(&engine.name(), rib)?;
            summary.rebuilt = true;
        }
        Err(other) => return Err(other),
    }
    Ok(summary)
}

/// Maps labels to small dense indices (and back), in first-seen order.
/// Engines use it to store label indices in narrow fields.
#[derive(Clone, Debug, Default)]
pub struct LabelTable {
    labels: Vec<Label>,
    index: std::collections::HashMap<Label, u32>,
}

impl LabelTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// The index of `label`, adding it if new.
    pub fn intern(&mut self, label: Label) -> u32 {
        if let Some(&index) = self.index.get(&label) {
            return index;
        }
        let index = self.labels.len() as u32;
        self.labels.push(label);
        self.index.insert(label, index);
        index
    }

    /// The label at `index`.
    #[inline]
    pub fn label(&self, index: u32) -> Label {
        self.labels[index as usize]
    }

    /// All labels by index.
    pub fn labels(&self) -> &[Label] {
        &self.labels
    }

    /// Number of distinct labels.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Whether no label was interned.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }
}

/// Counts how many prefixes of each length `rib` holds (index = length).
pub fn prefix_length_histogram<A: Addr>(rib: &Rib<A>) -> Vec<usize> {
    let mut counts = vec![0; A::BITS as usize + 1];
    for (prefix, _) in rib.iter() {
        counts[prefix.plen() as usize] += 1;
    }
    counts
}

/// Number of distinct labels in `rib`.
pub fn distinct_labels<A: Addr>(rib: &Rib<A>) -> usize {
    rib.iter()
        .map(|(_, label)| label)
        .collect::<HashSet<_>>()
        .len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_parsing() {
        let spec = EngineSpec::parse("dxr:k=20,fixed").unwrap();
        assert_eq!(spec.name, "dxr");
        assert_eq!(spec.number("k", 16..=24).unwrap(), Some(20));
        assert_eq!(spec.number("d", 12..=16).unwrap(), None);
        assert!(spec.flag("fixed").unwrap());
        assert!(!spec.flag("nopush").unwrap());
        assert!(spec.expect_only(&["k", "fixed"]).is_ok());
        let err = spec.expect_only(&["k"]).unwrap_err().to_string();
        assert!(err.contains("unknown parameter `fixed`"), "{err}");
        let err = EngineSpec::parse("dxr:k=99")
            .unwrap()
            .number("k", 16..=24)
            .unwrap_err();
        assert!(err
            .to_string()
            .contains("`k=99` is not a number in 16..=24"));
        assert!(EngineSpec::parse("").is_err());
        assert!(EngineSpec::parse("dxr:").is_err());
        assert!(EngineSpec::parse("dxr:k=1,k=2").is_err());
        assert!(EngineSpec::parse("dxr:=3").is_err());
    }

    #[test]
    fn registry_errors_name_the_problem() {
        let rib4 = Rib::<u32>::new();
        let rib6 = Rib::<u128>::new();
        let err = build("nosuch", &rib4).err().unwrap().to_string();
        assert!(
            err.contains("unknown engine `nosuch`") && err.contains("radix"),
            "{err}"
        );
        let err = build("dir24-8", &rib6).err().unwrap().to_string();
        assert!(err.contains("does not support IPv6"), "{err}");
        let err = build("radix:k=3", &rib4).err().unwrap().to_string();
        assert!(err.contains("unknown parameter `k`"), "{err}");
    }

    #[test]
    fn label_table_interns_in_order() {
        let mut table = LabelTable::new();
        assert_eq!(table.intern(700), 0);
        assert_eq!(table.intern(5), 1);
        assert_eq!(table.intern(700), 0);
        assert_eq!(table.label(1), 5);
        assert_eq!(table.len(), 2);
    }
}
