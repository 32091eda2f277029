//! Lowering rules, one file per op family. Each family exports a table of [`Rule`]s naming
//! the op, the first opset the rule handles and the lowering function; [`lower_node`]
//! dispatches through them and [`super::support`] answers from them.

use tpuport_model::Node;

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

/// One op the lowering handles.
#[derive(Debug)]
pub(crate) struct Rule {
    /// ONNX op type (default domain).
    pub(crate) op: &'static str,
    /// Oldest opset whose semantics the rule implements.
    pub(crate) since: i64,
    pub(crate) f: LowerFn,
}

pub(crate) const fn rule(op: &'static str, since: i64, f: LowerFn) -> Rule {
    Rule { op, since, f }
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

pub(crate) fn find(op: &str, domain: &str) -> Option<(&'static str, &'static Rule)> {
    if !(domain.is_empty() || domain == "ai.onnx") {
        return None;
    }
    for (fam, rules) in families() {
        if let Some(r) = rules.iter().find(|r| r.op == op) {
            return Some((fam, r));
        }
    }
    None
}

/// Lowers one node.
pub(crate) fn lower_node<'m>(cx: &mut Cx<'m>, node: &'m Node) -> Result<(), LowerError> {
    let Some((_, rule)) = find(&node.op, &node.domain) else {
        return Err(cx.unsup(node, "op is not supported by the ONNX lowering"));
    };
    if cx.opset < rule.since {
        return Err(cx.unsup(
            node,
            format!("opset {} is older than the supported {}", cx.opset, rule.since),
        ));
    }
    (rule.f)(cx, node)
}
