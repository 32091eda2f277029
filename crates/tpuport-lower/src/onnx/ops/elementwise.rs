//! Elementwise ops: unary math, binary arithmetic with numpy broadcasting, comparisons, logic,
//! Where, Clip, Cast, activation functions.

use tpuport_model::{DType, Node};

use super::{Rule, rule};
use crate::LowerError;
use crate::onnx::cx::Cx;
use crate::onnx::emit::{T, max_of, min_of};
use crate::onnx::host::{HOST_MAX, broadcast_shapes, eval};

pub(crate) const RULES: &[Rule] = &[
    rule("Add", binary),
    rule("Sub", binary),
    rule("Mul", binary),
    rule("Div", binary),
    rule("Pow", binary),
    rule("Mod", binary),
    rule("Max", variadic),
    rule("Min", variadic),
    rule("Sum", variadic),
    rule("Mean", variadic),
    rule("Equal", binary),
    rule("Less", binary),
    rule("Greater", binary),
    rule("LessOrEqual", binary),
    rule("GreaterOrEqual", binary),
    rule("And", binary),
    rule("Or", binary),
    rule("Xor", binary),
    rule("BitwiseAnd", binary),
    rule("BitwiseOr", binary),
    rule("BitwiseXor", binary),
    rule("BitShift", binary),
    rule("PRelu", binary),
    rule("Not", unary),
    rule("BitwiseNot", unary),
    rule("Abs", unary),
    rule("Neg", unary),
    rule("Exp", unary),
    rule("Log", unary),
    rule("Sqrt", unary),
    rule("Reciprocal", unary),
    rule("Floor", unary),
    rule("Ceil", unary),
    rule("Round", unary),
    rule("Sign", unary),
    rule("Sin", unary),
    rule("Cos", unary),
    rule("Tan", unary),
    rule("Asin", unary),
    rule("Acos", unary),
    rule("Atan", unary),
    rule("Sinh", unary),
    rule("Cosh", unary),
    rule("Asinh", unary),
    rule("Acosh", unary),
    rule("Atanh", unary),
    rule("Tanh", unary),
    rule("Sigmoid", unary),
    rule("Relu", unary),
    rule("Erf", unary),
    rule("IsNaN", unary),
    rule("IsInf", unary),
    rule("LeakyRelu", unary),
    rule("Elu", unary),
    rule("Selu", unary),
    rule("Celu", unary),
    rule("HardSigmoid", unary),
    rule("HardSwish", unary),
    rule("Softplus", unary),
    rule("Softsign", unary),
    rule("ThresholdedRelu", unary),
    rule("Mish", unary),
    rule("Gelu", unary),
    rule("Swish", unary),
    rule("Shrink", unary),
    rule("Identity", unary),
    rule("Dropout", unary),
    rule("Cast", cast),
    rule("CastLike", cast),
    rule("Where", where_),
    rule("Clip", clip),
    rule("QuantizeLinear", quantize),
    rule("DequantizeLinear", dequantize),
    rule("BitCast", bitcast),
    rule("SwiGLU", swiglu),
];

fn cmp_dir(op: &str) -> Option<&'static str> {
    Some(match op {
        "Equal" => "EQ",
        "Less" => "LT",
        "Greater" => "GT",
        "LessOrEqual" => "LE",
        "GreaterOrEqual" => "GE",
        _ => return None,
    })
}

/// Broadcasts two operands to their common shape.
pub(crate) fn bcast2(cx: &mut Cx<'_>, node: &Node, a: &T, b: &T) -> Result<(T, T), LowerError> {
    let shape = broadcast_shapes(a.shape(), b.shape()).ok_or_else(|| {
        cx.invalid(node, format!("shapes {:?} and {:?} do not broadcast", a.shape(), b.shape()))
    })?;
    Ok((cx.e.bcast_to(a, &shape), cx.e.bcast_to(b, &shape)))
}

/// Emits a broadcasting binary op of `op` (ONNX name) on two SSA values.
pub(crate) fn emit_bin(
    cx: &mut Cx<'_>,
    node: &Node,
    op: &str,
    a: &T,
    b: &T,
) -> Result<T, LowerError> {
    let b = if matches!(op, "Pow" | "BitShift") && b.dt() != a.dt() {
        cx.e.convert(b, a.dt())
    } else {
        b.clone()
    };
    let (a, b) = bcast2(cx, node, a, &b)?;
    let e = &mut cx.e;
    if let Some(d) = cmp_dir(op) {
        return Ok(e.compare(d, &a, &b));
    }
    Ok(match op {
        "Add" | "Sum" => e.bin("add", &a, &b),
        "Sub" => e.bin("subtract", &a, &b),
        "Mul" => e.bin("multiply", &a, &b),
        "Div" => e.bin("divide", &a, &b),
        "Pow" => e.bin("power", &a, &b),
        "Max" => e.bin("maximum", &a, &b),
        "Min" => e.bin("minimum", &a, &b),
        "And" | "BitwiseAnd" => e.bin("and", &a, &b),
        "Or" | "BitwiseOr" => e.bin("or", &a, &b),
        "Xor" | "BitwiseXor" => e.bin("xor", &a, &b),
        "BitShift" => {
            let dir = Cx::astr(node, "direction").unwrap_or_default();
            if dir == "LEFT" {
                e.bin("shift_left", &a, &b)
            } else if matches!(a.dt(), DType::I8 | DType::I16 | DType::I32 | DType::I64) {
                e.bin("shift_right_arithmetic", &a, &b)
            } else {
                e.bin("shift_right_logical", &a, &b)
            }
        }
        "Mod" => {
            let fmod = Cx::ai(node, "fmod", 0) == 1;
            let r = e.bin("remainder", &a, &b);
            if fmod {
                r
            } else {
                // Python-style: result takes the divisor's sign.
                let z = e.like(&r, 0.0);
                let nz = e.compare("NE", &r, &z);
                let rneg = e.compare("LT", &r, &z);
                let bneg = e.compare("LT", &b, &z);
                let diff = e.compare("NE", &rneg, &bneg);
                let fix = e.bin("and", &nz, &diff);
                let adj = e.bin("add", &r, &b);
                e.select(&fix, &adj, &r)
            }
        }
        "PRelu" => {
            let z = e.like(&a, 0.0);
            let neg = e.compare("LT", &a, &z);
            let m = e.bin("multiply", &a, &b);
            e.select(&neg, &m, &a)
        }
        _ => return Err(cx.unsup(node, "binary op")),
    })
}

fn binary(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let op = node.op.as_str();
    if let (Some(a), Some(b)) = (cx.host(node, 0), cx.host(node, 1))
        && let Some(h) = eval::binary(op, &a, &b, Cx::ai(node, "fmod", 0) == 1, HOST_MAX)
    {
        cx.set_host(node, 0, h);
        return Ok(());
    }
    let a = cx.inp(node, 0)?;
    let b = cx.inp(node, 1)?;
    let r = emit_bin(cx, node, op, &a, &b)?;
    cx.set(node, 0, r);
    Ok(())
}

fn variadic(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let n = cx.n_in(node);
    if n == 0 {
        return Err(cx.invalid(node, "needs at least one input"));
    }
    if cx.all_host(node) {
        let mut acc = cx.need_host(node, 0, "operand")?;
        let mut ok = true;
        for i in 1..n {
            let b = cx.need_host(node, i, "operand")?;
            match eval::binary(&node.op, &acc, &b, false, HOST_MAX) {
                Some(h) => acc = h,
                None => ok = false,
            }
        }
        if ok && node.op != "Mean" {
            cx.set_host(node, 0, acc);
            return Ok(());
        }
    }
    let mut acc = cx.inp(node, 0)?;
    for i in 1..n {
        let b = cx.inp(node, i)?;
        acc = emit_bin(cx, node, if node.op == "Mean" { "Add" } else { &node.op }, &acc, &b)?;
    }
    if node.op == "Mean" {
        let d = cx.e.like(&acc, n as f64);
        acc = cx.e.bin("divide", &acc, &d);
    }
    cx.set(node, 0, acc);
    Ok(())
}

fn unary(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let op = node.op.as_str();
    if op == "Dropout" {
        if cx.has(node, 2)
            && cx
                .need_host(node, 2, "training_mode")
                .map_or(true, |tm| tm.as_i64().first().copied().unwrap_or(0) != 0)
        {
            return Err(cx.unsup(node, "training_mode=true (random dropout)"));
        }
        if cx.out_id(node, 1).is_some() {
            let ty = cx.in_ty(node, 0)?;
            let m = cx.e.splat(DType::Bool, &ty.shape, 1.0);
            cx.set(node, 1, m);
        }
    }
    if let Some(h) = cx.host(node, 0)
        && let Some(r) = eval::unary(op, &h)
    {
        cx.set_host(node, 0, r);
        return Ok(());
    }
    let x = cx.inp(node, 0)?;
    let r = emit_unary(cx, node, op, &x)?;
    cx.set(node, 0, r);
    Ok(())
}

fn chlo(cx: &mut Cx<'_>, name: &str, x: &T) -> T {
    cx.e.un(&format!("chlo.{name}"), x)
}

pub(crate) fn emit_unary(cx: &mut Cx<'_>, node: &Node, op: &str, x: &T) -> Result<T, LowerError> {
    emit_unary_with(cx, node, op, x, None, None)
}

/// [`emit_unary`] with `alpha` / `beta` given instead of read from the node's attributes of
/// those names (the recurrent ops pass their `activation_alpha` / `activation_beta` entries).
pub(crate) fn emit_unary_with(
    cx: &mut Cx<'_>,
    node: &Node,
    op: &str,
    x: &T,
    alpha_given: Option<f64>,
    beta_given: Option<f64>,
) -> Result<T, LowerError> {
    let alpha = |d: f64| alpha_given.unwrap_or_else(|| Cx::af(node, "alpha", d));
    let beta = |d: f64| beta_given.unwrap_or_else(|| Cx::af(node, "beta", d));
    let e = &mut cx.e;
    Ok(match op {
        "Identity" | "Dropout" => x.clone(),
        "Abs" => e.un("abs", x),
        "Neg" => e.un("negate", x),
        "Exp" => e.un("exponential", x),
        "Log" => e.un("log", x),
        "Sqrt" => e.un("sqrt", x),
        "Floor" => e.un("floor", x),
        "Ceil" => e.un("ceil", x),
        "Round" => e.un("round_nearest_even", x),
        "Sign" => e.un("sign", x),
        "Sin" => e.un("sine", x),
        "Cos" => e.un("cosine", x),
        "Tanh" => e.un("tanh", x),
        "Sigmoid" => e.un("logistic", x),
        "Not" | "BitwiseNot" => e.un("not", x),
        "Tan" => chlo(cx, "tan", x),
        "Asin" => chlo(cx, "asin", x),
        "Acos" => chlo(cx, "acos", x),
        "Atan" => chlo(cx, "atan", x),
        "Sinh" => chlo(cx, "sinh", x),
        "Cosh" => chlo(cx, "cosh", x),
        "Asinh" => chlo(cx, "asinh", x),
        "Acosh" => chlo(cx, "acosh", x),
        "Atanh" => chlo(cx, "atanh", x),
        "Erf" => {
            if x.dt() == DType::F64
                || x.dt() == DType::F32
                || x.dt() == DType::BF16
                || x.dt() == DType::F16
            {
                chlo(cx, "erf", x)
            } else {
                return Err(cx.unsup(node, format!("Erf on {}", x.dt())));
            }
        }
        "Reciprocal" => {
            let one = e.like(x, 1.0);
            e.bin("divide", &one, x)
        }
        "Relu" => {
            let z = e.like(x, 0.0);
            e.bin("maximum", x, &z)
        }
        "IsNaN" => e.compare("NE", x, x),
        "IsInf" => {
            let pos = Cx::ai(node, "detect_positive", 1) == 1;
            let neg = Cx::ai(node, "detect_negative", 1) == 1;
            let pinf = e.like(x, f64::INFINITY);
            let ninf = e.like(x, f64::NEG_INFINITY);
            let p = e.compare("EQ", x, &pinf);
            let n = e.compare("EQ", x, &ninf);
            match (pos, neg) {
                (true, true) => e.bin("or", &p, &n),
                (true, false) => p,
                (false, true) => n,
                (false, false) => e.bin("and", &p, &n),
            }
        }
        "LeakyRelu" => {
            let a = e.like(x, alpha(0.01));
            let z = e.like(x, 0.0);
            let m = e.bin("multiply", x, &a);
            let neg = e.compare("LT", x, &z);
            e.select(&neg, &m, x)
        }
        "ThresholdedRelu" => {
            let a = e.like(x, alpha(1.0));
            let z = e.like(x, 0.0);
            let gt = e.compare("GT", x, &a);
            e.select(&gt, x, &z)
        }
        "Elu" | "Celu" | "Selu" => {
            let (a, g) = match op {
                "Elu" => (alpha(1.0), 1.0),
                "Celu" => (alpha(1.0), 1.0),
                _ => {
                    (alpha(1.673_263_192_176_818_8), Cx::af(node, "gamma", 1.050_700_987_355_480_5))
                }
            };
            let z = e.like(x, 0.0);
            let av = e.like(x, a);
            let neg = e.compare("LT", x, &z);
            let arg = if op == "Celu" { e.bin("divide", x, &av) } else { x.clone() };
            let em1 = e.un("exponential_minus_one", &arg);
            let n = e.bin("multiply", &av, &em1);
            let r = e.select(&neg, &n, x);
            if op == "Selu" {
                let gv = e.like(x, g);
                e.bin("multiply", &r, &gv)
            } else {
                r
            }
        }
        "HardSigmoid" | "HardSwish" => {
            let (a, b) = if op == "HardSwish" { (1.0 / 6.0, 0.5) } else { (alpha(0.2), beta(0.5)) };
            let av = e.like(x, a);
            let bv = e.like(x, b);
            let z = e.like(x, 0.0);
            let one = e.like(x, 1.0);
            let m = e.bin("multiply", x, &av);
            let s = e.bin("add", &m, &bv);
            let c = e.ew("clamp", &[&z, &s, &one], x.dt());
            if op == "HardSwish" { e.bin("multiply", x, &c) } else { c }
        }
        "Softplus" => {
            // log(1 + exp(x)), computed stably as max(x,0) + log1p(exp(-|x|)).
            let z = e.like(x, 0.0);
            let mx = e.bin("maximum", x, &z);
            let ab = e.un("abs", x);
            let na = e.un("negate", &ab);
            let ex = e.un("exponential", &na);
            let l = e.un("log_plus_one", &ex);
            e.bin("add", &mx, &l)
        }
        "Swish" => {
            let a = e.like(x, alpha(1.0));
            let ax = e.bin("multiply", x, &a);
            let s = e.un("logistic", &ax);
            e.bin("multiply", x, &s)
        }
        "Shrink" => {
            let l = Cx::af(node, "lambd", 0.5);
            let b = Cx::af(node, "bias", 0.0);
            let lv = e.like(x, l);
            let nl = e.like(x, -l);
            let bv = e.like(x, b);
            let z = e.like(x, 0.0);
            let lt = e.compare("LT", x, &nl);
            let gt = e.compare("GT", x, &lv);
            let xp = e.bin("add", x, &bv);
            let xm = e.bin("subtract", x, &bv);
            let r = e.select(&gt, &xm, &z);
            e.select(&lt, &xp, &r)
        }
        "Softsign" => {
            let one = e.like(x, 1.0);
            let ab = e.un("abs", x);
            let d = e.bin("add", &one, &ab);
            e.bin("divide", x, &d)
        }
        "Mish" => {
            let z = e.like(x, 0.0);
            let mx = e.bin("maximum", x, &z);
            let ab = e.un("abs", x);
            let na = e.un("negate", &ab);
            let ex = e.un("exponential", &na);
            let l = e.un("log_plus_one", &ex);
            let sp = e.bin("add", &mx, &l);
            let t = e.un("tanh", &sp);
            e.bin("multiply", x, &t)
        }
        "Gelu" => {
            let approx = Cx::astr(node, "approximate").unwrap_or_else(|| "none".to_owned());
            let half = e.like(x, 0.5);
            let one = e.like(x, 1.0);
            let inner = if approx == "tanh" {
                let c = e.like(x, (2.0 / std::f64::consts::PI).sqrt());
                let k = e.like(x, 0.044_715);
                let x2 = e.bin("multiply", x, x);
                let x3 = e.bin("multiply", &x2, x);
                let kx3 = e.bin("multiply", &k, &x3);
                let s = e.bin("add", x, &kx3);
                let cs = e.bin("multiply", &c, &s);
                e.un("tanh", &cs)
            } else {
                let r = e.like(x, std::f64::consts::FRAC_1_SQRT_2);
                let xs = e.bin("multiply", x, &r);
                chlo(cx, "erf", &xs)
            };
            let e = &mut cx.e;
            let p = e.bin("add", &one, &inner);
            let hx = e.bin("multiply", &half, x);
            e.bin("multiply", &hx, &p)
        }
        _ => return Err(cx.unsup(node, "unary op")),
    })
}

fn cast(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let to = if node.op == "CastLike" {
        cx.in_ty(node, 1)?.dt
    } else {
        let code = Cx::ai(node, "to", 0);
        tpuport_formats::onnx::dtype::from_onnx(code as i32)
            .ok_or_else(|| cx.unsup(node, format!("cast to ONNX element type {code}")))?
    };
    if to == DType::String {
        return Err(cx.unsup(node, "cast to string"));
    }
    let to = cx.cdt(to);
    if let Some(h) = cx.host(node, 0).and_then(|h| h.cast(to)) {
        cx.set_host(node, 0, h);
        return Ok(());
    }
    let x = cx.inp(node, 0)?;
    // float -> int truncates toward zero, as convert does. Casts to the 8-bit float types
    // saturate to the largest finite value unless `saturate=0`.
    let f8max = match to {
        DType::F8E4M3FN => Some(448.0),
        DType::F8E4M3FNUZ => Some(240.0),
        DType::F8E5M2 | DType::F8E5M2FNUZ => Some(57344.0),
        _ => None,
    };
    // f16 -> f8 goes through f32 (XLA:CPU's direct conversion mishandles f16 subnormals).
    let x = if f8max.is_some() && x.dt() == DType::F16 { cx.e.convert(&x, DType::F32) } else { x };
    let r = match f8max {
        Some(m) if x.dt().is_float() && Cx::ai(node, "saturate", 1) == 1 => {
            let lo = cx.e.like(&x, -m);
            let hi = cx.e.like(&x, m);
            let c = cx.e.ew("clamp", &[&lo, &x, &hi], x.dt());
            cx.e.convert(&c, to)
        }
        _ => cx.e.convert(&x, to),
    };
    cx.set(node, 0, r);
    Ok(())
}

fn where_(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    if let (Some(c), Some(a), Some(b)) = (cx.host(node, 0), cx.host(node, 1), cx.host(node, 2))
        && let Some(h) = eval::select(&c, &a, &b, HOST_MAX)
    {
        cx.set_host(node, 0, h);
        return Ok(());
    }
    let c = cx.inp(node, 0)?;
    let a = cx.inp(node, 1)?;
    let b = cx.inp(node, 2)?;
    let s = broadcast_shapes(c.shape(), a.shape())
        .and_then(|s| broadcast_shapes(&s, b.shape()))
        .ok_or_else(|| cx.invalid(node, "operands do not broadcast"))?;
    let c = cx.e.bcast_to(&c, &s);
    let a = cx.e.bcast_to(&a, &s);
    let b = cx.e.bcast_to(&b, &s);
    let r = cx.e.select(&c, &a, &b);
    cx.set(node, 0, r);
    Ok(())
}

fn clip(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let x = cx.inp(node, 0)?;
    let dt = x.dt();
    let (lo, hi) = if cx.opset < 11 {
        let lo = Cx::af(node, "min", min_of(dt));
        let hi = Cx::af(node, "max", max_of(dt));
        (Some(cx.e.scalar(dt, lo)), Some(cx.e.scalar(dt, hi)))
    } else {
        (cx.opt_inp(node, 1)?, cx.opt_inp(node, 2)?)
    };
    let mut r = x;
    if let Some(lo) = lo {
        let lo = cx.e.bcast_to(&lo, r.shape());
        r = cx.e.bin("maximum", &r, &lo);
    }
    if let Some(hi) = hi {
        let hi = cx.e.bcast_to(&hi, r.shape());
        r = cx.e.bin("minimum", &r, &hi);
    }
    cx.set(node, 0, r);
    Ok(())
}

/// Broadcasts a per-tensor or per-axis parameter to `shape`.
fn per_axis(cx: &mut Cx<'_>, node: &Node, p: &T, shape: &[u64]) -> Result<T, LowerError> {
    if p.rank() == 0 || p.ty.elements() == 1 && p.rank() <= 1 {
        let s = cx.e.reshape(p, &[]);
        return Ok(cx.e.broadcast_in_dim(&s, &[], shape));
    }
    if p.rank() != 1 {
        return Err(cx.unsup(node, "blocked quantization"));
    }
    let axis = cx.axis(node, Cx::ai(node, "axis", 1), shape.len())?;
    Ok(cx.e.broadcast_in_dim(p, &[axis], shape))
}

fn quantize(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let x = cx.inp(node, 0)?;
    let scale = cx.inp(node, 1)?;
    let zp = cx.opt_inp(node, 2)?;
    let out_dt = match &zp {
        Some(z) => z.dt(),
        None => match node.attr("output_dtype").and_then(tpuport_model::Attr::as_int) {
            Some(c) if c != 0 => {
                tpuport_formats::onnx::dtype::from_onnx(c as i32).unwrap_or(DType::U8)
            }
            _ => DType::U8,
        },
    };
    if !matches!(out_dt, DType::U8 | DType::I8 | DType::U16 | DType::I16 | DType::I32) {
        return Err(cx.unsup(node, format!("quantizing to {out_dt}")));
    }
    let sh = x.shape().to_vec();
    let xf = cx.e.convert(&x, DType::F32);
    let s = cx.e.convert(&scale, DType::F32);
    let s = per_axis(cx, node, &s, &sh)?;
    let q = cx.e.bin("divide", &xf, &s);
    let mut q = cx.e.un("round_nearest_even", &q);
    if let Some(z) = zp {
        let z = cx.e.convert(&z, DType::F32);
        let z = per_axis(cx, node, &z, &sh)?;
        q = cx.e.bin("add", &q, &z);
    }
    let lo = cx.e.like(&q, min_of(out_dt));
    let hi = cx.e.like(&q, max_of(out_dt));
    let q = cx.e.ew("clamp", &[&lo, &q, &hi], DType::F32);
    let y = cx.e.convert(&q, out_dt);
    cx.set(node, 0, y);
    Ok(())
}

fn dequantize(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let x = cx.inp(node, 0)?;
    let scale = cx.inp(node, 1)?;
    let zp = cx.opt_inp(node, 2)?;
    if !matches!(x.dt(), DType::U8 | DType::I8 | DType::U16 | DType::I16 | DType::I32) {
        return Err(cx.unsup(node, format!("dequantizing {}", x.dt())));
    }
    let sh = x.shape().to_vec();
    let mut xf = cx.e.convert(&x, DType::F32);
    if let Some(z) = zp {
        let z = cx.e.convert(&z, DType::F32);
        let z = per_axis(cx, node, &z, &sh)?;
        xf = cx.e.bin("subtract", &xf, &z);
    }
    let s = cx.e.convert(&scale, DType::F32);
    let s = per_axis(cx, node, &s, &sh)?;
    let y = cx.e.bin("multiply", &xf, &s);
    let y = cx.e.convert(&y, scale.dt());
    cx.set(node, 0, y);
    Ok(())
}

fn bitcast(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let x = cx.inp(node, 0)?;
    let code = Cx::ai(node, "to", 0);
    let to = tpuport_formats::onnx::dtype::from_onnx(code as i32)
        .ok_or_else(|| cx.unsup(node, format!("to={code}")))?;
    if to.bits() != x.dt().bits() || to == DType::Bool || x.dt() == DType::Bool {
        return Err(cx.unsup(node, format!("bitcast {} -> {to} (widths differ)", x.dt())));
    }
    let y = cx.e.ew("bitcast_convert", &[&x], to);
    cx.set(node, 0, y);
    Ok(())
}

fn swiglu(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let a = cx.inp(node, 0)?;
    let b = cx.inp(node, 1)?;
    if a.shape() != b.shape() {
        return Err(cx.invalid(node, "A and B must have the same shape"));
    }
    let al = cx.e.like(&a, Cx::af(node, "alpha", 1.0));
    let x = cx.e.bin("multiply", &a, &al);
    let s = cx.e.un("logistic", &x);
    let sw = cx.e.bin("multiply", &a, &s);
    let y = cx.e.bin("multiply", &sw, &b);
    cx.set(node, 0, y);
    Ok(())
}
