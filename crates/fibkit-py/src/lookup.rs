//! Bulk lookups: numpy arrays of binary addresses read in place, other
//! input parsed first, and the lookups themselves without the GIL.

use numpy::{PyArray1, PyArrayDescrMethods, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use fibkit::any::{FamilyFib, SLICE_CHUNK};
use fibkit::labels::NO_ROUTE_WORD;
use fibkit::registry::ImageFamily;
use fibkit::{AnyFib, Family, Label};

use crate::convert::{addresses, one_address};

/// What `lookup_many` returns: a `uint32` array of labels (0 where nothing
/// matched) and a `bool` array saying where something did.
pub(crate) type Answers<'py> = (Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<bool>>);

/// The family-specific parts of the Python API.
pub(crate) trait PyFamily: ImageFamily {
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
pub(crate) fn many<'py, A: PyFamily>(
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

pub(crate) fn lookup_one<A: PyFamily>(
    side: &FamilyFib<A>,
    addr: &Bound<'_, PyAny>,
) -> PyResult<Option<(Option<String>, Label)>> {
    let addr = one_address::<A>(addr)?;
    Ok(side
        .lookup_prefix(addr)
        .map(|(prefix, label)| (prefix.map(|p| p.to_string()), label)))
}
