//! The numerics pipelines behind `tpuport validate` and `tpuport conformance`: each takes
//! options, runs models on a PJRT device through `tpuport-exec` and returns a public,
//! serialisable report; the binary parses flags and renders the report.
//!
//! - [`validate`]: numerics parity against a reference (files, the same model in f32,
//!   onnxruntime), TPU matmul-precision emulation, first divergent op.
//! - [`conformance`]: the ONNX backend test cases through the lowering.
//!
//! Running one model is `tpuport-exec`'s (`tpuport run`, `tpuport bench`), compiling for a
//! TPU slice `tpuport-compile`'s. Nothing here prints: progress and warnings go to a
//! [`tpuport_exec::Observer`]. Errors are [`tpuport_exec::ExecError`]s.

pub mod conformance;
pub mod validate;
