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
//!   gate; `input_forget` one subtract for `f = 1 − i`; `sequence_lens` one select per carried
//!   state and `Y`, a compare per step and batch entry (XLA compares the broadcast operands
//!   before broadcasting), `4 · T · B` for reversing sequences within their lengths when a
//!   direction runs backwards, and once after the loop a compare and a select per final state
//!   for empty sequences;
//! - the activations as the lowering emits them (`Sigmoid`, `Tanh`: one transcendental;
//!   `Relu` one FLOP; `LeakyRelu` 3; `HardSigmoid` 3; `Softsign` 3; `Elu` 3 and an `expm1`;
//!   `Softplus` 4 and two transcendentals; `Affine` / `ScaledTanh` a multiply and an add or
//!   multiply each, unless the parameter is 1 (or 0 for an add), which XLA drops).
//!
//! The loop's counter and bound (2 scalar ops per step) are not counted.
//!
//! XLA's `HloCostAnalysis` counts a `while` body once; this counts every step (as the cost
//! pass does for any loop with a constant trip count). A test in `tpuport-lower`
//! (`onnx_cost_xla.rs`) checks these formulas against XLA's count of the lowered module on
//! that basis.

use tpuport_model::Attr;

use super::{OpClass, OpCost, Site, input, int_attr, sat};

/// Whether an activation takes `activation_alpha` / `activation_beta` entries (in the
/// lowering's order: only functions with the parameter consume one).
fn takes(name: &str) -> (bool, bool) {
    match name {
        "affine" | "scaledtanh" | "hardsigmoid" => (true, true),
        "leakyrelu" | "thresholdedrelu" | "elu" => (true, false),
        _ => (false, false),
    }
}

/// FLOPs and transcendentals per element of one activation as the lowering emits it (a
/// multiply by 1 or an add of 0 is dropped by XLA's simplifier, so it is not counted).
fn activation(name: &str, alpha: Option<f64>, beta: Option<f64>) -> (u64, u64) {
    let not = |v: Option<f64>, default: f64, unit: f64| u64::from(v.unwrap_or(default) != unit);
    match name {
        "relu" => (1, 0),
        "tanh" | "sigmoid" => (0, 1),
        "affine" => (not(alpha, 1.0, 1.0) + not(beta, 0.0, 0.0), 0),
        "scaledtanh" => (not(alpha, 1.0, 1.0) + not(beta, 1.0, 1.0), 1),
        "leakyrelu" => (3, 0),
        "thresholdedrelu" => (2, 0),
        "hardsigmoid" => (1 + not(alpha, 0.2, 1.0) + not(beta, 0.5, 0.0), 0),
        "elu" => (2 + not(alpha, 1.0, 1.0), 1),
        "softsign" => (3, 0),
        "softplus" => (4, 2),
        _ => (1, 0),
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
        // Select H (and C) and Y; the step-versus-length compare runs on the batch.
        per += if s.op == "lstm" { 3 } else { 2 };
    }
    let mut flops = mxu.saturating_add(state.saturating_mul(per));
    if has(4) {
        let reversed = match s.n.attr("direction").and_then(Attr::as_str) {
            Some("reverse" | "bidirectional") => 1,
            _ => 0,
        };
        // The compare per step, and the index arithmetic reversing each sequence within its
        // length (compare, two subtracts, select per step and batch entry).
        flops = flops.saturating_add(sat(&[t, b])).saturating_add(sat(&[4, reversed, t, b]));
        // After the loop: empty sequences get zero final states (a compare and a select per
        // final state).
        let finals = if s.op == "lstm" { 3 } else { 2 };
        flops = flops.saturating_add(sat(&[finals, dirs, b, h]));
    }
    if has(3) {
        let folded = if lbr { 2 * h } else { gh };
        flops =
            flops.saturating_add(sat(&[steps, b, gh])).saturating_add(dirs.saturating_mul(folded));
    }

    // Activations `f`, `g`, `h` per direction, and how often each is applied per step.
    let uses: &[u64] = match s.op.as_str() {
        "lstm" if input_forget => &[2, 1, 1],
        "lstm" => &[3, 1, 1],
        "gru" => &[2, 1],
        _ => &[1],
    };
    let mut names: Vec<String> = match s.n.attr("activations") {
        Some(Attr::Strs(v)) => v.iter().map(|n| n.to_ascii_lowercase()).collect(),
        Some(Attr::Str(v)) => vec![v.to_ascii_lowercase()],
        _ => Vec::new(),
    };
    let per_dir = defaults.len();
    let dirs_n = usize::try_from(dirs).unwrap_or(1);
    if names.is_empty() {
        names = defaults.iter().map(|n| n.to_ascii_lowercase()).collect();
    }
    if names.len() == per_dir {
        // One list for every direction.
        names = names.iter().cycle().take(per_dir * dirs_n).cloned().collect();
    }
    let floats = |k: &str| match s.n.attr(k) {
        Some(Attr::Floats(v)) => v.clone(),
        Some(Attr::Float(v)) => vec![*v],
        _ => Vec::new(),
    };
    let (alphas, betas) = (floats("activation_alpha"), floats("activation_beta"));
    let (mut ai, mut bi) = (alphas.iter(), betas.iter());
    let (mut act_flops, mut act_trans) = (0u64, 0u64);
    for (k, name) in names.iter().enumerate() {
        let (ta, tb) = takes(name);
        let alpha = if ta { ai.next().copied() } else { None };
        let beta = if tb { bi.next().copied() } else { None };
        let n = uses[k % per_dir];
        let (f, tr) = activation(name, alpha, beta);
        act_flops = act_flops.saturating_add(f * n);
        act_trans = act_trans.saturating_add(tr * n);
    }
    let per_dir_state = sat(&[t, b, h]);
    c.flops = flops.saturating_add(per_dir_state.saturating_mul(act_flops));
    c.transcendentals = per_dir_state.saturating_mul(act_trans);
    c.mxu_flops = mxu;
}
