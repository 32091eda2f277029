//! AUD303: random number generation in the graph.

use super::ctx::{input, is_constant, is_mlir, label, op_counts, short_op};
use super::{Ctx, Rule, Sink};

tpuport_codes::documented! {
    /// ## What it finds
    /// Random number generation inside the graph: ONNX `RandomNormal`, `RandomUniform`,
    /// `RandomNormalLike`, `RandomUniformLike`, `Multinomial`, `Bernoulli`, `Dropout` with a
    /// non-constant `training_mode`, and `stablehlo.rng` / `stablehlo.rng_bit_generator`.
    ///
    /// ## Why it hurts on TPU
    /// Random streams are backend-specific: the numbers on TPU will not match CPU/GPU runs or
    /// onnxruntime, so parity checks need statistical tolerances; stateful ONNX random ops
    /// carry seeds XLA treats as constants (the same "random" tensor every step), and
    /// `rng_bit_generator` state must be threaded through the step explicitly.
    ///
    /// ## What to do
    /// Pass the randomness in (a key or noise tensor as an input), or use JAX's explicit keys
    /// (`jax.random.split` per step, inside `jit`); compare outputs with deterministic inputs
    /// or distribution-level tests; drop dropout from inference exports.
    ///
    /// ## References
    /// - [StableHLO rng_bit_generator](https://github.com/openxla/stablehlo/blob/main/docs/spec.md#rng_bit_generator)
    /// - [JAX pseudorandom numbers](https://docs.jax.dev/en/latest/random-numbers.html)
    pub(crate) struct RandomOps;
}

const ONNX: &[&str] =
    &["RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli"];

impl Rule for RandomOps {
    fn check(cx: &Ctx<'_>, sink: &mut Sink<'_>) {
        let mut nodes = Vec::new();
        let mut ops = Vec::new();
        for (g, n) in cx.nodes() {
            let hit = if is_mlir(n) {
                matches!(short_op(n).as_str(), "rng" | "rng_bit_generator")
            } else if n.op == "Dropout" {
                input(n, 2).is_some_and(|t| !is_constant(g, t))
            } else {
                ONNX.contains(&n.op.as_str())
            };
            if hit {
                nodes.push(label(g, n));
                ops.push(n.op.clone());
            }
        }
        if nodes.is_empty() {
            return;
        }
        sink.emit(
            "Random ops in the graph".to_owned(),
            format!("{} random op(s) ({}); TPU random streams differ from CPU/GPU and stateful seeds become constants", nodes.len(), op_counts(&ops)),
            nodes,
            "pass keys or noise in as inputs (jax.random keys split per step); compare outputs with deterministic inputs",
        );
    }
}
