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
//! - Recurrent ONNX ops (RNN, GRU, LSTM) count every step's products and gate arithmetic; ONNX
//!   Attention its products, scaling, masks and softmax; Resize its interpolation multiply-adds
//!   (see [`recurrent`], [`attention`], [`resize`]).
//!
//! **Bytes accessed** per op are operand bytes plus result bytes (no fusion).
//! [`OpCost::fused_bytes`] is the estimate the roofline uses: ops XLA fuses into a neighbour
//! (elementwise, broadcast, reshape, convert) move no bytes of their own except weights.
//!
//! ONNX ops are dispatched by the cost rule their entry in the ONNX op registry names
//! ([`tpuport_model::ops::onnx::CostRule`], see [`onnx`]); StableHLO ops by their
//! [`crate::taxonomy`] family; one rule file per family. Every op gets a [`CostStatus`] saying
//! whether its figure is counted, estimated or not counted (and why).
//! Products of shape dimensions saturate at `u64::MAX`: hostile shapes cannot overflow.

use std::collections::{BTreeMap, HashSet};

use serde::{Serialize, Serializer};
use tpuport_model::{Attr, DType, Graph, Model, Node, ValueId, ValueKind};

use crate::taxonomy::{self, OpFamily};

mod attention;
mod composite;
mod contraction;
mod control;
mod convolution;
mod data;
mod elementwise;
mod gather_scatter;
mod onnx;
mod other;
mod recurrent;
mod reduction;
mod resize;
mod sort;

/// Deepest nesting of calls / regions followed.
const MAX_DEPTH: usize = 64;

/// What kind of work an op does, as the report groups FLOPs.
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

impl OpClass {
    /// Runs on the MXU: matmuls, convolutions and attention products.
    #[must_use]
    pub const fn runs_on_mxu(self) -> bool {
        matches!(self, OpClass::Matmul | OpClass::Conv | OpClass::Attention)
    }

    /// The class's name as the report spells it (`matmul`, `data`, …).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            OpClass::Matmul => "matmul",
            OpClass::Conv => "conv",
            OpClass::Attention => "attention",
            OpClass::Reduction => "reduction",
            OpClass::Elementwise => "elementwise",
            OpClass::Composite => "composite",
            OpClass::Data => "data",
            OpClass::Control => "control",
            OpClass::Other => "other",
        }
    }
}

/// How far an op's figures can be trusted.
///
/// Serialised as the report's `note` field: `null` unless the op is [`CostStatus::Uncounted`],
/// then the reason in words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CostStatus {
    /// Counted by the op's rule.
    Counted,
    /// Counted under an assumption.
    Estimated(Estimate),
    /// Not counted (its FLOPs are 0 in the totals).
    Uncounted(Uncounted),
}

/// The assumption behind an [`CostStatus::Estimated`] figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Estimate {
    /// Inside a loop whose trip count is not a constant: counted for one trip.
    LoopCountedOnce,
    /// Inside the costliest branch of a conditional, the one counted.
    CostliestBranch,
    /// A convolution axis too long to count valid taps one by one: every tap counted.
    LongAxisAllTaps,
}

/// Why an op is [`CostStatus::Uncounted`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Uncounted {
    /// An operand or result shape is not static (unbound symbolic dims).
    ShapeNotStatic,
    /// The pass has no rule for the op.
    NoRule,
    /// A `func.call` names a function the module does not define.
    CalleeNotFound(String),
}

impl CostStatus {
    /// True when the op's cost is not in the totals.
    #[must_use]
    pub const fn is_uncounted(&self) -> bool {
        matches!(self, CostStatus::Uncounted(_))
    }

    /// The report's note: why the op is not counted, `None` when it is.
    #[must_use]
    pub fn note(&self) -> Option<String> {
        match self {
            CostStatus::Counted | CostStatus::Estimated(_) => None,
            CostStatus::Uncounted(Uncounted::ShapeNotStatic) => {
                Some("shape not static (bind it with --batch / --dim)".to_owned())
            }
            CostStatus::Uncounted(Uncounted::NoRule) => Some("no cost rule for this op".to_owned()),
            CostStatus::Uncounted(Uncounted::CalleeNotFound(f)) => {
                Some(format!("callee `{f}` not found"))
            }
        }
    }
}

impl Serialize for CostStatus {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.note().serialize(s)
    }
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
    /// Whether the figures are counted, estimated or missing (serialised as `note`).
    #[serde(rename = "note")]
    pub status: CostStatus,
}

impl OpCost {
    /// Marks the op as not counted because a shape is not static.
    fn not_static(&mut self) {
        self.status = CostStatus::Uncounted(Uncounted::ShapeNotStatic);
    }
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

impl CostReport {
    /// The element type that carries most of the matmul and convolution FLOPs: what a program
    /// computes in. Mixed-precision training steps keep f32 parameters and cast them to bf16
    /// for every matmul, so the parameters' type does not say it. `None` without such ops.
    #[must_use]
    pub fn matmul_dtype(&self) -> Option<DType> {
        let mut by: Vec<(DType, u64)> = Vec::new();
        for o in self.ops.iter().filter(|o| o.class.runs_on_mxu()) {
            let Some(d) = o.dtype else { continue };
            match by.iter_mut().find(|(t, _)| *t == d) {
                Some((_, f)) => *f = f.saturating_add(o.flops),
                None => by.push((d, o.flops)),
            }
        }
        by.into_iter().filter(|&(_, f)| f > 0).max_by_key(|&(_, f)| f).map(|(d, _)| d)
    }
}

/// Computes the cost of a model's entry graph.
#[must_use]
pub fn analyze(model: &Model) -> CostReport {
    analyze_with_weights(model, &HashSet::new())
}

/// [`analyze`], with entry arguments that are weights (see [`crate::roles`]): their bytes
/// count as weight bytes (read once per step, not scaled with the batch), and so do values
/// computed from them by converts, reshapes, transposes and slices. FLOPs do not change: XLA
/// folds nothing computed from an argument.
#[must_use]
pub fn analyze_with_weights(model: &Model, weight_args: &HashSet<ValueId>) -> CostReport {
    let mut cx = Cx::new(model);
    let mut derived = weight_args.clone();
    for n in &model.graph.nodes {
        let s = taxonomy::short_name(&n.op);
        if matches!(
            s.as_str(),
            "convert" | "reshape" | "transpose" | "bitcast_convert" | "copy" | "slice"
        ) && n.inputs.first().copied().flatten().is_some_and(|v| derived.contains(&v))
        {
            derived.extend(n.outputs.iter().copied());
        }
    }
    cx.weight_args = derived;
    cx.graph(&model.graph, "", 1, 0);
    let mut report = CostReport { ops: cx.ops, notes: cx.notes, ..CostReport::default() };
    let unbound = report
        .ops
        .iter()
        .filter(|o| o.status == CostStatus::Uncounted(Uncounted::ShapeNotStatic))
        .count();
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
        t.flops = t.flops.saturating_add(o.flops);
        t.mxu_flops = t.mxu_flops.saturating_add(o.mxu_flops);
        if o.class.runs_on_mxu() {
            t.matmul_conv_flops = t.matmul_conv_flops.saturating_add(o.flops);
        }
        t.transcendentals = t.transcendentals.saturating_add(o.transcendentals);
        t.bytes = t.bytes.saturating_add(o.bytes);
        t.fused_bytes = t.fused_bytes.saturating_add(o.fused_bytes);
        t.ops += 1;
        if o.status.is_uncounted() {
            t.ops_uncounted += 1;
        }
        let class = report.by_class.entry(o.class.as_str().to_owned()).or_default();
        *class = class.saturating_add(o.flops);
    }
    report
}

/// The pass's state: ops costed so far, notes, ops without a rule.
struct Cx<'m> {
    model: &'m Model,
    ops: Vec<OpCost>,
    notes: Vec<String>,
    unknown_ops: BTreeMap<String, u64>,
    /// Entry-graph values that are weight arguments (or computed from one by a view / convert).
    weight_args: HashSet<ValueId>,
}

/// One node being costed, with what every rule reads.
struct Site<'a> {
    g: &'a Graph,
    n: &'a Node,
    /// Short op name (see [`taxonomy::short_name`]).
    op: String,
    /// Node name with its call-site prefix.
    name: String,
    in0: Option<ValueId>,
    out_elems: Option<u64>,
    dt: Option<DType>,
    repeats: u64,
    depth: usize,
    /// Values of this graph computed from weights alone (XLA folds them once).
    konst: &'a mut HashSet<ValueId>,
    /// Set by a rule when the op itself is folded: its weight operands move no bytes.
    folded: bool,
}

impl Site<'_> {
    /// Elements of input `i`, when its shape is static.
    fn in_elems(&self, i: usize) -> Option<u64> {
        input(self.n, i).and_then(|v| elems(self.g, v))
    }

    /// Static shape of input `i`.
    fn in_shape(&self, i: usize) -> Option<Vec<u64>> {
        input(self.n, i).and_then(|v| shape(self.g, v))
    }
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

/// Saturating product of a window / kernel attribute (`1` when absent; non-positive sizes
/// count as 1).
fn window_size(n: &Node, name: &str) -> u64 {
    ints_attr(n, name)
        .map(|w| sat(&w.iter().map(|&x| u64::try_from(x).unwrap_or(1)).collect::<Vec<_>>()))
        .unwrap_or(1)
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

impl<'m> Cx<'m> {
    fn new(model: &'m Model) -> Cx<'m> {
        Cx {
            model,
            ops: Vec::new(),
            notes: Vec::new(),
            unknown_ops: BTreeMap::new(),
            weight_args: HashSet::new(),
        }
    }

    fn graph(&mut self, g: &Graph, prefix: &str, repeats: u64, depth: usize) {
        if depth > MAX_DEPTH {
            self.notes.push(format!(
                "calls nested deeper than {MAX_DEPTH} under `{prefix}`: not counted"
            ));
            return;
        }
        let mut konst = HashSet::new();
        // Transposes read only by matmuls are folded into the dot's dimension numbers by XLA.
        let mut to_dot: std::collections::HashMap<ValueId, bool> = std::collections::HashMap::new();
        for o in &g.outputs {
            to_dot.insert(*o, false);
        }
        for n in g.nodes.iter().rev() {
            let s = taxonomy::short_name(&n.op);
            let dot = taxonomy::lookup(&s).family == OpFamily::Contraction
                || (matches!(s.as_str(), "transpose" | "reshape")
                    && n.outputs.iter().all(|o| to_dot.get(o).copied().unwrap_or(false)));
            for v in n.inputs.iter().flatten() {
                let e = to_dot.entry(*v).or_insert(true);
                *e = *e && dot;
            }
        }
        for n in &g.nodes {
            let folded = taxonomy::short_name(&n.op) == "transpose"
                && n.outputs.iter().all(|o| to_dot.get(o).copied().unwrap_or(false));
            let before = self.ops.len();
            self.node(g, n, prefix, repeats, depth, &mut konst);
            if folded && let Some(c) = self.ops.get_mut(before) {
                c.fused_bytes = 0;
            }
        }
    }

    /// Costs one node: the common figures (bytes, dtype), then the rule of the op's family.
    fn node(
        &mut self,
        g: &Graph,
        n: &Node,
        prefix: &str,
        repeats: u64,
        depth: usize,
        konst: &mut HashSet<ValueId>,
    ) {
        let op = taxonomy::short_name(&n.op);
        let family = taxonomy::lookup(&op).family;
        let out0 = n.outputs.first().copied();
        let in0 = input(n, 0);
        let mut bytes: Option<u64> = Some(0);
        let mut weight_bytes = 0u64;
        let entry = std::ptr::eq(g, &self.model.graph);
        for v in n.inputs.iter().flatten() {
            let b = vbytes(g, *v);
            bytes = bytes.and_then(|acc| b.map(|b| acc.saturating_add(b)));
            if is_weight(g, *v) || konst.contains(v) || (entry && self.weight_args.contains(v)) {
                weight_bytes = weight_bytes.saturating_add(b.unwrap_or(0));
            }
        }
        for v in &n.outputs {
            let b = vbytes(g, *v);
            bytes = bytes.and_then(|acc| b.map(|b| acc.saturating_add(b)));
        }
        let dt = in0.and_then(|v| dtype(g, v)).or_else(|| out0.and_then(|o| dtype(g, o)));
        let mut s = Site {
            g,
            n,
            name: format!("{prefix}{}", name_of(g, n)),
            in0,
            out_elems: out0.and_then(|o| elems(g, o)),
            dt,
            repeats,
            depth,
            konst,
            folded: false,
            op,
        };
        let mut c = OpCost {
            node: s.name.clone(),
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
            status: CostStatus::Counted,
        };
        if let Some(entry) = tpuport_model::ops::onnx::get(&n.op) {
            onnx::cost(self, entry, &mut s, &mut c);
        } else {
            match family {
                OpFamily::ControlFlow => control::cost(self, &s, &mut c),
                OpFamily::Contraction => contraction::cost(self, &s, &mut c),
                OpFamily::Convolution => convolution::cost(&s, &mut c),
                OpFamily::Attention => attention::fused(&s, &mut c),
                OpFamily::Reduction => reduction::cost(self, &s, &mut c),
                OpFamily::GatherScatter => gather_scatter::cost(self, &mut s, &mut c),
                OpFamily::Sort => sort::cost(&s, &mut c),
                OpFamily::Composite => composite::cost(&s, &mut c),
                OpFamily::Elementwise => elementwise::cost(&s, &mut c),
                OpFamily::DataMovement | OpFamily::Metadata | OpFamily::Random => {
                    data::cost(&mut s, &mut c);
                }
                OpFamily::Recurrent | OpFamily::Collective | OpFamily::Other => {
                    other::cost(self, &s, &mut c);
                }
            }
        }
        let fusible = match c.class {
            OpClass::Elementwise | OpClass::Composite => true,
            OpClass::Data => taxonomy::lookup(&s.op).fuses_away(),
            _ => false,
        };
        if fusible {
            c.fused_bytes = if s.folded { 0 } else { weight_bytes };
        } else if c.class != OpClass::Control {
            c.fused_bytes = c.bytes;
        }
        c.flops = c.flops.saturating_mul(repeats);
        c.mxu_flops = c.mxu_flops.saturating_mul(repeats);
        c.transcendentals = c.transcendentals.saturating_mul(repeats);
        c.bytes = c.bytes.saturating_mul(repeats);
        c.fused_bytes = c.fused_bytes.saturating_mul(repeats);
        if bytes.is_none() && !c.status.is_uncounted() && c.class != OpClass::Control {
            c.not_static();
        }
        self.ops.push(c);
    }

    /// FLOPs of one application of a reducer region (scalar ops: 1 each); 1 when there is none.
    fn body_flops(&self, n: &Node) -> u64 {
        let Some((_, body)) = n.subgraphs.first() else { return 1 };
        let mut sub = Cx::new(self.model);
        sub.graph(body, "", 1, MAX_DEPTH - 1);
        sub.ops
            .iter()
            .fold(0u64, |a, o| a.saturating_add(o.flops).saturating_add(o.transcendentals))
            .max(1)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn hostile_sizes_saturate() {
        assert_eq!(sat(&[u64::MAX, 2]), u64::MAX);
    }

    #[test]
    fn ints_from_mlir() {
        assert_eq!(parse_ints("dense<1> : tensor<2x2xi64>"), vec![1]);
        assert_eq!(parse_ints("dense<[[0, 1], [2, -3]]> : tensor<2x2xi64>"), vec![0, 1, 2, -3]);
        assert_eq!(parse_ints("array<i64: 4, 5>"), vec![4, 5]);
    }

    #[test]
    fn status_notes_are_the_report_strings() {
        assert_eq!(CostStatus::Counted.note(), None);
        assert_eq!(CostStatus::Estimated(Estimate::CostliestBranch).note(), None);
        let json = |s: CostStatus| serde_json::to_string(&s).unwrap();
        assert_eq!(json(CostStatus::Counted), "null");
        assert_eq!(
            json(CostStatus::Uncounted(Uncounted::ShapeNotStatic)),
            "\"shape not static (bind it with --batch / --dim)\""
        );
        assert_eq!(
            json(CostStatus::Uncounted(Uncounted::CalleeNotFound("f".into()))),
            "\"callee `f` not found\""
        );
    }

    #[test]
    fn class_names_match_serde() {
        for c in [
            OpClass::Matmul,
            OpClass::Conv,
            OpClass::Attention,
            OpClass::Reduction,
            OpClass::Elementwise,
            OpClass::Composite,
            OpClass::Data,
            OpClass::Control,
            OpClass::Other,
        ] {
            assert_eq!(serde_json::to_value(c).unwrap(), c.as_str());
        }
    }
}
