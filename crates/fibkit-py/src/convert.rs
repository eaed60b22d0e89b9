//! Python arguments as fibkit values: families, peers, load options,
//! addresses (one, or many from a sequence, a numpy text array or a
//! pyarrow string array), prefixes and changes.

use numpy::{
    PyArray1, PyArrayDescrMethods, PyArrayMethods, PyReadonlyArray1, PyUntypedArray,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use fibkit::load::{Format, LabelSource, LoadOptions, PeerSelector};
use fibkit::{Addr, Change, Family, Label, Prefix, Rib};

use crate::errors::bad_item;
use crate::lookup::PyFamily;

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
pub(crate) fn family_arg(family: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Family>> {
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

pub(crate) fn family_number(family: Family) -> u8 {
    match family {
        Family::V4 => 4,
        Family::V6 => 6,
    }
}

/// Addresses to look up, with `None` where the input had a null.
pub(crate) struct Parsed<A> {
    pub(crate) addrs: Vec<A>,
    /// Positions of nulls (answered as not found); empty when none.
    pub(crate) nulls: Vec<usize>,
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
pub(crate) fn addresses<A: PyFamily>(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
) -> PyResult<Parsed<A>> {
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

/// One address: `str` or `int`.
pub(crate) fn one_address<A: Addr>(addr: &Bound<'_, PyAny>) -> PyResult<A> {
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

/// Prefix and label pairs (a dict, or an iterable of `(prefix, label)`)
/// as a reference table of family `A`.
pub(crate) fn rib_from<A: Addr>(pairs: &Bound<'_, PyAny>, argument: &str) -> PyResult<Rib<A>> {
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
pub(crate) fn load_options(
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

/// Changes of family `A`: withdrawals, then announcements.
pub(crate) fn changes_from<A: Addr>(
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
