//! AUD203: complex tensors and FFTs.

use tpuport_model::DType;

use super::ctx::{is_mlir, label, short_op, typed_values};
use super::{Ctx, Rule, Sink};

tpuport_codes::documented! {
    /// ## What it finds
    /// complex64 / complex128 tensors and Fourier transforms (ONNX `DFT` / `STFT`,
    /// `stablehlo.fft`, `stablehlo.complex` / `real` / `imag`).
    ///
    /// ## Why it hurts on TPU
    /// TPUs have no complex arithmetic units and no float64: complex64 math is split into f32
    /// real/imaginary parts by XLA, complex128 is emulated or rejected, and FFTs run on the
    /// vector units rather than the MXU, typically far below the chip's matmul peak.
    ///
    /// ## What to do
    /// Keep complex math in complex64 at most; where possible express transforms as real
    /// matmuls (a DFT of small size as a matmul with a precomputed basis runs on the MXU), or
    /// do them on the host.
    ///
    /// ## References
    /// - [StableHLO fft](https://github.com/openxla/stablehlo/blob/main/docs/spec.md#fft)
    /// - [Cloud TPU performance guide](https://cloud.google.com/tpu/docs/performance-guide)
    pub(crate) struct Complex;
}

impl Rule for Complex {
    fn check(cx: &Ctx<'_>, sink: &mut Sink<'_>) {
        let (values, mut ops) = typed_values(cx, &[DType::C64, DType::C128]);
        for (g, n) in cx.nodes() {
            let fft = if is_mlir(n) {
                matches!(short_op(n).as_str(), "fft" | "complex" | "real" | "imag")
            } else {
                matches!(n.op.as_str(), "DFT" | "STFT")
            };
            if fft && !ops.iter().any(|(_, m)| std::ptr::eq(*m, n)) {
                ops.push((g, n));
            }
        }
        if values.is_empty() && ops.is_empty() {
            return;
        }
        let nodes: Vec<String> = ops.iter().map(|(g, n)| label(g, n)).chain(values.iter().cloned()).collect();
        sink.emit(
            "Complex tensors / FFTs".to_owned(),
            format!(
                "{} op(s) compute on complex numbers or run FFTs, {} input/weight tensor(s) are complex; TPUs have no complex units",
                ops.len(),
                values.len()
            ),
            nodes,
            "keep complex math in complex64 at most, or express small transforms as real matmuls with a precomputed basis",
        );
    }
}
