//! TPU matmul-precision emulation: f32 `dot_general`, `dot` and `convolution` operands get the
//! numerics of the TPU MXU (bf16 multiplies, f32 accumulation), on any backend.
//!
//! With `x → rt(x)` the rounding of f32 to bf16 precision (round to nearest even, kept in f32
//! by `stablehlo.reduce_precision`), operands split as
//! `a = a0 + a1 + a2` with `a0 = rt(a)`, `a1 = rt(a − a0)`, `a2 = rt(a − a0 − a1)`, and:
//! - `DEFAULT` (1 pass): `op(a0, b0)`;
//! - `HIGH` (3 passes): `op(a0, b0) + op(a0, b1) + op(a1, b0)`;
//! - `HIGHEST` (6 passes): the terms with `i + j ≤ 2`.
//!
//! Products of bf16 values are exact in f32 and both ops are bilinear, so each pass is one op
//! of the original kind on rounded f32 operands; terms are summed smallest first.
//!
//! An explicit `precision_config` in the module (JAX writes `#stablehlo<precision HIGHEST>`
//! for `precision=HIGHEST`) is a per-op override: an op runs at the higher of the requested
//! level and its own. Ops with an `algorithm` attribute, or whose operands are not both f32,
//! are left as they are and counted in [`EmulationStats::skipped`].

use serde::Serialize;
use tpuport_model::{Attr, DType, Graph, Model, Node, ValueId};

use super::{fresh_value, recompute_producers, simple_op};
use crate::LowerError;

/// TPU matmul precision (JAX `lax.Precision`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MatmulPrecision {
    /// One bf16 pass.
    Default,
    /// Three bf16 passes.
    High,
    /// Six bf16 passes.
    Highest,
}

impl MatmulPrecision {
    /// bf16 passes per op.
    #[must_use]
    pub const fn passes(self) -> usize {
        match self {
            MatmulPrecision::Default => 1,
            MatmulPrecision::High => 3,
            MatmulPrecision::Highest => 6,
        }
    }

    /// Operand parts (1, 2 or 3 bf16 pieces).
    const fn parts(self) -> usize {
        match self {
            MatmulPrecision::Default => 1,
            MatmulPrecision::High => 2,
            MatmulPrecision::Highest => 3,
        }
    }

    /// The level named in a `precision_config` text (the highest of its entries).
    #[must_use]
    pub fn from_config(text: &str) -> Option<MatmulPrecision> {
        text.split(|c: char| !c.is_ascii_alphanumeric())
            .filter_map(|w| match w {
                "DEFAULT" => Some(MatmulPrecision::Default),
                "HIGH" => Some(MatmulPrecision::High),
                "HIGHEST" => Some(MatmulPrecision::Highest),
                _ => None,
            })
            .max()
    }
}

/// What [`emulate_matmul`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct EmulationStats {
    /// Ops emulated at DEFAULT.
    pub default: usize,
    /// Ops emulated at HIGH.
    pub high: usize,
    /// Ops emulated at HIGHEST.
    pub highest: usize,
    /// Ops whose explicit `precision_config` raised them above the requested level.
    pub raised_by_precision_config: usize,
    /// Ops left unchanged, with why (`%12 stablehlo.dot_general: operands bf16`).
    pub skipped: Vec<String>,
}

/// Rewrites every f32 `dot_general` and `convolution` of every function (and region) of
/// `model` to the TPU numerics of `level` (see the module docs).
///
/// # Errors
/// [`LowerError::Invalid`] when a matmul node lacks an operand.
pub fn emulate_matmul(
    model: &mut Model,
    level: MatmulPrecision,
) -> Result<EmulationStats, LowerError> {
    let mut stats = EmulationStats::default();
    graph(&mut model.graph, level, &mut stats)?;
    for f in &mut model.functions {
        graph(f, level, &mut stats)?;
    }
    Ok(stats)
}

fn graph(
    g: &mut Graph,
    level: MatmulPrecision,
    stats: &mut EmulationStats,
) -> Result<(), LowerError> {
    let old = std::mem::take(&mut g.nodes);
    let mut nodes = Vec::with_capacity(old.len());
    for mut node in old {
        for (_, sg) in &mut node.subgraphs {
            graph(sg, level, stats)?;
        }
        if !matches!(
            node.op.as_str(),
            "stablehlo.dot_general" | "stablehlo.dot" | "stablehlo.convolution"
        ) {
            nodes.push(node);
            continue;
        }
        let label = format!("{} {}", node.name, node.op);
        let (Some(Some(a)), Some(Some(b)), Some(&out)) =
            (node.inputs.first().copied(), node.inputs.get(1).copied(), node.outputs.first())
        else {
            return Err(LowerError::Invalid(format!(
                "{label}: expected two operands and a result"
            )));
        };
        let dt = |v: ValueId| g.value(v).ty.dtype;
        if (dt(a), dt(b), dt(out)) != (Some(DType::F32), Some(DType::F32), Some(DType::F32)) {
            let name = |d: Option<DType>| d.map_or("?", DType::name);
            stats.skipped.push(format!(
                "{label}: types ({}, {}) -> {}, only f32 ops are emulated",
                name(dt(a)),
                name(dt(b)),
                name(dt(out))
            ));
            nodes.push(node);
            continue;
        }
        if node.attr("algorithm").is_some() {
            stats.skipped.push(format!("{label}: has an explicit dot algorithm"));
            nodes.push(node);
            continue;
        }
        let own = node
            .attr("precision_config")
            .and_then(Attr::as_str)
            .and_then(MatmulPrecision::from_config);
        let eff = own.map_or(level, |p| p.max(level));
        if eff > level {
            stats.raised_by_precision_config += 1;
        }
        match eff {
            MatmulPrecision::Default => stats.default += 1,
            MatmulPrecision::High => stats.high += 1,
            MatmulPrecision::Highest => stats.highest += 1,
        }
        let loc = node.location.clone();
        let pa = split(g, &mut nodes, a, eff.parts(), &loc);
        let pb = split(g, &mut nodes, b, eff.parts(), &loc);
        if eff == MatmulPrecision::Default {
            node.inputs[0] = Some(pa[0]);
            node.inputs[1] = Some(pb[0]);
            nodes.push(node);
            continue;
        }
        // terms i + j < parts, summed from the smallest (largest i + j) to the largest
        let mut terms: Vec<(usize, usize)> = Vec::new();
        for s in (0..eff.parts()).rev() {
            for i in 0..=s {
                terms.push((i, s - i));
            }
        }
        let out_ty = g.value(out).ty.clone();
        let mut acc: Option<ValueId> = None;
        let last = terms.len() - 1;
        for (k, (i, j)) in terms.into_iter().enumerate() {
            let prod = fresh_value(g, "pass", out_ty.clone());
            let mut p = node.clone();
            p.inputs[0] = Some(pa[i]);
            p.inputs[1] = Some(pb[j]);
            p.outputs = vec![prod];
            nodes.push(p);
            acc = Some(match acc {
                None => prod,
                Some(prev) => {
                    let sum = if k == last { out } else { fresh_value(g, "acc", out_ty.clone()) };
                    nodes.push(simple_op("stablehlo.add", &[prev, prod], sum, loc.clone()));
                    sum
                }
            });
        }
    }
    g.nodes = nodes;
    recompute_producers(g);
    Ok(())
}

/// Splits f32 `x` into `parts` bf16-representable f32 pieces, appending the ops to `nodes`.
///
/// Rounding is `stablehlo.reduce_precision` to bf16's 8 exponent / 7 mantissa bits (round to
/// nearest even, as a convert to bf16 does). A `convert` f32 → bf16 → f32 pair would say the
/// same, but XLA's algebraic simplifier may drop such pairs (`xla_allow_excess_precision`,
/// on by default), which silently undoes the emulation; `reduce_precision` is kept.
fn split(
    g: &mut Graph,
    nodes: &mut Vec<Node>,
    x: ValueId,
    parts: usize,
    loc: &Option<String>,
) -> Vec<ValueId> {
    let ty = g.value(x).ty.clone();
    let mut out = Vec::with_capacity(parts);
    let mut rest = x;
    for k in 0..parts {
        let piece = fresh_value(g, "bf16_", ty.clone());
        let mut rp = simple_op("stablehlo.reduce_precision", &[rest], piece, loc.clone());
        rp.attrs = vec![
            ("exponent_bits".to_owned(), Attr::Text("8 : i32".to_owned())),
            ("mantissa_bits".to_owned(), Attr::Text("7 : i32".to_owned())),
        ];
        nodes.push(rp);
        out.push(piece);
        if k + 1 < parts {
            let r = fresh_value(g, "rem", ty.clone());
            nodes.push(simple_op("stablehlo.subtract", &[rest, piece], r, loc.clone()));
            rest = r;
        }
    }
    out
}
