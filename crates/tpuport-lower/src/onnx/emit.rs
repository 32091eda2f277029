//! A small StableHLO text emitter (generic op form, which every PJRT plugin parses).
//!
//! Values are [`T`]: an SSA name plus its static tensor type. Every helper appends one or more
//! ops to the body and returns the result value.

use std::fmt::Write as _;

use tpuport_model::DType;

use super::host::HostVal;

/// A static tensor type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Ty {
    pub(crate) dt: DType,
    pub(crate) shape: Vec<u64>,
}

impl Ty {
    pub(crate) fn new(dt: DType, shape: Vec<u64>) -> Ty {
        Ty { dt, shape }
    }

    pub(crate) fn rank(&self) -> usize {
        self.shape.len()
    }

    pub(crate) fn elements(&self) -> u64 {
        self.shape.iter().fold(1u64, |a, &d| a.saturating_mul(d))
    }

    /// `tensor<2x3xf32>`.
    pub(crate) fn mlir(&self) -> String {
        let mut s = String::from("tensor<");
        for d in &self.shape {
            let _ = write!(s, "{d}x");
        }
        s.push_str(self.dt.mlir().unwrap_or("i8"));
        s.push('>');
        s
    }
}

/// An SSA value with its type.
#[derive(Clone, Debug)]
pub(crate) struct T {
    pub(crate) name: String,
    pub(crate) ty: Ty,
}

impl T {
    pub(crate) fn dt(&self) -> DType {
        self.ty.dt
    }
    pub(crate) fn shape(&self) -> &[u64] {
        &self.ty.shape
    }
    pub(crate) fn rank(&self) -> usize {
        self.ty.shape.len()
    }
}

/// `array<i64: 1, 2>`.
pub(crate) fn arr(v: &[i64]) -> String {
    if v.is_empty() {
        return "array<i64>".to_owned();
    }
    format!("array<i64: {}>", join(v))
}

/// `1, 2, 3`.
pub(crate) fn join<D: std::fmt::Display>(v: &[D]) -> String {
    v.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

/// `[1, 2]`.
pub(crate) fn list(v: &[i64]) -> String {
    format!("[{}]", join(v))
}

/// Text builder for one function body.
#[derive(Debug, Default)]
pub(crate) struct Emitter {
    pub(crate) body: String,
    next: u64,
    indent: usize,
}

impl Emitter {
    pub(crate) fn fresh(&mut self) -> String {
        let n = self.next;
        self.next += 1;
        format!("%v{n}")
    }

    fn pad(&mut self) {
        for _ in 0..(4 + self.indent * 2) {
            self.body.push(' ');
        }
    }

    /// Emits `%r = "dialect.name"(operands) <{attrs}> : (types) -> result`.
    pub(crate) fn op_full(&mut self, name: &str, operands: &[&T], attrs: &str, result: &Ty) -> T {
        let r = self.fresh();
        self.pad();
        let ops = operands.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(", ");
        let tys = operands.iter().map(|t| t.ty.mlir()).collect::<Vec<_>>().join(", ");
        let q = if name.contains('.') { name.to_owned() } else { format!("stablehlo.{name}") };
        let _ = write!(self.body, "{r} = \"{q}\"({ops})");
        if !attrs.is_empty() {
            let _ = write!(self.body, " <{{{attrs}}}>");
        }
        let _ = writeln!(self.body, " : ({tys}) -> {}", result.mlir());
        T { name: r, ty: result.clone() }
    }

    pub(crate) fn op(&mut self, name: &str, operands: &[&T], result: &Ty) -> T {
        self.op_full(name, operands, "", result)
    }

    /// Elementwise op whose result has the first operand's shape and `dt`.
    pub(crate) fn ew(&mut self, name: &str, operands: &[&T], dt: DType) -> T {
        let ty = Ty::new(dt, operands[0].ty.shape.clone());
        self.op(name, operands, &ty)
    }

    pub(crate) fn un(&mut self, name: &str, x: &T) -> T {
        self.ew(name, &[x], x.dt())
    }

    /// Same-shape binary op (operands already broadcast).
    pub(crate) fn bin(&mut self, name: &str, a: &T, b: &T) -> T {
        self.ew(name, &[a, b], a.dt())
    }

    /// A constant from raw little-endian bytes (`bytes` may hold one element: a splat).
    pub(crate) fn const_bytes(&mut self, ty: &Ty, bytes: &[u8]) -> T {
        let lit = if ty.dt == DType::Bool {
            if bytes.len() == 1 {
                (if bytes[0] != 0 { "true" } else { "false" }).to_owned()
            } else {
                bool_lit(&ty.shape, bytes)
            }
        } else {
            const HEX: &[u8; 16] = b"0123456789ABCDEF";
            let mut h = String::with_capacity(bytes.len() * 2 + 4);
            h.push_str("\"0x");
            for &b in bytes {
                h.push(char::from(HEX[usize::from(b >> 4)]));
                h.push(char::from(HEX[usize::from(b & 15)]));
            }
            h.push('"');
            h
        };
        let r = self.fresh();
        self.pad();
        let m = ty.mlir();
        let _ = writeln!(
            self.body,
            "{r} = \"stablehlo.constant\"() <{{value = dense<{lit}> : {m}}}> : () -> {m}"
        );
        T { name: r, ty: ty.clone() }
    }

    pub(crate) fn const_host(&mut self, h: &HostVal) -> T {
        let ty = Ty::new(h.dtype, h.shape.clone());
        let first = h.to_bytes_one();
        if h.is_splat() && h.len() > 1 {
            return self.const_bytes(&ty, &first);
        }
        self.const_bytes(&ty, &h.to_bytes())
    }

    /// A splat constant of `value` converted to `dt`.
    pub(crate) fn splat(&mut self, dt: DType, shape: &[u64], value: f64) -> T {
        let h = HostVal::scalar_f(dt, value);
        self.const_bytes(&Ty::new(dt, shape.to_vec()), &h.to_bytes())
    }

    pub(crate) fn scalar(&mut self, dt: DType, value: f64) -> T {
        self.splat(dt, &[], value)
    }

    /// A splat like `x`.
    pub(crate) fn like(&mut self, x: &T, value: f64) -> T {
        self.splat(x.dt(), &x.ty.shape.clone(), value)
    }

    pub(crate) fn convert(&mut self, x: &T, dt: DType) -> T {
        if x.dt() == dt {
            return x.clone();
        }
        if dt == DType::Bool {
            let z = self.like(x, 0.0);
            return self.compare("NE", x, &z);
        }
        self.ew("convert", &[x], dt)
    }

    pub(crate) fn reshape(&mut self, x: &T, shape: &[u64]) -> T {
        if x.shape() == shape {
            return x.clone();
        }
        self.op("reshape", &[x], &Ty::new(x.dt(), shape.to_vec()))
    }

    pub(crate) fn transpose(&mut self, x: &T, perm: &[usize]) -> T {
        if perm.iter().enumerate().all(|(i, &p)| i == p) {
            return x.clone();
        }
        let shape: Vec<u64> = perm.iter().map(|&p| x.shape()[p]).collect();
        let p: Vec<i64> = perm.iter().map(|&p| p as i64).collect();
        self.op_full(
            "transpose",
            &[x],
            &format!("permutation = {}", arr(&p)),
            &Ty::new(x.dt(), shape),
        )
    }

    pub(crate) fn broadcast_in_dim(&mut self, x: &T, dims: &[usize], shape: &[u64]) -> T {
        let d: Vec<i64> = dims.iter().map(|&p| p as i64).collect();
        self.op_full(
            "broadcast_in_dim",
            &[x],
            &format!("broadcast_dimensions = {}", arr(&d)),
            &Ty::new(x.dt(), shape.to_vec()),
        )
    }

    /// Numpy-style broadcast of `x` to `shape` (right-aligned).
    pub(crate) fn bcast_to(&mut self, x: &T, shape: &[u64]) -> T {
        if x.shape() == shape {
            return x.clone();
        }
        let off = shape.len() - x.rank();
        let dims: Vec<usize> = (off..shape.len()).collect();
        self.broadcast_in_dim(x, &dims, shape)
    }

    pub(crate) fn compare(&mut self, dir: &str, a: &T, b: &T) -> T {
        let ty = Ty::new(DType::Bool, a.shape().to_vec());
        let attr = format!("comparison_direction = #stablehlo<comparison_direction {dir}>");
        self.op_full("compare", &[a, b], &attr, &ty)
    }

    pub(crate) fn select(&mut self, p: &T, a: &T, b: &T) -> T {
        self.ew("select", &[p, a, b], a.dt())
    }

    pub(crate) fn slice(&mut self, x: &T, start: &[i64], limit: &[i64], strides: &[i64]) -> T {
        let shape: Vec<u64> = (0..x.rank())
            .map(|i| {
                let n = limit[i] - start[i];
                if n <= 0 { 0 } else { ((n + strides[i] - 1) / strides[i]) as u64 }
            })
            .collect();
        let attr = format!(
            "start_indices = {}, limit_indices = {}, strides = {}",
            arr(start),
            arr(limit),
            arr(strides)
        );
        self.op_full("slice", &[x], &attr, &Ty::new(x.dt(), shape))
    }

    pub(crate) fn concat(&mut self, xs: &[&T], axis: usize) -> T {
        if xs.len() == 1 {
            return xs[0].clone();
        }
        let mut shape = xs[0].shape().to_vec();
        shape[axis] = xs.iter().map(|t| t.shape()[axis]).sum();
        self.op_full(
            "concatenate",
            xs,
            &format!("dimension = {axis} : i64"),
            &Ty::new(xs[0].dt(), shape),
        )
    }

    /// `stablehlo.reduce` of `x` over `dims` with a binary `body` op (`add`, `maximum`, ...).
    pub(crate) fn reduce(&mut self, x: &T, init: f64, dims: &[usize], body: &str) -> T {
        let init = self.scalar(x.dt(), init);
        let shape: Vec<u64> = x
            .shape()
            .iter()
            .enumerate()
            .filter(|(i, _)| !dims.contains(i))
            .map(|(_, &d)| d)
            .collect();
        let rty = Ty::new(x.dt(), shape);
        let sty = Ty::new(x.dt(), vec![]).mlir();
        let d: Vec<i64> = dims.iter().map(|&p| p as i64).collect();
        let r = self.fresh();
        let (a, b, c) = (self.fresh(), self.fresh(), self.fresh());
        self.pad();
        let _ = writeln!(
            self.body,
            "{r} = \"stablehlo.reduce\"({}, {}) <{{dimensions = {}}}> ({{",
            x.name,
            init.name,
            arr(&d)
        );
        self.pad();
        let _ = writeln!(self.body, "^bb0({a}: {sty}, {b}: {sty}):");
        self.pad();
        let _ =
            writeln!(self.body, "  {c} = \"stablehlo.{body}\"({a}, {b}) : ({sty}, {sty}) -> {sty}");
        self.pad();
        let _ = writeln!(self.body, "  \"stablehlo.return\"({c}) : ({sty}) -> ()");
        self.pad();
        let _ = writeln!(self.body, "}}) : ({}, {sty}) -> {}", x.ty.mlir(), rty.mlir());
        T { name: r, ty: rty }
    }

    /// `stablehlo.reduce_window` with a binary body.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn reduce_window(
        &mut self,
        x: &T,
        init: f64,
        body: &str,
        window: &[i64],
        strides: &[i64],
        dilations: &[i64],
        padding: &[(i64, i64)],
    ) -> T {
        let init = self.scalar(x.dt(), init);
        let shape: Vec<u64> = (0..x.rank())
            .map(|i| {
                let padded = x.shape()[i] as i64 + padding[i].0 + padding[i].1;
                let eff = (window[i] - 1) * dilations[i] + 1;
                if padded < eff { 0 } else { ((padded - eff) / strides[i] + 1) as u64 }
            })
            .collect();
        let rty = Ty::new(x.dt(), shape);
        let sty = Ty::new(x.dt(), vec![]).mlir();
        let r = self.fresh();
        let (a, b, c) = (self.fresh(), self.fresh(), self.fresh());
        let pads: Vec<String> = padding.iter().map(|(l, h)| format!("[{l}, {h}]")).collect();
        self.pad();
        let _ = writeln!(
            self.body,
            "{r} = \"stablehlo.reduce_window\"({}, {}) <{{padding = dense<[{}]> : tensor<{}x2xi64>, window_dimensions = {}, window_strides = {}, window_dilations = {}}}> ({{",
            x.name,
            init.name,
            pads.join(", "),
            x.rank(),
            arr(window),
            arr(strides),
            arr(dilations)
        );
        self.pad();
        let _ = writeln!(self.body, "^bb0({a}: {sty}, {b}: {sty}):");
        self.pad();
        let _ =
            writeln!(self.body, "  {c} = \"stablehlo.{body}\"({a}, {b}) : ({sty}, {sty}) -> {sty}");
        self.pad();
        let _ = writeln!(self.body, "  \"stablehlo.return\"({c}) : ({sty}) -> ()");
        self.pad();
        let _ = writeln!(self.body, "}}) : ({}, {sty}) -> {}", x.ty.mlir(), rty.mlir());
        T { name: r, ty: rty }
    }

    /// Variadic reduce of (values, indices) picking the max (`GT`) or min (`LT`) value and, on
    /// ties, the first (or last) index.
    pub(crate) fn arg_reduce(&mut self, x: &T, axis: usize, dir: &str, last: bool) -> T {
        let idx_ty = Ty::new(DType::I64, x.shape().to_vec());
        let iota = self.op_full("iota", &[], &format!("iota_dimension = {axis} : i64"), &idx_ty);
        let init_v = if dir == "GT" { f64::NEG_INFINITY } else { f64::INFINITY };
        let init_v = if x.dt().is_float() {
            init_v
        } else if dir == "GT" {
            min_of(x.dt())
        } else {
            max_of(x.dt())
        };
        let iv = self.scalar(x.dt(), init_v);
        let ii = self.scalar(DType::I64, 0.0);
        let shape: Vec<u64> =
            x.shape().iter().enumerate().filter(|(i, _)| *i != axis).map(|(_, &d)| d).collect();
        let vty = Ty::new(x.dt(), shape.clone());
        let ity = Ty::new(DType::I64, shape);
        let sv = Ty::new(x.dt(), vec![]).mlir();
        let si = Ty::new(DType::I64, vec![]).mlir();
        let sb = Ty::new(DType::Bool, vec![]).mlir();
        let r = self.fresh();
        let names: Vec<String> = (0..10).map(|_| self.fresh()).collect();
        let [a, ai, b, bi, better, eq, ilt, pick, v, i] =
            <[String; 10]>::try_from(names).unwrap_or_else(|_| unreachable!());
        let tie = if last { "GT" } else { "LT" };
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{r}:2 = \"stablehlo.reduce\"({}, {}, {}, {}) <{{dimensions = array<i64: {axis}>}}> ({{",
            x.name, iota.name, iv.name, ii.name
        );
        let _ = writeln!(s, "^bb0({a}: {sv}, {ai}: {si}, {b}: {sv}, {bi}: {si}):");
        let _ = writeln!(
            s,
            "  {better} = \"stablehlo.compare\"({a}, {b}) <{{comparison_direction = #stablehlo<comparison_direction {dir}>}}> : ({sv}, {sv}) -> {sb}"
        );
        let _ = writeln!(
            s,
            "  {eq} = \"stablehlo.compare\"({a}, {b}) <{{comparison_direction = #stablehlo<comparison_direction EQ>}}> : ({sv}, {sv}) -> {sb}"
        );
        let _ = writeln!(
            s,
            "  {ilt} = \"stablehlo.compare\"({ai}, {bi}) <{{comparison_direction = #stablehlo<comparison_direction {tie}>}}> : ({si}, {si}) -> {sb}"
        );
        let _ = writeln!(s, "  {pick} = \"stablehlo.and\"({eq}, {ilt}) : ({sb}, {sb}) -> {sb}");
        let p2 = format!("{pick}_o");
        let _ = writeln!(s, "  {p2} = \"stablehlo.or\"({better}, {pick}) : ({sb}, {sb}) -> {sb}");
        let _ = writeln!(
            s,
            "  {v} = \"stablehlo.select\"({p2}, {a}, {b}) : ({sb}, {sv}, {sv}) -> {sv}"
        );
        let _ = writeln!(
            s,
            "  {i} = \"stablehlo.select\"({p2}, {ai}, {bi}) : ({sb}, {si}, {si}) -> {si}"
        );
        let _ = writeln!(s, "  \"stablehlo.return\"({v}, {i}) : ({sv}, {si}) -> ()");
        let _ = writeln!(
            s,
            "}}) : ({}, {}, {sv}, {si}) -> ({}, {})",
            x.ty.mlir(),
            idx_ty.mlir(),
            vty.mlir(),
            ity.mlir()
        );
        for line in s.lines() {
            self.pad();
            self.body.push_str(line);
            self.body.push('\n');
        }
        T { name: format!("{r}#1"), ty: ity }
    }

    /// `dot_general` with the given dimension numbers; `out_dt` is the preferred result type.
    pub(crate) fn dot_general(
        &mut self,
        a: &T,
        b: &T,
        batch: (&[usize], &[usize]),
        contract: (&[usize], &[usize]),
        out_dt: DType,
    ) -> T {
        let mut shape: Vec<u64> = batch.0.iter().map(|&d| a.shape()[d]).collect();
        for i in 0..a.rank() {
            if !batch.0.contains(&i) && !contract.0.contains(&i) {
                shape.push(a.shape()[i]);
            }
        }
        for i in 0..b.rank() {
            if !batch.1.contains(&i) && !contract.1.contains(&i) {
                shape.push(b.shape()[i]);
            }
        }
        let c = |v: &[usize]| list(&v.iter().map(|&d| d as i64).collect::<Vec<_>>());
        let mut parts = Vec::new();
        if !batch.0.is_empty() {
            parts.push(format!("lhs_batching_dimensions = {}", c(batch.0)));
            parts.push(format!("rhs_batching_dimensions = {}", c(batch.1)));
        }
        parts.push(format!("lhs_contracting_dimensions = {}", c(contract.0)));
        parts.push(format!("rhs_contracting_dimensions = {}", c(contract.1)));
        let attr = format!("dot_dimension_numbers = #stablehlo.dot<{}>", parts.join(", "));
        self.op_full("dot_general", &[a, b], &attr, &Ty::new(out_dt, shape))
    }

    pub(crate) fn iota(&mut self, dt: DType, shape: &[u64], dim: usize) -> T {
        self.op_full(
            "iota",
            &[],
            &format!("iota_dimension = {dim} : i64"),
            &Ty::new(dt, shape.to_vec()),
        )
    }

    /// `stablehlo.dynamic_slice` of `x` at scalar `starts` (one per dim) with static `sizes`.
    pub(crate) fn dynamic_slice(&mut self, x: &T, starts: &[&T], sizes: &[u64]) -> T {
        let mut ops = vec![x];
        ops.extend_from_slice(starts);
        let s: Vec<i64> = sizes.iter().map(|&d| d as i64).collect();
        self.op_full(
            "dynamic_slice",
            &ops,
            &format!("slice_sizes = {}", arr(&s)),
            &Ty::new(x.dt(), sizes.to_vec()),
        )
    }

    /// `stablehlo.dynamic_update_slice`: `x` with `update` written at scalar `starts`.
    pub(crate) fn dynamic_update_slice(&mut self, x: &T, update: &T, starts: &[&T]) -> T {
        let mut ops = vec![x, update];
        ops.extend_from_slice(starts);
        self.op("dynamic_update_slice", &ops, &x.ty.clone())
    }

    /// `stablehlo.reverse` along `dims`.
    pub(crate) fn reverse(&mut self, x: &T, dims: &[usize]) -> T {
        let d: Vec<i64> = dims.iter().map(|&p| p as i64).collect();
        self.op_full("reverse", &[x], &format!("dimensions = {}", arr(&d)), &x.ty.clone())
    }

    // ---- ops with regions (`stablehlo.while`, `stablehlo.if`, `stablehlo.case`) ----
    //
    // Written in this order: `open_regions`, then per region an optional `block` (entry block
    // arguments), its body ops, `end_region` (the `stablehlo.return`), and `next_region` before
    // every region but the first; `close_regions` writes the signature and returns the results.
    // Region bodies may use values defined above them (StableHLO's control-flow regions are not
    // isolated from above); values defined inside a region are not visible after it.

    /// Starts `%r = "stablehlo.<name>"(operands) ({` with `n_results` results.
    pub(crate) fn open_regions(&mut self, name: &str, operands: &[&T], n_results: usize) -> String {
        let r = self.fresh();
        self.pad();
        let ops = operands.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(", ");
        let lhs = if n_results == 1 { r.clone() } else { format!("{r}:{n_results}") };
        let _ = writeln!(self.body, "{lhs} = \"stablehlo.{name}\"({ops}) ({{");
        self.indent += 1;
        r
    }

    /// The entry block of the current region, with one argument per type.
    pub(crate) fn block(&mut self, tys: &[Ty]) -> Vec<T> {
        let args: Vec<T> = tys.iter().map(|t| T { name: self.fresh(), ty: t.clone() }).collect();
        let decl = args.iter().map(|a| format!("{}: {}", a.name, a.ty.mlir())).collect::<Vec<_>>();
        self.indent -= 1;
        self.pad();
        self.indent += 1;
        let _ = writeln!(self.body, "^bb0({}):", decl.join(", "));
        args
    }

    /// Ends the current region by returning `vals`.
    pub(crate) fn end_region(&mut self, vals: &[&T]) {
        self.pad();
        let names = vals.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(", ");
        let tys = vals.iter().map(|t| t.ty.mlir()).collect::<Vec<_>>().join(", ");
        let _ = writeln!(self.body, "\"stablehlo.return\"({names}) : ({tys}) -> ()");
        self.indent -= 1;
    }

    /// Starts the next region of the op.
    pub(crate) fn next_region(&mut self) {
        self.pad();
        self.body.push_str("}, {\n");
        self.indent += 1;
    }

    /// Ends the op opened as `r` with `operands`, giving results of types `results`.
    pub(crate) fn close_regions(&mut self, r: &str, operands: &[&T], results: &[Ty]) -> Vec<T> {
        self.pad();
        let tys = operands.iter().map(|t| t.ty.mlir()).collect::<Vec<_>>().join(", ");
        let rtys = results.iter().map(Ty::mlir).collect::<Vec<_>>().join(", ");
        let _ = writeln!(self.body, "}}) : ({tys}) -> ({rtys})");
        if results.len() == 1 {
            return vec![T { name: r.to_owned(), ty: results[0].clone() }];
        }
        results
            .iter()
            .enumerate()
            .map(|(i, t)| T { name: format!("{r}#{i}"), ty: t.clone() })
            .collect()
    }

    /// Where the body ends and how deep regions nest, to undo a failed attempt.
    pub(crate) fn mark(&self) -> (usize, usize) {
        (self.body.len(), self.indent)
    }

    /// Drops everything written since `mark`.
    pub(crate) fn reset(&mut self, mark: (usize, usize)) {
        self.body.truncate(mark.0);
        self.indent = mark.1;
    }
}

fn bool_lit(shape: &[u64], bytes: &[u8]) -> String {
    fn rec(shape: &[u64], bytes: &[u8], pos: &mut usize, out: &mut String) {
        if shape.is_empty() {
            out.push_str(if bytes.get(*pos).copied().unwrap_or(0) != 0 { "true" } else { "false" });
            *pos += 1;
            return;
        }
        out.push('[');
        for i in 0..shape[0] {
            if i > 0 {
                out.push_str(", ");
            }
            rec(&shape[1..], bytes, pos, out);
        }
        out.push(']');
    }
    let mut s = String::new();
    let mut pos = 0;
    rec(shape, bytes, &mut pos, &mut s);
    s
}

pub(crate) fn min_of(dt: DType) -> f64 {
    match dt {
        DType::I8 => f64::from(i8::MIN),
        DType::I16 => f64::from(i16::MIN),
        DType::I32 => f64::from(i32::MIN),
        DType::I64 => i64::MIN as f64,
        DType::U8 | DType::U16 | DType::U32 | DType::U64 | DType::Bool => 0.0,
        _ => f64::NEG_INFINITY,
    }
}

pub(crate) fn max_of(dt: DType) -> f64 {
    match dt {
        DType::I8 => f64::from(i8::MAX),
        DType::I16 => f64::from(i16::MAX),
        DType::I32 => f64::from(i32::MAX),
        DType::I64 => i64::MAX as f64,
        DType::U8 => f64::from(u8::MAX),
        DType::U16 => f64::from(u16::MAX),
        DType::U32 => f64::from(u32::MAX),
        DType::U64 => u64::MAX as f64,
        DType::Bool => 1.0,
        _ => f64::INFINITY,
    }
}
