//! What a run did ([`Summary`], JSON schema `tpuport.batch/1`): the types `tpuport-report`
//! renders, which need none of the pipeline's dependencies.

use std::path::PathBuf;

use serde::Serialize;

/// JSON schema id of the [`Summary`].
pub const SCHEMA: &str = "tpuport.batch/1";

/// Which slice of the parts this process runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Shard {
    /// This shard, `0..count`.
    pub index: usize,
    /// Shards in all.
    pub count: usize,
}

impl Default for Shard {
    fn default() -> Shard {
        Shard { index: 0, count: 1 }
    }
}

/// The model as loaded.
#[derive(Clone, Debug, Serialize)]
pub struct Loaded {
    /// Model name.
    pub name: String,
    /// PJRT platform.
    pub platform: String,
    /// Compiled buckets.
    pub buckets: Vec<usize>,
    /// The bucket batches run at.
    pub batch: usize,
    /// Seconds to compile (or load from the cache) and upload the weights.
    pub load_seconds: f64,
}

/// What a run did.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// [`SCHEMA`].
    pub schema: &'static str,
    /// The model as loaded.
    pub model: Loaded,
    /// The output folder.
    pub output: PathBuf,
    /// The shard.
    pub shard: Shard,
    /// Parts this shard owns.
    pub parts: usize,
    /// Parts already complete when the run started (skipped).
    pub parts_skipped: usize,
    /// Parts written by this run.
    pub parts_written: usize,
    /// Rows written by this run.
    pub rows: u64,
    /// Rows refused by this run (see `errors_file`).
    pub bad_rows: u64,
    /// Executions.
    pub batches: u64,
    /// Padding rows executed (never written), over all rows executed.
    pub padding_waste: f64,
    /// Seconds of the pipeline (after the model loaded).
    pub seconds: f64,
    /// Rows written per second.
    pub rows_per_second: f64,
    /// Fraction of the pipeline's time at least one execution was in flight.
    pub device_busy: f64,
    /// Fraction of the pipeline's time every executor waited for a decoded batch.
    pub input_wait: f64,
    /// Host seconds spent reading and decoding rows (all decoder threads).
    pub decode_seconds: f64,
    /// Decoder threads and executions in flight.
    pub decoders: usize,
    /// Executions in flight at once.
    pub in_flight: usize,
    /// The manifest.
    pub manifest: PathBuf,
    /// The errors file.
    pub errors_file: PathBuf,
}
