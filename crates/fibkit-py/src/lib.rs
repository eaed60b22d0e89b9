//! The `fibkit._fibkit` extension module: [`fibkit::AnyFib`] as the Python
//! class `fibkit.Fib`, with bulk lookups over numpy and pyarrow arrays.
//!
//! Bulk lookups convert their input to addresses (a numpy `uint32` array
//! is read in place; text is parsed), then release the GIL and look up
//! through [`fibkit::any::FamilyFib::lookup_slice`], writing two numpy arrays:
//! the labels (0 where nothing matched) and a boolean found mask. Two
//! arrays rather than a sentinel: labels are full `u32` values (an AS
//! number table uses them all), and a masked array is one call away
//! (`numpy.ma.masked_array(labels, ~found)`).

#![deny(missing_docs)]

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use numpy::{
    PyArray1, PyArrayDescrMethods, PyArrayMethods, PyReadonlyArray1, PyUntypedArray,
    PyUntypedArrayMethods,
};
use pyo3::create_exception;
use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

use fibkit::any::{FamilyFib, SLICE_CHUNK};
use fibkit::image::ImageError;
use fibkit::labels::NO_ROUTE_WORD;
use fibkit::load::{
    load_table, load_updates, FamilyPart, Format, LabelSource, LoadError, LoadOptions, LoadedTable,
    LoadedUpdates, NextHopTable, PeerSelector,
};
use fibkit::registry::{save_image, ImageFamily};
use fibkit::{Addr, AnyFib, Change, Family, Label, Prefix, Rib};

create_exception!(
    fibkit,
    FibkitError,
    PyValueError,
    "A table, image or engine spec fibkit cannot use (the message names the problem)."
);

/// Converts a fibkit error: missing files are `FileNotFoundError`, other
/// I/O errors `OSError`, everything else `FibkitError` (a `ValueError`).
fn to_py(error: fibkit::Error) -> PyErr {
    let io = match &error {
        fibkit::Error::Load(LoadError::Io { error, .. }) => Some(error.kind()),
        fibkit::Error::Image(ImageError::Io { source, .. }) => Some(source.kind()),
        _ => None,
    };
    match io {
        Some(std::io::ErrorKind::NotFound) => PyFileNotFoundError::new_err(error.to_string()),
        Some(_) => PyOSError::new_err(error.to_string()),
        None => FibkitError::new_err(error.to_string()),
    }
}

fn err(error: impl Into<fibkit::Error>) -> PyErr {
    to_py(error.into())
}

/// Reads a `peer` argument: an address or "AS64500" (str), or an AS number (int).
fn peer_arg(peer: &Bound<'_, PyAny>) -> PyResult<PeerSelector> {
    if let Ok(text) = peer.extract::<String>() {
        return text.parse::<PeerSelector>().map_err(PyValueError::new_err);
    }
    match peer.extract::<i64>() {
        Ok(asn) => u32::try_from(asn)
            .map(PeerSelector::Asn)
            .map_err(|_| PyValueError::new_err(format!("peer AS {asn} is not in 0..=4294967295"))),
        Err(_) => Err(PyTypeError::new_err(
            "peer must be an address or \"AS<number>\" (str), or an AS number (int)",
        )),
    }
}

/// Reads a family argument: `None`, 4, 6, "v4", "v6", "ipv4", "ipv6".
fn family_arg(family: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Family>> {
    let Some(family) = family else {
        return Ok(None);
    };
    if family.is_none() {
        return Ok(None);
    }
    if let Ok(number) = family.extract::<i64>() {
        return match number {
            4 => Ok(Some(Family::V4)),
            6 => Ok(Some(Family::V6)),
            _ => Err(PyValueError::new_err(format!(
                "family {number}: expected 4 or 6"
            ))),
        };
    }
    let text: String = family.extract()?;
    match text.to_ascii_lowercase().as_str() {
        "v4" | "ipv4" | "4" => Ok(Some(Family::V4)),
        "v6" | "ipv6" | "6" => Ok(Some(Family::V6)),
        _ => Err(PyValueError::new_err(format!(
            "family `{text}`: expected 4, 6, \"v4\" or \"v6\""
        ))),
    }
}

fn family_number(family: Family) -> u8 {
    match family {
        Family::V4 => 4,
        Family::V6 => 6,
    }
}

/// Bad input naming the item: `addrs[3]: ...`.
fn bad_item(argument: &str, index: usize, why: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(format!("{argument}[{index}]: {why}"))
}

/// Addresses to look up, with `None` where the input had a null.
struct Parsed<A> {
    addrs: Vec<A>,
    /// Positions of nulls (answered as not found); empty when none.
    nulls: Vec<usize>,
}

/// Parses one address of family `A` from text bytes.
fn parse_text<A: Addr>(bytes: &[u8]) -> Option<A> {
    std::str::from_utf8(bytes).ok().and_then(A::parse_addr)
}

fn not_an_address<A: Addr>(bytes: &[u8]) -> String {
    format!(
        "`{}` is not an {} address",
        String::from_utf8_lossy(bytes),
        A::FAMILY
    )
}

/// What `lookup_many` returns: a `uint32` array of labels (0 where nothing
/// matched) and a `bool` array saying where something did.
type Answers<'py> = (Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<bool>>);

/// The family-specific parts of the Python API.
trait PyFamily: ImageFamily {
    /// Looks up the addresses of `array` where it is a numpy array of this
    /// family's binary form, read in place without the GIL (`None`: not a
    /// binary array of either family). The caller must not modify the
    /// array from another thread meanwhile, as with numpy's own functions
    /// that release the GIL.
    fn lookup_numpy<'py>(
        side: &FamilyFib<Self>,
        array: &Bound<'py, PyUntypedArray>,
        fib: &AnyFib,
    ) -> PyResult<Option<Answers<'py>>>;
}

/// Whether `array` holds the other family's binary addresses (a
/// `TypeError` then), and whether it holds this family's.
fn numpy_kind(array: &Bound<'_, PyUntypedArray>) -> Option<Family> {
    let dtype = array.dtype();
    let kind = dtype.kind();
    let itemsize = dtype.itemsize();
    match (kind, itemsize, array.ndim()) {
        (b'u', 4, 1) => Some(Family::V4),
        (b'u', 1, 2) if array.shape()[1] == 16 => Some(Family::V6),
        (b'S', 16, 1) => Some(Family::V6),
        _ => None,
    }
}

impl PyFamily for u32 {
    fn lookup_numpy<'py>(
        side: &FamilyFib<u32>,
        array: &Bound<'py, PyUntypedArray>,
        fib: &AnyFib,
    ) -> PyResult<Option<Answers<'py>>> {
        match numpy_kind(array) {
            Some(Family::V4) => {
                let py = array.py();
                let array = array.cast::<PyArray1<u32>>()?.readonly();
                // A strided array (a slice with a step) is copied first.
                let copied: Vec<u32>;
                let addrs = match array.as_slice() {
                    Ok(addrs) => addrs,
                    Err(_) => {
                        copied = array.as_array().iter().copied().collect();
                        &copied
                    }
                };
                Ok(Some(bulk(py, side, addrs, &[])))
            }
            Some(Family::V6) => Err(PyTypeError::new_err(fib.wrong_family(Family::V6))),
            None => Ok(None),
        }
    }
}

impl PyFamily for u128 {
    fn lookup_numpy<'py>(
        side: &FamilyFib<u128>,
        array: &Bound<'py, PyUntypedArray>,
        fib: &AnyFib,
    ) -> PyResult<Option<Answers<'py>>> {
        match numpy_kind(array) {
            Some(Family::V6) => {
                let py = array.py();
                let numpy = py.import("numpy")?;
                // The same memory as `array` where it is C-contiguous (a
                // copy only where it is not), as bytes.
                let bytes = numpy
                    .call_method1("ascontiguousarray", (array,))?
                    .call_method1("view", (numpy.getattr("uint8")?,))?
                    .call_method1("reshape", (-1,))?;
                let bytes = bytes.cast::<PyArray1<u8>>()?.readonly();
                let (keys, _) = bytes.as_slice()?.as_chunks::<16>();
                Ok(Some(bulk_network_order(py, side, keys)))
            }
            Some(Family::V4) => Err(PyTypeError::new_err(fib.wrong_family(Family::V4))),
            None => Ok(None),
        }
    }
}

/// Looks up network-order IPv6 keys without the GIL into (labels, found):
/// the engine reads the bytes in place where its batch can
/// (`FamilyFib::lookup_words_be`), with no array of converted keys.
fn bulk_network_order<'py>(
    py: Python<'py>,
    side: &FamilyFib<u128>,
    keys: &[[u8; 16]],
) -> Answers<'py> {
    let (labels, found) = py.detach(|| {
        let n = keys.len();
        let mut labels = vec![0u32; n];
        let mut found = vec![false; n];
        let mut words = vec![0u64; n.min(SLICE_CHUNK)];
        for ((keys, labels), found) in keys
            .chunks(SLICE_CHUNK)
            .zip(labels.chunks_mut(SLICE_CHUNK))
            .zip(found.chunks_mut(SLICE_CHUNK))
        {
            let words = &mut words[..keys.len()];
            side.lookup_words_be(keys, words);
            for ((label, hit), &word) in labels.iter_mut().zip(found.iter_mut()).zip(words.iter()) {
                *hit = word != NO_ROUTE_WORD;
                *label = if *hit { word as u32 } else { 0 };
            }
        }
        (labels, found)
    });
    (
        PyArray1::from_vec(py, labels),
        PyArray1::from_vec(py, found),
    )
}

/// Parses every element of a Python sequence: `str` (text address),
/// `int` (the address as an integer) or `None` (a null).
fn parse_sequence<A: PyFamily>(items: &Bound<'_, PyAny>) -> PyResult<Parsed<A>> {
    let mut parsed = Parsed {
        addrs: Vec::with_capacity(items.len().unwrap_or(0)),
        nulls: Vec::new(),
    };
    for (index, item) in items.try_iter()?.enumerate() {
        let item = item?;
        let addr = if item.is_none() {
            parsed.nulls.push(index);
            A::ZERO
        } else if let Ok(text) = item.cast::<PyString>() {
            let text = text.to_str()?;
            parse_text(text.as_bytes())
                .ok_or_else(|| bad_item("addrs", index, not_an_address::<A>(text.as_bytes())))?
        } else if let Ok(value) = item.extract::<u128>() {
            if value > A::MAX.to_u128() {
                return Err(bad_item(
                    "addrs",
                    index,
                    format!("{value} is larger than any {} address", A::FAMILY),
                ));
            }
            A::from_u128(value)
        } else {
            return Err(PyTypeError::new_err(format!(
                "addrs[{index}]: expected a str address, an int or None, got {}",
                item.get_type().name()?
            )));
        };
        parsed.addrs.push(addr);
    }
    Ok(parsed)
}

/// Parses a pyarrow string array (or each chunk of a chunked array)
/// from its buffers, without a Python object per element; nulls are
/// answered as not found.
fn parse_arrow<'py, A: PyFamily>(
    py: Python<'py>,
    array: &Bound<'py, PyAny>,
) -> PyResult<Parsed<A>> {
    let chunks: Vec<Bound<'py, PyAny>> = if array.hasattr("chunks")? {
        array.getattr("chunks")?.extract()?
    } else {
        vec![array.clone()]
    };
    let numpy = py.import("numpy")?;
    let mut parsed = Parsed {
        addrs: Vec::new(),
        nulls: Vec::new(),
    };
    for chunk in chunks {
        let type_name = chunk.getattr("type")?.str()?.to_string();
        let offset_dtype = match type_name.as_str() {
            "string" | "utf8" => "int32",
            "large_string" | "large_utf8" => "int64",
            other => {
                return Err(PyTypeError::new_err(format!(
                    "a pyarrow array of type {other}: expected strings \
                     (or a numpy uint32 array of IPv4 addresses)"
                )))
            }
        };
        let len: usize = chunk.len()?;
        let first: usize = chunk.getattr("offset")?.extract()?;
        let buffers: Vec<Option<Bound<'py, PyAny>>> = chunk.call_method0("buffers")?.extract()?;
        let as_numpy =
            |buffer: &Option<Bound<'py, PyAny>>, dtype: &str| -> PyResult<Bound<'py, PyAny>> {
                match buffer {
                    Some(buffer) => numpy.call_method1("frombuffer", (buffer, dtype)),
                    None => numpy.call_method1("zeros", (0, dtype)),
                }
            };
        let validity = as_numpy(&buffers[0], "uint8")?;
        let validity = validity.cast::<PyArray1<u8>>()?.readonly();
        let data = as_numpy(buffers.get(2).unwrap_or(&None), "uint8")?;
        let data = data.cast::<PyArray1<u8>>()?.readonly();
        let offsets = as_numpy(&buffers[1], offset_dtype)?.call_method1("astype", ("int64",))?;
        let offsets: PyReadonlyArray1<i64> = offsets.extract()?;
        let (validity, data, offsets) =
            (validity.as_slice()?, data.as_slice()?, offsets.as_slice()?);
        if offsets.len() < first + len + 1 {
            return Err(PyValueError::new_err(
                "a pyarrow string array with fewer offsets than elements",
            ));
        }
        let base = parsed.addrs.len();
        let chunk_parsed = py.detach(|| {
            let mut out = Parsed {
                addrs: Vec::with_capacity(len),
                nulls: Vec::new(),
            };
            for i in 0..len {
                let bit = first + i;
                let valid = validity.is_empty()
                    || validity
                        .get(bit / 8)
                        .is_some_and(|byte| byte & (1 << (bit % 8)) != 0);
                if !valid {
                    out.nulls.push(base + i);
                    out.addrs.push(A::ZERO);
                    continue;
                }
                let text = usize::try_from(offsets[bit])
                    .ok()
                    .zip(usize::try_from(offsets[bit + 1]).ok())
                    .and_then(|(start, end)| data.get(start..end));
                match text.and_then(parse_text::<A>) {
                    Some(addr) => out.addrs.push(addr),
                    None => return Err((base + i, text.unwrap_or_default().to_vec())),
                }
            }
            Ok(out)
        });
        match chunk_parsed {
            Ok(chunk_parsed) => {
                parsed.addrs.extend(chunk_parsed.addrs);
                parsed.nulls.extend(chunk_parsed.nulls);
            }
            Err((index, text)) => return Err(bad_item("addrs", index, not_an_address::<A>(&text))),
        }
    }
    Ok(parsed)
}

/// Any supported input but a numpy array of binary addresses (see
/// [`PyFamily::lookup_numpy`]) as addresses of family `A`.
fn addresses<A: PyFamily>(py: Python<'_>, input: &Bound<'_, PyAny>) -> PyResult<Parsed<A>> {
    if let Ok(array) = input.cast::<PyUntypedArray>() {
        let kind = array.dtype().kind();
        if matches!(kind, b'U' | b'O') && array.ndim() == 1 {
            return parse_sequence(&input.call_method0("tolist")?);
        }
        return Err(PyTypeError::new_err(format!(
            "a numpy array of dtype {} and shape {:?}: expected uint32 (IPv4), \
             (n, 16) uint8 or S16 (IPv6), or str",
            array.dtype().str()?,
            array.shape()
        )));
    }
    if input.hasattr("buffers")? || input.hasattr("chunks")? {
        return parse_arrow(py, input);
    }
    if input.cast::<PyString>().is_ok() {
        return Err(PyTypeError::new_err(
            "lookup_many takes a sequence of addresses; use lookup() for one",
        ));
    }
    parse_sequence(input)
}

/// Looks up `addrs` without the GIL into (labels, found), the positions
/// in `nulls` answered as not found.
fn bulk<'py, A: PyFamily>(
    py: Python<'py>,
    side: &FamilyFib<A>,
    addrs: &[A],
    nulls: &[usize],
) -> Answers<'py> {
    let (labels, found) = py.detach(|| {
        let n = addrs.len();
        let mut labels = vec![0u32; n];
        let mut found = vec![false; n];
        side.lookup_slice(addrs, |start, answers| {
            for ((label, hit), answer) in labels[start..]
                .iter_mut()
                .zip(&mut found[start..])
                .zip(answers)
            {
                *label = answer.unwrap_or(0);
                *hit = answer.is_some();
            }
        });
        for &null in nulls {
            found[null] = false;
            labels[null] = 0;
        }
        (labels, found)
    });
    (
        PyArray1::from_vec(py, labels),
        PyArray1::from_vec(py, found),
    )
}

/// `lookup_many` on one family's table: numpy arrays of binary addresses
/// read in place, everything else parsed first.
fn many<'py, A: PyFamily>(
    py: Python<'py>,
    side: &FamilyFib<A>,
    fib: &AnyFib,
    input: &Bound<'py, PyAny>,
) -> PyResult<Answers<'py>> {
    if let Ok(array) = input.cast::<PyUntypedArray>() {
        if let Some(answers) = A::lookup_numpy(side, array, fib)? {
            return Ok(answers);
        }
    }
    let parsed = addresses::<A>(py, input)?;
    Ok(bulk(py, side, &parsed.addrs, &parsed.nulls))
}

/// One address: `str` or `int`.
fn one_address<A: Addr>(addr: &Bound<'_, PyAny>) -> PyResult<A> {
    if let Ok(text) = addr.cast::<PyString>() {
        let text = text.to_str()?;
        return A::parse_addr(text.trim())
            .ok_or_else(|| PyValueError::new_err(not_an_address::<A>(text.as_bytes())));
    }
    let value: u128 = addr.extract().map_err(|_| {
        PyTypeError::new_err(format!("expected an {} address as str or int", A::FAMILY))
    })?;
    if value > A::MAX.to_u128() {
        return Err(PyValueError::new_err(format!(
            "{value} is larger than any {} address",
            A::FAMILY
        )));
    }
    Ok(A::from_u128(value))
}

fn lookup_one<A: PyFamily>(
    side: &FamilyFib<A>,
    addr: &Bound<'_, PyAny>,
) -> PyResult<Option<(Option<String>, Label)>> {
    let addr = one_address::<A>(addr)?;
    Ok(side
        .lookup_prefix(addr)
        .map(|(prefix, label)| (prefix.map(|p| p.to_string()), label)))
}

/// Prefix and label pairs (a dict, or an iterable of `(prefix, label)`)
/// as a reference table of family `A`.
fn rib_from<A: Addr>(pairs: &Bound<'_, PyAny>, argument: &str) -> PyResult<Rib<A>> {
    let items = match pairs.cast::<PyDict>() {
        Ok(dict) => dict.items().into_any(),
        Err(_) => pairs.clone(),
    };
    let mut rib = Rib::new();
    for (index, item) in items.try_iter()?.enumerate() {
        let (prefix, label): (String, Label) = item?.extract().map_err(|_| {
            PyTypeError::new_err(format!(
                "{argument}[{index}]: expected a (prefix, label) pair of str and int 0..2**32"
            ))
        })?;
        let prefix: Prefix<A> = prefix
            .trim()
            .parse()
            .map_err(|e| bad_item(argument, index, e))?;
        rib.insert(prefix, label);
    }
    Ok(rib)
}

/// The load options of `Fib.load` and `Fib.apply_updates`, checked;
/// `label` is `default_label` when not given.
fn load_options(
    format: Option<String>,
    label: Option<&str>,
    default_label: LabelSource,
    peer: Option<&Bound<'_, PyAny>>,
    lenient: bool,
    skip_bad: bool,
) -> PyResult<LoadOptions<'static>> {
    let format = match format {
        Some(name) => Some(name.parse::<Format>().map_err(PyValueError::new_err)?),
        None => None,
    };
    let label = match label {
        None => default_label,
        Some(label) => label.parse::<LabelSource>().map_err(|_| {
            PyValueError::new_err(format!(
                "label {label:?} is not a label source (\"nexthop\" or \"origin-as\")"
            ))
        })?,
    };
    Ok(LoadOptions {
        format,
        lenient,
        skip_bad,
        peer: peer.map(peer_arg).transpose()?,
        label,
        ..LoadOptions::default()
    })
}

/// What replaying an update stream onto one family's table did.
#[derive(Default)]
struct Replayed {
    changes: usize,
    batches: usize,
    effective: usize,
    no_ops: usize,
    rebuilt: usize,
    version: u64,
}

/// Applies `loaded`'s changes of family `A` to `side` in file order, one
/// batch per run of changes with the same timestamp; a refused batch is an
/// error naming its time (the batches before it stay applied).
fn replay_onto<A: ImageFamily + FamilyPart>(
    side: &FamilyFib<A>,
    loaded: &LoadedUpdates,
    path: &std::path::Path,
) -> Result<Replayed, String> {
    let timed = loaded.timed::<A>();
    let mut done = Replayed {
        changes: timed.len(),
        ..Replayed::default()
    };
    for batch in timed.chunk_by(|a, b| a.0 == b.0) {
        let changes: Vec<Change<A>> = batch.iter().map(|&(_, change)| change).collect();
        let summary = side.apply(&changes).map_err(|e| {
            format!(
                "{}: the changes of time {} (after {} batches applied): {e}",
                path.display(),
                batch[0].0,
                done.batches
            )
        })?;
        done.batches += 1;
        done.effective += summary.effective;
        done.no_ops += summary.no_ops;
        done.rebuilt += summary.rebuilt.is_some() as usize;
        done.version = summary.version;
    }
    Ok(done)
}

/// Changes of family `A`: withdrawals, then announcements.
fn changes_from<A: Addr>(
    announce: &Bound<'_, PyAny>,
    withdraw: &Bound<'_, PyAny>,
) -> PyResult<Vec<Change<A>>> {
    let mut changes = Vec::new();
    for (index, prefix) in withdraw.try_iter()?.enumerate() {
        let text: String = prefix?.extract()?;
        let prefix: Prefix<A> = text
            .trim()
            .parse()
            .map_err(|e| bad_item("withdraw", index, e))?;
        changes.push(Change::Withdraw(prefix));
    }
    for (prefix, label) in rib_from::<A>(announce, "announce")?.iter() {
        changes.push(Change::Announce(prefix, label));
    }
    Ok(changes)
}

/// A forwarding table: longest-prefix-match lookups of IPv4 or IPv6
/// addresses to labels.
///
/// Make one with `Fib.load` (a table file, built into an engine),
/// `Fib.open_image` (an image from `fibkit build`, mapped, not built) or
/// `Fib.from_prefixes`. A table is safe to share between threads; bulk
/// lookups release the GIL.
#[pyclass(frozen, module = "fibkit", name = "Fib")]
struct PyFib {
    fib: AnyFib,
    /// Next-hop addresses by label, for tables labelled by next hop; an
    /// update stream adds its new ones (`apply_updates`).
    nexthops: Mutex<Vec<IpAddr>>,
    /// What the loader said about the file (which MRT peer it kept, ...).
    notes: Vec<String>,
    /// What the table's labels are (origin ASes of a prefix-to-AS file or
    /// an MRT dump read so; next hops otherwise): the default of
    /// `apply_updates`.
    label: LabelSource,
}

impl PyFib {
    /// The next hops by label, locked (a poisoned lock still holds a whole
    /// list: it is only ever replaced whole).
    fn hops(&self) -> MutexGuard<'_, Vec<IpAddr>> {
        self.nexthops
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[pymethods]
impl PyFib {
    /// Loads a table file (`prefix label` or `prefix nexthop` text, pyasn's
    /// `ipasn` and CAIDA's `pfx2as` prefix-to-AS files, an MRT RIB dump or
    /// bgpdump's `-m` text of one; plain, gzip or bzip2) and builds `engine` (default:
    /// `fibkit.default_spec(family)`, the fastest engine on this CPU) over
    /// `family` (4 or 6; default:
    /// IPv4 if the file has IPv4 prefixes). `lenient` clears host bits
    /// instead of rejecting `10.0.0.1/8`. `format` names the input format
    /// instead of detecting it ("table", "nexthop", "mrt", "pfx2as",
    /// "bgpdump"); `skip_bad` skips bad lines or records instead of
    /// raising. For MRT dumps and their bgpdump text, `label` is "nexthop"
    /// (labels index `nexthops()`) or
    /// "origin-as" (the origin AS number), and `peer` picks the collector
    /// peer whose routes are kept (an address, "AS64500" or an AS number;
    /// default: the peer with most prefixes).
    #[staticmethod]
    #[pyo3(signature = (
        path, engine=None, family=None, lenient=false, *,
        format=None, label="nexthop", peer=None, skip_bad=false
    ))]
    // One Rust argument per Python keyword argument.
    #[allow(clippy::too_many_arguments)]
    fn load(
        py: Python<'_>,
        path: PathBuf,
        engine: Option<String>,
        family: Option<&Bound<'_, PyAny>>,
        lenient: bool,
        format: Option<String>,
        label: &str,
        peer: Option<&Bound<'_, PyAny>>,
        skip_bad: bool,
    ) -> PyResult<Self> {
        let family = family_arg(family)?;
        let options = load_options(
            format,
            Some(label),
            LabelSource::NextHop,
            peer,
            lenient,
            skip_bad,
        )?;
        let (fib, table) = py
            .detach(|| -> Result<(AnyFib, LoadedTable), fibkit::Error> {
                let table = load_table(&path, &options)?;
                let fib = AnyFib::build(&table, family, engine.as_deref())?;
                Ok((fib, table))
            })
            .map_err(to_py)?;
        Ok(PyFib {
            fib,
            nexthops: Mutex::new(table.nexthops.iter().map(|(_, addr)| addr).collect()),
            label: match table.format {
                Some(Format::Pfx2as) => LabelSource::OriginAs,
                _ => options.label,
            },
            notes: table.notes,
        })
    }

    /// The next-hop addresses of a table labelled by next hop (a
    /// `prefix nexthop` file, an MRT dump with `label="nexthop"`), as
    /// strings indexed by label: `fib.nexthops()[label]`, or
    /// `numpy.array(fib.nexthops())[labels]` for a whole array. Empty for
    /// other tables, images and tables built from prefixes.
    fn nexthops(&self) -> Vec<String> {
        self.hops().iter().map(IpAddr::to_string).collect()
    }

    /// What the loader said about the file `load` read, as the command
    /// prints it on standard error: which MRT peer's routes it kept (and
    /// how to choose another), routes it dropped, prefixes with several
    /// origin ASes. Empty for images and tables built from prefixes.
    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }

    /// Opens an image written by `fibkit build` (or `Fib.save_image`): maps
    /// the file and checks it, with no build. An image answers labels, not
    /// prefixes, and cannot change.
    #[staticmethod]
    fn open_image(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let fib = py.detach(|| AnyFib::open_image(&path)).map_err(err)?;
        Ok(PyFib {
            fib,
            nexthops: Mutex::new(Vec::new()),
            notes: Vec::new(),
            label: LabelSource::NextHop,
        })
    }

    /// Builds `engine` over `prefixes`: a dict `{"10.0.0.0/8": 1, ...}` or
    /// an iterable of `(prefix, label)` pairs. `family` defaults to that of
    /// the first prefix (IPv4 if there is none).
    #[staticmethod]
    #[pyo3(signature = (prefixes, engine=None, family=None))]
    fn from_prefixes(
        py: Python<'_>,
        prefixes: &Bound<'_, PyAny>,
        engine: Option<String>,
        family: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let pairs = match prefixes.cast::<PyDict>() {
            Ok(dict) => dict.items(),
            Err(_) => PyList::new(py, prefixes.try_iter()?.collect::<PyResult<Vec<_>>>()?)?,
        };
        let family = match family_arg(family)? {
            Some(family) => family,
            None => {
                let first: Option<String> = match pairs.get_item(0) {
                    Ok(pair) => pair.get_item(0).ok().and_then(|p| p.extract().ok()),
                    Err(_) => None,
                };
                if first.is_some_and(|p| p.contains(':')) {
                    Family::V6
                } else {
                    Family::V4
                }
            }
        };
        let mut table = LoadedTable::default();
        match family {
            Family::V4 => table.v4 = rib_from(&pairs, "prefixes")?,
            Family::V6 => table.v6 = rib_from(&pairs, "prefixes")?,
        }
        let fib = py
            .detach(|| AnyFib::build(&table, Some(family), engine.as_deref()))
            .map_err(err)?;
        Ok(PyFib {
            fib,
            nexthops: Mutex::new(Vec::new()),
            notes: Vec::new(),
            label: LabelSource::NextHop,
        })
    }

    /// The longest match for one address (`str` or `int`): `(prefix,
    /// label)`, with `prefix` as text (`None` for a table opened from an
    /// image, which holds no prefixes), or `None` if no prefix matches.
    fn lookup(&self, addr: &Bound<'_, PyAny>) -> PyResult<Option<(Option<String>, Label)>> {
        match &self.fib {
            AnyFib::V4(side) => lookup_one(side, addr),
            AnyFib::V6(side) => lookup_one(side, addr),
        }
    }

    /// Looks up many addresses at once, without the GIL. Takes a numpy
    /// `uint32` array (IPv4), an `(n, 16)` `uint8` or `S16` array (IPv6,
    /// network order), a numpy `str`/`object` array, a list of `str` (or
    /// `int`, or `None`), or a pyarrow string array or chunked array.
    /// Returns `(labels, found)`: a `uint32` array of labels (0 where
    /// nothing matched) and a `bool` array saying where something did.
    /// `None` and pyarrow nulls are answered as not found; a malformed
    /// address raises `ValueError` naming its index and text; addresses of
    /// the other family raise `TypeError`. Contiguous binary arrays are
    /// read in place: no other thread may write to them during the call.
    #[allow(clippy::type_complexity)]
    fn lookup_many<'py>(
        &self,
        py: Python<'py>,
        addrs: &Bound<'py, PyAny>,
    ) -> PyResult<(Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<bool>>)> {
        match &self.fib {
            AnyFib::V4(side) => many(py, side, &self.fib, addrs),
            AnyFib::V6(side) => many(py, side, &self.fib, addrs),
        }
    }

    /// Applies one batch of changes: `withdraw` (prefixes) then `announce`
    /// (a dict or `(prefix, label)` pairs). Lookups on other threads see
    /// the whole batch or none of it; on an error the table is unchanged.
    /// Returns `{"effective", "no_ops", "rebuilt", "version"}`.
    #[pyo3(signature = (announce=None, withdraw=None))]
    fn apply<'py>(
        &self,
        py: Python<'py>,
        announce: Option<&Bound<'py, PyAny>>,
        withdraw: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let empty = PyList::empty(py).into_any();
        let announce = announce.unwrap_or(&empty);
        let withdraw = withdraw.unwrap_or(&empty);
        let summary = match &self.fib {
            AnyFib::V4(side) => {
                let changes = changes_from::<u32>(announce, withdraw)?;
                py.detach(|| side.apply(&changes))
            }
            AnyFib::V6(side) => {
                let changes = changes_from::<u128>(announce, withdraw)?;
                py.detach(|| side.apply(&changes))
            }
        }
        .map_err(to_py)?;
        let dict = PyDict::new(py);
        dict.set_item("effective", summary.effective)?;
        dict.set_item("no_ops", summary.no_ops)?;
        dict.set_item("rebuilt", summary.rebuilt)?;
        dict.set_item("version", summary.version)?;
        Ok(dict)
    }

    /// Replays an update stream file onto the table (`time a|w prefix
    /// nexthop` text, MRT BGP4MP, or bgpdump's `-m` text of it; plain, gzip
    /// or bzip2): the changes of the table's family in file order, one
    /// batch per run of changes with the same timestamp (lookups on other
    /// threads see each batch whole or not at all). Next hops are labelled
    /// after the table's own, and `nexthops()` grows by the stream's new
    /// ones. `label` (default: what the table's labels are, as `load` read
    /// them: origin ASes for `label="origin-as"` and prefix-to-AS files,
    /// next hops otherwise), `format`, `lenient` and `skip_bad` as for
    /// `load`; `peer` keeps one
    /// collector peer's changes (default: every peer's). Returns
    /// `{"changes", "batches", "effective", "no_ops", "rebuilt",
    /// "version", "other_family", "notes"}` (`rebuilt`: batches that
    /// rebuilt the engine; `other_family`: changes of the other family,
    /// not applied). A batch the table refuses raises `FibkitError` naming
    /// its time; the batches before it stay applied. A table from an image
    /// cannot change.
    #[pyo3(signature = (
        path, *, format=None, label=None, peer=None, lenient=false, skip_bad=false
    ))]
    // One Rust argument per Python keyword argument.
    #[allow(clippy::too_many_arguments)]
    fn apply_updates<'py>(
        &self,
        py: Python<'py>,
        path: PathBuf,
        format: Option<String>,
        label: Option<&str>,
        peer: Option<&Bound<'py, PyAny>>,
        lenient: bool,
        skip_bad: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let options = load_options(format, label, self.label, peer, lenient, skip_bad)?;
        let mut known = NextHopTable::default();
        for &addr in self.hops().iter() {
            known.intern(addr);
        }
        let loaded = py
            .detach(|| load_updates(&path, &options, known))
            .map_err(err)?;
        let result = py.detach(|| match &self.fib {
            AnyFib::V4(side) => replay_onto(side, &loaded, &path),
            AnyFib::V6(side) => replay_onto(side, &loaded, &path),
        });
        // The stream's next hops are known from here on, also when a
        // batch was refused: the batches before it may use them.
        *self.hops() = loaded.nexthops.iter().map(|(_, addr)| addr).collect();
        let done = result.map_err(FibkitError::new_err)?;
        let dict = PyDict::new(py);
        dict.set_item("changes", done.changes)?;
        dict.set_item("batches", done.batches)?;
        dict.set_item("effective", done.effective)?;
        dict.set_item("no_ops", done.no_ops)?;
        dict.set_item("rebuilt", done.rebuilt)?;
        dict.set_item("version", done.version)?;
        dict.set_item("other_family", loaded.updates.len() - done.changes)?;
        dict.set_item("notes", loaded.notes.clone())?;
        Ok(dict)
    }

    /// Every `(prefix, label)` of the reference table, sorted by address
    /// then length (a table from an image has none: `FibkitError`).
    fn prefixes(&self) -> PyResult<Vec<(String, Label)>> {
        fn pairs<A: ImageFamily>(side: &FamilyFib<A>) -> Option<Vec<(String, Label)>> {
            match side {
                FamilyFib::Live(fib) => Some(fib.with_rib(|rib| {
                    rib.iter()
                        .map(|(prefix, label)| (prefix.to_string(), label))
                        .collect()
                })),
                FamilyFib::Image { .. } => None,
            }
        }
        match &self.fib {
            AnyFib::V4(side) => pairs(side),
            AnyFib::V6(side) => pairs(side),
        }
        .ok_or_else(|| FibkitError::new_err("a table opened from an image holds no prefixes"))
    }

    /// Saves the table's engine as an image that `Fib.open_image`, the C
    /// library and `fibkit lookup` open by memory map (engines that can be
    /// saved: those `fibkit.engines()` marks `savable`).
    fn save_image(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        fn save<A: ImageFamily>(
            side: &FamilyFib<A>,
            path: &std::path::Path,
        ) -> Result<(), fibkit::Error> {
            match side {
                FamilyFib::Live(fib) => {
                    // `spec` takes the writer's lock: read it before `with_rib` does.
                    let spec = fib.spec();
                    fib.with_rib(|rib| save_image(&spec, rib, path))
                }
                FamilyFib::Image { image, .. } => Err(fibkit::Error::ReadOnlyImage {
                    path: image.path().to_path_buf(),
                }),
            }
        }
        py.detach(|| match &self.fib {
            AnyFib::V4(side) => save(side, &path),
            AnyFib::V6(side) => save(side, &path),
        })
        .map_err(to_py)
    }

    /// The address family: 4 or 6.
    #[getter]
    fn family(&self) -> u8 {
        family_number(self.fib.family())
    }

    /// The engine's spec in canonical form (`"dxr:k=20"`).
    #[getter]
    fn spec(&self) -> String {
        self.fib.spec()
    }

    /// Whether the table was opened from an image.
    #[getter]
    fn is_image(&self) -> bool {
        self.fib.is_image()
    }

    /// `{"family", "spec", "is_image", "prefixes" (None for an image),
    /// "memory_bytes", "version"}`.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        dict.set_item("family", family_number(self.fib.family()))?;
        dict.set_item("spec", self.fib.spec())?;
        dict.set_item("is_image", self.fib.is_image())?;
        dict.set_item("prefixes", self.fib.prefixes())?;
        dict.set_item("memory_bytes", self.fib.memory_bytes())?;
        dict.set_item("version", self.fib.version())?;
        Ok(dict)
    }

    fn __repr__(&self) -> String {
        match self.fib.prefixes() {
            Some(prefixes) => format!(
                "<fibkit.Fib {} IPv{} {prefixes} prefixes>",
                self.fib.spec(),
                family_number(self.fib.family())
            ),
            None => format!(
                "<fibkit.Fib {} IPv{} image>",
                self.fib.spec(),
                family_number(self.fib.family())
            ),
        }
    }
}

/// fibkit's native module; import `fibkit`, which re-exports it.
/// Every engine fibkit has, in `--help`'s order: a list of dicts with
/// `name`, `ipv4`, `ipv6` (the families it builds), `savable` (whether
/// `Fib.save_image` can save it) and `about` (its parameters).
#[pyfunction]
fn engines(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let list = PyList::empty(py);
    for info in fibkit::registry::ENGINES {
        let dict = PyDict::new(py);
        dict.set_item("name", info.name)?;
        dict.set_item("ipv4", info.ipv4)?;
        dict.set_item("ipv6", info.ipv6)?;
        dict.set_item("savable", info.savable)?;
        dict.set_item("about", info.about)?;
        list.append(dict)?;
    }
    Ok(list)
}

/// The engine spec `Fib.load` and `Fib.from_prefixes` build for `family`
/// (4 or 6) when none is given: the fastest on this CPU.
#[pyfunction]
fn default_spec(family: u8) -> PyResult<&'static str> {
    match family {
        4 => Ok(fibkit::default_spec(Family::V4)),
        6 => Ok(fibkit::default_spec(Family::V6)),
        _ => Err(PyValueError::new_err(format!(
            "family must be 4 or 6, not {family}"
        ))),
    }
}

#[pymodule]
fn _fibkit(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyFib>()?;
    m.add_function(wrap_pyfunction!(engines, m)?)?;
    m.add_function(wrap_pyfunction!(default_spec, m)?)?;
    m.add("FibkitError", m.py().get_type::<FibkitError>())?;
    Ok(())
}
