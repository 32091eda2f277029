//! The sharding planner behind `tpuport shard`: a mesh for a TPU slice, a partition spec per
//! parameter, the memory each chip holds, the collective traffic per step and its time on ICI,
//! and the strategy with the lowest predicted step time that fits.
//!
//! - [`names`]: what each parameter is (embedding, attention q/k/v/out, MLP up/gate/down, norm,
//!   bias, conv, LM head, state), from the naming schemes of torch/HF, Flax/NNX, Keras and
//!   keras-hub, with a shape fallback.
//! - [`spec`]: the mesh axes (`data`, `fsdp`, `tensor`) laid on the slice topology, and each
//!   parameter's partition spec: Megatron column (q/k/v/up/gate split on their output
//!   features), row (out/down split on their input features), vocabulary-parallel embeddings
//!   and heads, FSDP on the hidden dimension (MaxText's `embed → fsdp` rule), replicated norms,
//!   biases and state (`sharding-anchors.md` §1, §2, §4).
//! - [`cost`]: per-chip memory (weights, gradients, optimizer state, activations with and
//!   without full rematerialisation, tiling padding), collective bytes and time
//!   (`sharding-anchors.md` §7, §8), compute time at the chip's bf16 peak.
//! - [`emit`]: the plan as JAX (`Mesh` with `AxisType.Auto`, `NamedSharding` per parameter
//!   path), torch_xla SPMD (`xs.Mesh`, `xs.mark_sharding` per parameter, `[out, in]` order)
//!   and JSON.
//! - [`gspmd`]: a partition spec as an `mhlo.sharding` attribute, for compiling the plan.
//! - [`step`]: a training step's arguments divided into parameters and optimizer state.
//!
//! Nothing here reads tensor data: a plan needs names, shapes and dtypes only, so a 7B
//! checkpoint plans from its safetensors headers.

pub mod cost;
pub mod emit;
pub mod graph_paths;
pub mod gspmd;
pub mod names;
pub mod params;
pub mod serving;
pub mod spec;
pub mod step;

use std::fmt;
use std::str::FromStr;

use serde::Serialize;
use tpuport_hw::{Chip, Slice};
use tpuport_model::DType;

use crate::audit::gib;
use crate::workload::{Optimizer, Workload};
pub use cost::{Comms, Compute, Memory};
pub use names::{Kind, Orientation, Parallel, ParamRole, Recognised};
pub use spec::{Axis, Mesh};

/// One parameter as the planner sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamInfo {
    /// The name as the file spells it (state-dict key, export path).
    pub name: String,
    /// Static shape.
    pub shape: Vec<u64>,
    /// Stored element type.
    pub dtype: DType,
    /// For a tensor the file names anonymously, the module path and layout its graph gives
    /// it ([`graph_paths::graph_paths`]): classified by that path instead of the name.
    pub graph_path: Option<graph_paths::GraphPath>,
    /// The model's graph only looks rows up in this tensor (every reader is a `Gather` of
    /// it): an embedding no head multiplies by ([`graph_paths::lookup_only`]). False when
    /// there is no graph (a checkpoint) or it is read otherwise.
    pub lookup_only: bool,
}

/// Which family of meshes to consider.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// Every mesh; the fastest that fits wins.
    #[default]
    Auto,
    /// Data parallel: weights replicated.
    Dp,
    /// Fully sharded data parallel (ZeRO-3): weights split on the `fsdp` axis.
    Fsdp,
    /// Megatron tensor parallelism on the `tensor` axis.
    Tp,
    /// FSDP and tensor parallelism together.
    FsdpTp,
}

impl Strategy {
    /// The CLI spelling.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Auto => "auto",
            Strategy::Dp => "dp",
            Strategy::Fsdp => "fsdp",
            Strategy::Tp => "tp",
            Strategy::FsdpTp => "fsdp+tp",
        }
    }

    /// Whether a mesh belongs to this family (a `data` axis may be added to any).
    #[must_use]
    pub fn admits(self, m: &Mesh) -> bool {
        match self {
            Strategy::Auto => true,
            Strategy::Dp => m.fsdp == 1 && m.tensor == 1,
            Strategy::Fsdp => m.fsdp > 1 && m.tensor == 1,
            Strategy::Tp => m.fsdp == 1 && m.tensor > 1,
            Strategy::FsdpTp => m.fsdp > 1 && m.tensor > 1,
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Strategy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(Strategy::Auto),
            "dp" | "data" => Ok(Strategy::Dp),
            "fsdp" => Ok(Strategy::Fsdp),
            "tp" | "tensor" => Ok(Strategy::Tp),
            "fsdp+tp" | "fsdp-tp" | "tp+fsdp" => Ok(Strategy::FsdpTp),
            other => {
                Err(format!("unknown strategy `{other}` (expected auto, dp, fsdp, tp or fsdp+tp)"))
            }
        }
    }
}

/// What to plan for.
#[derive(Clone, Debug)]
pub struct ShardOptions {
    /// Inference or training.
    pub workload: Workload,
    /// Optimizer (training).
    pub optimizer: Optimizer,
    /// Global batch (sequences); default one per chip.
    pub batch: Option<u64>,
    /// Sequence length; default: the token count a `[1, N, hidden]` position embedding fixes
    /// (a vision transformer), else 2048 (MaxText's `max_target_length`) or the rows of a
    /// learned `[N, hidden]` position table when fewer (GPT-2: 1024, BERT: 512).
    pub seq: Option<u64>,
    /// Mesh family.
    pub strategy: Strategy,
    /// An explicit mesh (overrides the search).
    pub mesh: Option<Mesh>,
    /// Element type of the trained parameters, gradients included; default f32 for training
    /// (MaxText `weight_dtype`), the stored type for inference.
    pub param_dtype: Option<DType>,
    /// Element type of activations; default bf16 (MaxText `dtype`).
    pub compute_dtype: Option<DType>,
    /// Attention heads, where the weights do not say (torch `[out, in]` matrices do not);
    /// default hidden / 64 per head dimension, noted in the plan.
    pub heads: Option<u64>,
    /// The model's own configuration (a Hugging Face folder's `config.json`): its heads and KV
    /// heads are used where `heads` is not given.
    pub llm: Option<tpuport_model::LlmConfig>,
}

impl Default for ShardOptions {
    fn default() -> Self {
        ShardOptions {
            workload: Workload::Infer,
            optimizer: Optimizer::AdamW,
            batch: None,
            seq: None,
            strategy: Strategy::Auto,
            mesh: None,
            param_dtype: None,
            compute_dtype: None,
            heads: None,
            llm: None,
        }
    }
}

/// What a plan cannot be made from. One line each, naming the nearest valid choice.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShardError {
    /// `--mesh` does not parse.
    #[error("--mesh `{text}`: {reason} (expected e.g. data=2,fsdp=2,tensor=2)")]
    MeshSyntax {
        /// The text given.
        text: String,
        /// What is wrong.
        reason: String,
    },
    /// The mesh needs a different number of chips than the slice has.
    #[error(
        "mesh {mesh} needs {devices} chips but slice {slice} has {chips}: the axis sizes must multiply to {chips}"
    )]
    MeshSize {
        /// The mesh as written.
        mesh: String,
        /// Its product.
        devices: u64,
        /// The slice name.
        slice: String,
        /// Chips in the slice.
        chips: u32,
    },
    /// A tensor-parallel dimension is not divisible by the `tensor` axis.
    #[error(
        "tensor={axis} does not divide dimension {dim} ({size}) of `{param}` ({kind}); tensor sizes that divide every tensor-parallel dimension: {}",
        join(divisors)
    )]
    NotDivisible {
        /// The parameter.
        param: String,
        /// Its role.
        kind: &'static str,
        /// The dimension.
        dim: usize,
        /// Its size.
        size: u64,
        /// The axis size asked for.
        axis: u32,
        /// Axis sizes that would work (divisors of the slice size).
        divisors: Vec<u32>,
    },
    /// The batch cannot be split over the `data` axis.
    #[error(
        "--batch {batch} is not divisible by data={data}; use a batch that is a multiple of {data}, or a smaller data axis"
    )]
    BatchNotDivisible {
        /// The batch.
        batch: u64,
        /// The data axis.
        data: u32,
    },
    /// Nothing to plan.
    #[error("no trainable parameters with a static shape were found")]
    NoParameters,
    /// The chip lacks a figure the plan needs.
    #[error("the catalog has no {field} for chip `{chip}`")]
    MissingFigure {
        /// The chip.
        chip: String,
        /// The figure.
        field: &'static str,
    },
    /// No mesh of the asked family exists on this slice.
    #[error("no {strategy} mesh works on {slice} for this model: {reason}")]
    NoMesh {
        /// The family.
        strategy: &'static str,
        /// The slice.
        slice: String,
        /// Why (the first candidate's error).
        reason: String,
    },
}

fn join(v: &[u32]) -> String {
    if v.is_empty() {
        return "none but 1".to_owned();
    }
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
}

/// The model's dimensions as the planner reads them from the parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ModelDims {
    /// Parameters (elements), trained ones.
    pub params: u64,
    /// Stored bytes of every parameter.
    pub bytes: u64,
    /// Transformer layers (highest layer index + 1), when the names carry one.
    pub layers: Option<u64>,
    /// Hidden size (embedding width, else the most common norm length).
    pub hidden: Option<u64>,
    /// Vocabulary (embedding rows).
    pub vocab: Option<u64>,
    /// Attention heads (from 3-D attention kernels, `--heads`, or hidden / 64).
    pub heads: Option<u64>,
    /// Where `heads` came from.
    pub heads_from: Option<String>,
    /// Key/value heads (grouped-query attention), from the model's config.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kv_heads: Option<u64>,
    /// Whether the output projection is tied to the embedding (no LM head stored).
    pub tied_head: bool,
    /// Whether the model computes logits over the vocabulary: a stored LM head, or one tied
    /// to the embedding. False when the graph only looks rows up in the embedding (an encoder
    /// such as BERT's `BertModel`, whose outputs are hidden states).
    pub head: bool,
    /// MLP width (the up projection's output features).
    pub mlp: Option<u64>,
}

/// One parameter's plan.
#[derive(Clone, Debug, Serialize)]
pub struct ParamPlan {
    /// Name as the file spells it.
    pub name: String,
    /// Global shape.
    pub shape: Vec<u64>,
    /// Stored dtype.
    pub dtype: String,
    /// Role.
    pub kind: Kind,
    /// Name or shape.
    pub recognised: Recognised,
    /// Feature order of a matrix.
    pub orientation: Orientation,
    /// Mesh axis per dimension (`None`: not split).
    pub spec: Vec<Option<Axis>>,
    /// Transformer layer the name places it in.
    pub layer: Option<u32>,
    /// Shape of the shard each chip holds.
    pub local_shape: Vec<u64>,
    /// Bytes of the shard at the planned parameter dtype.
    pub local_bytes: u64,
}

/// The nearest plan that fits, for a plan that does not.
#[derive(Clone, Debug, Serialize)]
pub struct FitsAt {
    /// Global batch.
    pub batch: u64,
    /// The mesh chosen at that batch.
    pub mesh: Mesh,
    /// Its strategy family.
    pub strategy: String,
    /// Its bytes per chip.
    pub bytes: u64,
}

/// A scored mesh.
#[derive(Clone, Debug, Serialize)]
pub struct Candidate {
    /// The mesh.
    pub mesh: Mesh,
    /// Strategy family name (`fsdp+tp`, `dp+fsdp`).
    pub strategy: String,
    /// Per-chip memory.
    pub memory: Memory,
    /// Collective traffic and time.
    pub comms: Comms,
    /// Compute time.
    pub compute: Compute,
    /// Predicted step time, seconds: compute + exposed tensor-parallel collectives + the part
    /// of the FSDP/DP collectives compute does not hide.
    pub step_time_s: f64,
    /// Whether it fits the chip's HBM budget.
    pub fits: bool,
}

/// A sharding plan.
#[derive(Clone, Debug, Serialize)]
pub struct ShardPlan {
    /// `tpuport.shard/1`.
    pub schema: &'static str,
    /// Slice name as given and its accelerator type.
    pub slice: String,
    /// Accelerator type (`v5litepod-8`).
    pub accelerator_type: String,
    /// Topology (`2x4`).
    pub topology: String,
    /// Chip id.
    pub chip: String,
    /// Chips.
    pub chips: u32,
    /// Workload.
    pub workload: Workload,
    /// Optimizer (training only).
    pub optimizer: Option<Optimizer>,
    /// Global batch.
    pub batch: u64,
    /// Sequence length.
    pub seq: u64,
    /// Parameter dtype used for the plan.
    pub param_dtype: String,
    /// Activation dtype.
    pub compute_dtype: String,
    /// Strategy asked for.
    pub strategy_asked: Strategy,
    /// The model's dimensions.
    pub model: ModelDims,
    /// The chosen mesh and its figures.
    pub chosen: Candidate,
    /// The next best meshes, best first.
    pub runners_up: Vec<Candidate>,
    /// Per parameter.
    pub params: Vec<ParamPlan>,
    /// Optimizer state of an exported training step: each argument with the parameter it is
    /// placed like (`shard::step`); empty otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub state: Vec<StateOf>,
    /// Parameters only the shape fallback placed.
    pub unrecognised: Vec<String>,
    /// Partition spec of the activations' batch.
    pub batch_spec: Vec<Option<Vec<Axis>>>,
    /// Things the reader should know.
    pub notes: Vec<String>,
    /// The TPU compiler's answer for the plan placed on the model's program (`--verify`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verified: Option<Verified>,
    /// When the chosen plan does not fit: the largest smaller global batch whose plan fits at
    /// the same sequence, strategy and mesh choice.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fits_at: Option<FitsAt>,
    /// When the chosen plan does not fit: the smallest larger slice of the same chip where the
    /// same global batch and sequence fit ([`ShardPlan::look_wider`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fits_on: Option<FitsOn>,
    /// Inference of a language model with a config: the KV-cache plan per tensor-parallel
    /// degree, at the plan's sequence as the context length ([`serving`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serving: Option<serving::Serving>,
}

/// A training step's optimizer-state argument and the parameter whose spec it takes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StateOf {
    /// The argument's path (`optimizer.opt_state[0].mu['embedder']['embedding'].value`).
    pub name: String,
    /// Its parameter's path.
    pub param: String,
}

/// A larger slice where a plan that did not fit does.
#[derive(Clone, Debug, Serialize)]
pub struct FitsOn {
    /// The slice (its accelerator type, as `gcloud` names it).
    pub slice: String,
    /// Its chips.
    pub chips: u32,
    /// The plan there: batch, mesh, strategy, bytes per chip.
    #[serde(flatten)]
    pub plan: FitsAt,
}

/// What the TPU compiler answered when the chosen plan was placed on the model's own program
/// and compiled for the slice: its per-chip memory next to the plan's.
#[derive(Clone, Debug, Serialize)]
pub struct Verified {
    /// The compiler (`libtpu 0.0.52`).
    pub compiler: String,
    /// Devices the program was partitioned over.
    pub devices: u32,
    /// Compile wall time, milliseconds.
    pub compile_ms: f64,
    /// The compiler accepted the program; false when it refused for lack of HBM.
    pub fits: bool,
    /// HBM buffers per chip by the compiler: arguments + outputs − aliased + temporaries (on a
    /// refusal, the bytes its message says are needed).
    pub compiler_bytes: u64,
    /// The plan's per-chip total.
    pub plan_bytes: u64,
    /// `compiler_bytes / plan_bytes`.
    pub ratio: f64,
    /// Parameters of the program the plan has no spec for (compiled replicated).
    pub unplanned: Vec<String>,
    /// Bytes per chip of those parameters, as the compiler laid them out.
    pub unplanned_bytes: u64,
    /// The compiler's message on a refusal.
    pub message: Option<String>,
}

impl ShardPlan {
    /// Each optimizer-state argument of a training step with the parameter whose spec it
    /// takes (a state entry naming no planned parameter is left out).
    #[must_use]
    pub fn state_specs(&self) -> Vec<(&StateOf, &ParamPlan)> {
        let by_name: std::collections::HashMap<&str, &ParamPlan> =
            self.params.iter().map(|p| (p.name.as_str(), p)).collect();
        self.state.iter().filter_map(|st| Some((st, *by_name.get(st.param.as_str())?))).collect()
    }

    /// Whether the plan fits: the TPU compiler's answer when it was asked (`--verify`), else
    /// the count's.
    #[must_use]
    pub fn fits(&self) -> bool {
        self.verified.as_ref().map_or(self.chosen.fits, |v| v.fits)
    }

    /// Records the compiler's answer for the chosen plan (`facts`); `data` names the program's
    /// arguments that are not parameters but are accounted for: its data inputs, and a
    /// training step's optimizer state (placed like its parameter, counted as the optimizer's).
    pub fn record_compiler(
        &mut self,
        facts: &crate::compiler_check::CompilerFacts,
        data: &[String],
    ) {
        // A module's unnamed arguments are `%argN` in the plan and `argN` in the compiler's list.
        let key = |n: &str| n.trim_start_matches('%').to_owned();
        let planned: std::collections::HashSet<String> =
            self.params.iter().map(|p| key(&p.name)).collect();
        let data: std::collections::HashSet<String> = data.iter().map(|d| key(d)).collect();
        let extra: Vec<&crate::compiler_check::CompiledTensor> = facts
            .parameters
            .iter()
            .filter(|p| !planned.contains(&key(&p.name)) && !data.contains(&key(&p.name)))
            .collect();
        let unplanned = extra.iter().map(|p| p.name.clone()).collect();
        let unplanned_bytes = extra.iter().filter_map(|p| p.device_bytes).sum();
        let plan_bytes = self.chosen.memory.total;
        #[allow(clippy::cast_precision_loss, reason = "a ratio")]
        let ratio = facts.hbm_bytes as f64 / plan_bytes.max(1) as f64;
        self.verified = Some(Verified {
            compiler: facts.compiler.clone(),
            devices: facts.devices,
            compile_ms: facts.compile_ms,
            fits: facts.fits,
            compiler_bytes: facts.hbm_bytes,
            plan_bytes,
            ratio,
            unplanned,
            unplanned_bytes,
            message: facts.message.clone(),
        });
    }
}

/// Removes the transposed copies of a tied embedding that `torch.onnx.export` (TorchScript)
/// stores for the head's MatMul under an anonymous name (`onnx::MatMul_2861`
/// `[768, 50257]` next to `transformer.wte.weight` `[50257, 768]` in GPT-2): the model trains
/// one tensor. Returns (copy, embedding) names.
fn drop_exporter_copies(roles: &mut Vec<(ParamInfo, ParamRole)>) -> Vec<(String, String)> {
    let embeddings: Vec<(String, Vec<u64>)> = roles
        .iter()
        .filter(|(p, r)| r.kind == Kind::Embedding && p.shape.len() == 2)
        .map(|(p, _)| (p.name.clone(), vec![p.shape[1], p.shape[0]]))
        .collect();
    let mut dropped = Vec::new();
    roles.retain(|(p, _)| {
        if !graph_paths::is_anonymous(&p.name) {
            return true;
        }
        match embeddings.iter().find(|(_, t)| *t == p.shape) {
            Some((of, _)) => {
                dropped.push((p.name.clone(), of.clone()));
                false
            }
            None => true,
        }
    });
    // The head multiplies by the copy, so the embedding does feed one.
    for (p, _) in roles.iter_mut() {
        if dropped.iter().any(|(_, of)| *of == p.name) {
            p.lookup_only = false;
        }
    }
    dropped
}

/// The sequence a position table implies, when `--seq` is not given: (table, tokens, fixed).
/// A `[1, N, hidden]` table (torchvision's and HF's ViT; the class token `[1, 1, hidden]` is
/// one too, the largest is the table) fixes the model at N tokens. A learned `[N, hidden]`
/// table (GPT-2's `wpe`, BERT's `position_embeddings`; BERT's two-row token-type table is one
/// too) holds at most N, so the 2048 default is capped at N.
fn default_tokens(
    roles: &[(ParamInfo, ParamRole)],
    hidden: Option<u64>,
) -> Option<(String, u64, bool)> {
    let table = |rank: usize| {
        roles
            .iter()
            .filter(|(p, r)| {
                r.kind == Kind::PositionEmbedding
                    && p.shape.len() == rank
                    && (rank == 2 || p.shape[0] == 1)
                    && p.shape.last().copied() == hidden
            })
            .max_by_key(|(p, _)| p.shape[rank - 2])
            .map(|(p, _)| (p.name.clone(), p.shape[rank - 2]))
    };
    match table(3) {
        Some((name, n)) => Some((name, n, true)),
        None => table(2).filter(|(_, n)| *n < 2048).map(|(name, n)| (name, n, false)),
    }
}

/// Reads the model's dimensions off its parameters.
fn model_dims(params: &[(ParamInfo, ParamRole)], opts: &ShardOptions) -> ModelDims {
    let mut d = ModelDims::default();
    let mut norm_lens: std::collections::HashMap<u64, usize> = std::collections::HashMap::new();
    let mut max_layer: Option<u32> = None;
    let mut has_head = false;
    let mut head_dims: Option<u64> = None;
    let mut head_vocab: Option<(u64, u64)> = None;
    for (p, r) in params {
        let el = p.shape.iter().product::<u64>();
        d.bytes += p.dtype.storage_bytes(el).unwrap_or(0);
        if r.kind.trained() {
            d.params += el;
        }
        if let Some(l) = r.layer {
            max_layer = Some(max_layer.map_or(l, |m| m.max(l)));
        }
        match r.kind {
            Kind::Embedding if p.shape.len() == 2 && d.vocab.is_none_or(|v| p.shape[0] > v) => {
                d.vocab = Some(p.shape[0]);
                d.hidden = Some(p.shape[1]);
            }
            Kind::LmHead => {
                has_head = true;
                if p.shape.len() == 2 {
                    // [vocab, hidden] as torch stores it, [hidden, vocab] in Flax/Keras.
                    let (v, h) = if r.orientation == Orientation::InOut {
                        (p.shape[1], p.shape[0])
                    } else {
                        (p.shape[0], p.shape[1])
                    };
                    head_vocab = Some((v, h));
                }
            }
            Kind::Norm if p.shape.len() == 1 => *norm_lens.entry(p.shape[0]).or_insert(0) += 1,
            _ => {}
        }
    }
    // A head and no embedding: the exporter kept the tied tensor under the head's name
    // (torch.onnx dynamo's GPT-2 has `lm_head.weight` only, gathered for the embedding too).
    if d.vocab.is_none()
        && let Some((v, h)) = head_vocab
    {
        d.vocab = Some(v);
        d.hidden.get_or_insert(h);
    }
    if d.hidden.is_none() {
        d.hidden = norm_lens.iter().max_by_key(|(len, n)| (**n, **len)).map(|(len, _)| *len);
    }
    // Heads from a 3-D query kernel: the first dimension that is not the hidden size.
    for (p, r) in params {
        if r.kind == Kind::Query && p.shape.len() == 3 {
            head_dims = p.shape.iter().copied().find(|&s| Some(s) != d.hidden);
            break;
        }
    }
    // Numbered blocks are transformer layers only when attention or MLP projections were
    // recognised: a Flax ResNet's `Block_7` holds convolutions, and the per-layer activation
    // formula would count a sequence it does not have.
    let transformer = params.iter().any(|(_, r)| {
        matches!(
            r.kind,
            Kind::Query
                | Kind::Key
                | Kind::Value
                | Kind::Qkv
                | Kind::AttnOut
                | Kind::MlpUp
                | Kind::MlpGate
                | Kind::MlpDown
        )
    });
    d.layers = max_layer.filter(|_| transformer).map(|l| u64::from(l) + 1);
    // An embedding the graph only looks rows up in feeds no head (a checkpoint has no graph,
    // so there a missing head is taken as tied).
    let lookup_only = params.iter().any(|(p, r)| r.kind == Kind::Embedding && p.lookup_only);
    d.tied_head = !has_head && d.vocab.is_some() && !lookup_only;
    d.head = has_head || d.tied_head;
    d.mlp = params
        .iter()
        .find(|(p, r)| r.kind == Kind::MlpUp && p.shape.len() == 2)
        .map(|(p, r)| if r.orientation == Orientation::OutIn { p.shape[0] } else { p.shape[1] });
    let config = opts.llm.as_ref();
    d.kv_heads = config.and_then(|c| c.kv_heads);
    if let Some(h) = opts.heads {
        d.heads = Some(h);
        d.heads_from = Some("--heads".into());
    } else if let Some(h) = config.and_then(|c| c.heads) {
        d.heads = Some(h);
        d.heads_from = Some("config.json".into());
    } else if let Some(h) = head_dims {
        d.heads = Some(h);
        d.heads_from = Some("the query kernel's heads dimension".into());
    } else if let Some(hid) = d.hidden {
        d.heads = Some((hid / 64).max(1));
        d.heads_from = Some("assumed: hidden / 64 (pass --heads)".into());
    }
    d
}

/// Divisors of `n`, ascending.
fn divisors(n: u32) -> Vec<u32> {
    (1..=n).filter(|d| n.is_multiple_of(*d)).collect()
}

/// Every `data × fsdp × tensor` factorisation of `chips`.
fn meshes(chips: u32) -> Vec<Mesh> {
    let mut v = Vec::new();
    for t in divisors(chips) {
        for f in divisors(chips / t) {
            v.push(Mesh { data: chips / t / f, fsdp: f, tensor: t });
        }
    }
    v
}

/// Plans `params` on `slice` of `chip`.
///
/// # Errors
/// [`ShardError`]: a mesh that does not match the slice, a tensor axis that does not divide a
/// tensor-parallel dimension, a batch the data axis does not divide, no parameters.
pub fn plan(
    params: &[ParamInfo],
    slice_name: &str,
    slice: &Slice,
    chip: &Chip,
    opts: &ShardOptions,
) -> Result<ShardPlan, ShardError> {
    let mut plan = plan_at(params, slice_name, slice, chip, opts)?;
    if !plan.chosen.fits {
        let shortfall = plan.chosen.memory.total.saturating_sub(plan.chosen.memory.budget);
        let act = &plan.chosen.memory;
        let activations = if act.remat { act.activations_remat } else { act.activations };
        plan.fits_at = largest_fitting_batch(params, slice_name, slice, chip, opts, plan.batch);
        plan.notes.push(match &plan.fits_at {
            Some(f) => format!(
                "global batch {} fits: {} on mesh {}, {} per chip (the largest below {} at \
                 sequence {})",
                f.batch,
                f.strategy,
                f.mesh,
                gib(f.bytes),
                plan.batch,
                plan.seq
            ),
            None if opts.workload.is_training() => format!(
                "no global batch fits at sequence {}: weights, gradients, optimizer state and \
                 the working set need more than {} per chip on every mesh; a larger slice, \
                 --param-dtype bf16 or a lighter --optimizer is needed",
                plan.seq,
                gib(plan.chosen.memory.budget)
            ),
            None => format!(
                "no global batch fits at sequence {}: the weights and the working set need \
                 more than {} per chip on every mesh; a larger slice or smaller parameters \
                 (--param-dtype) are needed",
                plan.seq,
                gib(plan.chosen.memory.budget)
            ),
        });
        if opts.workload.is_training() && shortfall <= activations {
            plan.notes.push(format!(
                "the shortfall ({}) is smaller than the activations counted ({}): activations \
                 are counted as XLA:CPU keeps them, and in every training step measured with \
                 libtpu (docs/shard.md) the TPU compiler kept less, so this plan may fit on \
                 the TPU; `--verify` on the exported training step settles it",
                gib(shortfall),
                gib(activations)
            ));
        }
    }
    // Logits larger than the chip's on-chip memory: libtpu wrote GPT-2's and BERT's (batch 32
    // x 512, data parallel) and Llama's (tensor parallel) through an HBM temporary as large as
    // the output, which the count does not have (docs/shard.md: 1.36x and 1.22x the count);
    // Llama's data-parallel step did not, so the count is not changed.
    let logits = plan.chosen.memory.logits;
    if !opts.workload.is_training() && logits > crate::memory::largest_on_chip_buffer(chip) {
        plan.notes.push(format!(
            "the logits take {} per chip, more than the chip's on-chip memory: libtpu has held \
             a second copy that large in HBM for such outputs (GPT-2, BERT, a Llama TP step), \
             which this count leaves out; `--verify` on the exported forward pass gives the \
             compiler's figure",
            gib(logits)
        ));
    }
    Ok(plan)
}

impl ShardPlan {
    /// For a plan that does not fit: tries `slices` (the chip's valid slices, smallest first)
    /// larger than this one at the same global batch and sequence, the mesh left to `auto`,
    /// and records the first that fits in [`ShardPlan::fits_on`] with a note.
    pub fn look_wider(
        &mut self,
        params: &[ParamInfo],
        slices: &[Slice],
        chip: &Chip,
        opts: &ShardOptions,
    ) {
        if let (Some(s), Some(c)) = (&mut self.serving, opts.llm.as_ref())
            && s.best.is_none()
        {
            s.nearest = slices.iter().filter(|sl| sl.chips > self.chips).find_map(|sl| {
                let p = serving::plan(
                    c,
                    self.model.params,
                    self.model.bytes,
                    chip,
                    sl.chips,
                    self.seq,
                    s.utilization,
                )?;
                Some(serving::Nearest {
                    slice: sl.accelerator_type.clone(),
                    chips: sl.chips,
                    tp: p.best?,
                })
            });
        }
        if self.chosen.fits {
            return;
        }
        let opts = ShardOptions {
            batch: Some(self.batch),
            seq: Some(self.seq),
            mesh: None,
            ..opts.clone()
        };
        let found = slices.iter().filter(|s| s.chips > self.chips).find_map(|s| {
            let p = plan_at(params, &s.accelerator_type, s, chip, &opts).ok()?;
            p.chosen.fits.then(|| FitsOn {
                slice: s.accelerator_type.clone(),
                chips: s.chips,
                plan: FitsAt {
                    batch: p.batch,
                    mesh: p.chosen.mesh,
                    strategy: p.chosen.strategy.clone(),
                    bytes: p.chosen.memory.total,
                },
            })
        });
        if let Some(f) = &found {
            self.notes.push(format!(
                "{} ({} chips) fits global batch {} at sequence {}: {} on mesh {}, {} per chip",
                f.slice,
                f.chips,
                f.plan.batch,
                self.seq,
                f.plan.strategy,
                f.plan.mesh,
                gib(f.plan.bytes)
            ));
        }
        self.fits_on = found;
    }
}

/// The largest global batch below `batch` whose plan fits, by bisection (memory grows with
/// the batch). With a fixed mesh only multiples of its `data` axis are tried.
fn largest_fitting_batch(
    params: &[ParamInfo],
    slice_name: &str,
    slice: &Slice,
    chip: &Chip,
    opts: &ShardOptions,
    batch: u64,
) -> Option<FitsAt> {
    let step = opts.mesh.map_or(1, |m| u64::from(m.data.max(1)));
    let at = |k: u64| -> Option<FitsAt> {
        let o = ShardOptions { batch: Some(k * step), ..opts.clone() };
        let p = plan_at(params, slice_name, slice, chip, &o).ok()?;
        p.chosen.fits.then(|| FitsAt {
            batch: p.batch,
            mesh: p.chosen.mesh,
            strategy: p.chosen.strategy.clone(),
            bytes: p.chosen.memory.total,
        })
    };
    // Batches `k * step` below `batch`; `lo` fits and `hi` does not (or is past the last).
    let last = batch.saturating_sub(1) / step;
    if last == 0 {
        return None;
    }
    let mut best = at(1)?;
    let (mut lo, mut hi) = (1, last + 1);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        match at(mid) {
            Some(f) => {
                best = f;
                lo = mid;
            }
            None => hi = mid,
        }
    }
    Some(best)
}

/// [`plan`] at exactly the options given.
fn plan_at(
    params: &[ParamInfo],
    slice_name: &str,
    slice: &Slice,
    chip: &Chip,
    opts: &ShardOptions,
) -> Result<ShardPlan, ShardError> {
    let mut roles: Vec<(ParamInfo, ParamRole)> = params
        .iter()
        .map(|p| {
            let role = match &p.graph_path {
                Some(g) => {
                    let mut role = names::classify(&format!("{}.weight", g.module), &p.shape);
                    // A matmul scoped at an `nn.MultiheadAttention` itself (torchvision ViT's
                    // `self_attention`) is its fused input projection, `[D, 3D]` as exported:
                    // the module's own weight is `in_proj_weight`.
                    let fused = p.shape.len() == 2
                        && (p.shape[1] == 3 * p.shape[0] || p.shape[0] == 3 * p.shape[1]);
                    if role.recognised == Recognised::Shape && fused {
                        role = names::classify(&format!("{}.in_proj_weight", g.module), &p.shape);
                    }
                    ParamRole { orientation: g.orientation, ..role }
                }
                None => names::classify(&p.name, &p.shape),
            };
            (p.clone(), role)
        })
        .collect();
    if !roles.iter().any(|(_, r)| r.kind.trained()) {
        return Err(ShardError::NoParameters);
    }
    let exporter_copies = drop_exporter_copies(&mut roles);
    let dims = model_dims(&roles, opts);
    let training = opts.workload.is_training();
    let batch = opts.batch.unwrap_or(u64::from(slice.chips));
    let positions = default_tokens(&roles, dims.hidden);
    let seq = opts.seq.or(positions.as_ref().map(|t| t.1)).unwrap_or(2048);
    let stored = roles.iter().map(|(p, _)| p.dtype).next().unwrap_or(DType::F32);
    let param_dtype = opts.param_dtype.unwrap_or(if training { DType::F32 } else { stored });
    let compute_dtype = opts.compute_dtype.unwrap_or(DType::BF16);
    let ctx = cost::Context {
        chip,
        slice,
        dims: &dims,
        workload: opts.workload,
        optimizer: opts.optimizer,
        batch,
        seq,
        param_dtype,
        compute_dtype,
    };
    let mut notes = Vec::new();
    if let (None, Some((name, n, fixed))) = (opts.seq, &positions) {
        notes.push(if *fixed {
            format!("sequence: {n} tokens, from `{name}` (the model's fixed token count)")
        } else {
            format!("sequence: {n} tokens, the most `{name}` holds (pass --seq for another length)")
        });
    }
    for (copy, of) in &exporter_copies {
        notes.push(format!(
            "`{copy}` is the exporter's transposed copy of `{of}` (a head tied to the \
             embedding): it is planned once, as the embedding"
        ));
    }

    let candidates: Vec<Mesh> = match &opts.mesh {
        Some(m) => {
            if m.devices() != u64::from(slice.chips) {
                return Err(ShardError::MeshSize {
                    mesh: m.to_string(),
                    devices: m.devices(),
                    slice: slice_name.to_owned(),
                    chips: slice.chips,
                });
            }
            if !batch.is_multiple_of(u64::from(m.data)) {
                return Err(ShardError::BatchNotDivisible { batch, data: m.data });
            }
            vec![*m]
        }
        None => meshes(slice.chips).into_iter().filter(|m| opts.strategy.admits(m)).collect(),
    };
    let tp_ok = |t: u32| spec::tensor_divides(&roles, t);
    let mut scored = Vec::new();
    let mut no_tensor_split = false;
    let mut first_err: Option<ShardError> = None;
    for m in &candidates {
        if !batch.is_multiple_of(u64::from(m.data)) {
            first_err.get_or_insert(ShardError::BatchNotDivisible { batch, data: m.data });
            continue;
        }
        if let Err((param, kind, dim, size)) = tp_ok(m.tensor) {
            let ok: Vec<u32> =
                divisors(slice.chips).into_iter().filter(|&t| tp_ok(t).is_ok()).collect();
            first_err.get_or_insert(ShardError::NotDivisible {
                param,
                kind,
                dim,
                size,
                axis: m.tensor,
                divisors: ok,
            });
            continue;
        }
        let placed = spec::place(&roles, m, param_dtype, dims.tied_head);
        // A `tensor` axis no parameter is split on only repeats the same work on its chips
        // (Silero VAD's LSTM and convolutions, ResNet-50): `auto` never offers it, though its
        // cheaper collectives could make a tiny model's step look faster.
        if opts.mesh.is_none()
            && m.tensor > 1
            && !placed.params.iter().any(|p| p.spec.contains(&Some(Axis::Tensor)))
        {
            no_tensor_split = true;
            continue;
        }
        scored.push((cost::score(&ctx, m, &placed.params)?, placed));
    }
    if scored.is_empty() {
        return Err(match (first_err, &opts.mesh) {
            (Some(e), Some(_)) => e,
            (e, None) => ShardError::NoMesh {
                strategy: opts.strategy.as_str(),
                slice: slice_name.to_owned(),
                reason: e.map_or_else(
                    || {
                        if no_tensor_split {
                            "no parameter is split on `tensor` (it would only repeat the same \
                             work); try --strategy fsdp or dp"
                                .into()
                        } else {
                            "no factorisation of the slice".into()
                        }
                    },
                    |e| e.to_string(),
                ),
            },
            (None, Some(_)) => ShardError::NoParameters,
        });
    }
    // Fitting meshes by step time, then the rest by memory.
    scored.sort_by(|(a, _), (b, _)| {
        b.fits.cmp(&a.fits).then_with(|| {
            if a.fits {
                a.step_time_s.total_cmp(&b.step_time_s)
            } else {
                a.memory.total.cmp(&b.memory.total)
            }
        })
    });
    let mut it = scored.into_iter();
    let Some((chosen, placed)) = it.next() else {
        return Err(ShardError::NoParameters);
    };
    let runners_up: Vec<Candidate> = it.take(3).map(|(c, _)| c).collect();
    if !chosen.fits {
        notes.push(format!(
            "no mesh fits {} per chip; the one that needs the least memory is shown",
            tpuport_hw::format_bytes(chosen.memory.budget as f64)
        ));
    }
    if let Some(from) = &dims.heads_from
        && from.starts_with("assumed")
    {
        notes.push(format!("attention heads {}", from));
    }
    if dims.layers.is_none() || dims.hidden.is_none() {
        notes.push(
            "no transformer layers recognised: activations are not estimated (weights, gradients and optimizer state only)"
                .into(),
        );
    }
    notes.extend(placed.notes);
    let unrecognised = roles
        .iter()
        .filter(|(_, r)| r.recognised == Recognised::Shape)
        .map(|(p, _)| p.name.clone())
        .collect();
    let batch_spec = spec::batch_spec(&chosen.mesh, batch);
    let serving = opts.llm.as_ref().filter(|_| !training).and_then(|c| {
        serving::plan(
            c,
            dims.params,
            dims.bytes,
            chip,
            slice.chips,
            seq,
            serving::DEFAULT_UTILIZATION,
        )
    });
    Ok(ShardPlan {
        schema: "tpuport.shard/1",
        slice: slice_name.to_owned(),
        accelerator_type: slice.accelerator_type.clone(),
        topology: slice.topology(),
        chip: chip.id.clone(),
        chips: slice.chips,
        workload: opts.workload,
        optimizer: training.then_some(opts.optimizer),
        batch,
        seq,
        param_dtype: param_dtype.to_string(),
        compute_dtype: compute_dtype.to_string(),
        strategy_asked: opts.strategy,
        model: dims,
        chosen,
        runners_up,
        params: placed.params,
        state: Vec::new(),
        unrecognised,
        batch_spec,
        notes,
        verified: None,
        fits_at: None,
        fits_on: None,
        serving,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests;
