//! `Resize` and `Upsample`: each resized axis is `floor(in · scale)` from `scales`, or
//! `sizes[i]` (`keep_aspect_ratio_policy = "stretch"`), or `round(in · s)` with `s` the
//! smallest (`not_larger`) or largest (`not_smaller`) of the `sizes / in` ratios; `axes`
//! (opset 18+) names the axes the lists cover (default all).
//!
//! Where the lists are: `Upsample` opset 7 has a `scales` attribute, opset 9 input 1; `Resize`
//! opset 10 has `(X, scales)`, opset 11+ `(X, roi, scales, sizes)` with an empty or absent
//! `scales` meaning `sizes` is used.

use tpuport_model::{Dim, Shape};

use super::cx::{Fail, NodeCx, Out, Res, axis, map_dim, to_u64};

#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss,
    reason = "output sizes, checked finite and bounded"
)]
fn scaled(n: u64, s: f64, round: bool) -> Option<u64> {
    let v = n as f64 * s;
    let v = if round { v.round() } else { v.floor() };
    (v.is_finite() && (0.0..1e15).contains(&v)).then_some(v as u64)
}

pub(crate) fn resize(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let x = cx.shape(0)?;
    let r = x.rank();
    let axes: Vec<usize> = match cx.ints("axes") {
        Some(a) => a.iter().map(|&v| axis(v, r)).collect::<Res<_>>()?,
        None => (0..r).collect(),
    };
    let present = |i: usize| cx.has(i) && cx.shape(i).is_ok_and(|s| s.0 != [Dim::Known(0)]);
    let (scales, sizes) = if cx.node.op == "Upsample" || cx.n_inputs() <= 2 {
        let s = match cx.node.attr("scales") {
            Some(tpuport_model::Attr::Floats(v)) => v.clone(),
            _ => cx.need(1)?.as_f64(),
        };
        (Some(s), None)
    } else if present(2) {
        (Some(cx.need(2)?.as_f64()), None)
    } else if present(3) {
        (None, Some(cx.need(3)?.as_i64()))
    } else {
        return Err(Fail::Invalid("Resize needs scales or sizes".to_owned()));
    };
    let mut dims = x.0.clone();
    if let Some(s) = scales {
        if s.len() != axes.len() {
            return Err(Fail::Invalid(format!("{} scales for {} axes", s.len(), axes.len())));
        }
        for (&a, &k) in axes.iter().zip(&s) {
            dims[a] = map_dim(&x.0[a], |n| scaled(n, k, false));
        }
    } else if let Some(z) = sizes {
        if z.len() != axes.len() {
            return Err(Fail::Invalid(format!("{} sizes for {} axes", z.len(), axes.len())));
        }
        let z: Vec<u64> = z.into_iter().map(to_u64).collect::<Res<_>>()?;
        let policy = cx.str("keep_aspect_ratio_policy").unwrap_or("stretch");
        if policy == "stretch" {
            for (&a, &n) in axes.iter().zip(&z) {
                dims[a] = Dim::Known(n);
            }
        } else {
            #[allow(clippy::cast_precision_loss, reason = "ratios of sizes")]
            let ratios: Option<Vec<f64>> = axes
                .iter()
                .zip(&z)
                .map(|(&a, &n)| Some(n as f64 / x.0[a].known()? as f64))
                .collect();
            let Some(ratios) = ratios else {
                for &a in &axes {
                    dims[a] = Dim::unknown();
                }
                return Ok(vec![Out::new(cx.dtype(0), Shape(dims))]);
            };
            let s = match policy {
                "not_larger" => ratios.iter().copied().fold(f64::INFINITY, f64::min),
                "not_smaller" => ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                p => return Err(Fail::Invalid(format!("keep_aspect_ratio_policy `{p}`"))),
            };
            for &a in &axes {
                dims[a] = map_dim(&x.0[a], |n| scaled(n, s, true));
            }
        }
    }
    Ok(vec![Out::new(cx.dtype(0), Shape(dims))])
}
