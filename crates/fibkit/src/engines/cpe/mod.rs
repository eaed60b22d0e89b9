//! `cpe`: multibit tries built by controlled prefix expansion, with strides
//! chosen by dynamic programming (Srinivasan & Varghese, "Faster IP Lookups
//! using Controlled Prefix Expansion", SIGMETRICS 1998, sections 4 and 5).
//!
//! A trie node of stride `s` at depth `d` is an array of `2^s` entries
//! indexed by address bits `d..d+s`; every prefix of length `d < l <= d+s`
//! (the root also takes `l = 0`) is expanded into the `2^(d+s-l)` entries it
//! covers, a longer prefix capturing the entries of a shorter one
//! ([`expand`] is the same expansion as a standalone function, Figure 1).
//! The strides come from [`strides`]: the `k` levels of least memory for a
//! fixed-stride trie (Table 5), or per node the stride of least memory for
//! the whole subtree (Figure 5, Tables 6-8), with a cap on the largest.
//!
//! Variants (spec `cpe:levels=K[,fixed][,nopush][,packed][,cap=C]` or
//! `cpe:strides=16+8+8[,nopush]`):
//! ```text
//! leaf-pushed (default)  entries: Vec<u32>, one word per entry
//!   bit 31 clear: label index (0 = no route)  -> labels[index]
//!   bit 31 set:   child pointer: bits 26..30 stride (0 = packed node),
//!                 bits 0..25 node base in entries (or packed line number)
//! packed (leaf-pushed)   sparse nodes as one 64-byte line: stride, 6 run
//!                        starts, 7 entries, searched branch-free
//! nopush                 entries: Vec<[u32; 2]> = [child pointer, label index];
//!                        lookup keeps the last label seen (section 5.1);
//!                        updates patch single nodes in place
//! ```
//! Memory accesses per lookup: one entry read (one cache line: 4 or 8 bytes,
//! aligned) per level, at most `K` levels on a freshly built trie, plus one
//! read of the label table. Node bases are indices into flat arrays, not
//! pointers.
//! The leaf-pushed batch lookup (`Fib::lookup_batch`) overlaps the reads of
//! a window of keys: each key's root entry is prefetched 128 keys ahead and
//! read, with its child's entry prefetched, 64 keys ahead.
//!
//! Limits: strides at most [`MAX_STRIDE`] (a 2^24-entry node is 64 MiB
//! leaf-pushed), at most 2^26 entries or packed lines (26-bit bases), at most
//! 2^31 - 2 distinct labels. A level count that cannot reach the longest
//! prefix with capped strides fails with [`BuildError::Limit`] naming the
//! level count that would work: dfz-v6 has /128 prefixes, so needs
//! `ceil(128 / 24) = 6` levels. Nodes added by updates below the built trie
//! have stride [`NEW_NODE_STRIDE`], so updates may add levels.
//!
//! Updates: `nopush` patches the one node a changed prefix expands into
//! (adding or freeing nodes below as needed). The leaf-pushed variants
//! rewrite the entries the prefix expands into, and the subtrees below them,
//! from the reference table's range view (their labels are copied into every
//! subtree, so one short prefix can touch much of the trie); with packed
//! nodes they are rebuilt whole by [`crate::apply_changes`].

pub mod expand;
pub mod strides;
mod trie;

pub use expand::{expand, Expanded};
pub use strides::{
    fixed_strides, stride_report, variable_strides, FixedPlan, MemoryModel, StrideReport,
    StrideRow, VariablePlan,
};
pub use trie::{LeafTrie, NopushTrie};

use crate::addr::Addr;
use crate::engine::BuildError;
use crate::legacy::LegacyEngine;
use crate::prefix::{Label, Prefix};
use crate::rib::Rib;
use crate::spec::EngineSpec;
use strides::{fixed_plan, sorted_prefixes, variable_plan};
use trie::Strides;

/// Largest stride of any node.
pub const MAX_STRIDE: u8 = 24;
/// Default stride cap for the non-leaf-pushed trie: the paper's 17, which
/// bounds the entries one update rewrites.
pub const NOPUSH_DEFAULT_CAP: u8 = 17;
/// Stride of a node an update adds below the built trie.
pub const NEW_NODE_STRIDE: u32 = 8;
/// Most entries (or packed lines) a trie may have: bases are 26 bits.
pub const MAX_ENTRIES: usize = 1 << 26;

const CHILD: u32 = 1 << 31;
const STRIDE_SHIFT: u32 = 26;
const BASE_MASK: u32 = (1 << STRIDE_SHIFT) - 1;
const _: () = assert!((MAX_STRIDE as u32) < 32, "strides must fit 5 bits");
const _: () = assert!(MAX_ENTRIES as u64 == BASE_MASK as u64 + 1);

#[inline]
fn child_ptr(stride: u32, base: u32) -> u32 {
    debug_assert!(stride < 32 && base <= BASE_MASK);
    CHILD | stride << STRIDE_SHIFT | base
}

/// Addresses the tries index: [`Addr`] plus a fast bit-field extraction.
pub trait CpeAddr: Addr {
    /// Bits `depth..depth+stride` of the address (from the most significant)
    /// as an integer; `depth < BITS`, `1 <= stride <= BITS - depth`.
    fn chunk(self, depth: u32, stride: u32) -> u32;
}

impl CpeAddr for u32 {
    #[inline]
    fn chunk(self, depth: u32, stride: u32) -> u32 {
        debug_assert!(depth < 32 && stride >= 1 && depth + stride <= 32);
        (self << depth) >> (32 - stride)
    }
}

impl CpeAddr for u128 {
    #[inline]
    fn chunk(self, depth: u32, stride: u32) -> u32 {
        debug_assert!(depth < 128 && stride >= 1 && depth + stride <= 128);
        ((self << depth) >> (128 - stride)) as u32
    }
}

/// Builds the `cpe` engine described by `spec` from `rib`.
pub fn build<A: CpeAddr>(spec: &EngineSpec, rib: &Rib<A>) -> Result<CpeTrie<A>, BuildError> {
    spec.expect_only(&["levels", "strides", "fixed", "nopush", "packed", "cap"])?;
    let fixed = spec.flag("fixed")?;
    let nopush = spec.flag("nopush")?;
    let packed = spec.flag("packed")?;
    let default_cap = if nopush {
        NOPUSH_DEFAULT_CAP
    } else {
        MAX_STRIDE
    };
    let cap = spec
        .number("cap", 1..=MAX_STRIDE as u32)?
        .map_or(default_cap, |c| c as u8);
    let levels = spec.number("levels", 1..=32)?;
    let limit = |why: String| BuildError::Limit {
        engine: spec.to_string(),
        why,
    };
    if packed && (fixed || nopush) {
        return Err(spec.error(
            "packed nodes are built for the variable-stride leaf-pushed trie only \
             (drop `fixed`/`nopush`; `fibkit strides` reports the other packed models)"
                .to_string(),
        ));
    }
    let strides = match spec.value("strides") {
        Some(text) => {
            if levels.is_some() || fixed || packed || spec.number("cap", 1..=24)?.is_some() {
                return Err(spec.error(
                    "`strides` fixes the trie; it takes no `levels`, `fixed`, `packed` or `cap`"
                        .to_string(),
                ));
            }
            Strides::Fixed(parse_strides::<A>(spec, text)?)
        }
        None => {
            // IPv6: 12 levels build every shared table (dfz-v6 needs 7) and keep the
            // worst case of a few random /128s far below the entry limit.
            let levels = levels.unwrap_or(if A::BITS == 32 { 4 } else { 12 }) as u8;
            let prefixes = sorted_prefixes(rib);
            let model = match (nopush, packed) {
                (true, _) => MemoryModel::NOT_PUSHED,
                (false, true) => MemoryModel::LEAF_PUSHED_PACKED,
                (false, false) => MemoryModel::LEAF_PUSHED,
            };
            let (strides, bytes) = if fixed {
                let plan = fixed_plan(&prefixes, levels, cap, model).map_err(limit)?;
                (Strides::Fixed(plan.strides), plan.bytes)
            } else {
                let plan = variable_plan(&prefixes, levels, cap, model).map_err(limit)?;
                (Strides::Variable(plan.nodes.into_iter()), plan.bytes)
            };
            // Fail before allocating: the program knows the size exactly.
            if bytes / model.entry_bytes > MAX_ENTRIES as u64 {
                return Err(limit(format!(
                    "the best {levels}-level trie has {} entries, more than the 2^26 a 26-bit \
                     node index addresses (use more levels)",
                    bytes / model.entry_bytes
                )));
            }
            strides
        }
    };
    Ok(if nopush {
        CpeTrie::Nopush(NopushTrie::build(rib, strides, spec.as_str())?)
    } else {
        CpeTrie::Leaf(LeafTrie::build(rib, strides, spec.as_str())?)
    })
}

/// Either kind of CPE trie, as the spec chose.
#[derive(Clone)]
pub enum CpeTrie<A> {
    /// Leaf-pushed (optionally packed).
    Leaf(LeafTrie<A>),
    /// Not leaf-pushed (`nopush`).
    Nopush(NopushTrie<A>),
}

impl<A: CpeAddr> LegacyEngine<A> for CpeTrie<A> {
    const NAMES: &'static [&'static str] = &["cpe"];

    fn build(spec: &EngineSpec, rib: &Rib<A>) -> Result<Self, BuildError> {
        build(spec, rib)
    }

    fn name(&self) -> String {
        match self {
            CpeTrie::Leaf(trie) => trie.name(),
            CpeTrie::Nopush(trie) => trie.name(),
        }
    }

    fn memory_bytes(&self) -> usize {
        match self {
            CpeTrie::Leaf(trie) => trie.memory_bytes(),
            CpeTrie::Nopush(trie) => trie.memory_bytes(),
        }
    }

    #[inline(always)]
    fn lookup(&self, addr: A) -> Option<Label> {
        match self {
            CpeTrie::Leaf(trie) => trie.lookup(addr),
            CpeTrie::Nopush(trie) => trie.lookup(addr),
        }
    }

    fn lookup_batch(&self, addrs: &[A], out: &mut [Option<Label>]) {
        match self {
            CpeTrie::Leaf(trie) => trie.lookup_batch(addrs, out),
            CpeTrie::Nopush(trie) => trie.lookup_batch(addrs, out),
        }
    }

    fn update(&mut self, rib: &Rib<A>, changed: &[Prefix<A>]) -> Result<(), BuildError> {
        match self {
            CpeTrie::Leaf(trie) => trie.update(rib, changed),
            CpeTrie::Nopush(trie) => trie.update(rib, changed),
        }
    }

    fn stats(&self) -> Vec<(String, String)> {
        match self {
            CpeTrie::Leaf(trie) => trie.stats(),
            CpeTrie::Nopush(trie) => trie.stats(),
        }
    }
}

/// Parses `16+8+8`: each stride in `1..=MAX_STRIDE`, summing to the width.
fn parse_strides<A: Addr>(spec: &EngineSpec, text: &str) -> Result<Vec<u8>, BuildError> {
    let strides: Vec<u8> = text
        .split('+')
        .map(|s| s.trim().parse::<u8>())
        .collect::<Result<_, _>>()
        .map_err(|_| spec.error(format!("`strides={text}` is not a list like 16+8+8")))?;
    if strides.iter().any(|&s| s == 0 || s > MAX_STRIDE) {
        return Err(spec.error(format!(
            "every stride must be in 1..={MAX_STRIDE}, got `{text}`"
        )));
    }
    let sum: u32 = strides.iter().map(|&s| s as u32).sum();
    if sum != A::BITS as u32 {
        return Err(spec.error(format!(
            "strides `{text}` sum to {sum} bits but {} addresses have {} \
             (give strides summing to {}, each at most {MAX_STRIDE})",
            A::FAMILY,
            A::BITS,
            A::BITS
        )));
    }
    Ok(strides)
}

crate::legacy::legacy_lookup!([A: CpeAddr] A, CpeTrie<A>);
