//! Shape and data movement: Constant, Shape, Size, Reshape, Flatten, Transpose, Squeeze,
//! Unsqueeze, Concat, Split, Slice, Expand, Tile, Pad, ConstantOfShape, Range.
//! Values known at lowering time are evaluated on the host.

use tpuport_model::{Attr, DType, Node};

use super::{Rule, rule};
use crate::LowerError;
use crate::onnx::cx::{Cx, Src};
use crate::onnx::emit::T;
use crate::onnx::host::{HOST_MAX, HostVal, eval};

pub(crate) const RULES: &[Rule] = &[
    rule("Constant", constant),
    rule("Shape", shape),
    rule("Size", size),
    rule("Reshape", reshape),
    rule("Flatten", flatten),
    rule("Transpose", transpose),
    rule("Squeeze", squeeze),
    rule("Unsqueeze", unsqueeze),
    rule("Concat", concat),
    rule("Split", split),
    rule("Slice", slice),
    rule("Expand", expand),
    rule("Tile", tile),
    rule("Pad", pad),
    rule("ConstantOfShape", constant_of_shape),
    rule("Range", range),
    rule("Trilu", trilu),
    rule("DepthToSpace", depth_space),
    rule("SpaceToDepth", depth_space),
    rule("EyeLike", eye_like),
    rule("OneHot", one_hot),
    rule("CenterCropPad", center_crop_pad),
    rule("HannWindow", window),
    rule("HammingWindow", window),
    rule("BlackmanWindow", window),
];

fn constant(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let Some(Attr::Weight(id)) = node.attr("value") else {
        return Err(cx.unsup(node, "Constant without a tensor value"));
    };
    let Some(out) = cx.out_id(node, 0) else { return Ok(()) };
    let name = cx.g().value(out).name.clone();
    if cx.model.weights.get(*id).dtype == DType::String {
        return Err(cx.unsup(node, "string constants"));
    }
    cx.bind_weight(&name, *id)
}

fn shape(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let ty = cx.in_ty(node, 0)?;
    let r = ty.rank() as i64;
    let norm = |v: i64| if v < 0 { (v + r).clamp(0, r) } else { v.clamp(0, r) } as usize;
    let s = norm(Cx::ai(node, "start", 0));
    let e = norm(Cx::ai(node, "end", r));
    let dims: Vec<i64> = ty.shape[s..e.max(s)].iter().map(|&d| d as i64).collect();
    cx.set_host(node, 0, HostVal::ints(DType::I64, vec![dims.len() as u64], dims));
    Ok(())
}

fn size(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let ty = cx.in_ty(node, 0)?;
    cx.set_host(node, 0, HostVal::ints(DType::I64, vec![], vec![ty.elements() as i64]));
    Ok(())
}

/// Sets output 0 to `x` reshaped (host or device).
fn reshape_to(cx: &mut Cx<'_>, node: &Node, shape: Vec<u64>) -> Result<(), LowerError> {
    let ty = cx.in_ty(node, 0)?;
    if crate::onnx::host::checked_elems(&shape) != Some(ty.elements()) {
        return Err(cx.invalid(node, format!("cannot reshape {:?} to {shape:?}", ty.shape)));
    }
    if let Some(h) = cx.host(node, 0) {
        cx.set_host(node, 0, h.with_shape(shape));
        return Ok(());
    }
    let x = cx.inp(node, 0)?;
    let r = cx.e.reshape(&x, &shape);
    cx.set(node, 0, r);
    Ok(())
}

fn reshape(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let ty = cx.in_ty(node, 0)?;
    let target = cx.need_host(node, 1, "the target shape")?.as_i64();
    let allowzero = Cx::ai(node, "allowzero", 0) == 1;
    let mut out = Vec::with_capacity(target.len());
    let mut infer = None;
    for (i, &d) in target.iter().enumerate() {
        match d {
            -1 => {
                if infer.replace(i).is_some() {
                    return Err(cx.invalid(node, "more than one -1 in the target shape"));
                }
                out.push(1);
            }
            0 if !allowzero => out.push(
                *ty.shape
                    .get(i)
                    .ok_or_else(|| cx.invalid(node, "0 in target shape beyond input rank"))?,
            ),
            d if d < 0 => {
                return Err(cx.invalid(node, format!("negative dimension {d} in target shape")));
            }
            d => out.push(d as u64),
        }
    }
    if let Some(i) = infer {
        let known = crate::onnx::host::checked_elems(&out)
            .ok_or_else(|| cx.invalid(node, format!("target shape {target:?} overflows")))?;
        if known == 0 {
            return Err(cx.invalid(node, "cannot infer -1 next to a zero dimension"));
        }
        out[i] = ty.elements() / known;
    }
    reshape_to(cx, node, out)
}

fn flatten(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let ty = cx.in_ty(node, 0)?;
    let a = Cx::ai(node, "axis", 1);
    let a = if a < 0 { a + ty.rank() as i64 } else { a } as usize;
    let a = a.min(ty.rank());
    let outer: u64 = ty.shape[..a].iter().product();
    let inner: u64 = ty.shape[a..].iter().product();
    reshape_to(cx, node, vec![outer, inner])
}

fn transpose(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let ty = cx.in_ty(node, 0)?;
    let r = ty.rank();
    let perm: Vec<usize> = match Cx::ais(node, "perm") {
        Some(p) => {
            p.iter().map(|&v| if v < 0 { (v + r as i64) as usize } else { v as usize }).collect()
        }
        None => (0..r).rev().collect(),
    };
    let mut seen = vec![false; r];
    if perm.len() != r || perm.iter().any(|&p| p >= r || std::mem::replace(&mut seen[p], true)) {
        return Err(cx.invalid(node, format!("perm {perm:?} is not a permutation of rank {r}")));
    }
    if let Some(h) = cx.host(node, 0).and_then(|h| eval::transpose(&h, &perm, HOST_MAX)) {
        cx.set_host(node, 0, h);
        return Ok(());
    }
    let x = cx.inp(node, 0)?;
    let t = cx.e.transpose(&x, &perm);
    cx.set(node, 0, t);
    Ok(())
}

/// Axes from the `axes` attribute (old opsets) or input 1.
fn axes_of(cx: &Cx<'_>, node: &Node, input: usize) -> Result<Option<Vec<i64>>, LowerError> {
    if let Some(a) = Cx::ais(node, "axes") {
        return Ok(Some(a));
    }
    if cx.has(node, input) {
        return Ok(Some(cx.need_host(node, input, "axes")?.as_i64()));
    }
    Ok(None)
}

fn squeeze(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let ty = cx.in_ty(node, 0)?;
    let r = ty.rank() as i64;
    let axes: Vec<usize> = match axes_of(cx, node, 1)? {
        Some(a) => a.iter().map(|&v| if v < 0 { v + r } else { v } as usize).collect(),
        None => (0..ty.rank()).filter(|&i| ty.shape[i] == 1).collect(),
    };
    let out: Vec<u64> =
        ty.shape.iter().enumerate().filter(|(i, _)| !axes.contains(i)).map(|(_, &d)| d).collect();
    reshape_to(cx, node, out)
}

fn unsqueeze(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let ty = cx.in_ty(node, 0)?;
    let axes = axes_of(cx, node, 1)?.ok_or_else(|| cx.invalid(node, "Unsqueeze needs axes"))?;
    let r = (ty.rank() + axes.len()) as i64;
    let mut ax: Vec<usize> = axes.iter().map(|&v| if v < 0 { v + r } else { v } as usize).collect();
    ax.sort_unstable();
    let mut out = ty.shape.clone();
    for a in ax {
        if a > out.len() {
            return Err(cx.invalid(node, format!("axis {a} out of range")));
        }
        out.insert(a, 1);
    }
    reshape_to(cx, node, out)
}

fn concat(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let n = cx.n_in(node);
    let tys: Vec<_> =
        (0..n).filter(|&i| cx.has(node, i)).map(|i| cx.in_ty(node, i)).collect::<Result<_, _>>()?;
    let r = tys.first().map_or(0, |t| t.rank());
    let axis = cx.axis(node, Cx::ai(node, "axis", 0), r)?;
    let present: Vec<usize> = (0..n).filter(|&i| cx.has(node, i)).collect();
    if cx.all_host(node) {
        let hs: Vec<HostVal> =
            present.iter().map(|&i| cx.need_host(node, i, "operand")).collect::<Result<_, _>>()?;
        if let Some(h) = eval::concat(&hs.iter().collect::<Vec<_>>(), axis, HOST_MAX) {
            cx.set_host(node, 0, h);
            return Ok(());
        }
    }
    let xs: Vec<T> = present.iter().map(|&i| cx.inp(node, i)).collect::<Result<_, _>>()?;
    let xs: Vec<T> = xs.into_iter().filter(|t| t.shape()[axis] > 0 || present.len() == 1).collect();
    let refs: Vec<&T> = xs.iter().collect();
    if refs.is_empty() {
        let ty = cx.out_ty(node, 0)?;
        let z = cx.e.splat(ty.dt, &ty.shape, 0.0);
        cx.set(node, 0, z);
        return Ok(());
    }
    let r = cx.e.concat(&refs, axis);
    cx.set(node, 0, r);
    Ok(())
}

fn split(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let ty = cx.in_ty(node, 0)?;
    let axis = cx.axis(node, Cx::ai(node, "axis", 0), ty.rank())?;
    let n_out = node.outputs.len();
    let dim = ty.shape[axis];
    let sizes: Vec<u64> = if let Some(s) = Cx::ais(node, "split") {
        s.iter().map(|&v| v as u64).collect()
    } else if cx.has(node, 1) {
        cx.need_host(node, 1, "split sizes")?.as_i64().iter().map(|&v| v as u64).collect()
    } else {
        let parts = Cx::ai(node, "num_outputs", n_out as i64) as u64;
        let chunk = dim.div_ceil(parts.max(1));
        (0..parts).map(|i| chunk.min(dim.saturating_sub(i * chunk))).collect()
    };
    if sizes.iter().sum::<u64>() != dim {
        return Err(cx.invalid(node, format!("split sizes {sizes:?} do not add up to {dim}")));
    }
    let x = cx.inp(node, 0)?;
    let mut start = 0i64;
    for (i, &s) in sizes.iter().enumerate() {
        let mut st = vec![0i64; ty.rank()];
        let mut lim: Vec<i64> = ty.shape.iter().map(|&d| d as i64).collect();
        st[axis] = start;
        lim[axis] = start + s as i64;
        let r = cx.e.slice(&x, &st, &lim, &vec![1; ty.rank()]);
        cx.set(node, i, r);
        start += s as i64;
    }
    Ok(())
}

/// Normalised per-axis (start, end, step) with ONNX clamping.
fn slice_params(dim: i64, start: i64, end: i64, step: i64) -> (i64, i64) {
    let s = if start < 0 { start + dim } else { start };
    let e = if end < 0 { end + dim } else { end };
    if step > 0 {
        (s.clamp(0, dim), e.clamp(0, dim))
    } else {
        (s.clamp(0, dim - 1), e.clamp(-1, dim - 1))
    }
}

fn slice(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let ty = cx.in_ty(node, 0)?;
    let r = ty.rank();
    let (starts, ends, axes, steps) = if cx.opset < 10 {
        (
            Cx::ais(node, "starts").unwrap_or_default(),
            Cx::ais(node, "ends").unwrap_or_default(),
            Cx::ais(node, "axes"),
            None,
        )
    } else {
        let st = cx.need_host(node, 1, "starts")?.as_i64();
        let en = cx.need_host(node, 2, "ends")?.as_i64();
        let ax = if cx.has(node, 3) { Some(cx.need_host(node, 3, "axes")?.as_i64()) } else { None };
        let sp =
            if cx.has(node, 4) { Some(cx.need_host(node, 4, "steps")?.as_i64()) } else { None };
        (st, en, ax, sp)
    };
    let axes: Vec<usize> = axes
        .unwrap_or_else(|| (0..starts.len() as i64).collect())
        .iter()
        .map(|&a| if a < 0 { a + r as i64 } else { a } as usize)
        .collect();
    let steps = steps.unwrap_or_else(|| vec![1; starts.len()]);
    let mut st = vec![0i64; r];
    let mut lim: Vec<i64> = ty.shape.iter().map(|&d| d as i64).collect();
    let mut stp = vec![1i64; r];
    let mut rev = Vec::new();
    for (k, &a) in axes.iter().enumerate() {
        if a >= r {
            return Err(cx.invalid(node, format!("axis {a} out of range")));
        }
        let dim = ty.shape[a] as i64;
        let step = steps[k];
        if step == 0 {
            return Err(cx.invalid(node, "step 0"));
        }
        let (s, e) = slice_params(dim, starts[k], ends[k], step);
        if step > 0 {
            st[a] = s;
            lim[a] = e.max(s);
            stp[a] = step;
        } else {
            // Reverse the axis, then slice forward.
            rev.push(a);
            let (s2, e2) = (dim - 1 - s, dim - 1 - e);
            st[a] = s2;
            lim[a] = e2.max(s2);
            stp[a] = -step;
        }
    }
    if let Some(h) = cx.host(node, 0) {
        let out: Vec<u64> = (0..r)
            .map(|i| {
                let n = lim[i] - st[i];
                if n <= 0 { 0 } else { ((n + stp[i] - 1) / stp[i]) as u64 }
            })
            .collect();
        // A reversed axis reads backwards from its last element.
        let (start, step): (Vec<i64>, Vec<i64>) = (0..r)
            .map(|i| {
                if rev.contains(&i) {
                    (ty.shape[i] as i64 - 1 - st[i], -stp[i])
                } else {
                    (st[i], stp[i])
                }
            })
            .unzip();
        if let Some(v) = eval::strided(&h, &out, &start, &step, HOST_MAX) {
            cx.set_host(node, 0, v);
            return Ok(());
        }
    }
    let mut x = cx.inp(node, 0)?;
    if !rev.is_empty() {
        let d: Vec<i64> = rev.iter().map(|&a| a as i64).collect();
        x = cx.e.op_full(
            "reverse",
            &[&x],
            &format!("dimensions = {}", crate::onnx::emit::arr(&d)),
            &x.ty.clone(),
        );
    }
    let out = cx.e.slice(&x, &st, &lim, &stp);
    cx.set(node, 0, out);
    Ok(())
}

fn expand(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let ty = cx.in_ty(node, 0)?;
    let target: Vec<u64> =
        cx.need_host(node, 1, "the target shape")?.as_i64().iter().map(|&v| v as u64).collect();
    let out = crate::onnx::host::broadcast_shapes(&ty.shape, &target)
        .ok_or_else(|| cx.invalid(node, format!("cannot expand {:?} to {target:?}", ty.shape)))?;
    if crate::onnx::host::checked_elems(&out).is_none() {
        return Err(cx.invalid(node, format!("target shape {out:?} overflows")));
    }
    if let Some(h) = cx.host(node, 0).and_then(|h| eval::broadcast_to(&h, &out, HOST_MAX)) {
        cx.set_host(node, 0, h);
        return Ok(());
    }
    let x = cx.inp(node, 0)?;
    let r = cx.e.bcast_to(&x, &out);
    cx.set(node, 0, r);
    Ok(())
}

fn tile(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let ty = cx.in_ty(node, 0)?;
    let reps = cx.need_host(node, 1, "repeats")?.as_i64();
    if reps.len() != ty.rank() {
        return Err(cx.invalid(node, "repeats length differs from the input rank"));
    }
    let x = cx.inp(node, 0)?;
    // Broadcast [d0..] to [r0, d0, r1, d1, ...] then reshape.
    let mut bshape = Vec::new();
    let mut dims = Vec::new();
    for (i, &d) in ty.shape.iter().enumerate() {
        bshape.push(reps[i] as u64);
        bshape.push(d);
        dims.push(2 * i + 1);
    }
    let b = cx.e.broadcast_in_dim(&x, &dims, &bshape);
    if reps.iter().any(|&r| r < 0) {
        return Err(cx.invalid(node, "negative repeats"));
    }
    let out: Vec<u64> =
        ty.shape.iter().zip(&reps).map(|(&d, &r)| d.saturating_mul(r as u64)).collect();
    if crate::onnx::host::checked_elems(&out).is_none() {
        return Err(cx.invalid(node, format!("tiled shape {out:?} overflows")));
    }
    let r = cx.e.reshape(&b, &out);
    cx.set(node, 0, r);
    Ok(())
}

fn pad(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let ty = cx.in_ty(node, 0)?;
    let r = ty.rank();
    let mode = Cx::astr(node, "mode").unwrap_or_else(|| "constant".to_owned());
    let pads = if cx.opset < 11 {
        Cx::ais(node, "pads").unwrap_or_default()
    } else {
        cx.need_host(node, 1, "pads")?.as_i64()
    };
    let axes: Vec<usize> = if cx.opset >= 18 && cx.has(node, 3) {
        cx.need_host(node, 3, "axes")?
            .as_i64()
            .iter()
            .map(|&a| if a < 0 { a + r as i64 } else { a } as usize)
            .collect()
    } else {
        (0..r).collect()
    };
    if pads.len() != 2 * axes.len() {
        return Err(cx.invalid(node, "pads length must be twice the number of axes"));
    }
    let mut lo = vec![0i64; r];
    let mut hi = vec![0i64; r];
    for (k, &a) in axes.iter().enumerate() {
        lo[a] = pads[k];
        hi[a] = pads[k + axes.len()];
    }
    let x = cx.inp(node, 0)?;
    let out = match mode.as_str() {
        "constant" => {
            let v = if cx.opset < 11 {
                cx.e.scalar(x.dt(), Cx::af(node, "value", 0.0))
            } else if let Some(c) = cx.opt_inp(node, 2)? {
                cx.e.reshape(&c, &[])
            } else {
                cx.e.scalar(x.dt(), 0.0)
            };
            pad_const(cx, &x, &v, &lo, &hi)
        }
        "edge" | "reflect" | "wrap" if lo.iter().chain(&hi).any(|&p| !(0..=4096).contains(&p)) => {
            return Err(cx.unsup(node, format!("{mode} padding outside 0..=4096 per side")));
        }
        "edge" | "reflect" | "wrap" => {
            let mut cur = x;
            for a in 0..r {
                cur = pad_axis_mode(cx, &cur, a, lo[a], hi[a], &mode);
            }
            cur
        }
        m => return Err(cx.unsup(node, format!("Pad mode `{m}`"))),
    };
    cx.set(node, 0, out);
    Ok(())
}

/// `stablehlo.pad` (negative pads crop).
pub(crate) fn pad_const(cx: &mut Cx<'_>, x: &T, v: &T, lo: &[i64], hi: &[i64]) -> T {
    let shape: Vec<u64> =
        (0..x.rank()).map(|i| (x.shape()[i] as i64 + lo[i] + hi[i]).max(0) as u64).collect();
    let zero = vec![0i64; x.rank()];
    let attr = format!(
        "edge_padding_low = {}, edge_padding_high = {}, interior_padding = {}",
        crate::onnx::emit::arr(lo),
        crate::onnx::emit::arr(hi),
        crate::onnx::emit::arr(&zero)
    );
    cx.e.op_full("pad", &[x, v], &attr, &crate::onnx::emit::Ty::new(x.dt(), shape))
}

fn pad_axis_mode(cx: &mut Cx<'_>, x: &T, a: usize, lo: i64, hi: i64, mode: &str) -> T {
    if lo == 0 && hi == 0 {
        return x.clone();
    }
    let d = x.shape()[a] as i64;
    let r = x.rank();
    let one = |cx: &mut Cx<'_>, i: i64| {
        let mut st = vec![0i64; r];
        let mut lim: Vec<i64> = x.shape().iter().map(|&v| v as i64).collect();
        st[a] = i;
        lim[a] = i + 1;
        cx.e.slice(x, &st, &lim, &vec![1; r])
    };
    let src = |j: i64| -> i64 {
        // j in padded coordinates relative to the original start.
        match mode {
            "edge" => j.clamp(0, d - 1),
            "wrap" => j.rem_euclid(d),
            _ => {
                if d == 1 {
                    return 0;
                }
                let p = 2 * (d - 1);
                let m = j.rem_euclid(p);
                if m < d { m } else { p - m }
            }
        }
    };
    let mut parts = Vec::new();
    for j in -lo..0 {
        parts.push(one(cx, src(j)));
    }
    parts.push(x.clone());
    for j in d..d + hi {
        parts.push(one(cx, src(j)));
    }
    let refs: Vec<&T> = parts.iter().collect();
    cx.e.concat(&refs, a)
}

fn constant_of_shape(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let shape: Vec<u64> =
        cx.need_host(node, 0, "shape")?.as_i64().iter().map(|&v| v.max(0) as u64).collect();
    let (dt, v) = match node.attr("value") {
        Some(Attr::Weight(id)) => {
            let w = cx.model.weights.get(*id);
            let b = w.bytes().map_err(|e| cx.invalid(node, e))?;
            let h = HostVal::from_bytes(w.dtype, vec![1], &b)
                .ok_or_else(|| cx.unsup(node, format!("value of type {}", w.dtype)))?;
            (w.dtype, h.get_f(0))
        }
        _ => (DType::F32, 0.0),
    };
    let n = crate::onnx::host::checked_elems(&shape)
        .ok_or_else(|| cx.invalid(node, format!("shape {shape:?} overflows")))?;
    if n <= HOST_MAX {
        cx.set_host(node, 0, HostVal::from_f64(dt, shape, vec![v; n as usize]));
    } else {
        let dt = cx.cdt(dt);
        let t = cx.e.splat(dt, &shape, v);
        cx.set(node, 0, t);
    }
    Ok(())
}

fn range(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let s = cx.need_host(node, 0, "start")?;
    let l = cx.need_host(node, 1, "limit")?;
    let d = cx.need_host(node, 2, "delta")?;
    let (st, li, de) = (s.get_f(0), l.get_f(0), d.get_f(0));
    if de == 0.0 {
        return Err(cx.invalid(node, "delta is 0"));
    }
    let n = ((li - st) / de).ceil().max(0.0) as u64;
    if n > HOST_MAX {
        let dt = cx.cdt(s.dtype);
        let io = cx.e.iota(dt, &[n], 0);
        let dv = cx.e.splat(dt, &[n], de);
        let sv = cx.e.splat(dt, &[n], st);
        let m = cx.e.bin("multiply", &io, &dv);
        let r = cx.e.bin("add", &m, &sv);
        cx.set(node, 0, r);
        return Ok(());
    }
    let v: Vec<f64> = (0..n).map(|i| st + i as f64 * de).collect();
    cx.set_host(node, 0, HostVal::from_f64(s.dtype, vec![n], v));
    Ok(())
}

#[allow(dead_code)]
fn _unused(_: Src) {}

fn trilu(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let x = cx.inp(node, 0)?;
    let k = if cx.has(node, 1) { cx.need_host(node, 1, "k")?.as_i64()[0] } else { 0 };
    let upper = Cx::ai(node, "upper", 1) == 1;
    let r = x.rank();
    if r < 2 {
        return Err(cx.invalid(node, "Trilu needs rank >= 2"));
    }
    let sh = x.shape().to_vec();
    let row = cx.e.iota(DType::I64, &sh, r - 2);
    let col = cx.e.iota(DType::I64, &sh, r - 1);
    let kv = cx.e.like(&row, k as f64);
    let rk = cx.e.bin("add", &row, &kv);
    // upper keeps col - row >= k; lower keeps col - row <= k.
    let keep = cx.e.compare(if upper { "GE" } else { "LE" }, &col, &rk);
    let z = cx.e.like(&x, 0.0);
    let y = cx.e.select(&keep, &x, &z);
    cx.set(node, 0, y);
    Ok(())
}

fn depth_space(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let x = cx.inp(node, 0)?;
    let b = Cx::ai(node, "blocksize", 0) as u64;
    if x.rank() != 4 || b == 0 {
        return Err(cx.invalid(node, "needs a 4-D input and blocksize >= 1"));
    }
    let [n, c, h, w] = [x.shape()[0], x.shape()[1], x.shape()[2], x.shape()[3]];
    let y = if node.op == "DepthToSpace" {
        let crd = Cx::astr(node, "mode").is_some_and(|m| m == "CRD");
        let (s6, perm): (Vec<u64>, [usize; 6]) = if crd {
            (vec![n, c / (b * b), b, b, h, w], [0, 1, 4, 2, 5, 3])
        } else {
            (vec![n, b, b, c / (b * b), h, w], [0, 3, 4, 1, 5, 2])
        };
        let t = cx.e.reshape(&x, &s6);
        let t = cx.e.transpose(&t, &perm);
        cx.e.reshape(&t, &[n, c / (b * b), h * b, w * b])
    } else {
        let t = cx.e.reshape(&x, &[n, c, h / b, b, w / b, b]);
        let crd = Cx::astr(node, "mode").is_some_and(|m| m == "CRD");
        let perm = if crd { [0, 1, 3, 5, 2, 4] } else { [0, 3, 5, 1, 2, 4] };
        let t = cx.e.transpose(&t, &perm);
        cx.e.reshape(&t, &[n, c * b * b, h / b, w / b])
    };
    cx.set(node, 0, y);
    Ok(())
}

fn eye_like(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let ty = cx.in_ty(node, 0)?;
    let dt = match node.attr("dtype").and_then(Attr::as_int) {
        Some(c) => tpuport_formats::onnx::dtype::from_onnx(c as i32)
            .ok_or_else(|| cx.unsup(node, "dtype"))?,
        None => ty.dt,
    };
    let k = Cx::ai(node, "k", 0);
    let row = cx.e.iota(DType::I64, &ty.shape, 0);
    let col = cx.e.iota(DType::I64, &ty.shape, 1);
    let kv = cx.e.like(&row, k as f64);
    let rk = cx.e.bin("add", &row, &kv);
    let eq = cx.e.compare("EQ", &col, &rk);
    let y = cx.e.convert(&eq, dt);
    cx.set(node, 0, y);
    Ok(())
}

fn one_hot(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let idx = cx.inp(node, 0)?;
    let depth = cx.need_host(node, 1, "depth")?.get_f(0) as i64;
    let vals = cx.inp(node, 2)?;
    let r = idx.rank() + 1;
    let axis = cx.axis(node, Cx::ai(node, "axis", -1), r)?;
    let mut sh = idx.shape().to_vec();
    sh.insert(axis, depth as u64);
    let i = cx.e.convert(&idx, DType::I64);
    let z = cx.e.like(&i, 0.0);
    let d = cx.e.like(&i, depth as f64);
    let neg = cx.e.compare("LT", &i, &z);
    let w = cx.e.bin("add", &i, &d);
    let i = cx.e.select(&neg, &w, &i);
    let dims: Vec<usize> = (0..r).filter(|&k| k != axis).collect();
    let ib = cx.e.broadcast_in_dim(&i, &dims, &sh);
    let io = cx.e.iota(DType::I64, &sh, axis);
    let hit = cx.e.compare("EQ", &ib, &io);
    let off = cx.e.slice(&vals, &[0], &[1], &[1]);
    let on = cx.e.slice(&vals, &[1], &[2], &[1]);
    let off = cx.e.reshape(&off, &[]);
    let on = cx.e.reshape(&on, &[]);
    let offb = cx.e.broadcast_in_dim(&off, &[], &sh);
    let onb = cx.e.broadcast_in_dim(&on, &[], &sh);
    let y = cx.e.select(&hit, &onb, &offb);
    cx.set(node, 0, y);
    Ok(())
}

fn center_crop_pad(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let x = cx.inp(node, 0)?;
    let target = cx.need_host(node, 1, "shape")?.as_i64();
    let r = x.rank();
    let axes: Vec<usize> = match Cx::ais(node, "axes") {
        Some(a) => a.iter().map(|&v| if v < 0 { v + r as i64 } else { v } as usize).collect(),
        None => (0..r).collect(),
    };
    if axes.len() != target.len() {
        return Err(cx.invalid(node, "shape and axes lengths differ"));
    }
    let mut lo = vec![0i64; r];
    let mut hi = vec![0i64; r];
    for (k, &a) in axes.iter().enumerate() {
        let d = x.shape()[a] as i64;
        let t = target[k];
        if t < d {
            let start = (d - t) / 2;
            lo[a] = -start;
            hi[a] = -(d - t - start);
        } else {
            let before = (t - d) / 2;
            lo[a] = before;
            hi[a] = t - d - before;
        }
    }
    let z = cx.e.scalar(x.dt(), 0.0);
    let y = pad_const(cx, &x, &z, &lo, &hi);
    cx.set(node, 0, y);
    Ok(())
}

fn window(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let size = cx.need_host(node, 0, "size")?.get_f(0) as i64;
    if size < 0 || size as u64 > HOST_MAX {
        return Err(cx.unsup(node, format!("window size {size}")));
    }
    let dt = match node.attr("output_datatype").and_then(Attr::as_int) {
        Some(c) => tpuport_formats::onnx::dtype::from_onnx(c as i32)
            .ok_or_else(|| cx.unsup(node, "output_datatype"))?,
        None => DType::F32,
    };
    let periodic = Cx::ai(node, "periodic", 1) == 1;
    let n = if periodic { size } else { size - 1 } as f64;
    let tau = 2.0 * std::f64::consts::PI;
    let v: Vec<f64> = (0..size)
        .map(|i| {
            let x = tau * i as f64 / n;
            match node.op.as_str() {
                "HannWindow" => 0.5 - 0.5 * x.cos(),
                "HammingWindow" => 25.0 / 46.0 - (21.0 / 46.0) * x.cos(),
                _ => 0.42 - 0.5 * x.cos() + 0.08 * (2.0 * x).cos(),
            }
        })
        .collect();
    cx.set_host(node, 0, HostVal::from_f64(dt, vec![size as u64], v));
    Ok(())
}
