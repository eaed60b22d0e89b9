//! DXR snapshots in saved images ([`crate::image`]): the four arrays as
//! sections, and the checks that make a mapped snapshot safe to look up.
//!
//! ```text
//! section   element      holds
//! direct    u16          extended layout's block numbers (empty for D{K}R)
//! ext       u32          chunk entries
//! ranges    u16          the range table
//! results   LabelSlot    label slots, index 0 = the default route (or none)
//! ```
//! The layout (`K`, `D`) comes from the image's engine spec.
//!
//! What opening checks, and why it is enough: lookups index `direct` by
//! the top `D` bits and `ext` by a block and the chunk bits (both without
//! bounds checks in the batch loop), read a label entry's index in
//! `results` (unchecked too), and search a chunk's words from its base,
//! reading its first word as `<=` every probe. So the table sizes must
//! match the layout, every block number must name a whole block of `ext`,
//! every label index must be inside `results`, and every chunk must lie
//! inside `ranges`, hold at least one range, start at offset 0 and name
//! only label indices inside `results`. Only the blocks of `ext` a direct
//! entry names are checked in the extended layout: an updated snapshot
//! keeps unnamed blocks, free for reuse, whose stale entries no lookup
//! reads. Each distinct chunk is checked
//! once: chunks may be shared by many entries (deduplication) but never
//! overlap, so the checks read every chunk entry and range word once,
//! whatever the image holds.

use super::{
    format_of, is_label, label_of, size_of, Dxr, DxrConfig, Geometry, FORMAT_LONG, FORMAT_SHORT,
    SIZE_ESCAPE,
};
use crate::image::{Image, ImageError, Mapped, SectionData};

crate::image::saved!([] Dxr => Dxr<Mapped>, u32);

impl Dxr {
    /// The arrays to save in an image.
    pub fn image_sections(&self) -> Vec<SectionData<'_>> {
        vec![
            SectionData::new("direct", &self.direct),
            SectionData::new("ext", &self.ext),
            SectionData::new("ranges", &self.ranges),
            SectionData::results(&self.results),
        ]
    }
}

impl Dxr<Mapped> {
    /// The snapshot saved in `image`, read in place, after checking every
    /// invariant the lookups rely on (see the module docs).
    pub fn from_image(image: &Image) -> Result<Self, ImageError> {
        let config: DxrConfig = image.config()?;
        let snapshot = Dxr {
            config,
            geometry: Geometry::new(config),
            direct: image.array::<u16>("direct")?,
            ext: image.array::<u32>("ext")?,
            ranges: image.array::<u16>("ranges")?,
            results: image.results()?,
        };
        image.checked(snapshot, Self::check)
    }

    fn check(&self) -> Result<(), String> {
        let (k, d) = (self.config.k_bits, self.config.d_bits);
        // The blocks of `ext` a lookup can reach: every one in D{K}R, only
        // those a direct entry names in the extended layout. An updated
        // snapshot keeps the blocks it no longer names (free for reuse)
        // with whatever chunk entries they held, whose chunks may since
        // have been freed and reused: no lookup reads them, so they are
        // not checked.
        let (block_len, reachable) = if self.config.is_extended() {
            let block_len = 1usize << (k - d);
            if self.direct.len() != 1 << d || !self.ext.len().is_multiple_of(block_len) {
                return Err("the direct or extension table has the wrong size".into());
            }
            let mut reachable = vec![false; self.ext.len() / block_len];
            for &block in self.direct.iter() {
                *reachable
                    .get_mut(block as usize)
                    .ok_or("a direct entry names a block outside the extension table")? = true;
            }
            (block_len, reachable)
        } else if !self.direct.is_empty() || self.ext.len() != 1 << k {
            return Err(format!("the chunk table does not have 2^{k} entries"));
        } else {
            (self.ext.len(), vec![true])
        };
        // The chunk entry whose data covers each range word (0: none yet;
        // chunk entries are never 0, whose format is "label").
        let mut owner = vec![0u32; self.ranges.len()];
        let blocks = self.ext.chunks_exact(block_len).zip(reachable);
        for (block, _) in blocks.filter(|(_, reachable)| *reachable) {
            for &entry in block {
                if is_label(entry) {
                    if label_of(entry) as usize >= self.results.len() {
                        return Err("a chunk entry names a label outside the results".into());
                    }
                } else if owner.get(self.geometry.base_of(entry)) != Some(&entry) {
                    self.check_chunk(entry, &mut owner)?;
                }
            }
        }
        Ok(())
    }

    /// Checks the chunk `entry` points to and marks its words as its own.
    fn check_chunk(&self, entry: u32, owner: &mut [u32]) -> Result<(), String> {
        let ranges = &self.ranges[..];
        let outside = || "a chunk lies outside the range table".to_string();
        let region = self.geometry.base_of(entry);
        let mut n = size_of(entry) as usize;
        let header = usize::from(n == SIZE_ESCAPE as usize);
        if header == 1 {
            n = *ranges.get(region).ok_or_else(outside)? as usize + 1;
        }
        let base = region + header;
        let words_per_range = match format_of(entry) {
            FORMAT_SHORT => 1,
            FORMAT_LONG => 2,
            _ => 3,
        };
        let end = base + n * words_per_range;
        if n == 0 || end > ranges.len() {
            return Err(outside());
        }
        if owner[region..end].iter().any(|&other| other != 0) {
            return Err("two chunks overlap in the range table".into());
        }
        owner[region..end].fill(entry);
        let (first, data) = (ranges[base], &ranges[base + n..end]);
        let labels_inside = match format_of(entry) {
            FORMAT_SHORT => {
                first >> 8 == 0
                    && ranges[base..end]
                        .iter()
                        .all(|&word| self.has_label((word & 0xff) as usize))
            }
            FORMAT_LONG => first == 0 && data.iter().all(|&label| self.has_label(label as usize)),
            _ => {
                first == 0
                    && data
                        .chunks_exact(2)
                        .all(|pair| self.has_label(pair[0] as usize | (pair[1] as usize) << 16))
            }
        };
        if labels_inside {
            Ok(())
        } else {
            Err("a chunk does not start at offset 0 or names a label outside the results".into())
        }
    }

    fn has_label(&self, index: usize) -> bool {
        index < self.results.len()
    }
}
