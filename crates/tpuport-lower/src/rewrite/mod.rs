//! StableHLO → StableHLO rewrites used by `tpuport validate` and the CPU compile paths. Each works on a [`Model`] read by
//! the `tpuport_formats` StableHLO importer and leaves it printable with
//! `tpuport_formats::stablehlo::print_model`, which the PJRT plugins compile.
//!
//! - [`emulate_matmul`]: TPU matmul numerics for f32 `dot_general` / `convolution` on any
//!   backend (one, three or six bf16 passes with f32 accumulation);
//! - [`retype`]: every internal tensor of some float types becomes another float type, the
//!   `@main` signature kept (`--emulate bf16`, and the f32 reference of a mixed-precision
//!   module);
//! - [`expose`]: op results of `@main` returned as extra function results, for bisection;
//! - [`unshard`]: an automatically partitioned module as a single-device one;
//! - [`place_shardings`]: the reverse, a sharding per `@main` argument (a plan to compile);
//! - [`shardy_constraints_to_gspmd`]: Shardy sharding constraints as the GSPMD annotations
//!   they mean, for a compile with the GSPMD partitioner;
//! - [`unroll_depthwise`]: depthwise convolutions as per-tap multiply-adds, which XLA:CPU
//!   runs an order of magnitude faster;
//! - [`pointwise_as_dot`]: 1×1 convolutions as `dot_general`, which XLA:CPU runs up to 2.7×
//!   faster as single layers (no gain measured on whole models, so off by default);
//! - [`for_cpu`]: the last two on a text module, as every compile for the CPU plugin applies
//!   them (the depthwise one unless told otherwise).
//!
//! Graph surgery conventions: new values get names starting with `%tpuport_` (unique in their
//! graph); new nodes copy the location of the node they serve, so a report still points at the
//! user's source line; after a rewrite every value's `producer` is recomputed.

mod conv;
pub mod depthwise;
mod emulate;
mod expose;
mod place;
pub mod pointwise;
mod retype;
mod shardy;
mod unshard;

pub use depthwise::unroll_depthwise;
pub use emulate::{EmulationStats, MatmulPrecision, emulate_matmul};
pub use expose::{Exposed, expose};
pub use place::place_shardings;
pub use pointwise::pointwise_as_dot;
pub use retype::retype;
pub use shardy::shardy_constraints_to_gspmd;
pub use unshard::unshard;

use tpuport_model::{Attr, Graph, Node, NodeId, TensorType, Value, ValueId, ValueKind};

/// Environment variable naming the rewrites [`for_cpu`] applies, comma-separated:
/// `depthwise`, `pointwise`; `none` (or empty) for none. Unset: [`DEFAULT_CPU_REWRITES`].
/// (The PJRT layer's `TPUPORT_NO_CPU_REWRITE` turns the whole step off.)
pub const CPU_REWRITES_ENV: &str = "TPUPORT_CPU_REWRITES";

/// The CPU rewrites applied when [`CPU_REWRITES_ENV`] is unset: the depthwise unrolling only.
/// It made MobileNetV2 at batch 8 run 5.09× faster; the 1×1 rewrite, 1.15–2.66× faster on
/// single layers, changed whole-model p50 by less than the run-to-run spread on ResNet-50 and
/// MobileNetV2 (docs/runtime.md has both measurements), so it is opt-in.
pub const DEFAULT_CPU_REWRITES: &str = "depthwise";

/// A StableHLO text module as the CPU plugin should compile it: `Some(text)` with its
/// depthwise convolutions unrolled ([`unroll_depthwise`]) and, when asked, its 1×1
/// convolutions turned into `dot_general` ([`pointwise_as_dot`]), as [`CPU_REWRITES_ENV`]
/// selects; `None` when nothing was rewritten (no convolution, none that qualifies) or the
/// text does not parse here (the plugin then compiles the original and reports its own
/// errors).
#[must_use]
pub fn for_cpu(text: &str) -> Option<String> {
    let wanted = std::env::var(CPU_REWRITES_ENV).unwrap_or_else(|_| DEFAULT_CPU_REWRITES.into());
    let (depthwise, pointwise) = cpu_rewrites(&wanted);
    for_cpu_with(text, depthwise, pointwise)
}

/// Which of the depthwise and 1×1 rewrites a [`CPU_REWRITES_ENV`] value names.
#[must_use]
pub fn cpu_rewrites(names: &str) -> (bool, bool) {
    let on = |name: &str| names.split(',').any(|x| x.trim() == name);
    (on("depthwise"), on("pointwise"))
}

/// [`for_cpu`] with the two rewrites chosen by the caller.
#[must_use]
pub fn for_cpu_with(text: &str, depthwise: bool, pointwise: bool) -> Option<String> {
    // a cheap test that spares the parse of the many modules without a convolution
    if !(depthwise || pointwise) || !text.contains("convolution") {
        return None;
    }
    let mut model = tpuport_formats::stablehlo::parse_text(
        std::path::Path::new("module.mlir"),
        text,
        &tpuport_formats::Limits::default(),
    )
    .ok()?;
    let mut n = 0;
    if depthwise {
        n += unroll_depthwise(&mut model);
    }
    if pointwise {
        n += pointwise_as_dot(&mut model);
    }
    if n == 0 {
        return None;
    }
    tpuport_formats::stablehlo::print_model(&model).ok()
}

/// Adds an intermediate value with a fresh `%tpuport_<hint><n>` name.
pub(crate) fn fresh_value(g: &mut Graph, hint: &str, ty: TensorType) -> ValueId {
    let mut n = g.values.len();
    let mut name = format!("%tpuport_{hint}{n}");
    while g.values.iter().any(|v| v.name == name) {
        n += 1;
        name = format!("%tpuport_{hint}{n}");
    }
    g.add_value(Value { name, ty, kind: ValueKind::Intermediate, producer: None })
}

/// A StableHLO op node with no attributes.
pub(crate) fn simple_op(
    op: &str,
    inputs: &[ValueId],
    output: ValueId,
    location: Option<String>,
) -> Node {
    Node {
        name: String::new(),
        op: op.to_owned(),
        domain: op.split_once('.').map_or("", |(d, _)| d).to_owned(),
        inputs: inputs.iter().map(|&i| Some(i)).collect(),
        outputs: vec![output],
        attrs: Vec::new(),
        subgraphs: Vec::new(),
        location,
        scope: None,
    }
}

/// Sets every value's producer from the node list (after nodes were inserted or reordered).
pub(crate) fn recompute_producers(g: &mut Graph) {
    for v in &mut g.values {
        v.producer = None;
    }
    for (i, n) in g.nodes.iter().enumerate() {
        let id = NodeId(u32::try_from(i).unwrap_or(u32::MAX));
        for o in &n.outputs {
            if let Some(v) = g.values.get_mut(o.0 as usize) {
                v.producer = Some(id);
            }
        }
    }
}

/// The type of a value with `dtype` replaced.
pub(crate) fn with_dtype(ty: &TensorType, dtype: tpuport_model::DType) -> TensorType {
    TensorType { dtype: Some(dtype), shape: ty.shape.clone() }
}

/// An integer attribute (`Attr::Int`, or the text `N : i64`).
pub(crate) fn int(n: &Node, name: &str) -> Option<i64> {
    match n.attr(name)? {
        Attr::Int(v) => Some(*v),
        Attr::Text(t) => t.split(':').next()?.trim().parse().ok(),
        _ => None,
    }
}

/// An integer attribute as an index.
pub(crate) fn index(n: &Node, name: &str) -> Option<usize> {
    int(n, name).and_then(|v| usize::try_from(v).ok())
}

/// An integer-array attribute (`Attr::Ints`, or the text `array<i64: 1, 2>` / a dense list).
pub(crate) fn ints(n: &Node, name: &str) -> Option<Vec<i64>> {
    match n.attr(name)? {
        Attr::Ints(v) => Some(v.clone()),
        Attr::Int(v) => Some(vec![*v]),
        Attr::Text(t) => {
            let body = t.split(" : ").next().unwrap_or(t);
            let body = body.strip_prefix("array<i64").unwrap_or(body);
            Some(
                body.split(|c: char| !(c.is_ascii_digit() || c == '-'))
                    .filter_map(|s| s.parse().ok())
                    .collect(),
            )
        }
        _ => None,
    }
}

/// An integer-array attribute as indices.
pub(crate) fn indices(n: &Node, name: &str) -> Option<Vec<usize>> {
    ints(n, name)?.into_iter().map(|v| usize::try_from(v).ok()).collect()
}

/// `attr` is absent or every entry equals `v` (`window_reversal` is a bool array).
pub(crate) fn all_or_absent(n: &Node, name: &str, v: i64) -> bool {
    match n.attr(name) {
        None => true,
        Some(Attr::Text(t)) if t.contains("true") => false,
        Some(Attr::Text(t)) if t.contains("false") => true,
        Some(_) => ints(n, name).is_some_and(|x| x.iter().all(|&e| e == v)),
    }
}
