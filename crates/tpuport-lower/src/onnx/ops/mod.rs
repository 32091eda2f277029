//! Lowering rules, one file per op family. Each family exports a table of [`Rule`]s naming
//! the op and its lowering function; the first opset a lowering handles is the op's
//! `lowered_since` in the ONNX op registry ([`tpuport_model::ops::onnx`]), where its shape rule
//! and cost formula are too. [`lower_node`] dispatches through both and [`super::support`]
//! answers from them; `op_facts_agree_with_the_lowering` (below) fails when the two disagree or
//! a lowered op lacks a shape or cost rule.

use tpuport_model::Node;
use tpuport_model::ops::onnx::{self as registry, OnnxOp};

use super::cx::Cx;
use crate::LowerError;

pub(crate) mod attention;
pub(crate) mod control;
pub(crate) mod conv_pool;
pub(crate) mod elementwise;
pub(crate) mod gather_scatter;
pub(crate) mod loss;
pub(crate) mod matmul;
pub(crate) mod normalization;
pub(crate) mod reduction;
pub(crate) mod resize;
pub(crate) mod rnn;
pub(crate) mod shape;

/// A lowering function.
pub(crate) type LowerFn = for<'m> fn(&mut Cx<'m>, &'m Node) -> Result<(), LowerError>;

/// One op the lowering handles (its oldest opset is the registry's `lowered_since`).
#[derive(Debug)]
pub(crate) struct Rule {
    /// ONNX op type (default domain).
    pub(crate) op: &'static str,
    pub(crate) f: LowerFn,
}

pub(crate) const fn rule(op: &'static str, f: LowerFn) -> Rule {
    Rule { op, f }
}

pub(crate) fn families() -> [(&'static str, &'static [Rule]); 12] {
    [
        ("elementwise", elementwise::RULES),
        ("matmul", matmul::RULES),
        ("conv_pool", conv_pool::RULES),
        ("normalization", normalization::RULES),
        ("reduction", reduction::RULES),
        ("shape", shape::RULES),
        ("gather_scatter", gather_scatter::RULES),
        ("control", control::RULES),
        ("loss", loss::RULES),
        ("attention", attention::RULES),
        ("resize", resize::RULES),
        ("rnn", rnn::RULES),
    ]
}

/// The family, registry entry, oldest opset and lowering of an op the lowering handles.
pub(crate) fn find(
    op: &str,
    domain: &str,
) -> Option<(&'static str, &'static OnnxOp, i64, &'static Rule)> {
    let entry = registry::get(op)?;
    let since = entry.lowered_in(domain)?;
    for (fam, rules) in families() {
        if let Some(r) = rules.iter().find(|r| r.op == op) {
            return Some((fam, entry, since, r));
        }
    }
    None
}

/// Lowers one node.
pub(crate) fn lower_node<'m>(cx: &mut Cx<'m>, node: &'m Node) -> Result<(), LowerError> {
    let Some((_, _, since, rule)) = find(&node.op, &node.domain) else {
        return Err(cx.unsup(node, "op is not supported by the ONNX lowering"));
    };
    if cx.opset < since {
        return Err(
            cx.unsup(node, format!("opset {} is older than the supported {since}", cx.opset))
        );
    }
    (rule.f)(cx, node)
}

#[cfg(test)]
mod tests {
    use tpuport_model::ops::onnx::{CostRule, ShapeRule};

    use super::*;

    /// The lowering's tables and the ONNX op registry agree, and every lowered op has a shape
    /// rule (`tpuport-formats`) and a cost rule (`tpuport-analysis`): both crates map every
    /// rule the registry can name, so an op with a rule is an op with an implementation.
    #[test]
    fn op_facts_agree_with_the_lowering() {
        let mut problems = Vec::new();
        let mut lowered = std::collections::BTreeSet::new();
        for (fam, rules) in families() {
            for r in rules {
                if !lowered.insert(r.op) {
                    problems.push(format!("{} is lowered twice (again in {fam})", r.op));
                }
                match registry::get(r.op) {
                    None => problems.push(format!(
                        "{} is lowered ({fam}) but has no entry in the ONNX op registry",
                        r.op
                    )),
                    Some(e) if e.lowered_in("").is_none() => problems.push(format!(
                        "{} is lowered ({fam}) but its registry entry has no `lowered_since`",
                        r.op
                    )),
                    Some(_) => {}
                }
            }
        }
        for e in registry::TABLE {
            if e.lowered_since.is_some() && !lowered.contains(e.name) {
                problems.push(format!(
                    "the registry says {} is lowered, but no lowering function exists",
                    e.name
                ));
            }
            if e.lowered_since.is_some() && e.shape == ShapeRule::None {
                problems.push(format!("{} is lowered but has no shape rule", e.name));
            }
            if e.lowered_since.is_some() && e.cost == CostRule::None {
                problems.push(format!("{} is lowered but has no cost rule", e.name));
            }
        }
        assert!(problems.is_empty(), "{} problem(s):\n{}", problems.len(), problems.join("\n"));
    }
}
