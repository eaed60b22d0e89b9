//! `bspl`: binary search on prefix lengths with controlled prefix expansion
//! (Srinivasan & Varghese, \[SV98\] §6, after Waldvogel, Varghese, Turner
//! and Plattner, SIGCOMM 1997), for IPv4 and IPv6, and the IPv6 hybrid of
//! \[SV98\] §7 (hash tables on a few lengths, short multibit tries between
//! them).
//!
//! The prefixes longer than the first level are expanded (\[SV98\] §4.1,
//! [`crate::engines::shared::expand`]) to a few target lengths chosen by a
//! dynamic program minimising memory ([`levels`], §6.2), one hash table per
//! length. A table holds the expanded prefixes and *markers* (a longer
//! entry's first bits, placed where the search must turn towards longer
//! lengths), each with its precomputed best matching prefix (BMP), so a
//! search never backtracks: a hit sets the answer and, if it is a marker,
//! moves to longer lengths; a miss moves to shorter ones.
//!
//! Layout (`W` the address width, `F` the first level's bits, `k <= 15`
//! tables):
//! ```text
//! first[addr >> (W - F)]                 2^F x u64, one per block of 2^(W-F) addresses
//!   bits  0..32  BMP label index of the block (prefixes of length <= F)
//!                (hybrid: a leaf or trie pointer for the lengths F+1..L1)
//!   bits 32..36  lo, bits 36..40 hi: the tables the block has entries in
//!                (lo > hi: none, the BMP is the answer)
//!   bits 40..44  the table the block's search probes first
//! tables[j], j < k: buckets of 64 bytes and a seed byte per bucket (see
//!   `table`), key = the address's first L_j bits, value:
//!   bit 31       marker: longer entries of this block lie beyond
//!   bits 0..31   BMP label index (0: no prefix longer than F covers it,
//!                the block's BMP stands)
//! roots[lo][hi]  which table of lo..=hi a search probes first
//! results[index] label slot, index 0 = the default route (or none)
//! ```
//! The default route is in no entry: blocks and leaves that only it covers
//! hold index 0, so a change to it writes results slot 0 and nothing else.
//! Memory accesses per lookup: the first-level entry, then per probe one
//! seed byte (from an array 1/64 of the table, mostly cached) and one
//! 64-byte bucket, at most `ceil(log2(k + 1))` probes (the search tree has
//! the least height and, among those, the least depth weighted by the
//! address space each table's prefixes cover), then the results slot.
//! Blocks with nothing longer than `F` take one access (plus the results).
//!
//! The search tree is restricted to the tables a block uses (`lo..=hi`),
//! and markers are placed per block along that restricted tree, so a block
//! whose prefixes all expand to one length takes one probe. Every entry
//! lies in the one bucket its key hashes to: the build searches a seed per
//! small group of keys so that no bucket overflows (\[SV98\] §6.3 searches
//! one hash function per table with at most 6 collisions per bucket).
//!
//! Limits: the first level takes `F` in 8..=24 bits (2^24 entries = 128
//! MiB); at most [`MAX_HASH_LEVELS`] tables (4-bit `lo`/`hi`); a prefix
//! expands by at most 2^[`levels::MAX_EXPANSION_BITS`]; at most 2^31 - 1
//! distinct labels. A table the chosen lengths cannot hold (a prefix longer
//! than the longest length, or an expansion too large) fails with
//! [`BuildError::Limit`] naming lengths or a level count that would work.
//!
//! Updates rewrite what a change touches: a prefix of length `<= F`
//! rewrites the BMP of the first-level entries it covers (the tables' BMPs
//! only hold prefixes longer than `F`, so they stand); a longer prefix is
//! patched where its block keeps its tables and first probe: the entries
//! whose key lies inside it (its expansion, the BMPs below it) and the
//! markers on its search path are recomputed from the reference table, key
//! by key (see `patch`), so a host route costs a few entries whatever its
//! block holds. A prefix of a table its block does not use, or one with
//! many prefixes inside it, re-plans its block instead: the block's entries
//! are removed, recomputed from the reference table and placed. A table
//! whose window fills is placed anew at twice its entries' size (the other
//! tables are moved, not re-placed). A batch that would re-plan blocks
//! holding more than half of the entries, or a prefix the lengths cannot
//! hold, asks for a full rebuild instead, so no update costs more than a
//! build.
//!
//! Files: `lookup` (the snapshot and its searches), `build` (plain `bspl`
//! from the reference table), `place` (what both builds and their updates
//! share: lengths, the first level's painting, placing entries in the hash
//! tables), `update` (the updater and batches) with `patch` (per-key
//! patches), `table` (the buckets and their seeds), `levels` (the length
//! program), `hybrid` (the IPv6 hybrid, in the same four parts).

pub mod build;
pub mod hybrid;
pub mod levels;
mod lookup;
mod patch;
mod place;
pub mod table;
mod update;

pub use lookup::Bspl;
pub use update::BsplUpdater;

use std::fmt;

use crate::engine::{BuildError, EngineConfig, EngineStats, Layout};
use crate::spec::EngineSpec;
use table::{Kind, SeedWork};

/// Most hash tables (target lengths after the first level): `lo` and `hi`
/// are 4-bit fields of a first-level entry.
pub const MAX_HASH_LEVELS: usize = 15;
/// Default bits of the first level (\[SV98\] §6.3: "the first 16-17 bit
/// table is implemented as a full array").
pub const DEFAULT_FIRST_BITS: u8 = 16;
/// Largest first level: 2^24 entries of 8 bytes.
pub const MAX_FIRST_BITS: u8 = 24;
/// Smallest first level.
pub const MIN_FIRST_BITS: u8 = 8;

/// A table entry's marker flag.
const MARKER: u32 = 1 << 31;
/// A table entry's BMP label index.
const BMP_MASK: u32 = MARKER - 1;
/// Label indices must stay clear of [`MARKER`].
const MAX_LABELS: usize = BMP_MASK as usize;
/// The range of a first-level entry whose block has no table entries.
const NO_TABLES: (usize, usize) = (1, 0);

const _: () = assert!(MAX_HASH_LEVELS < 16, "lo and hi are 4-bit fields");
const _: () = assert!(MAX_FIRST_BITS <= 32, "the block index is Addr::bits(0, F)");

/// A first-level entry from its fields.
#[inline]
fn first_entry(value: u32, (lo, hi): (usize, usize), root: usize) -> u64 {
    debug_assert!(lo < 16 && hi < 16 && root < 16);
    value as u64 | (lo as u64) << 32 | (hi as u64) << 36 | (root as u64) << 40
}

/// The table a first-level entry's block probes first.
#[inline(always)]
fn entry_root(entry: u64) -> usize {
    ((entry >> 40) & 0xf) as usize
}

/// The BMP index (or, in the hybrid, the leaf or trie pointer) of a
/// first-level entry.
#[inline(always)]
fn entry_value(entry: u64) -> u32 {
    entry as u32
}

/// The tables `lo..=hi` a first-level entry's block has entries in (`lo >
/// hi`: none).
#[inline(always)]
fn entry_tables(entry: u64) -> (usize, usize) {
    (
        ((entry >> 32) & 0xf) as usize,
        ((entry >> 36) & 0xf) as usize,
    )
}

/// How the target lengths are chosen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LengthPlan {
    /// By the dynamic program, with the fewest levels within
    /// [`levels::AUTO_SLACK`] of the least memory; for the hybrid, every
    /// quarter of the address.
    Auto,
    /// By the dynamic program, for this many levels (the first included).
    Levels(u8),
    /// Given: the first level's bits, then the tables' lengths.
    Lengths(Vec<u8>),
}

/// The parameters of `bspl`: `bspl[:levels=K][,first=F]`,
/// `bspl:lengths=16+24+32`, or `bspl:hybrid[,lengths=16+32+64+96]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BsplConfig {
    /// Bits of the first level (with [`LengthPlan::Lengths`], its first
    /// length).
    pub first: u8,
    /// The target lengths after the first level.
    pub plan: LengthPlan,
    /// The hybrid of \[SV98\] §7: hash tables on a few lengths and
    /// multibit tries between them.
    pub hybrid: bool,
}

impl Default for BsplConfig {
    fn default() -> Self {
        BsplConfig {
            first: DEFAULT_FIRST_BITS,
            plan: LengthPlan::Auto,
            hybrid: false,
        }
    }
}

impl fmt::Display for BsplConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut params = Vec::new();
        match &self.plan {
            LengthPlan::Lengths(lengths) => {
                let all: Vec<String> = std::iter::once(self.first)
                    .chain(lengths.iter().copied())
                    .map(|l| l.to_string())
                    .collect();
                params.push(format!("lengths={}", all.join("+")));
            }
            LengthPlan::Auto | LengthPlan::Levels(_) => {
                if self.first != DEFAULT_FIRST_BITS {
                    params.push(format!("first={}", self.first));
                }
                if let LengthPlan::Levels(levels) = self.plan {
                    params.push(format!("levels={levels}"));
                }
            }
        }
        if self.hybrid {
            params.insert(0, "hybrid".to_string());
        }
        if params.is_empty() {
            f.write_str("bspl")
        } else {
            write!(f, "bspl:{}", params.join(","))
        }
    }
}

crate::image::not_saved!([A: crate::addr::Addr] Bspl<A>, A);

impl EngineConfig for BsplConfig {
    const NAMES: &'static [&'static str] = &["bspl"];
    const ABOUT: &'static str =
        "binary search on prefix lengths with expansion: bspl:levels=K (program-chosen \
        lengths), first=F, lengths=16+24+32, hybrid (hash 32/64/96 + tries)";
    const LAYOUTS: &'static [Layout] = &[
        Layout::both("bspl"),
        Layout::v4("bspl:levels=3"),
        Layout::v4("bspl:first=8,levels=6"),
        Layout::both("bspl:hybrid"),
    ];
    const MORE_LAYOUTS: &'static [Layout] = &[
        Layout::v4("bspl:levels=2"),
        Layout::v4("bspl:levels=5"),
        Layout::v4("bspl:lengths=16+24+32"),
        Layout::v4("bspl:first=8,levels=6"),
        Layout::v4("bspl:hybrid"),
        Layout::v6("bspl:levels=3"),
        Layout::v6("bspl:levels=8"),
        Layout::v6("bspl:first=12"),
        Layout::v6("bspl:lengths=16+32+48+64+128"),
        Layout::v6("bspl:hybrid,first=16"),
    ];

    fn from_spec(spec: &EngineSpec) -> Result<Self, BuildError> {
        spec.expect_only(&["levels", "first", "lengths", "hybrid"])?;
        let hybrid = spec.flag("hybrid")?;
        let first = spec.number("first", MIN_FIRST_BITS as u32..=MAX_FIRST_BITS as u32)?;
        let levels = spec.number("levels", 2..=MAX_HASH_LEVELS as u32 + 1)?;
        let plan = match spec.value("lengths") {
            Some(text) => {
                if first.is_some() || levels.is_some() {
                    return Err(spec.error(
                        "`lengths` fixes every length (its first is the first level's bits); \
                         it takes no `first` or `levels`"
                            .to_string(),
                    ));
                }
                let lengths = parse_lengths(spec, text)?;
                return Ok(BsplConfig {
                    first: lengths[0],
                    plan: LengthPlan::Lengths(lengths[1..].to_vec()),
                    hybrid,
                });
            }
            None => levels.map_or(LengthPlan::Auto, |l| LengthPlan::Levels(l as u8)),
        };
        Ok(BsplConfig {
            first: first.map_or(DEFAULT_FIRST_BITS, |f| f as u8),
            plan,
            hybrid,
        })
    }
}

/// Parses `16+24+32`: the first level's bits (8..=24), then increasing
/// table lengths, at most [`MAX_HASH_LEVELS`] of them.
fn parse_lengths(spec: &EngineSpec, text: &str) -> Result<Vec<u8>, BuildError> {
    let lengths: Vec<u8> = text
        .split('+')
        .map(|s| s.trim().parse::<u8>())
        .collect::<Result<_, _>>()
        .map_err(|_| spec.error(format!("`lengths={text}` is not a list like 16+24+32")))?;
    if !(MIN_FIRST_BITS..=MAX_FIRST_BITS).contains(&lengths[0]) {
        return Err(spec.error(format!(
            "the first length of `lengths={text}` is the first level's bits, which must be in \
             {MIN_FIRST_BITS}..={MAX_FIRST_BITS}"
        )));
    }
    if lengths.windows(2).any(|w| w[0] >= w[1]) || lengths.len() > MAX_HASH_LEVELS + 1 {
        return Err(spec.error(format!(
            "`lengths={text}` must increase strictly and list at most {} lengths",
            MAX_HASH_LEVELS + 1
        )));
    }
    Ok(lengths)
}

/// One hash table's statistics.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct TableStats {
    /// Its target length.
    pub plen: u8,
    /// Its bucket layout.
    pub kind: Kind,
    /// Entries (expanded prefixes and markers, once each).
    pub entries: usize,
    /// Entries that are markers (in the hybrid: entries with a trie).
    pub markers: usize,
    /// Buckets of 64 bytes.
    pub buckets: usize,
}

/// What a `bspl` table looks like, and what its build cost.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct BsplStats {
    /// Bits of the first level.
    pub first_bits: u8,
    /// The hash tables, shortest length first.
    pub tables: Vec<TableStats>,
    /// First-level blocks with table entries.
    pub hashed_blocks: usize,
    /// Distinct labels in the results table.
    pub labels: usize,
    /// Bytes of the first level, the tables, the tries and the results.
    pub first_bytes: usize,
    /// Bytes of the hash tables (buckets and seeds).
    pub table_bytes: usize,
    /// Bytes of the hybrid's tries.
    pub trie_bytes: usize,
    /// Bytes of the results table.
    pub results_bytes: usize,
    /// The length program's run time at the last full build (0 when the
    /// lengths were given), in milliseconds.
    pub program_ms: f64,
    /// The program's memory estimate for the tables, in bytes.
    pub estimated_table_bytes: f64,
    /// Time spent placing keys and searching their groups' seeds at the
    /// last full build, in milliseconds.
    pub seed_search_ms: f64,
    /// The seed search of the last full build and the updates since.
    pub seeds: SeedWork,
    /// Times the last full build enlarged a table because a window
    /// overflowed or a group found no seed.
    pub table_growths: u32,
    /// Blocks rebuilt by updates since the last full build.
    pub blocks_rebuilt: u64,
    /// Changed prefixes patched in place (their own entries and markers
    /// rewritten, their block's plan kept) since the last full build.
    pub prefixes_patched: u64,
    /// Times an update enlarged a table whose window was full (the table
    /// placed anew at twice its entries' size) since the last full build.
    pub update_growths: u64,
    /// Blocks of `bspl:hybrid` whose trie leaves an update rewrote in place
    /// (below a change no longer than the first level) since the last full
    /// build.
    pub blocks_relabelled: u64,
    /// Tries of `bspl:hybrid` whose leaves an update rewrote in place (the
    /// change above them, or in their span and their nodes still holding
    /// it) instead of building them anew, since the last full build.
    pub tries_relabelled: u64,
}

impl EngineStats for BsplStats {
    fn rows(&self) -> Vec<(String, String)> {
        let mut rows = vec![
            ("first level".into(), format!("{} bits", self.first_bits)),
            (
                "lengths".into(),
                self.tables
                    .iter()
                    .map(|t| t.plen.to_string())
                    .collect::<Vec<_>>()
                    .join(","),
            ),
        ];
        for t in &self.tables {
            rows.push((
                format!("table /{}", t.plen),
                format!(
                    "{} entries ({} markers), {} buckets, {:.0}% full",
                    t.entries,
                    t.markers,
                    t.buckets,
                    100.0 * t.entries as f64 / (t.buckets * t.kind.slots()).max(1) as f64
                ),
            ));
        }
        rows.extend([
            ("hashed blocks".into(), self.hashed_blocks.to_string()),
            ("distinct labels".into(), self.labels.to_string()),
            (
                "bytes: first, tables, tries, results".into(),
                format!(
                    "{}, {}, {}, {}",
                    self.first_bytes, self.table_bytes, self.trie_bytes, self.results_bytes
                ),
            ),
            (
                "program".into(),
                format!(
                    "{:.1} ms, estimate {:.0} table bytes",
                    self.program_ms, self.estimated_table_bytes
                ),
            ),
            (
                "seed search".into(),
                format!(
                    "{:.1} ms, {} seeds tried, largest seed {}, {} windows re-placed, \
                     {} table growths",
                    self.seed_search_ms,
                    self.seeds.seeds_tried,
                    self.seeds.max_seed,
                    self.seeds.windows_replaced,
                    self.table_growths
                ),
            ),
            (
                "updates: blocks re-planned, blocks relabelled, tries relabelled, \
                 prefixes patched, tables enlarged"
                    .into(),
                format!(
                    "{}, {}, {}, {}, {}",
                    self.blocks_rebuilt,
                    self.blocks_relabelled,
                    self.tries_relabelled,
                    self.prefixes_patched,
                    self.update_growths
                ),
            ),
        ]);
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::table::{Bucket128, Bucket32, Bucket64};
    use super::*;
    use crate::engines::shared::testing::{assert_default_route_is_one_slot, nested_table};

    /// Every array but the results.
    #[allow(clippy::type_complexity)]
    fn tables<A>(
        snapshot: &Bspl<A>,
    ) -> (
        Vec<u64>,
        Vec<Bucket32>,
        Vec<Bucket64>,
        Vec<Bucket128>,
        [Vec<u8>; 3],
        Vec<u32>,
    ) {
        (
            snapshot.first.clone(),
            snapshot.b32.clone(),
            snapshot.b64.clone(),
            snapshot.b128.clone(),
            [
                snapshot.s32.clone(),
                snapshot.s64.clone(),
                snapshot.s128.clone(),
            ],
            snapshot.trie.clone(),
        )
    }

    #[test]
    fn the_default_route_is_one_results_slot() {
        let rib = nested_table(0x0a01_0203u32);
        for spec in ["bspl", "bspl:levels=3", "bspl:hybrid"] {
            let config = BsplConfig::parse(spec).unwrap();
            assert_default_route_is_one_slot::<u32, BsplUpdater<u32>, _>(&config, &rib, tables);
        }
        let rib = nested_table(0x2001_0db8_0001_0002_0003_0004_0005_0006u128);
        for spec in ["bspl", "bspl:hybrid"] {
            let config = BsplConfig::parse(spec).unwrap();
            assert_default_route_is_one_slot::<u128, BsplUpdater<u128>, _>(&config, &rib, tables);
        }
    }
}
