//! Building DXR from the range view, chunk deduplication, and updates.

use std::collections::HashMap;
use std::time::Instant;

use super::*;
use crate::rib::Range;

/// Compaction threshold: rebuild when free words exceed `1 / COMPACT_RATIO`
/// of the range table and [`COMPACT_MIN_WORDS`].
const COMPACT_RATIO: usize = 4;
const COMPACT_MIN_WORDS: usize = 4096;

/// Build and update state: label interning, chunk and block reference
/// counts and dedup maps, free space.
#[derive(Clone, Debug, Default)]
pub(super) struct State {
    /// Label → index into `results`.
    pub(super) label_index: HashMap<Label, u32>,
    /// References to the chunk starting at each range-table word (physical
    /// `ext` entries pointing at it); 0 elsewhere.
    pub(super) chunk_refs: Vec<u32>,
    /// Content hash → entry of a stored chunk with that content.
    pub(super) chunks: DedupMap<u32>,
    pub(super) free: FreeList,
    /// Extended layout: direct entries pointing at each block.
    pub(super) block_refs: Vec<u32>,
    /// Content hash → block number.
    pub(super) blocks: DedupMap<u16>,
    pub(super) free_blocks: Vec<u16>,
    /// Prefixes in the table last built or updated from.
    pub(super) prefixes: usize,
    /// Wall time of the last full build.
    pub(super) build_ns: u64,
    /// Compactions (rebuilds) updates have triggered so far.
    pub(super) compactions: u64,
    scratch_indices: Vec<u32>,
    scratch_words: Vec<u16>,
}

/// The range table ran out of base bits; turned into a [`BuildError::Limit`]
/// by the caller, which knows the table.
struct BaseOverflow;

impl Dxr {
    /// Builds DXR from `rib` with the layout `spec` names (`dxr`, `dxr:k=K`,
    /// `dxr:d=D,x=X`).
    pub fn build(spec: &EngineSpec, rib: &Rib<u32>) -> Result<Self, BuildError> {
        Self::with_layout(Layout::from_spec(spec)?, rib)
    }

    /// Builds DXR with `layout` from `rib`.
    pub fn with_layout(layout: Layout, rib: &Rib<u32>) -> Result<Self, BuildError> {
        let started = Instant::now();
        let ranges = rib.ranges();
        let mut engine = Self::empty(layout);
        engine.intern_labels_by_frequency(&ranges)?;
        let chunks = 1usize << layout.k_bits;
        let mut entries = Vec::with_capacity(chunks);
        let mut next = 0; // the range holding the current chunk's first address
        let mut pieces = Vec::new();
        // PERF: most chunks (all but a few % at K >= 20) lie inside one range;
        // they skip the label map and chunk assembly (dxr_bench build times).
        let mut next_label = (usize::MAX, 0);
        for chunk in 0..chunks {
            let first = (chunk as u32) << engine.chunk_shift;
            let last = first | engine.offset_mask;
            while ranges[next].last < first {
                next += 1;
            }
            if ranges[next].last >= last {
                if next_label.0 != next {
                    let index = engine.label_index(ranges[next].label)?;
                    next_label = (next, (FORMAT_LABEL << FORMAT_SHIFT) | index);
                }
                entries.push(next_label.1);
                continue;
            }
            pieces.clear();
            pieces.extend(ranges[next..].iter().take_while(|r| r.first <= last));
            let entry = engine
                .chunk_entry(&pieces, first)
                .map_err(|e| engine.limit_error(e, rib))?;
            entries.push(entry);
        }
        engine.install(entries);
        engine.state.prefixes = rib.len();
        engine.state.build_ns = started.elapsed().as_nanos() as u64;
        Ok(engine)
    }

    fn empty(layout: Layout) -> Self {
        let k = layout.k_bits;
        let d = layout.d_bits;
        Dxr {
            layout,
            chunk_shift: 32 - k,
            direct_shift: if d == 0 { 0 } else { 32 - d },
            x_bits: k - d,
            x_mask: if d == 0 { 0 } else { (1 << (k - d)) - 1 },
            offset_mask: (1u32 << (32 - k)) - 1,
            short_shift: 24 - k,
            direct: Vec::new(),
            ext: Vec::new(),
            ranges: Vec::new(),
            results: vec![None],
            state: State::default(),
        }
    }

    /// Gives the labels on most ranges the smallest indices, so that more
    /// chunks qualify for the short (8-bit) and long (16-bit) formats.
    fn intern_labels_by_frequency(&mut self, ranges: &[Range<u32>]) -> Result<(), BuildError> {
        let mut counts: HashMap<Label, usize> = HashMap::new();
        for range in ranges {
            if let Some(label) = range.label {
                *counts.entry(label).or_default() += 1;
            }
        }
        let mut labels: Vec<(Label, usize)> = counts.into_iter().collect();
        labels.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        for (label, _) in labels {
            self.label_index(Some(label))?;
        }
        Ok(())
    }

    fn label_index(&mut self, label: Option<Label>) -> Result<u32, BuildError> {
        let Some(label) = label else { return Ok(0) };
        if let Some(&index) = self.state.label_index.get(&label) {
            return Ok(index);
        }
        let index = self.results.len() as u32;
        if index > LABEL_MASK {
            return Err(BuildError::Limit {
                engine: self.name(),
                why: format!("more than 2^{LABEL_BITS} distinct labels (label entries hold {LABEL_BITS} bits)"),
            });
        }
        self.results.push(Some(label));
        self.state.label_index.insert(label, index);
        Ok(index)
    }

    /// The entry for the chunk starting at `first`, whose ranges are
    /// `pieces` (the first may start before the chunk, the last end after
    /// it). A stored chunk's reference count is raised by one for the caller.
    fn chunk_entry(&mut self, pieces: &[Range<u32>], first: u32) -> Result<u32, ChunkError> {
        debug_assert!(!pieces.is_empty() && pieces[0].first <= first);
        if pieces.len() == 1 {
            let index = self
                .label_index(pieces[0].label)
                .map_err(ChunkError::Label)?;
            return Ok((FORMAT_LABEL << FORMAT_SHIFT) | index);
        }
        // Scratch buffers live in the state so a build allocates them once.
        let mut indices = std::mem::take(&mut self.state.scratch_indices);
        let mut words = std::mem::take(&mut self.state.scratch_words);
        indices.clear();
        words.clear();
        let result = self.assemble_chunk(pieces, first, &mut indices, &mut words);
        self.state.scratch_indices = indices;
        self.state.scratch_words = words;
        result
    }

    fn assemble_chunk(
        &mut self,
        pieces: &[Range<u32>],
        first: u32,
        indices: &mut Vec<u32>,
        words: &mut Vec<u16>,
    ) -> Result<u32, ChunkError> {
        for piece in pieces {
            indices.push(self.label_index(piece.label).map_err(ChunkError::Label)?);
        }
        let n = pieces.len();
        let offset = |piece: &Range<u32>| piece.first.max(first) - first;
        let max_index = indices.iter().copied().max().unwrap_or(0);
        let short_grid = (1u32 << self.short_shift) - 1;
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
                words.push((((offset(piece) >> self.short_shift) << 8) | index) as u16);
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
        let size = if escaped { SIZE_ESCAPE } else { n as u32 };
        self.intern_chunk(format, size, words)
            .map_err(|BaseOverflow| ChunkError::Base)
    }

    /// Stores a chunk once: an identical stored chunk gains a reference,
    /// otherwise the words are placed (in freed space if a run fits).
    fn intern_chunk(&mut self, format: u32, size: u32, words: &[u16]) -> Result<u32, BaseOverflow> {
        let hash = hash_chunk(format, words);
        if let Some(&entry) = self.state.chunks.get(&hash) {
            let base = (entry & BASE_MASK) as usize;
            if entry >> FORMAT_SHIFT == format
                && (entry >> SIZE_SHIFT) & SIZE_MASK == size
                && self.ranges.get(base..base + words.len()) == Some(words)
            {
                self.state.chunk_refs[base] += 1;
                return Ok(entry);
            }
        }
        let base = self.alloc(words.len())?;
        self.ranges[base..base + words.len()].copy_from_slice(words);
        self.state.chunk_refs[base] = 1;
        let entry = (format << FORMAT_SHIFT) | (size << SIZE_SHIFT) | base as u32;
        // On a hash collision the newer chunk wins the slot; the older one
        // just stops being found for dedup.
        self.state.chunks.insert(hash, entry);
        Ok(entry)
    }

    /// Words a stored chunk occupies (header included).
    pub(super) fn chunk_words(&self, entry: u32) -> usize {
        let base = (entry & BASE_MASK) as usize;
        let size = (entry >> SIZE_SHIFT) & SIZE_MASK;
        let (header, n) = if size == SIZE_ESCAPE {
            (1, self.ranges[base] as usize + 1)
        } else {
            (0, size as usize)
        };
        let per_range = match entry >> FORMAT_SHIFT {
            FORMAT_SHORT => 1,
            FORMAT_LONG => 2,
            _ => 3,
        };
        header + n * per_range
    }

    /// Drops one reference to `entry`'s chunk, freeing it at zero.
    fn release(&mut self, entry: u32) {
        if entry >> FORMAT_SHIFT == FORMAT_LABEL {
            return;
        }
        let base = (entry & BASE_MASK) as usize;
        debug_assert!(self.state.chunk_refs[base] > 0, "release of a free chunk");
        self.state.chunk_refs[base] -= 1;
        if self.state.chunk_refs[base] > 0 {
            return;
        }
        let len = self.chunk_words(entry);
        let hash = hash_chunk(entry >> FORMAT_SHIFT, &self.ranges[base..base + len]);
        if self.state.chunks.get(&hash) == Some(&entry) {
            self.state.chunks.remove(&hash);
        }
        let free = &mut self.state.free;
        free.by_len.entry(len as u32).or_default().push(base as u32);
        free.words += len;
    }

    /// Finds room for `len` words: the smallest free run that fits (the rest
    /// of it stays free), else the end of the table.
    fn alloc(&mut self, len: usize) -> Result<usize, BaseOverflow> {
        let free = &mut self.state.free;
        if let Some((&run, bases)) = free.by_len.range(len as u32..).next() {
            let run = run as usize;
            let base = bases.last().copied().unwrap_or_default() as usize;
            let emptied = {
                let bases = free.by_len.get_mut(&(run as u32)).expect("run just found");
                bases.pop();
                bases.is_empty()
            };
            if emptied {
                free.by_len.remove(&(run as u32));
            }
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
        let base = self.ranges.len();
        if base + len > 1 << BASE_BITS {
            return Err(BaseOverflow);
        }
        self.ranges.resize(base + len, 0);
        self.state.chunk_refs.resize(base + len, 0);
        Ok(base)
    }

    /// Lays out the per-chunk `entries` (each holding one reference) in the
    /// layout's tables.
    fn install(&mut self, entries: Vec<u32>) {
        if self.layout.d_bits == 0 {
            self.ext = entries;
            return;
        }
        let block_len = 1usize << self.x_bits;
        let blocks = 1usize << self.layout.d_bits;
        self.direct = Vec::with_capacity(blocks);
        for content in entries.chunks_exact(block_len) {
            let id = match self.find_block(content) {
                Some(id) => {
                    self.state.block_refs[id as usize] += 1;
                    // The stored block already holds these references.
                    for &entry in content {
                        self.release(entry);
                    }
                    id
                }
                None => self.new_block(content),
            };
            self.direct.push(id);
        }
    }

    fn find_block(&self, content: &[u32]) -> Option<u16> {
        let id = *self.state.blocks.get(&hash_block(content))?;
        let start = (id as usize) << self.x_bits;
        (self.ext[start..start + content.len()] == *content).then_some(id)
    }

    /// Stores a new block with one reference; `content`'s chunk references
    /// become the block's.
    fn new_block(&mut self, content: &[u32]) -> u16 {
        let id = match self.state.free_blocks.pop() {
            Some(id) => {
                let start = (id as usize) << self.x_bits;
                self.ext[start..start + content.len()].copy_from_slice(content);
                self.state.block_refs[id as usize] = 1;
                id
            }
            None => {
                // INVARIANT: at most 2^D blocks are live (one per direct
                // entry) and a new block is made only while the old one is
                // still shared, so numbers stay below 2^D <= 2^16.
                let id = self.state.block_refs.len();
                debug_assert!(id < 1 << self.layout.d_bits);
                self.ext.extend_from_slice(content);
                self.state.block_refs.push(1);
                id as u16
            }
        };
        self.state.blocks.insert(hash_block(content), id);
        id
    }

    /// Drops one reference to block `id`, freeing it (and its chunk
    /// references) at zero.
    fn release_block(&mut self, id: u16) {
        self.state.block_refs[id as usize] -= 1;
        if self.state.block_refs[id as usize] > 0 {
            return;
        }
        let start = (id as usize) << self.x_bits;
        let content = self.ext[start..start + (1 << self.x_bits)].to_vec();
        if self.state.blocks.get(&hash_block(&content)) == Some(&id) {
            self.state.blocks.remove(&hash_block(&content));
        }
        for entry in content {
            self.release(entry);
        }
        self.state.free_blocks.push(id);
    }

    /// [`LegacyEngine::update`]: rebuilds the chunks the changed prefixes cover.
    pub(super) fn update_chunks(
        &mut self,
        rib: &Rib<u32>,
        changed: &[Prefix<u32>],
    ) -> Result<(), BuildError> {
        let shift = self.chunk_shift;
        let merged = crate::engines::touched_blocks(changed, shift);
        let mut ranges = Vec::new();
        let mut pieces = Vec::new();
        let mut fresh: Vec<(u32, u32)> = Vec::new(); // (chunk, entry)
        for (lo, hi) in merged {
            ranges.clear();
            rib.ranges_in(
                lo << shift,
                (hi << shift) | self.offset_mask,
                true,
                &mut ranges,
            );
            let mut next = 0;
            for chunk in lo..=hi {
                let first = chunk << shift;
                let last = first | self.offset_mask;
                while ranges[next].last < first {
                    next += 1;
                }
                pieces.clear();
                pieces.extend(ranges[next..].iter().take_while(|r| r.first <= last));
                match self.chunk_entry(&pieces, first) {
                    Ok(entry) => fresh.push((chunk, entry)),
                    Err(error) => {
                        for (_, entry) in fresh {
                            self.release(entry);
                        }
                        return Err(self.limit_error(error, rib));
                    }
                }
            }
        }
        self.apply_entries(&fresh);
        self.state.prefixes = rib.len();
        let free = self.state.free.words;
        if free > COMPACT_MIN_WORDS && free > self.ranges.len() / COMPACT_RATIO {
            let compactions = self.state.compactions + 1;
            let build_ns = self.state.build_ns;
            *self = Self::with_layout(self.layout, rib)?;
            self.state.compactions = compactions;
            self.state.build_ns = build_ns;
        }
        Ok(())
    }

    /// Puts `fresh` (chunk, entry) pairs, sorted by chunk and each holding
    /// one reference, in place of the old entries.
    fn apply_entries(&mut self, fresh: &[(u32, u32)]) {
        if self.layout.d_bits == 0 {
            for &(chunk, entry) in fresh {
                let old = std::mem::replace(&mut self.ext[chunk as usize], entry);
                self.release(old);
            }
            return;
        }
        let x = self.x_bits;
        let block_len = 1usize << x;
        for group in fresh.chunk_by(|a, b| a.0 >> x == b.0 >> x) {
            let slot = (group[0].0 >> x) as usize;
            let old_id = self.direct[slot];
            let old_start = (old_id as usize) << x;
            let mut content = self.ext[old_start..old_start + block_len].to_vec();
            for &(chunk, entry) in group {
                content[(chunk & self.x_mask) as usize] = entry;
            }
            if let Some(id) = self.find_block(&content) {
                if id != old_id {
                    self.state.block_refs[id as usize] += 1;
                    self.direct[slot] = id;
                    self.release_block(old_id);
                }
                // The found block holds its own references.
                for &(_, entry) in group {
                    self.release(entry);
                }
            } else if self.state.block_refs[old_id as usize] == 1 {
                // Sole owner: rewrite the block in place.
                let old_hash = hash_block(&self.ext[old_start..old_start + block_len]);
                if self.state.blocks.get(&old_hash) == Some(&old_id) {
                    self.state.blocks.remove(&old_hash);
                }
                for &(chunk, entry) in group {
                    let at = old_start + (chunk & self.x_mask) as usize;
                    let old = std::mem::replace(&mut self.ext[at], entry);
                    self.release(old);
                }
                self.state.blocks.insert(hash_block(&content), old_id);
            } else {
                // Shared: copy on write. Every chunk in the copy gains a
                // reference; the group's own references are then dropped.
                for &entry in &content {
                    if entry >> FORMAT_SHIFT != FORMAT_LABEL {
                        self.state.chunk_refs[(entry & BASE_MASK) as usize] += 1;
                    }
                }
                for &(_, entry) in group {
                    self.release(entry);
                }
                let id = self.new_block(&content);
                self.direct[slot] = id;
                self.release_block(old_id);
            }
        }
    }

    /// Turns a chunk error into a [`BuildError`], naming the `K` values whose
    /// range table would fit (estimated without dedup, so an upper bound).
    fn limit_error(&self, error: ChunkError, rib: &Rib<u32>) -> BuildError {
        match error {
            ChunkError::Label(error) => error,
            ChunkError::Base => {
                let ranges = rib.ranges();
                let fitting: Vec<String> = (MIN_K..=MAX_K)
                    .filter(|&k| estimate_words(&ranges, k) <= 1 << BASE_BITS)
                    .map(|k| format!("k={k}"))
                    .collect();
                BuildError::Limit {
                    engine: self.name(),
                    why: format!(
                        "the range table needs more than 2^{BASE_BITS} 16-bit words, the most a \
                         {BASE_BITS}-bit chunk base can address; {}",
                        if fitting.is_empty() {
                            "no K in 16..=24 fits this table (use dir24-8)".to_string()
                        } else {
                            format!("these layouts fit: {}", fitting.join(", "))
                        }
                    ),
                }
            }
        }
    }
}

/// Why a chunk could not be stored.
enum ChunkError {
    Label(BuildError),
    Base,
}

/// Range-table words layout `k` needs for `ranges` without dedup, assuming
/// the widest format (an upper bound).
fn estimate_words(ranges: &[Range<u32>], k: u32) -> usize {
    let shift = 32 - k;
    let mut words = 0usize;
    let mut chunk_ranges = 0usize;
    let mut chunk = 0u32;
    let flush = |n: usize, words: &mut usize| {
        if n > 1 {
            *words += 1 + 3 * n;
        }
    };
    for range in ranges {
        let first = range.first >> shift;
        let last = range.last >> shift;
        if first != chunk {
            flush(chunk_ranges, &mut words);
            chunk_ranges = 0;
        }
        chunk_ranges += 1;
        if last != first {
            // The range ends in a later chunk, where it is that chunk's first.
            flush(chunk_ranges, &mut words);
            chunk_ranges = 1;
        }
        chunk = last;
    }
    flush(chunk_ranges, &mut words);
    words
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

fn hash_block(content: &[u32]) -> u64 {
    content.chunks(2).fold(0, |hash, pair| {
        mix(
            hash,
            pair[0] as u64 | (pair.get(1).copied().unwrap_or(0) as u64) << 32,
        )
    })
}
