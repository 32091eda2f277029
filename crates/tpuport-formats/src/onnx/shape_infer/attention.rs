//! `Attention` (opset 23).
//!
//! Q is `[B, Hq, Sq, D]`, or `[B, Sq, Hq · D]` with `q_num_heads`; K and V are likewise
//! `[B, Hk, Skv, D]` / `[B, Hk, Skv, Dv]` or 3-D with `kv_num_heads`; the optional past key /
//! value (inputs 4 and 5) are `[B, Hk, P, D]` / `[B, Hk, P, Dv]`. With `T = P + Skv`:
//!
//! | output | 4-D inputs | 3-D inputs |
//! |---|---|---|
//! | `Y` | `[B, Hq, Sq, Dv]` | `[B, Sq, Hq · Dv]` |
//! | `present_key` | `[B, Hk, T, D]` | same |
//! | `present_value` | `[B, Hk, T, Dv]` | same |
//! | `qk_matmul_output` | `[B, Hq, Sq, T]` | same |

use tpuport_model::{Dim, Shape};

use super::cx::{Fail, NodeCx, Out, Res, map_dim};

/// `[B, H, S, D]` of a 4-D input, or of a 3-D one split into `heads` (attribute `attr`).
fn split_heads(cx: &NodeCx<'_>, i: usize, attr: &str) -> Res<[Dim; 4]> {
    let s = cx.shape(i)?;
    match s.rank() {
        4 => Ok([s.0[0].clone(), s.0[1].clone(), s.0[2].clone(), s.0[3].clone()]),
        3 => {
            let h = cx.int(attr, 0);
            let h = u64::try_from(h)
                .ok()
                .filter(|&h| h > 0)
                .ok_or_else(|| Fail::Invalid(format!("3-D input {i} needs a positive `{attr}`")))?;
            let d = map_dim(&s.0[2], |n| (n % h == 0).then_some(n / h));
            Ok([s.0[0].clone(), Dim::Known(h), s.0[1].clone(), d])
        }
        r => Err(Fail::Invalid(format!("input {i} has rank {r}; Attention needs 3 or 4"))),
    }
}

fn add(a: &Dim, b: &Dim) -> Dim {
    match (a, b) {
        (Dim::Known(x), Dim::Known(y)) => x.checked_add(*y).map_or_else(Dim::unknown, Dim::Known),
        (Dim::Known(0), d) | (d, Dim::Known(0)) => d.clone(),
        _ => Dim::unknown(),
    }
}

pub(crate) fn attention(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let [b, hq, sq, _] = split_heads(cx, 0, "q_num_heads")?;
    let [_, hk, skv, dk] = split_heads(cx, 1, "kv_num_heads")?;
    let [_, _, _, dv] = split_heads(cx, 2, "kv_num_heads")?;
    let past = if cx.has(4) {
        let p = cx.shape(4)?;
        p.0.get(2).cloned().ok_or_else(|| Fail::Invalid(format!("past_key {p} is not rank 4")))?
    } else {
        Dim::Known(0)
    };
    let total = add(&past, &skv);
    let dt = cx.dtype(0);
    let y = if cx.shape(0)?.rank() == 3 {
        let hid = match (&hq, &dv) {
            (Dim::Known(h), Dim::Known(d)) => {
                h.checked_mul(*d).map_or_else(Dim::unknown, Dim::Known)
            }
            _ => Dim::unknown(),
        };
        Shape(vec![b.clone(), sq.clone(), hid])
    } else {
        Shape(vec![b.clone(), hq.clone(), sq.clone(), dv.clone()])
    };
    let mut outs = vec![Out::new(dt, y)];
    let n = cx.node.outputs.len();
    if n > 1 {
        outs.push(Out::new(dt, Shape(vec![b.clone(), hk.clone(), total.clone(), dk])));
    }
    if n > 2 {
        outs.push(Out::new(dt, Shape(vec![b.clone(), hk, total.clone(), dv])));
    }
    if n > 3 {
        outs.push(Out::new(dt, Shape(vec![b, hq, sq, total])));
    }
    Ok(outs)
}
