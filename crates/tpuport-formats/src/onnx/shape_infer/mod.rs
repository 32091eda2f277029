//! Shape inference for ONNX graphs: bind symbolic input dims, then propagate dtypes, shapes
//! and (small) constant values node by node, writing the results into each [`Value::ty`].
//!
//! Binding: `ImportOptions::input_shapes` replaces an input's shape (and binds the symbols it
//! had at those positions), then `ImportOptions::batch` binds the symbol in the first dimension
//! of every input, given shapes included (or replaces an anonymous `?` there), and
//! `ImportOptions::dims` binds symbols by name. Every symbol bound is then substituted in every value of the graph and subgraphs.
//!
//! Propagation: the ONNX op registry ([`tpuport_model::ops::onnx`]) names each op's
//! [`ShapeRule`]; [`Engine`] maps every rule to its function (files by op family) in one
//! exhaustive `match`. Small integer/float tensors are folded
//! so that shape subgraphs (`Shape → Gather → Concat → Reshape`) give concrete shapes. A node
//! whose inputs are all static but whose outputs are not, an op with no rule, or an
//! inconsistent node becomes a warning [`Note`] naming the node and op; consequences of such a
//! node, or of unbound symbols, are not reported again.
//!
//! To infer for several batch sizes, import without bindings and call [`infer_shapes`] on a
//! clone of the model per binding (weights are shared handles; cloning is cheap).

mod attention;
mod control;
mod cx;
mod elementwise;
mod index_ops;
mod nn;
mod reduce;
mod resize;
mod rnn;
mod shape_ops;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use tpuport_model::ops::onnx::{self as onnx_ops, ShapeRule};
use tpuport_model::{
    Attr, Dim, Graph, Model, Note, NoteLevel, Shape, TensorType, Value, ValueId, ValueKind,
    WeightStore,
};

use crate::ImportOptions;

use self::cx::LOAD_MAX;
use self::cx::{Fail, NodeCx, Out, Res};
use crate::onnx::host::HostValue;

/// Warnings listed individually before the rest are summarised.
const MAX_NOTES: usize = 25;

/// What [`infer_shapes`] did.
#[derive(Clone, Debug, Default)]
pub struct InferReport {
    /// Symbol bindings applied (from `dims`, `batch` and `input_shapes`).
    pub bindings: BTreeMap<String, u64>,
    /// Node outputs in the main graph and its subgraphs.
    pub node_outputs: usize,
    /// Of those, outputs whose shape is fully static after inference.
    pub static_outputs: usize,
    /// Root causes, one line each: `node 'X' (Op): why`.
    pub failures: Vec<String>,
    /// Symbols still unbound somewhere in the main graph.
    pub unbound: Vec<String>,
    /// Notes for the model (warnings per failure, info on unbound symbols).
    pub notes: Vec<Note>,
}

/// Binds the options' dimensions and infers dtypes and shapes of every value in the main
/// graph and its subgraphs, in place.
pub fn infer_shapes(model: &mut Model, opts: &ImportOptions) -> InferReport {
    let mut report = InferReport::default();
    let bindings = bind_inputs(&mut model.graph, opts, &mut report);
    bind_graph(&mut model.graph, &bindings);
    report.bindings = bindings;
    let mut engine = Engine {
        weights: &model.weights,
        functions: &model.functions,
        report: &mut report,
        depth: 0,
    };
    engine.graph(&mut model.graph, &HashMap::new(), true);
    let mut unbound = BTreeSet::new();
    collect_unbound(&model.graph, &mut unbound);
    report.unbound = unbound.into_iter().collect();
    finish_notes(&mut report);
    report
}

fn bind_inputs(
    g: &mut Graph,
    opts: &ImportOptions,
    report: &mut InferReport,
) -> BTreeMap<String, u64> {
    let mut b = opts.dims.clone();
    for name in opts.input_shapes.keys() {
        if !g.inputs.iter().any(|id| &g.value(*id).name == name) {
            report.notes.push(note(
                NoteLevel::Warning,
                "unknown-input",
                format!("--input-shape names '{name}', which is not a graph input"),
            ));
        }
    }
    for id in g.inputs.clone() {
        let v = g.value_mut(id);
        if let Some(s) = opts.input_shapes.get(&v.name) {
            if let Some(old) = &v.ty.shape {
                if old.rank() == s.rank() {
                    for (o, n) in old.0.iter().zip(&s.0) {
                        if let (Dim::Sym(sym), Dim::Known(k)) = (o, n)
                            && sym != "?"
                        {
                            b.entry(sym.clone()).or_insert(*k);
                        }
                    }
                } else {
                    report.notes.push(note(
                        NoteLevel::Warning,
                        "input-rank",
                        format!("input '{}' is declared {old} but was given {s}", v.name),
                    ));
                }
            }
            v.ty.shape = Some(s.clone());
        }
        // After `--input-shape` too: a shape given with a symbolic or `?` leading dimension
        // (`x=Bx3x48x192`) takes the batch, so inputs whose other dimensions are anonymous
        // (paddle2onnx writes `[-1,3,?,?]`) can be lowered at several batch sizes.
        if let (Some(batch), Some(shape)) = (opts.batch, v.ty.shape.as_mut()) {
            match shape.0.first_mut() {
                Some(d @ Dim::Sym(_)) if *d == Dim::unknown() => *d = Dim::Known(batch),
                Some(Dim::Sym(s)) => {
                    b.entry(s.clone()).or_insert(batch);
                }
                Some(Dim::Known(k)) if *k != batch => report.notes.push(note(
                    NoteLevel::Info,
                    "static-batch",
                    format!("input '{}' has a fixed leading dimension {k}; batch {batch} not applied to it", v.name),
                )),
                _ => {}
            }
        }
    }
    b
}

fn bind_graph(g: &mut Graph, b: &BTreeMap<String, u64>) {
    if b.is_empty() {
        return;
    }
    for v in &mut g.values {
        if let Some(s) = &v.ty.shape {
            v.ty.shape = Some(s.bind(b));
        }
    }
    for n in &mut g.nodes {
        for (_, sg) in &mut n.subgraphs {
            bind_graph(sg, b);
        }
    }
}

fn collect_unbound(g: &Graph, out: &mut BTreeSet<String>) {
    for v in &g.values {
        if let Some(s) = &v.ty.shape {
            out.extend(s.symbols().into_iter().filter(|s| *s != "?").map(str::to_owned));
        }
    }
    for n in &g.nodes {
        for (_, sg) in &n.subgraphs {
            collect_unbound(sg, out);
        }
    }
}

fn note(level: NoteLevel, code: &str, message: String) -> Note {
    Note { level, code: code.to_owned(), message }
}

fn finish_notes(r: &mut InferReport) {
    for f in r.failures.iter().take(MAX_NOTES) {
        r.notes.push(note(NoteLevel::Warning, "shape-inference", f.clone()));
    }
    if r.failures.len() > MAX_NOTES {
        r.notes.push(note(
            NoteLevel::Warning,
            "shape-inference",
            format!("{} more nodes could not be inferred", r.failures.len() - MAX_NOTES),
        ));
    }
    if !r.unbound.is_empty() {
        r.notes.push(note(
            NoteLevel::Info,
            "unbound-dims",
            format!(
                "{} of {} node outputs have static shapes; shapes depend on unbound dims {} (bind with --batch or --dim NAME=N)",
                r.static_outputs,
                r.node_outputs,
                r.unbound.join(", ")
            ),
        ));
    }
}

/// Merges an inferred type into the stored one; returns a conflict description when both are
/// static and differ.
fn merge(old: &TensorType, new: TensorType) -> (TensorType, Option<String>) {
    let mut conflict = None;
    if let (Some(a), Some(b)) = (old.dtype, new.dtype)
        && a != b
    {
        conflict = Some(format!("dtype {b} inferred, {a} declared"));
    }
    let dtype = new.dtype.or(old.dtype);
    let shape = match (&old.shape, new.shape) {
        (o, None) => o.clone(),
        (None, Some(n)) => Some(n),
        (Some(o), Some(n)) if o.rank() == n.rank() => {
            let dims = o
                .0
                .iter()
                .zip(n.0)
                .map(|(a, b)| match (a, &b) {
                    (Dim::Known(x), Dim::Known(y)) if x != y => {
                        conflict
                            .get_or_insert_with(|| format!("shape {} inferred, {o} declared", b));
                        b
                    }
                    (_, Dim::Known(_)) => b,
                    (Dim::Known(_), _) => a.clone(),
                    _ => b,
                })
                .collect();
            Some(Shape(dims))
        }
        (Some(o), Some(n)) => {
            if o.is_static() && n.is_static() {
                conflict = Some(format!("shape {n} inferred, {o} declared"));
            }
            Some(n)
        }
    };
    (TensorType { dtype, shape }, conflict)
}

fn is_static(t: &TensorType) -> bool {
    t.shape.as_ref().is_some_and(Shape::is_static)
}

/// Propagation state shared across a model's graphs.
pub(crate) struct Engine<'m> {
    weights: &'m WeightStore,
    functions: &'m [Graph],
    report: &'m mut InferReport,
    depth: usize,
}

fn label(g: &Graph, i: usize) -> String {
    let n = &g.nodes[i];
    if n.name.is_empty() { format!("#{i}") } else { n.name.clone() }
}

impl Engine<'_> {
    /// Infers one graph. `seeds` are known values by name (outer-scope captures and function
    /// arguments); `count` adds this graph's outputs to the report's totals.
    pub(crate) fn graph(&mut self, g: &mut Graph, seeds: &HashMap<String, HostValue>, count: bool) {
        let mut consts: HashMap<ValueId, HostValue> = HashMap::new();
        let mut tainted: HashSet<ValueId> = HashSet::new();
        for (i, v) in g.values.iter().enumerate() {
            let id = ValueId(u32::try_from(i).unwrap_or(u32::MAX));
            match &v.kind {
                ValueKind::Weight(w) => {
                    if let Some(c) = HostValue::from_weight(self.weights.get(*w), LOAD_MAX) {
                        consts.insert(id, c);
                    }
                }
                ValueKind::Input | ValueKind::Outer => {
                    if let Some(c) = seeds.get(&v.name) {
                        consts.insert(id, c.clone());
                    }
                    if !is_static(&v.ty) {
                        tainted.insert(id);
                    }
                }
                ValueKind::Intermediate => {}
            }
        }
        for ni in 0..g.nodes.len() {
            let mut subs = std::mem::take(&mut g.nodes[ni].subgraphs);
            let result = self.node(g, ni, &consts, &mut subs);
            g.nodes[ni].subgraphs = subs;
            let node = &g.nodes[ni];
            let inputs_clean = node
                .inputs
                .iter()
                .flatten()
                .all(|id| !tainted.contains(id) && is_static(&g.values[id.0 as usize].ty));
            let outs = match result {
                Ok(outs) => outs,
                Err(fail) => {
                    let why = match fail {
                        Fail::Unsupported => {
                            Some(format!("no shape rule for op {}", node.qualified_op()))
                        }
                        Fail::Invalid(m) => Some(m),
                        Fail::NeedsValue(i) if inputs_clean => {
                            Some(format!("the value of input {i} is not known"))
                        }
                        Fail::NeedsValue(_) | Fail::MissingType => None,
                    };
                    if let Some(why) = why {
                        self.report.failures.push(format!(
                            "node '{}' ({}): {why}",
                            label(g, ni),
                            node.op
                        ));
                    }
                    Vec::new()
                }
            };
            let node_outputs = g.nodes[ni].outputs.clone();
            let mut all_static = true;
            for (k, vid) in node_outputs.iter().enumerate() {
                if let Some(out) = outs.get(k).cloned() {
                    let (ty, conflict) = merge(&g.values[vid.0 as usize].ty, out.ty);
                    if let Some(c) = conflict {
                        self.report.notes.push(note(
                            NoteLevel::Warning,
                            "shape-mismatch",
                            format!(
                                "node '{}' ({}) output '{}': {c}",
                                label(g, ni),
                                g.nodes[ni].op,
                                g.values[vid.0 as usize].name
                            ),
                        ));
                    }
                    g.values[vid.0 as usize].ty = ty;
                    if let Some(v) = out.value {
                        consts.insert(*vid, v);
                    }
                }
                let v = &g.values[vid.0 as usize];
                let st = is_static(&v.ty);
                all_static &= st || v.name.is_empty();
                if !inputs_clean || !st {
                    tainted.insert(*vid);
                }
                if count && !v.name.is_empty() {
                    self.report.node_outputs += 1;
                    self.report.static_outputs += usize::from(st);
                }
            }
            if inputs_clean && !all_static && !outs.is_empty() {
                let n = &g.nodes[ni];
                self.report.failures.push(format!(
                    "node '{}' ({}): could not infer a static output shape",
                    label(g, ni),
                    n.op
                ));
            }
        }
    }

    fn node(
        &mut self,
        g: &Graph,
        ni: usize,
        consts: &HashMap<ValueId, HostValue>,
        subs: &mut [(String, Graph)],
    ) -> Res<Vec<Out>> {
        let node = &g.nodes[ni];
        let cx = NodeCx {
            node,
            types: node.inputs.iter().map(|o| o.map(|id| &g.values[id.0 as usize].ty)).collect(),
            values: node.inputs.iter().map(|o| o.and_then(|id| consts.get(&id))).collect(),
            weights: self.weights,
        };
        let default_domain = node.domain.is_empty() || node.domain == "ai.onnx";
        if let Some(f) = self
            .functions
            .iter()
            .find(|f| f.name == super::function_key(&node.domain, &node.op, ""))
        {
            return self.call(f, &cx);
        }
        if !default_domain && node.domain != "com.microsoft" {
            return Err(Fail::Unsupported);
        }
        let Some(entry) = onnx_ops::get(&node.op) else {
            return Err(Fail::Unsupported);
        };
        // One arm per rule, no wildcard: a rule added to the registry must be written here.
        use elementwise as ew;
        match entry.shape {
            ShapeRule::None => Err(Fail::Unsupported),
            ShapeRule::Constant => constant(&cx),
            ShapeRule::If => self.if_(g, &cx, consts, subs),
            ShapeRule::Loop => self.loop_(g, &cx, consts, subs),
            ShapeRule::Scan => self.scan(g, &cx, consts, subs),
            ShapeRule::Same => ew::same(&cx),
            ShapeRule::ToBool => ew::to_bool(&cx),
            ShapeRule::Broadcast => ew::binary(&cx, false),
            ShapeRule::Compare => ew::binary(&cx, true),
            ShapeRule::Dropout => ew::dropout(&cx),
            ShapeRule::Where => ew::where_(&cx),
            ShapeRule::Cast => ew::cast(&cx),
            ShapeRule::BitCast => ew::bit_cast(&cx),
            ShapeRule::EyeLike => ew::eye_like(&cx),
            ShapeRule::Quantize => ew::quantize(&cx),
            ShapeRule::Dequantize => ew::dequantize(&cx),
            ShapeRule::Conv => nn::conv(&cx),
            ShapeRule::ConvTranspose => nn::conv_transpose(&cx),
            ShapeRule::Pool => nn::pool(&cx),
            ShapeRule::GlobalPool => nn::global_pool(&cx),
            ShapeRule::BatchNorm => nn::batch_norm(&cx),
            ShapeRule::LayerNorm => nn::layer_norm(&cx),
            ShapeRule::MatMul => nn::matmul(&cx),
            ShapeRule::QLinearMatMul => nn::qlinear_matmul(&cx),
            ShapeRule::Gemm => nn::gemm(&cx),
            ShapeRule::Einsum => nn::einsum(&cx),
            ShapeRule::Recurrent => rnn::recurrent(&cx),
            ShapeRule::Attention => attention::attention(&cx),
            ShapeRule::Resize => resize::resize(&cx),
            ShapeRule::Loss => reduce::loss(&cx),
            ShapeRule::Shape => shape_ops::shape(&cx),
            ShapeRule::Size => shape_ops::size(&cx),
            ShapeRule::Reshape => shape_ops::reshape(&cx),
            ShapeRule::Flatten => shape_ops::flatten(&cx),
            ShapeRule::Unsqueeze => shape_ops::unsqueeze(&cx),
            ShapeRule::Squeeze => shape_ops::squeeze(&cx),
            ShapeRule::Expand => shape_ops::expand(&cx),
            ShapeRule::Tile => shape_ops::tile(&cx),
            ShapeRule::ConstantOfShape => shape_ops::constant_of_shape(&cx),
            ShapeRule::Range => shape_ops::range(&cx),
            ShapeRule::Window => shape_ops::window(&cx),
            ShapeRule::OneHot => shape_ops::one_hot(&cx),
            ShapeRule::DepthToSpace => shape_ops::depth_to_space(&cx),
            ShapeRule::SpaceToDepth => shape_ops::space_to_depth(&cx),
            ShapeRule::CenterCropPad => shape_ops::center_crop_pad(&cx),
            ShapeRule::Transpose => index_ops::transpose(&cx),
            ShapeRule::Concat => index_ops::concat(&cx),
            ShapeRule::Split => index_ops::split(&cx),
            ShapeRule::Slice => index_ops::slice(&cx),
            ShapeRule::Gather => index_ops::gather(&cx),
            ShapeRule::GatherElements => index_ops::gather_elements(&cx),
            ShapeRule::GatherNd => index_ops::gather_nd(&cx),
            ShapeRule::Pad => index_ops::pad(&cx),
            ShapeRule::TopK => index_ops::topk(&cx),
            ShapeRule::NonZero => index_ops::nonzero(&cx),
            ShapeRule::ArgReduce => reduce::arg(&cx),
            ShapeRule::Reduce => reduce::reduce(&cx),
        }
    }
}

fn constant(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    match cx.node.attr("value") {
        Some(Attr::Weight(id)) => {
            let w = cx.weights.get(*id);
            let mut out = Out::new(Some(w.dtype), w.shape());
            out.value = HostValue::from_weight(w, LOAD_MAX);
            Ok(vec![out])
        }
        _ => Err(Fail::Invalid("Constant without a value".to_owned())),
    }
}

/// A value's type with the name of the graph value, for subgraph seeding.
pub(crate) fn find_value<'g>(g: &'g Graph, name: &str) -> Option<(ValueId, &'g Value)> {
    g.values
        .iter()
        .enumerate()
        .rev()
        .find(|(_, v)| v.name == name)
        .map(|(i, v)| (ValueId(u32::try_from(i).unwrap_or(u32::MAX)), v))
}
