//! The crate's error type.

/// What can go wrong while rendering.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// A report could not be serialised to JSON (a non-string map key, a failing `Serialize`).
    #[error("serialising the report to JSON")]
    Json(#[source] serde_json::Error),
}
