//! The crate's one error enum.

/// What can go wrong while scraping metrics or asking libtpu.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MonitorError {
    /// A `/metrics` body is not Prometheus text format.
    #[error("{url}: line {line}: {reason}")]
    Exposition {
        /// Where the text came from.
        url: String,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// A scrape failed (connection, status, size).
    #[error("{url}: {reason}")]
    Scrape {
        /// The URL.
        url: String,
        /// Why.
        reason: String,
    },
    /// libtpu's runtime-metrics service answered with an error or could not be reached.
    #[error("libtpu runtime metrics at {addr}: {reason}")]
    Libtpu {
        /// The address asked.
        addr: String,
        /// Why.
        reason: String,
    },
}
