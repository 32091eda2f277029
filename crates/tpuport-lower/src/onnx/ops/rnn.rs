//! Recurrent ops: `RNN`, `GRU` and `LSTM`, each lowered to one `stablehlo.while` loop over
//! the static sequence length.
//!
//! Spec: <https://github.com/onnx/onnx/blob/main/docs/Operators.md#LSTM> (and `#GRU`, `#RNN`).
//! Inputs `X, W, R, B, sequence_lens, initial_h` (LSTM adds `initial_c, P`); outputs
//! `Y, Y_h` (LSTM adds `Y_c`). With `D` directions, `G` gates (RNN 1, GRU 3 in order `z r h`,
//! LSTM 4 in order `i o f c`) and hidden size `H`:
//!
//! - LSTM: `i = f(Xt·Wiᵀ + Ht-1·Riᵀ + Pi⊙Ct-1 + Wbi + Rbi)`, `f` likewise (or `1 - i` with
//!   `input_forget = 1`), `c = g(Xt·Wcᵀ + Ht-1·Rcᵀ + Wbc + Rbc)`, `Ct = f⊙Ct-1 + i⊙c`,
//!   `o = f(Xt·Woᵀ + Ht-1·Roᵀ + Po⊙Ct + Wbo + Rbo)`, `Ht = o⊙h(Ct)`.
//! - GRU: `z = f(…)`, `r = f(…)`, `h = g(Xt·Whᵀ + (r⊙Ht-1)·Rhᵀ + Rbh + Wbh)` (or, with
//!   `linear_before_reset = 1`, `g(Xt·Whᵀ + r⊙(Ht-1·Rhᵀ + Rbh) + Wbh)`),
//!   `Ht = (1 - z)⊙h + z⊙Ht-1`.
//! - RNN: `Ht = f(Xt·Wiᵀ + Ht-1·Riᵀ + Wbi + Rbi)`.
//!
//! How it is lowered: the input projection `X·Wᵀ + biases` of every step and direction is one
//! `dot_general` before the loop (`[D, seq, batch, G·H]`); the loop carries the step counter,
//! `H` (and `C`) for all directions stacked as `[D, batch, H]` and the `Y` accumulator, and
//! does one batched `H·Rᵀ` per step. The reverse direction runs on the time-reversed input and
//! its `Y` is reversed back. `clip` clamps every gate's pre-activation to `[-clip, clip]`.
//! Activations: `Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh,
//! HardSigmoid, Elu, Softsign, Softplus` (names compared case-insensitively, as onnxruntime
//! does), taking `activation_alpha` / `activation_beta` entries in order, only the functions
//! that have the parameter consuming one; a missing entry is the ONNX operator's default
//! (Affine 1 / 0, ScaledTanh 1 / 1).
//!
//! `sequence_lens`: when absent or known at lowering time to be the full length everywhere, no
//! masking is emitted. Otherwise a batch entry `b` with length `L < seq` keeps its state after
//! step `L` and gets zeros in `Y` from there; its reverse direction reads steps `L-1 … 0`
//! (a `gather` reverses each sequence within its length); like onnxruntime, a length of 0
//! gives zero `Y_h` / `Y_c`.
//!
//! `ReverseSequence` (opset 10+; tf2onnx emits it for the backward half of a Keras
//! `Bidirectional` layer) reverses the first `sequence_lens[b]` steps of each batch entry along
//! `time_axis` with the same `gather` as the reverse direction above.
//!
//! Opsets 1 to 22 share these semantics (`output_sequence` of opset 1 only says whether `Y`
//! is wanted, `layout` exists from opset 14).

use tpuport_model::{Attr, DType, Node};

use super::elementwise::emit_unary_with;
use super::gather_scatter::gather_attr;
use super::matmul::dot;
use super::{Rule, rule};
use crate::LowerError;
use crate::onnx::cx::Cx;
use crate::onnx::emit::{T, Ty};

pub(crate) const RULES: &[Rule] = &[
    rule("RNN", rnn),
    rule("GRU", gru),
    rule("LSTM", lstm),
    rule("ReverseSequence", reverse_sequence),
];

fn rnn<'m>(cx: &mut Cx<'m>, node: &'m Node) -> Result<(), LowerError> {
    recurrent(cx, node, Kind::Rnn)
}

fn gru<'m>(cx: &mut Cx<'m>, node: &'m Node) -> Result<(), LowerError> {
    recurrent(cx, node, Kind::Gru)
}

fn lstm<'m>(cx: &mut Cx<'m>, node: &'m Node) -> Result<(), LowerError> {
    recurrent(cx, node, Kind::Lstm)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Rnn,
    Gru,
    Lstm,
}

impl Kind {
    fn gates(self) -> u64 {
        match self {
            Kind::Rnn => 1,
            Kind::Gru => 3,
            Kind::Lstm => 4,
        }
    }

    /// The default activations of one direction (`f`, `g`, `h` as the op has them).
    fn default_acts(self) -> &'static [&'static str] {
        match self {
            Kind::Rnn => &["Tanh"],
            Kind::Gru => &["Sigmoid", "Tanh"],
            Kind::Lstm => &["Sigmoid", "Tanh", "Tanh"],
        }
    }
}

/// One activation function with its parameters (`None`: the ONNX operator's default).
#[derive(Clone, Debug, PartialEq)]
struct Act {
    name: &'static str,
    alpha: Option<f64>,
    beta: Option<f64>,
}

/// Canonical name and whether the function takes (alpha, beta).
fn act_info(name: &str) -> Option<(&'static str, bool, bool)> {
    Some(match name.to_ascii_lowercase().as_str() {
        "relu" => ("Relu", false, false),
        "tanh" => ("Tanh", false, false),
        "sigmoid" => ("Sigmoid", false, false),
        "affine" => ("Affine", true, true),
        "leakyrelu" => ("LeakyRelu", true, false),
        "thresholdedrelu" => ("ThresholdedRelu", true, false),
        "scaledtanh" => ("ScaledTanh", true, true),
        "hardsigmoid" => ("HardSigmoid", true, true),
        "elu" => ("Elu", true, false),
        "softsign" => ("Softsign", false, false),
        "softplus" => ("Softplus", false, false),
        _ => return None,
    })
}

/// The activations of every direction: `acts[d][k]` is function `k` of direction `d`.
fn activations(
    cx: &Cx<'_>,
    node: &Node,
    kind: Kind,
    dirs: usize,
) -> Result<Vec<Vec<Act>>, LowerError> {
    let n = kind.default_acts().len();
    let names: Vec<String> = match node.attr("activations") {
        Some(Attr::Strs(v)) => v.clone(),
        Some(Attr::Str(s)) => vec![s.clone()],
        Some(_) => return Err(cx.invalid(node, "activations is not a list of strings")),
        None => kind.default_acts().iter().map(|s| (*s).to_owned()).collect(),
    };
    let names = if names.len() == n && dirs == 2 { [names.clone(), names].concat() } else { names };
    if names.len() != n * dirs {
        return Err(cx.invalid(
            node,
            format!("{} activations given; {} expected ({n} per direction)", names.len(), n * dirs),
        ));
    }
    let floats = |name: &str| match node.attr(name) {
        Some(Attr::Floats(v)) => v.clone(),
        Some(Attr::Float(v)) => vec![*v],
        _ => Vec::new(),
    };
    let alphas = floats("activation_alpha");
    let betas = floats("activation_beta");
    let (mut ai, mut bi) = (alphas.iter(), betas.iter());
    let mut out = Vec::with_capacity(dirs);
    for chunk in names.chunks(n) {
        let mut d = Vec::with_capacity(n);
        for name in chunk {
            let Some((canon, uses_a, uses_b)) = act_info(name) else {
                return Err(cx.unsup(node, format!("activation `{name}`")));
            };
            let alpha = if uses_a { ai.next().copied() } else { None };
            let beta = if uses_b { bi.next().copied() } else { None };
            d.push(Act { name: canon, alpha, beta });
        }
        out.push(d);
    }
    Ok(out)
}

/// Applies activation `k` of each direction to `x` (`[D, …]`).
fn activate(
    cx: &mut Cx<'_>,
    node: &Node,
    acts: &[Vec<Act>],
    k: usize,
    x: &T,
) -> Result<T, LowerError> {
    if acts.iter().all(|d| d[k] == acts[0][k]) {
        return activate_one(cx, node, &acts[0][k], x);
    }
    let r = x.rank();
    let mut parts = Vec::with_capacity(acts.len());
    for (d, a) in acts.iter().enumerate() {
        let mut st = vec![0i64; r];
        let mut lim: Vec<i64> = x.shape().iter().map(|&v| v as i64).collect();
        st[0] = d as i64;
        lim[0] = d as i64 + 1;
        let part = cx.e.slice(x, &st, &lim, &vec![1; r]);
        parts.push(activate_one(cx, node, &a[k], &part)?);
    }
    let refs: Vec<&T> = parts.iter().collect();
    Ok(cx.e.concat(&refs, 0))
}

fn activate_one(cx: &mut Cx<'_>, node: &Node, a: &Act, x: &T) -> Result<T, LowerError> {
    match a.name {
        "Affine" => {
            let al = cx.e.like(x, a.alpha.unwrap_or(1.0));
            let be = cx.e.like(x, a.beta.unwrap_or(0.0));
            let m = cx.e.bin("multiply", x, &al);
            Ok(cx.e.bin("add", &m, &be))
        }
        "ScaledTanh" => {
            let al = cx.e.like(x, a.alpha.unwrap_or(1.0));
            let be = cx.e.like(x, a.beta.unwrap_or(1.0));
            let m = cx.e.bin("multiply", x, &be);
            let t = cx.e.un("tanh", &m);
            Ok(cx.e.bin("multiply", &t, &al))
        }
        name => emit_unary_with(cx, node, name, x, a.alpha, a.beta),
    }
}

/// Static parts of one recurrent node.
struct Setup {
    dirs: u64,
    seq: u64,
    batch: u64,
    hidden: u64,
    /// Direction indices that run backwards in time.
    reversed: Vec<usize>,
    layout: i64,
    clip: Option<f64>,
    acts: Vec<Vec<Act>>,
}

fn setup(cx: &Cx<'_>, node: &Node, kind: Kind) -> Result<Setup, LowerError> {
    let xt = cx.in_ty(node, 0)?;
    let wt = cx.in_ty(node, 1)?;
    let rt = cx.in_ty(node, 2)?;
    if xt.rank() != 3 || wt.rank() != 3 || rt.rank() != 3 {
        return Err(cx.invalid(
            node,
            format!("X {:?}, W {:?} and R {:?} must have rank 3", xt.shape, wt.shape, rt.shape),
        ));
    }
    if !xt.dt.is_float() {
        return Err(cx.invalid(node, format!("X has element type {}, not a float type", xt.dt)));
    }
    let layout = Cx::ai(node, "layout", 0);
    let (seq, batch) = match layout {
        0 => (xt.shape[0], xt.shape[1]),
        1 => (xt.shape[1], xt.shape[0]),
        l => return Err(cx.invalid(node, format!("layout {l} is neither 0 nor 1"))),
    };
    let direction = Cx::astr(node, "direction").unwrap_or_else(|| "forward".to_owned());
    let (dirs, reversed) = match direction.as_str() {
        "forward" => (1, vec![]),
        "reverse" => (1, vec![0]),
        "bidirectional" => (2, vec![1]),
        d => {
            return Err(cx.invalid(
                node,
                format!("direction `{d}` is not forward, reverse or bidirectional"),
            ));
        }
    };
    let hidden = rt.shape[2];
    if let Some(h) = node.attr("hidden_size").and_then(Attr::as_int)
        && u64::try_from(h).ok() != Some(hidden)
    {
        return Err(cx.invalid(node, format!("hidden_size {h} but R has shape {:?}", rt.shape)));
    }
    let g = kind.gates();
    if wt.shape != [dirs, g * hidden, xt.shape[2]] || rt.shape != [dirs, g * hidden, hidden] {
        return Err(cx.invalid(
            node,
            format!(
                "W {:?} / R {:?} do not fit {dirs} direction(s), {g} gate(s), hidden size {hidden}, input size {}",
                wt.shape, rt.shape, xt.shape[2]
            ),
        ));
    }
    if seq == 0 {
        return Err(cx.unsup(node, "an empty sequence (seq_length 0)"));
    }
    let clip = node.attr("clip").map(|_| Cx::af(node, "clip", 0.0));
    let acts = activations(cx, node, kind, dirs as usize)?;
    Ok(Setup { dirs, seq, batch, hidden, reversed, layout, clip, acts })
}

/// `x` (`[seq, batch, F]`) reversed in time; with `lens` (`[batch]` i32) each sequence is
/// reversed within its own length and the padding after it stays in place.
fn reverse_time(cx: &mut Cx<'_>, x: &T, lens: Option<&T>) -> T {
    let Some(l) = lens else { return cx.e.reverse(x, &[0]) };
    let (s, b, f) = (x.shape()[0], x.shape()[1], x.shape()[2]);
    let e = &mut cx.e;
    let t = e.iota(DType::I32, &[s, b], 0);
    let lb = e.broadcast_in_dim(l, &[1], &[s, b]);
    let one = e.splat(DType::I32, &[s, b], 1.0);
    let inside = e.compare("LT", &t, &lb);
    let last = e.bin("subtract", &lb, &one);
    let back = e.bin("subtract", &last, &t);
    let it = e.select(&inside, &back, &t);
    let ib = e.iota(DType::I32, &[s, b], 1);
    let it = e.reshape(&it, &[s, b, 1]);
    let ib = e.reshape(&ib, &[s, b, 1]);
    let idx = e.concat(&[&it, &ib], 2);
    let attr = gather_attr(&[2], &[0, 1], &[0, 1], 2, &[1, 1, f as i64]);
    e.op_full("gather", &[x, &idx], &attr, &Ty::new(x.dt(), vec![s, b, f]))
}

/// `ReverseSequence(input, sequence_lens)` with `batch_axis` / `time_axis`.
fn reverse_sequence<'m>(cx: &mut Cx<'m>, node: &'m Node) -> Result<(), LowerError> {
    let x = cx.inp(node, 0)?;
    let r = x.rank();
    if r < 2 {
        return Err(cx.invalid(node, format!("input has rank {r}; at least 2 needed")));
    }
    let ba = cx.axis(node, Cx::ai(node, "batch_axis", 1), r)?;
    let ta = cx.axis(node, Cx::ai(node, "time_axis", 0), r)?;
    if ba == ta {
        return Err(cx.invalid(node, "batch_axis and time_axis are the same"));
    }
    let lens = cx.inp(node, 1)?;
    if lens.shape() != [x.shape()[ba]] {
        return Err(cx.invalid(
            node,
            format!("sequence_lens has shape {:?} for batch {}", lens.shape(), x.shape()[ba]),
        ));
    }
    let lens = cx.e.convert(&lens, DType::I32);
    // [time, batch, rest...] -> [time, batch, F], reversed, and back.
    let mut perm = vec![ta, ba];
    perm.extend((0..r).filter(|&i| i != ta && i != ba));
    let xt = cx.e.transpose(&x, &perm);
    let moved = xt.shape().to_vec();
    let f: u64 = moved[2..].iter().product();
    let x3 = cx.e.reshape(&xt, &[moved[0], moved[1], f]);
    let y3 = reverse_time(cx, &x3, Some(&lens));
    let yt = cx.e.reshape(&y3, &moved);
    let mut inv = vec![0; r];
    for (i, &p) in perm.iter().enumerate() {
        inv[p] = i;
    }
    let y = cx.e.transpose(&yt, &inv);
    cx.set(node, 0, y);
    Ok(())
}

/// `x[.., k·H .. (k+1)·H]` along the last axis.
fn part(cx: &mut Cx<'_>, x: &T, k: u64, h: u64) -> T {
    let r = x.rank();
    let mut st = vec![0i64; r];
    let mut lim: Vec<i64> = x.shape().iter().map(|&v| v as i64).collect();
    st[r - 1] = (k * h) as i64;
    lim[r - 1] = ((k + 1) * h) as i64;
    cx.e.slice(x, &st, &lim, &vec![1; r])
}

fn clip(cx: &mut Cx<'_>, s: &Setup, x: &T) -> T {
    match s.clip {
        Some(c) => {
            let lo = cx.e.like(x, -c);
            let hi = cx.e.like(x, c);
            cx.e.ew("clamp", &[&lo, x, &hi], x.dt())
        }
        None => x.clone(),
    }
}

/// `[D, n]` → `[D, batch, n]`.
fn per_batch(cx: &mut Cx<'_>, v: &T, batch: u64) -> T {
    let sh = v.shape();
    cx.e.broadcast_in_dim(v, &[0, 2], &[sh[0], batch, sh[1]])
}

/// Sequence lengths needing masks (`[batch]` i32), or `None` when every sequence is full.
fn seq_lens(cx: &mut Cx<'_>, node: &Node, s: &Setup) -> Result<Option<T>, LowerError> {
    if !cx.has(node, 4) {
        return Ok(None);
    }
    if let Ok(h) = cx.need_host(node, 4, "sequence_lens") {
        let v = h.as_i64();
        if v.len() as u64 != s.batch {
            return Err(cx.invalid(
                node,
                format!("sequence_lens has {} entries for batch {}", v.len(), s.batch),
            ));
        }
        if let Some(bad) = v.iter().find(|&&l| l < 0 || l as u64 > s.seq) {
            return Err(cx.invalid(node, format!("sequence length {bad} outside 0..={}", s.seq)));
        }
        if v.iter().all(|&l| l as u64 == s.seq) {
            return Ok(None);
        }
    }
    let l = cx.inp(node, 4)?;
    if l.shape() != [s.batch] {
        return Err(
            cx.invalid(node, format!("sequence_lens has shape {:?}, not [{}]", l.shape(), s.batch))
        );
    }
    Ok(Some(cx.e.convert(&l, DType::I32)))
}

/// An optional initial state (`initial_h` / `initial_c`) as `[D, batch, H]`, zeros if absent.
fn initial(cx: &mut Cx<'_>, node: &Node, i: usize, s: &Setup, dt: DType) -> Result<T, LowerError> {
    let want = [s.dirs, s.batch, s.hidden];
    let Some(v) = cx.opt_inp(node, i)? else {
        return Ok(cx.e.splat(dt, &want, 0.0));
    };
    if v.rank() != 3 {
        return Err(
            cx.invalid(node, format!("initial state {i} has shape {:?}, not rank 3", v.shape()))
        );
    }
    let v = if s.layout == 1 { cx.e.transpose(&v, &[1, 0, 2]) } else { v };
    if v.shape() != want {
        return Err(cx.invalid(
            node,
            format!(
                "initial state {i} has shape {:?}, expected {want:?} (layout 0 order)",
                v.shape()
            ),
        ));
    }
    Ok(cx.e.convert(&v, dt))
}

fn recurrent(cx: &mut Cx<'_>, node: &Node, kind: Kind) -> Result<(), LowerError> {
    let s = setup(cx, node, kind)?;
    let (d, sq, b, h, g) = (s.dirs, s.seq, s.batch, s.hidden, kind.gates());
    let x = cx.inp(node, 0)?;
    let x = if s.layout == 1 { cx.e.transpose(&x, &[1, 0, 2]) } else { x };
    let dt = x.dt();
    let w = cx.inp(node, 1)?;
    let r = cx.inp(node, 2)?;
    let lens = seq_lens(cx, node, &s)?;
    let h0 = initial(cx, node, 5, &s, dt)?;
    let c0 = if kind == Kind::Lstm { Some(initial(cx, node, 6, &s, dt)?) } else { None };
    let peep = if kind == Kind::Lstm { cx.opt_inp(node, 7)? } else { None };
    if let Some(p) = &peep
        && p.shape() != [d, 3 * h]
    {
        return Err(
            cx.invalid(node, format!("P has shape {:?}, expected [{d}, {}]", p.shape(), 3 * h))
        );
    }
    let bias = cx.opt_inp(node, 3)?;
    if let Some(bv) = &bias
        && bv.shape() != [d, 2 * g * h]
    {
        return Err(cx.invalid(
            node,
            format!("B has shape {:?}, expected [{d}, {}]", bv.shape(), 2 * g * h),
        ));
    }
    let lbr = kind == Kind::Gru && Cx::ai(node, "linear_before_reset", 0) != 0;
    let input_forget = kind == Kind::Lstm && Cx::ai(node, "input_forget", 0) != 0;

    // Input projection of every step and direction: [D, seq, batch, G·H].
    let input_size = x.shape()[2];
    let mut xs = Vec::with_capacity(d as usize);
    for dir in 0..d as usize {
        let xd =
            if s.reversed.contains(&dir) { reverse_time(cx, &x, lens.as_ref()) } else { x.clone() };
        xs.push(cx.e.reshape(&xd, &[1, sq, b, input_size]));
    }
    let refs: Vec<&T> = xs.iter().collect();
    let xd = cx.e.concat(&refs, 0);
    let mut xw = dot(cx, &xd, &w, (&[0], &[0]), (&[3], &[2]));
    // Biases outside the recurrence fold into the projection; GRU's Rbh with
    // linear_before_reset stays inside (it is scaled by r).
    let mut rbh = None;
    if let Some(bv) = &bias {
        let wb = part(cx, bv, 0, g * h);
        let rb = part(cx, bv, 1, g * h);
        let sum = if lbr {
            let wzr = part(cx, &wb, 0, 2 * h);
            let rzr = part(cx, &rb, 0, 2 * h);
            let zr = cx.e.bin("add", &wzr, &rzr);
            let wh = part(cx, &wb, 2, h);
            let rh = part(cx, &rb, 2, h);
            rbh = Some(per_batch(cx, &rh, b));
            cx.e.concat(&[&zr, &wh], 1)
        } else {
            cx.e.bin("add", &wb, &rb)
        };
        let sum = cx.e.broadcast_in_dim(&sum, &[0, 3], &[d, sq, b, g * h]);
        xw = cx.e.bin("add", &xw, &sum);
    }
    let peeps = match &peep {
        Some(p) => {
            let mut v = Vec::with_capacity(3);
            for k in 0..3 {
                let pk = part(cx, p, k, h);
                v.push(per_batch(cx, &pk, b));
            }
            Some(v)
        }
        None => None,
    };
    // GRU without linear_before_reset multiplies r into H before R_h: split R.
    let (r_main, r_h) = if kind == Kind::Gru && !lbr {
        let zr = cx.e.slice(&r, &[0, 0, 0], &[d as i64, (2 * h) as i64, h as i64], &[1, 1, 1]);
        let rh = cx.e.slice(
            &r,
            &[0, (2 * h) as i64, 0],
            &[d as i64, (3 * h) as i64, h as i64],
            &[1, 1, 1],
        );
        (zr, Some(rh))
    } else {
        (r.clone(), None)
    };
    let state = [d, b, h];
    let lens_b = lens.as_ref().map(|l| cx.e.broadcast_in_dim(l, &[1], &state));
    let need_y = cx.out_id(node, 0).is_some();

    // Loop-carried: step, H, (C), (Y).
    let t0 = cx.e.scalar(DType::I32, 0.0);
    let mut init = vec![t0, h0];
    init.extend(c0);
    if need_y {
        init.push(cx.e.splat(dt, &[sq, d, b, h], 0.0));
    }
    let tys: Vec<Ty> = init.iter().map(|t| t.ty.clone()).collect();
    let init_refs: Vec<&T> = init.iter().collect();
    let wr = cx.e.open_regions("while", &init_refs, init.len());
    let a = cx.e.block(&tys);
    let n = cx.e.scalar(DType::I32, sq as f64);
    let more = cx.e.compare("LT", &a[0], &n);
    cx.e.end_region(&[&more]);
    cx.e.next_region();
    let a = cx.e.block(&tys);
    let (t, hp) = (&a[0], &a[1]);
    let cp = (kind == Kind::Lstm).then(|| a[2].clone());
    let zero = cx.e.scalar(DType::I32, 0.0);
    let xt = cx.e.dynamic_slice(&xw, &[&zero, t, &zero, &zero], &[d, 1, b, g * h]);
    let xt = cx.e.reshape(&xt, &[d, b, g * h]);
    let hr = dot(cx, hp, &r_main, (&[0], &[0]), (&[2], &[2]));
    let (h_new, c_new) = match kind {
        Kind::Rnn => {
            let z = cx.e.bin("add", &xt, &hr);
            let z = clip(cx, &s, &z);
            (activate(cx, node, &s.acts, 0, &z)?, None)
        }
        Kind::Gru => {
            let xz = part(cx, &xt, 0, h);
            let xr = part(cx, &xt, 1, h);
            let xh = part(cx, &xt, 2, h);
            let hz = part(cx, &hr, 0, h);
            let hrr = part(cx, &hr, 1, h);
            let zs = cx.e.bin("add", &xz, &hz);
            let zs = clip(cx, &s, &zs);
            let z = activate(cx, node, &s.acts, 0, &zs)?;
            let rs = cx.e.bin("add", &xr, &hrr);
            let rs = clip(cx, &s, &rs);
            let rg = activate(cx, node, &s.acts, 0, &rs)?;
            let inner = match &r_h {
                Some(rh) => {
                    let rhp = cx.e.bin("multiply", &rg, hp);
                    dot(cx, &rhp, rh, (&[0], &[0]), (&[2], &[2]))
                }
                None => {
                    let hh = part(cx, &hr, 2, h);
                    let hh = match &rbh {
                        Some(bb) => cx.e.bin("add", &hh, bb),
                        None => hh,
                    };
                    cx.e.bin("multiply", &rg, &hh)
                }
            };
            let hs = cx.e.bin("add", &xh, &inner);
            let hs = clip(cx, &s, &hs);
            let ht = activate(cx, node, &s.acts, 1, &hs)?;
            let one = cx.e.like(&z, 1.0);
            let omz = cx.e.bin("subtract", &one, &z);
            let l = cx.e.bin("multiply", &omz, &ht);
            let rr = cx.e.bin("multiply", &z, hp);
            (cx.e.bin("add", &l, &rr), None)
        }
        Kind::Lstm => {
            let cp = cp.clone().unwrap_or_else(|| unreachable!("LSTM carries C"));
            let z = cx.e.bin("add", &xt, &hr);
            let mut gi = part(cx, &z, 0, h);
            let mut go = part(cx, &z, 1, h);
            let mut gf = part(cx, &z, 2, h);
            let gc = part(cx, &z, 3, h);
            if let Some(p) = &peeps {
                let pi = cx.e.bin("multiply", &p[0], &cp);
                gi = cx.e.bin("add", &gi, &pi);
                let pf = cx.e.bin("multiply", &p[2], &cp);
                gf = cx.e.bin("add", &gf, &pf);
            }
            let gi = clip(cx, &s, &gi);
            let i = activate(cx, node, &s.acts, 0, &gi)?;
            let f = if input_forget {
                let one = cx.e.like(&i, 1.0);
                cx.e.bin("subtract", &one, &i)
            } else {
                let gf = clip(cx, &s, &gf);
                activate(cx, node, &s.acts, 0, &gf)?
            };
            let gc = clip(cx, &s, &gc);
            let c = activate(cx, node, &s.acts, 1, &gc)?;
            let fc = cx.e.bin("multiply", &f, &cp);
            let ic = cx.e.bin("multiply", &i, &c);
            let c_new = cx.e.bin("add", &fc, &ic);
            if let Some(p) = &peeps {
                let po = cx.e.bin("multiply", &p[1], &c_new);
                go = cx.e.bin("add", &go, &po);
            }
            let go = clip(cx, &s, &go);
            let o = activate(cx, node, &s.acts, 0, &go)?;
            let hc = activate(cx, node, &s.acts, 2, &c_new)?;
            (cx.e.bin("multiply", &o, &hc), Some(c_new))
        }
    };
    // Past a sequence's end its state is held and its output is zero.
    let (h_next, c_next, y) = match &lens_b {
        Some(lb) => {
            let tb = cx.e.broadcast_in_dim(t, &[], &state);
            let live = cx.e.compare("LT", &tb, lb);
            let hn = cx.e.select(&live, &h_new, hp);
            let cn = match (&c_new, &cp) {
                (Some(cn), Some(cp)) => Some(cx.e.select(&live, cn, cp)),
                _ => None,
            };
            let z = cx.e.like(&h_new, 0.0);
            let y = cx.e.select(&live, &h_new, &z);
            (hn, cn, y)
        }
        None => (h_new.clone(), c_new, h_new),
    };
    let one = cx.e.scalar(DType::I32, 1.0);
    let t_next = cx.e.bin("add", t, &one);
    let mut outs = vec![t_next, h_next];
    outs.extend(c_next);
    if need_y {
        let yp = &a[a.len() - 1];
        let y4 = cx.e.reshape(&y, &[1, d, b, h]);
        outs.push(cx.e.dynamic_update_slice(yp, &y4, &[t, &zero, &zero, &zero]));
    }
    let out_refs: Vec<&T> = outs.iter().collect();
    cx.e.end_region(&out_refs);
    let res = cx.e.close_regions(&wr, &init_refs, &tys);

    let mut yh = res[1].clone();
    let mut yc = (kind == Kind::Lstm).then(|| res[2].clone());
    if let Some(lb) = &lens_b {
        // onnxruntime gives zero final states to empty sequences.
        let z = cx.e.splat(DType::I32, &state, 0.0);
        let nonempty = cx.e.compare("GT", lb, &z);
        let zh = cx.e.like(&yh, 0.0);
        yh = cx.e.select(&nonempty, &yh, &zh);
        yc = yc.map(|c| cx.e.select(&nonempty, &c, &zh));
    }
    if need_y {
        let mut y = res[res.len() - 1].clone();
        if !s.reversed.is_empty() {
            let mut parts = Vec::with_capacity(d as usize);
            for dir in 0..d as usize {
                let yd = cx.e.slice(
                    &y,
                    &[0, dir as i64, 0, 0],
                    &[sq as i64, dir as i64 + 1, b as i64, h as i64],
                    &[1; 4],
                );
                if s.reversed.contains(&dir) {
                    let y3 = cx.e.reshape(&yd, &[sq, b, h]);
                    let back = reverse_time(cx, &y3, lens.as_ref());
                    parts.push(cx.e.reshape(&back, &[sq, 1, b, h]));
                } else {
                    parts.push(yd);
                }
            }
            let refs: Vec<&T> = parts.iter().collect();
            y = cx.e.concat(&refs, 1);
        }
        if s.layout == 1 {
            y = cx.e.transpose(&y, &[2, 0, 1, 3]);
        }
        cx.set(node, 0, y);
    }
    if s.layout == 1 {
        yh = cx.e.transpose(&yh, &[1, 0, 2]);
        yc = yc.map(|c| cx.e.transpose(&c, &[1, 0, 2]));
    }
    cx.set(node, 1, yh);
    if let Some(c) = yc {
        cx.set(node, 2, c);
    }
    Ok(())
}
