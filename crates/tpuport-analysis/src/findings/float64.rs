//! AUD202: float64 tensors.

use tpuport_model::DType;

use super::ctx::{label, typed_values};
use super::{Ctx, Rule, Sink};

tpuport_codes::documented! {
    /// ## What it finds
    /// float64 tensors: inputs, weights or ops computing in f64 (often a leftover NumPy default,
    /// `torch.double`, or `jax_enable_x64`).
    ///
    /// ## Why it hurts on TPU
    /// TPUs have no float64 units. XLA emulates f64 with several f32 operations (or rejects it),
    /// so f64 math runs many times slower and doubles the HBM the tensors take.
    ///
    /// ## What to do
    /// Use float32 (or bfloat16) on the device: cast inputs and weights before export, drop
    /// `jax_enable_x64`, keep f64 only for host-side bookkeeping.
    ///
    /// ## References
    /// - [Cloud TPU performance guide](https://cloud.google.com/tpu/docs/performance-guide)
    /// - jax-ml/jax#7010 (precision across backends)
    pub(crate) struct Float64;
}

impl Rule for Float64 {
    fn check(cx: &Ctx<'_>, sink: &mut Sink<'_>) {
        let (values, ops) = typed_values(cx, &[DType::F64]);
        if values.is_empty() && ops.is_empty() {
            return;
        }
        let nodes: Vec<String> = ops.iter().map(|(g, n)| label(g, n)).chain(values.iter().cloned()).collect();
        sink.emit(
            "float64 tensors".to_owned(),
            format!(
                "{} op(s) compute in float64 and {} input/weight tensor(s) are float64; TPUs emulate f64 slowly and it doubles memory",
                ops.len(),
                values.len()
            ),
            nodes,
            "cast to float32 (or bfloat16) before export; keep f64 on the host",
        );
    }
}
