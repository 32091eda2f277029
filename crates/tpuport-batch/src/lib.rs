//! `tpuport batch`: offline batch inference over a dataset, on the model `tpuport serve` loads
//! too (`tpuport_exec::open_model`: every bucket compiled once, weights uploaded once).
//!
//! ```text
//! source files ──► decoder threads ──► bounded queue ──► executors (≥ 2 in flight) ──► writer
//!   (.npy .npz       read rows,          fixed-shape        upload, execute,            parts +
//!    safetensors     decode images,      batches at          download                    manifest
//!    JPEG/PNG)       pad to the bucket   the bucket
//! ```
//!
//! The input is cut into **parts** of a fixed number of rows, decided by the file names and
//! headers alone; each part is cut into windows of the chosen bucket's rows (the last one
//! padded into the smallest bucket that holds it; padding is never written). Windows never
//! cross parts, so the bytes of a part do not depend on what else runs: shards
//! (`--shard-index/--shard-count`, part `p` belongs to shard `p mod N`) and resumed runs write
//! exactly what one uninterrupted run writes. Memory is bounded by the queues, the decoder
//! threads and the parts being assembled, whatever the dataset size.
//!
//! The library never prints: progress goes to a [`Reporter`].
//!
//! Without its default feature `pipeline` the crate is only the [`Summary`] of a run and the
//! types in it, with no dependency beyond `serde`: `tpuport-report` renders a summary without
//! compiling the model runtime, the image decoders or the Parquet and Arrow readers. The
//! binary enables `pipeline`.

mod summary;

/// Environment variables `tpuport batch` reads.
#[derive(Debug)]
pub struct EnvVars;

impl EnvVars {
    /// Kubernetes Indexed Jobs: this pod's completion index; `tpuport batch` takes it as its
    /// default `--shard-index`.
    pub const JOB_COMPLETION_INDEX: &'static str = "JOB_COMPLETION_INDEX";
    /// `tpuport batch`: the default `--shard-count` (set it to the Job's `completions`).
    pub const TPUPORT_SHARD_COUNT: &'static str = "TPUPORT_SHARD_COUNT";
}

#[cfg(feature = "pipeline")]
mod error;
#[cfg(feature = "pipeline")]
pub mod image;
#[cfg(feature = "pipeline")]
pub mod output;
#[cfg(feature = "pipeline")]
mod parquet;
#[cfg(feature = "pipeline")]
mod pipeline;
#[cfg(feature = "pipeline")]
mod resample;
#[cfg(feature = "pipeline")]
mod run;
#[cfg(feature = "pipeline")]
mod source;

pub use summary::{Loaded, SCHEMA, Shard, Summary};

#[cfg(feature = "pipeline")]
pub use error::{BatchError, Result};
#[cfg(feature = "pipeline")]
pub use image::{ConfigImage, ImageOptions, ImageSpec, Layout};
#[cfg(feature = "pipeline")]
pub use output::{Manifest, OutputFormat, PartRecord};
#[cfg(feature = "pipeline")]
pub use run::{BatchOptions, Progress, Reporter, Silent, manifest_path, run};
#[cfg(feature = "pipeline")]
pub use source::BadRow;
