//! Recurrent ONNX ops (`RNN`, `GRU`, `LSTM`): every step of every direction, as the lowering
//! computes it (one `stablehlo.while` over the sequence, see `tpuport-lower`'s `rnn.rs`).
//!
//! With `D` directions, `T` steps, batch `B`, input size `I`, hidden size `H` and `G` gates
//! (RNN 1, GRU 3, LSTM 4):
//! - input projection `X·Wᵀ`: `2 · D · T · B · I · G·H`; recurrence `H·Rᵀ`:
//!   `2 · D · T · B · H · G·H` (both MXU FLOPs);
//! - biases: `D · T · B · G·H` (their sum added to the projection) + `D · G·H` (`Wb + Rb`);
//! - per step, per `D · B · H` state element: LSTM 8 (gate sum over 4H, `f⊙C + i⊙c`, `o⊙h(C)`),
//!   GRU 8 (9 with `linear_before_reset` and a bias), RNN 1; peepholes 6; `clip` one clamp per
//!   gate; `input_forget` one subtract for `f = 1 − i`; `sequence_lens` a compare and one
//!   select per carried state and `Y` (and, once after the loop, a compare and a select per
//!   final state for empty sequences);
//! - the activations, each as the registry counts the ONNX op of that name (`Sigmoid`, `Tanh`:
//!   one transcendental; `Relu`: one FLOP; …; `Affine` 2 FLOPs, `ScaledTanh` 2 and a tanh).
//!
//! The loop's counter and bound (2 scalar ops per step) are not counted.
//!
//! XLA's `HloCostAnalysis` counts a `while` body once; this counts every step (as the cost
//! pass does for any loop with a constant trip count). A test in `tpuport-lower`
//! (`onnx_cost_xla.rs`) checks these formulas against XLA's count of the lowered module on
//! that basis.

use tpuport_model::Attr;
use tpuport_model::ops::onnx::{self, CostRule};

use super::{OpClass, OpCost, Site, input, int_attr, sat};

/// FLOPs and transcendentals per element of one activation function.
fn activation(name: &str) -> (u64, u64) {
    match name.to_ascii_lowercase().as_str() {
        "affine" => (2, 0),
        "scaledtanh" => (2, 1),
        other => match onnx::get_ignore_case(other).map(|o| o.cost) {
            Some(CostRule::PerElement { flops, transcendentals }) => {
                (u64::from(flops), u64::from(transcendentals))
            }
            _ => (1, 0),
        },
    }
}

pub(super) fn cost(s: &Site<'_>, c: &mut OpCost) {
    c.class = OpClass::Matmul;
    let (gates, defaults, per_state): (u64, &[&str], u64) = match s.op.as_str() {
        "lstm" => (4, &["Sigmoid", "Tanh", "Tanh"], 8),
        "gru" => (3, &["Sigmoid", "Tanh"], 8),
        _ => (1, &["Tanh"], 1),
    };
    let (Some(x), Some(w), Some(r)) = (s.in_shape(0), s.in_shape(1), s.in_shape(2)) else {
        c.not_static();
        return;
    };
    if x.len() != 3 || w.len() != 3 || r.len() != 3 {
        c.not_static();
        return;
    }
    let (t, b) = if int_attr(s.n, "layout") == Some(1) { (x[1], x[0]) } else { (x[0], x[1]) };
    let (dirs, input_size, h) = (w[0], x[2], r[2]);
    let gh = gates.saturating_mul(h);
    let steps = sat(&[dirs, t]);
    let state = sat(&[dirs, t, b, h]);
    let mxu = sat(&[2, steps, b, input_size, gh]).saturating_add(sat(&[2, steps, b, h, gh]));
    let has = |i: usize| input(s.n, i).is_some();
    let lbr = s.op == "gru" && int_attr(s.n, "linear_before_reset").unwrap_or(0) != 0;
    let input_forget = s.op == "lstm" && int_attr(s.n, "input_forget").unwrap_or(0) != 0;

    let mut per = per_state;
    if lbr && has(3) {
        per += 1;
    }
    if s.op == "lstm" && has(7) {
        per += 6;
    }
    if s.n.attr("clip").is_some() {
        per += if input_forget { gates - 1 } else { gates };
    }
    if input_forget {
        per += 1;
    }
    if has(4) {
        // compare, then select H (and C) and Y.
        per += if s.op == "lstm" { 4 } else { 3 };
    }
    let mut flops = mxu.saturating_add(state.saturating_mul(per));
    if has(4) {
        // After the loop: empty sequences get zero final states (a compare and a select per
        // final state).
        let finals = if s.op == "lstm" { 3 } else { 2 };
        flops = flops.saturating_add(sat(&[finals, dirs, b, h]));
    }
    if has(3) {
        let folded = if lbr { 2 * h } else { gh };
        flops = flops
            .saturating_add(sat(&[steps, b, gh]))
            .saturating_add(dirs.saturating_mul(folded));
    }

    // Activations `f`, `g`, `h` per direction, and how often each is applied per step.
    let uses: &[u64] = match s.op.as_str() {
        "lstm" if input_forget => &[2, 1, 1],
        "lstm" => &[3, 1, 1],
        "gru" => &[2, 1],
        _ => &[1],
    };
    let names: Vec<String> = match s.n.attr("activations") {
        Some(Attr::Strs(v)) => v.clone(),
        Some(Attr::Str(v)) => vec![v.clone()],
        _ => Vec::new(),
    };
    let per_dir = defaults.len();
    let (mut act_flops, mut act_trans) = (0u64, 0u64);
    for d in 0..usize::try_from(dirs).unwrap_or(1) {
        for (k, &n) in uses.iter().enumerate() {
            let name = names
                .get(d * per_dir + k)
                .or_else(|| names.get(k))
                .map_or(defaults[k], String::as_str);
            let (f, tr) = activation(name);
            act_flops = act_flops.saturating_add(f * n);
            act_trans = act_trans.saturating_add(tr * n);
        }
    }
    let per_dir_state = sat(&[t, b, h]);
    c.flops = flops.saturating_add(per_dir_state.saturating_mul(act_flops));
    c.transcendentals = per_dir_state.saturating_mul(act_trans);
    c.mxu_flops = mxu;
}
