//! Picking strides by dynamic programming (Srinivasan & Varghese, sections
//! 4.2, 5.2 and 5.3).
//!
//! Both programs work on the 1-bit trie of the table, walked implicitly over
//! the sorted prefix list (a node is the slice of prefixes below it), so no
//! trie is materialised.
//!
//! - Fixed strides (Table 5): with `nodes(m)` the number of 1-bit nodes at
//!   depth `m` that have a longer prefix below them, covering lengths `0..j`
//!   with `r` levels costs
//!   `T[j][r] = min_m T[m][r-1] + nodes(m) * 2^(j-m) * entry_bytes`.
//! - Variable strides (Figure 5, Tables 6-8): each node `N` that heads a
//!   multibit node picks the stride `s` minimising
//!   `Opt(N, r) = cost(N, s) + sum over descendants D at depth s of Opt(D, r-1)`.
//!   The sums over descendants are carried bottom-up as a vector per node
//!   (`V[s][r]`, one per stride and level count), so the program is
//!   `O(nodes * cap * levels)` time and `O(W * cap * levels)` working memory.
//!   A subtree holding one prefix is a chain whose vector depends only on
//!   its depth and length ([`Chain`]): each such shape is computed once,
//!   which makes tables of long prefixes spread apart (random IPv6 /64s
//!   and /128s) an order of magnitude faster to plan.
//! - Variable strides for speed ([`variable_plan_weighted`], an addition to
//!   the paper): memory alone picks tiny strides along dense paths when the
//!   level count must be high (IPv6 /128s), so lookups walk many levels. A
//!   *level cost* `c` (bytes) adds `c * w(N)` to every multibit node `N`,
//!   where `w(N)` counts the prefixes longer than `N`'s depth below it: a
//!   key inside an announced prefix reads every such node on its way, so
//!   the program minimises memory plus `c` times the levels summed over the
//!   prefixes' paths (a Lagrangian relaxation of a bound on average levels).
//!
//! Memory models ([`MemoryModel`]): a leaf-pushed entry is one `u32`, a
//! non-leaf-pushed entry a pointer plus a label (8 bytes). With packed nodes,
//! a node whose entries form at most [`MemoryModel::packed_runs`] runs of
//! equal entries may be stored as one 64-byte cache line instead of `2^s`
//! entries; the program bounds the runs by the node's pieces (one plus the
//! number of inner 1-bit nodes it spans), which the builder then packs.

use std::collections::HashMap;
use std::fmt;
use std::time::{Duration, Instant};

use crate::addr::Addr;
use crate::rib::Rib;

/// Largest stride of any node (a 2^24-entry node of `u32` entries is
/// 64 MiB): the cap of the stride programs, and of `cpe`'s nodes.
pub const MAX_STRIDE: u8 = 24;

/// Bytes of a packed node: one cache line.
pub const PACKED_NODE_BYTES: u64 = 64;

const INF: u64 = u64::MAX / 4;

/// How a trie's memory is counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryModel {
    /// Bytes of one array entry.
    pub entry_bytes: u64,
    /// With packed nodes: how many runs of equal entries fit a 64-byte node.
    pub packed_runs: Option<u32>,
}

impl MemoryModel {
    /// Leaf-pushed nodes: a `u32` entry holds a pointer or a label.
    pub const LEAF_PUSHED: Self = MemoryModel {
        entry_bytes: 4,
        packed_runs: None,
    };
    /// Non-leaf-pushed nodes: a pointer and a label per entry.
    pub const NOT_PUSHED: Self = MemoryModel {
        entry_bytes: 8,
        packed_runs: None,
    };
    /// Leaf-pushed, sparse nodes packed into a cache line of 7 runs.
    pub const LEAF_PUSHED_PACKED: Self = MemoryModel {
        entry_bytes: 4,
        packed_runs: Some(7),
    };
    /// Non-leaf-pushed, sparse nodes packed into a cache line of 5 runs.
    pub const NOT_PUSHED_PACKED: Self = MemoryModel {
        entry_bytes: 8,
        packed_runs: Some(5),
    };

    /// Bytes of a node of stride `stride` spanning `pieces` pieces, and
    /// whether it is packed.
    #[inline]
    fn node_cost(&self, stride: u32, pieces: u32) -> (u64, bool) {
        let full = (1u64 << stride) * self.entry_bytes;
        match self.packed_runs {
            Some(runs) if pieces <= runs && PACKED_NODE_BYTES < full => (PACKED_NODE_BYTES, true),
            _ => (full, false),
        }
    }
}

/// The table as the programs see it: `(addr, plen)` sorted by address, then
/// length (so a prefix comes before every prefix it contains).
pub(crate) fn sorted_prefixes<A: Addr>(rib: &Rib<A>) -> Vec<(A, u8)> {
    let mut prefixes: Vec<(A, u8)> = rib.iter().map(|(p, _)| (p.addr(), p.plen())).collect();
    prefixes.sort_unstable();
    prefixes
}

/// Strides for a fixed-stride trie.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FixedPlan {
    /// Stride of each level, root first.
    pub strides: Vec<u8>,
    /// Bytes the trie takes under the model.
    pub bytes: u64,
}

/// Number of 1-bit nodes at each depth that have a longer prefix below them
/// (`counts[0]` is 1: the root always exists), and the longest prefix length.
fn inner_node_counts<A: Addr>(prefixes: &[(A, u8)]) -> (Vec<u64>, u8) {
    let bits = A::BITS as usize;
    let mut counts = vec![0u64; bits + 1];
    let mut last: Vec<Option<A>> = vec![None; bits + 1];
    let mut max_len = 0u8;
    for &(addr, plen) in prefixes {
        max_len = max_len.max(plen);
        for depth in 0..plen as usize {
            let node = addr.masked(depth as u8);
            if last[depth] != Some(node) {
                last[depth] = Some(node);
                counts[depth] += 1;
            }
        }
    }
    counts[0] = 1;
    (counts, max_len)
}

/// The `levels` fixed strides (each at most `cap`) that minimise memory for
/// `prefixes` under `model` (packing ignored); `Err` says why none exist.
pub(crate) fn fixed_plan<A: Addr>(
    prefixes: &[(A, u8)],
    levels: u8,
    cap: u8,
    model: MemoryModel,
) -> Result<FixedPlan, String> {
    let (counts, max_len) = inner_node_counts(prefixes);
    let k = levels as usize;
    let cap = cap as usize;
    // Cover at least one bit per level, and every prefix.
    let target = (max_len as usize).max(k);
    if target > A::BITS as usize || target > k * cap {
        return Err(format!(
            "{levels} levels of at most {cap} bits cannot cover prefixes of length {max_len} \
             (use at least {} levels or a larger cap)",
            (max_len as usize).div_ceil(cap).max(1)
        ));
    }
    let width = target + 1;
    let mut cost = vec![INF; width * (k + 1)];
    let mut from = vec![0usize; width * (k + 1)];
    cost[0] = 0;
    for r in 1..=k {
        for j in 1..=target {
            let mut best = INF;
            let mut arg = 0;
            for m in j.saturating_sub(cap)..j {
                let before = cost[m * (k + 1) + r - 1];
                if before >= INF {
                    continue;
                }
                let c = before + counts[m] * (1u64 << (j - m)) * model.entry_bytes;
                if c < best {
                    best = c;
                    arg = m;
                }
            }
            cost[j * (k + 1) + r] = best;
            from[j * (k + 1) + r] = arg;
        }
    }
    let bytes = cost[target * (k + 1) + k];
    if bytes >= INF {
        return Err(format!("no {levels}-level fixed-stride trie exists"));
    }
    let mut strides = Vec::with_capacity(k);
    let mut j = target;
    for r in (1..=k).rev() {
        let m = from[j * (k + 1) + r];
        strides.push((j - m) as u8);
        j = m;
    }
    strides.reverse();
    Ok(FixedPlan { strides, bytes })
}

/// The result of the variable-stride program for one level count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VariablePlan {
    /// `(stride, packed)` of every multibit node in depth-first order (a node,
    /// then its children by index), as the builder consumes them.
    pub nodes: Vec<(u8, bool)>,
    /// Bytes the trie takes under the model.
    pub bytes: u64,
}

/// The variable-stride program's state: one bottom-up walk of the implicit
/// 1-bit trie.
struct VariableDp<'a, A> {
    prefixes: &'a [(A, u8)],
    k: usize,
    cap: usize,
    model: MemoryModel,
    /// Cost in bytes of one level on one prefix's path.
    level_cost: u64,
    /// Per depth: `V[s * (k+1) + r]`, the summed optimum over descendants at
    /// relative depth `s` with `r` levels (`r = 0` is infinite for inner nodes).
    sums: Vec<Vec<u64>>,
    /// Per depth: number of inner 1-bit nodes at relative depth `< s`.
    inner: Vec<Vec<u32>>,
    /// With `record`: `best[id * (k+1) + r]` = stride | packed << 7.
    best: Vec<u8>,
    record: bool,
    next_id: usize,
    /// Results of lone chains by `(depth, length - depth)`, or `None` to
    /// compute every chain node by node (tests compare the two).
    chains: Option<HashMap<(u8, u8), Chain>>,
}

/// What [`VariableDp::visit`] leaves for a node whose subtree holds exactly
/// one prefix, longer than the node's depth: a chain of 1-bit nodes down
/// to it. The chain's costs depend only on where it starts and how long
/// it is, never on the prefix's bits, so one computation serves every
/// chain of the same shape. Tables with long prefixes spread apart (IPv6
/// /64s and /128s one per /48) are mostly such chains: computed node by
/// node, a random 200,000-prefix IPv6 table took the program 25–27 s, and
/// 2 s from the memo (docs/bench/cpe.md, "Lone chains planned once").
/// The memo holds at most one entry per depth and length (about 6,400 on
/// such a table), each a few KiB.
struct Chain {
    /// The head node's `sums` and `inner` rows.
    sums: Vec<u64>,
    inner: Vec<u32>,
    /// With `record`: the chain's nodes' `best` rows, in visiting order.
    best: Vec<u8>,
}

impl<A: Addr> VariableDp<'_, A> {
    /// Skips the prefix ending at `depth` (if any) in `lo..hi`.
    fn below(&self, depth: usize, lo: usize) -> usize {
        if lo < self.prefixes.len() && self.prefixes[lo].1 as usize == depth {
            lo + 1
        } else {
            lo
        }
    }

    /// Fills `sums[depth]`, `inner[depth]` for the node whose prefixes are
    /// `lo..hi`; returns false (and fills nothing) if it has nothing below.
    fn visit(&mut self, depth: usize, lo: usize, hi: usize) -> bool {
        let start = self.below(depth, lo);
        if start >= hi {
            return false;
        }
        if hi - start == 1 && self.chains.is_some() {
            self.visit_chain(depth, start);
            return true;
        }
        self.visit_node(depth, start, hi);
        true
    }

    /// [`Self::visit`] of the head of a lone chain (the one prefix below
    /// is `prefixes[start]`): from the memo, or computed node by node and
    /// remembered.
    fn visit_chain(&mut self, depth: usize, start: usize) {
        let k1 = self.k + 1;
        let nodes = self.prefixes[start].1 as usize - depth;
        let key = (depth as u8, nodes as u8);
        let id = self.next_id;
        if let Some(chain) = self.chains.as_ref().and_then(|chains| chains.get(&key)) {
            self.sums[depth].copy_from_slice(&chain.sums);
            self.inner[depth].copy_from_slice(&chain.inner);
            if self.record {
                self.best[id * k1..(id + nodes) * k1].copy_from_slice(&chain.best);
            }
            self.next_id += nodes;
            return;
        }
        self.visit_node(depth, start, start + 1);
        debug_assert_eq!(
            self.next_id,
            id + nodes,
            "a chain's nodes are visited in a row"
        );
        let chain = Chain {
            sums: self.sums[depth].clone(),
            inner: self.inner[depth].clone(),
            best: if self.record {
                self.best[id * k1..(id + nodes) * k1].to_vec()
            } else {
                Vec::new()
            },
        };
        if let Some(chains) = self.chains.as_mut() {
            chains.insert(key, chain);
        }
    }

    /// [`Self::visit`] of a node with prefixes `start..hi` below it.
    fn visit_node(&mut self, depth: usize, start: usize, hi: usize) {
        let id = self.next_id;
        self.next_id += 1;
        let k1 = self.k + 1;
        let cap = self.cap;
        self.sums[depth].fill(0);
        self.inner[depth].fill(0);
        let mid =
            start + self.prefixes[start..hi].partition_point(|&(addr, _)| !addr.bit(depth as u8));
        for (clo, chi) in [(start, mid), (mid, hi)] {
            if clo < chi && self.visit(depth + 1, clo, chi) {
                let (upper, lower) = self.sums.split_at_mut(depth + 1);
                let (mine, child) = (&mut upper[depth], &lower[0]);
                for s in 1..=cap {
                    let dst = &mut mine[s * k1..(s + 1) * k1];
                    let src = &child[(s - 1) * k1..s * k1];
                    for (d, c) in dst.iter_mut().zip(src) {
                        *d = (*d + *c).min(INF);
                    }
                }
                let (upper, lower) = self.inner.split_at_mut(depth + 1);
                for s in 1..=cap {
                    upper[depth][s] += lower[0][s - 1];
                }
            }
        }
        for s in 1..=cap {
            self.inner[depth][s] += 1;
        }
        let walkers = self.level_cost * (hi - start) as u64;
        let max_stride = cap.min(A::BITS as usize - depth);
        let mine = &mut self.sums[depth];
        mine[0] = INF;
        for r in 1..=self.k {
            let mut best = INF;
            let mut arg = 0u8;
            for s in 1..=max_stride {
                let below = mine[s * k1 + r - 1];
                if below >= INF {
                    continue;
                }
                let (cost, packed) = self.model.node_cost(s as u32, 1 + self.inner[depth][s]);
                let total = cost + walkers + below;
                if total < best {
                    best = total;
                    arg = s as u8 | (packed as u8) << 7;
                }
            }
            mine[r] = best;
            if self.record {
                self.best[id * k1 + r] = arg;
            }
        }
    }

    /// Replays the walk in the same order, emitting the chosen nodes.
    fn emit(
        &mut self,
        depth: usize,
        lo: usize,
        hi: usize,
        boundary: usize,
        r: usize,
        out: &mut Vec<(u8, bool)>,
    ) {
        let start = self.below(depth, lo);
        if start >= hi {
            return;
        }
        let id = self.next_id;
        self.next_id += 1;
        let (boundary, r) = if depth == boundary {
            let choice = self.best[id * (self.k + 1) + r];
            let stride = choice & 0x7f;
            out.push((stride, choice & 0x80 != 0));
            (depth + stride as usize, r - 1)
        } else {
            (boundary, r)
        };
        let mid =
            start + self.prefixes[start..hi].partition_point(|&(addr, _)| !addr.bit(depth as u8));
        for (clo, chi) in [(start, mid), (mid, hi)] {
            if clo < chi {
                self.emit(depth + 1, clo, chi, boundary, r, out);
            }
        }
    }
}

/// Runs the variable-stride program on `prefixes` for 1..=`levels` levels
/// and strides up to `cap`; returns `Opt(root, r)` in bytes for each `r`
/// (index 0 unused), and with `plan` the node list for `levels`. With
/// `memo` lone chains come from a memo ([`Chain`]), else every node is
/// computed (tests compare the two).
fn variable_dp<A: Addr>(
    prefixes: &[(A, u8)],
    levels: u8,
    cap: u8,
    model: MemoryModel,
    level_cost: u64,
    plan: bool,
    memo: bool,
) -> (Vec<u64>, Option<Vec<(u8, bool)>>) {
    let k = levels as usize;
    let cap = (cap as usize).min(A::BITS as usize);
    let depths = A::BITS as usize + 2;
    let mut dp = VariableDp {
        prefixes,
        k,
        cap,
        model,
        level_cost,
        sums: vec![vec![0; (cap + 1) * (k + 1)]; depths],
        inner: vec![vec![0; cap + 1]; depths],
        best: Vec::new(),
        record: plan,
        next_id: 0,
        chains: memo.then(HashMap::new),
    };
    if plan {
        // One byte per inner node and level count: count the nodes first.
        let (counts, _) = inner_node_counts(prefixes);
        let nodes: u64 = counts.iter().sum();
        dp.best = vec![0; nodes as usize * (k + 1) + k + 1];
    }
    let root_has_below = dp.visit(0, 0, prefixes.len());
    if !root_has_below {
        // Nothing below the root: a 1-bit root holds the default route.
        let bytes = model.node_cost(1, 1).0;
        let mut costs = vec![bytes; k + 1];
        costs[0] = INF;
        return (costs, plan.then(|| vec![(1, false)]));
    }
    let costs: Vec<u64> = (0..=k).map(|r| dp.sums[0][r]).collect();
    let nodes = if plan && costs[k] < INF {
        dp.next_id = 0;
        let mut out = Vec::new();
        dp.emit(0, 0, prefixes.len(), 0, k, &mut out);
        Some(out)
    } else {
        None
    };
    (costs, nodes)
}

/// The least memory in bytes of a variable-stride trie with each number of
/// levels from 0 to `levels` (index = levels; `None` where no trie has
/// that many levels).
pub(crate) fn least_memory_by_levels<A: Addr>(
    prefixes: &[(A, u8)],
    levels: u8,
    cap: u8,
    model: MemoryModel,
) -> Vec<Option<u64>> {
    let (costs, _) = variable_dp(prefixes, levels, cap, model, 0, false, true);
    costs
        .into_iter()
        .map(|bytes| (bytes < INF).then_some(bytes))
        .collect()
}

/// The `levels`-level variable-stride plan of least memory under `model`
/// with strides at most `cap`; `Err` says why none exists.
pub(crate) fn variable_plan<A: Addr>(
    prefixes: &[(A, u8)],
    levels: u8,
    cap: u8,
    model: MemoryModel,
) -> Result<VariablePlan, String> {
    variable_plan_weighted(prefixes, levels, cap, model, 0)
}

/// The `levels`-level variable-stride plan with strides at most `cap` of
/// least memory under `model` plus `level_cost` bytes per level on each
/// prefix's path (see the module header; 0 gives [`variable_plan`]).
/// [`VariablePlan::bytes`] is the plan's memory alone.
pub(crate) fn variable_plan_weighted<A: Addr>(
    prefixes: &[(A, u8)],
    levels: u8,
    cap: u8,
    model: MemoryModel,
    level_cost: u64,
) -> Result<VariablePlan, String> {
    let (_, nodes) = variable_dp(prefixes, levels, cap, model, level_cost, true, true);
    match nodes {
        Some(nodes) => {
            let bytes = nodes
                .iter()
                .map(|&(stride, packed)| {
                    if packed {
                        PACKED_NODE_BYTES
                    } else {
                        (1u64 << stride) * model.entry_bytes
                    }
                })
                .sum();
            Ok(VariablePlan { nodes, bytes })
        }
        None => {
            let max_len = prefixes.iter().map(|p| p.1).max().unwrap_or(0);
            Err(format!(
                "{levels} levels of at most {cap} bits cannot reach prefixes of length {max_len} \
                 (use at least {} levels, or cap up to {})",
                (max_len as usize).div_ceil(cap as usize),
                MAX_STRIDE
            ))
        }
    }
}

/// Least memory of a fixed-stride trie for `rib` with `levels` levels.
pub fn fixed_strides<A: Addr>(
    rib: &Rib<A>,
    levels: u8,
    cap: u8,
    model: MemoryModel,
) -> Result<FixedPlan, String> {
    fixed_plan(&sorted_prefixes(rib), levels, cap, model)
}

/// Least memory of a variable-stride trie for `rib` with `levels` levels.
pub fn variable_strides<A: Addr>(
    rib: &Rib<A>,
    levels: u8,
    cap: u8,
    model: MemoryModel,
) -> Result<VariablePlan, String> {
    variable_plan(&sorted_prefixes(rib), levels, cap, model)
}

/// One level count's row of the paper's Tables 5-8.
#[derive(Clone, Debug)]
pub struct StrideRow {
    /// Number of levels.
    pub levels: u8,
    /// Table 5: fixed strides, leaf-pushed (bytes, strides; `None` if impossible).
    pub fixed: Option<FixedPlan>,
    /// Time the fixed-stride program took.
    pub fixed_time: Duration,
    /// Table 6: variable strides, leaf-pushed (non-leaf-pushed is twice this).
    pub variable_bytes: Option<u64>,
    /// Root stride of the Table 6 trie, and its number of multibit nodes.
    pub variable_root: Option<(u8, usize)>,
    /// Time the variable-stride program took for this level count alone.
    pub variable_time: Duration,
    /// Table 7: variable strides, leaf-pushed, packed nodes allowed.
    pub leaf_packed_bytes: Option<u64>,
    /// Table 8: variable strides, non-leaf-pushed, packed nodes allowed.
    pub nopush_packed_bytes: Option<u64>,
}

/// The paper's Tables 5-8 for one table: memory per level count under each
/// model, the programs' run times and the chosen strides. `Display` prints it.
#[derive(Clone, Debug)]
pub struct StrideReport {
    /// Address family and prefix count, for the heading.
    pub title: String,
    /// The stride cap the programs used.
    pub cap: u8,
    /// One row per level count.
    pub rows: Vec<StrideRow>,
    /// Time of one packed-model program covering every level count at once.
    pub packed_time: Duration,
}

/// Runs every stride program on `rib` for each level count in `levels`
/// (e.g. `2..=12`) with strides at most `cap` (1..=[`MAX_STRIDE`]).
pub fn stride_report<A: Addr>(
    rib: &Rib<A>,
    levels: std::ops::RangeInclusive<u8>,
    cap: u8,
) -> StrideReport {
    let prefixes = sorted_prefixes(rib);
    let cap = cap.clamp(1, MAX_STRIDE);
    let max_k = (*levels.end()).max(1);
    let started = Instant::now();
    let (leaf_packed, _) = variable_dp(
        &prefixes,
        max_k,
        cap,
        MemoryModel::LEAF_PUSHED_PACKED,
        0,
        false,
        true,
    );
    let (nopush_packed, _) = variable_dp(
        &prefixes,
        max_k,
        cap,
        MemoryModel::NOT_PUSHED_PACKED,
        0,
        false,
        true,
    );
    let packed_time = started.elapsed() / 2;
    let finite = |bytes: u64| (bytes < INF).then_some(bytes);
    let mut rows = Vec::new();
    for k in levels.filter(|&k| k >= 1) {
        let started = Instant::now();
        let fixed = fixed_plan(&prefixes, k, cap, MemoryModel::LEAF_PUSHED).ok();
        let fixed_time = started.elapsed();
        let started = Instant::now();
        let plan = variable_plan(&prefixes, k, cap, MemoryModel::LEAF_PUSHED).ok();
        let variable_time = started.elapsed();
        rows.push(StrideRow {
            levels: k,
            fixed,
            fixed_time,
            variable_bytes: plan.as_ref().map(|p| p.bytes),
            variable_root: plan.as_ref().map(|p| (p.nodes[0].0, p.nodes.len())),
            variable_time,
            leaf_packed_bytes: finite(leaf_packed[k as usize]),
            nopush_packed_bytes: finite(nopush_packed[k as usize]),
        });
    }
    StrideReport {
        title: format!("{} table, {} prefixes", A::FAMILY, prefixes.len()),
        cap,
        rows,
        packed_time,
    }
}

/// Prints two tables, memory by level count and the chosen strides, each
/// column head in words with its unit; the paper's table numbers are in the
/// note under the first.
impl fmt::Display for StrideReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kib = |bytes: Option<u64>| match bytes {
            Some(b) => format!("{}", b.div_ceil(1024)),
            None => "-".to_string(),
        };
        let ms = |d: Duration| format!("{:.1}", d.as_secs_f64() * 1e3);
        writeln!(f, "{}, strides at most {} bits", self.title, self.cap)?;
        writeln!(f)?;
        writeln!(
            f,
            "{:>6}   {:<23}   {:<45}   variable strides, packed nodes",
            "", "fixed strides", "variable strides"
        )?;
        writeln!(
            f,
            "{:>6}   {:>12} {:>10}   {:>17} {:>16} {:>10}   {:>17} {:>16}",
            "levels",
            "memory (KiB)",
            "time (ms)",
            "leaf-pushed (KiB)",
            "not pushed (KiB)",
            "time (ms)",
            "leaf-pushed (KiB)",
            "not pushed (KiB)"
        )?;
        for row in &self.rows {
            writeln!(
                f,
                "{:>6}   {:>12} {:>10}   {:>17} {:>16} {:>10}   {:>17} {:>16}",
                row.levels,
                kib(row.fixed.as_ref().map(|p| p.bytes)),
                ms(row.fixed_time),
                kib(row.variable_bytes),
                kib(row.variable_bytes.map(|b| b * 2)),
                ms(row.variable_time),
                kib(row.leaf_packed_bytes),
                kib(row.nopush_packed_bytes),
            )?;
        }
        writeln!(
            f,
            "memory: the smallest trie with that many levels, 1 KiB = 1024 bytes \
             (entries 4 bytes leaf-pushed, 8 not pushed; packed nodes 64 bytes; - : none)"
        )?;
        writeln!(
            f,
            "time: the stride program's own run time (the packed-node programs run \
             every level count in one pass: {} ms each)",
            ms(self.packed_time)
        )?;
        writeln!(
            f,
            "(Srinivasan and Varghese, controlled prefix expansion: Table 5 fixed, \
             Table 6 variable, Tables 7 and 8 packed)"
        )?;
        writeln!(f)?;
        writeln!(
            f,
            "{:>6}   {:<32}   {:>26} {:>14}",
            "levels",
            "fixed strides (bits per level)",
            "variable: root stride (bits)",
            "variable: nodes"
        )?;
        for row in &self.rows {
            let fixed = match &row.fixed {
                Some(plan) => plan
                    .strides
                    .iter()
                    .map(|s| s.to_string())
                    .collect::<Vec<_>>()
                    .join("+"),
                None => "-".to_string(),
            };
            let (root, nodes) = match row.variable_root {
                Some((root, nodes)) => (root.to_string(), nodes.to_string()),
                None => ("-".to_string(), "-".to_string()),
            };
            writeln!(
                f,
                "{:>6}   {:<32}   {:>26} {:>14}",
                row.levels, fixed, root, nodes
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// Random prefixes of every length, and as many again that share all
    /// but their last few bits with one of those (so that chains also
    /// start deep, where the bits left and not the cap bound a stride),
    /// sorted as the programs take them.
    fn random_prefixes(seed: u64, count: usize) -> Vec<(u128, u8)> {
        let mut rng = StdRng::seed_from_u64(seed);
        let prefix = |addr: u128, len: u32| {
            let addr = if len == 0 {
                0
            } else {
                addr >> (128 - len) << (128 - len)
            };
            (addr, len as u8)
        };
        let mut prefixes: Vec<(u128, u8)> = (0..count)
            .map(|_| prefix(rng.random(), rng.random_range(0..=128u32)))
            .collect();
        for i in 0..count {
            let addr = prefixes[i].0;
            let split = rng.random_range(96..128u32);
            let len = rng.random_range(split + 1..=128);
            prefixes.push(prefix(addr ^ (1u128 << (127 - split)), len));
        }
        prefixes.sort_unstable();
        prefixes.dedup();
        prefixes
    }

    /// Lone chains from the memo give the plan computed node by node.
    #[test]
    fn chain_memo_gives_the_same_plan() {
        for seed in 0..4 {
            let prefixes = random_prefixes(seed, 300);
            for (levels, cap, model, level_cost) in [
                (12, 24, MemoryModel::LEAF_PUSHED, 64),
                (6, 24, MemoryModel::LEAF_PUSHED, 0),
                (24, 8, MemoryModel::NOT_PUSHED, 0),
                (8, 16, MemoryModel::LEAF_PUSHED_PACKED, 16),
            ] {
                let memo = variable_dp(&prefixes, levels, cap, model, level_cost, true, true);
                let slow = variable_dp(&prefixes, levels, cap, model, level_cost, true, false);
                assert_eq!(
                    memo, slow,
                    "seed {seed}, {levels} levels, cap {cap}, {model:?}"
                );
            }
        }
    }
}
