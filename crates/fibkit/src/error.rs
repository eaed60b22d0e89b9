//! One error type for callers that handle every fibkit error in one place;
//! each variant is the specific error a module returns.

/// Any error fibkit returns.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An engine could not be built or updated.
    #[error(transparent)]
    Build(#[from] crate::engine::BuildError),
    /// A table or update stream could not be loaded.
    #[error(transparent)]
    Load(#[from] crate::load::LoadError),
    /// An image could not be written or opened.
    #[error(transparent)]
    Image(#[from] crate::image::ImageError),
    /// A prefix could not be parsed or made.
    #[error(transparent)]
    Prefix(#[from] crate::prefix::PrefixError),
    /// Benchmark keys could not be made or read.
    #[error(transparent)]
    Keys(#[from] crate::trace::KeyError),
    /// Changes were given to a table opened from an image.
    #[error("{path}: a table opened from an image cannot change (load the table and build an engine to apply changes)")]
    ReadOnlyImage {
        /// The image file.
        path: std::path::PathBuf,
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
            Error::Build(crate::BuildError::UnknownEngine { .. })
        ));
    }
}
