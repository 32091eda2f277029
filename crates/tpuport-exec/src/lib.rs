//! A model ready to run on a PJRT device, for every verb that executes one (`run`, `bench`,
//! `validate`, `compile`, `serve`, `batch`, `deploy`'s fit check): opening it from any source,
//! binding its inputs, compiling its buckets through the executable cache (or loading the
//! executables `tpuport compile --save` wrote), and the model repository format.
//!
//! One module, run as it is:
//! - [`module`]: a StableHLO [`Module`] with its signature and shardings, the
//!   [`RuntimeOptions`] that open a client for it, [`module::compile`] through the cache.
//! - [`target`]: a module and where its arguments come from ([`Target`]): a plain module, a
//!   bucket of a `tpuport lower` folder with its weights, or an ONNX model lowered here.
//! - [`statics`]: how an ONNX model is made static first ([`Statics`]: bound dimensions,
//!   inputs given a value at lowering time).
//! - [`run`]: one execution, outputs written as `.npy` (`tpuport run`).
//! - [`bench`]: compile times, latency percentiles, throughput, achieved FLOP/s, memory
//!   (`tpuport bench`).
//!
//! A bucketed model, loaded once and executed many times (`tpuport serve`, `tpuport batch`):
//! - [`config`]: a model's `config.toml` ([`ModelConfig`], with its `[image]` table).
//! - [`repo`]: the model repository ([`Repository`]) with its path confinement, and the
//!   [`repo::Plan`] a model resolves to.
//! - [`open`]: a model opened from a path ([`open_model`]): an entry, a lowered folder, a
//!   StableHLO module bound by its argument roles, or ONNX lowered per bucket.
//! - [`model`]: the loaded [`Model`] (one executable per bucket, weights on the device) and the
//!   [`LoadMetrics`] hook its load reports to.
//! - [`saved`]: executables saved by `tpuport compile --save`, checked against their manifest.
//! - [`wire`]: the tensor datatype names of the Open Inference Protocol, which a
//!   `config.toml` declares its tensors in and a loaded model's types must have.
//!
//! Nothing here prints: progress and warnings go to an [`Observer`], load figures to a
//! [`LoadMetrics`]. [`ExecError`] is also the error of the pipelines built on this crate
//! (`tpuport-compile`, `tpuport-validate`).

pub mod bench;
pub mod config;
pub mod model;
pub mod module;
pub mod open;
pub mod repo;
pub mod run;
pub mod saved;
pub mod statics;
pub mod target;
pub mod wire;

pub mod error;

pub use config::ModelConfig;
pub use error::{ExecError, Result};
pub use model::{CacheUse, ExeSource, LoadMetrics, Model, NoMetrics, TensorSig};
pub use module::{Module, Param, RuntimeOptions};
pub use open::{EntryDraft, OpenOptions, client, draft_entry, open_model};
pub use repo::Repository;
pub use statics::{StaticLowering, Statics};
pub use target::Target;

/// Where a pipeline reports progress (`info`) and problems that do not stop it (`warn`).
pub trait Observer {
    /// A progress line (shown with `-v`).
    fn info(&self, _msg: &str) {}
    /// A warning.
    fn warn(&self, _msg: &str) {}
    /// Something the user should see that is neither progress nor a problem (a value bound
    /// from the inputs given).
    fn note(&self, _msg: &str) {}
}

/// An observer that drops everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct Silent;

impl Observer for Silent {}
