//! `bloom`: longest-prefix match with a Bloom filter over (prefix, length)
//! keys whose hits are confirmed in an exact hash table, so a false
//! positive costs time, never a wrong answer. Two searches over the same
//! structure, IPv4 and IPv6 with one generic code path:
//!
//! - `bloom:search=linear`: the linear search of Dharmapurikar,
//!   Krishnamurthy and Taylor ("Longest Prefix Matching Using Bloom
//!   Filters", SIGCOMM 2003; \[Yeg18\], Algorithm 1): test the table's
//!   distinct lengths from the longest down; the first key the filter has
//!   and the exact table holds as a prefix is the answer.
//! - `bloom:search=guided` (the default): Yegorov's guided search (\[Yeg18\],
//!   Algorithms 2 and 3). The filter also encodes the walk of a binary
//!   search tree over the distinct lengths ([`tree`]): bit 0 of a key says
//!   "go right" (a prefix or a *marker*, the first bits of a longer prefix
//!   on whose insertion path the node is), and bits `1..=n` of a marker hold
//!   the index of its best-matching-prefix (BMP) length, `n` bits enough for
//!   every index plus the all-ones code that means "this key is a prefix".
//!   A lookup walks the tree testing bit 0 only, decodes the BMP of the last
//!   key that hit, confirms it with the key's remaining bits `n+1..k`, and
//!   falls back to the linear search below the last hit when a check fails.
//!
//! # Exactness: where this differs from the paper
//! The paper's Algorithm 3 can answer wrong on some tables: (1) Algorithm 2
//! stores in every marker the BMP of the *prefix* being inserted, so a
//! marker shared by prefixes with different BMPs holds the OR of their
//! codes, and a BMP longer than the marker is wrong for addresses under
//! the marker but not under that BMP; (2) after a false-positive "go right"
//! bit, a decoded BMP that the filter and the FIB confirm can be a shorter
//! prefix than the true match. fibkit keeps the paper's walk, decode and
//! confirmation, with two changes that make every answer exact, as
//! Waldvogel et al.'s binary search on lengths has it: a marker's BMP is the
//! best match *of the marker's own bits* (from the reference table), and
//! the exact table holds markers as well as prefixes, each with the label
//! its lookups answer. The one exact-table lookup of a guided search is of
//! the last-hit key: if the table holds it (a prefix or a real marker), its
//! label is the answer; if not (a false positive), the search falls back.
//! No prefix longer than the last hit can match (a present key's bits are
//! always set, so a walk never skips one), which makes both the answer and
//! the fallback's starting point right.
//!
//! # Layout
//! ```text
//! filter[block]     512-bit blocks (one cache line each); a key's k bits are
//!                   all in block hi32(h) * blocks >> 32, bit i at position
//!                   (lo32(h) + i * step) mod 512 (filter.rs, KeyHash)
//!   bit 0             guided: go right (a prefix, or a marker)
//!   bits 1..=n        guided markers: the BMP length index (all ones: prefix)
//!   bits n+1..k-1     confirmation (a prefix has all k bits)
//! lengths[i]        the distinct prefix lengths, ascending, from index 1;
//!                   lengths[0] = 0 (the default route)
//! tree[node]        {plen, index, left, right}, root at 0 (guided only)
//! table[slot]       {addr, value} exact table (exact.rs): linear probing
//!                   from lo32(h) * slots >> 32; value = plen (8 bits) |
//!                   marker (1 bit) | label index (23 bits), 0 = empty
//! results[index]    label slots; results[0] = the default route (or none)
//! ```
//!
//! # Memory accesses per lookup
//! Linear: one filter line per length tested (from the longest down to the
//! match), one exact-table line (rarely two) per filter positive. Guided:
//! one filter line per tree node on the walk (5 for the 25 IPv4 lengths,
//! 6 for the 47 of dfz-v6), the last-hit key's line again (cached) for the
//! decode, one more line for a BMP key's confirmation, and one exact-table
//! line; plus the linear search below the last hit when it falls back.
//! The counting path ([`Bloom::count_lookups`]) counts these as the paper
//! does: bit lookups, hash computations, exact-table (FIB) lookups and
//! fallbacks.
//!
//! # Updates
//! Inserts, withdrawals and relabels patch the filter and the exact table:
//! a prefix's key and its markers' reference counts, and the BMP of every
//! marker under it. Removing a key from the filter needs to know which of
//! its bits no other key sets: the updater keeps a counting filter (four-bit
//! counters, four times the filter's size) beside the snapshot's plain one.
//! A prefix length the tree does not have (guided search), a batch that
//! would touch more than half the keys, or a filter grown past one and a
//! half times its built set bits asks for a rebuild, so no update costs
//! more than one.
//!
//! # Limits
//! `k` from 1 to [`MAX_K`]; guided search needs `k > n` (`n` from 1 to 8
//! bits: a BMP code per marker); filters of at most [`MAX_FILTER_BITS`]
//! bits; at most [`exact::MAX_LABELS`] distinct labels; exact tables of
//! at most 2^32 slots. A table beyond a limit fails to build with a
//! [`BuildError`] naming it.
//!
//! Files: `lookup` (the snapshot and its searches), `build`, `update`,
//! `filter` (the blocked filter and its counting twin), `exact` (the exact
//! table), `tree` (the lengths' search tree), `tests`.

mod build;
mod exact;
mod filter;
mod lookup;
pub mod tree;
mod update;

use std::fmt;
use std::path::PathBuf;

use crate::engine::{BuildError, EngineConfig, EngineStats, Layout};
use crate::spec::EngineSpec;

pub use build::BloomUpdater;
pub use exact::ExactSlot;
pub use filter::FilterBlock;
pub use lookup::{Bloom, LookupCounts};
pub use tree::TreeNode;

/// Most hash functions (bits per key): a key's bits are handled as a
/// 32-bit mask.
pub const MAX_K: u32 = 32;
/// Largest filter: 2^35 bits (4 GiB), far beyond any table's need.
pub const MAX_FILTER_BITS: u64 = 1 << 35;
const _: () = assert!(MAX_FILTER_BITS / filter::BLOCK_BITS as u64 <= u32::MAX as u64);

/// Which search a `bloom` engine runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Search {
    /// Every distinct length from the longest down (Algorithm 1).
    Linear,
    /// The walk of a search tree over lengths, guided by the filter
    /// (Algorithm 3).
    Guided,
}

impl fmt::Display for Search {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Search::Linear => "linear",
            Search::Guided => "guided",
        })
    }
}

/// How big the filter is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FilterSize {
    /// Sized so that this share of its bits (percent, in (0, 100)) is set
    /// after the build: `bits = -inserted bits / ln(1 - fill)`.
    Fill(f64),
    /// This many bits, rounded up to whole 512-bit blocks.
    Bits(u64),
}

/// The guided search's tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TreeShape {
    /// The median length at every node (the paper's experiments).
    Balanced,
    /// Knuth's optimal tree for the matched lengths of the trace in this
    /// file (`fibkit trace gen` output, text or binary).
    Trace(PathBuf),
}

/// The parameters of a `bloom` engine:
/// `bloom:search=linear|guided,fill=PERCENT|bits=N,k=K,tree=balanced|trace:FILE`.
#[derive(Clone, Debug, PartialEq)]
pub struct BloomConfig {
    /// The search.
    pub search: Search,
    /// The filter's size.
    pub size: FilterSize,
    /// Hash functions (bits per key); `None`: [`default_k`].
    pub k: Option<u32>,
    /// The guided search's tree.
    pub tree: TreeShape,
}

impl Default for BloomConfig {
    fn default() -> Self {
        BloomConfig {
            search: Search::Guided,
            size: FilterSize::Fill(DEFAULT_FILL_PERCENT),
            k: None,
            tree: TreeShape::Balanced,
        }
    }
}

/// The filter's default fill, percent: where \[Yeg18\]'s Figure 5 finds the
/// guided search's gain levelling off.
pub const DEFAULT_FILL_PERCENT: f64 = 10.0;

/// The default number of hash functions: for the guided search, the bit
/// that steers, `bmp_bits` for the BMP code and four to confirm it (10 for
/// IPv4's 25 lengths, as the paper's Table 2); for the linear search 8,
/// which at the default fill leaves a false positive per 10^8 tests.
pub fn default_k(search: Search, bmp_bits: u32) -> u32 {
    match search {
        Search::Linear => 8,
        Search::Guided => 1 + bmp_bits + 4,
    }
}

impl fmt::Display for BloomConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bloom:search={}", self.search)?;
        match self.size {
            FilterSize::Fill(percent) => write!(f, ",fill={percent}")?,
            FilterSize::Bits(bits) => write!(f, ",bits={bits}")?,
        }
        if let Some(k) = self.k {
            write!(f, ",k={k}")?;
        }
        if let TreeShape::Trace(path) = &self.tree {
            write!(f, ",tree=trace:{}", path.display())?;
        }
        Ok(())
    }
}

crate::image::not_saved!([A: crate::addr::Addr + crate::storage::Plain] Bloom<A>, A);

impl EngineConfig for BloomConfig {
    const NAMES: &'static [&'static str] = &["bloom"];
    const ABOUT: &'static str =
        "Bloom filter over (prefix, length) keys + exact table: search=guided (Yegorov, \
        default) or linear (Dharmapurikar); fill=PERCENT or bits=N, k=K, \
        tree=balanced|trace:FILE";
    const LAYOUTS: &'static [Layout] = &[
        Layout::both("bloom"),
        Layout::both("bloom:search=linear"),
        Layout::both("bloom:search=guided,bits=512,k=9"),
        Layout::both("bloom:search=linear,bits=512,k=1"),
    ];
    const MORE_LAYOUTS: &'static [Layout] = &[
        Layout::both("bloom:fill=50"),
        Layout::v4("bloom:search=linear"),
        Layout::v6("bloom:search=linear,k=2"),
    ];

    fn from_spec(spec: &EngineSpec) -> Result<Self, BuildError> {
        spec.expect_only(&["search", "fill", "bits", "k", "tree"])?;
        let mut config = BloomConfig::default();
        let value = |key: &str| -> Result<Option<&str>, BuildError> {
            match spec.params.iter().find(|(k, _)| k == key) {
                None => Ok(None),
                Some((_, Some(value))) => Ok(Some(value.as_str())),
                Some((_, None)) => Err(spec.error(format!("`{key}` needs a value"))),
            }
        };
        if let Some(search) = value("search")? {
            config.search = match search {
                "linear" => Search::Linear,
                "guided" => Search::Guided,
                other => {
                    return Err(spec.error(format!(
                        "`search={other}` is not a search (known: linear, guided)"
                    )))
                }
            };
        }
        match (value("fill")?, value("bits")?) {
            (Some(_), Some(_)) => {
                return Err(spec.error(
                    "give the filter's size once: `fill=PERCENT` or `bits=N`, not both".into(),
                ))
            }
            (Some(fill), None) => {
                let percent = fill
                    .strip_suffix('%')
                    .unwrap_or(fill)
                    .parse::<f64>()
                    .ok()
                    .filter(|p| p.is_finite())
                    .ok_or_else(|| {
                        spec.error(format!(
                            "`fill={fill}` is not a percentage (the share of filter bits set, e.g. fill=10)"
                        ))
                    })?;
                if percent <= 0.0 || percent >= 100.0 {
                    return Err(spec.error(format!(
                        "`fill={fill}`: the share of filter bits set must be above 0% and \
                         below 100% (e.g. fill=10, or bits=N for a fixed size)"
                    )));
                }
                config.size = FilterSize::Fill(percent);
            }
            (None, Some(bits)) => {
                let bits = bits.parse::<u64>().map_err(|_| {
                    spec.error(format!("`bits={bits}` is not a whole number of bits"))
                })?;
                if bits == 0 {
                    return Err(spec.error(
                        "`bits=0`: a filter needs at least one bit (bits=512 is one block; \
                         or fill=10 to size it from the table)"
                            .into(),
                    ));
                }
                if bits > MAX_FILTER_BITS {
                    return Err(spec.error(format!(
                        "`bits={bits}` is more than the largest filter, {MAX_FILTER_BITS} bits \
                         (fill=10 sizes it from the table)"
                    )));
                }
                config.size = FilterSize::Bits(bits);
            }
            (None, None) => {}
        }
        if let Some(k) = value("k")? {
            config.k = Some(match k.parse::<u32>() {
                Ok(0) => {
                    return Err(spec.error(
                        "`k=0`: a Bloom filter needs at least one hash function (k=1..=32)".into(),
                    ))
                }
                Ok(k) if k <= MAX_K => k,
                _ => {
                    return Err(spec.error(format!(
                        "`k={k}` is not a number of hash functions in 1..={MAX_K}"
                    )))
                }
            });
        }
        if let Some(tree) = value("tree")? {
            config.tree = match tree {
                "balanced" => TreeShape::Balanced,
                _ => match tree.strip_prefix("trace:") {
                    Some(path) if !path.is_empty() => TreeShape::Trace(PathBuf::from(path)),
                    _ => {
                        return Err(spec.error(format!(
                            "`tree={tree}` is not a tree (known: balanced, trace:FILE)"
                        )))
                    }
                },
            };
            if config.search == Search::Linear && config.tree != TreeShape::Balanced {
                return Err(spec.error(
                    "`tree=` shapes the guided search; the linear search has no tree".into(),
                ));
            }
        }
        Ok(config)
    }
}

/// What a `bloom` engine looks like.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct BloomStats {
    /// The search.
    pub search: Search,
    /// Hash functions (bits per key).
    pub k: u32,
    /// Bits of a marker's BMP code (guided).
    pub bmp_bits: u32,
    /// Distinct prefix lengths (the default route aside).
    pub lengths: usize,
    /// Nodes on the longest walk of the tree (guided).
    pub tree_depth: u32,
    /// Filter size in bits.
    pub filter_bits: u64,
    /// Share of filter bits set, percent.
    pub fill_percent: f64,
    /// Prefixes in the exact table (the default route aside).
    pub prefixes: usize,
    /// Markers in the exact table that are not prefixes (guided).
    pub markers: usize,
    /// Slots of the exact table.
    pub exact_slots: usize,
    /// Bytes of the exact table.
    pub exact_bytes: usize,
    /// Bytes of the updater's counting filter (build state).
    pub counting_filter_bytes: usize,
    /// Distinct labels.
    pub labels: usize,
}

impl EngineStats for BloomStats {
    fn rows(&self) -> Vec<(String, String)> {
        let mut rows = vec![
            ("search".into(), self.search.to_string()),
            ("k (bits per key)".into(), self.k.to_string()),
        ];
        if self.search == Search::Guided {
            rows.push(("BMP code bits".into(), self.bmp_bits.to_string()));
            rows.push(("tree depth".into(), self.tree_depth.to_string()));
        }
        rows.extend([
            ("distinct lengths".into(), self.lengths.to_string()),
            (
                "filter".into(),
                format!(
                    "{} bits ({:.2} MB), {:.1}% full",
                    self.filter_bits,
                    self.filter_bits as f64 / 8e6,
                    self.fill_percent
                ),
            ),
            (
                "exact table".into(),
                format!(
                    "{} prefixes + {} markers in {} slots ({:.2} MB)",
                    self.prefixes,
                    self.markers,
                    self.exact_slots,
                    self.exact_bytes as f64 / 1e6
                ),
            ),
            (
                "counting filter".into(),
                format!(
                    "{:.2} MB (build state)",
                    self.counting_filter_bytes as f64 / 1e6
                ),
            ),
            ("distinct labels".into(), self.labels.to_string()),
        ]);
        rows
    }
}

#[cfg(test)]
mod tests;
