//! Reductions (`ReduceMean`, `ReduceSum`, `ReduceMax`, ...), `ArgMax` / `ArgMin`, and the
//! losses that reduce over their targets (`NegativeLogLikelihoodLoss`,
//! `SoftmaxCrossEntropyLoss`).

use tpuport_model::{DType, Dim, Shape};

use super::cx::FOLD_MAX;
use super::cx::{NodeCx, Out, Res, axis};
use crate::onnx::host::{HostValue, checked_elems};

/// `Reduce*`: axes from the attribute (older opsets) or input 1 (`ReduceSum` 13+, all 18+);
/// no axes reduces everything unless `noop_with_empty_axes`.
pub(crate) fn reduce(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let x = cx.shape(0)?;
    let keep = cx.int("keepdims", 1) != 0;
    let axes = match cx.ints_attr_or_input("axes", 1)? {
        Some(a) if !a.is_empty() => {
            a.iter().map(|v| axis(*v, x.rank())).collect::<Res<Vec<_>>>()?
        }
        _ if cx.int("noop_with_empty_axes", 0) != 0 => {
            return Ok(vec![Out {
                value: cx.value(0).cloned(),
                ..Out::new(cx.dtype(0), x.clone())
            }]);
        }
        _ => (0..x.rank()).collect(),
    };
    let dims: Vec<Dim> =
        x.0.iter()
            .enumerate()
            .filter_map(|(i, d)| match (axes.contains(&i), keep) {
                (false, _) => Some(d.clone()),
                (true, true) => Some(Dim::Known(1)),
                (true, false) => None,
            })
            .collect();
    let s = Shape(dims);
    let mut out = Out::new(cx.dtype(0), s.clone());
    if let (Some(v), Some(od)) =
        (cx.value(0), s.as_fixed().filter(|d| checked_elems(d).is_some_and(|n| n <= FOLD_MAX)))
    {
        out.value = fold(&cx.node.op, v, &axes, od);
    }
    Ok(vec![out])
}

fn fold(op: &str, v: &HostValue, axes: &[usize], out_dims: Vec<u64>) -> Option<HostValue> {
    let (init, f): (f64, fn(f64, f64) -> f64) = match op {
        "ReduceSum" | "ReduceMean" => (0.0, |a, b| a + b),
        "ReduceProd" => (1.0, |a, b| a * b),
        "ReduceMax" => (f64::NEG_INFINITY, f64::max),
        "ReduceMin" => (f64::INFINITY, f64::min),
        _ => return None,
    };
    let n = out_dims.iter().product::<u64>() as usize;
    let mut acc = vec![init; n];
    let mut count = vec![0u64; n];
    let keep_shape: Vec<u64> =
        v.shape.iter().enumerate().map(|(i, d)| if axes.contains(&i) { 1 } else { *d }).collect();
    let vals = v.as_f64();
    let mut pos = vec![0u64; v.shape.len()];
    for x in &vals {
        let mut flat = 0usize;
        for (k, p) in pos.iter().enumerate() {
            let p = if axes.contains(&k) { 0 } else { *p };
            flat = flat * keep_shape[k] as usize + p as usize;
        }
        acc[flat] = f(acc[flat], *x);
        count[flat] += 1;
        for k in (0..pos.len()).rev() {
            pos[k] += 1;
            if pos[k] < v.shape[k] {
                break;
            }
            pos[k] = 0;
        }
    }
    if op == "ReduceMean" {
        #[allow(clippy::cast_precision_loss, reason = "small folded reductions")]
        for (a, c) in acc.iter_mut().zip(&count) {
            *a /= (*c).max(1) as f64;
        }
    }
    Some(HostValue::from_f64(v.dtype, out_dims, acc))
}

/// `ArgMax` / `ArgMin`.
pub(crate) fn arg(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let x = cx.shape(0)?;
    let a = axis(cx.int("axis", 0), x.rank())?;
    let keep = cx.int("keepdims", 1) != 0;
    let dims =
        x.0.iter()
            .enumerate()
            .filter_map(|(i, d)| {
                if i != a {
                    Some(d.clone())
                } else if keep {
                    Some(Dim::Known(1))
                } else {
                    None
                }
            })
            .collect();
    Ok(vec![Out::new(Some(DType::I64), Shape(dims))])
}

/// `NegativeLogLikelihoodLoss(input, target)` / `SoftmaxCrossEntropyLoss(scores, labels)`:
/// the target's shape with `reduction = "none"`, else a scalar, in the input's type;
/// `SoftmaxCrossEntropyLoss`'s optional second output (`log_prob`) has the scores' shape.
pub(crate) fn loss(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let x = cx.shape(0)?;
    let dt = cx.dtype(0);
    let loss = match cx.str("reduction").unwrap_or("mean") {
        "none" => cx.shape(1)?.clone(),
        "mean" | "sum" => Shape::scalar(),
        r => return Err(super::cx::Fail::Invalid(format!("reduction `{r}`"))),
    };
    let mut outs = vec![Out::new(dt, loss)];
    if cx.node.outputs.len() > 1 {
        outs.push(Out::new(dt, x.clone()));
    }
    Ok(outs)
}
