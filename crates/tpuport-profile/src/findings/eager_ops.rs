//! PRF202: JAX ops compiled one by one outside `jit`.

use std::collections::BTreeMap;

use super::{Ctx, Draft, Rule, Sink};

/// Distinct single-primitive modules from which the finding fires.
const MIN_DISTINCT: usize = 10;

/// `jax.lax` primitives that show up as `jit(<primitive>)` when run eagerly.
const PRIMITIVES: &[&str] = &[
    "abs", "acos", "add", "and", "argmax", "argmin", "asin", "atan", "atan2", "bitcast_convert_type",
    "broadcast_in_dim", "cbrt", "ceil", "clamp", "concatenate", "conv_general_dilated",
    "convert_element_type", "copy", "cos", "cosh", "cumsum", "cumprod", "cummax", "div",
    "dot_general", "dynamic_slice", "dynamic_update_slice", "eq", "erf", "exp", "exp2", "expm1",
    "floor", "gather", "ge", "gt", "integer_pow", "iota", "is_finite", "le", "log", "log1p",
    "logistic", "lt", "max", "min", "mul", "ne", "neg", "not", "or", "pad", "pow", "reduce_and",
    "reduce_max", "reduce_min", "reduce_or", "reduce_prod", "reduce_sum", "rem", "reshape",
    "rev", "round", "rsqrt", "scatter", "scatter-add", "scatter_add", "select_n", "sign", "sin",
    "sinh", "slice", "sort", "sqrt", "square", "squeeze", "sub", "tan", "tanh", "transpose",
    "xor", "expand_dims", "split", "argsort", "clip", "where", "stop_gradient", "random_bits",
    "random_wrap", "random_unwrap", "random_seed", "threefry2x32",
];

/// Whether a compiled function name is a single `lax` primitive run eagerly.
pub(crate) fn is_primitive(name: &str) -> bool {
    PRIMITIVES.contains(&name)
}

tpuport_codes::documented! {
    /// ## What it finds
    /// A JAX log (`jax_log_compiles`) with many modules that hold a single primitive
    /// (`Compiling jit(convert_element_type) …`, `jit(broadcast_in_dim)`, `jit(add)`): array
    /// operations executed eagerly, outside any `jax.jit`, each compiled and dispatched on
    /// its own. Reported from ten distinct primitives.
    ///
    /// ## Why it hurts on TPU
    /// Every eager op is a separate XLA program: one dispatch, one device round trip and, for
    /// each new shape, one compilation. A handful at start-up is normal (creating parameters);
    /// many of them means part of the training step runs op by op.
    ///
    /// ## What to do
    /// Move the array code into the jitted step function (or jit the helper that holds it);
    /// keep host-side bookkeeping in NumPy.
    ///
    /// ## References
    /// - jax `docs/debugging/slow_tracing_compilation.md` (many `jit(<op>)` modules)
    pub(crate) struct EagerOps;
}

impl Rule for EagerOps {
    fn check(cx: &Ctx<'_>, sink: &mut Sink<'_>) {
        for (path, log) in &cx.ev.jax {
            let mut eager: BTreeMap<&str, usize> = BTreeMap::new();
            for c in &log.compiles {
                if is_primitive(&c.function) {
                    *eager.entry(c.function.as_str()).or_default() += 1;
                }
            }
            if eager.len() < MIN_DISTINCT {
                continue;
            }
            let total: usize = eager.values().sum();
            let mut list: Vec<(&str, usize)> = eager.into_iter().collect();
            list.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
            sink.emit(Draft {
                title: format!("{} primitives compiled eagerly", list.len()),
                message: format!("{total} single-primitive modules ({} distinct) were compiled: array ops run outside jax.jit", list.len()),
                details: vec![list.iter().take(12).map(|(n, c)| format!("{n} ×{c}")).collect::<Vec<_>>().join(", ")],
                evidence: vec![path.clone()],
                fix: Some("move the array code into the jitted step (or jit the helper that holds it)".to_owned()),
                ..Draft::default()
            });
        }
    }
}
