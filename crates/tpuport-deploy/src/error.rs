//! The crate's one error enum.

/// What can go wrong while planning manifests.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeployError {
    /// The slice cannot hold the model; names the smallest slice that can, when there is one.
    #[error("{0}")]
    DoesNotFit(String),
    /// The slice or option combination cannot be deployed this way.
    #[error("{0}")]
    Unsupported(String),
    /// A flag or spec value is out of range.
    #[error("{field}: {reason}")]
    Invalid {
        /// The flag or field.
        field: String,
        /// Why.
        reason: String,
    },
}

impl DeployError {
    pub(crate) fn invalid(field: impl Into<String>, reason: impl Into<String>) -> DeployError {
        DeployError::Invalid { field: field.into(), reason: reason.into() }
    }
}
