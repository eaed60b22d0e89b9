//! Building DXR snapshots from the range view: chunks and extension
//! blocks deduplicated, the range table's free space, and the rebuilds in
//! place that updates fall back to (the updater and its patches are in
//! `update`).
//!
//! Every chunk entry, whether built or patched, comes from one routine
//! ([`DxrUpdater::fill_chunks`]), so a full build and a patch of the whole
//! address space cost about the same per chunk; the updater rebuilds
//! instead of patching when the changed prefixes touch more than
//! `1/REBUILD_SHARE` of the chunks (a default route, a /1), which bounds an
//! update's cost by about one build.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use super::*;
use crate::labels::{labels_by_frequency, LabelIndex};
use crate::rib::{Range, Rib};

/// Label entries hold 30-bit indices; index 0 is the default route (or none).
const MAX_LABELS: usize = LABEL_MASK as usize;

/// Free runs of range-table words.
#[derive(Clone, Debug, Default)]
pub(super) struct FreeList {
    /// Free runs by length: their first words.
    pub(super) by_len: BTreeMap<u32, Vec<u32>>,
    /// Total free words.
    pub(super) words: usize,
}

/// Content hash → entry (chunks) or block number (extension blocks).
pub(super) type DedupMap<V> = HashMap<u64, V>;

/// Why chunks could not be stored.
pub(super) enum ChunkError {
    /// Too many labels.
    Label(BuildError),
    /// The range table ran out of base bits; turned into a
    /// [`BuildError::Limit`] by the caller, which knows the table.
    Base,
}

impl Dxr {
    /// A snapshot of `config` with no arrays yet.
    pub(super) fn empty(config: DxrConfig) -> Self {
        Dxr {
            config,
            geometry: Geometry::new(config),
            direct: Vec::new(),
            ext: Vec::new(),
            ranges: Vec::new(),
            results: Vec::new(),
        }
    }

    /// Empties the arrays a build fills, keeping their memory.
    fn clear(&mut self) {
        self.direct.clear();
        self.ext.clear();
        self.ranges.clear();
        self.results.clear();
    }

    /// Completes a snapshot whose rebuild failed part way into one that
    /// answers "no route" where it was not rebuilt, so that what the
    /// unchecked reads rely on (2^K chunk entries, 2^D direct entries
    /// naming blocks present in `ext`) holds even for a snapshot the caller
    /// is about to drop.
    pub(super) fn fill_unbuilt(&mut self) {
        let g = self.geometry;
        if !self.config.is_extended() {
            self.ext.resize(1 << self.config.k_bits, label_entry(0));
            return;
        }
        let blocks = 1usize << self.config.d_bits;
        if self.direct.len() < blocks {
            let empty = (self.ext.len() >> g.x_bits) as u16;
            self.ext
                .resize(self.ext.len() + (1 << g.x_bits), label_entry(0));
            self.direct.resize(blocks, empty);
        }
    }
}

impl DxrUpdater {
    pub(super) fn new(config: DxrConfig) -> Self {
        DxrUpdater {
            config,
            align_chosen: config.align.is_none(),
            geometry: Geometry::new(config),
            labels: LabelIndex::new(config, MAX_LABELS),
            chunk_refs: Vec::new(),
            chunks: DedupMap::default(),
            free: FreeList::default(),
            block_refs: Vec::new(),
            blocks: DedupMap::default(),
            free_blocks: Vec::new(),
            prefixes: 0,
            build_ns: 0,
            compactions: 0,
            span_rebuilds: 0,
            scratch_words: Vec::new(),
            scratch_block: Vec::new(),
        }
    }

    /// Builds `snapshot` afresh from `rib`, reusing its arrays' memory.
    /// On an error the snapshot answers "no route" where it was not yet
    /// rebuilt (it is memory-safe, not meaningful).
    pub(super) fn rebuild(&mut self, snapshot: &mut Dxr, rib: &Rib<u32>) -> Result<(), ChunkError> {
        self.rebuild_growing_from(snapshot, rib, false)
    }

    /// [`Self::rebuild`], doubling the layout's `align` (up to
    /// [`MAX_ALIGN`]) and starting over while the range table outgrows the
    /// base field.
    pub(super) fn rebuild_growing(
        &mut self,
        snapshot: &mut Dxr,
        rib: &Rib<u32>,
    ) -> Result<(), ChunkError> {
        self.rebuild_growing_from(snapshot, rib, true)
    }

    /// [`Self::rebuild`], and with `grow` [`Self::rebuild_growing`]. The
    /// range view, the label index and each range's label index are made
    /// once for every try: with millions of distinct labels, indexing them
    /// again per try took most of a build (4M prefixes with a label each,
    /// four tries: 19-23 s, against 6 s with one index for them all and
    /// the cheaper hash; docs/bench/hostile.md, "Builds
    /// with a label per prefix").
    fn rebuild_growing_from(
        &mut self,
        snapshot: &mut Dxr,
        rib: &Rib<u32>,
        grow: bool,
    ) -> Result<(), ChunkError> {
        let started = Instant::now();
        // Emptied first, so that on an error every array is the failed
        // build's (`fill_unbuilt` completes them).
        snapshot.clear();
        let ranges = rib.ranges_without_default();
        // A try indexes no label of its own, so the index serves every try.
        let result = self.index_table_labels(&ranges).and_then(|indices| loop {
            snapshot.clear();
            self.forget_chunks();
            match self.fill_all(snapshot, &ranges, &indices) {
                Err(ChunkError::Base) if grow && self.may_grow() => self.grow_align(snapshot),
                result => break result,
            }
        });
        self.labels.set_default(rib.default_route());
        self.labels.sync(&mut snapshot.results);
        if result.is_err() {
            snapshot.fill_unbuilt();
            return result;
        }
        self.prefixes = rib.len();
        self.build_ns = started.elapsed().as_nanos() as u64;
        Ok(())
    }

    /// Indexes the labels of `ranges` afresh, those on most ranges first, so
    /// that more chunks qualify for the short (8-bit) and long (16-bit)
    /// formats; returns each range's label index.
    fn index_table_labels(&mut self, ranges: &[Range<u32>]) -> Result<Vec<u32>, ChunkError> {
        self.labels = LabelIndex::with_order(self.config, MAX_LABELS, labels_by_frequency(ranges))
            .map_err(ChunkError::Label)?;
        let mut indices = Vec::with_capacity(ranges.len());
        self.index_ranges(ranges, &mut indices)?;
        Ok(indices)
    }

    /// Appends the label index of each of `ranges` to `indices`, indexing
    /// labels not seen before.
    pub(super) fn index_ranges(
        &mut self,
        ranges: &[Range<u32>],
        indices: &mut Vec<u32>,
    ) -> Result<(), ChunkError> {
        for range in ranges {
            indices.push(self.labels.index(range.label).map_err(ChunkError::Label)?);
        }
        Ok(())
    }

    /// Whether the range table may take a coarser step: the spec left
    /// `align` to the build, and it is below [`MAX_ALIGN`].
    pub(super) fn may_grow(&self) -> bool {
        self.align_chosen && self.config.align_words() < MAX_ALIGN
    }

    /// Doubles the layout's `align` in the updater and the snapshot, whose
    /// chunk entries are then stale: a rebuild must follow.
    pub(super) fn grow_align(&mut self, snapshot: &mut Dxr) {
        self.config = self.config.with_align(self.config.align_words() * 2);
        self.geometry = Geometry::new(self.config);
        snapshot.config = self.config;
        snapshot.geometry = self.geometry;
    }

    /// Forgets every chunk and block (the label index stays).
    fn forget_chunks(&mut self) {
        self.chunk_refs.clear();
        self.chunks.clear();
        self.free = FreeList::default();
        self.block_refs.clear();
        self.blocks.clear();
        self.free_blocks.clear();
    }

    /// Fills an emptied snapshot's chunk entries (and blocks) from the
    /// range view of the whole address space and its ranges' label
    /// indices.
    fn fill_all(
        &mut self,
        snapshot: &mut Dxr,
        ranges: &[Range<u32>],
        indices: &[u32],
    ) -> Result<(), ChunkError> {
        let last_chunk = ((1u64 << self.config.k_bits) - 1) as u32;
        if !self.config.is_extended() {
            snapshot.ext.reserve_exact(1 << self.config.k_bits);
            return self.fill_chunks(
                snapshot,
                ranges,
                indices,
                0,
                last_chunk,
                |_, snapshot, _, entry| snapshot.ext.push(entry),
            );
        }
        // Block by block, so no 2^K array of entries is built first.
        let block_len = 1usize << self.geometry.x_bits;
        snapshot.direct.reserve_exact(1 << self.config.d_bits);
        let mut block = Vec::with_capacity(block_len);
        self.fill_chunks(
            snapshot,
            ranges,
            indices,
            0,
            last_chunk,
            |updater, snapshot, _, entry| {
                block.push(entry);
                if block.len() == block_len {
                    let id = updater.intern_block(snapshot, &block);
                    snapshot.direct.push(id);
                    block.clear();
                }
            },
        )
    }

    /// Computes the entry of every chunk `first_chunk..=last_chunk` from
    /// `ranges`, which must exactly cover those chunks' addresses, and
    /// their label `indices` (one per range), and hands each
    /// `(chunk, entry)` to `sink` in chunk order; the entry holds one
    /// reference to its stored chunk.
    pub(super) fn fill_chunks(
        &mut self,
        snapshot: &mut Dxr,
        ranges: &[Range<u32>],
        indices: &[u32],
        first_chunk: u32,
        last_chunk: u32,
        mut sink: impl FnMut(&mut Self, &mut Dxr, u32, u32),
    ) -> Result<(), ChunkError> {
        let g = self.geometry;
        debug_assert_eq!(ranges.len(), indices.len());
        debug_assert_eq!(
            ranges.first().map(|r| r.first),
            Some(first_chunk << g.chunk_shift)
        );
        debug_assert_eq!(
            ranges.last().map(|r| r.last),
            Some((last_chunk << g.chunk_shift) | g.offset_mask)
        );
        let mut next = 0; // the range holding the current chunk's first address
                          // PERF: most chunks (all but a few % at K >= 20) lie inside one
                          // range; they reuse that range's entry instead of looking its label
                          // up again (dxr_bench build times).
        let mut inside = (usize::MAX, 0);
        for chunk in first_chunk..=last_chunk {
            let first = chunk << g.chunk_shift;
            let last = first | g.offset_mask;
            while ranges[next].last < first {
                next += 1;
            }
            let entry = if ranges[next].last >= last {
                if inside.0 != next {
                    inside = (next, label_entry(indices[next]));
                }
                inside.1
            } else {
                let end = next
                    + 1
                    + ranges[next + 1..]
                        .iter()
                        .take_while(|r| r.first <= last)
                        .count();
                self.store_chunk(snapshot, &ranges[next..end], &indices[next..end], first)?
            };
            sink(self, snapshot, chunk, entry);
        }
        Ok(())
    }

    /// The entry for the chunk starting at `first`, whose `pieces` (at least
    /// two) are its ranges (the first may start before the chunk, the last
    /// end after it). A stored chunk's reference count is raised by one for
    /// the caller.
    fn store_chunk(
        &mut self,
        snapshot: &mut Dxr,
        pieces: &[Range<u32>],
        indices: &[u32],
        first: u32,
    ) -> Result<u32, ChunkError> {
        debug_assert!(pieces.len() >= 2 && pieces[0].first <= first);
        // The scratch buffer lives in the updater so a build allocates it once.
        let mut words = std::mem::take(&mut self.scratch_words);
        words.clear();
        let (format, size) = self.assemble_chunk(pieces, indices, first, &mut words);
        let result = self.intern_chunk(snapshot, format, size, &words);
        self.scratch_words = words;
        result
    }

    /// Writes the range-table words of a chunk into `words`; returns its
    /// format and size field.
    fn assemble_chunk(
        &self,
        pieces: &[Range<u32>],
        indices: &[u32],
        first: u32,
        words: &mut Vec<u16>,
    ) -> (u32, u32) {
        let short_shift = self.geometry.short_shift;
        let n = pieces.len();
        let offset = |piece: &Range<u32>| piece.first.max(first) - first;
        let max_index = indices.iter().copied().max().unwrap_or(0);
        let short_grid = (1u32 << short_shift) - 1;
        let format = if max_index <= 0xff && pieces.iter().all(|p| offset(p) & short_grid == 0) {
            FORMAT_SHORT
        } else if max_index <= 0xffff {
            FORMAT_LONG
        } else {
            FORMAT_WIDE
        };
        let escaped = n >= SIZE_ESCAPE as usize;
        if escaped {
            words.push((n - 1) as u16);
        }
        if format == FORMAT_SHORT {
            for (piece, &index) in pieces.iter().zip(indices.iter()) {
                words.push((((offset(piece) >> short_shift) << 8) | index) as u16);
            }
        } else {
            words.extend(pieces.iter().map(|p| offset(p) as u16));
            for &index in indices.iter() {
                words.push(index as u16);
                if format == FORMAT_WIDE {
                    words.push((index >> 16) as u16);
                }
            }
        }
        (format, if escaped { SIZE_ESCAPE } else { n as u32 })
    }

    /// Stores a chunk once: an identical stored chunk gains a reference,
    /// otherwise the words are placed (in freed space if a run fits).
    fn intern_chunk(
        &mut self,
        snapshot: &mut Dxr,
        format: u32,
        size: u32,
        words: &[u16],
    ) -> Result<u32, ChunkError> {
        let hash = hash_chunk(format, words);
        let g = self.geometry;
        if let Some(&entry) = self.chunks.get(&hash) {
            let base = g.base_of(entry);
            if format_of(entry) == format
                && size_of(entry) == size
                && snapshot.ranges.get(base..base + words.len()) == Some(words)
            {
                self.chunk_refs[base] += 1;
                return Ok(entry);
            }
        }
        let base = self.alloc(snapshot, words.len())?;
        snapshot.ranges[base..base + words.len()].copy_from_slice(words);
        self.chunk_refs[base] = 1;
        let entry = g.chunk_entry(format, size, base);
        // On a hash collision the newer chunk wins the slot; the older one
        // just stops being found for dedup.
        self.chunks.insert(hash, entry);
        Ok(entry)
    }

    /// Drops one reference to `entry`'s chunk, freeing it at zero.
    pub(super) fn release(&mut self, ranges: &[u16], entry: u32) {
        if is_label(entry) {
            return;
        }
        let g = self.geometry;
        let base = g.base_of(entry);
        debug_assert!(self.chunk_refs[base] > 0, "release of a free chunk");
        self.chunk_refs[base] -= 1;
        if self.chunk_refs[base] > 0 {
            return;
        }
        let words = chunk_words(g, ranges, entry);
        let hash = hash_chunk(format_of(entry), &ranges[base..base + words]);
        if self.chunks.get(&hash) == Some(&entry) {
            self.chunks.remove(&hash);
        }
        // `alloc` placed it on a run of this many words.
        let len = g.stored_words(words);
        self.free
            .by_len
            .entry(len as u32)
            .or_default()
            .push(base as u32);
        self.free.words += len;
    }

    /// Finds room for `words` words: the smallest free run that fits (the
    /// rest of it stays free), else the end of the table. Runs are
    /// multiples of the layout's `align`, so every base stays on its grid.
    fn alloc(&mut self, snapshot: &mut Dxr, words: usize) -> Result<usize, ChunkError> {
        let len = self.geometry.stored_words(words);
        let free = &mut self.free;
        if let Some((&run, bases)) = free.by_len.range_mut(len as u32..).next() {
            let base = bases
                .pop()
                .expect("free runs are listed only while some remain")
                as usize;
            if bases.is_empty() {
                free.by_len.remove(&run);
            }
            let run = run as usize;
            free.words -= run;
            if run > len {
                free.by_len
                    .entry((run - len) as u32)
                    .or_default()
                    .push((base + len) as u32);
                free.words += run - len;
            }
            return Ok(base);
        }
        let base = snapshot.ranges.len();
        if base + len > self.geometry.max_words() {
            return Err(ChunkError::Base);
        }
        snapshot.ranges.resize(base + len, 0);
        self.chunk_refs.resize(base + len, 0);
        Ok(base)
    }

    /// The number of a stored block with `content`, gaining a reference
    /// (the content's chunk references are dropped: the stored block holds
    /// its own), or of a new block holding `content` and its references.
    fn intern_block(&mut self, snapshot: &mut Dxr, content: &[u32]) -> u16 {
        match self.find_block(&snapshot.ext, content) {
            Some(id) => {
                self.block_refs[id as usize] += 1;
                for &entry in content {
                    self.release(&snapshot.ranges, entry);
                }
                id
            }
            None => self.new_block(snapshot, content),
        }
    }

    pub(super) fn find_block(&self, ext: &[u32], content: &[u32]) -> Option<u16> {
        let id = *self.blocks.get(&hash_block(content))?;
        let start = (id as usize) << self.geometry.x_bits;
        (ext[start..start + content.len()] == *content).then_some(id)
    }

    /// Stores a new block with one reference; `content`'s chunk references
    /// become the block's.
    pub(super) fn new_block(&mut self, snapshot: &mut Dxr, content: &[u32]) -> u16 {
        let id = match self.free_blocks.pop() {
            Some(id) => {
                let start = (id as usize) << self.geometry.x_bits;
                snapshot.ext[start..start + content.len()].copy_from_slice(content);
                self.block_refs[id as usize] = 1;
                id
            }
            None => {
                // INVARIANT: at most 2^D blocks are live (one per direct
                // entry) and a new block is made only while the old one is
                // still shared, so numbers stay below 2^D <= 2^16.
                let id = self.block_refs.len();
                debug_assert!(id < 1 << self.config.d_bits);
                snapshot.ext.extend_from_slice(content);
                self.block_refs.push(1);
                id as u16
            }
        };
        self.blocks.insert(hash_block(content), id);
        id
    }

    /// Drops one reference to block `id`, freeing it (and its chunk
    /// references) at zero.
    pub(super) fn release_block(&mut self, snapshot: &Dxr, id: u16) {
        self.block_refs[id as usize] -= 1;
        if self.block_refs[id as usize] > 0 {
            return;
        }
        let start = (id as usize) << self.geometry.x_bits;
        let content = &snapshot.ext[start..start + (1 << self.geometry.x_bits)];
        let hash = hash_block(content);
        if self.blocks.get(&hash) == Some(&id) {
            self.blocks.remove(&hash);
        }
        for &entry in content {
            self.release(&snapshot.ranges, entry);
        }
        self.free_blocks.push(id);
    }

    /// Statistics of `snapshot`, which this updater last built or patched.
    pub(super) fn collect_stats(&self, snapshot: &Dxr) -> DxrStats {
        let live_blocks = self.block_refs.len() - self.free_blocks.len();
        let mut stats = DxrStats::new(snapshot, live_blocks);
        stats.prefixes = self.prefixes;
        stats.labels = self.labels.len();
        stats.free_range_words = self.free.words;
        stats.build_ns = self.build_ns;
        stats.compactions = self.compactions;
        stats.span_rebuilds = self.span_rebuilds;
        stats
    }
}

/// The error for a range table that outgrew the base field of `built`
/// (the layout `asked` with the `align` the build reached), naming the
/// layouts whose range table fits `rib` (when given; updates leave that to
/// the rebuild that follows their error): other `K` at the same step, and,
/// when the spec stated a smaller `align` than the most, the spec without
/// it if the build could then pick a step that fits.
pub(super) fn range_table_limit(
    asked: DxrConfig,
    built: DxrConfig,
    rib: Option<&Rib<u32>>,
) -> BuildError {
    let align = built.align_words();
    let advice = match rib {
        None => String::new(),
        Some(rib) => {
            let ranges = rib.ranges_without_default();
            let fitting = fitting_k(&ranges, asked.k_bits, align);
            let mut advice = if fitting.is_empty() {
                format!("; no K in {MIN_K}..={MAX_K} fits this table at that step (use dir24-8)")
            } else {
                let specs: Vec<String> = fitting
                    .iter()
                    .map(|&k| {
                        DxrConfig {
                            align: asked.align,
                            ..DxrConfig::single(k)
                        }
                        .to_string()
                    })
                    .collect();
                format!(
                    "; layouts that fit: {} (or dxr:d=D,x=X with D+X one of these K)",
                    specs.join(", ")
                )
            };
            if asked.align.is_some() && align < MAX_ALIGN && fits(&ranges, asked.k_bits, MAX_ALIGN)
            {
                let chosen = DxrConfig {
                    align: None,
                    ..asked
                };
                advice.push_str(&format!(
                    "; `{chosen}` fits too (without `align` the build takes the step the table needs)"
                ));
            }
            advice
        }
    };
    let max_words = Geometry::new(built).max_words();
    BuildError::Limit {
        engine: asked.to_string(),
        why: format!(
            "the range table needs more than {max_words} 16-bit words ({} MiB), the most a \
             {BASE_BITS}-bit chunk base in steps of {align} word{} can address{advice}",
            (max_words * 2) >> 20,
            if align == 1 { "" } else { "s" },
        ),
    }
}

/// The `K` (other than `failed_k`) whose range table fits the base field
/// in steps of `align` words for the range view `ranges` (see [`fits`]).
fn fitting_k(ranges: &[Range<u32>], failed_k: u32, align: u32) -> Vec<u32> {
    (MIN_K..=MAX_K)
        .filter(|&k| k != failed_k && fits(ranges, k, align))
        .collect()
}

/// Whether the range table of the range view `ranges` (without the
/// default route) at `K = k` fits a base in steps of
/// `align` words. The range table is built for real, with the chunk dedup
/// of a build, but without chunk entries or blocks (it is the same for
/// every layout of one `K`), and abandoned as soon as it overflows: no
/// 2^K array.
fn fits(ranges: &[Range<u32>], k: u32, align: u32) -> bool {
    let config = DxrConfig::single(k).with_align(align);
    let mut sizer = DxrUpdater::new(config);
    let mut scratch = Dxr::empty(config);
    let last_chunk = ((1u64 << k) - 1) as u32;
    let Ok(indices) = sizer.index_table_labels(ranges) else {
        return false;
    };
    sizer
        .fill_chunks(
            &mut scratch,
            ranges,
            &indices,
            0,
            last_chunk,
            |_, _, _, _| {},
        )
        .is_ok()
}

/// Words a stored chunk occupies in `ranges` (header included).
pub(super) fn chunk_words(g: Geometry, ranges: &[u16], entry: u32) -> usize {
    let base = g.base_of(entry);
    let size = size_of(entry);
    let (header, n) = if size == SIZE_ESCAPE {
        (1, ranges[base] as usize + 1)
    } else {
        (0, size as usize)
    };
    let per_range = match format_of(entry) {
        FORMAT_SHORT => 1,
        FORMAT_LONG => 2,
        _ => 3,
    };
    header + n * per_range
}

/// FxHash-style mixing: fast, and collisions only cost a missed dedup.
fn mix(hash: u64, word: u64) -> u64 {
    (hash.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95)
}

fn hash_chunk(format: u32, words: &[u16]) -> u64 {
    let mut hash = mix(0, format as u64 | (words.len() as u64) << 8);
    for pair in words.chunks(4) {
        let mut packed = 0u64;
        for (i, &w) in pair.iter().enumerate() {
            packed |= (w as u64) << (16 * i);
        }
        hash = mix(hash, packed);
    }
    hash
}

pub(super) fn hash_block(content: &[u32]) -> u64 {
    content.chunks(2).fold(0, |hash, pair| {
        mix(
            hash,
            pair[0] as u64 | (pair.get(1).copied().unwrap_or(0) as u64) << 32,
        )
    })
}
