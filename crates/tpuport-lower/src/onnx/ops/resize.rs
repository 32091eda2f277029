//! Resize / Upsample: nearest, linear and cubic, applied separably per axis with taps (input
//! index, weight) computed on the host from the static shapes and every
//! `coordinate_transformation_mode` except `tf_crop_and_resize`. Antialiasing is not lowered.

use tpuport_model::ops::onnx::resize;
use tpuport_model::{DType, Node};

use super::{Rule, rule};
use crate::LowerError;
use crate::onnx::cx::Cx;
use crate::onnx::emit::{T, Ty, arr, list};
use crate::onnx::host::HostVal;

pub(crate) const RULES: &[Rule] = &[rule("Resize", resize), rule("Upsample", resize)];

/// Gathers `idx` along `axis`.
fn take(cx: &mut Cx<'_>, x: &T, axis: usize, idx: &[i64]) -> T {
    let h = HostVal::ints(DType::I64, vec![idx.len() as u64, 1], idx.to_vec());
    let i = cx.e.const_host(&h);
    let r = x.rank();
    // Output dims keep x's order: the gathered (batch) dim sits at `axis`.
    let offset: Vec<i64> = (0..r as i64).filter(|&d| d != axis as i64).collect();
    let mut sizes: Vec<i64> = x.shape().iter().map(|&d| d as i64).collect();
    sizes[axis] = 1;
    let mut out = x.shape().to_vec();
    out[axis] = idx.len() as u64;
    let attr = format!(
        "dimension_numbers = #stablehlo.gather<offset_dims = {}, collapsed_slice_dims = [{axis}], start_index_map = [{axis}], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = {}",
        list(&offset),
        arr(&sizes)
    );
    cx.e.op_full("gather", &[x, &i], &attr, &Ty::new(x.dt(), out))
}

struct Params {
    mode: String,
    ctm: String,
    nearest: String,
    a: f64,
    exclude: bool,
}

/// Taps per output position along one axis.
fn taps(p: &Params, inn: u64, out: u64, scale: f64) -> Result<Vec<Vec<(i64, f64)>>, String> {
    let n = inn as i64;
    let mut res = Vec::with_capacity(out as usize);
    for o in 0..out {
        let x = resize::source_coordinate(&p.ctm, o, inn, out, scale)
            .ok_or_else(|| format!("coordinate_transformation_mode `{}`", p.ctm))?;
        let clamp = |i: i64| i.clamp(0, n - 1);
        let t = match p.mode.as_str() {
            "nearest" => {
                let fl = x.floor();
                let frac = x - fl;
                let i = match p.nearest.as_str() {
                    "round_prefer_ceil" => {
                        if frac == 0.5 {
                            fl + 1.0
                        } else {
                            x.round()
                        }
                    }
                    "floor" => fl,
                    "ceil" => x.ceil(),
                    _ => {
                        if frac == 0.5 {
                            fl
                        } else {
                            x.round()
                        }
                    }
                };
                vec![(clamp(i as i64), 1.0)]
            }
            "linear" => {
                let x = x.clamp(0.0, (n - 1) as f64);
                let x0 = x.floor();
                let t = x - x0;
                vec![(clamp(x0 as i64), 1.0 - t), (clamp(x0 as i64 + 1), t)]
            }
            "cubic" => {
                let x0 = x.floor();
                let t = x - x0;
                let w = resize::cubic_weights(t, p.a);
                let base = x0 as i64 - 1;
                let mut v: Vec<(i64, f64)> = (0..4).map(|k| (base + k, w[k as usize])).collect();
                if p.exclude {
                    for e in &mut v {
                        if e.0 < 0 || e.0 >= n {
                            e.1 = 0.0;
                        }
                    }
                    let s: f64 = v.iter().map(|e| e.1).sum();
                    if s != 0.0 {
                        for e in &mut v {
                            e.1 /= s;
                        }
                    }
                }
                v.into_iter().map(|(i, w)| (clamp(i), w)).collect()
            }
            m => return Err(format!("mode `{m}`")),
        };
        res.push(t);
    }
    Ok(res)
}

fn resize(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let x = cx.inp(node, 0)?;
    let r = x.rank();
    let mode = Cx::astr(node, "mode").unwrap_or_else(|| "nearest".to_owned());
    let upsample_or_v10 = node.op == "Upsample" || cx.opset < 11;
    let p = Params {
        mode: if mode == "bilinear" { "linear".to_owned() } else { mode },
        ctm: if upsample_or_v10 {
            "asymmetric".to_owned()
        } else {
            Cx::astr(node, "coordinate_transformation_mode")
                .unwrap_or_else(|| "half_pixel".to_owned())
        },
        nearest: if node.op == "Upsample" {
            "floor".to_owned()
        } else {
            Cx::astr(node, "nearest_mode").unwrap_or_else(|| "round_prefer_floor".to_owned())
        },
        a: Cx::af(node, "cubic_coeff_a", -0.75),
        exclude: Cx::ai(node, "exclude_outside", 0) == 1,
    };
    if Cx::ai(node, "antialias", 0) == 1 {
        return Err(cx.unsup(node, "antialias=1"));
    }
    let axes: Vec<usize> = match Cx::ais(node, "axes") {
        Some(a) => a.iter().map(|&v| if v < 0 { v + r as i64 } else { v } as usize).collect(),
        None => (0..r).collect(),
    };
    let (scales_in, sizes_in) = if node.op == "Upsample" {
        let s = if cx.has(node, 1) {
            Some(cx.need_host(node, 1, "scales")?.as_f64())
        } else {
            Cx::ais(node, "scales").map(|v| v.iter().map(|&x| x as f64).collect())
        };
        (s, None)
    } else if cx.opset < 11 {
        (Some(cx.need_host(node, 1, "scales")?.as_f64()), None)
    } else {
        let s = if cx.has(node, 2) {
            Some(cx.need_host(node, 2, "scales")?.as_f64()).filter(|v| !v.is_empty())
        } else {
            None
        };
        let z = if cx.has(node, 3) {
            Some(cx.need_host(node, 3, "sizes")?.as_i64()).filter(|v| !v.is_empty())
        } else {
            None
        };
        (s, z)
    };
    let inshape = x.shape().to_vec();
    let mut scale = vec![1.0f64; r];
    let mut outshape = inshape.clone();
    if let Some(s) = scales_in {
        if s.len() != axes.len() {
            return Err(cx.invalid(node, "scales length differs from the number of axes"));
        }
        for (k, &a) in axes.iter().enumerate() {
            scale[a] = s[k];
            outshape[a] = (inshape[a] as f64 * s[k]).floor() as u64;
        }
    } else if let Some(z) = sizes_in {
        if z.len() != axes.len() {
            return Err(cx.invalid(node, "sizes length differs from the number of axes"));
        }
        let policy =
            Cx::astr(node, "keep_aspect_ratio_policy").unwrap_or_else(|| "stretch".to_owned());
        let ratios: Vec<f64> =
            axes.iter().enumerate().map(|(k, &a)| z[k] as f64 / inshape[a] as f64).collect();
        for (k, &a) in axes.iter().enumerate() {
            let s = match policy.as_str() {
                "not_larger" => ratios.iter().copied().fold(f64::INFINITY, f64::min),
                "not_smaller" => ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                _ => ratios[k],
            };
            scale[a] = s;
            outshape[a] = if policy == "stretch" {
                z[k] as u64
            } else {
                (inshape[a] as f64 * s).round() as u64
            };
        }
    } else {
        return Err(cx.invalid(node, "Resize needs scales or sizes"));
    }
    if let Some(d) = outshape.iter().find(|&&d| d > 1 << 24) {
        return Err(cx.unsup(node, format!("output dimension {d} (limit 16777216)")));
    }
    let low = !matches!(x.dt(), DType::F32 | DType::F64);
    let work_dt = if x.dt() == DType::F64 { DType::F64 } else { DType::F32 };
    let mut cur = if low { cx.e.convert(&x, work_dt) } else { x.clone() };
    for a in 0..r {
        if outshape[a] == inshape[a] && (scale[a] - 1.0).abs() < f64::EPSILON {
            continue;
        }
        let t = taps(&p, inshape[a], outshape[a], scale[a]).map_err(|m| cx.unsup(node, m))?;
        let ntap = t.first().map_or(0, Vec::len);
        let mut acc: Option<T> = None;
        for k in 0..ntap {
            let idx: Vec<i64> = t.iter().map(|v| v[k].0).collect();
            let w: Vec<f64> = t.iter().map(|v| v[k].1).collect();
            let g = take(cx, &cur, a, &idx);
            let term = if w.iter().all(|&v| v == 1.0) {
                g
            } else {
                let wh = HostVal::from_f64(work_dt, vec![w.len() as u64], w);
                let wc = cx.e.const_host(&wh);
                let wb = cx.e.broadcast_in_dim(&wc, &[a], g.shape());
                cx.e.bin("multiply", &g, &wb)
            };
            acc = Some(match acc {
                Some(s) => cx.e.bin("add", &s, &term),
                None => term,
            });
        }
        if let Some(s) = acc {
            cur = s;
        }
    }
    let y = cx.e.convert(&cur, x.dt());
    let y = if x.dt().is_float() || p.mode == "nearest" {
        y
    } else {
        // Integer linear/cubic results round to nearest.
        let rr = cx.e.un("round_nearest_even", &cur);
        cx.e.convert(&rr, x.dt())
    };
    cx.set(node, 0, y);
    Ok(())
}
