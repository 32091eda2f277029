//! AUD103: loops whose trip count depends on the data.

use tpuport_model::{Graph, Node, ValueKind};

use super::ctx::{input, is_constant, label, producer, short_op};
use super::{Ctx, Rule, Sink};

tpuport_codes::documented! {
    /// ## What it finds
    /// Loops whose number of iterations is decided by tensor values: ONNX `Loop` without a
    /// constant trip count `M`, or whose body computes its own continue condition (an early
    /// exit), and `stablehlo.while` whose condition does not compare the counter with a
    /// constant bound (what `jax.lax.while_loop` on data, or a Python `while` on tensors
    /// exported through tracing, produce).
    ///
    /// ## Why it hurts on TPU
    /// XLA can run a while loop on device, but it cannot unroll, pipeline or estimate it; any
    /// per-iteration output (ONNX scan outputs) gets a data-dependent length, and PyTorch/XLA
    /// turns a tensor-dependent Python loop into one compilation per trip count
    /// (pytorch/xla#2855). Decoding loops written this way are the usual cause of slow
    /// `generate` on TPU (huggingface/transformers#18661).
    ///
    /// ## What to do
    /// Run a fixed maximum number of iterations and mask finished elements
    /// (`jax.lax.fori_loop` / `lax.scan` with a static length, a `done` flag carried in the
    /// state), or move the loop to the host around a compiled fixed-shape step.
    ///
    /// ## References
    /// - [ONNX Loop](https://github.com/onnx/onnx/blob/main/docs/Operators.md#Loop)
    /// - [StableHLO while](https://github.com/openxla/stablehlo/blob/main/docs/spec.md#while)
    /// - pytorch/xla#2855, huggingface/transformers#18661
    pub(crate) struct DataDependentLoop;
}

/// Why an ONNX Loop's trip count is data-dependent, if it is.
fn onnx_loop(g: &Graph, n: &Node) -> Option<&'static str> {
    let m_const = input(n, 0).is_some_and(|m| is_constant(g, m));
    let cond_const = input(n, 1).is_none_or(|c| is_constant(g, c));
    let body = n.subgraphs.iter().find(|(k, _)| k == "body").map(|(_, b)| b);
    // The body's continue flag is loop-invariant when it passes the incoming flag through
    // (possibly via Identity) or is a constant.
    let body_exit = body.is_some_and(|b| {
        let (Some(out), Some(inp)) = (b.outputs.first(), b.inputs.get(1)) else { return false };
        let mut v = *out;
        for _ in 0..4 {
            if v == *inp || is_constant(b, v) {
                return false;
            }
            match producer(b, v) {
                Some(p) if p.op == "Identity" => v = match input(p, 0) { Some(x) => x, None => return true },
                _ => break,
            }
        }
        // A flag captured from the enclosing graph is invariant too.
        !matches!(b.value(v).kind, ValueKind::Outer)
    });
    match (m_const, cond_const && !body_exit) {
        (true, true) => None,
        (false, true) if input(n, 0).is_none() && !body_exit => Some("no trip count and no exit condition"),
        (false, _) if body_exit => Some("trip count and exit condition come from the data"),
        (false, _) => Some("trip count comes from the data"),
        (true, false) => Some("the body computes an early-exit condition"),
    }
}

/// True when a while's condition compares against a constant bound (a constant in the region,
/// or a loop-carried value that starts constant and the body passes through unchanged).
fn while_has_constant_bound(g: &Graph, n: &Node) -> bool {
    let region = |k: &str| n.subgraphs.iter().find(|(l, _)| l.contains(k)).map(|(_, r)| r);
    let (Some(cond), Some(body)) = (region("cond"), region("body")) else { return false };
    let invariant_const = |v| {
        if is_constant(cond, v) {
            return true;
        }
        let Some(k) = cond.inputs.iter().position(|x| *x == v) else { return false };
        let init_const = input(n, k).is_some_and(|x| is_constant(g, x));
        let passthrough = body.outputs.get(k).is_some_and(|o| body.inputs.get(k) == Some(o));
        init_const && passthrough
    };
    cond.nodes.iter().filter(|m| short_op(m) == "compare").any(|m| {
        let (Some(a), Some(b)) = (input(m, 0), input(m, 1)) else { return false };
        let counter = |v| cond.inputs.contains(&v);
        (counter(a) && invariant_const(b)) || (counter(b) && invariant_const(a))
    })
}

impl Rule for DataDependentLoop {
    fn check(cx: &Ctx<'_>, sink: &mut Sink<'_>) {
        let mut nodes = Vec::new();
        let mut why = Vec::new();
        for (g, n) in cx.nodes() {
            let reason = if n.op == "Loop" && !n.op.contains('.') {
                onnx_loop(g, n)
            } else if short_op(n) == "while" && n.op.contains('.') {
                (!while_has_constant_bound(g, n)).then_some("the condition has no constant bound")
            } else {
                None
            };
            if let Some(r) = reason {
                nodes.push(label(g, n));
                why.push(format!("{}: {r}", label(g, n)));
            }
        }
        if nodes.is_empty() {
            return;
        }
        why.truncate(3);
        sink.emit(
            "Loops with data-dependent trip counts".to_owned(),
            format!("{} loop(s) run a data-dependent number of iterations ({})", nodes.len(), why.join("; ")),
            nodes,
            "loop a fixed maximum number of times and mask finished elements (fori_loop / scan with a static length), or drive the loop from the host around a fixed-shape step",
        );
    }
}
