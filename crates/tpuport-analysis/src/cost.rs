//! Cost pass: FLOPs, transcendentals and bytes accessed per op and in total, for ONNX graphs
//! (after shape inference with the bound `--batch` / `--dim`) and StableHLO modules.
//!
//! Counting convention (documented in `docs/audit.md`; it is XLA's `HloCostAnalysis` one, so the
//! totals compare with `compiled.cost_analysis()["flops"]`):
//! - **dot / matmul / gemm**: `2 · batch · M · N · K`; a Gemm bias adds `M · N`.
//! - **convolution**: `2 · batch · Cout · (Cin / groups) · Σ valid taps`, where a tap is a
//!   (output position, kernel position) pair that reads a real input element, not padding. XLA
//!   counts this way; [`OpCost::mxu_flops`] holds the *dense* count `2 · out · K · Cin / groups`
//!   (padding taps included), the convention of `torch.utils.flop_counter.FlopCounterMode`.
//! - **elementwise** arithmetic, compare, select, convert: 1 FLOP per output element;
//!   exp, log, tanh, logistic, sqrt, rsqrt, pow, erf, sin, cos… count as **transcendentals**.
//! - **reduce**: `(input elements − output elements) · FLOPs of the reducer body`;
//!   **reduce_window** / pooling: `output elements · (window − 1) · body FLOPs`.
//! - Data movement (reshape, transpose, broadcast, slice, concat, gather, pad, constant): 0.
//! - `func.call` counts the callee body at every call site; `while` bodies are multiplied by the
//!   trip count when it is a constant bound (else counted once, and said so).
//! - Composite ONNX ops are expanded to their elementwise cost: Softmax `4n` FLOPs + `n` exp,
//!   LayerNormalization `8n` + one rsqrt per row, Gelu `4n` + `n`, BatchNormalization `2n`.
//!
//! **Bytes accessed** per op are operand bytes plus result bytes (no fusion).
//! [`OpCost::fused_bytes`] is the estimate the roofline uses: ops XLA fuses into a neighbour
//! (elementwise, broadcast, reshape, convert) move no bytes of their own except weights.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use tpuport_model::{Attr, DType, Graph, Model, ModelFormat, Node, ValueId, ValueKind};

/// Deepest nesting of calls / regions followed.
const MAX_DEPTH: usize = 64;

/// What kind of work an op does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OpClass {
    /// Matrix multiply on the MXU (dot, MatMul, Gemm).
    Matmul,
    /// Convolution on the MXU.
    Conv,
    /// Attention: an ONNX `Attention` op, or a matmul of two values computed in the step (scores
    /// `Q·Kᵀ`, context `P·V`).
    Attention,
    /// Reductions and pooling.
    Reduction,
    /// Elementwise arithmetic on the VPU, including transcendental functions.
    Elementwise,
    /// Normalization / softmax composites.
    Composite,
    /// Reshape, transpose, broadcast, slice, gather, concat, constant: moves or aliases data.
    Data,
    /// Calls, loops and conditionals (their bodies are counted as separate ops).
    Control,
    /// Anything the pass has no rule for (custom calls, unknown ops): no FLOPs counted.
    Other,
}

/// The logical dimensions of a matmul-like op, for the layout pass.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MatmulDims {
    /// Product of the batch dimensions.
    pub batch: u64,
    /// Rows of the LHS.
    pub m: u64,
    /// Contracted size.
    pub k: u64,
    /// Columns of the RHS.
    pub n: u64,
    /// Element type of the operands.
    pub dtype: Option<DType>,
    /// Which dimension of which operand `m`, `k` and `n` come from, for the report.
    pub operands: [String; 2],
}

/// Cost of one op (at one call site).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OpCost {
    /// Node name, or its first output's name; call sites prefix `callee/`.
    pub node: String,
    /// Op as the file spells it.
    pub op: String,
    /// What kind of work it is.
    pub class: OpClass,
    /// FLOPs (XLA convention, see the module doc), times `repeats`.
    pub flops: u64,
    /// Dense MXU FLOPs (matmul, conv including padding taps, attention), times `repeats`.
    pub mxu_flops: u64,
    /// Transcendental evaluations, times `repeats`.
    pub transcendentals: u64,
    /// Operand plus result bytes, times `repeats`.
    pub bytes: u64,
    /// Bytes the op moves when fused ops are folded into their neighbours, times `repeats`.
    pub fused_bytes: u64,
    /// Operand bytes that are stored weights.
    pub weight_bytes: u64,
    /// Element type of the first operand (or result), for the peak-rate choice.
    pub dtype: Option<DType>,
    /// How many times the op runs per step (loop trip counts).
    pub repeats: u64,
    /// Matmul dimensions when the op is a matmul / conv (as an implicit GEMM).
    pub matmul: Option<MatmulDims>,
    /// Why the figure is incomplete, if it is (unknown shapes, no rule).
    pub note: Option<String>,
}

/// Totals over all ops.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CostTotals {
    /// FLOPs, XLA convention.
    pub flops: u64,
    /// Dense matmul + conv + attention FLOPs (FlopCounterMode convention).
    pub mxu_flops: u64,
    /// Matmul/conv FLOPs in the XLA convention (the MXU part of `flops`).
    pub matmul_conv_flops: u64,
    /// Transcendentals.
    pub transcendentals: u64,
    /// Bytes accessed without fusion.
    pub bytes: u64,
    /// Bytes accessed with fusible ops folded.
    pub fused_bytes: u64,
    /// Ops counted (call sites expanded).
    pub ops: u64,
    /// Ops whose cost could not be computed (unknown shapes or no rule).
    pub ops_uncounted: u64,
}

/// The cost pass's result.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CostReport {
    /// Per op, in execution order (call bodies expanded at their call site).
    pub ops: Vec<OpCost>,
    /// Totals.
    pub totals: CostTotals,
    /// FLOPs per op class.
    pub by_class: BTreeMap<String, u64>,
    /// Things the caller should know (unknown shapes, uncounted ops, loop trip counts).
    pub notes: Vec<String>,
}

/// Computes the cost of a model's entry graph.
#[must_use]
pub fn analyze(model: &Model) -> CostReport {
    let mut cx = Cx { model, ops: Vec::new(), notes: Vec::new(), unknown_ops: BTreeMap::new() };
    cx.graph(&model.graph, "", 1, 0);
    let report_unbound = |ops: &[OpCost]| {
        ops.iter()
            .filter(|o| o.note.as_deref().is_some_and(|n| n.starts_with("shape not static")))
            .count()
    };
    let mut report = CostReport { ops: cx.ops, notes: cx.notes, ..CostReport::default() };
    let unbound = report_unbound(&report.ops);
    if unbound > 0 {
        report.notes.push(format!(
            "{unbound} op(s) have shapes that are not static: their cost is not counted (bind symbolic dims with --batch / --dim / --input-shape)"
        ));
    }
    for (op, n) in cx.unknown_ops {
        report.notes.push(format!("{n} `{op}` op(s) have no cost rule; counted as 0 FLOPs"));
    }
    let t = &mut report.totals;
    for o in &report.ops {
        t.flops += o.flops;
        t.mxu_flops += o.mxu_flops;
        if matches!(o.class, OpClass::Matmul | OpClass::Conv | OpClass::Attention) {
            t.matmul_conv_flops += o.flops;
        }
        t.transcendentals += o.transcendentals;
        t.bytes += o.bytes;
        t.fused_bytes += o.fused_bytes;
        t.ops += 1;
        if o.note.is_some() {
            t.ops_uncounted += 1;
        }
        let class = serde_json::to_value(o.class)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        *report.by_class.entry(class).or_default() += o.flops;
    }
    report
}

struct Cx<'m> {
    model: &'m Model,
    ops: Vec<OpCost>,
    notes: Vec<String>,
    unknown_ops: BTreeMap<String, u64>,
}

/// Saturating product (hostile shapes must not overflow).
pub(crate) fn sat(xs: &[u64]) -> u64 {
    xs.iter().fold(1u64, |a, &x| a.saturating_mul(x))
}

/// Static shape of a value.
pub(crate) fn shape(g: &Graph, v: ValueId) -> Option<Vec<u64>> {
    g.values.get(v.0 as usize)?.ty.shape.as_ref()?.as_fixed()
}

fn elems(g: &Graph, v: ValueId) -> Option<u64> {
    shape(g, v).map(|s| sat(&s))
}

pub(crate) fn vbytes(g: &Graph, v: ValueId) -> Option<u64> {
    g.values.get(v.0 as usize)?.ty.byte_size()
}

fn dtype(g: &Graph, v: ValueId) -> Option<DType> {
    g.values.get(v.0 as usize)?.ty.dtype
}

fn input(n: &Node, i: usize) -> Option<ValueId> {
    n.inputs.get(i).copied().flatten()
}

fn int_attr(n: &Node, name: &str) -> Option<i64> {
    n.attr(name).and_then(Attr::as_int)
}

fn ints_attr(n: &Node, name: &str) -> Option<Vec<i64>> {
    match n.attr(name)? {
        Attr::Ints(v) => Some(v.clone()),
        Attr::Int(v) => Some(vec![*v]),
        Attr::Text(t) => Some(parse_ints(t)),
        _ => None,
    }
}

/// Every integer in an MLIR attribute text (`dense<[[1, 1], [0, 0]]> : tensor<2x2xi64>` gives
/// `[1, 1, 0, 0]`; the type suffix after ` : ` is ignored).
fn parse_ints(text: &str) -> Vec<i64> {
    let body = text.split(" : ").next().unwrap_or(text);
    body.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'))
        .filter_map(|t| t.parse::<i64>().ok())
        .collect()
}

fn name_of(g: &Graph, n: &Node) -> String {
    if !n.name.is_empty() {
        return n.name.clone();
    }
    n.outputs.first().map_or_else(|| n.op.clone(), |o| g.value(*o).name.clone())
}

fn is_weight(g: &Graph, v: ValueId) -> bool {
    matches!(g.value(v).kind, ValueKind::Weight(_))
}

/// The short op name: `stablehlo.add` -> `add`, `Add` -> `add`.
fn short(op: &str) -> String {
    op.rsplit('.').next().unwrap_or(op).to_ascii_lowercase()
}

fn is_transcendental(op: &str) -> bool {
    matches!(
        op,
        "exponential"
            | "exp"
            | "exponential_minus_one"
            | "log"
            | "log_plus_one"
            | "logistic"
            | "sigmoid"
            | "tanh"
            | "sqrt"
            | "rsqrt"
            | "cbrt"
            | "power"
            | "pow"
            | "atan2"
            | "erf"
            | "sine"
            | "sin"
            | "cosine"
            | "cos"
            | "tan"
            | "asin"
            | "acos"
            | "atan"
            | "sinh"
            | "cosh"
            | "asinh"
            | "acosh"
            | "atanh"
            | "softplus"
            | "softsign"
            | "reciprocal"
    )
}

fn is_elementwise(op: &str) -> bool {
    matches!(
        op,
        "add"
            | "subtract"
            | "sub"
            | "multiply"
            | "mul"
            | "divide"
            | "div"
            | "maximum"
            | "max"
            | "minimum"
            | "min"
            | "negate"
            | "neg"
            | "abs"
            | "sign"
            | "floor"
            | "ceil"
            | "round_nearest_even"
            | "round_nearest_afz"
            | "round"
            | "remainder"
            | "mod"
            | "clamp"
            | "clip"
            | "relu"
            | "leakyrelu"
            | "prelu"
            | "compare"
            | "equal"
            | "greater"
            | "greaterorequal"
            | "less"
            | "lessorequal"
            | "select"
            | "where"
            | "and"
            | "or"
            | "xor"
            | "not"
            | "convert"
            | "cast"
            | "castlike"
            | "isnan"
            | "isinf"
            | "is_finite"
            | "shift_left"
            | "shift_right_logical"
            | "shift_right_arithmetic"
            | "bitshift"
            | "popcnt"
            | "count_leading_zeros"
            | "real"
            | "imag"
            | "complex"
            | "sum"
            | "mean"
            | "bitwiseand"
            | "bitwiseor"
            | "bitwisexor"
            | "bitwisenot"
    )
}

fn is_data(op: &str) -> bool {
    matches!(
        op,
        "reshape"
            | "transpose"
            | "broadcast_in_dim"
            | "broadcast"
            | "dynamic_broadcast_in_dim"
            | "expand"
            | "slice"
            | "dynamic_slice"
            | "dynamic_update_slice"
            | "concatenate"
            | "concat"
            | "pad"
            | "gather"
            | "gathernd"
            | "gatherelements"
            | "constant"
            | "iota"
            | "bitcast_convert"
            | "get_tuple_element"
            | "tuple"
            | "optimization_barrier"
            | "shape"
            | "size"
            | "unsqueeze"
            | "squeeze"
            | "flatten"
            | "identity"
            | "split"
            | "tile"
            | "constantofshape"
            | "range"
            | "reverse"
            | "dropout"
            | "depthtospace"
            | "spacetodepth"
            | "onehot"
            | "sharding_constraint"
            | "reshard"
            | "custom_call_sharding"
            | "copy"
            | "return"
            | "after_all"
            | "partition_id"
            | "replica_id"
            | "get_dimension_size"
            | "rng_bit_generator"
            | "rng"
    )
}

/// Ops XLA fuses into their neighbours (they move no bytes of their own).
fn is_fusible(class: OpClass, op: &str) -> bool {
    match class {
        OpClass::Elementwise | OpClass::Composite => true,
        OpClass::Data => {
            matches!(
                op,
                "reshape"
                    | "broadcast_in_dim"
                    | "broadcast"
                    | "expand"
                    | "constant"
                    | "iota"
                    | "squeeze"
                    | "unsqueeze"
                    | "flatten"
                    | "identity"
                    | "shape"
                    | "return"
                    | "bitcast_convert"
                    | "get_tuple_element"
                    | "tuple"
                    | "sharding_constraint"
                    | "reshard"
            )
        }
        _ => false,
    }
}

/// Valid (output position, kernel position) pairs along one spatial axis.
fn valid_taps(
    input: u64,
    kernel: u64,
    output: u64,
    stride: u64,
    dilation: u64,
    pad_lo: i64,
    lhs_dilation: u64,
) -> u64 {
    let dilated_in =
        if input == 0 { 0 } else { (input - 1).saturating_mul(lhs_dilation).saturating_add(1) };
    let (dilated_in, lhs) = (i128::from(dilated_in), i128::from(lhs_dilation));
    let mut n = 0u64;
    for o in 0..output {
        for k in 0..kernel {
            let pos = i128::from(o) * i128::from(stride) + i128::from(k) * i128::from(dilation)
                - i128::from(pad_lo);
            if pos >= 0 && pos < dilated_in && pos % lhs.max(1) == 0 {
                n += 1;
            }
        }
    }
    n
}

struct ConvGeom {
    batch: u64,
    cin_per_group: u64,
    cout: u64,
    /// Per spatial axis: input, kernel, output, stride, dilation, pad_lo, lhs dilation.
    axes: Vec<(u64, u64, u64, u64, u64, i64, u64)>,
    /// Output elements.
    out_elems: u64,
}

impl ConvGeom {
    fn flops(&self) -> (u64, u64) {
        let taps: u64 = self
            .axes
            .iter()
            .map(|&(i, k, o, s, d, p, l)| {
                // Long axes: the count is separable, but O(o·k) is cheap for real sizes; bound it.
                if o.saturating_mul(k) > 50_000_000 {
                    o.saturating_mul(k)
                } else {
                    valid_taps(i, k, o, s, d, p, l)
                }
            })
            .product();
        let kernel: u64 = self.axes.iter().map(|a| a.1).product();
        let xla = sat(&[2, self.batch, self.cout, self.cin_per_group, taps]);
        let dense = sat(&[2, self.out_elems, self.cin_per_group, kernel]);
        (xla, dense)
    }
}

impl Cx<'_> {
    fn graph(&mut self, g: &Graph, prefix: &str, repeats: u64, depth: usize) {
        if depth > MAX_DEPTH {
            self.notes.push(format!(
                "calls nested deeper than {MAX_DEPTH} under `{prefix}`: not counted"
            ));
            return;
        }
        let mut konst = std::collections::HashSet::new();
        // Transposes read only by matmuls are folded into the dot's dimension numbers by XLA.
        let mut to_dot: HashMap<ValueId, bool> = HashMap::new();
        for o in &g.outputs {
            to_dot.insert(*o, false);
        }
        for n in g.nodes.iter().rev() {
            let s = short(&n.op);
            let dot = matches!(s.as_str(), "dot_general" | "dot" | "matmul" | "gemm" | "einsum")
                || (matches!(s.as_str(), "transpose" | "reshape")
                    && n.outputs.iter().all(|o| to_dot.get(o).copied().unwrap_or(false)));
            for v in n.inputs.iter().flatten() {
                let e = to_dot.entry(*v).or_insert(true);
                *e = *e && dot;
            }
        }
        for n in &g.nodes {
            let folded = short(&n.op) == "transpose"
                && n.outputs.iter().all(|o| to_dot.get(o).copied().unwrap_or(false));
            let before = self.ops.len();
            self.node(g, n, prefix, repeats, depth, &mut konst);
            if folded && let Some(c) = self.ops.get_mut(before) {
                c.fused_bytes = 0;
            }
        }
    }

    #[allow(clippy::too_many_lines, reason = "one match arm per op family")]
    fn node(
        &mut self,
        g: &Graph,
        n: &Node,
        prefix: &str,
        repeats: u64,
        depth: usize,
        konst: &mut std::collections::HashSet<ValueId>,
    ) {
        let op = short(&n.op);
        let name = format!("{prefix}{}", name_of(g, n));
        let out0 = n.outputs.first().copied();
        let in0 = input(n, 0);
        let out_elems = out0.and_then(|o| elems(g, o));
        let dt = in0.and_then(|v| dtype(g, v)).or_else(|| out0.and_then(|o| dtype(g, o)));
        let mut bytes: Option<u64> = Some(0);
        let mut weight_bytes = 0u64;
        for v in n.inputs.iter().flatten() {
            let b = vbytes(g, *v);
            bytes = bytes.and_then(|acc| b.map(|b| acc + b));
            if is_weight(g, *v) || konst.contains(v) {
                weight_bytes += b.unwrap_or(0);
            }
        }
        for v in &n.outputs {
            let b = vbytes(g, *v);
            bytes = bytes.and_then(|acc| b.map(|b| acc + b));
        }
        let mut c = OpCost {
            node: name.clone(),
            op: n.op.clone(),
            class: OpClass::Other,
            flops: 0,
            mxu_flops: 0,
            transcendentals: 0,
            bytes: bytes.unwrap_or(0),
            fused_bytes: 0,
            weight_bytes,
            dtype: dt,
            repeats,
            matmul: None,
            note: None,
        };
        let unknown = "shape not static (bind it with --batch / --dim)";
        match op.as_str() {
            // Control flow: bodies counted as their own ops.
            "call" if n.op == "func.call" || n.domain == "func" => {
                c.class = OpClass::Control;
                c.bytes = 0;
                let callee = n.attr("callee").and_then(Attr::as_str).unwrap_or("");
                let callee = callee.trim_start_matches('@');
                if let Some(f) = self.model.function(callee) {
                    self.graph(f, &format!("{name}/"), repeats, depth + 1);
                } else {
                    c.note = Some(format!("callee `{callee}` not found"));
                }
            }
            "while" | "loop" | "scan" => {
                c.class = OpClass::Control;
                c.bytes = 0;
                let trips = self.trip_count(g, n);
                if trips.is_none() {
                    self.notes.push(format!(
                        "loop `{name}`: trip count not a constant; its body is counted once"
                    ));
                }
                let t = trips.unwrap_or(1).max(1);
                for (label, sg) in &n.subgraphs {
                    self.graph(
                        sg,
                        &format!("{name}/{label}/"),
                        repeats.saturating_mul(t),
                        depth + 1,
                    );
                }
            }
            "if" | "case" => {
                c.class = OpClass::Control;
                c.bytes = 0;
                // The most expensive branch.
                let mut best: Option<Vec<OpCost>> = None;
                for (label, sg) in &n.subgraphs {
                    let saved = std::mem::take(&mut self.ops);
                    self.graph(sg, &format!("{name}/{label}/"), repeats, depth + 1);
                    let branch = std::mem::replace(&mut self.ops, saved);
                    let f = |v: &Vec<OpCost>| v.iter().map(|o| o.flops).sum::<u64>();
                    if best.as_ref().is_none_or(|b| f(&branch) > f(b)) {
                        best = Some(branch);
                    }
                }
                self.ops.extend(best.unwrap_or_default());
            }
            "dot_general" | "dot" | "matmul" | "gemm" | "matmulinteger" | "qlinearmatmul"
            | "fusedmatmul" => {
                // Both operands computed in this step (neither a weight nor an argument): the
                // score / context products of attention.
                let computed = |v: Option<ValueId>| {
                    v.is_some_and(|v| {
                        g.value(v).kind == ValueKind::Intermediate && !konst.contains(&v)
                    })
                };
                c.class = if computed(in0) && computed(input(n, 1)) {
                    OpClass::Attention
                } else {
                    OpClass::Matmul
                };
                match self.matmul_dims(g, n, &op) {
                    Some(d) => {
                        let f = sat(&[2, d.batch, d.m, d.n, d.k]);
                        c.flops = f;
                        c.mxu_flops = f;
                        if op == "gemm" && input(n, 2).is_some() {
                            c.flops = c.flops.saturating_add(d.m.saturating_mul(d.n));
                        }
                        c.matmul = Some(d);
                    }
                    None => c.note = Some(unknown.to_owned()),
                }
            }
            "convolution" | "conv" | "convinteger" | "qlinearconv" => {
                c.class = OpClass::Conv;
                match self.conv(g, n, &op) {
                    Some((geom, w_in, k)) => {
                        let (xla, dense) = geom.flops();
                        c.flops = xla;
                        c.mxu_flops = dense;
                        if op == "conv" && input(n, 2).is_some() {
                            c.flops += geom.out_elems;
                        }
                        let m = geom.out_elems / geom.cout.max(1);
                        c.matmul = Some(MatmulDims {
                            batch: 1,
                            m,
                            k,
                            n: geom.cout,
                            dtype: dt,
                            operands: [w_in, "kernel".to_owned()],
                        });
                    }
                    None => c.note = Some(unknown.to_owned()),
                }
            }
            "convtranspose" => {
                c.class = OpClass::Conv;
                // Every input element meets every kernel tap: 2 · in · (Cout/g) · kernel.
                let w = input(n, 1).and_then(|v| shape(g, v));
                match (in0.and_then(|v| elems(g, v)), w) {
                    (Some(ie), Some(w)) if w.len() >= 2 => {
                        let kernel: u64 = w[2..].iter().product();
                        let f = sat(&[2, ie, w[1], kernel]);
                        c.flops = f;
                        c.mxu_flops = f;
                    }
                    _ => c.note = Some(unknown.to_owned()),
                }
            }
            "attention" | "multiheadattention" | "scaled_dot_product_attention" => {
                c.class = OpClass::Attention;
                // Q [B, H, Sq, D] (or [B, Sq, H·D]), K [B, H, Skv, D]: QK^T and PV matmuls.
                let q = in0.and_then(|v| shape(g, v));
                let k = input(n, 1).and_then(|v| shape(g, v));
                match (q, k) {
                    (Some(q), Some(k)) if q.len() >= 3 && k.len() >= 3 => {
                        let q_elems: u64 = q.iter().product();
                        let skv = k[k.len() - 2];
                        let f = sat(&[4, q_elems, skv]);
                        let heads = if q.len() == 4 { q[1] } else { 1 };
                        let scores = sat(&q[..q.len() - 1]).saturating_mul(skv);
                        let _ = heads;
                        c.flops = f.saturating_add(scores.saturating_mul(4));
                        c.mxu_flops = f;
                        c.transcendentals = scores;
                    }
                    _ => c.note = Some(unknown.to_owned()),
                }
            }
            "reduce" => {
                c.class = OpClass::Reduction;
                let body = self.body_flops(n);
                match (in0.and_then(|v| elems(g, v)), out_elems) {
                    (Some(i), Some(o)) => c.flops = i.saturating_sub(o).saturating_mul(body),
                    _ => c.note = Some(unknown.to_owned()),
                }
            }
            "reduce_window" => {
                c.class = OpClass::Reduction;
                let body = self.body_flops(n);
                let window: u64 = ints_attr(n, "window_dimensions")
                    .map(|w| w.iter().map(|&x| u64::try_from(x).unwrap_or(1)).product())
                    .unwrap_or(1);
                match out_elems {
                    Some(o) => c.flops = sat(&[o, window.saturating_sub(1), body]),
                    None => c.note = Some(unknown.to_owned()),
                }
            }
            "select_and_scatter" | "scatter" | "scatternd" | "scatterelements" => {
                c.class = OpClass::Reduction;
                let upd = n.inputs.iter().flatten().last().and_then(|v| elems(g, *v));
                c.flops = upd.unwrap_or(0).saturating_mul(self.body_flops(n).max(1));
            }
            "sort" | "topk" => {
                c.class = OpClass::Reduction;
                if let Some(i) = in0.and_then(|v| elems(g, v)) {
                    let lg = 64 - u64::from(i.max(2).leading_zeros());
                    c.flops = i * lg;
                }
            }
            "reducemean" | "reducesum" | "reducemax" | "reducemin" | "reduceprod" | "reducel1"
            | "reducel2" | "reducesumsquare" | "reducelogsum" | "reducelogsumexp" | "argmax"
            | "argmin" | "globalaveragepool" | "globalmaxpool" | "cumsum" => {
                c.class = OpClass::Reduction;
                match (in0.and_then(|v| elems(g, v)), out_elems) {
                    (Some(i), Some(o)) => {
                        c.flops = i.saturating_sub(o);
                        if op == "reducemean" || op == "globalaveragepool" {
                            c.flops += o;
                        }
                        if matches!(op.as_str(), "reducel2" | "reducesumsquare") {
                            c.flops += i;
                        }
                        if op == "cumsum" {
                            c.flops = i;
                        }
                    }
                    _ => c.note = Some(unknown.to_owned()),
                }
            }
            "maxpool" | "averagepool" | "lppool" => {
                c.class = OpClass::Reduction;
                let k: u64 = ints_attr(n, "kernel_shape")
                    .map(|w| w.iter().map(|&x| u64::try_from(x).unwrap_or(1)).product())
                    .unwrap_or(1);
                match out_elems {
                    Some(o) => {
                        c.flops = o.saturating_mul(k.saturating_sub(1))
                            + if op == "averagepool" { o } else { 0 }
                    }
                    None => c.note = Some(unknown.to_owned()),
                }
            }
            "softmax" | "logsoftmax" => {
                c.class = OpClass::Composite;
                match out_elems {
                    Some(e) => {
                        c.flops = 4 * e;
                        c.transcendentals = e + if op == "logsoftmax" { e } else { 0 };
                    }
                    None => c.note = Some(unknown.to_owned()),
                }
            }
            "layernormalization"
            | "rmsnormalization"
            | "simplifiedlayernormalization"
            | "skiplayernormalization"
            | "groupnormalization"
            | "instancenormalization" => {
                c.class = OpClass::Composite;
                let axis = int_attr(n, "axis").unwrap_or(-1);
                match (in0.and_then(|v| shape(g, v)), out_elems) {
                    (Some(s), Some(e)) => {
                        let r = i64::try_from(s.len()).unwrap_or(0);
                        let a = if axis < 0 { axis + r } else { axis };
                        let rows: u64 =
                            s.iter().take(usize::try_from(a.max(0)).unwrap_or(0)).product();
                        c.flops = 8 * e;
                        c.transcendentals = rows;
                    }
                    _ => c.note = Some(unknown.to_owned()),
                }
            }
            "batchnormalization" | "batch_norm_inference" => {
                c.class = OpClass::Composite;
                match out_elems {
                    Some(e) => c.flops = 2 * e,
                    None => c.note = Some(unknown.to_owned()),
                }
            }
            "batch_norm_training" => {
                c.class = OpClass::Composite;
                match out_elems {
                    Some(e) => c.flops = 7 * e,
                    None => c.note = Some(unknown.to_owned()),
                }
            }
            "gelu" | "fastgelu" | "biasgelu" => {
                c.class = OpClass::Composite;
                match out_elems {
                    Some(e) => {
                        c.flops = 4 * e;
                        c.transcendentals = e;
                    }
                    None => c.note = Some(unknown.to_owned()),
                }
            }
            "hardsigmoid" | "hardswish" | "selu" | "elu" | "celu" | "mish" | "silu" | "swish"
            | "thresholdedrelu" => {
                c.class = OpClass::Composite;
                match out_elems {
                    Some(e) => {
                        c.flops = 3 * e;
                        if !matches!(op.as_str(), "hardsigmoid" | "hardswish" | "thresholdedrelu") {
                            c.transcendentals = e;
                        }
                    }
                    None => c.note = Some(unknown.to_owned()),
                }
            }
            o if is_transcendental(o) => {
                c.class = OpClass::Elementwise;
                match out_elems {
                    Some(e) => c.transcendentals = e,
                    None => c.note = Some(unknown.to_owned()),
                }
            }
            o if is_elementwise(o) => {
                c.class = OpClass::Elementwise;
                match out_elems {
                    Some(e) => {
                        // n-ary ONNX Sum/Mean/Max/Min: one op per extra operand.
                        let k = n.inputs.iter().flatten().count().saturating_sub(1).max(1) as u64;
                        c.flops =
                            if matches!(o, "sum" | "mean" | "max" | "min") { e * k } else { e };
                        if o == "clamp" || o == "clip" {
                            c.flops = e;
                        }
                    }
                    None => c.note = Some(unknown.to_owned()),
                }
            }
            o if is_data(o) => {
                c.class = OpClass::Data;
                // Layout changes of weights (a transposed embedding reused as the LM head) are
                // done once, not per step: XLA's layout assignment / constant folding.
                let ins: Vec<ValueId> = n.inputs.iter().flatten().copied().collect();
                if !ins.is_empty() && ins.iter().all(|v| is_weight(g, *v) || konst.contains(v)) {
                    konst.extend(n.outputs.iter().copied());
                    c.bytes = 0;
                    weight_bytes = 0;
                }
            }
            _ => {
                c.class = OpClass::Other;
                // Model-local ONNX functions: count the body.
                let key = if n.domain.is_empty() {
                    n.op.clone()
                } else {
                    format!("{}::{}", n.domain, n.op)
                };
                if let Some(f) = self
                    .model
                    .functions
                    .iter()
                    .find(|f| f.name == key || f.name.starts_with(&format!("{key}:")))
                {
                    c.class = OpClass::Control;
                    self.graph(f, &format!("{name}/"), repeats, depth + 1);
                } else if self.model.format == ModelFormat::Onnx || !n.op.starts_with("sdy.") {
                    *self.unknown_ops.entry(n.op.clone()).or_default() += 1;
                    c.note = Some("no cost rule for this op".to_owned());
                }
            }
        }
        if is_fusible(c.class, &op) {
            c.fused_bytes = weight_bytes;
        } else if c.class != OpClass::Control {
            c.fused_bytes = c.bytes;
        }
        c.flops = c.flops.saturating_mul(repeats);
        c.mxu_flops = c.mxu_flops.saturating_mul(repeats);
        c.transcendentals = c.transcendentals.saturating_mul(repeats);
        c.bytes = c.bytes.saturating_mul(repeats);
        c.fused_bytes = c.fused_bytes.saturating_mul(repeats);
        if bytes.is_none() && c.note.is_none() && c.class != OpClass::Control {
            c.note = Some(unknown.to_owned());
        }
        self.ops.push(c);
    }

    /// FLOPs of one application of a reducer region (scalar ops: 1 each); 1 when there is none.
    fn body_flops(&self, n: &Node) -> u64 {
        let Some((_, body)) = n.subgraphs.first() else { return 1 };
        let mut sub = Cx {
            model: self.model,
            ops: Vec::new(),
            notes: Vec::new(),
            unknown_ops: BTreeMap::new(),
        };
        sub.graph(body, "", 1, MAX_DEPTH - 1);
        sub.ops.iter().map(|o| o.flops + o.transcendentals).sum::<u64>().max(1)
    }

    /// Trip count of a while / Loop when it is a constant.
    fn trip_count(&self, g: &Graph, n: &Node) -> Option<u64> {
        if n.op == "Loop" {
            let m = input(n, 0)?;
            if let ValueKind::Weight(id) = g.value(m).kind {
                let w = self.model.weights.get(id);
                let b = w.bytes().ok()?;
                if b.len() == 8 {
                    let mut a = [0u8; 8];
                    a.copy_from_slice(&b);
                    return u64::try_from(i64::from_le_bytes(a)).ok();
                }
            }
            return None;
        }
        // StableHLO: the cond region compares the counter with a constant (`LT`).
        let (_, cond) =
            n.subgraphs.iter().find(|(l, _)| l.contains("cond")).or(n.subgraphs.first())?;
        let consts: HashMap<ValueId, i64> = cond
            .nodes
            .iter()
            .filter(|m| m.op.ends_with("constant"))
            .filter_map(|m| {
                let v = parse_ints(m.attr("value")?.as_str()?);
                (v.len() == 1).then(|| (m.outputs[0], v[0]))
            })
            .collect();
        let cmp = cond.nodes.iter().find(|m| m.op.ends_with("compare"))?;
        let dir = cmp.attr("comparison_direction").and_then(Attr::as_str).unwrap_or("");
        let bound = input(cmp, 1).and_then(|v| consts.get(&v))?;
        let b = u64::try_from(*bound).ok()?;
        Some(if dir.contains("LE") { b + 1 } else { b })
    }

    fn matmul_dims(&self, g: &Graph, n: &Node, op: &str) -> Option<MatmulDims> {
        let a = input(n, 0)?;
        let b = if op == "qlinearmatmul" { input(n, 3)? } else { input(n, 1)? };
        let sa = shape(g, a)?;
        let sb = shape(g, b)?;
        let dt = dtype(g, a);
        let wname = |v: ValueId| g.value(v).name.clone();
        if op == "dot_general" || op == "dot" {
            let geti = |k: &str| ints_attr(n, k).unwrap_or_default();
            let (lb, rb, mut lc, mut rc) = (
                geti("tpuport.lhs_batching_dimensions"),
                geti("tpuport.rhs_batching_dimensions"),
                geti("tpuport.lhs_contracting_dimensions"),
                geti("tpuport.rhs_contracting_dimensions"),
            );
            if lc.is_empty() && rc.is_empty() && op == "dot" {
                lc = vec![i64::try_from(sa.len()).ok()? - 1];
                rc = vec![0];
            }
            let _ = rb;
            let at = |s: &[u64], i: &i64| usize::try_from(*i).ok().and_then(|i| s.get(i).copied());
            let batch: u64 =
                lb.iter().map(|i| at(&sa, i)).collect::<Option<Vec<_>>>()?.iter().product();
            let k: u64 =
                lc.iter().map(|i| at(&sa, i)).collect::<Option<Vec<_>>>()?.iter().product();
            let la: u64 = sa.iter().product();
            let lbn: u64 = sb.iter().product();
            let rk: u64 =
                rc.iter().map(|i| at(&sb, i)).collect::<Option<Vec<_>>>()?.iter().product();
            if batch == 0 || k == 0 || rk == 0 {
                return Some(MatmulDims {
                    batch: 0,
                    m: 0,
                    k: 0,
                    n: 0,
                    dtype: dt,
                    operands: [wname(a), wname(b)],
                });
            }
            let m = la / batch / k;
            let nn = lbn / batch / rk;
            return Some(MatmulDims {
                batch,
                m,
                k,
                n: nn,
                dtype: dt,
                operands: [wname(a), wname(b)],
            });
        }
        if op == "gemm" {
            let ta = int_attr(n, "transA").unwrap_or(0) != 0;
            let tb = int_attr(n, "transB").unwrap_or(0) != 0;
            if sa.len() != 2 || sb.len() != 2 {
                return None;
            }
            let (m, k) = if ta { (sa[1], sa[0]) } else { (sa[0], sa[1]) };
            let nn = if tb { sb[0] } else { sb[1] };
            return Some(MatmulDims {
                batch: 1,
                m,
                k,
                n: nn,
                dtype: dt,
                operands: [wname(a), wname(b)],
            });
        }
        // MatMul with numpy broadcasting.
        let (sa, sb) = (
            if sa.len() == 1 { vec![1, sa[0]] } else { sa },
            if sb.len() == 1 { vec![sb[0], 1] } else { sb },
        );
        let (m, k) = (sa[sa.len() - 2], sa[sa.len() - 1]);
        let nn = sb[sb.len() - 1];
        let ba = &sa[..sa.len() - 2];
        let bb = &sb[..sb.len() - 2];
        let r = ba.len().max(bb.len());
        let mut batch = 1u64;
        for i in 0..r {
            let da = if i + ba.len() >= r { ba[i + ba.len() - r] } else { 1 };
            let db = if i + bb.len() >= r { bb[i + bb.len() - r] } else { 1 };
            batch *= da.max(db);
        }
        // A weight RHS with a broadcast batch is one big GEMM: fold the batch into M.
        let (batch, m) = if bb.iter().all(|&d| d == 1) { (1, batch * m) } else { (batch, m) };
        Some(MatmulDims { batch, m, k, n: nn, dtype: dt, operands: [wname(a), wname(b)] })
    }

    /// Convolution geometry; also returns the input name and the implicit-GEMM K.
    fn conv(&self, g: &Graph, n: &Node, op: &str) -> Option<(ConvGeom, String, u64)> {
        let x = input(n, 0)?;
        let w = if op == "qlinearconv" { input(n, 3)? } else { input(n, 1)? };
        let out = *n.outputs.first()?;
        let sx = shape(g, x)?;
        let sw = shape(g, w)?;
        let so = shape(g, out)?;
        let out_elems: u64 = so.iter().product();
        let u = |v: i64| u64::try_from(v).unwrap_or(0);
        if op == "convolution" {
            let get = |k: &str| int_attr(n, k).and_then(|v| usize::try_from(v).ok());
            let gets = |k: &str| ints_attr(n, k).unwrap_or_default();
            let ib = get("tpuport.input_batch_dimension")?;
            let kin = get("tpuport.kernel_input_feature_dimension")?;
            let kout = get("tpuport.kernel_output_feature_dimension")?;
            let ob = get("tpuport.output_batch_dimension")?;
            let isp = gets("tpuport.input_spatial_dimensions");
            let ksp = gets("tpuport.kernel_spatial_dimensions");
            let osp = gets("tpuport.output_spatial_dimensions");
            let nsp = ksp.len();
            let strides = ints_attr(n, "window_strides").unwrap_or_else(|| vec![1; nsp]);
            let rdil = ints_attr(n, "rhs_dilation").unwrap_or_else(|| vec![1; nsp]);
            let ldil = ints_attr(n, "lhs_dilation").unwrap_or_else(|| vec![1; nsp]);
            let pad = ints_attr(n, "padding").unwrap_or_default();
            let bgc = u(int_attr(n, "batch_group_count").unwrap_or(1)).max(1);
            let at = |s: &[u64], i: i64| usize::try_from(i).ok().and_then(|i| s.get(i).copied());
            let mut axes = Vec::new();
            for j in 0..nsp {
                let pad_lo =
                    if pad.len() == 1 { pad[0] } else { pad.get(2 * j).copied().unwrap_or(0) };
                axes.push((
                    at(&sx, *isp.get(j)?)?,
                    at(&sw, *ksp.get(j)?)?,
                    at(&so, *osp.get(j)?)?,
                    u(*strides.get(j).unwrap_or(&1)).max(1),
                    u(*rdil.get(j).unwrap_or(&1)).max(1),
                    pad_lo,
                    u(*ldil.get(j).unwrap_or(&1)).max(1),
                ));
            }
            let cin_pg = *sw.get(kin)?;
            let cout = *sw.get(kout)?;
            let batch = so.get(ob).copied()?;
            let _ = (ib, bgc);
            let kspatial: u64 = axes.iter().map(|a| a.1).product();
            return Some((
                ConvGeom { batch, cin_per_group: cin_pg, cout, axes, out_elems },
                g.value(x).name.clone(),
                cin_pg * kspatial,
            ));
        }
        // ONNX: X [N, C, D1..], W [M, C/group, k1..], Y [N, M, o1..].
        if sx.len() < 3 || sw.len() != sx.len() || so.len() != sx.len() {
            return None;
        }
        let nsp = sx.len() - 2;
        let strides = ints_attr(n, "strides").unwrap_or_else(|| vec![1; nsp]);
        let dil = ints_attr(n, "dilations").unwrap_or_else(|| vec![1; nsp]);
        let pads = ints_attr(n, "pads");
        let auto_pad = n.attr("auto_pad").and_then(Attr::as_str).unwrap_or("NOTSET");
        let mut axes = Vec::new();
        for j in 0..nsp {
            let (i, k, o) = (sx[2 + j], sw[2 + j], so[2 + j]);
            let s = u(*strides.get(j).unwrap_or(&1)).max(1);
            let d = u(*dil.get(j).unwrap_or(&1)).max(1);
            let pad_lo = match (&pads, auto_pad) {
                (Some(p), "NOTSET" | "") => p.get(j).copied().unwrap_or(0),
                (_, "SAME_UPPER" | "SAME_LOWER") => {
                    let eff = (k - 1) * d + 1;
                    let total = ((o - 1) * s + eff).saturating_sub(i);
                    let lo = if auto_pad == "SAME_UPPER" { total / 2 } else { total.div_ceil(2) };
                    i64::try_from(lo).unwrap_or(0)
                }
                _ => 0,
            };
            axes.push((i, k, o, s, d, pad_lo, 1));
        }
        let kspatial: u64 = sw[2..].iter().product();
        Some((
            ConvGeom { batch: so[0], cin_per_group: sw[1], cout: sw[0], axes, out_elems },
            g.value(x).name.clone(),
            sw[1] * kspatial,
        ))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn taps_same_padding() {
        // 3-tap SAME conv on 28: 3·28 − 2 valid pairs.
        assert_eq!(valid_taps(28, 3, 28, 1, 1, 1, 1), 82);
        // VALID: every pair is real.
        assert_eq!(valid_taps(10, 3, 8, 1, 1, 0, 1), 24);
        // Stride 2, pad 3, kernel 7 on 224 -> 112 (ResNet stem).
        let t = valid_taps(224, 7, 112, 2, 1, 3, 1);
        assert!(t < 112 * 7 && t > 112 * 7 - 12);
    }

    #[test]
    fn hostile_sizes_saturate() {
        assert_eq!(sat(&[u64::MAX, 2]), u64::MAX);
        assert_eq!(valid_taps(u64::MAX, 1, 1, u64::MAX, 1, i64::MIN, u64::MAX), 0);
    }

    #[test]
    fn ints_from_mlir() {
        assert_eq!(parse_ints("dense<1> : tensor<2x2xi64>"), vec![1]);
        assert_eq!(parse_ints("dense<[[0, 1], [2, -3]]> : tensor<2x2xi64>"), vec![0, 1, 2, -3]);
        assert_eq!(parse_ints("array<i64: 4, 5>"), vec![4, 5]);
    }
}
