use serde::Serialize;

use crate::{Graph, WeightStore};

/// The file format a model was read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModelFormat {
    /// ONNX `ModelProto`.
    Onnx,
    /// StableHLO / MLIR text.
    StablehloText,
    /// StableHLO portable artifact (MLIR bytecode, VHLO).
    StablehloBytecode,
    /// safetensors (single file or sharded with an index).
    Safetensors,
    /// PyTorch zip checkpoint (`torch.save`).
    TorchZip,
    /// PyTorch legacy (non-zip) pickle checkpoint.
    TorchLegacy,
    /// NumPy `.npy`.
    Npy,
    /// NumPy `.npz`.
    Npz,
}

impl ModelFormat {
    /// Short name used in reports and JSON.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            ModelFormat::Onnx => "onnx",
            ModelFormat::StablehloText => "stablehlo-text",
            ModelFormat::StablehloBytecode => "stablehlo-bytecode",
            ModelFormat::Safetensors => "safetensors",
            ModelFormat::TorchZip => "torch-zip",
            ModelFormat::TorchLegacy => "torch-legacy",
            ModelFormat::Npy => "npy",
            ModelFormat::Npz => "npz",
        }
    }

    /// True for formats that carry a computation graph (not just tensors).
    #[must_use]
    pub const fn has_graph(self) -> bool {
        matches!(
            self,
            ModelFormat::Onnx | ModelFormat::StablehloText | ModelFormat::StablehloBytecode
        )
    }
}

/// The framework that most likely produced a file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Framework {
    /// PyTorch (torch.onnx, torch.save, safetensors from torch).
    PyTorch,
    /// TensorFlow (tf2onnx).
    TensorFlow,
    /// Keras.
    Keras,
    /// JAX (jax.jit lowering, jax.export).
    Jax,
    /// Flax on JAX.
    Flax,
    /// scikit-learn / other converters.
    Other,
    /// No evidence.
    #[default]
    Unknown,
}

/// What the file says about itself.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Metadata {
    /// Producer name (ONNX `producer_name`, safetensors `__metadata__.format`, StableHLO
    /// bytecode producer string).
    pub producer: Option<String>,
    /// Producer version.
    pub producer_version: Option<String>,
    /// ONNX IR version.
    pub ir_version: Option<i64>,
    /// Operator set imports: (domain, version); `""` is the default ONNX domain.
    pub opsets: Vec<(String, i64)>,
    /// StableHLO/VHLO version the module targets, when stated.
    pub stablehlo_version: Option<String>,
    /// Best guess at the producing framework.
    pub framework: Framework,
    /// A finer exporter guess (`torch.onnx (dynamo)`, `torch.onnx (TorchScript)`, `tf2onnx`,
    /// `jax.export`, `jax.jit lower`).
    pub exporter: Option<String>,
    /// Free-form key/value metadata from the file (ONNX `metadata_props`, safetensors
    /// `__metadata__`, MLIR module attributes).
    pub properties: Vec<(String, String)>,
    /// Documentation strings the file carries, each with where it was found (`model`, `graph`,
    /// `input x`): ONNX `doc_string`s of the model, the main graph and its inputs. Exporters
    /// sometimes state the example shape there; `tpuport audit` reads it as a hint for the
    /// `--dim` to give.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub docs: Vec<(String, String)>,
    /// A language model's configuration from its checkpoint folder (`config.json`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm: Option<crate::LlmConfig>,
}

/// Severity of an import note.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NoteLevel {
    /// Informational.
    Info,
    /// Something is off but the import went on.
    Warning,
    /// A security-relevant finding (e.g. a pickle global outside the allow-list).
    Security,
}

/// Something an importer noticed that the user should know (not an error: import succeeded).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Note {
    /// Severity.
    pub level: NoteLevel,
    /// Stable code, e.g. `pickle-global`, `dup-initializer`.
    pub code: String,
    /// One-line message.
    pub message: String,
}

/// A model as read from disk: graph (empty for pure checkpoints), functions, weights, metadata.
#[derive(Clone, Debug)]
pub struct Model {
    /// Source format.
    pub format: ModelFormat,
    /// What the file says about itself.
    pub metadata: Metadata,
    /// The entry graph (ONNX main graph, StableHLO `@main`); empty for checkpoints.
    pub graph: Graph,
    /// Other functions (ONNX model-local functions as `domain::name`, StableHLO private funcs).
    pub functions: Vec<Graph>,
    /// Stored tensors.
    pub weights: WeightStore,
    /// Notes raised while importing.
    pub notes: Vec<Note>,
}

impl Model {
    /// A model with no graph and no weights yet.
    #[must_use]
    pub fn empty(format: ModelFormat) -> Model {
        Model {
            format,
            metadata: Metadata::default(),
            graph: Graph::default(),
            functions: Vec::new(),
            weights: WeightStore::default(),
            notes: Vec::new(),
        }
    }

    /// Records a note.
    pub fn note(&mut self, level: NoteLevel, code: &str, message: impl Into<String>) {
        self.notes.push(Note { level, code: code.to_owned(), message: message.into() });
    }

    /// Looks a function up by name.
    #[must_use]
    pub fn function(&self, name: &str) -> Option<&Graph> {
        self.functions.iter().find(|f| f.name == name)
    }
}
