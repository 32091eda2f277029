//! The crate's one error enum.

/// What stops [`crate::doctor`] (everything else is part of its report).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EnvError {
    /// The module whose StableHLO version was to be judged cannot be read (the importer's
    /// error names the file).
    #[error(transparent)]
    Model(#[from] tpuport_formats::FormatError),
}
