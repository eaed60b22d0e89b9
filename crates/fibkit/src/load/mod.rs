//! Loaders: tables and update streams from text and MRT files.
//!
//! Every loader streams its input, reads plain, gzip and bzip2 files alike
//! (detected from the first bytes, not the file name), and reports bad input
//! as `file:line: what is wrong`, quoting at most the first
//! [`EXCERPT_CHARS`](crate::prefix::EXCERPT_CHARS) characters of it. By
//! default the first bad line stops the load; with [`LoadOptions::skip_bad`]
//! bad lines are skipped and counted, and a load that skipped every line is
//! an error (nothing was loaded).
//!
//! Memory is bounded by what the input really holds: text is read line by
//! line with a [`LineReader`], and a line over [`MAX_LINE_BYTES`] stops the
//! load (even under `skip_bad`), so a compressed file that expands to
//! gigabytes without a line break costs 64 KiB, not gigabytes; MRT records
//! are bounded as their framing is read.
//!
//! A prefix given twice in a table keeps the label read last; the repeats
//! are counted in [`LoadStats::duplicates`].
//!
//! Formats ([`Format`]), detected from the content unless forced:
//! - `table`: `prefix label` lines (label a `u32`);
//! - `nexthop`: `prefix nexthop-address` lines; next hops are interned to
//!   labels in a [`NextHopTable`] kept with the table;
//! - `updates`: `time a|w prefix nexthop` lines, a stream of changes;
//! - `mrt`: binary MRT (RFC 6396) RIB dumps and BGP4MP update streams;
//! - `bgpdump`: bgpdump's one-line text of those (`bgpdump -m`), with the
//!   MRT loader's choice of peer and labels ([`bgpdump`]);
//! - `pfx2as`: CAIDA's RouteViews prefix-to-AS files, `address length
//!   origin` lines; the label is the origin AS: of several (`A_B`, a
//!   prefix more than one AS announces, listed most seen first) the first,
//!   and 0 for an AS set (`A,B`: no single origin, as the MRT loader
//!   labels a path ending in one). Both are counted in a note.
//!
//! Blank lines and lines starting with `#` or `;` (the comments of pyasn's
//! `prefix origin` files, which load as `table`) are skipped, and a UTF-8
//! byte order mark before the first line is ignored.
//!
//! Compressed input and MRT need the crate's `loaders` feature (on by
//! default); without it they are refused with an error saying so.
//!
//! IPv4 and IPv6 prefixes may be mixed in one file; each family goes to its
//! own reference table.
//!
//! Loading a table, building an engine on it, and applying an update
//! stream:
//!
//! ```
//! use fibkit::load::{load_table, load_updates, LoadOptions};
//! use fibkit::{Fib, Lookup};
//!
//! let dir = std::env::temp_dir().join(format!("fibkit-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! std::fs::write(dir.join("rib.txt"), "10.0.0.0/8 192.0.2.1\n2001:db8::/32 192.0.2.1\n")?;
//! std::fs::write(dir.join("updates.txt"), "1700000000 a 10.1.0.0/16 192.0.2.2\n")?;
//!
//! let table = load_table(&dir.join("rib.txt"), &LoadOptions::default())?;
//! let fib = Fib::new("dxr", table.v4.clone())?;
//! let updates = load_updates(&dir.join("updates.txt"), &LoadOptions::default(), table.nexthops.clone())?;
//! let (v4_changes, _v6_changes) = updates.changes_by_family();
//! fib.apply(&v4_changes)?;
//!
//! // Labels are next-hop indices; the table maps them back to addresses.
//! let label = fib.snapshot().lookup(u32::from(std::net::Ipv4Addr::new(10, 1, 2, 3)));
//! assert_eq!(updates.nexthops.addr(label.unwrap()), Some("192.0.2.2".parse()?));
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod bgpdump;
mod lines;
#[cfg(feature = "loaders")]
pub mod mrt;
mod peers;
pub mod text;

use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use crate::addr::Addr;
use crate::prefix::{excerpt, Label};
use crate::rib::{Change, Rib};

pub use crate::error::LoadError;

pub use lines::{LineReader, MAX_LINE_BYTES};

/// The input formats fibkit reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `prefix label` text.
    Table,
    /// `prefix nexthop-address` text.
    NextHop,
    /// `time a|w prefix nexthop` text.
    Updates,
    /// Binary MRT (RFC 6396).
    Mrt,
    /// CAIDA's RouteViews prefix-to-AS text: `address length origin`, the
    /// origin an AS number, several joined by `_` (a prefix announced by
    /// more than one AS, most seen first) or an AS set joined by `,`.
    Pfx2as,
    /// bgpdump's one-line text of an MRT file (`bgpdump -m`): a RIB dump's
    /// `B` lines, or an update stream's `A`, `W` and `STATE` lines.
    Bgpdump,
}

impl Format {
    /// Every format, with the name `--format` takes.
    pub const ALL: [(Format, &'static str); 6] = [
        (Format::Table, "table"),
        (Format::NextHop, "nexthop"),
        (Format::Updates, "updates"),
        (Format::Mrt, "mrt"),
        (Format::Pfx2as, "pfx2as"),
        (Format::Bgpdump, "bgpdump"),
    ];

    /// The name `--format` takes.
    pub fn name(self) -> &'static str {
        Format::ALL
            .iter()
            .find(|(format, _)| *format == self)
            .map(|(_, name)| *name)
            .unwrap_or("?")
    }
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        Format::ALL
            .iter()
            .find(|(_, name)| *name == text)
            .map(|(format, _)| *format)
            .ok_or_else(|| {
                format!(
                    "unknown format `{text}` (known: {})",
                    Format::ALL
                        .iter()
                        .map(|(_, n)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the MRT and bgpdump loaders use as a route's label.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LabelSource {
    /// The next-hop address, interned in the [`NextHopTable`].
    #[default]
    NextHop,
    /// The origin AS number (last AS of the AS path; 0 if there is none).
    OriginAs,
}

impl std::str::FromStr for LabelSource {
    type Err = String;
    /// `nexthop` or `origin-as`.
    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "nexthop" => Ok(LabelSource::NextHop),
            "origin-as" => Ok(LabelSource::OriginAs),
            _ => Err(format!(
                "`{text}` is not a label source (nexthop, origin-as)"
            )),
        }
    }
}

/// Which collector peer's routes a RIB dump load keeps (MRT or bgpdump
/// text), or whose changes an update stream's load keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeerSelector {
    /// The peer with this address.
    Addr(IpAddr),
    /// The peer with this AS number (the first such peer if several).
    Asn(u32),
}

impl std::str::FromStr for PeerSelector {
    type Err = String;
    /// `192.0.2.1`, `2001:db8::1`, `AS64500` or `64500`.
    fn from_str(text: &str) -> Result<Self, String> {
        if let Ok(addr) = text.parse::<IpAddr>() {
            return Ok(PeerSelector::Addr(addr));
        }
        let digits = text
            .strip_prefix("AS")
            .or_else(|| text.strip_prefix("as"))
            .unwrap_or(text);
        digits
            .parse::<u32>()
            .map(PeerSelector::Asn)
            .map_err(|_| format!("`{text}` is neither a peer address nor an AS number"))
    }
}

/// How to load a file.
#[derive(Clone, Copy, Default)]
pub struct LoadOptions<'a> {
    /// Force a format instead of detecting it.
    pub format: Option<Format>,
    /// Clear host bits instead of rejecting prefixes that have them (counted).
    pub lenient: bool,
    /// Skip and count bad lines or records instead of stopping at the first.
    pub skip_bad: bool,
    /// MRT and bgpdump RIB dumps: whose routes to keep (default: the peer
    /// with most prefixes); their update streams: whose changes (default:
    /// every peer's).
    pub peer: Option<PeerSelector>,
    /// MRT and bgpdump: what becomes the label.
    pub label: LabelSource,
    /// Called now and then with the number of input bytes read so far.
    pub progress: Option<&'a (dyn Fn(u64) + Sync)>,
}

/// Next-hop addresses interned as labels (label = position).
#[derive(Clone, Debug, Default)]
pub struct NextHopTable {
    addrs: Vec<IpAddr>,
    index: HashMap<IpAddr, Label>,
}

impl NextHopTable {
    /// The label of `addr`, interning it if new.
    pub fn intern(&mut self, addr: IpAddr) -> Label {
        if let Some(&label) = self.index.get(&addr) {
            return label;
        }
        let label = self.addrs.len() as Label;
        self.addrs.push(addr);
        self.index.insert(addr, label);
        label
    }

    /// The address behind `label`, if it is an interned one.
    pub fn addr(&self, label: Label) -> Option<IpAddr> {
        self.addrs.get(label as usize).copied()
    }

    /// `(label, address)` pairs in label order.
    pub fn iter(&self) -> impl Iterator<Item = (Label, IpAddr)> + '_ {
        self.addrs
            .iter()
            .enumerate()
            .map(|(label, addr)| (label as Label, *addr))
    }

    /// Number of distinct next hops.
    pub fn len(&self) -> usize {
        self.addrs.len()
    }

    /// Whether none were interned.
    pub fn is_empty(&self) -> bool {
        self.addrs.is_empty()
    }
}

/// Counts kept while loading.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadStats {
    /// Lines (text) or records (MRT) read.
    pub records: u64,
    /// Routes read (a prefix may be read more than once).
    pub routes: u64,
    /// Routes whose prefix was already in the table (the later label wins).
    pub duplicates: u64,
    /// Bad lines or records skipped under `skip_bad`.
    pub skipped: u64,
    /// What was wrong with the first [`MAX_SKIPPED_REPORTED`] of them:
    /// `line N: problem` (or `record N: problem` for MRT).
    pub skipped_problems: Vec<String>,
    /// Prefixes whose host bits were cleared under `lenient`.
    pub masked: u64,
}

/// How many skipped lines [`LoadStats::skipped_problems`] describes; the
/// rest are only counted, so a file of garbage cannot fill memory.
pub const MAX_SKIPPED_REPORTED: usize = 1000;

impl LoadStats {
    /// Counts a skipped line or record and keeps what was wrong with it.
    pub fn skip(&mut self, place: &str, number: u64, what: &str) {
        self.skipped += 1;
        if self.skipped_problems.len() < MAX_SKIPPED_REPORTED {
            self.skipped_problems
                .push(format!("{place} {number}: {what}"));
        }
    }
}

/// A loaded table: one reference trie per family.
#[derive(Clone, Debug, Default)]
pub struct LoadedTable {
    /// The format that was read.
    pub format: Option<Format>,
    /// IPv4 prefixes.
    pub v4: Rib<u32>,
    /// IPv6 prefixes.
    pub v6: Rib<u128>,
    /// Next hops interned as labels (`nexthop` text and MRT with next-hop labels).
    pub nexthops: NextHopTable,
    /// Counts.
    pub stats: LoadStats,
    /// Things the user should be told (which MRT peer was chosen, ...).
    pub notes: Vec<String>,
}

/// A change to either family's table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnyChange {
    /// An IPv4 change.
    V4(Change<u32>),
    /// An IPv6 change.
    V6(Change<u128>),
}

impl AnyChange {
    /// An announcement of `prefix` with `label`, or with `None` its
    /// withdrawal, in the prefix's family.
    pub fn of(prefix: text::AnyPrefix, label: Option<Label>) -> Self {
        use text::AnyPrefix;
        match (prefix, label) {
            (AnyPrefix::V4(p), Some(label)) => AnyChange::V4(Change::Announce(p, label)),
            (AnyPrefix::V4(p), None) => AnyChange::V4(Change::Withdraw(p)),
            (AnyPrefix::V6(p), Some(label)) => AnyChange::V6(Change::Announce(p, label)),
            (AnyPrefix::V6(p), None) => AnyChange::V6(Change::Withdraw(p)),
        }
    }
}

/// One timestamped change from an update stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Update {
    /// Seconds since the Unix epoch.
    pub time: u64,
    /// The change.
    pub change: AnyChange,
}

/// A loaded update stream.
#[derive(Clone, Debug, Default)]
pub struct LoadedUpdates {
    /// The changes in file order.
    pub updates: Vec<Update>,
    /// Next hops interned as labels.
    pub nexthops: NextHopTable,
    /// Counts.
    pub stats: LoadStats,
    /// Things the user should be told.
    pub notes: Vec<String>,
}

/// What a family takes from loaded tables and update streams: lets code
/// written once for both families pick its part.
pub trait FamilyPart: Addr {
    /// This family's table.
    fn rib(table: &LoadedTable) -> &Rib<Self>;
    /// This family's table, to change.
    fn rib_mut(table: &mut LoadedTable) -> &mut Rib<Self>;
    /// The change, if it is of this family.
    fn change(change: AnyChange) -> Option<Change<Self>>;
}

impl FamilyPart for u32 {
    fn rib(table: &LoadedTable) -> &Rib<u32> {
        &table.v4
    }
    fn rib_mut(table: &mut LoadedTable) -> &mut Rib<u32> {
        &mut table.v4
    }
    fn change(change: AnyChange) -> Option<Change<u32>> {
        match change {
            AnyChange::V4(change) => Some(change),
            AnyChange::V6(_) => None,
        }
    }
}

impl FamilyPart for u128 {
    fn rib(table: &LoadedTable) -> &Rib<u128> {
        &table.v6
    }
    fn rib_mut(table: &mut LoadedTable) -> &mut Rib<u128> {
        &mut table.v6
    }
    fn change(change: AnyChange) -> Option<Change<u128>> {
        match change {
            AnyChange::V6(change) => Some(change),
            AnyChange::V4(_) => None,
        }
    }
}

impl LoadedUpdates {
    /// The changes of family `A` with their timestamps, in stream order.
    pub fn timed<A: FamilyPart>(&self) -> Vec<(u64, Change<A>)> {
        self.updates
            .iter()
            .filter_map(|update| Some((update.time, A::change(update.change)?)))
            .collect()
    }

    /// The changes split by family, each in stream order.
    pub fn changes_by_family(&self) -> (Vec<Change<u32>>, Vec<Change<u128>>) {
        let mut v4 = Vec::new();
        let mut v6 = Vec::new();
        for update in &self.updates {
            match update.change {
                AnyChange::V4(change) => v4.push(change),
                AnyChange::V6(change) => v6.push(change),
            }
        }
        (v4, v6)
    }

    /// The IPv4 changes in stream order, one batch per run of updates with
    /// the same timestamp (one batch per second of a text stream): how a
    /// router coalesces updates before touching its forwarding table.
    pub fn v4_batches_by_time(&self) -> Vec<Vec<Change<u32>>> {
        let mut batches: Vec<Vec<Change<u32>>> = Vec::new();
        let mut time = None;
        for update in &self.updates {
            let AnyChange::V4(change) = update.change else {
                continue;
            };
            match batches.last_mut() {
                Some(batch) if time == Some(update.time) => batch.push(change),
                _ => batches.push(vec![change]),
            }
            time = Some(update.time);
        }
        batches
    }
}

impl LoadError {
    /// The error for a load that read lines or records but skipped all of
    /// them under `skip_bad`.
    fn nothing_loaded(path: &Path, stats: &LoadStats) -> Self {
        LoadError::file(
            path,
            format!(
                "nothing loaded: --skip-bad skipped every line or record ({} bad); the first: {}",
                stats.skipped,
                stats.skipped_problems.first().map_or("?", String::as_str)
            ),
        )
    }
}

/// Counts bytes read from the underlying file, for progress reports.
struct CountingReader<R> {
    inner: R,
    count: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count
            .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
}

/// An opened input: decompressed, buffered, with a count of raw bytes read.
pub struct Input {
    /// The decompressed content.
    pub reader: Box<dyn BufRead + Send>,
    /// Raw (compressed) bytes read so far.
    pub raw_bytes: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// The path, for messages.
    pub path: PathBuf,
}

impl Input {
    /// Raw bytes read so far.
    pub fn raw_bytes_read(&self) -> u64 {
        self.raw_bytes.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Opens `path`, undoing gzip or bzip2 compression if the content has it.
pub fn open(path: &Path) -> Result<Input, LoadError> {
    let file = File::open(path).map_err(|e| LoadError::io(path, e))?;
    Input::new(file, path.to_path_buf())
}

impl Input {
    /// Wraps any byte source (`name` is used in messages), undoing gzip or
    /// bzip2 compression if the content has it.
    pub fn new(source: impl Read + Send + 'static, name: PathBuf) -> Result<Input, LoadError> {
        let raw_bytes = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counting = CountingReader {
            inner: source,
            count: raw_bytes.clone(),
        };
        let mut buffered = BufReader::with_capacity(1 << 16, counting);
        let magic = buffered.fill_buf().map_err(|e| LoadError::io(&name, e))?;
        let reader: Box<dyn BufRead + Send> = if magic.starts_with(&[0x1f, 0x8b]) {
            Box::new(BufReader::with_capacity(1 << 16, gunzip(buffered, &name)?))
        } else if magic.starts_with(b"BZh") {
            Box::new(BufReader::with_capacity(1 << 16, bunzip2(buffered, &name)?))
        } else {
            Box::new(buffered)
        };
        Ok(Input {
            reader,
            raw_bytes,
            path: name,
        })
    }

    /// An input over bytes in memory (`name` is used in messages).
    pub fn from_bytes(bytes: Vec<u8>, name: &str) -> Result<Input, LoadError> {
        Input::new(std::io::Cursor::new(bytes), PathBuf::from(name))
    }
}

/// How far into a text file [`detect`] reads for its first data line.
pub const DETECT_BYTES: usize = 1 << 20;

/// Guesses the format from the start of the decompressed content: MRT from
/// its first record header, a text format from its first data line (after
/// any blank and comment lines, within [`DETECT_BYTES`]). The lines read
/// are put back: the loader reads them again, with their numbers.
pub fn detect(input: &mut Input) -> Result<Format, LoadError> {
    let path = input.path.clone();
    let head = input
        .reader
        .fill_buf()
        .map_err(|e| LoadError::io(&path, e))?;
    if head.is_empty() {
        return Err(LoadError::file(&path, "the file is empty"));
    }
    // MRT records start with a 12-byte header: timestamp, type, subtype,
    // length. A known type there, in a header that is not printable text, is
    // MRT; everything else is read as text (whose loader then reports any
    // binary line by number).
    if head.len() >= 12 {
        let mrt_type = u16::from_be_bytes([head[4], head[5]]);
        let known_type = matches!(mrt_type, 11 | 12 | 13 | 16 | 17 | 32 | 33 | 48 | 49);
        let printable = head[..12]
            .iter()
            .all(|b| b.is_ascii_graphic() || b.is_ascii_whitespace());
        if known_type && !printable {
            return Ok(Format::Mrt);
        }
    }
    let rest = std::mem::replace(&mut input.reader, Box::new(io::empty()));
    let mut lines = LineReader::new(rest, &path);
    let mut seen = Vec::new();
    let mut found = None;
    let mut failure = None;
    loop {
        let (line_number, line) = match lines.next_line() {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(error) => {
                failure = Some(error);
                break;
            }
        };
        seen.extend_from_slice(line);
        seen.push(b'\n');
        let text = String::from_utf8_lossy(line);
        let text = text.trim();
        if !text::is_blank_or_comment(text) {
            found = Some((line_number, text_format(text)));
            break;
        }
        if seen.len() > DETECT_BYTES {
            break;
        }
    }
    let (lines_read, seen_bytes) = (lines.lines_read(), seen.len());
    input.reader = Box::new(io::Cursor::new(seen).chain(lines.into_inner()));
    if let Some(error) = failure {
        return Err(error);
    }
    match found {
        Some((_, Ok(format))) => Ok(format),
        Some((line, Err(first))) => Err(LoadError::bad(
            &path,
            line,
            format!(
                "cannot tell the format from this line `{}` (expected `prefix label`, \
                 `prefix nexthop`, `time a|w prefix [nexthop]`, `address length \
                 origin-as` or bgpdump -m's `TYPE|time|B|...`; use --format)",
                excerpt(&first)
            ),
        )),
        None if seen_bytes > DETECT_BYTES => Err(LoadError::file(
            &path,
            format!(
                "no data line in the first {lines_read} lines ({seen_bytes} bytes); use --format"
            ),
        )),
        None => Err(LoadError::file(
            &path,
            "no data line, only blank lines and `#` or `;` comments",
        )),
    }
}

/// The text format whose lines look like `line` (a trimmed data line), or
/// the line back.
fn text_format(line: &str) -> Result<Format, String> {
    if bgpdump::looks_like(line) {
        return Ok(Format::Bgpdump);
    }
    let fields: Vec<&str> = line.split_ascii_whitespace().collect();
    match fields.as_slice() {
        // An integer out of a label's range, on the first data line too,
        // is a table's bad label: its loader names the line and the range.
        [_, label] if label.parse::<Label>().is_ok() || is_integer(label) => Ok(Format::Table),
        [_, nexthop] if nexthop.parse::<IpAddr>().is_ok() => Ok(Format::NextHop),
        [_, "a" | "w", _, _] | [_, "w", _] => Ok(Format::Updates),
        [address, length, origin]
            if address.parse::<IpAddr>().is_ok()
                && length.parse::<u8>().is_ok()
                && origin.starts_with(|c: char| c.is_ascii_digit() || c == '{') =>
        {
            Ok(Format::Pfx2as)
        }
        _ => Err(line.to_string()),
    }
}

/// Whether `field` is a whole number as written (digits, perhaps after a
/// minus sign), whatever its size.
fn is_integer(field: &str) -> bool {
    let digits = field.strip_prefix('-').unwrap_or(field);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(feature = "loaders")]
fn gunzip<R: BufRead>(input: R, _name: &Path) -> Result<impl Read, LoadError> {
    Ok(flate2::bufread::MultiGzDecoder::new(input))
}

#[cfg(feature = "loaders")]
fn bunzip2<R: BufRead>(input: R, _name: &Path) -> Result<impl Read, LoadError> {
    Ok(bzip2::bufread::MultiBzDecoder::new(input))
}

#[cfg(not(feature = "loaders"))]
fn gunzip<R: BufRead>(_input: R, name: &Path) -> Result<io::Empty, LoadError> {
    Err(without_loaders(name, "gzip-compressed input"))
}

#[cfg(not(feature = "loaders"))]
fn bunzip2<R: BufRead>(_input: R, name: &Path) -> Result<io::Empty, LoadError> {
    Err(without_loaders(name, "bzip2-compressed input"))
}

/// The error for input that needs the `loaders` feature.
#[cfg(not(feature = "loaders"))]
fn without_loaders(path: &Path, what: &str) -> LoadError {
    LoadError::file(
        path,
        format!("{what} needs fibkit's `loaders` feature (this build has it off)"),
    )
}

/// Loads a table from `path` (text, MRT RIB dump, or bgpdump's text of one).
pub fn load_table(path: &Path, options: &LoadOptions) -> Result<LoadedTable, LoadError> {
    read_table(open(path)?, options)
}

/// Reads a table (text or MRT RIB dump) from an opened input.
pub fn read_table(mut input: Input, options: &LoadOptions) -> Result<LoadedTable, LoadError> {
    let path = input.path.clone();
    let format = match options.format {
        Some(format) => format,
        None => detect(&mut input)?,
    };
    let mut table = match format {
        Format::Table | Format::NextHop => text::read_table(input, format, options)?,
        Format::Pfx2as => text::read_pfx2as(input, options)?,
        Format::Bgpdump => bgpdump::read_rib(input, options)?,
        #[cfg(feature = "loaders")]
        Format::Mrt => mrt::read_rib(input, options)?,
        #[cfg(not(feature = "loaders"))]
        Format::Mrt => return Err(without_loaders(&path, "an MRT RIB dump")),
        Format::Updates => {
            return Err(LoadError::file(
                &path,
                "this is an update stream, not a table (use it where updates are expected)",
            ))
        }
    };
    table.format = Some(format);
    if table.v4.is_empty() && table.v6.is_empty() {
        return Err(if table.stats.skipped > 0 {
            LoadError::nothing_loaded(&path, &table.stats)
        } else {
            LoadError::file(&path, "no prefixes found")
        });
    }
    Ok(table)
}

/// Loads an update stream from `path` (`updates` text, MRT BGP4MP, or
/// bgpdump's text of it).
/// Next hops are interned in `nexthops`, so labels can agree with a table's.
pub fn load_updates(
    path: &Path,
    options: &LoadOptions,
    nexthops: NextHopTable,
) -> Result<LoadedUpdates, LoadError> {
    read_updates(open(path)?, options, nexthops)
}

/// Reads an update stream (`updates` text or MRT BGP4MP) from an opened input.
pub fn read_updates(
    mut input: Input,
    options: &LoadOptions,
    nexthops: NextHopTable,
) -> Result<LoadedUpdates, LoadError> {
    let path = input.path.clone();
    let format = match options.format {
        Some(format) => format,
        None => detect(&mut input)?,
    };
    let mut loaded = match format {
        Format::Updates => text::read_updates(input, options, nexthops)?,
        Format::Bgpdump => bgpdump::read_updates(input, options, nexthops)?,
        #[cfg(feature = "loaders")]
        Format::Mrt => mrt::read_updates(input, options, nexthops)?,
        #[cfg(not(feature = "loaders"))]
        Format::Mrt => return Err(without_loaders(&path, "an MRT update stream")),
        Format::Table | Format::NextHop | Format::Pfx2as => {
            return Err(LoadError::file(
                &path,
                format!("this is a `{format}` table, not an update stream"),
            ))
        }
    };
    if loaded.updates.is_empty() && loaded.stats.skipped > 0 {
        return Err(LoadError::nothing_loaded(&path, &loaded.stats));
    }
    if let Some(note) = out_of_order_note(&path, &loaded.updates) {
        loaded.notes.push(note);
    }
    Ok(loaded)
}

/// A note when some updates are timestamped before the update above them
/// (streams merged from several collectors, or edited by hand): batches by
/// time and replays keep the file's order, so the user should know the
/// times do not.
fn out_of_order_note(path: &Path, updates: &[Update]) -> Option<String> {
    let mut earlier = updates
        .windows(2)
        .enumerate()
        .filter(|(_, pair)| pair[1].time < pair[0].time);
    let (first, pair) = earlier.next()?;
    let count = 1 + earlier.count();
    let (updates_are, update_before) = if count == 1 {
        ("update is", "the update before it")
    } else {
        ("updates are", "the update before them")
    };
    Some(format!(
        "{}: {count} {updates_are} timestamped earlier than {update_before} (the first: \
         update {} at {}, after {}); they are applied in file order",
        path.display(),
        first + 2,
        pair[1].time,
        pair[0].time
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prefix::Prefix;

    #[test]
    fn updates_out_of_time_order_get_a_note() {
        let update = |time| Update {
            time,
            change: AnyChange::V4(Change::Withdraw(Prefix::new_masked(0u32, 0))),
        };
        let path = Path::new("stream.txt");
        let in_order: Vec<Update> = [5, 5, 6, 9].map(update).to_vec();
        assert_eq!(out_of_order_note(path, &in_order), None);
        let mixed: Vec<Update> = [5, 7, 6, 6, 9, 2].map(update).to_vec();
        assert_eq!(
            out_of_order_note(path, &mixed).as_deref(),
            Some(
                "stream.txt: 2 updates are timestamped earlier than the update before them \
                 (the first: update 3 at 6, after 7); they are applied in file order"
            )
        );
        let one: Vec<Update> = [5, 4].map(update).to_vec();
        assert_eq!(
            out_of_order_note(path, &one).as_deref(),
            Some(
                "stream.txt: 1 update is timestamped earlier than the update before it \
                 (the first: update 2 at 4, after 5); they are applied in file order"
            )
        );
        assert_eq!(out_of_order_note(path, &[]), None);
    }

    #[test]
    fn v4_batches_follow_runs_of_equal_time_and_skip_ipv6() {
        let v4 = |n: u32| AnyChange::V4(Change::Withdraw(Prefix::new_masked(n << 24, 8)));
        let v6 = AnyChange::V6(Change::Withdraw(Prefix::new_masked(1u128 << 120, 8)));
        let updates = LoadedUpdates {
            updates: [
                (5, v4(1)),
                (5, v6),
                (5, v4(2)),
                (6, v6),
                (7, v4(3)),
                (5, v4(4)),
            ]
            .into_iter()
            .map(|(time, change)| Update { time, change })
            .collect(),
            ..LoadedUpdates::default()
        };
        let batches = updates.v4_batches_by_time();
        let firsts: Vec<Vec<u32>> = batches
            .iter()
            .map(|batch| batch.iter().map(|c| c.prefix().first() >> 24).collect())
            .collect();
        assert_eq!(firsts, vec![vec![1, 2], vec![3], vec![4]]);
        assert!(LoadedUpdates::default().v4_batches_by_time().is_empty());
    }
}
