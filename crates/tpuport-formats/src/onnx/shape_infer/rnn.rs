//! Recurrent ops: `RNN`, `GRU` and `LSTM`.
//!
//! With `X` of shape `[seq, batch, input]` (`layout = 0`) or `[batch, seq, input]`
//! (`layout = 1`, opset 14+), `num_directions` 2 for `direction = "bidirectional"` else 1 and
//! `hidden_size` from the attribute (else the last dim of `R`):
//!
//! | output | `layout = 0` | `layout = 1` |
//! |---|---|---|
//! | `Y` | `[seq, dirs, batch, hidden]` | `[batch, seq, dirs, hidden]` |
//! | `Y_h`, `Y_c` (LSTM only) | `[dirs, batch, hidden]` | `[batch, dirs, hidden]` |

use tpuport_model::{Dim, Shape};

use super::cx::{Fail, NodeCx, Out, Res};

/// `RNN`, `GRU`, `LSTM`.
pub(crate) fn recurrent(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let x = cx.shape(0)?;
    if x.rank() != 3 {
        return Err(Fail::Invalid(format!("X has shape {x}; a recurrent op needs rank 3")));
    }
    let layout = cx.int("layout", 0);
    let (seq, batch) = match layout {
        0 => (x.0[0].clone(), x.0[1].clone()),
        1 => (x.0[1].clone(), x.0[0].clone()),
        l => return Err(Fail::Invalid(format!("layout {l} is neither 0 nor 1"))),
    };
    let dirs = match cx.str("direction").unwrap_or("forward") {
        "forward" | "reverse" => 1,
        "bidirectional" => 2,
        d => {
            return Err(Fail::Invalid(format!(
                "direction `{d}` is not forward, reverse or bidirectional"
            )));
        }
    };
    let hidden = match cx.node.attr("hidden_size").and_then(tpuport_model::Attr::as_int) {
        Some(h) => Dim::Known(
            u64::try_from(h).map_err(|_| Fail::Invalid(format!("hidden_size {h} is negative")))?,
        ),
        None => {
            let r = cx.shape(2)?;
            r.0.get(2)
                .cloned()
                .ok_or_else(|| Fail::Invalid(format!("R has shape {r}, not rank 3")))?
        }
    };
    let d = Dim::Known(dirs);
    let (y, state) = if layout == 0 {
        (Shape(vec![seq, d.clone(), batch.clone(), hidden.clone()]), Shape(vec![d, batch, hidden]))
    } else {
        (Shape(vec![batch.clone(), seq, d.clone(), hidden.clone()]), Shape(vec![batch, d, hidden]))
    };
    let dt = cx.dtype(0);
    let mut outs = vec![Out::new(dt, y), Out::new(dt, state.clone())];
    if cx.node.op == "LSTM" {
        outs.push(Out::new(dt, state));
    }
    Ok(outs)
}
