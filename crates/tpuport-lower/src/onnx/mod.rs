//! ONNX → StableHLO lowering.
//!
//! Contract (other crates and the binary code against these types; the lowering itself fills
//! them): [`lower`] takes an ONNX [`Model`] whose inputs are bound to static shapes and returns
//! one StableHLO module as text plus the binding of every module argument and result.

use serde::Serialize;
use tpuport_model::{DType, Model};

use crate::LowerError;

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

/// Where a module argument's data comes from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "name", rename_all = "lowercase")]
pub enum ArgSource {
    /// A graph input the caller provides, by ONNX name.
    Input(String),
    /// An initializer (or Constant-held weight) from the model's weight store, by name.
    Weight(String),
}

/// One module argument.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ArgBinding {
    /// Where the data comes from.
    pub source: ArgSource,
    /// Element type the module expects (after any `--dtype` cast).
    pub dtype: DType,
    /// Static shape.
    pub shape: Vec<u64>,
}

/// One module result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ResultBinding {
    /// ONNX value name (a graph output, or an exposed intermediate).
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// Static shape.
    pub shape: Vec<u64>,
}

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
    let _ = (model, opts);
    Err(LowerError::Invalid("ONNX lowering is not implemented yet".to_owned()))
}
