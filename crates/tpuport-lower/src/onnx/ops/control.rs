//! Control flow. `If` whose condition is known at lowering time is inlined (the taken branch
//! is lowered in place). A data-dependent `If`, and `Loop`/`Scan`, are reported as
//! unsupported: the lowering produces one static module per bucket and does not emit
//! `stablehlo.if`/`stablehlo.while` yet.

use tpuport_model::{Attr, Node};

use super::{Rule, rule};
use crate::LowerError;
use crate::onnx::cx::Cx;

pub(crate) const RULES: &[Rule] = &[rule("If", 1, if_)];

/// Why Loop/Scan are refused (the dispatcher's message).
pub(crate) const LOOP_SCAN: &str = "Loop/Scan are not lowered (needs stablehlo.while with a static trip count); unroll before export";

fn if_<'m>(cx: &mut Cx<'m>, node: &'m Node) -> Result<(), LowerError> {
    let c = cx.need_host(node, 0, "the condition of If (data-dependent If is not lowered)")?;
    let take = c.get_f(0) != 0.0;
    let branch = if take { "then_branch" } else { "else_branch" };
    let Some(Attr::Graph(i)) = node.attr(branch) else {
        return Err(cx.invalid(node, format!("{branch} missing")));
    };
    let g = &node.subgraphs.get(*i).ok_or_else(|| cx.invalid(node, format!("{branch} missing")))?.1;
    let outs: Vec<String> = g.outputs.iter().map(|&o| g.value(o).name.clone()).collect();
    cx.lower_graph(g)?;
    for (k, name) in outs.iter().enumerate() {
        let s = cx
            .get_src(name)
            .ok_or_else(|| cx.invalid(node, format!("branch output `{name}` undefined")))?;
        if let Some(id) = cx.out_id(node, k) {
            let n = cx.g().value(id).name.clone();
            cx.set_src(&n, s);
        }
    }
    Ok(())
}
