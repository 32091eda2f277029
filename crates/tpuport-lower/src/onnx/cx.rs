//! Lowering context: the value environment, module arguments, attribute helpers.

use std::collections::HashMap;
use std::fmt::Write as _;

use tpuport_model::{Attr, DType, Graph, Model, Node, ValueId, ValueKind, WeightId};

use super::emit::{Emitter, T, Ty};
use super::host::{HOST_MAX, HostVal};
use super::{ArgBinding, ArgSource, ComputeType, LowerOptions, Lowered, ResultBinding, ops};
use crate::LowerError;

/// Where a value lives during lowering.
#[derive(Clone, Debug)]
pub(crate) enum Src {
    /// Emitted SSA value.
    Ssa(T),
    /// Known on the host; emitted as a constant on first device use.
    Host(HostVal),
    /// A weight not yet materialised (argument or constant).
    Weight(WeightId),
}

/// The value environment saved before a region.
#[derive(Debug)]
pub(crate) struct Scope(HashMap<String, Src>);

/// Saved state for [`Cx::rollback`].
#[derive(Debug)]
pub(crate) struct Checkpoint {
    emit: (usize, usize),
    vals: HashMap<String, Src>,
    args: usize,
    graphs: usize,
}

/// The lowering context.
#[derive(Debug)]
pub(crate) struct Cx<'m> {
    pub(crate) model: &'m Model,
    pub(crate) opts: &'m LowerOptions,
    pub(crate) e: Emitter,
    vals: HashMap<String, Src>,
    args: Vec<(Ty, ArgBinding)>,
    /// Default-domain opset.
    pub(crate) opset: i64,
    graphs: Vec<&'m Graph>,
    /// Values of graph inputs bound for lowering (used only where an op needs a static operand).
    known: HashMap<String, HostVal>,
}

impl<'m> Cx<'m> {
    fn new(model: &'m Model, opts: &'m LowerOptions) -> Cx<'m> {
        let opset = model
            .metadata
            .opsets
            .iter()
            .find(|(d, _)| d.is_empty() || d == "ai.onnx")
            .map_or(21, |(_, v)| *v);
        Cx {
            model,
            opts,
            e: Emitter::default(),
            vals: HashMap::new(),
            args: Vec::new(),
            opset,
            graphs: Vec::new(),
            known: HashMap::new(),
        }
    }

    pub(crate) fn g(&self) -> &'m Graph {
        self.graphs.last().copied().unwrap_or(&self.model.graph)
    }

    /// The compute type of a model dtype (f32 → bf16 under `--dtype bf16`).
    pub(crate) fn cdt(&self, dt: DType) -> DType {
        if self.opts.compute == ComputeType::Bf16 && dt == DType::F32 { DType::BF16 } else { dt }
    }

    pub(crate) fn bf16(&self) -> bool {
        self.opts.compute == ComputeType::Bf16
    }

    pub(crate) fn unsup(&self, node: &Node, what: impl Into<String>) -> LowerError {
        LowerError::Unsupported {
            node: node_label(self.g(), node),
            op: node.qualified_op(),
            opset: self.opset,
            what: what.into(),
        }
    }

    pub(crate) fn invalid(&self, node: &Node, what: impl std::fmt::Display) -> LowerError {
        LowerError::Invalid(format!("node `{}` ({}): {what}", node_label(self.g(), node), node.op))
    }

    fn static_ty(&self, id: ValueId) -> Result<Ty, LowerError> {
        let (dt, shape) = value_ty(self.g().value(id))?;
        Ok(Ty::new(self.cdt(dt), shape))
    }

    // ---- node inputs ----

    fn src(&self, node: &Node, i: usize) -> Result<&Src, LowerError> {
        let id = node
            .inputs
            .get(i)
            .copied()
            .flatten()
            .ok_or_else(|| self.invalid(node, format!("input {i} missing")))?;
        let name = &self.g().value(id).name;
        self.vals
            .get(name)
            .ok_or_else(|| self.invalid(node, format!("input `{name}` is not defined before use")))
    }

    pub(crate) fn has(&self, node: &Node, i: usize) -> bool {
        node.inputs.get(i).copied().flatten().is_some()
    }

    /// Number of present inputs.
    pub(crate) fn n_in(&self, node: &Node) -> usize {
        node.inputs.len()
    }

    /// The host value of input `i`, when known.
    pub(crate) fn host(&self, node: &Node, i: usize) -> Option<HostVal> {
        if !self.has(node, i) {
            return None;
        }
        match self.src(node, i).ok()? {
            Src::Host(h) => Some(h.clone()),
            _ => None,
        }
    }

    /// Host value of input `i`, or an Unsupported error saying it must be static.
    pub(crate) fn need_host(
        &self,
        node: &Node,
        i: usize,
        what: &str,
    ) -> Result<HostVal, LowerError> {
        if let Some(h) = self.host(node, i) {
            return Ok(h);
        }
        // A graph input whose value the caller bound for lowering (shape operands).
        let id = node.inputs.get(i).copied().flatten();
        if let Some(id) = id
            && let Some(h) = self.known.get(&self.g().value(id).name)
        {
            return Ok(h.clone());
        }
        Err(LowerError::NeedsHostValue {
            node: node_label(self.g(), node),
            op: node.qualified_op(),
            opset: self.opset,
            what: what.to_owned(),
            operand: i,
            value: id.map_or_else(String::new, |id| self.g().value(id).name.clone()),
        })
    }

    pub(crate) fn all_host(&self, node: &Node) -> bool {
        (0..node.inputs.len()).all(|i| !self.has(node, i) || self.host(node, i).is_some())
    }

    /// Type of input `i` (compute type).
    pub(crate) fn in_ty(&self, node: &Node, i: usize) -> Result<Ty, LowerError> {
        Ok(match self.src(node, i)? {
            Src::Ssa(t) => t.ty.clone(),
            Src::Host(h) => Ty::new(h.dtype, h.shape.clone()),
            Src::Weight(w) => {
                let w = self.model.weights.get(*w);
                Ty::new(self.cdt(w.dtype), w.shape.clone())
            }
        })
    }

    /// Input `i` as an SSA value (materialising constants and weights).
    pub(crate) fn inp(&mut self, node: &Node, i: usize) -> Result<T, LowerError> {
        let id = node
            .inputs
            .get(i)
            .copied()
            .flatten()
            .ok_or_else(|| self.invalid(node, format!("input {i} missing")))?;
        let name = self.g().value(id).name.clone();
        self.ssa_of(&name).map_err(|e| match e {
            LowerError::Invalid(m) => self.invalid(node, m),
            e => e,
        })
    }

    pub(crate) fn opt_inp(&mut self, node: &Node, i: usize) -> Result<Option<T>, LowerError> {
        if self.has(node, i) { self.inp(node, i).map(Some) } else { Ok(None) }
    }

    pub(crate) fn ssa_of(&mut self, name: &str) -> Result<T, LowerError> {
        let src = self
            .vals
            .get(name)
            .cloned()
            .ok_or_else(|| LowerError::Invalid(format!("value `{name}` is not defined")))?;
        let t = match src {
            Src::Ssa(t) => return Ok(t),
            Src::Host(h) => {
                let h = if h.dtype == DType::F32 && self.bf16() {
                    h.cast(DType::BF16).unwrap_or(h)
                } else {
                    h
                };
                self.e.const_host(&h)
            }
            Src::Weight(id) => self.weight_ssa(id)?,
        };
        self.vals.insert(name.to_owned(), Src::Ssa(t.clone()));
        Ok(t)
    }

    fn weight_ssa(&mut self, id: WeightId) -> Result<T, LowerError> {
        let w = self.model.weights.get(id);
        let cdt = self.cdt(w.dtype);
        let ty = Ty::new(cdt, w.shape.clone());
        if self.opts.weights_as_constants {
            let bytes =
                w.bytes().map_err(|e| LowerError::Invalid(format!("weight `{}`: {e}", w.name)))?;
            if cdt == w.dtype {
                return Ok(self.e.const_bytes(&ty, &bytes));
            }
            let t = self.e.const_bytes(&Ty::new(w.dtype, w.shape.clone()), &bytes);
            return Ok(self.e.convert(&t, cdt));
        }
        let name = format!("%arg{}", self.args.len());
        self.args.push((
            ty.clone(),
            ArgBinding {
                source: ArgSource::Weight(w.name.clone()),
                dtype: cdt,
                shape: w.shape.clone(),
            },
        ));
        Ok(T { name, ty })
    }

    // ---- node outputs ----

    pub(crate) fn out_id(&self, node: &Node, i: usize) -> Option<ValueId> {
        node.outputs.get(i).copied().filter(|&id| !self.g().value(id).name.is_empty())
    }

    /// Static type of output `i` from shape inference.
    pub(crate) fn out_ty(&self, node: &Node, i: usize) -> Result<Ty, LowerError> {
        let id = node
            .outputs
            .get(i)
            .copied()
            .ok_or_else(|| self.invalid(node, format!("output {i} missing")))?;
        self.static_ty(id)
    }

    pub(crate) fn set(&mut self, node: &Node, i: usize, t: T) {
        if let Some(id) = self.out_id(node, i) {
            let name = self.g().value(id).name.clone();
            self.vals.insert(name, Src::Ssa(t));
        }
    }

    pub(crate) fn set_host(&mut self, node: &Node, i: usize, h: HostVal) {
        if let Some(id) = self.out_id(node, i) {
            let name = self.g().value(id).name.clone();
            self.vals.insert(name, Src::Host(h));
        }
    }

    pub(crate) fn set_src(&mut self, name: &str, s: Src) {
        self.vals.insert(name.to_owned(), s);
    }

    pub(crate) fn get_src(&self, name: &str) -> Option<Src> {
        self.vals.get(name).cloned()
    }

    /// Registers a weight under `name`: small ones become host values.
    pub(crate) fn bind_weight(&mut self, name: &str, id: WeightId) -> Result<(), LowerError> {
        let w = self.model.weights.get(id);
        if host_sized(w.dtype, w.elements()) {
            let bytes =
                w.bytes().map_err(|e| LowerError::Invalid(format!("weight `{}`: {e}", w.name)))?;
            if let Some(h) = HostVal::from_bytes(w.dtype, w.shape.clone(), &bytes) {
                self.vals.insert(name.to_owned(), Src::Host(h));
                return Ok(());
            }
        }
        self.vals.insert(name.to_owned(), Src::Weight(id));
        Ok(())
    }

    /// Lowers every node of `g` in order (used for the main graph and inlined subgraphs).
    pub(crate) fn lower_graph(&mut self, g: &'m Graph) -> Result<(), LowerError> {
        self.graphs.push(g);
        for v in &g.values {
            if let ValueKind::Weight(id) = v.kind
                && !self.vals.contains_key(&v.name)
            {
                self.bind_weight(&v.name, id)?;
            }
        }
        for node in &g.nodes {
            ops::lower_node(self, node)?;
        }
        self.graphs.pop();
        Ok(())
    }

    // ---- regions and undo ----

    /// The values defined so far, before lowering a region (see [`Cx::leave_region`]).
    pub(crate) fn enter_region(&self) -> Scope {
        Scope(self.vals.clone())
    }

    /// Forgets what a region defined: SSA values made inside it are not visible after it.
    /// Weights it bound as module arguments stay bound (arguments are visible everywhere).
    pub(crate) fn leave_region(&mut self, scope: Scope) {
        let args: Vec<(String, Src)> = self
            .vals
            .iter()
            .filter(|(k, v)| {
                matches!(v, Src::Ssa(t) if t.name.starts_with("%arg"))
                    && !matches!(scope.0.get(*k), Some(Src::Ssa(_)))
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        self.vals = scope.0;
        self.vals.extend(args);
    }

    /// A point to return to when an attempt (unrolling a loop) fails.
    pub(crate) fn checkpoint(&self) -> Checkpoint {
        Checkpoint {
            emit: self.e.mark(),
            vals: self.vals.clone(),
            args: self.args.len(),
            graphs: self.graphs.len(),
        }
    }

    /// Undoes everything emitted and bound since `c`.
    pub(crate) fn rollback(&mut self, c: Checkpoint) {
        self.e.reset(c.emit);
        self.vals = c.vals;
        self.args.truncate(c.args);
        self.graphs.truncate(c.graphs);
    }

    // ---- attributes ----

    pub(crate) fn ai(node: &Node, name: &str, d: i64) -> i64 {
        node.attr(name).and_then(Attr::as_int).unwrap_or(d)
    }

    pub(crate) fn af(node: &Node, name: &str, d: f64) -> f64 {
        node.attr(name)
            .and_then(|a| a.as_float().or_else(|| a.as_int().map(|i| i as f64)))
            .unwrap_or(d)
    }

    pub(crate) fn ais(node: &Node, name: &str) -> Option<Vec<i64>> {
        node.attr(name).and_then(Attr::as_ints).map(<[i64]>::to_vec)
    }

    pub(crate) fn astr(node: &Node, name: &str) -> Option<String> {
        node.attr(name).and_then(Attr::as_str).map(str::to_owned)
    }

    /// Normalises a possibly negative axis.
    pub(crate) fn axis(&self, node: &Node, a: i64, rank: usize) -> Result<usize, LowerError> {
        let r = rank as i64;
        let v = if a < 0 { a + r } else { a };
        if v < 0 || v >= r.max(1) && !(r == 0 && v == 0) {
            return Err(self.invalid(node, format!("axis {a} out of range for rank {rank}")));
        }
        Ok(v as usize)
    }
}

/// A value's static dtype and shape, or an error telling how to bind it.
fn value_ty(v: &tpuport_model::Value) -> Result<(DType, Vec<u64>), LowerError> {
    let shape = v.ty.shape.as_ref().and_then(tpuport_model::Shape::as_fixed);
    match (v.ty.dtype, shape) {
        (Some(_), Some(s)) if crate::onnx::host::checked_elems(&s).is_none() => Err(
            LowerError::Invalid(format!("value `{}` has shape {s:?} whose size overflows", v.name)),
        ),
        (Some(dt), Some(s)) => Ok((dt, s)),
        (None, _) => {
            Err(LowerError::Invalid(format!("value `{}` has no known element type", v.name)))
        }
        (_, None) => Err(LowerError::Invalid(format!(
            "value `{}` has a non-static shape {}; bind it with --batch, --input-shape or --dim",
            v.name,
            v.ty.shape.as_ref().map_or_else(|| "(unknown)".to_owned(), ToString::to_string)
        ))),
    }
}

pub(crate) fn node_label(g: &Graph, node: &Node) -> String {
    if !node.name.is_empty() {
        return node.name.clone();
    }
    g.nodes.iter().position(|n| std::ptr::eq(n, node)).map_or_else(
        || node.outputs.first().map_or_else(|| "?".to_owned(), |o| g.value(*o).name.clone()),
        |i| format!("#{i}"),
    )
}

/// Whether a known tensor is small enough to be folded on the host: up to 64 elements, or up
/// to [`HOST_MAX`] of an integer or boolean type (shapes, indices, masks).
fn host_sized(dtype: DType, elements: u64) -> bool {
    elements <= 64 || (!dtype.is_float() && elements <= HOST_MAX)
}

/// The lowering entry point behind [`super::lower`].
pub(crate) fn lower(
    model: &Model,
    opts: &LowerOptions,
    values: &[(String, tpuport_model::HostTensor)],
) -> Result<Lowered, LowerError> {
    let mut cx = Cx::new(model, opts);
    for (name, t) in values {
        // Only small values of plain types can serve as static operands; others are ignored.
        if let Some(h) = HostVal::from_bytes(t.dtype, t.shape.clone(), t.data())
            && h.len() as u64 <= HOST_MAX
        {
            cx.known.insert(name.clone(), h);
        }
    }
    let mut folded = Vec::new();
    let g = &model.graph;
    // Graph inputs first, in order.
    let mut pre = String::new();
    for &id in &g.inputs {
        let v = g.value(id);
        if matches!(v.kind, ValueKind::Weight(_)) {
            continue;
        }
        let (dtype, shape) = value_ty(v)?;
        if dtype == DType::String {
            return Err(LowerError::Invalid(format!(
                "input `{}` has type string, which StableHLO cannot hold",
                v.name
            )));
        }
        let arg = format!("%arg{}", cx.args.len());
        let ty = Ty::new(dtype, shape.clone());
        cx.args.push((
            ty.clone(),
            ArgBinding { source: ArgSource::Input(v.name.clone()), dtype, shape },
        ));
        // A bound value of the input's type and shape that is small enough to fold (as a small
        // weight would be) is a host value from here on, so what depends on it (an `If` on
        // `sr == 16000`, a shape computed from it) is evaluated at lowering time; the argument
        // stays in the signature.
        if let Some(h) = cx.known.get(&v.name).filter(|h| {
            h.dtype == ty.dt && h.shape == ty.shape && host_sized(h.dtype, h.len() as u64)
        }) {
            folded.push((v.name.clone(), h.clone()));
            continue;
        }
        let t = T { name: arg, ty };
        let t = if cx.cdt(dtype) != dtype { cx.e.convert(&t, cx.cdt(dtype)) } else { t };
        cx.vals.insert(v.name.clone(), Src::Ssa(t));
    }
    for (name, h) in folded {
        cx.vals.insert(name, Src::Host(h));
    }
    let _ = &mut pre;
    cx.lower_graph(g)?;
    // Results: graph outputs then exposed values.
    let mut names: Vec<String> = g.outputs.iter().map(|&o| g.value(o).name.clone()).collect();
    for x in &opts.expose {
        if !cx.vals.contains_key(x) {
            return Err(LowerError::Invalid(format!(
                "exposed value `{x}` is not a value of the graph"
            )));
        }
        names.push(x.clone());
    }
    let mut outs = Vec::new();
    let mut results = Vec::new();
    for name in names {
        // Under bf16 compute, results go back to the model's type (f32 when not recorded).
        let want = g
            .values
            .iter()
            .find(|v| v.name == name)
            .and_then(|v| v.ty.dtype)
            .or_else(|| cx.bf16().then_some(DType::F32));
        let mut t = cx.ssa_of(&name)?;
        if let Some(w) = want
            && cx.cdt(w) != w
            && t.dt() == cx.cdt(w)
        {
            t = cx.e.convert(&t, w);
        }
        results.push(ResultBinding {
            name: name.clone(),
            dtype: t.dt(),
            shape: t.shape().to_vec(),
        });
        outs.push(t);
    }
    let mut m = String::new();
    m.push_str("module @lowered attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {\n");
    let sig = cx
        .args
        .iter()
        .enumerate()
        .map(|(i, (t, _))| format!("%arg{i}: {}", t.mlir()))
        .collect::<Vec<_>>()
        .join(", ");
    let rtys = outs.iter().map(|t| t.ty.mlir()).collect::<Vec<_>>().join(", ");
    let _ = writeln!(m, "  func.func public @main({sig}) -> ({rtys}) {{");
    m.push_str(&cx.e.body);
    let onames = outs.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(", ");
    let _ = writeln!(m, "    \"func.return\"({onames}) : ({rtys}) -> ()");
    m.push_str("  }\n}\n");
    Ok(Lowered { mlir: m, args: cx.args.into_iter().map(|(_, b)| b).collect(), results })
}
