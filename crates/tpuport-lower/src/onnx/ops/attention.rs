//! Attention (opset 23+): 3-D or 4-D Q/K/V, past key/value cache, grouped-query heads,
//! scale, softcap, boolean or additive masks (padded to the key length), causal and
//! sliding-window masks, and the four `qk_matmul_output_mode`s. `nonpad_kv_seqlen` (a
//! data-dependent length) is not lowered.

use tpuport_model::{DType, Node};

use super::matmul::dot;
use super::reduction::{keep, reduce_t};
use super::{Rule, rule};
use crate::LowerError;
use crate::onnx::cx::Cx;
use crate::onnx::emit::T;

pub(crate) const RULES: &[Rule] = &[rule("Attention", attention), rule("RotaryEmbedding", rotary)];

fn to4(cx: &mut Cx<'_>, x: &T, heads: Option<i64>) -> Result<T, String> {
    if x.rank() == 4 {
        return Ok(x.clone());
    }
    let h = heads.ok_or("3-D inputs need q_num_heads and kv_num_heads")? as u64;
    let [b, s, hid] = [x.shape()[0], x.shape()[1], x.shape()[2]];
    let r = cx.e.reshape(x, &[b, s, h, hid / h]);
    Ok(cx.e.transpose(&r, &[0, 2, 1, 3]))
}

fn repeat_heads(cx: &mut Cx<'_>, k: &T, reps: u64) -> T {
    if reps == 1 {
        return k.clone();
    }
    let s = k.shape().to_vec();
    let b = cx.e.broadcast_in_dim(k, &[0, 1, 3, 4], &[s[0], s[1], reps, s[2], s[3]]);
    cx.e.reshape(&b, &[s[0], s[1] * reps, s[2], s[3]])
}

#[allow(clippy::too_many_lines)]
fn attention(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    if cx.has(node, 6) {
        return Err(cx.unsup(node, "nonpad_kv_seqlen (data-dependent key lengths)"));
    }
    let q0 = cx.inp(node, 0)?;
    let k0 = cx.inp(node, 1)?;
    let v0 = cx.inp(node, 2)?;
    let qh = node.attr("q_num_heads").and_then(tpuport_model::Attr::as_int);
    let kh = node.attr("kv_num_heads").and_then(tpuport_model::Attr::as_int);
    let q = to4(cx, &q0, qh).map_err(|m| cx.invalid(node, m))?;
    let mut k = to4(cx, &k0, kh).map_err(|m| cx.invalid(node, m))?;
    let mut v = to4(cx, &v0, kh).map_err(|m| cx.invalid(node, m))?;
    let mut past = 0u64;
    if let Some(pk) = cx.opt_inp(node, 4)? {
        past = pk.shape()[2];
        k = cx.e.concat(&[&pk, &k], 2);
    }
    if let Some(pv) = cx.opt_inp(node, 5)? {
        v = cx.e.concat(&[&pv, &v], 2);
    }
    cx.set(node, 1, k.clone());
    cx.set(node, 2, v.clone());
    let dt = q.dt();
    let (b, hq, sq, d) = (q.shape()[0], q.shape()[1], q.shape()[2], q.shape()[3]);
    let skv = k.shape()[2];
    let hk = k.shape()[1];
    if hk == 0 || hq % hk != 0 {
        return Err(
            cx.invalid(node, format!("{hq} query heads are not a multiple of {hk} key heads"))
        );
    }
    let k = repeat_heads(cx, &k, hq / hk);
    let v = repeat_heads(cx, &v, hq / hk);
    let scale = node
        .attr("scale")
        .and_then(tpuport_model::Attr::as_float)
        .unwrap_or(1.0 / (d as f64).sqrt());
    let s = scale.sqrt();
    let sv = cx.e.like(&q, s);
    let qs = cx.e.bin("multiply", &q, &sv);
    let skt = cx.e.like(&k, s);
    let ks = cx.e.bin("multiply", &k, &skt);
    let mut qk = dot(cx, &qs, &ks, (&[0, 1], &[0, 1]), (&[3], &[3]));
    let softcap = Cx::af(node, "softcap", 0.0);
    if softcap > 0.0 {
        let c = cx.e.like(&qk, softcap);
        let y = cx.e.bin("divide", &qk, &c);
        let t = cx.e.un("tanh", &y);
        qk = cx.e.bin("multiply", &t, &c);
    }
    let full = [b, hq, sq, skv];
    let ninf = f64::NEG_INFINITY;
    // Additive bias.
    let mut bias: Option<T> = None;
    if let Some(m) = cx.opt_inp(node, 3)? {
        let pad = skv as i64 - *m.shape().last().unwrap_or(&0) as i64;
        let m = if pad > 0 {
            let fill = cx.e.scalar(m.dt(), if m.dt() == DType::Bool { 0.0 } else { ninf });
            let mut hi = vec![0i64; m.rank()];
            *hi.last_mut().unwrap_or(&mut 0) = pad;
            super::shape::pad_const(cx, &m, &fill, &vec![0; m.rank()], &hi)
        } else {
            m
        };
        let m = if m.dt() == DType::Bool {
            let z = cx.e.like(&m, 0.0);
            let z = cx.e.convert(&z, dt);
            let zf = cx.e.splat(dt, m.shape(), 0.0);
            let nf = cx.e.splat(dt, m.shape(), ninf);
            let _ = z;
            cx.e.select(&m, &zf, &nf)
        } else {
            cx.e.convert(&m, dt)
        };
        bias = Some(cx.e.bcast_to(&m, &full));
    }
    let causal = Cx::ai(node, "is_causal", 0) == 1;
    let lw = Cx::ai(node, "left_window_size", -1);
    let rw = Cx::ai(node, "right_window_size", -1);
    if causal || lw >= 0 || rw >= 0 {
        // diff = (i + past) - j over [q, kv].
        let i = cx.e.iota(DType::I64, &[sq, skv], 0);
        let j = cx.e.iota(DType::I64, &[sq, skv], 1);
        let off = cx.e.like(&i, past as f64);
        let ip = cx.e.bin("add", &i, &off);
        let diff = cx.e.bin("subtract", &ip, &j);
        let zero = cx.e.like(&diff, 0.0);
        let mut allowed = cx.e.splat(DType::Bool, &[sq, skv], 1.0);
        if causal {
            let c = cx.e.compare("GE", &diff, &zero);
            allowed = cx.e.bin("and", &allowed, &c);
        }
        if lw >= 0 {
            let l = cx.e.like(&diff, lw as f64);
            let c = cx.e.compare("LE", &diff, &l);
            allowed = cx.e.bin("and", &allowed, &c);
        }
        if rw >= 0 {
            let nd = cx.e.un("negate", &diff);
            let r = cx.e.like(&diff, rw as f64);
            let c = cx.e.compare("LE", &nd, &r);
            allowed = cx.e.bin("and", &allowed, &c);
        }
        let zf = cx.e.splat(dt, &[sq, skv], 0.0);
        let nf = cx.e.splat(dt, &[sq, skv], ninf);
        let cm = cx.e.select(&allowed, &zf, &nf);
        let cm = cx.e.broadcast_in_dim(&cm, &[2, 3], &full);
        bias = Some(match bias {
            Some(bb) => cx.e.bin("add", &bb, &cm),
            None => cm,
        });
    }
    let qkb = match &bias {
        Some(bb) => cx.e.bin("add", &qk, bb),
        None => qk.clone(),
    };
    let mode = Cx::ai(node, "qk_matmul_output_mode", 0);
    let mut qk_out = if mode == 2 { qkb.clone() } else { qk.clone() };
    // Softmax (optionally in another precision), guarding fully masked rows.
    let sp = node.attr("softmax_precision").and_then(tpuport_model::Attr::as_int);
    let sdt = match sp {
        Some(c) => {
            tpuport_formats::onnx::dtype::from_onnx(c as i32).filter(|d| d.is_float()).unwrap_or(dt)
        }
        None => dt,
    };
    let x = cx.e.convert(&qkb, sdt);
    let all = [0usize, 1, 2, 3];
    let mx = reduce_t(cx, &x, &[3], "max");
    let mk = keep(cx, &mx, &full, &[3]);
    let ninf_t = cx.e.like(&mk, ninf);
    let masked = cx.e.compare("EQ", &mk, &ninf_t);
    let z = cx.e.like(&mk, 0.0);
    let safe = cx.e.select(&masked, &z, &mk);
    let sb = cx.e.broadcast_in_dim(&safe, &all, &full);
    let dx = cx.e.bin("subtract", &x, &sb);
    let ex = cx.e.un("exponential", &dx);
    let sum = reduce_t(cx, &ex, &[3], "sum");
    let sk = keep(cx, &sum, &full, &[3]);
    let z2 = cx.e.like(&sk, 0.0);
    let one = cx.e.like(&sk, 1.0);
    let is0 = cx.e.compare("EQ", &sk, &z2);
    let sk = cx.e.select(&is0, &one, &sk);
    let sumb = cx.e.broadcast_in_dim(&sk, &all, &full);
    let mut p = cx.e.bin("divide", &ex, &sumb);
    if let Some(bb) = &bias {
        let bm = reduce_t(cx, bb, &[3], "max");
        let bk = keep(cx, &bm, &full, &[3]);
        let ni = cx.e.like(&bk, ninf);
        let rowm = cx.e.compare("EQ", &bk, &ni);
        let rb = cx.e.broadcast_in_dim(&rowm, &all, &full);
        let zz = cx.e.splat(sdt, &full, 0.0);
        p = cx.e.select(&rb, &zz, &p);
    }
    if mode == 3 {
        qk_out = p.clone();
    }
    let p = cx.e.convert(&p, dt);
    let y = dot(cx, &p, &v, (&[0, 1], &[0, 1]), (&[3], &[2]));
    let y = if q0.rank() == 3 {
        let t = cx.e.transpose(&y, &[0, 2, 1, 3]);
        let dv = v.shape()[3];
        cx.e.reshape(&t, &[b, sq, hq * dv])
    } else {
        y
    };
    cx.set(node, 0, y);
    if cx.out_id(node, 3).is_some() {
        let o = cx.e.convert(&qk_out, dt);
        cx.set(node, 3, o);
    }
    Ok(())
}

fn rotary(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let x0 = cx.inp(node, 0)?;
    let cos = cx.inp(node, 1)?;
    let sin = cx.inp(node, 2)?;
    let pos = cx.opt_inp(node, 3)?;
    let x = match x0.rank() {
        4 => cx.e.transpose(&x0, &[0, 2, 1, 3]),
        3 => {
            let nh = Cx::ai(node, "num_heads", 0) as u64;
            if nh == 0 {
                return Err(cx.invalid(node, "3-D input needs num_heads"));
            }
            let s = x0.shape();
            cx.e.reshape(&x0, &[s[0], s[1], nh, s[2] / nh])
        }
        r => return Err(cx.invalid(node, format!("input rank {r}"))),
    };
    let sh = x.shape().to_vec();
    let d = sh[3] as i64;
    let rd = match Cx::ai(node, "rotary_embedding_dim", 0) {
        0 => d,
        v => v,
    };
    let half = rd / 2;
    let gather0 = |cx: &mut Cx<'_>, c: &T, p: &T| -> T {
        let q = p.rank();
        let mut ish = p.shape().to_vec();
        ish.push(1);
        let pi = cx.e.convert(p, DType::I64);
        let pi = cx.e.reshape(&pi, &ish);
        let mut out = p.shape().to_vec();
        out.push(c.shape()[1]);
        let attr = format!(
            "dimension_numbers = #stablehlo.gather<offset_dims = [{q}], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = {q}>, indices_are_sorted = false, slice_sizes = array<i64: 1, {}>",
            c.shape()[1]
        );
        cx.e.op_full("gather", &[c, &pi], &attr, &crate::onnx::emit::Ty::new(c.dt(), out))
    };
    let (cos, sin) = match &pos {
        Some(p) => (gather0(cx, &cos, p), gather0(cx, &sin, p)),
        None => (cos, sin),
    };
    let hs = [sh[0], sh[1], sh[2], half as u64];
    let cosb = cx.e.broadcast_in_dim(&cos, &[0, 1, 3], &hs);
    let sinb = cx.e.broadcast_in_dim(&sin, &[0, 1, 3], &hs);
    let full: Vec<i64> = sh.iter().map(|&v| v as i64).collect();
    let sl = |cx: &mut Cx<'_>, a: i64, b: i64, st: i64| {
        let mut s0 = vec![0i64; 4];
        let mut l = full.clone();
        let mut stp = vec![1i64; 4];
        s0[3] = a;
        l[3] = b;
        stp[3] = st;
        cx.e.slice(&x, &s0, &l, &stp)
    };
    let interleaved = Cx::ai(node, "interleaved", 0) == 1;
    let (x1, x2) = if interleaved {
        (sl(cx, 0, rd, 2), sl(cx, 1, rd, 2))
    } else {
        (sl(cx, 0, half, 1), sl(cx, half, rd, 1))
    };
    let a = cx.e.bin("multiply", &cosb, &x1);
    let b = cx.e.bin("multiply", &sinb, &x2);
    let real = cx.e.bin("subtract", &a, &b);
    let c = cx.e.bin("multiply", &sinb, &x1);
    let e = cx.e.bin("multiply", &cosb, &x2);
    let imag = cx.e.bin("add", &c, &e);
    let rot = if interleaved {
        let s5 = [hs[0], hs[1], hs[2], hs[3], 1];
        let r5 = cx.e.reshape(&real, &s5);
        let i5 = cx.e.reshape(&imag, &s5);
        let c5 = cx.e.concat(&[&r5, &i5], 4);
        cx.e.reshape(&c5, &[sh[0], sh[1], sh[2], rd as u64])
    } else {
        cx.e.concat(&[&real, &imag], 3)
    };
    let y = if rd < d {
        let pass = sl(cx, rd, d, 1);
        cx.e.concat(&[&rot, &pass], 3)
    } else {
        rot
    };
    let y = if x0.rank() == 3 {
        cx.e.reshape(&y, x0.shape())
    } else {
        cx.e.transpose(&y, &[0, 2, 1, 3])
    };
    cx.set(node, 0, y);
    Ok(())
}
