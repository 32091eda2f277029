//! The neutral model IR every tpuport verb reads models through.
//!
//! Importers (in `tpuport-formats`) translate a file into a [`Model`]: a [`Graph`] of
//! [`Node`]s connected by [`Value`]s, a [`WeightStore`] whose tensor bytes stay on disk until
//! asked for (memory-mapped), and [`Metadata`] about who produced the file. Nothing here knows
//! about TPUs, and nothing here prints: analysis passes and renderers live elsewhere.
//!
//! Design decisions:
//! - Shapes carry symbolic dimensions ([`Dim::Sym`]) so that a model exported with a dynamic
//!   batch stays faithful to the file; [`Shape::bind`] substitutes concrete sizes later.
//! - Op names are kept as the file spells them, qualified by domain (`Conv`,
//!   `com.microsoft::FusedMatMul`, `stablehlo.dot_general`). An op no importer understands is
//!   still a node with its types and attributes, never an import failure.
//! - Weights are [`WeightData`] handles, not byte vectors: inspecting a 7B-parameter checkpoint
//!   reads its header only.
//! - What an op *is* (family, properties, and for ONNX ops the shape rule, cost formula and
//!   lowering opset) lives here, in [`ops`], because every crate that reads ops depends on this
//!   one and on none of the others.

mod dtype;
mod error;
pub mod fs;
mod graph;
mod llm;
mod model;
pub mod ops;
mod shape;
mod tensor;
mod weights;

pub use dtype::DType;
pub use error::{ModelError, error_chain};
pub use graph::{Attr, Graph, Node, NodeId, Value, ValueId, ValueKind};
pub use llm::LlmConfig;
pub use model::{Framework, Metadata, Model, ModelFormat, Note, NoteLevel};
pub use shape::{Dim, Shape, TensorType};
pub use tensor::HostTensor;
pub use weights::{Weight, WeightData, WeightId, WeightStore};
