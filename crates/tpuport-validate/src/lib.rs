//! The pipelines that run models on a PJRT device, behind the `run`, `bench`, `validate` and
//! `conformance` verbs (and next `serve` and `batch`): each takes options, does the work and
//! returns a public, serialisable report; the binary parses flags and renders the report.
//!
//! - [`module`]: what runs (a StableHLO module with its signature and shardings, or a bucket
//!   of a `tpuport lower` folder with its weights) and the runtime that runs it.
//! - [`run`]: one execution, outputs written as `.npy`.
//! - [`compile`]: the real TPU compiler (libtpu) for a slice without a TPU: per-device memory,
//!   cost, layouts and shardings, or the compiler's refusal; `--save` with a manifest.
//! - [`bench`]: compile times, latency percentiles, throughput, achieved FLOP/s, memory.
//! - [`validate`]: numerics parity against a reference (files, the same model in f32,
//!   onnxruntime), TPU matmul-precision emulation, first divergent op.
//! - [`conformance`]: the ONNX backend test cases through the lowering.
//! - [`statics`]: how an ONNX model is made static for those verbs (bound dimensions, inputs
//!   given a value at lowering time).
//!
//! Nothing here prints: progress and warnings go to an [`Observer`].

pub mod compile;
pub mod conformance;
pub mod validate;

mod error;

pub use error::{Result, ValidateError};
pub use tpuport_exec::{Observer, Silent};
