//! Saved FIB images: a built snapshot written to a file once, then opened
//! anywhere with a memory map and looked up in place, without copying or
//! rebuilding (as regex-automata serialises its DFAs).
//!
//! ```text
//! offset  size  field
//! 0       8     magic "FIBKITIM"
//! 8       4     format version (little-endian u32, as every header field)
//! 12      4     byte-order mark 0x01020304 written in the writer's order
//! 16      1     address family: 4 or 6
//! 17      1     pointer width of the writer in bytes
//! 18      2     engine spec length n
//! 20      4     section count s
//! 24      8     CRC-32C of every byte after this header, and of the header
//!               with this field zeroed
//! 32      8     file length in bytes
//! 40      n     engine spec, UTF-8 (`dxr:k=20`)
//! ...     s x 40  sections: name [16 bytes, NUL-padded], offset u64,
//!                 length u64 (elements), element size u32, reserved u32
//! then the sections' data, each at a 64-byte-aligned offset, in the
//! writer's byte order
//! ```
//!
//! Opening checks, before any lookup: the magic, version, byte order and
//! pointer width (an image from another version or architecture is an
//! error naming it), the file length, the checksum, and that every section
//! lies inside the file, is aligned for its element type and has the
//! element size the reader expects. The engine then checks every invariant
//! its lookups rely on (every index in bounds), so a tampered image with a
//! correct checksum is still an error, never an out-of-bounds read.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::addr::{Addr, Family};
use crate::engine::{EngineConfig, Lookup};
use crate::labels::LabelSlot;
use crate::storage::{Plain, Storage};

/// The first bytes of every image.
pub const MAGIC: &[u8; 8] = b"FIBKITIM";
/// The format version this build writes and reads. Version 2 stores a
/// results slot's "route" flag in its low half and the label in its high
/// half (version 1 had them the other way round).
pub const VERSION: u32 = 2;
const BYTE_ORDER_MARK: u32 = 0x0102_0304;
const HEADER_BYTES: usize = 40;
const SECTION_ENTRY_BYTES: usize = 40;
const SECTION_NAME_BYTES: usize = 16;
/// Sections start on cache-line boundaries.
const SECTION_ALIGN: usize = 64;
/// The largest section count a reader accepts (engines have a handful).
const MAX_SECTIONS: usize = 64;

pub use crate::error::ImageError;

/// How an engine's snapshot is saved as an image and read back in place:
/// part of the engine contract, implemented by every engine's snapshot
/// (those without images say so with [`NotSaved`]), so the registry saves
/// and opens images of any engine without naming one.
pub trait Saved<A: Addr> {
    /// The snapshot read in place from an image ([`NotSaved`] for an engine
    /// without images).
    type Mapped: Lookup<A> + Clone;

    /// Whether the engine has images.
    const SAVABLE: bool;

    /// The arrays to save, or `None` for an engine without images.
    fn sections(&self) -> Option<Vec<SectionData<'_>>>;

    /// The snapshot saved in `image`, checked (whose spec names this
    /// engine and whose family is `A`'s).
    fn open(image: &Image) -> Result<Self::Mapped, ImageError>;
}

/// The mapped snapshot of an engine without images: no value of it
/// exists, so its variant of the registry's mapped enums is never built.
#[derive(Clone, Copy, Debug)]
pub enum NotSaved {}

impl<A: Addr> Lookup<A> for NotSaved {
    fn lookup(&self, _addr: A) -> Option<crate::prefix::Label> {
        match *self {}
    }

    fn memory_bytes(&self) -> usize {
        match *self {}
    }
}

/// Declares that an engine's snapshot type has no image:
/// `not_saved!([A: Addr] Radix<A>, A)` (the impl's generics, the
/// snapshot type, its address type).
macro_rules! not_saved {
    ([$($generics:tt)*] $snapshot:ty, $A:ty) => {
        impl<$($generics)*> $crate::image::Saved<$A> for $snapshot {
            type Mapped = $crate::image::NotSaved;
            const SAVABLE: bool = false;

            fn sections(&self) -> Option<Vec<$crate::image::SectionData<'_>>> {
                None
            }

            fn open(image: &$crate::image::Image) -> Result<Self::Mapped, $crate::image::ImageError> {
                Err(image.invalid("this engine has no images"))
            }
        }
    };
}
pub(crate) use not_saved;

/// Declares an engine's snapshot saved by its inherent `image_sections`
/// and read back by its `from_image`: `saved!([A: Addr] Poptrie<A> =>
/// Poptrie<A, Mapped>, A)` (the impl's generics, the snapshot type, the
/// type read from an image, the address type).
macro_rules! saved {
    ([$($generics:tt)*] $snapshot:ty => $mapped:ty, $A:ty $(, where [$($where:tt)*])?) => {
        impl<$($generics)*> $crate::image::Saved<$A> for $snapshot $(where $($where)*)? {
            type Mapped = $mapped;
            const SAVABLE: bool = true;

            fn sections(&self) -> Option<Vec<$crate::image::SectionData<'_>>> {
                Some(self.image_sections())
            }

            fn open(image: &$crate::image::Image) -> Result<Self::Mapped, $crate::image::ImageError> {
                <$mapped>::from_image(image)
            }
        }
    };
}
pub(crate) use saved;

/// The name of the results table's section, which every engine saves.
const RESULTS_SECTION: &str = "results";

/// A section to write: its name and its elements' bytes.
pub struct SectionData<'a> {
    name: &'static str,
    bytes: &'a [u8],
    elements: usize,
    element_bytes: usize,
}

impl<'a> SectionData<'a> {
    /// The section `name` holding `elements`.
    pub fn new<T: Plain>(name: &'static str, elements: &'a [T]) -> Self {
        assert!(name.len() <= SECTION_NAME_BYTES, "section name too long");
        // SAFETY: `T: Plain` has no padding bytes, so every byte of the
        // slice is initialised; the length is the slice's size in bytes.
        let bytes = unsafe {
            std::slice::from_raw_parts(
                elements.as_ptr().cast::<u8>(),
                std::mem::size_of_val(elements),
            )
        };
        SectionData {
            name,
            bytes,
            elements: elements.len(),
            element_bytes: std::mem::size_of::<T>(),
        }
    }

    /// The engine's results table (read back by [`Image::results`]).
    pub fn results(results: &'a [LabelSlot]) -> Self {
        SectionData::new(RESULTS_SECTION, results)
    }
}

/// Serialises an engine's snapshot: `family`, `spec`, and its sections.
pub fn to_bytes(family: Family, spec: &str, sections: &[SectionData<'_>]) -> Vec<u8> {
    let table_end = HEADER_BYTES + spec.len() + sections.len() * SECTION_ENTRY_BYTES;
    let mut offsets = Vec::with_capacity(sections.len());
    let mut end = table_end;
    for section in sections {
        let start = end.next_multiple_of(SECTION_ALIGN);
        offsets.push(start);
        end = start + section.bytes.len();
    }
    let mut bytes = vec![0u8; end];
    bytes[..8].copy_from_slice(MAGIC);
    bytes[8..12].copy_from_slice(&VERSION.to_le_bytes());
    bytes[12..16].copy_from_slice(&BYTE_ORDER_MARK.to_ne_bytes());
    bytes[16] = match family {
        Family::V4 => 4,
        Family::V6 => 6,
    };
    bytes[17] = std::mem::size_of::<usize>() as u8;
    bytes[18..20].copy_from_slice(&(spec.len() as u16).to_le_bytes());
    bytes[20..24].copy_from_slice(&(sections.len() as u32).to_le_bytes());
    bytes[32..40].copy_from_slice(&(end as u64).to_le_bytes());
    bytes[HEADER_BYTES..HEADER_BYTES + spec.len()].copy_from_slice(spec.as_bytes());
    for (i, (section, &offset)) in sections.iter().zip(&offsets).enumerate() {
        let entry = HEADER_BYTES + spec.len() + i * SECTION_ENTRY_BYTES;
        bytes[entry..entry + section.name.len()].copy_from_slice(section.name.as_bytes());
        let at = entry + SECTION_NAME_BYTES;
        bytes[at..at + 8].copy_from_slice(&(offset as u64).to_le_bytes());
        bytes[at + 8..at + 16].copy_from_slice(&(section.elements as u64).to_le_bytes());
        bytes[at + 16..at + 20].copy_from_slice(&(section.element_bytes as u32).to_le_bytes());
        bytes[offset..offset + section.bytes.len()].copy_from_slice(section.bytes);
    }
    let checksum = crc32fast::hash(&bytes) as u64;
    bytes[24..32].copy_from_slice(&checksum.to_le_bytes());
    bytes
}

/// The bytes of an opened image: a memory map, or an aligned copy in memory.
enum Bytes {
    Mapped(memmap2::Mmap),
    /// Cache lines keep the buffer as aligned as the sections (64 bytes,
    /// what 64-byte elements such as `dxr6`'s leaf lines need); `len`
    /// bytes are used.
    Owned {
        lines: Vec<AlignedLine>,
        len: usize,
    },
}

/// 64 bytes at a 64-byte boundary: the unit of an image copied to memory.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct AlignedLine([u8; SECTION_ALIGN]);

impl Bytes {
    fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Mapped(map) => map,
            // SAFETY: the lines hold at least `len` initialised bytes.
            Bytes::Owned { lines, len } => unsafe {
                std::slice::from_raw_parts(lines.as_ptr().cast::<u8>(), *len)
            },
        }
    }
}

/// An opened, validated image: its family, engine spec and sections, over
/// bytes that stay alive as long as any array taken from it.
#[derive(Clone)]
pub struct Image {
    bytes: Arc<Bytes>,
    path: PathBuf,
    family: Family,
    spec: String,
    sections: Vec<Section>,
}

#[derive(Clone, Debug)]
struct Section {
    name: String,
    offset: usize,
    elements: usize,
    element_bytes: usize,
}

impl fmt::Debug for Image {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Image")
            .field("path", &self.path)
            .field("family", &self.family)
            .field("spec", &self.spec)
            .field("sections", &self.sections)
            .finish()
    }
}

impl Image {
    /// Maps `path` and validates its header, checksum and section table.
    pub fn open(path: &Path) -> Result<Image, ImageError> {
        let io = |source| ImageError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = std::fs::File::open(path).map_err(io)?;
        // SAFETY: the map is read-only; fibkit never writes the file while
        // it is mapped. Another process truncating or rewriting the file
        // underneath would change what lookups read (as for any mapped
        // file); images are written once and then only read.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
        Self::validate(Bytes::Mapped(map), path.to_path_buf())
    }

    /// Validates an image held in memory (copied into aligned storage).
    pub fn from_bytes(bytes: &[u8]) -> Result<Image, ImageError> {
        let mut lines = vec![AlignedLine([0; SECTION_ALIGN]); bytes.len().div_ceil(SECTION_ALIGN)];
        for (line, chunk) in lines.iter_mut().zip(bytes.chunks(SECTION_ALIGN)) {
            line.0[..chunk.len()].copy_from_slice(chunk);
        }
        Self::validate(
            Bytes::Owned {
                lines,
                len: bytes.len(),
            },
            PathBuf::from("<bytes>"),
        )
    }

    fn validate(bytes: Bytes, path: PathBuf) -> Result<Image, ImageError> {
        let invalid = |why: String| ImageError::Invalid {
            path: path.clone(),
            why,
        };
        let data = bytes.as_slice();
        if data.len() < HEADER_BYTES || &data[..8] != MAGIC {
            return Err(invalid(
                "not a fibkit image (no FIBKITIM header)".to_string(),
            ));
        }
        let u32_at = |at: usize| u32::from_le_bytes(data[at..at + 4].try_into().expect("4 bytes"));
        let u64_at = |at: usize| u64::from_le_bytes(data[at..at + 8].try_into().expect("8 bytes"));
        let version = u32_at(8);
        if version != VERSION {
            return Err(invalid(format!(
                "image format version {version}, but this fibkit reads version {VERSION} \
                 (rebuild the image with this fibkit)"
            )));
        }
        if data[12..16] != BYTE_ORDER_MARK.to_ne_bytes() {
            return Err(invalid(
                "the image was written on a machine of the other byte order (rebuild it here)"
                    .to_string(),
            ));
        }
        if data[17] as usize != std::mem::size_of::<usize>() {
            return Err(invalid(format!(
                "the image was written on a {}-bit machine, this is {}-bit (rebuild it here)",
                data[17] as usize * 8,
                std::mem::size_of::<usize>() * 8
            )));
        }
        let family = match data[16] {
            4 => Family::V4,
            6 => Family::V6,
            other => return Err(invalid(format!("unknown address family byte {other}"))),
        };
        let file_len = u64_at(32);
        if file_len != data.len() as u64 {
            return Err(invalid(format!(
                "the file has {} bytes but its header says {file_len} (truncated or extended)",
                data.len()
            )));
        }
        let stored = u64_at(24);
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&data[..24]);
        hasher.update(&[0u8; 8]);
        hasher.update(&data[32..]);
        if hasher.finalize() as u64 != stored {
            return Err(invalid(
                "checksum mismatch: the image is damaged".to_string(),
            ));
        }
        let spec_len = u16::from_le_bytes([data[18], data[19]]) as usize;
        let section_count = u32_at(20) as usize;
        if section_count > MAX_SECTIONS {
            return Err(invalid(format!(
                "{section_count} sections (at most {MAX_SECTIONS})"
            )));
        }
        let table_end = HEADER_BYTES + spec_len + section_count * SECTION_ENTRY_BYTES;
        if table_end > data.len() {
            return Err(invalid(
                "the section table runs past the end of the file".to_string(),
            ));
        }
        let spec = std::str::from_utf8(&data[HEADER_BYTES..HEADER_BYTES + spec_len])
            .map_err(|_| invalid("the engine spec is not UTF-8".to_string()))?
            .to_string();
        let mut sections = Vec::with_capacity(section_count);
        for i in 0..section_count {
            let entry = HEADER_BYTES + spec_len + i * SECTION_ENTRY_BYTES;
            let name_bytes = &data[entry..entry + SECTION_NAME_BYTES];
            let name_len = name_bytes
                .iter()
                .position(|&b| b == 0)
                .unwrap_or(SECTION_NAME_BYTES);
            let name = std::str::from_utf8(&name_bytes[..name_len])
                .map_err(|_| invalid(format!("section {i} has a name that is not UTF-8")))?
                .to_string();
            let at = entry + SECTION_NAME_BYTES;
            let offset = u64_at(at);
            let elements = u64_at(at + 8);
            let element_bytes = u32_at(at + 16) as u64;
            let end = elements
                .checked_mul(element_bytes)
                .and_then(|len| len.checked_add(offset));
            if offset < table_end as u64 || end.is_none_or(|end| end > data.len() as u64) {
                return Err(invalid(format!(
                    "section `{name}` ({elements} x {element_bytes} bytes at {offset}) lies outside the file"
                )));
            }
            if !(offset as usize).is_multiple_of(SECTION_ALIGN) {
                return Err(invalid(format!("section `{name}` is not aligned")));
            }
            sections.push(Section {
                name,
                offset: offset as usize,
                elements: elements as usize,
                element_bytes: element_bytes as usize,
            });
        }
        Ok(Image {
            bytes: Arc::new(bytes),
            path,
            family,
            spec,
            sections,
        })
    }

    /// The address family of the saved engine.
    pub fn family(&self) -> Family {
        self.family
    }

    /// The saved engine's spec (`dxr:k=20`).
    pub fn spec(&self) -> &str {
        &self.spec
    }

    /// The file the image was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes of the whole image.
    pub fn len_bytes(&self) -> usize {
        self.bytes.as_slice().len()
    }

    /// The names of the image's sections, in file order.
    pub fn section_names(&self) -> impl Iterator<Item = &str> {
        self.sections.iter().map(|section| section.name.as_str())
    }

    /// Where the section `name`'s data lies in the file, in bytes (for
    /// tools that inspect or patch images).
    pub fn section_bytes(&self, name: &str) -> Option<std::ops::Range<usize>> {
        let section = self.sections.iter().find(|s| s.name == name)?;
        Some(section.offset..section.offset + section.elements * section.element_bytes)
    }

    /// An error about this image's content, for engines validating it.
    pub fn invalid(&self, why: impl Into<String>) -> ImageError {
        ImageError::Invalid {
            path: self.path.clone(),
            why: why.into(),
        }
    }

    /// The image's engine spec read as the parameters `C` of the engine
    /// opening it (the layout its arrays were built with).
    pub fn config<C: EngineConfig>(&self) -> Result<C, ImageError> {
        C::parse(&self.spec).map_err(|e| self.invalid(format!("{}: {e}", C::NAMES[0])))
    }

    /// The `results` section every engine saves: label slots, index 0 = no
    /// route. Lookups read slot 0 for addresses without a route, so it may
    /// not be empty; each engine checks its label indices against its length.
    pub fn results(&self) -> Result<MappedArray<LabelSlot>, ImageError> {
        let results = self.array::<LabelSlot>(RESULTS_SECTION)?;
        if results.is_empty() {
            return Err(self.invalid(format!("{}: no results table", self.spec)));
        }
        if let Some(at) = results.iter().position(|slot| !slot.is_well_formed()) {
            return Err(self.invalid(format!(
                "{}: results slot {at} is neither a label nor \"no route\"",
                self.spec
            )));
        }
        Ok(results)
    }

    /// `snapshot` if `check` (the engine's invariants, in its own words)
    /// accepts it, else an error naming the image's spec and what is wrong.
    pub fn checked<T>(
        &self,
        snapshot: T,
        check: impl FnOnce(&T) -> Result<(), String>,
    ) -> Result<T, ImageError> {
        match check(&snapshot) {
            Ok(()) => Ok(snapshot),
            Err(why) => Err(self.invalid(format!("{}: {why}", self.spec))),
        }
    }

    /// The section `name` as an array of `T`, checked for element size.
    pub fn array<T: Plain>(&self, name: &str) -> Result<MappedArray<T>, ImageError> {
        let section = self
            .sections
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| {
                self.invalid(format!(
                    "no section `{name}` (the image is not of this engine)"
                ))
            })?;
        if section.element_bytes != std::mem::size_of::<T>() {
            return Err(self.invalid(format!(
                "section `{name}` has {}-byte elements, expected {}",
                section.element_bytes,
                std::mem::size_of::<T>()
            )));
        }
        // Sections are 64-byte aligned in the file, and the file bytes are
        // page-aligned (map) or 64-byte aligned (copy).
        let base = self.bytes.as_slice().as_ptr();
        // SAFETY: validation checked `offset + elements * size <= len`.
        let ptr = unsafe { base.add(section.offset) }.cast::<T>();
        if !(ptr as usize).is_multiple_of(std::mem::align_of::<T>()) {
            return Err(self.invalid(format!("section `{name}` is misaligned for its elements")));
        }
        Ok(MappedArray {
            ptr,
            len: section.elements,
            _owner: Arc::clone(&self.bytes),
        })
    }
}

/// Arrays read in place from an [`Image`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mapped;

impl Storage for Mapped {
    type Array<T: Plain> = MappedArray<T>;
}

/// An array inside an opened image; keeps the image's bytes alive.
pub struct MappedArray<T> {
    ptr: *const T,
    len: usize,
    _owner: Arc<Bytes>,
}

// SAFETY: the array is read-only and its bytes are owned by the `Arc` it
// holds (a read-only map or a private copy), which is `Send + Sync`; `T` is
// `Plain`, so sharing reads across threads is sound.
unsafe impl<T: Plain> Send for MappedArray<T> {}
// SAFETY: as above.
unsafe impl<T: Plain> Sync for MappedArray<T> {}

impl<T> Clone for MappedArray<T> {
    fn clone(&self) -> Self {
        MappedArray {
            ptr: self.ptr,
            len: self.len,
            _owner: Arc::clone(&self._owner),
        }
    }
}

impl<T: Plain> std::ops::Deref for MappedArray<T> {
    type Target = [T];
    #[inline(always)]
    fn deref(&self) -> &[T] {
        // SAFETY: `Image::array` checked that the `len` elements at `ptr`
        // lie inside the image's bytes and that `ptr` is aligned for `T`;
        // `_owner` keeps those bytes alive and unchanged; `T: Plain`
        // accepts any bit pattern.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl<T: Plain> fmt::Debug for MappedArray<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MappedArray({} elements)", self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        let words: Vec<u32> = (0..1000).collect();
        let halves: Vec<u16> = (0..7).collect();
        to_bytes(
            Family::V4,
            "test:k=1",
            &[
                SectionData::new("words", &words),
                SectionData::new("halves", &halves),
            ],
        )
    }

    #[test]
    fn round_trip_in_memory_and_on_disk() {
        let bytes = sample();
        let image = Image::from_bytes(&bytes).unwrap();
        assert_eq!(image.spec(), "test:k=1");
        assert_eq!(image.family(), Family::V4);
        let words = image.array::<u32>("words").unwrap();
        assert_eq!(words.len(), 1000);
        assert_eq!(words[999], 999);
        assert_eq!(
            &image.array::<u16>("halves").unwrap()[..],
            &[0, 1, 2, 3, 4, 5, 6]
        );
        assert!(image
            .array::<u64>("words")
            .unwrap_err()
            .to_string()
            .contains("4-byte"));
        assert!(image.array::<u32>("nothing").is_err());
        let path = std::env::temp_dir().join(format!("fibkit-image-{}.fib", std::process::id()));
        std::fs::write(&path, &bytes).unwrap();
        let mapped = Image::open(&path).unwrap();
        let words = mapped.array::<u32>("words").unwrap();
        drop(mapped);
        // The array keeps the map alive after the image handle is gone.
        assert_eq!(words.iter().map(|&w| w as u64).sum::<u64>(), 999 * 1000 / 2);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn damage_is_an_error_naming_it() {
        let bytes = sample();
        let err = |bytes: &[u8]| Image::from_bytes(bytes).unwrap_err().to_string();
        assert!(err(&bytes[..bytes.len() - 1]).contains("truncated"));
        assert!(err(b"hello").contains("not a fibkit image"));
        let mut flipped = bytes.clone();
        flipped[bytes.len() - 3] ^= 1;
        assert!(err(&flipped).contains("checksum"));
        let mut version = bytes.clone();
        version[8] = 9;
        assert!(err(&version).contains("version 9"));
        let mut order = bytes.clone();
        order[12..16].reverse();
        assert!(err(&order).contains("byte order"));
        // A section pointing outside the file, with the checksum fixed up.
        let mut outside = bytes.clone();
        let entry = HEADER_BYTES + "test:k=1".len() + SECTION_NAME_BYTES;
        outside[entry..entry + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
        outside[24..32].fill(0);
        let checksum = crc32fast::hash(&outside) as u64;
        outside[24..32].copy_from_slice(&checksum.to_le_bytes());
        assert!(err(&outside).contains("outside the file"));
        // Every prefix of the file is rejected without a panic.
        for len in 0..bytes.len().min(400) {
            assert!(Image::from_bytes(&bytes[..len]).is_err());
        }
    }
}
