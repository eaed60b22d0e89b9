//! Rust errors as Python exceptions.

use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyValueError};
use pyo3::prelude::*;

use fibkit::image::ImageError;
use fibkit::load::LoadError;

use crate::FibkitError;

/// Converts a fibkit error: missing files are `FileNotFoundError`, other
/// I/O errors `OSError`, everything else `FibkitError` (a `ValueError`).
pub(crate) fn to_py(error: fibkit::Error) -> PyErr {
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

pub(crate) fn err(error: impl Into<fibkit::Error>) -> PyErr {
    to_py(error.into())
}

/// Bad input naming the item: `addrs[3]: ...`.
pub(crate) fn bad_item(argument: &str, index: usize, why: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(format!("{argument}[{index}]: {why}"))
}
