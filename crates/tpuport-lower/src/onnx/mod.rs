//! ONNX → StableHLO lowering.
//!
//! Contract (other crates and the binary code against these types; the lowering itself fills
//! them): [`lower`] takes an ONNX [`Model`] whose inputs are bound to static shapes and returns
//! one StableHLO module as text plus the binding of every module argument and result.

use serde::Serialize;
use tpuport_model::Model;

use crate::LowerError;

mod cx;
mod emit;
mod host;
mod ops;

/// Element type used for compute.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ComputeType {
    /// Keep the model's types.
    #[default]
    Native,
    /// Weights and compute in bf16, accumulations and reductions in f32.
    Bf16,
}

/// Lowering options.
#[derive(Clone, Debug, Default)]
pub struct LowerOptions {
    /// Embed weights as constants instead of passing them as arguments.
    pub weights_as_constants: bool,
    /// Compute type.
    pub compute: ComputeType,
    /// ONNX value names to return as extra results after the graph outputs, in this order
    /// (used by `validate --bisect`).
    pub expose: Vec<String>,
}

pub use tpuport_formats::lowered::{ArgBinding, ArgSource, ResultBinding};

/// A lowered module.
#[derive(Clone, Debug)]
pub struct Lowered {
    /// StableHLO text (generic form) that PJRT plugins compile.
    pub mlir: String,
    /// Module arguments in order.
    pub args: Vec<ArgBinding>,
    /// Module results in order: graph outputs, then [`LowerOptions::expose`] values.
    pub results: Vec<ResultBinding>,
}

/// Lowers `model` (ONNX, every input bound to a static shape) to StableHLO.
///
/// # Errors
/// [`LowerError::Unsupported`] naming the first node whose op, attribute or opset is not
/// handled; [`LowerError::Invalid`] when a shape is not static.
pub fn lower(model: &Model, opts: &LowerOptions) -> Result<Lowered, LowerError> {
    cx::lower(model, opts, &[])
}

/// Like [`lower`], with the values of some graph inputs known at lowering time: the module is
/// specialised to them. A small value (up to 64 elements, or an integer or boolean tensor up
/// to the host-evaluation limit) is folded like a small weight, so shape computations on it run
/// at lowering time (an `If` on `sr == 16000` lowers only the taken branch); a larger one is used only where an op needs a static operand (Reshape's
/// shape, Slice's starts, reduction axes, Pad's pads, ...). Every input stays a module
/// argument, so the signature is the same as [`lower`]'s. This is how a static compiler
/// handles models (like the ONNX node tests) that feed such operands from graph inputs: lower,
/// and on [`LowerError::NeedsHostValue`] bind the graph input it names and lower again.
///
/// # Errors
/// As [`lower`]; values of types without a host form are ignored.
pub fn lower_with_values(
    model: &Model,
    opts: &LowerOptions,
    values: &[(String, tpuport_model::HostTensor)],
) -> Result<Lowered, LowerError> {
    cx::lower(model, opts, values)
}

/// Whether the lowering handles an op at an opset.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum Support {
    /// Lowered (possibly with attribute values rejected at lowering time; see `notes`).
    Supported {
        /// Op family file (`elementwise`, `matmul`, ...).
        family: &'static str,
        /// Oldest opset handled.
        since: i64,
    },
    /// Known op, but the model's opset is older than the lowering handles.
    OldOpset {
        /// Oldest opset handled.
        since: i64,
    },
    /// Not lowered at all.
    Unsupported,
}

/// Answers whether `op` in `domain` at `opset` is lowered (for `audit` findings).
#[must_use]
pub fn support(op: &str, domain: &str, opset: i64) -> Support {
    match ops::find(op, domain) {
        Some((family, _, since, _)) if opset >= since => Support::Supported { family, since },
        Some((_, _, since, _)) => Support::OldOpset { since },
        None => Support::Unsupported,
    }
}

/// Every (op, family, oldest opset) the lowering handles, sorted by op.
#[must_use]
pub fn supported_ops() -> Vec<(&'static str, &'static str, i64)> {
    let mut v: Vec<_> = ops::families()
        .iter()
        .flat_map(|(_, rules)| rules.iter())
        .filter_map(|r| ops::find(r.op, "").map(|(f, _, since, _)| (r.op, f, since)))
        .collect();
    v.sort_unstable();
    v
}
