//! Conv (groups, dilations, strides, pads, auto_pad), ConvTranspose, MaxPool, AveragePool,
//! GlobalAveragePool, GlobalMaxPool, LpPool-free.

use tpuport_model::{DType, Node};

use super::reduction::{keep, reduce_t};
use super::{Rule, rule};
use crate::LowerError;
use crate::onnx::cx::Cx;
use crate::onnx::emit::{T, Ty, arr};

pub(crate) const RULES: &[Rule] = &[
    rule("Conv", conv),
    rule("ConvTranspose", conv_transpose),
    rule("MaxPool", pool),
    rule("AveragePool", pool),
    rule("LpPool", pool),
    rule("GlobalAveragePool", global_pool),
    rule("GlobalMaxPool", global_pool),
];

/// Per-spatial-dim (low, high) padding from `pads`/`auto_pad`.
fn padding(
    cx: &Cx<'_>,
    node: &Node,
    input: &[u64],
    kernel: &[i64],
    strides: &[i64],
    dil: &[i64],
    ceil_mode: bool,
) -> Result<Vec<(i64, i64)>, LowerError> {
    let n = input.len();
    let auto = Cx::astr(node, "auto_pad").unwrap_or_else(|| "NOTSET".to_owned());
    let mut out = Vec::with_capacity(n);
    match auto.as_str() {
        "NOTSET" | "" => {
            let p = Cx::ais(node, "pads").unwrap_or_else(|| vec![0; 2 * n]);
            if p.len() != 2 * n {
                return Err(
                    cx.invalid(node, format!("pads has {} entries, expected {}", p.len(), 2 * n))
                );
            }
            for i in 0..n {
                let (lo, mut hi) = (p[i], p[i + n]);
                if ceil_mode {
                    let eff = (kernel[i] - 1) * dil[i] + 1;
                    let total = input[i] as i64 + lo + hi - eff;
                    let out_ceil = (total + strides[i] - 1).div_euclid(strides[i]) + 1;
                    // The last window must start inside the input or left padding.
                    let out_ceil = if (out_ceil - 1) * strides[i] >= input[i] as i64 + lo {
                        out_ceil - 1
                    } else {
                        out_ceil
                    };
                    let need = (out_ceil - 1) * strides[i] + eff - (input[i] as i64 + lo + hi);
                    if need > 0 {
                        hi += need;
                    }
                }
                out.push((lo, hi));
            }
        }
        "VALID" => out.extend(std::iter::repeat_n((0, 0), n)),
        "SAME_UPPER" | "SAME_LOWER" => {
            for i in 0..n {
                let o = (input[i] as i64 + strides[i] - 1) / strides[i];
                let eff = (kernel[i] - 1) * dil[i] + 1;
                let total = ((o - 1) * strides[i] + eff - input[i] as i64).max(0);
                let small = total / 2;
                out.push(if auto == "SAME_UPPER" {
                    (small, total - small)
                } else {
                    (total - small, small)
                });
            }
        }
        a => return Err(cx.unsup(node, format!("auto_pad `{a}`"))),
    }
    Ok(out)
}

fn dims_attr(n: usize) -> String {
    let sp: Vec<String> = (0..n).map(|i| i.to_string()).collect();
    let s = sp.join(", ");
    format!("#stablehlo.conv<[b, f, {s}]x[o, i, {s}]->[b, f, {s}]>")
}

fn pad_attr(p: &[(i64, i64)]) -> String {
    let v: Vec<String> = p.iter().map(|(l, h)| format!("[{l}, {h}]")).collect();
    format!("dense<[{}]> : tensor<{}x2xi64>", v.join(", "), p.len())
}

#[allow(clippy::too_many_arguments)]
fn emit_conv(
    cx: &mut Cx<'_>,
    x: &T,
    w: &T,
    strides: &[i64],
    pads: &[(i64, i64)],
    lhs_dil: &[i64],
    rhs_dil: &[i64],
    groups: i64,
) -> T {
    let n = x.rank() - 2;
    let mut shape = vec![x.shape()[0], w.shape()[0]];
    for i in 0..n {
        let inp = (x.shape()[i + 2] as i64 - 1) * lhs_dil[i] + 1 + pads[i].0 + pads[i].1;
        let eff = (w.shape()[i + 2] as i64 - 1) * rhs_dil[i] + 1;
        shape.push(if inp < eff { 0 } else { ((inp - eff) / strides[i] + 1) as u64 });
    }
    let low = matches!(x.dt(), DType::BF16 | DType::F16);
    let rdt = if low { DType::F32 } else { x.dt() };
    let attr = format!(
        "batch_group_count = 1 : i64, dimension_numbers = {}, feature_group_count = {groups} : i64, lhs_dilation = {}, padding = {}, rhs_dilation = {}, window_strides = {}",
        dims_attr(n),
        arr(lhs_dil),
        pad_attr(pads),
        arr(rhs_dil),
        arr(strides)
    );
    let r = cx.e.op_full("convolution", &[x, w], &attr, &Ty::new(rdt, shape));
    if low { cx.e.convert(&r, x.dt()) } else { r }
}

fn conv(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let x = cx.inp(node, 0)?;
    let w = cx.inp(node, 1)?;
    if x.rank() < 3 || w.rank() != x.rank() {
        return Err(
            cx.invalid(node, format!("Conv input rank {} / weight rank {}", x.rank(), w.rank()))
        );
    }
    let n = x.rank() - 2;
    let kernel: Vec<i64> = w.shape()[2..].iter().map(|&d| d as i64).collect();
    let strides = Cx::ais(node, "strides").unwrap_or_else(|| vec![1; n]);
    let dil = Cx::ais(node, "dilations").unwrap_or_else(|| vec![1; n]);
    let groups = Cx::ai(node, "group", 1);
    let pads = padding(cx, node, &x.shape()[2..], &kernel, &strides, &dil, false)?;
    let w = cx.e.convert(&w, x.dt());
    let mut y = emit_conv(cx, &x, &w, &strides, &pads, &vec![1; n], &dil, groups);
    if let Some(b) = cx.opt_inp(node, 2)? {
        let b = cx.e.convert(&b, y.dt());
        let bb = cx.e.broadcast_in_dim(&b, &[1], y.shape());
        y = cx.e.bin("add", &y, &bb);
    }
    cx.set(node, 0, y);
    Ok(())
}

fn conv_transpose(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let x = cx.inp(node, 0)?;
    let w = cx.inp(node, 1)?;
    let n = x.rank() - 2;
    let groups = Cx::ai(node, "group", 1);
    let kernel: Vec<i64> = w.shape()[2..].iter().map(|&d| d as i64).collect();
    let strides = Cx::ais(node, "strides").unwrap_or_else(|| vec![1; n]);
    let dil = Cx::ais(node, "dilations").unwrap_or_else(|| vec![1; n]);
    let out_pad = Cx::ais(node, "output_padding").unwrap_or_else(|| vec![0; n]);
    let auto = Cx::astr(node, "auto_pad").unwrap_or_else(|| "NOTSET".to_owned());
    let mut pads = Cx::ais(node, "pads").unwrap_or_else(|| vec![0; 2 * n]);
    if let Some(os) = Cx::ais(node, "output_shape") {
        let os = &os[os.len() - n..];
        for i in 0..n {
            let total = strides[i] * (x.shape()[i + 2] as i64 - 1)
                + out_pad[i]
                + (kernel[i] - 1) * dil[i]
                + 1
                - os[i];
            let half = total.div_euclid(2);
            let (a, b) =
                if auto == "SAME_UPPER" { (half, total - half) } else { (total - half, half) };
            pads[i] = a;
            pads[i + n] = b;
        }
    } else if auto == "SAME_UPPER" || auto == "SAME_LOWER" {
        for i in 0..n {
            let o = x.shape()[i + 2] as i64 * strides[i];
            let total = (strides[i] * (x.shape()[i + 2] as i64 - 1)
                + out_pad[i]
                + (kernel[i] - 1) * dil[i]
                + 1
                - o)
                .max(0);
            let (a, b) = if auto == "SAME_UPPER" {
                (total / 2, total - total / 2)
            } else {
                (total - total / 2, total / 2)
            };
            pads[i] = a;
            pads[i + n] = b;
        }
    }
    // Weight [C, M/g, k...] -> [M, C/g, k...] flipped spatially.
    let c = w.shape()[0];
    let mg = w.shape()[1];
    let g = groups as u64;
    let mut ws = vec![g, c / g, mg];
    ws.extend_from_slice(&w.shape()[2..]);
    let w1 = cx.e.reshape(&w, &ws);
    let mut perm = vec![0usize, 2, 1];
    perm.extend(3..3 + n);
    let w2 = cx.e.transpose(&w1, &perm);
    let mut ws2 = vec![g * mg, c / g];
    ws2.extend_from_slice(&w.shape()[2..]);
    let w3 = cx.e.reshape(&w2, &ws2);
    let rev: Vec<i64> = (2..2 + n as i64).collect();
    let w4 =
        cx.e.op_full("reverse", &[&w3], &format!("dimensions = {}", arr(&rev)), &w3.ty.clone());
    let w4 = cx.e.convert(&w4, x.dt());
    let cpads: Vec<(i64, i64)> = (0..n)
        .map(|i| {
            let eff = (kernel[i] - 1) * dil[i];
            (eff - pads[i], eff - pads[i + n] + out_pad[i])
        })
        .collect();
    let mut y = emit_conv(cx, &x, &w4, &vec![1; n], &cpads, &strides, &dil, groups);
    if let Some(b) = cx.opt_inp(node, 2)? {
        let bb = cx.e.broadcast_in_dim(&b, &[1], y.shape());
        y = cx.e.bin("add", &y, &bb);
    }
    cx.set(node, 0, y);
    Ok(())
}

fn pool(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let x = cx.inp(node, 0)?;
    let n = x.rank() - 2;
    let kernel =
        Cx::ais(node, "kernel_shape").ok_or_else(|| cx.invalid(node, "kernel_shape missing"))?;
    let strides = Cx::ais(node, "strides").unwrap_or_else(|| vec![1; n]);
    let dil = Cx::ais(node, "dilations").unwrap_or_else(|| vec![1; n]);
    let ceil = Cx::ai(node, "ceil_mode", 0) == 1;
    if Cx::ai(node, "storage_order", 0) != 0 {
        return Err(cx.unsup(node, "storage_order=1"));
    }
    if node.op == "MaxPool" && cx.out_id(node, 1).is_some() {
        return Err(cx.unsup(node, "MaxPool Indices output"));
    }
    let sp = padding(cx, node, &x.shape()[2..], &kernel, &strides, &dil, ceil)?;
    let mut win = vec![1, 1];
    win.extend(&kernel);
    let mut st = vec![1, 1];
    st.extend(&strides);
    let mut dl = vec![1, 1];
    dl.extend(&dil);
    let mut pads = vec![(0, 0), (0, 0)];
    pads.extend(&sp);
    let xf = if matches!(x.dt(), DType::BF16 | DType::F16) && node.op == "AveragePool" {
        cx.e.convert(&x, DType::F32)
    } else {
        x.clone()
    };
    let y = if node.op == "LpPool" {
        let p = Cx::ai(node, "p", 2);
        let pv = cx.e.like(&xf, p as f64);
        let a = cx.e.un("abs", &xf);
        let ap = cx.e.bin("power", &a, &pv);
        let s = cx.e.reduce_window(&ap, 0.0, "add", &win, &st, &dl, &pads);
        let inv = cx.e.like(&s, 1.0 / p as f64);
        cx.e.bin("power", &s, &inv)
    } else if node.op == "MaxPool" {
        let init = crate::onnx::emit::min_of(x.dt());
        cx.e.reduce_window(&xf, init, "maximum", &win, &st, &dl, &pads)
    } else {
        let s = cx.e.reduce_window(&xf, 0.0, "add", &win, &st, &dl, &pads);
        let include = Cx::ai(node, "count_include_pad", 0) == 1;
        let explicit: Vec<(i64, i64)> = if ceil {
            // Padding that only ceil_mode added never counts.
            let p0 = padding(cx, node, &x.shape()[2..], &kernel, &strides, &dil, false)?;
            let mut v = vec![(0, 0), (0, 0)];
            v.extend(p0);
            v
        } else {
            pads.clone()
        };
        let no_pad = pads.iter().all(|&(a, b)| a == 0 && b == 0);
        if no_pad {
            let k: i64 = kernel.iter().product();
            let d = cx.e.like(&s, k as f64);
            cx.e.bin("divide", &s, &d)
        } else {
            // Count the elements each window covers (real data, plus explicit pads when
            // count_include_pad).
            let ones_shape: Vec<u64> = if include {
                (0..x.rank())
                    .map(|i| (x.shape()[i] as i64 + explicit[i].0 + explicit[i].1) as u64)
                    .collect()
            } else {
                x.shape().to_vec()
            };
            let ones = cx.e.splat(xf.dt(), &ones_shape, 1.0);
            let cp: Vec<(i64, i64)> = if include {
                pads.iter().zip(&explicit).map(|(p, e)| (p.0 - e.0, p.1 - e.1)).collect()
            } else {
                pads.clone()
            };
            let c = cx.e.reduce_window(&ones, 0.0, "add", &win, &st, &dl, &cp);
            cx.e.bin("divide", &s, &c)
        }
    };
    let y = cx.e.convert(&y, x.dt());
    cx.set(node, 0, y);
    Ok(())
}

fn global_pool(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let x = cx.inp(node, 0)?;
    let dims: Vec<usize> = (2..x.rank()).collect();
    let y = if node.op == "GlobalMaxPool" {
        reduce_t(cx, &x, &dims, "max")
    } else {
        let n: u64 = dims.iter().map(|&d| x.shape()[d]).product();
        let s = reduce_t(cx, &x, &dims, "sum");
        let c = cx.e.like(&s, n as f64);
        cx.e.bin("divide", &s, &c)
    };
    let y = keep(cx, &y, x.shape(), &dims);
    cx.set(node, 0, y);
    Ok(())
}
