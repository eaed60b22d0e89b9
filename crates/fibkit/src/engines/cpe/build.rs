//! What both tries' builds (and their updates) share: the stride
//! choices, the shape of a planned trie, the entry limit's errors, the
//! free node lists, and the grouping of sorted prefixes by node.

use super::*;

/// Stride choices, consumed in depth-first node order by the builders.
pub(crate) enum Strides {
    /// One stride per level.
    Fixed(Vec<u8>),
    /// `(stride, packed)` per node, depth-first.
    Variable(std::vec::IntoIter<(u8, bool)>),
}

impl Strides {
    /// The next node's `(stride, packed)`, at `level` (0 = root).
    pub(super) fn next(
        &mut self,
        level: usize,
        engine: &CpeConfig,
    ) -> Result<(u8, bool), BuildError> {
        let choice = match self {
            Strides::Fixed(strides) => strides.get(level).map(|&s| (s, false)),
            Strides::Variable(nodes) => nodes.next(),
        };
        choice.ok_or_else(|| BuildError::Limit {
            engine: engine.to_string(),
            why: format!(
                "the stride plan has no node for level {level} (a bug: plan and table disagree)"
            ),
        })
    }
}

/// What updates need of the layout: the stride of the nodes they add and
/// the entry limit.
#[derive(Clone, Debug)]
pub(crate) struct Shape {
    /// The spec, named in limit errors.
    pub(super) config: CpeConfig,
    /// Largest stride of a node an update adds.
    pub(super) cap: u32,
    /// Per level, the stride of a fixed-stride trie.
    pub(super) fixed: Option<Vec<u8>>,
    /// Most entries of the node array.
    pub(super) max_entries: usize,
}

impl Shape {
    pub(super) fn new(config: &CpeConfig, strides: &Strides) -> Self {
        Shape {
            config: config.clone(),
            cap: config.cap() as u32,
            fixed: match strides {
                Strides::Fixed(strides) => Some(strides.clone()),
                Strides::Variable(_) => None,
            },
            max_entries: config.max_entries(),
        }
    }

    /// The stride of a node an update adds at `level` (0 = root) below bit
    /// `depth` of an address of `width` bits (`depth < width`): its level's
    /// stride in a fixed-stride trie, else [`NEW_NODE_STRIDE`], at most the
    /// cap and the bits left.
    pub(super) fn new_node_stride(&self, level: u32, depth: u32, width: u32) -> u32 {
        let planned = self
            .fixed
            .as_ref()
            .and_then(|strides| strides.get(level as usize));
        let stride = planned.map_or(NEW_NODE_STRIDE.min(self.cap), |&s| s as u32);
        stride.min(width - depth)
    }

    /// Fails unless `entries` entries fit the limit.
    pub(super) fn check_entries(&self, entries: usize) -> Result<(), BuildError> {
        if entries > self.max_entries {
            return Err(too_big(&self.config, entries as u64));
        }
        Ok(())
    }
}

/// The error of a builder that reached the limit: the strides were given,
/// or the program could not see the size (packed nodes), so no layout is
/// planned here; an engine without the limit is named instead.
pub(super) fn too_big(config: &CpeConfig, entries: u64) -> BuildError {
    BuildError::Limit {
        engine: config.to_string(),
        why: format!(
            "{}; `lctrie` has no such limit",
            too_big_why(config, entries)
        ),
    }
}

/// Why a trie of `entries` entries cannot be built under `config`.
/// The entry limit as the errors write it: a power of two as `2^k`.
pub(super) fn limit_text(config: &CpeConfig) -> String {
    if config.max_entries().is_power_of_two() {
        format!("2^{}", config.max_entries().trailing_zeros())
    } else {
        config.max_entries().to_string()
    }
}

pub(super) fn too_big_why(config: &CpeConfig, entries: u64) -> String {
    let limit = limit_text(config);
    let remedy = if config.strides.is_some() {
        "give more, narrower strides"
    } else {
        "use more levels or a smaller cap"
    };
    let advice = if config.max_entries() < MAX_ENTRIES {
        format!("raise max-entries, or {remedy}")
    } else {
        format!("26-bit node indices address no more; {remedy}")
    };
    format!("the trie needs {entries} entries, more than its limit of {limit} ({advice})")
}

/// Free nodes by stride, for updates to reuse, with what an update in
/// progress took and gave back so that a failed update can be undone.
/// Nodes freed by an update become reusable only once it commits: until
/// then they still hold the entries a rollback restores.
#[derive(Clone, Debug, Default)]
pub(crate) struct FreeNodes {
    pub(super) by_stride: Vec<Vec<u32>>,
    /// `(stride, base)` taken by the update in progress.
    pub(super) taken: Vec<(u32, u32)>,
    /// `(stride, base)` freed by the update in progress.
    pub(super) freed: Vec<(u32, u32)>,
}

impl FreeNodes {
    pub(super) fn new(width: u8) -> Self {
        FreeNodes {
            by_stride: vec![Vec::new(); width as usize + 1],
            ..FreeNodes::default()
        }
    }

    /// A free node of `stride` bits, if one was free before this update.
    pub(super) fn take(&mut self, stride: u32) -> Option<u32> {
        let base = self.by_stride[stride as usize].pop()?;
        self.taken.push((stride, base));
        Some(base)
    }

    /// Frees the node of `stride` bits at `base` when the update commits.
    pub(super) fn give(&mut self, stride: u32, base: u32) {
        self.freed.push((stride, base));
    }

    /// The update succeeded: its freed nodes become reusable.
    pub(super) fn commit(&mut self) {
        self.taken.clear();
        for (stride, base) in self.freed.drain(..) {
            self.by_stride[stride as usize].push(base);
        }
    }

    /// The update failed: the nodes it took are free again, the ones it
    /// freed are in use again.
    pub(super) fn rollback(&mut self) {
        self.freed.clear();
        for (stride, base) in self.taken.drain(..).rev() {
            self.by_stride[stride as usize].push(base);
        }
    }

    /// Free nodes.
    pub(super) fn len(&self) -> usize {
        self.by_stride.iter().map(Vec::len).sum()
    }
}

/// The table but its default route, sorted by address then length, with
/// label indices from `labels`; the default route goes to `labels`' slot 0,
/// what entries of no prefix (index 0) name.
pub(super) fn labelled_prefixes<A: Addr>(
    rib: &Rib<A>,
    labels: &mut LabelIndex,
) -> Result<Vec<(A, u8, u32)>, BuildError> {
    let mut prefixes = Vec::with_capacity(rib.len());
    for (prefix, label) in rib.iter().filter(|(prefix, _)| prefix.plen() > 0) {
        prefixes.push((prefix.addr(), prefix.plen(), labels.index(Some(label))?));
    }
    prefixes.sort_unstable_by_key(|&(addr, plen, _)| (addr, plen));
    labels.set_default(rib.default_route());
    Ok(prefixes)
}

/// Index just past the run of `prefixes[from..hi]` in the same block as
/// `prefixes[from]` at depth `depth + stride`.
pub(super) fn group_end<A: Addr>(
    prefixes: &[(A, u8, u32)],
    from: usize,
    hi: usize,
    depth: u32,
    stride: u32,
) -> usize {
    let index = prefixes[from].0.bits(depth, stride);
    from + 1 + prefixes[from + 1..hi].partition_point(|p| p.0.bits(depth, stride) == index)
}
