//! Memory pass: inference footprint by liveness over the graph, and the training footprint
//! (weights, gradients, optimizer state, activations with and without rematerialization).
//!
//! Liveness model (documented in `docs/audit.md`):
//! - `func.call` bodies are inlined at their call site, so a callee's temporaries are counted
//!   where the call runs.
//! - Ops in topological (file) order. An intermediate buffer is allocated by its producer and
//!   freed after its last consumer; graph outputs live to the end. Weights and caller inputs are
//!   live throughout and counted apart.
//! - Aliases take no new buffer: reshape / squeeze / unsqueeze / flatten / identity / bitcast
//!   alias their input, broadcasts and constants are folded into their consumers (XLA fuses
//!   them), and an elementwise op whose same-sized operand dies at that op writes in place.
//!   Which ops alias, fold or write in place is a property of the op in [`crate::taxonomy`].
//! - Padded figures put every buffer in the layout the TPU compiler gives it
//!   (`tpuport_hw::device_layout`, measured on libtpu).

use std::collections::HashMap;

use serde::Serialize;
use tpuport_hw::{Chip, device_bytes, device_bytes_in_order};
use tpuport_model::{DType, Graph, Model, ModelFormat, ValueId, ValueKind};

use crate::cost::sat;
use crate::roles::{ArgRoles, Role as ArgRole};
use crate::taxonomy;
use crate::workload::{Optimizer, Workload};

/// How a flattened value takes memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Weight,
    Input,
    Temp,
    /// Folded into consumers: no buffer (broadcast, constant).
    Virtual,
}

#[derive(Clone, Debug)]
struct FValue {
    name: String,
    shape: Option<Vec<u64>>,
    dtype: Option<DType>,
    bytes: u64,
    role: Role,
    /// The value whose buffer this one shares.
    alias_of: Option<usize>,
    /// Computed from weights alone (a folded constant, not a parameter).
    folded: bool,
    /// Folded, and only a layout change of a weight (transpose, reshape): the TPU compiler
    /// folds it into its consumer (a transposed embedding reused as the LM head is read through
    /// the dot's dimension numbers), so it takes no HBM of its own on a chip.
    layout_view: bool,
    /// The feature dimension of a channels-first convolution activation (ONNX `Conv` output
    /// and the elementwise / pooling values that follow it): the TPU compiler lays it out
    /// feature-minor (`[N, H, W, C]`), so a 64-channel activation pads 64 to 128 lanes.
    feature_dim: Option<usize>,
}

#[derive(Clone, Debug)]
struct FOp {
    name: String,
    op: String,
    inputs: Vec<usize>,
    outputs: Vec<usize>,
}

/// A call-inlined, flat view of the entry graph.
#[derive(Clone, Debug, Default)]
pub(crate) struct Flat {
    values: Vec<FValue>,
    ops: Vec<FOp>,
    outputs: Vec<usize>,
}

impl Flat {
    pub(crate) fn build(model: &Model) -> Flat {
        let mut f = Flat::default();
        let mut map = HashMap::new();
        for (i, v) in model.graph.values.iter().enumerate() {
            let role = match v.kind {
                ValueKind::Weight(_) => Role::Weight,
                ValueKind::Input | ValueKind::Outer => Role::Input,
                ValueKind::Intermediate => Role::Temp,
            };
            let id = f.push_value(&model.graph, ValueId(u32::try_from(i).unwrap_or(0)), role);
            map.insert(i, id);
        }
        f.inline(model, &model.graph, &mut map, "", 0);
        f.outputs =
            model.graph.outputs.iter().filter_map(|o| map.get(&(o.0 as usize)).copied()).collect();
        f
    }

    fn push_value(&mut self, g: &Graph, v: ValueId, role: Role) -> usize {
        let val = g.value(v);
        self.values.push(FValue {
            name: val.name.clone(),
            shape: val.ty.shape.as_ref().and_then(tpuport_model::Shape::as_fixed),
            dtype: val.ty.dtype,
            bytes: val.ty.byte_size().unwrap_or(0),
            role,
            alias_of: None,
            folded: false,
            layout_view: false,
            feature_dim: None,
        });
        self.values.len() - 1
    }

    fn inline(
        &mut self,
        model: &Model,
        g: &Graph,
        map: &mut HashMap<usize, usize>,
        prefix: &str,
        depth: usize,
    ) {
        for n in &g.nodes {
            let ins: Vec<usize> = n
                .inputs
                .iter()
                .flatten()
                .filter_map(|v| map.get(&(v.0 as usize)).copied())
                .collect();
            if n.op == "func.call" && depth < 32 {
                let callee = n.attr("callee").and_then(tpuport_model::Attr::as_str).unwrap_or("");
                if let Some(body) = model.function(callee.trim_start_matches('@')) {
                    let mut inner: HashMap<usize, usize> = HashMap::new();
                    for (k, a) in body.inputs.iter().enumerate() {
                        if let Some(&x) = ins.get(k) {
                            inner.insert(a.0 as usize, x);
                        }
                    }
                    for (i, v) in body.values.iter().enumerate() {
                        if inner.contains_key(&i) {
                            continue;
                        }
                        let role = match v.kind {
                            ValueKind::Weight(_) => Role::Weight,
                            ValueKind::Input | ValueKind::Outer => Role::Input,
                            ValueKind::Intermediate => Role::Temp,
                        };
                        let id =
                            self.push_value(body, ValueId(u32::try_from(i).unwrap_or(0)), role);
                        inner.insert(i, id);
                    }
                    let name = if n.name.is_empty() { callee.to_owned() } else { n.name.clone() };
                    self.inline(model, body, &mut inner, &format!("{prefix}{name}/"), depth + 1);
                    // Call results alias the callee's returned values.
                    for (k, o) in n.outputs.iter().enumerate() {
                        if let (Some(&out), Some(r)) =
                            (map.get(&(o.0 as usize)), body.outputs.get(k))
                            && let Some(&src) = inner.get(&(r.0 as usize))
                        {
                            self.values[out].alias_of = Some(src);
                        }
                    }
                    continue;
                }
            }
            if n.op == "func.return" || n.op == "stablehlo.return" {
                continue;
            }
            let outs: Vec<usize> =
                n.outputs.iter().filter_map(|v| map.get(&(v.0 as usize)).copied()).collect();
            let name = if n.name.is_empty() {
                outs.first().map_or_else(|| n.op.clone(), |&o| self.values[o].name.clone())
            } else {
                n.name.clone()
            };
            self.ops.push(FOp {
                name: format!("{prefix}{name}"),
                op: n.op.clone(),
                inputs: ins,
                outputs: outs,
            });
        }
    }

    /// Whether `v` is (the buffer of) a graph output.
    fn is_output(&self, v: &FValue) -> bool {
        self.outputs.iter().any(|&o| std::ptr::eq(&self.values[self.root(o)], v))
    }

    /// Resolves a value to the value owning its buffer.
    fn root(&self, mut v: usize) -> usize {
        let mut guard = 0;
        while let Some(a) = self.values[v].alias_of {
            v = a;
            guard += 1;
            if guard > 10_000 {
                break;
            }
        }
        v
    }

    /// Marks channels-first convolution activations (see [`FValue::feature_dim`]): outputs of
    /// ONNX `Conv`, then values of the same rank that elementwise ops, normalizations and
    /// pooling compute from them.
    fn mark_feature_minor(&mut self) {
        for i in 0..self.ops.len() {
            let op = &self.ops[i];
            let info = taxonomy::info(&op.op);
            let from = if matches!(op.op.as_str(), "Conv" | "ConvTranspose") {
                Some(1)
            } else if matches!(
                info.family,
                taxonomy::OpFamily::Elementwise
                    | taxonomy::OpFamily::Composite
                    | taxonomy::OpFamily::Reduction
            ) {
                op.inputs
                    .first()
                    .and_then(|&v| {
                        let f = self.values[v].feature_dim?;
                        let rank = self.values[v].shape.as_ref()?.len();
                        Some((f, rank))
                    })
                    .and_then(|(f, rank)| {
                        let out = *op.outputs.first()?;
                        (self.values[out].shape.as_ref()?.len() == rank).then_some(f)
                    })
            } else {
                None
            };
            if let Some(f) = from {
                for &o in &self.ops[i].outputs.clone() {
                    if self.values[o].shape.as_ref().is_some_and(|s| s.len() >= 3 && f < s.len()) {
                        self.values[o].feature_dim = Some(f);
                    }
                }
            }
        }
    }

    /// Assigns aliases (reshape, in-place elementwise) and virtual roles. Needs last uses, so it
    /// runs one pass in order.
    fn assign(&mut self) {
        let mut uses: Vec<usize> = vec![0; self.values.len()];
        for (i, op) in self.ops.iter().enumerate() {
            for &v in &op.inputs {
                uses[v] = i;
            }
        }
        for &o in &self.outputs {
            uses[o] = usize::MAX;
        }
        // Last use of each buffer over the aliases made so far (call results already alias).
        let mut buf_last: Vec<usize> = uses.clone();
        for (v, &u) in uses.iter().enumerate() {
            let r = self.root(v);
            buf_last[r] = buf_last[r].max(u);
        }
        for i in 0..self.ops.len() {
            let op = self.ops[i].clone();
            if taxonomy::info(&op.op).folds_into_consumers() {
                for &o in &op.outputs {
                    self.values[o].role = Role::Virtual;
                }
                continue;
            }
            // Computed from weights alone (a transposed embedding reused as the LM head): a
            // folded constant, held like a weight rather than an activation.
            if !op.inputs.is_empty()
                && op.inputs.iter().all(|&v| self.values[self.root(v)].role == Role::Weight)
            {
                let info = taxonomy::info(&op.op);
                let view = info.family == taxonomy::OpFamily::DataMovement
                    && info.passes_values_through()
                    && op.inputs.len() == 1;
                for &o in &op.outputs {
                    self.values[o].role = Role::Weight;
                    self.values[o].folded = true;
                    self.values[o].layout_view = view;
                }
                continue;
            }
            let link = |this: &mut Flat, buf_last: &mut Vec<usize>, o: usize, src: usize| {
                this.values[o].alias_of = Some(src);
                let r = this.root(src);
                buf_last[r] = buf_last[r].max(buf_last[o]).max(uses[o]);
            };
            if taxonomy::info(&op.op).aliases_operand() {
                if let (Some(&src), Some(&o)) = (op.inputs.first(), op.outputs.first())
                    && self.values[src].role != Role::Virtual
                    && self.values[o].alias_of.is_none()
                {
                    link(self, &mut buf_last, o, src);
                }
                continue;
            }
            if taxonomy::info(&op.op).writes_in_place() && op.outputs.len() == 1 {
                let o = op.outputs[0];
                if self.values[o].alias_of.is_some() {
                    continue;
                }
                for &src in &op.inputs {
                    let r = self.root(src);
                    if self.values[r].role == Role::Temp
                        && buf_last[r] == i
                        && self.values[r].bytes == self.values[o].bytes
                    {
                        link(self, &mut buf_last, o, src);
                        break;
                    }
                }
            }
        }
    }
}

/// Peak of live temporary buffers under `size`.
fn peak(flat: &Flat, size: &dyn Fn(&FValue) -> u64) -> (u64, String, u64) {
    let n = flat.values.len();
    let roots: Vec<usize> = (0..n).map(|v| flat.root(v)).collect();
    let mut last: Vec<usize> = vec![0; n];
    let mut first: Vec<Option<usize>> = vec![None; n];
    for (i, op) in flat.ops.iter().enumerate() {
        for &v in &op.inputs {
            last[roots[v]] = last[roots[v]].max(i);
        }
        for &v in &op.outputs {
            let r = roots[v];
            if first[r].is_none() {
                first[r] = Some(i);
            }
            last[r] = last[r].max(i);
        }
    }
    for &o in &flat.outputs {
        last[roots[o]] = usize::MAX;
    }
    let mut frees: Vec<Vec<usize>> = vec![Vec::new(); flat.ops.len()];
    for r in 0..n {
        if roots[r] == r && first[r].is_some() && last[r] != usize::MAX {
            frees[last[r].min(flat.ops.len() - 1)].push(r);
        }
    }
    let mut live = 0u64;
    let mut best = (0u64, String::new());
    let mut total = 0u64;
    let mut freed = vec![false; n];
    for (i, op) in flat.ops.iter().enumerate() {
        // Reductions stream: their dying inputs are released before the (smaller) result is
        // written, the result taking the input's place.
        if taxonomy::info(&op.op).streams_input() {
            for &r in &frees[i] {
                if flat.values[r].role == Role::Temp && !freed[r] {
                    live = live.saturating_sub(size(&flat.values[r]));
                    freed[r] = true;
                }
            }
        }
        for &v in &op.outputs {
            let r = roots[v];
            if r == v && flat.values[v].role == Role::Temp {
                let s = size(&flat.values[v]);
                live = live.saturating_add(s);
                total = total.saturating_add(s);
            }
        }
        if live > best.0 {
            best = (live, op.name.clone());
        }
        for &r in &frees[i] {
            if flat.values[r].role == Role::Temp && !freed[r] {
                freed[r] = true;
                live = live.saturating_sub(size(&flat.values[r]));
            }
        }
    }
    (best.0, best.1, total)
}

/// Bytes of a value on `chip` in the layout the TPU compiler gives it
/// (`tpuport_hw::device_layout`: least padded dimension order, small row tiles, vector tiles),
/// for weights, caller inputs and intermediates alike.
fn padded_size(v: &FValue, chip: &Chip) -> u64 {
    match (&v.shape, v.dtype, v.feature_dim) {
        (Some(s), Some(d), Some(f)) if v.role == Role::Temp => {
            let mut physical: Vec<u64> =
                s.iter().enumerate().filter(|(k, _)| *k != f).map(|(_, &x)| x).collect();
            physical.push(s[f]);
            device_bytes_in_order(&physical, d, chip).unwrap_or(v.bytes)
        }
        (Some(s), Some(d), _) => device_bytes(s, d, chip).unwrap_or(v.bytes),
        _ => v.bytes,
    }
}

/// One trainable parameter.
#[derive(Clone, Debug, Serialize)]
pub struct Param {
    /// Name.
    pub name: String,
    /// Shape.
    pub shape: Vec<u64>,
    /// Element type as stored.
    pub dtype: DType,
}

/// Training memory under one precision policy.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TrainingMemory {
    /// `fp32` (all f32), `mixed` (bf16 compute, fp32 master weights and optimizer state) or
    /// `bf16` (pure bf16: weights, gradients and optimizer state in bf16).
    pub precision: String,
    /// Weights (master + working copy for `mixed`).
    pub weights: u64,
    /// Gradients.
    pub gradients: u64,
    /// Optimizer state.
    pub optimizer_state: u64,
    /// Activations saved for the backward pass, no rematerialization.
    pub activations: u64,
    /// Activations with sqrt(n) checkpointing (estimate).
    pub activations_remat: u64,
    /// Total without remat.
    pub total: u64,
    /// Total with remat.
    pub total_remat: u64,
}

/// Footprint figures in one unit (logical bytes or one chip's padded bytes).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Footprint {
    /// Weights (stored tensors / parameters).
    pub weights: u64,
    /// Caller inputs.
    pub inputs: u64,
    /// Peak live intermediate buffers (graph outputs included).
    pub peak_activations: u64,
    /// Sum of every intermediate buffer (what training saves without remat).
    pub all_activations: u64,
    /// Graph outputs (part of the peak activations).
    pub outputs: u64,
    /// Activations that need HBM: everything in logical bytes; on a chip, the graph outputs
    /// plus the part of the peak the chip's on-chip memory (VMEM) cannot hold. The TPU compiler
    /// keeps intermediates in VMEM when they fit (measured on libtpu: ResNet-50 at batch 8 on
    /// v5e has no HBM temporaries; its arguments and outputs are the whole HBM need), and
    /// writes an output larger than VMEM through an HBM temporary in its producer's layout
    /// before copying it into the output's (GPT-2's logits), so such an output counts twice.
    pub hbm_activations: u64,
    /// weights + inputs + activations: the peak in logical bytes, the HBM need on a chip
    /// (weights + inputs + `hbm_activations`).
    pub inference: u64,
    /// Training figures per precision policy (empty for inference workloads).
    pub training: Vec<TrainingMemory>,
}

/// Per-device memory of a partitioned module (`mhlo.num_partitions > 1`), from the argument and
/// result sharding annotations (`sdy.sharding` over the module's `sdy.mesh`, or GSPMD
/// `mhlo.sharding`); intermediates are assumed evenly split over the partitions.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PerDevice {
    /// Partitions (devices) the program runs on.
    pub partitions: u64,
    /// Argument bytes per device.
    pub arguments: u64,
    /// Result bytes per device.
    pub outputs: u64,
    /// Peak intermediate bytes (results excluded) over the partitions; on a chip, the part of
    /// it the chip's VMEM cannot hold.
    pub temps: u64,
    /// Sum.
    pub total: u64,
}

/// The memory pass's result.
#[derive(Clone, Debug, Default, Serialize)]
pub struct MemoryReport {
    /// Logical bytes.
    pub logical: Footprint,
    /// Padded bytes per TPU chip id.
    pub padded: Vec<(String, Footprint)>,
    /// The op at which the logical peak is reached.
    pub peak_at: String,
    /// Trainable parameters found.
    pub params: u64,
    /// How parameters were told from data inputs.
    pub params_rule: String,
    /// Per-device figures of a partitioned StableHLO module.
    pub per_device: Option<PerDevice>,
    /// The same per TPU chip id, in the layouts the compiler gives the shards (HBM need).
    pub per_device_padded: Vec<(String, PerDevice)>,
    /// Names of the parameters (not serialized: long).
    #[serde(skip)]
    pub param_names: Vec<String>,
    /// Notes.
    pub notes: Vec<String>,
}

/// The model's trainable parameters: stored weights of rank >= 1, or for modules that take
/// their weights as arguments (StableHLO from JAX, Keras, Flax) the arguments
/// [`crate::roles`] calls weights (gather-read and tied tables included, each counted once).
/// Also returns the state arguments (batch statistics, caches), resident but not trained.
fn params(
    model: &Model,
    flat: &Flat,
    kernels: &HashMap<String, Vec<u64>>,
    roles: &ArgRoles,
) -> (Vec<Param>, Vec<usize>, Vec<usize>, String) {
    let weights: Vec<usize> = (0..flat.values.len())
        .filter(|&v| flat.values[v].role == Role::Weight && !flat.values[v].folded)
        .filter(|&v| flat.values[v].shape.as_ref().is_some_and(|s| !s.is_empty()))
        .collect();
    let is_float = |v: usize| flat.values[v].dtype.is_some_and(DType::is_float);
    let arg_ids = |role: ArgRole| -> Vec<usize> {
        // Entry values come first in the flat view, in graph order.
        roles.with(role).map(|a| a.id.0 as usize).filter(|&v| v < flat.values.len()).collect()
    };
    let mut state = Vec::new();
    // An ONNX graph's weights are its initializers even when it has none (coefficients held
    // in attributes): its inputs are data, never parameters.
    let (ids, rule) = if weights.is_empty() && model.format != ModelFormat::Onnx
        || matches!(model.format, ModelFormat::StablehloText | ModelFormat::StablehloBytecode)
    {
        state = arg_ids(ArgRole::State);
        let ids = arg_ids(ArgRole::Weight);
        let mut by: Vec<String> =
            roles.decided_by.iter().map(|(r, n)| format!("{n} by {}", r.describe())).collect();
        by.truncate(4);
        (ids, format!("weight arguments (argument roles: {})", by.join("; ")))
    } else {
        // Tied weights stored twice (the legacy exporter's transposed lm_head copy of the
        // embedding) are one parameter: drop every copy after the first of each group.
        let copies: Vec<String> = crate::inventory::duplicate_tensors(model, 1024)
            .into_iter()
            .flat_map(|g| g.names.into_iter().skip(1))
            .collect();
        (
            weights
                .into_iter()
                .filter(|&v| is_float(v) && !copies.contains(&flat.values[v].name))
                .collect(),
            "stored float weights of rank >= 1, byte-identical (or transposed) copies counted once"
                .to_owned(),
        )
    };
    let ps = ids
        .iter()
        .map(|&v| Param {
            name: flat.values[v].name.clone(),
            // Conv kernels as the convolution lays them out (feature dims minor).
            shape: kernels
                .get(&flat.values[v].name)
                .cloned()
                .or_else(|| flat.values[v].shape.clone())
                .unwrap_or_default(),
            dtype: flat.values[v].dtype.unwrap_or(DType::F32),
        })
        .collect();
    (ps, ids, state, rule)
}

fn training(
    ps: &[Param],
    acts: u64,
    peak_acts: u64,
    mxu_ops: u64,
    opt: Optimizer,
    size: &dyn Fn(&[u64], DType) -> u64,
) -> Vec<TrainingMemory> {
    let slots = opt.full_state_slots();
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "estimate"
    )]
    let remat = {
        let layers = (mxu_ops.max(1) as f64).sqrt();
        (peak_acts).max((2.0 * acts as f64 / layers) as u64).min(acts)
    };
    let mut out = Vec::new();
    for (precision, w_dt, master, g_dt, s_dt, act_scale) in [
        ("fp32", DType::F32, false, DType::F32, DType::F32, 1.0f64),
        ("mixed", DType::BF16, true, DType::F32, DType::F32, 0.5),
        ("bf16", DType::BF16, false, DType::BF16, DType::BF16, 0.5),
    ] {
        let mut t = TrainingMemory { precision: precision.to_owned(), ..TrainingMemory::default() };
        for p in ps {
            t.weights = t.weights.saturating_add(size(&p.shape, w_dt));
            if master {
                t.weights = t.weights.saturating_add(size(&p.shape, DType::F32));
            }
            t.gradients = t.gradients.saturating_add(size(&p.shape, g_dt));
            let state = slots.saturating_mul(size(&p.shape, s_dt));
            t.optimizer_state = t.optimizer_state.saturating_add(state);
            if opt == Optimizer::Adafactor {
                if p.shape.len() >= 2 {
                    let r = p.shape.len();
                    let mut row = p.shape.clone();
                    row.remove(r - 1);
                    let mut col = p.shape.clone();
                    col.remove(r - 2);
                    let factored = size(&row, s_dt).saturating_add(size(&col, s_dt));
                    t.optimizer_state = t.optimizer_state.saturating_add(factored);
                } else {
                    t.optimizer_state = t.optimizer_state.saturating_add(size(&p.shape, s_dt));
                }
            }
        }
        // Activations are stored at the compute dtype: bf16 halves f32 activations.
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss,
            reason = "estimate"
        )]
        let scale = |x: u64| (x as f64 * act_scale) as u64;
        t.activations = scale(acts);
        t.activations_remat = scale(remat);
        let state = sat_sum(&[t.weights, t.gradients, t.optimizer_state]);
        t.total = state.saturating_add(t.activations);
        t.total_remat = state.saturating_add(t.activations_remat);
        out.push(t);
    }
    out
}

/// Runs the memory pass: logical figures and padded figures for every TPU chip given.
#[must_use]
pub fn analyze(
    model: &Model,
    chips: &[&Chip],
    workload: Workload,
    opt: Optimizer,
    mxu_ops: u64,
) -> MemoryReport {
    let roles =
        crate::roles::assign(model, &crate::roles::RoleOptions::default()).unwrap_or_default();
    analyze_with_roles(model, chips, workload, opt, mxu_ops, &roles)
}

/// [`analyze`] with the argument roles decided by the caller (`--data-args`).
#[must_use]
pub fn analyze_with_roles(
    model: &Model,
    chips: &[&Chip],
    workload: Workload,
    opt: Optimizer,
    mxu_ops: u64,
    roles: &ArgRoles,
) -> MemoryReport {
    let mut flat = Flat::build(model);
    flat.assign();
    flat.mark_feature_minor();
    let kernels = crate::layout::conv_kernel_layouts(model);
    let (ps, param_ids, state_ids, rule) = params(model, &flat, &kernels, roles);
    let param_names = ps.iter().map(|p| p.name.clone()).collect();
    let mut report = MemoryReport {
        param_names,
        params: ps.iter().fold(0u64, |a, p| a.saturating_add(sat(&p.shape))),
        params_rule: rule,
        ..MemoryReport::default()
    };
    let footprint = |size: &dyn Fn(&FValue) -> u64,
                     tsize: &dyn Fn(&[u64], DType) -> u64,
                     on_chip: Option<(u64, u64)>|
     -> (Footprint, String) {
        let (pk, at, total) = peak(&flat, size);
        let outputs = output_bytes(&flat, size, 0);
        let hbm_activations = match on_chip {
            Some((vmem, largest)) => {
                // Intermediates larger than the chip keeps on chip live in HBM (their own
                // liveness peak); the rest spill only beyond VMEM. Outputs are in HBM, and
                // once more when larger than VMEM (written through an HBM temporary).
                let big = |v: &FValue| {
                    let b = size(v);
                    if b > largest && !flat.is_output(v) { b } else { 0 }
                };
                let (big_peak, _, _) = peak(&flat, &big);
                let spill = pk.saturating_sub(outputs).saturating_sub(vmem);
                outputs
                    .saturating_add(output_bytes(&flat, size, vmem))
                    .saturating_add(big_peak.max(spill))
            }
            None => pk,
        };
        let mut f = Footprint {
            peak_activations: pk,
            all_activations: total,
            outputs,
            hbm_activations,
            ..Footprint::default()
        };
        for (v, val) in flat.values.iter().enumerate() {
            if flat.root(v) != v {
                continue;
            }
            match val.role {
                Role::Weight if on_chip.is_some() && val.layout_view => {}
                Role::Weight => f.weights = f.weights.saturating_add(size(val)),
                Role::Input if param_ids.contains(&v) || state_ids.contains(&v) => {
                    f.weights = f.weights.saturating_add(size(val));
                }
                Role::Input if !val.name.is_empty() && model_input(model, &val.name) => {
                    f.inputs = f.inputs.saturating_add(size(val));
                }
                _ => {}
            }
        }
        f.inference = sat_sum(&[f.weights, f.inputs, f.hbm_activations]);
        if workload.is_training() {
            f.training = training(&ps, total, pk, mxu_ops, opt, tsize);
        }
        (f, at)
    };
    let logical = |v: &FValue| v.bytes;
    let tlog = |s: &[u64], d: DType| d.storage_bytes(sat(s)).unwrap_or(0);
    let (f, at) = footprint(&logical, &tlog, None);
    let storage = |s: &[u64], d: DType| d.storage_bytes(sat(s));
    report.per_device = per_device(model, f.peak_activations, f.outputs, &storage, None);
    report.logical = f;
    report.peak_at = at;
    for chip in chips {
        let size = |v: &FValue| padded_size(v, chip);
        let tsize = |s: &[u64], d: DType| {
            device_bytes(s, d, chip).unwrap_or_else(|_| d.storage_bytes(sat(s)).unwrap_or(0))
        };
        let vmem = on_chip_memory(chip);
        let (f, _) = footprint(&size, &tsize, Some((vmem, largest_on_chip_buffer(chip))));
        let dev = |s: &[u64], d: DType| device_bytes(s, d, chip).ok();
        if let Some(pd) = per_device(model, f.peak_activations, f.outputs, &dev, Some(vmem)) {
            report.per_device_padded.push((chip.id.clone(), pd));
        }
        report.padded.push((chip.id.clone(), f));
    }
    if flat.values.iter().any(|v| v.role != Role::Virtual && v.shape.is_none()) {
        report.notes.push("some values have no static shape: they count as 0 bytes (bind dims with --batch / --dim)".to_owned());
    }
    report
}

/// One Shardy mesh of a module (`sdy.mesh @name = <["x"=8, "y"=2]>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SdyMesh {
    /// The symbol (`mesh`).
    pub name: String,
    /// Axis names and sizes, in order: devices are numbered row-major over them.
    pub axes: Vec<(String, u64)>,
    /// The mesh lists its own device order (`device_ids=[...]`), not the row-major one.
    pub device_ids: bool,
}

/// The module's Shardy meshes, from its `sdy.mesh` op texts.
#[must_use]
pub fn sdy_meshes(model: &Model) -> Vec<SdyMesh> {
    let mut out = Vec::new();
    for (k, v) in &model.metadata.properties {
        if k != "mlir.module_op" || !v.contains("sdy.mesh") {
            continue;
        }
        let Some(start) = v.find("#sdy.mesh<[") else { continue };
        let rest = &v[start + 11..];
        let body = &rest[..rest.find(']').unwrap_or(rest.len())];
        let axes = body
            .split(',')
            .filter_map(|item| {
                let (name, size) = item.split_once('=')?;
                Some((name.trim().trim_matches('"').to_owned(), size.trim().parse().ok()?))
            })
            .collect();
        let name = v
            .split("sym_name = \"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .unwrap_or("mesh")
            .to_owned();
        out.push(SdyMesh { name, axes, device_ids: v.contains("device_ids") });
    }
    out
}

/// A Shardy sharding's mesh symbol and, per dimension, its entries as written
/// (`#sdy.sharding<@mesh, [{}, {"x"}, {"x", "y"}]>` → `mesh`, `[[], ["\"x\""], ["\"x\"",
/// "\"y\""]]`): a whole axis is a quoted name; a sub-axis (`"x":(1)2`) or an open dimension's
/// `?` is kept as written for the caller to judge.
#[must_use]
pub fn sdy_sharding_dims(attr: &str) -> Option<(&str, Vec<Vec<&str>>)> {
    let rest = attr.split_once("#sdy.sharding<@")?.1;
    let (mesh, rest) = rest.split_once(',')?;
    let body = rest.split_once('[')?.1;
    let body = &body[..body.rfind(']')?];
    let dims = body
        .split('}')
        .filter_map(|d| d.split_once('{'))
        .map(|(_, inner)| inner.split(',').map(str::trim).filter(|e| !e.is_empty()).collect())
        .collect();
    Some((mesh.trim(), dims))
}

/// Mesh axis sizes by name, over all of the module's Shardy meshes.
fn mesh_axes(model: &Model) -> HashMap<String, u64> {
    sdy_meshes(model).into_iter().flat_map(|m| m.axes).collect()
}

/// How many pieces each dimension is split into, from a sharding annotation; `None` when
/// there is no annotation or it cannot be read (treated as replicated).
fn split_factors(attr: &str, rank: usize, mesh: &HashMap<String, u64>) -> Option<Vec<u64>> {
    if let Some((_, dims)) = sdy_sharding_dims(attr) {
        // Per dim, the product of its axes' sizes (a sub-axis counted as its whole axis).
        let dims: Vec<u64> = dims
            .iter()
            .map(|d| {
                d.iter()
                    .filter_map(|e| mesh.get(e.split('"').nth(1)?).copied())
                    .fold(1u64, u64::saturating_mul)
            })
            .collect();
        return (dims.len() == rank).then_some(dims);
    }
    if attr.contains("replicated") || attr.contains("maximal") {
        return Some(vec![1; rank]);
    }
    // GSPMD: {devices=[a,b,...]<=[n]} (a trailing extra dim with last_tile_dim_replicate).
    let i = attr.find("devices=[")?;
    let rest = &attr[i + 9..];
    let tiles: Vec<u64> =
        rest[..rest.find(']')?].split(',').filter_map(|t| t.trim().parse().ok()).collect();
    (tiles.len() >= rank).then(|| tiles[..rank].to_vec())
}

/// Per-device figures of a partitioned module: argument and result shards sized by `size`
/// (logical or in the chip's layout), intermediates split evenly, less `on_chip` VMEM.
fn per_device(
    model: &Model,
    peak_activations: u64,
    outputs_all: u64,
    size: &dyn Fn(&[u64], DType) -> Option<u64>,
    on_chip: Option<u64>,
) -> Option<PerDevice> {
    let parts: u64 = model
        .metadata
        .properties
        .iter()
        .find(|(k, _)| k == "mhlo.num_partitions")?
        .1
        .split(':')
        .next()?
        .trim()
        .parse()
        .ok()?;
    if parts <= 1 {
        return None;
    }
    let mesh = mesh_axes(model);
    let g = &model.graph;
    let shard = |key: &str, v: tpuport_model::ValueId| -> u64 {
        let val = g.value(v);
        let Some(shape) = val.ty.shape.as_ref().and_then(tpuport_model::Shape::as_fixed) else {
            return val.ty.byte_size().unwrap_or(0);
        };
        let full = val.ty.dtype.and_then(|d| size(&shape, d)).unwrap_or(0);
        let attr = g
            .attrs
            .iter()
            .find(|(k, _)| {
                k == &format!("{key}:sdy.sharding") || k == &format!("{key}:mhlo.sharding")
            })
            .and_then(|(_, a)| a.as_str());
        let Some(f) = attr.and_then(|a| split_factors(a, shape.len(), &mesh)) else { return full };
        let dims: Vec<u64> = shape.iter().zip(&f).map(|(d, k)| d.div_ceil((*k).max(1))).collect();
        val.ty.dtype.and_then(|d| size(&dims, d)).unwrap_or(full)
    };
    let sum = |it: &mut dyn Iterator<Item = u64>| it.fold(0u64, u64::saturating_add);
    let arguments =
        sum(&mut g.inputs.iter().enumerate().map(|(i, v)| shard(&format!("arg{i}"), *v)));
    let outputs =
        sum(&mut g.outputs.iter().enumerate().map(|(i, v)| shard(&format!("res{i}"), *v)));
    let temps = peak_activations.saturating_sub(outputs_all).div_ceil(parts);
    let temps = temps.saturating_sub(on_chip.unwrap_or(0));
    Some(PerDevice {
        partitions: parts,
        arguments,
        outputs,
        temps,
        total: sat_sum(&[arguments, outputs, temps]),
    })
}

/// Bytes of the graph outputs larger than `above` under `size`, each buffer once.
fn output_bytes(flat: &Flat, size: &dyn Fn(&FValue) -> u64, above: u64) -> u64 {
    let mut roots: Vec<usize> = flat.outputs.iter().map(|&o| flat.root(o)).collect();
    roots.sort_unstable();
    roots.dedup();
    roots
        .into_iter()
        .filter(|&r| flat.values[r].role == Role::Temp)
        .map(|r| size(&flat.values[r]))
        .filter(|&b| b > above)
        .fold(0u64, u64::saturating_add)
}

/// The largest intermediate buffer the TPU compiler keeps in VMEM on `chip`. Measured on
/// libtpu 0.0.52 (`docs/compile.md`): v6e keeps 25.7 MB activations on chip but puts 51.4 MB
/// ones (ResNet-50's and MobileNetV2's first 112x112 activations, channel-minor) in HBM,
/// where v5e keeps them on chip; v6e is given 32 MiB, other chips their whole VMEM.
#[must_use]
pub fn largest_on_chip_buffer(chip: &Chip) -> u64 {
    let vmem = on_chip_memory(chip);
    if chip.id == "v6e" { vmem.min(32 << 20) } else { vmem }
}

/// On-chip memory (VMEM) of one device of `chip`, bytes: VMEM per TensorCore times the
/// TensorCores a device has (both on a megacore chip, one on TPU7x); 0 when the catalog has no
/// figure.
#[must_use]
pub fn on_chip_memory(chip: &Chip) -> u64 {
    let per_tc = chip.vmem_per_tensorcore.unwrap_or(0.0);
    let tcs = f64::from(chip.tensorcores.unwrap_or(1));
    let devices = f64::from(chip.devices_per_chip.unwrap_or(1).max(1));
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "bytes")]
    let b = (per_tc * tcs / devices).max(0.0) as u64;
    b
}

/// Saturating sum.
fn sat_sum(xs: &[u64]) -> u64 {
    xs.iter().fold(0u64, |a, &x| a.saturating_add(x))
}

fn model_input(model: &Model, name: &str) -> bool {
    model.graph.inputs.iter().any(|i| model.graph.value(*i).name == name)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn shardy_dims_feed_both_the_split_factors_and_their_callers() {
        let a = r#"#sdy.sharding<@mesh, [{}, {"x"}, {"x", "y"}, {"y":(1)2, ?}]>"#;
        let (mesh, dims) = sdy_sharding_dims(a).unwrap();
        assert_eq!(mesh, "mesh");
        assert_eq!(
            dims,
            vec![vec![], vec![r#""x""#], vec![r#""x""#, r#""y""#], vec![r#""y":(1)2"#, "?"]]
        );
        let sizes: HashMap<String, u64> = [("x".to_owned(), 4), ("y".to_owned(), 2)].into();
        assert_eq!(split_factors(a, 4, &sizes), Some(vec![1, 4, 8, 2]));
        assert_eq!(split_factors(a, 3, &sizes), None);
        assert_eq!(sdy_sharding_dims("{devices=[2,1]<=[2]}"), None);
    }
}
