//! AUD305: ops with no TPU lowering (custom calls for other backends, non-standard domains).

use super::ctx::{is_mlir, label, short_op};
use super::{Ctx, Rule, Severity, Sink};

/// Custom-call targets that XLA's TPU backend handles (sharding annotations, shape checks,
/// Pallas/Mosaic TPU kernels).
const PORTABLE_TARGETS: &[&str] = &[
    "Sharding",
    "SPMDFullToShardShape",
    "SPMDShardToFullShape",
    "shape_assertion",
    "tpu_custom_call",
    "annotate_device_placement",
    "MoveToHost",
    "MoveToDevice",
    "X64Combine",
    "X64SplitLow",
    "X64SplitHigh",
    "TopK",
    "ApproxTopK",
    "PartialReduce",
    "mhlo.sharding",
    "xla.sdy.FuncResultSharding",
    "local_xla.sdy.FuncResultSharding",
];

/// Target name fragments that mean CPU or GPU only code.
const HOST_GPU_FRAGMENTS: &[&str] =
    &["cpu_callback", "gpu_callback", "cublas", "cusolver", "cusparse", "cudnn", "cu_", "hip", "lapack_", "ducc", "__gpu$", "triton", "mosaic_gpu", "rocm"];

/// ONNX domains whose ops are plain ONNX.
const STANDARD_DOMAINS: &[&str] = &["", "ai.onnx"];

tpuport_codes::documented! {
    /// ## What it finds
    /// Ops no TPU compiler will take: `stablehlo.custom_call`s that target CPU or GPU code
    /// (host callbacks from `jax.pure_callback` / `io_callback` / `debug.print`, LAPACK,
    /// cuBLAS/cuSOLVER/cuDNN, Triton kernels) or unknown targets; ONNX ops from non-standard
    /// domains (`com.microsoft` contrib ops from onnxruntime's optimizer, `ai.onnx.ml`
    /// classical-ML ops, custom domains); and, when tpuport's ONNX lowering table is available,
    /// ONNX ops it has no lowering for.
    ///
    /// ## Why it hurts on TPU
    /// A custom call is an opaque function pointer for one backend: an export made on CPU or
    /// GPU embeds kernels that do not exist on TPU, so compilation fails, and host callbacks
    /// stall the device on every step. Contrib and ML-domain ONNX ops have no StableHLO
    /// equivalent and must be decomposed first (in PyTorch/XLA, unlowered ops fall back to the
    /// CPU: `aten::silu_out` made EfficientNet take 10 min/epoch, pytorch/xla#2715).
    ///
    /// ## What to do
    /// Re-export on (or for) TPU without platform-specific kernels: `jax.export` with
    /// `platforms=["tpu"]`, no `pure_callback` / `debug.print` in the step, linear algebra
    /// through `jax.lax.linalg`; export ONNX from the framework without onnxruntime graph
    /// optimizations (no `com.microsoft` fusions), and run classical-ML ops on the host.
    ///
    /// ## References
    /// - [StableHLO custom_call](https://github.com/openxla/stablehlo/blob/main/docs/spec.md#custom_call)
    /// - [jax.export platforms](https://docs.jax.dev/en/latest/export/export.html)
    /// - pytorch/xla#2715, pytorch/xla#1412 (ops falling back to CPU)
    pub(crate) struct NoTpuLowering;
}

impl Rule for NoTpuLowering {
    fn check(cx: &Ctx<'_>, sink: &mut Sink<'_>) {
        let mut bad = Vec::new(); // certainly not on TPU
        let mut unknown = Vec::new(); // custom call of unknown portability
        let mut what: Vec<String> = Vec::new();
        let mut by_tpuport = false; // some op is flagged only because `tpuport lower` lacks it
        let mut onnx_ops = false; // some flagged op is an ONNX node, not a custom call
        for (g, n) in cx.nodes() {
            if is_mlir(n) {
                if short_op(n) != "custom_call" {
                    continue;
                }
                let target = n.attr("call_target_name").and_then(|a| a.as_str()).unwrap_or("").trim_matches('"').to_owned();
                if PORTABLE_TARGETS.contains(&target.as_str()) {
                    continue;
                }
                let lower = target.to_ascii_lowercase();
                if HOST_GPU_FRAGMENTS.iter().any(|f| lower.contains(f)) {
                    bad.push(label(g, n));
                } else {
                    unknown.push(label(g, n));
                }
                let w = format!("custom_call @{target}");
                if !what.contains(&w) {
                    what.push(w);
                }
            } else {
                let nonstandard = !STANDARD_DOMAINS.contains(&n.domain.as_str())
                    && !cx.model.functions.iter().any(|f| f.name == format!("{}::{}", n.domain, n.op));
                let opset = cx
                    .model
                    .metadata
                    .opsets
                    .iter()
                    .find(|(d, _)| d == &n.domain || (d.is_empty() && n.domain == "ai.onnx"))
                    .map_or(0, |(_, v)| *v);
                let unlowered = !nonstandard
                    && cx.opts.onnx_lowering.is_some_and(|h| !h(&n.op, &n.domain, opset));
                if nonstandard || unlowered {
                    onnx_ops = true;
                    bad.push(label(g, n));
                    if unlowered {
                        by_tpuport = true;
                    }
                    let w = n.qualified_op();
                    if !what.contains(&w) {
                        what.push(w);
                    }
                }
            }
        }
        if bad.is_empty() && unknown.is_empty() {
            return;
        }
        let severity = if bad.is_empty() { Severity::Warning } else { sink.default_severity() };
        let count = bad.len() + unknown.len();
        what.truncate(6);
        bad.extend(unknown);
        sink.emit_at(
            severity,
            "Ops with no TPU lowering".to_owned(),
            format!("{count} op(s) have no TPU lowering: {}", what.join(", ")),
            bad,
            if by_tpuport {
                "`tpuport lower` has no rule for these ONNX ops (see docs/lower.md): decompose them in the exporter, move them to the host, or export StableHLO from the framework (torch_xla / jax.export); otherwise re-export without platform kernels, host callbacks or contrib fusions"
            } else if onnx_ops {
                // An ONNX model: the StableHLO advice (jax.export platforms) does not apply.
                "these ops are outside the standard ONNX domain: run classical-ML (`ai.onnx.ml`) ops on the host, export ONNX without onnxruntime's contrib (`com.microsoft`) fusions, and decompose custom-domain ops in the exporter"
            } else {
                "re-export for TPU without platform kernels or host callbacks (jax.export platforms=[\"tpu\"]); export ONNX without onnxruntime contrib fusions; run classical-ML ops on the host"
            },
        );
    }
}
