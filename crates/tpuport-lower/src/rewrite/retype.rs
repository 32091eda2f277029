//! Float retyping: every tensor of the `from` types inside the module becomes `to`.
//!
//! `@main` keeps its argument types (each retyped argument is converted on entry) so the
//! caller's inputs still fit; its results come out in the new type. Constants keep their
//! literal and are converted after. Other functions and regions are retyped wholesale, their
//! signatures included.
//!
//! Used for `--emulate bf16` (f32 → bf16, the whole model in bf16 like `XLA_USE_BF16`) and for
//! the f32 reference of a module that computes partly in bf16/f16 (bf16, f16 → f32).

use tpuport_model::{DType, Graph, Model, ValueId, ValueKind};

use super::{fresh_value, recompute_producers, simple_op, with_dtype};
use crate::LowerError;

/// Ops whose semantics depend on the bit layout or on an opaque callee: retyping their
/// operands or results would change what they compute.
const UNRETYPABLE: &[&str] = &["stablehlo.bitcast_convert", "stablehlo.custom_call"];

/// Retypes `model` (see the module docs); returns how many values changed type.
///
/// # Errors
/// [`LowerError::Unsupported`] when a `bitcast_convert` or `custom_call` touches a value of a
/// `from` type.
pub fn retype(model: &mut Model, from: &[DType], to: DType) -> Result<usize, LowerError> {
    let mut changed = 0;
    let g = &mut model.graph;
    // 1. @main arguments: a fresh argument keeps the caller's type, the old value becomes the
    //    converted copy (so every use, by id or by name in a region, sees the new type).
    let mut entry = Vec::new();
    for i in 0..g.inputs.len() {
        let old = g.inputs[i];
        let v = g.value(old).clone();
        if !v.ty.dtype.is_some_and(|d| from.contains(&d)) {
            continue;
        }
        let new = fresh_value(g, "arg", v.ty.clone());
        g.value_mut(new).kind = ValueKind::Input;
        g.value_mut(old).kind = ValueKind::Intermediate;
        g.inputs[i] = new;
        entry.push(simple_op("stablehlo.convert", &[new], old, None));
    }
    let keep: Vec<ValueId> = g.inputs.clone();
    let mut nodes = entry;
    nodes.append(&mut g.nodes);
    g.nodes = nodes;
    changed += graph(g, from, to, &keep)?;
    for f in &mut model.functions {
        changed += graph(f, from, to, &[])?;
    }
    Ok(changed)
}

fn graph(g: &mut Graph, from: &[DType], to: DType, keep: &[ValueId]) -> Result<usize, LowerError> {
    let is_from = |g: &Graph, v: ValueId| g.value(v).ty.dtype.is_some_and(|d| from.contains(&d));
    // constants: the literal keeps its type in a fresh value, a convert produces the old one
    let mut constant_outputs = Vec::new();
    let old = std::mem::take(&mut g.nodes);
    let mut nodes = Vec::with_capacity(old.len());
    for mut node in old {
        if UNRETYPABLE.contains(&node.op.as_str()) {
            let touched = node.inputs.iter().flatten().chain(&node.outputs).any(|&v| is_from(g, v));
            if touched {
                return Err(LowerError::Unsupported {
                    node: node.name.clone(),
                    op: node.op.clone(),
                    opset: 0,
                    what: format!("cannot change the float type of its operands to {to}"),
                });
            }
        }
        if node.op == "stablehlo.constant"
            && let Some(&out) = node.outputs.first()
            && is_from(g, out)
        {
            let lit = fresh_value(g, "lit", g.value(out).ty.clone());
            node.outputs = vec![lit];
            constant_outputs.push(lit);
            let loc = node.location.clone();
            nodes.push(node);
            nodes.push(simple_op("stablehlo.convert", &[lit], out, loc));
            continue;
        }
        for (_, sg) in &mut node.subgraphs {
            graph(sg, from, to, &[])?;
        }
        nodes.push(node);
    }
    g.nodes = nodes;
    let mut changed = 0;
    for i in 0..g.values.len() {
        let id = ValueId(u32::try_from(i).unwrap_or(u32::MAX));
        if keep.contains(&id) || constant_outputs.contains(&id) || !is_from(g, id) {
            continue;
        }
        let v = g.value_mut(id);
        v.ty = with_dtype(&v.ty, to);
        changed += 1;
    }
    recompute_producers(g);
    Ok(changed)
}
