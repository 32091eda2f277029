//! Per-chip memory, collective traffic and step time of a placed mesh.
//!
//! Memory (`sharding-anchors.md` §7): each parameter's shard at the parameter dtype, the same
//! again for gradients when training, the optimizer's state in f32 (AdamW/Adam: 2 slots,
//! SGD with momentum: 1, Adafactor: a row and a column vector per matrix), and activations
//! from Korthikanti et al. (arXiv 2205.05198) per layer with tensor parallelism and no sequence
//! parallelism: `s·b·h·(10 + 24/t + 5·a·s/(h·t))` bytes at 16 bits, scaled to the activation
//! dtype, `b` the per-chip batch. Without rematerialisation every layer keeps that; with full
//! rematerialisation (MaxText `remat_policy: full`) each layer keeps its input `s·b·h` and one
//! layer's set is live. The logits `b·s·vocab/t` come on top, four times when training (the
//! logits, their log-softmax, its exponential and the logits' gradient are live together in
//! the loss; the count was read off XLA's buffer sizes in `scripts/proofs/shard_proof.py`, where
//! two copies left GPT-2 and BERT 10–15 % under the compiler). Inference keeps nothing for a
//! backward pass: one layer's live set `s·b·(h + 3h/t + 2F/t)` (the residual, q/k/v, the
//! MLP's two intermediates of width `F`; the norm fuses into its consumers) plus the scores `b·(a/t)·s²`, and the
//! logits once. Padding is the
//! difference between each shard's bytes in the TPU layout (`tpuport_hw::device_bytes`) and
//! its dense bytes.
//!
//! Collectives (`sharding-anchors.md` §8), per chip and step, as array sizes `V`:
//! - FSDP: all-gather of each FSDP-split weight in the activation dtype, once for inference and
//!   twice for training (forward, and again for the backward pass), and a reduce-scatter of its
//!   gradient;
//! - tensor parallelism: two all-reduces of the `[b, s, h]` activations per layer forward (after
//!   attention out and MLP down), two more backward, and one per direction for the
//!   vocabulary-parallel embedding;
//! - data parallelism: an all-reduce of the gradient shard each chip holds.
//!
//! Time of an all-gather or reduce-scatter over an axis of `n` chips: `V / W` on a ring with
//! wraparound and `V / W · 2(n−1)/n` without (v5e/v6e slices below 16 chips a side), where
//! `W` is twice the one-way link bandwidth times the physical axes the mesh axis spans, and at
//! least `n/2` µs (1 µs per hop); an all-reduce takes twice that. Compute runs at the chip's
//! bf16 peak: `2·P·tokens` forward, `6·P·tokens` for training (`8·P·tokens` with full
//! rematerialisation), plus attention scores `4·b·s²·h` per layer forward. A chip does its
//! batch share (the axes that split the batch) of each weight's work divided by that weight's
//! `tensor` split, so a mesh that splits neither batch nor weights gets no speed-up from its
//! chips (a CNN on a `tensor` axis its convolutions are not split on).
//!
//! FSDP also needs room for what it gathers: the largest layer's weights whole (activation
//! dtype) and, when training, that layer's gradient before its reduce-scatter; parameters
//! outside the layers (embedding, head) form one group.
//!
//! The step time is compute, plus the tensor-parallel collectives (on the critical path), plus
//! whatever FSDP/DP traffic compute does not hide.

use serde::Serialize;
use tpuport_hw::{Chip, Slice, device_bytes};
use tpuport_model::DType;

use super::names::Kind;
use super::spec::{Axis, Mesh, batch_axes};
use super::{Candidate, ModelDims, ParamPlan, ShardError};
use crate::workload::{Optimizer, Workload};

/// What the cost model needs besides the mesh.
pub(crate) struct Context<'a> {
    pub(crate) chip: &'a Chip,
    pub(crate) slice: &'a Slice,
    pub(crate) dims: &'a ModelDims,
    pub(crate) workload: Workload,
    pub(crate) optimizer: Optimizer,
    pub(crate) batch: u64,
    pub(crate) seq: u64,
    pub(crate) param_dtype: DType,
    pub(crate) compute_dtype: DType,
}

/// Per-chip memory, bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Memory {
    /// Parameter shards (dense).
    pub weights: u64,
    /// Gradient shards (training).
    pub gradients: u64,
    /// Optimizer state shards (training).
    pub optimizer: u64,
    /// Activations without rematerialisation.
    pub activations: u64,
    /// Activations with full rematerialisation (training).
    pub activations_remat: u64,
    /// One copy of the logits (`b·s·vocab/t`), part of the activations.
    pub logits: u64,
    /// Whether the total uses the rematerialised figure (training that does not fit without).
    pub remat: bool,
    /// FSDP working set. Training: the largest layer's weights gathered whole over the `fsdp`
    /// axis (in the activation dtype) and its gradient before the reduce-scatter; the
    /// embedding, head and other parameters outside the layers count as one group.
    /// Inference: the largest single weight gathered (lookup tables and heads are not).
    pub fsdp_gathered: u64,
    /// Extra bytes the TPU's tiled layout adds to the parameter, gradient and optimizer
    /// shards.
    pub padding: u64,
    /// Everything above, with the activations the plan picks.
    pub total: u64,
    /// The chip's HBM budget.
    pub budget: u64,
}

/// Collective traffic per chip and step.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Comms {
    /// All-gather bytes (gathered array sizes).
    pub all_gather_bytes: u64,
    /// Reduce-scatter bytes.
    pub reduce_scatter_bytes: u64,
    /// All-reduce bytes.
    pub all_reduce_bytes: u64,
    /// Time of the FSDP and data-parallel collectives (overlappable with compute), seconds.
    pub overlappable_s: f64,
    /// Time of the tensor-parallel collectives (on the critical path), seconds.
    pub exposed_s: f64,
    /// ICI bandwidth the `fsdp`/`tensor`/`data` axes see, bytes/s.
    pub axis_bandwidth: AxisBandwidth,
}

/// Effective bidirectional ring bandwidth per mesh axis, bytes/s, and whether it wraps.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct AxisBandwidth {
    /// `data`.
    pub data: f64,
    /// `fsdp`.
    pub fsdp: f64,
    /// `tensor`.
    pub tensor: f64,
}

/// Compute per chip and step.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Compute {
    /// FLOPs per chip.
    pub flops: f64,
    /// Seconds at the bf16 peak.
    pub time_s: f64,
}

fn bytes_of(dtype: DType, elements: u64) -> u64 {
    dtype.storage_bytes(elements).unwrap_or(0)
}

/// Activation bytes per chip: (without remat, with full remat) for training, (working set,
/// working set) for inference; and one copy of the logits.
fn activations(ctx: &Context<'_>, mesh: &Mesh) -> (u64, u64, u64) {
    let d = ctx.dims;
    let (Some(l), Some(h)) = (d.layers, d.hidden) else { return (0, 0, 0) };
    let a = d.heads.unwrap_or((h / 64).max(1)) as f64;
    let split: u64 =
        batch_axes(mesh, ctx.batch).iter().map(|&ax| u64::from(mesh.size(ax))).product();
    let b = ctx.batch as f64 / split as f64;
    let (s, hf, t) = (ctx.seq as f64, h as f64, f64::from(mesh.tensor));
    let e = bytes_of(ctx.compute_dtype, 1) as f64;
    let layer = s * b * hf * (10.0 + 24.0 / t + 5.0 * a * s / (hf * t)) * e / 2.0;
    let vocab_t = match d.vocab.filter(|_| d.head) {
        Some(v) if v % u64::from(mesh.tensor) == 0 => v as f64 / t,
        Some(v) => v as f64,
        None => 0.0,
    };
    let logits = b * s * vocab_t * e;
    let lf = l as f64;
    if ctx.workload.is_training() {
        let full = lf * layer + 4.0 * logits;
        let remat = lf * s * b * hf * e + layer + 4.0 * logits;
        (full as u64, remat as u64, logits as u64)
    } else {
        // Inference keeps nothing for a backward pass: one layer's live set is the residual
        // (XLA fuses the norm into its consumers), q/k/v, the MLP's two intermediates and the
        // attention scores.
        let f = d.mlp.unwrap_or(4 * h) as f64;
        let live = s * b * (hf + 3.0 * hf / t + 2.0 * f / t) * e + b * (a / t) * s * s * e;
        let w = (live + logits) as u64;
        (w, w, logits as u64)
    }
}

/// Bidirectional ring bandwidth of each mesh axis on the slice, and whether it wraps: axes are
/// laid innermost first (`tensor`, `fsdp`, `data`) onto the topology's dimensions.
fn axis_bandwidth(ctx: &Context<'_>, mesh: &Mesh) -> Result<[(f64, bool); 3], ShardError> {
    let link = ctx.chip.ici_link_bandwidth.ok_or_else(|| ShardError::MissingFigure {
        chip: ctx.chip.id.clone(),
        field: "ici_link_bandwidth",
    })?;
    let dims: Vec<u64> = ctx.slice.dims.iter().map(|&d| u64::from(d)).collect();
    let wraps = ctx.slice.wraps.clone().unwrap_or_else(|| vec![false; dims.len()]);
    let mut left = dims.clone();
    let mut out = [(0.0, false); 3];
    for (slot, axis) in [(2, Axis::Tensor), (1, Axis::Fsdp), (0, Axis::Data)] {
        let mut need = u64::from(mesh.size(axis));
        let mut spans = 0u32;
        let mut wrapped = true;
        for i in 0..left.len() {
            if need <= 1 {
                break;
            }
            let g = gcd(need, left[i]);
            if g > 1 {
                spans += 1;
                wrapped &= wraps.get(i).copied().unwrap_or(false) && g == dims[i];
                need /= g;
                left[i] /= g;
            }
        }
        out[slot] = (2.0 * link * f64::from(spans.max(1)), wrapped && spans > 0);
    }
    Ok(out)
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Seconds of one all-gather (or reduce-scatter) of `v` bytes over `n` chips.
fn gather_time(v: f64, n: u32, (w, wraps): (f64, bool)) -> f64 {
    if n <= 1 || v <= 0.0 {
        return 0.0;
    }
    let nf = f64::from(n);
    let ring = if wraps { v / w } else { v / w * 2.0 * (nf - 1.0) / nf };
    ring.max(nf / 2.0 * 1e-6)
}

/// Scores a placed mesh.
pub(crate) fn score(
    ctx: &Context<'_>,
    mesh: &Mesh,
    params: &[ParamPlan],
) -> Result<Candidate, ShardError> {
    let training = ctx.workload.is_training();
    let chip = ctx.chip;
    let mut m = Memory::default();
    let mut padded_total = 0u64;
    let mut dense_total = 0u64;
    let bw = axis_bandwidth(ctx, mesh)?;
    let mut comms = Comms {
        axis_bandwidth: AxisBandwidth { data: bw[0].0, fsdp: bw[1].0, tensor: bw[2].0 },
        ..Comms::default()
    };
    let e = ctx.compute_dtype;
    // Matmul weights' elements, each divided by the `tensor` split of its spec: a chip does
    // that share of the weight's work for its share of the batch (a weight nothing splits on
    // `tensor` is computed whole on every chip of that axis).
    let mut matmul_params_per_chip = 0.0f64;
    let tensor_ways = |spec: &[Option<Axis>]| -> f64 {
        if spec.contains(&Some(Axis::Tensor)) { f64::from(mesh.tensor) } else { 1.0 }
    };
    let mut attention_split = false;
    let mut tied_head_ways = 1.0f64;
    let mut groups: std::collections::HashMap<Option<u32>, u64> = std::collections::HashMap::new();
    for p in params {
        let trained = p.kind.trained();
        let dtype = if trained {
            ctx.param_dtype
        } else {
            DType::from_name(&p.dtype).unwrap_or(ctx.param_dtype)
        };
        let local_el: u64 = p.local_shape.iter().product();
        m.weights += p.local_bytes;
        let pad = |dt: DType| -> (u64, u64) {
            let dense = bytes_of(dt, local_el);
            let tiled = device_bytes(&p.local_shape, dt, chip).unwrap_or(dense).max(dense);
            (dense, tiled)
        };
        let (d0, t0) = pad(dtype);
        dense_total += d0;
        padded_total += t0;
        if trained && training {
            m.gradients += bytes_of(ctx.param_dtype, local_el);
            let (d1, t1) = pad(ctx.param_dtype);
            dense_total += d1;
            padded_total += t1;
            let state = match ctx.optimizer {
                Optimizer::Sgd => 0,
                Optimizer::SgdMomentum => bytes_of(DType::F32, local_el),
                Optimizer::Adam | Optimizer::AdamW => 2 * bytes_of(DType::F32, local_el),
                Optimizer::Adafactor => {
                    let r = p.local_shape.len();
                    if r >= 2 {
                        let rows: u64 = p.local_shape[..r - 1].iter().product();
                        let cols: u64 =
                            p.local_shape[..r - 2].iter().product::<u64>() * p.local_shape[r - 1];
                        bytes_of(DType::F32, rows + cols)
                    } else {
                        bytes_of(DType::F32, local_el)
                    }
                }
            };
            m.optimizer += state;
        }
        if trained
            && p.shape.len() >= 2
            && !matches!(p.kind, Kind::Embedding | Kind::PositionEmbedding)
        {
            matmul_params_per_chip += p.shape.iter().product::<u64>() as f64 / tensor_ways(&p.spec);
        }
        if matches!(p.kind, Kind::Query | Kind::Qkv) && p.spec.contains(&Some(Axis::Tensor)) {
            attention_split = true;
        }
        // A head tied to the embedding does the embedding's split of the vocabulary.
        if ctx.dims.tied_head && p.kind == Kind::Embedding && p.shape.len() == 2 {
            tied_head_ways = tensor_ways(&p.spec);
        }
        // FSDP traffic: this weight is gathered over the fsdp axis before use.
        if trained && p.spec.contains(&Some(Axis::Fsdp)) {
            let gathered = bytes_of(e, local_el * u64::from(mesh.fsdp));
            let whole_grad = if training {
                bytes_of(ctx.param_dtype, local_el * u64::from(mesh.fsdp))
            } else {
                0
            };
            if training {
                *groups.entry(p.layer).or_insert(0) += gathered + whole_grad;
            } else if !matches!(p.kind, Kind::Embedding | Kind::PositionEmbedding | Kind::LmHead) {
                // Inference keeps nothing for a backward pass: a weight is gathered right
                // before its matmul and freed after, so one weight (the largest) is whole at
                // a time, not a layer; a lookup table is read shard by shard, never whole.
                // (libtpu on BERT-base's ONNX export at fsdp=8 held 72.6 MiB a chip against
                // 226.5 planned with layer groups and the embedding gathered: `shard --verify`.)
                let e = groups.entry(None).or_insert(0);
                *e = (*e).max(gathered);
            }
            let times = if training { 2 } else { 1 };
            comms.all_gather_bytes += times * gathered;
            comms.overlappable_s += times as f64 * gather_time(gathered as f64, mesh.fsdp, bw[1]);
            if training {
                let g = bytes_of(ctx.param_dtype, local_el * u64::from(mesh.fsdp));
                comms.reduce_scatter_bytes += g;
                comms.overlappable_s += gather_time(g as f64, mesh.fsdp, bw[1]);
            }
        }
        // Data parallelism: the gradient shard is all-reduced over the data axis.
        if trained && training && mesh.data > 1 {
            let g = bytes_of(ctx.param_dtype, local_el);
            comms.all_reduce_bytes += g;
            comms.overlappable_s += 2.0 * gather_time(g as f64, mesh.data, bw[0]);
        }
    }
    m.padding = padded_total.saturating_sub(dense_total);
    if ctx.dims.tied_head {
        matmul_params_per_chip +=
            (ctx.dims.vocab.unwrap_or(0) * ctx.dims.hidden.unwrap_or(0)) as f64 / tied_head_ways;
    }
    let (act, act_remat, logits) = activations(ctx, mesh);
    m.logits = logits;
    m.activations = act;
    m.activations_remat = if training { act_remat } else { act };
    m.budget = chip.hbm_budget().unwrap_or(0.0) as u64;
    m.fsdp_gathered = groups.values().copied().max().unwrap_or(0);
    let fixed = m.weights + m.gradients + m.optimizer + m.padding + m.fsdp_gathered;
    m.remat = training && fixed + act > m.budget && act_remat < act;
    m.total = fixed + if m.remat { act_remat } else { act };

    // Tensor-parallel activation all-reduces.
    let split: u64 =
        batch_axes(mesh, ctx.batch).iter().map(|&ax| u64::from(mesh.size(ax))).product();
    if mesh.tensor > 1
        && let (Some(l), Some(h)) = (ctx.dims.layers, ctx.dims.hidden)
    {
        let v = bytes_of(e, ctx.batch / split.max(1) * ctx.seq * h);
        let per_layer = if training { 4 } else { 2 };
        let emb = if ctx.dims.vocab.is_some() { if training { 2 } else { 1 } } else { 0 };
        let n = l * per_layer + emb;
        comms.all_reduce_bytes += n * v;
        comms.exposed_s += n as f64 * 2.0 * gather_time(v as f64, mesh.tensor, bw[2]);
    }

    // Compute per chip: its share of the batch (the axes that split it) times each weight's
    // share of the work (its `tensor` split). A mesh whose axes split neither does the whole
    // step on every chip.
    let tokens = (ctx.batch * ctx.seq) as f64 / split.max(1) as f64;
    let per_token = if !training {
        2.0
    } else if m.remat {
        8.0
    } else {
        6.0
    };
    let mut per_chip = per_token * matmul_params_per_chip * tokens;
    if let (Some(l), Some(h)) = (ctx.dims.layers, ctx.dims.hidden) {
        let heads_ways = if attention_split { f64::from(mesh.tensor) } else { 1.0 };
        let b = ctx.batch as f64 / split.max(1) as f64;
        let attn = 4.0 * b * (ctx.seq as f64).powi(2) * h as f64 * l as f64 / heads_ways;
        per_chip += attn * per_token / 2.0;
    }
    let peak = chip
        .peak
        .bf16
        .ok_or_else(|| ShardError::MissingFigure { chip: chip.id.clone(), field: "peak.bf16" })?;
    let compute = Compute { flops: per_chip, time_s: per_chip / peak };
    let step = compute.time_s + comms.exposed_s + (comms.overlappable_s - compute.time_s).max(0.0);
    Ok(Candidate {
        mesh: *mesh,
        strategy: mesh.strategy(),
        fits: m.total <= m.budget,
        memory: m,
        comms,
        compute,
        step_time_s: step,
    })
}
