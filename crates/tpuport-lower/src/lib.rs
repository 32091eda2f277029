//! Lowering and rewriting, producing StableHLO that the PJRT plugins compile.
//!
//! - [`onnx`]: ONNX graph (tpuport's IR, from `tpuport-formats`) → one StableHLO module per
//!   static batch bucket, weights as arguments with a manifest, one file per op family.
//! - [`rewrite`]: StableHLO → StableHLO rewrites used by `validate`: TPU matmul-precision
//!   emulation and exposing intermediate values as extra results.
//!
//! Nothing here knows about PJRT or prints: the binary compiles and runs what this returns.

pub mod onnx;
pub mod rewrite;

mod error;

pub use error::LowerError;
