//! fibkit's errors, on the bottom floor of the crate: every module that
//! can fail imports its error from here, so no module has to import a
//! higher one (or its caller) for an error type. The specific errors are
//! re-exported where they arise (`engine::BuildError`, `load::LoadError`,
//! `image::ImageError`); [`Error`] holds any of them for callers that handle
//! every fibkit error in one place.

use std::io;
use std::path::{Path, PathBuf};

use crate::addr::Family;

/// Why an engine could not be built or updated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// The spec names no known engine.
    #[error("unknown engine `{name}` (known: {known})")]
    UnknownEngine {
        /// The name given.
        name: String,
        /// Comma-separated names of the registered engines.
        known: String,
    },
    /// The spec string is malformed.
    #[error("bad engine spec `{spec}`: {why}")]
    BadSpec {
        /// The whole spec.
        spec: String,
        /// What is wrong.
        why: String,
    },
    /// The engine does not handle this address family.
    #[error("engine `{engine}` does not support {family} (engines that do: {alternatives})")]
    UnsupportedFamily {
        /// The engine name.
        engine: String,
        /// The family asked for.
        family: Family,
        /// Engines that support the family.
        alternatives: String,
    },
    /// The table does not fit the engine's layout.
    #[error("engine `{engine}` cannot encode this table: {why}")]
    Limit {
        /// The engine spec.
        engine: String,
        /// Which limit was hit and what would work instead.
        why: String,
    },
    /// The engine cannot apply changes in place; rebuild it instead.
    #[error("engine `{engine}` has no incremental update")]
    UpdateUnsupported {
        /// The engine spec.
        engine: String,
    },
}

/// Why a file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be opened or read.
    // The I/O error is part of the message rather than a `source()`, so a
    // printed chain of causes does not say it twice.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error (a truncated gzip file shows up here).
        error: io::Error,
    },
    /// A bad line or record.
    #[error("{path}:{line}: {what}")]
    Bad {
        /// The file.
        path: PathBuf,
        /// Line number (text) or record number (MRT), from 1.
        line: u64,
        /// What is wrong, with the offending text.
        what: String,
    },
    /// The file as a whole is unusable (empty, unknown format, wrong kind).
    #[error("{path}: {what}")]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        what: String,
    },
}

impl LoadError {
    pub(crate) fn bad(path: &Path, line: u64, what: impl Into<String>) -> Self {
        LoadError::Bad {
            path: path.to_path_buf(),
            line,
            what: what.into(),
        }
    }

    pub(crate) fn file(path: &Path, what: impl Into<String>) -> Self {
        LoadError::File {
            path: path.to_path_buf(),
            what: what.into(),
        }
    }

    pub(crate) fn io(path: &Path, error: io::Error) -> Self {
        LoadError::Io {
            path: path.to_path_buf(),
            error,
        }
    }
}

/// Why an image could not be written or opened.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// Reading or writing the file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The file is not a valid image of this version for this machine.
    #[error("{path}: {why}")]
    Invalid {
        /// The file (or `<bytes>` for an image in memory).
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// The engine cannot be saved as an image.
    #[error("engine `{engine}` cannot be saved as an image (engines that can: {engines})")]
    Unsupported {
        /// The engine spec.
        engine: String,
        /// Engines that can.
        engines: String,
    },
}

/// Why a model input could not be read or used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// A file could not be read or written.
    #[error("{path}: {why}")]
    Io {
        /// The file.
        path: String,
        /// The operating system's message.
        why: String,
    },
    /// A file is not what it should be.
    #[error("{path}:{line}: {why}")]
    BadFile {
        /// The file.
        path: String,
        /// The 1-based line (0: the file as a whole).
        line: usize,
        /// What is wrong.
        why: String,
    },
    /// The inputs cannot give a prediction.
    #[error("{0}")]
    Input(String),
}

/// Why keys could not be generated.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The trace file could not be read.
    #[error("{path}: {error}")]
    Io {
        /// The trace file.
        path: PathBuf,
        /// The error (in the message, not a `source()`, so that a printed
        /// chain of causes does not repeat it).
        error: std::io::Error,
    },
    /// A line of the trace is over the length limit or unreadable, or the
    /// trace holds more than `trace::MAX_ADDRESSES` addresses.
    #[error(transparent)]
    Load(LoadError),
    /// A line of the trace file is not an address of the family.
    #[error("{path}:{line}: `{text}` is not an {family} address")]
    BadAddress {
        /// The trace file.
        path: PathBuf,
        /// Line number from 1.
        line: u64,
        /// The offending text.
        text: String,
        /// The family expected.
        family: Family,
    },
    /// The trace file holds no address, or the table no prefix for `announced`.
    #[error("{0}")]
    Empty(String),
}

/// Any error fibkit returns.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An engine could not be built or updated.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// A table or update stream could not be loaded.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// An image could not be written or opened.
    #[error(transparent)]
    Image(#[from] ImageError),
    /// A prefix could not be parsed or made.
    #[error(transparent)]
    Prefix(#[from] crate::prefix::PrefixError),
    /// Benchmark keys could not be made or read.
    #[error(transparent)]
    Keys(#[from] KeyError),
    /// Changes were given to a table opened from an image.
    #[error("{path}: a table opened from an image cannot change (load the table and build an engine to apply changes)")]
    ReadOnlyImage {
        /// The image file.
        path: PathBuf,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specific_errors_convert_and_keep_their_message() {
        fn parse() -> Result<crate::Prefix<u32>, Error> {
            Ok("10.0.0.1/8".parse::<crate::Prefix<u32>>()?)
        }
        let err = parse().unwrap_err();
        assert!(matches!(err, Error::Prefix(_)));
        assert!(err.to_string().contains("host bits set"), "{err}");
        let build: Error = crate::build::<u32>("nosuch", &crate::Rib::new())
            .err()
            .unwrap()
            .into();
        assert!(matches!(
            build,
            Error::Build(crate::engine::BuildError::UnknownEngine { .. })
        ));
    }
}
