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

mod convert;
mod errors;
mod fib;
mod lookup;

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use fibkit::Family;

use fib::PyFib;

create_exception!(
    fibkit,
    FibkitError,
    PyValueError,
    "A table, image or engine spec fibkit cannot use (the message names the problem)."
);

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
