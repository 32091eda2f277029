//! Losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (inference forms).

use tpuport_model::{DType, Node};

use super::reduction::{keep, reduce_t};
use super::{Rule, rule};
use crate::LowerError;
use crate::onnx::cx::Cx;
use crate::onnx::emit::T;

pub(crate) const RULES: &[Rule] =
    &[rule("NegativeLogLikelihoodLoss", nll), rule("SoftmaxCrossEntropyLoss", sce)];

/// NLL of `logp` [N, C, d...] against `target` [N, d...] with optional class weights.
fn nll_t(
    cx: &mut Cx<'_>,
    node: &Node,
    logp: &T,
    target: &T,
    weight: Option<&T>,
) -> Result<T, LowerError> {
    let sh = logp.shape().to_vec();
    let r = sh.len();
    let tdims: Vec<usize> = (0..r).filter(|&d| d != 1).collect();
    let t = cx.e.convert(target, DType::I64);
    let tb = cx.e.broadcast_in_dim(&t, &tdims, &sh);
    let io = cx.e.iota(DType::I64, &sh, 1);
    let hit = cx.e.compare("EQ", &tb, &io);
    let hitf = cx.e.convert(&hit, logp.dt());
    let prod = cx.e.bin("multiply", logp, &hitf);
    let picked = reduce_t(cx, &prod, &[1], "sum");
    let mut wt = match weight {
        Some(w) => {
            let wb = cx.e.broadcast_in_dim(w, &[1], &sh);
            let m = cx.e.bin("multiply", &wb, &hitf);
            reduce_t(cx, &m, &[1], "sum")
        }
        None => cx.e.like(&picked, 1.0),
    };
    if let Some(ii) = node.attr("ignore_index").and_then(tpuport_model::Attr::as_int) {
        let iv = cx.e.like(&t, ii as f64);
        let valid = cx.e.compare("NE", &t, &iv);
        let vf = cx.e.convert(&valid, logp.dt());
        wt = cx.e.bin("multiply", &wt, &vf);
    }
    let l = cx.e.bin("multiply", &picked, &wt);
    let loss = cx.e.un("negate", &l);
    let red = Cx::astr(node, "reduction").unwrap_or_else(|| "mean".to_owned());
    let all: Vec<usize> = (0..loss.rank()).collect();
    Ok(match red.as_str() {
        "none" => loss,
        "sum" => reduce_t(cx, &loss, &all, "sum"),
        "mean" => {
            let s = reduce_t(cx, &loss, &all, "sum");
            let ws = reduce_t(cx, &wt, &all, "sum");
            cx.e.bin("divide", &s, &ws)
        }
        r => return Err(cx.unsup(node, format!("reduction `{r}`"))),
    })
}

fn nll(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let x = cx.inp(node, 0)?;
    let t = cx.inp(node, 1)?;
    let w = cx.opt_inp(node, 2)?;
    let y = nll_t(cx, node, &x, &t, w.as_ref())?;
    cx.set(node, 0, y);
    Ok(())
}

fn sce(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let x = cx.inp(node, 0)?;
    let t = cx.inp(node, 1)?;
    let w = cx.opt_inp(node, 2)?;
    let sh = x.shape().to_vec();
    let all: Vec<usize> = (0..sh.len()).collect();
    let m = reduce_t(cx, &x, &[1], "max");
    let mk = keep(cx, &m, &sh, &[1]);
    let mb = cx.e.broadcast_in_dim(&mk, &all, &sh);
    let d = cx.e.bin("subtract", &x, &mb);
    let ex = cx.e.un("exponential", &d);
    let s = reduce_t(cx, &ex, &[1], "sum");
    let sk = keep(cx, &s, &sh, &[1]);
    let sb = cx.e.broadcast_in_dim(&sk, &all, &sh);
    let l = cx.e.un("log", &sb);
    let logp = cx.e.bin("subtract", &d, &l);
    let y = nll_t(cx, node, &logp, &t, w.as_ref())?;
    cx.set(node, 0, y);
    if cx.out_id(node, 1).is_some() {
        cx.set(node, 1, logp);
    }
    Ok(())
}
