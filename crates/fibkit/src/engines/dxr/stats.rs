//! DXR statistics: the figures of thesis Tables 3.1 and 3.2.

use std::collections::HashSet;

use super::*;
use crate::engine::EngineStats;

/// What a DXR engine looks like inside (thesis Tables 3.1 and 3.2).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct DxrStats {
    /// The engine spec.
    pub spec: String,
    /// Prefixes in the table it was built or last updated from.
    pub prefixes: usize,
    /// Distinct labels in the results table (slot 0 counted if it holds a
    /// default route whose label no other slot has).
    pub labels: usize,
    /// Bytes of all lookup structures ([`Lookup::memory_bytes`]).
    pub footprint_bytes: usize,
    /// Of which the first-level direct table (extended layout only).
    pub direct_bytes: usize,
    /// Of which the direct (D{K}R) or extension table.
    pub ext_bytes: usize,
    /// Of which the range table, free space included.
    pub range_bytes: usize,
    /// Of which the results table.
    pub results_bytes: usize,
    /// Free range-table words awaiting reuse.
    pub free_range_words: usize,
    /// Share of the `2^K` chunks resolved by their entry alone.
    pub direct_coverage: f64,
    /// Distinct stored chunks (after dedup) per format: short, long, wide.
    pub chunks: [usize; 3],
    /// Ranges in those stored chunks per format: short, long, wide.
    pub ranges: [usize; 3],
    /// Chunk references (before dedup) per format: short, long, wide.
    pub chunk_refs: [usize; 3],
    /// Range-table bytes dedup saves (what duplicates would take).
    pub dedup_saved_bytes: usize,
    /// Extended layout: distinct extension blocks, and the bytes dedup of
    /// blocks saves.
    pub blocks: usize,
    /// See [`DxrStats::blocks`].
    pub block_dedup_saved_bytes: usize,
    /// Wall time of the last full build (the first, or a rebuild by an
    /// update), in nanoseconds.
    pub build_ns: u64,
    /// Rebuilds that updates triggered to compact the range table.
    pub compactions: u64,
    /// Updates that rebuilt the snapshot because their changes touched
    /// too many chunks to patch.
    pub span_rebuilds: u64,
    /// `steps[n]`: share of the address space whose lookup takes `n` binary
    /// search steps (`n = 0`: resolved by the entry) (thesis Table 3.1).
    pub steps: Vec<f64>,
}

impl DxrStats {
    /// Footprint divided by prefixes.
    pub fn bytes_per_prefix(&self) -> f64 {
        self.footprint_bytes as f64 / self.prefixes.max(1) as f64
    }

    /// The figures `snapshot` shows by itself, found by walking every chunk
    /// entry; `live_blocks` is the extended layout's count of blocks in
    /// use. The updater fills in what only it knows.
    pub(super) fn new(snapshot: &Dxr, live_blocks: usize) -> Self {
        let mut stats = DxrStats {
            spec: snapshot.config.to_string(),
            footprint_bytes: snapshot.memory_bytes(),
            direct_bytes: snapshot.direct.len() * 2,
            ext_bytes: snapshot.ext.len() * 4,
            range_bytes: snapshot.ranges.len() * 2,
            results_bytes: snapshot.results.len() * std::mem::size_of::<LabelSlot>(),
            ..DxrStats::default()
        };
        let mut steps = [0usize; 17];
        let mut label_entries = 0usize;
        let mut seen = HashSet::new();
        let mut all_words = 0usize;
        let mut unique_words = 0usize;
        let mut visit = |entry: u32, stats: &mut DxrStats| {
            if is_label(entry) {
                label_entries += 1;
                steps[0] += 1;
                return;
            }
            let format = format_of(entry) as usize - 1;
            let words = build::chunk_words(snapshot.geometry, &snapshot.ranges, entry);
            let n = if size_of(entry) == SIZE_ESCAPE {
                snapshot.ranges[snapshot.geometry.base_of(entry)] as usize + 1
            } else {
                size_of(entry) as usize
            };
            steps[search_steps(n)] += 1;
            stats.chunk_refs[format] += 1;
            all_words += words;
            if seen.insert(entry) {
                stats.chunks[format] += 1;
                stats.ranges[format] += n;
                unique_words += words;
            }
        };
        let chunks = 1usize << snapshot.config.k_bits;
        if snapshot.config.is_extended() {
            let block_len = 1usize << snapshot.geometry.x_bits;
            for &id in &snapshot.direct {
                let start = id as usize * block_len;
                for &entry in &snapshot.ext[start..start + block_len] {
                    visit(entry, &mut stats);
                }
            }
            stats.blocks = live_blocks;
            stats.block_dedup_saved_bytes = (snapshot.direct.len() - live_blocks) * block_len * 4;
        } else {
            for &entry in &snapshot.ext {
                visit(entry, &mut stats);
            }
        }
        stats.dedup_saved_bytes = (all_words - unique_words) * 2;
        stats.direct_coverage = label_entries as f64 / chunks as f64;
        let last = steps.iter().rposition(|&c| c > 0).unwrap_or(0);
        stats.steps = steps[..=last]
            .iter()
            .map(|&c| c as f64 / chunks as f64)
            .collect();
        stats
    }
}

impl EngineStats for DxrStats {
    fn rows(&self) -> Vec<(String, String)> {
        let mut rows = vec![
            ("layout".to_string(), self.spec.clone()),
            ("prefixes".to_string(), self.prefixes.to_string()),
            ("distinct labels".to_string(), self.labels.to_string()),
            (
                "footprint bytes".to_string(),
                self.footprint_bytes.to_string(),
            ),
            (
                "bytes per prefix".to_string(),
                format!("{:.3}", self.bytes_per_prefix()),
            ),
            (
                "direct table bytes".to_string(),
                self.direct_bytes.to_string(),
            ),
            (
                "chunk entries bytes".to_string(),
                self.ext_bytes.to_string(),
            ),
            (
                "range table bytes".to_string(),
                self.range_bytes.to_string(),
            ),
            ("results bytes".to_string(), self.results_bytes.to_string()),
            (
                "direct coverage".to_string(),
                format!("{:.2}%", 100.0 * self.direct_coverage),
            ),
        ];
        for (i, name) in ["short", "long", "wide"].iter().enumerate() {
            rows.push((
                format!("{name} chunks (refs)"),
                format!("{} ({})", self.chunks[i], self.chunk_refs[i]),
            ));
            rows.push((format!("{name} ranges"), self.ranges[i].to_string()));
        }
        rows.push((
            "dedup saved bytes".to_string(),
            self.dedup_saved_bytes.to_string(),
        ));
        if self.blocks > 0 {
            rows.push(("extension blocks".to_string(), self.blocks.to_string()));
            rows.push((
                "block dedup saved bytes".to_string(),
                self.block_dedup_saved_bytes.to_string(),
            ));
        }
        rows.push((
            "free range words".to_string(),
            self.free_range_words.to_string(),
        ));
        rows.push((
            "build ms".to_string(),
            format!("{:.1}", self.build_ns as f64 / 1e6),
        ));
        rows.push(("compactions".to_string(), self.compactions.to_string()));
        rows.push((
            "rebuilds for large changes".to_string(),
            self.span_rebuilds.to_string(),
        ));
        for (n, share) in self.steps.iter().enumerate() {
            rows.push((
                format!("addresses after {n} search steps"),
                format!("{:.3}%", 100.0 * share),
            ));
        }
        rows
    }
}
