//! What the reader should know about the figures: the conventions, whether the TPU compiler
//! checked them, scaling from the module's batch, `--dim`s not applied, argument-role notes,
//! and why samples/s is not given when a sanity check refused it.

use super::Passes;
use crate::compiler_check::CompilerInput;
use crate::cost::CostReport;
use crate::roles::ArgRoles;

/// The report's notes.
pub(super) fn notes(p: &Passes<'_>, dim_notes: Vec<String>) -> Vec<String> {
    let mut notes = vec![
        "FLOPs follow XLA's HloCostAnalysis convention (conv padding taps excluded, elementwise 1/element); `mxu_flops` is the dense FlopCounterMode convention".to_owned(),
        "padded figures use the layouts the TPU compiler picks (least padded dimension order, measured on libtpu); roofline times are estimates (no overlap, no VPU model); prices are low confidence".to_owned(),
    ];
    if let CompilerInput::Unavailable(why) = &p.opts.compiler {
        notes.push(format!("not checked against the TPU compiler ({why}): figures are estimates"));
    }
    notes.extend(p.memory.notes.iter().cloned());
    let (batch, module_batch) = (p.batch, p.module_batch);
    if batch != module_batch {
        notes.push(if p.holding.onnx {
            format!(
                "the model's inputs are static at batch {module_batch} (--batch binds only a symbolic leading dim): per-sample FLOPs, bytes and activation memory are scaled from batch {module_batch}; to analyse the graph itself at batch {batch}, give each input's shape with --input-shape NAME={batch}x..."
            )
        } else {
            format!(
                "the module's shapes are static at batch {module_batch}: it cannot be re-lowered at batch {batch} here (re-export it, or use `tpuport lower` on an ONNX model); per-sample FLOPs, bytes and activation memory are scaled from batch {module_batch}"
            )
        });
    }
    notes.extend(dim_notes);
    if p.holding.by_args {
        notes.extend(p.roles.notes.iter().cloned());
    }
    if let Some(r) = &p.refused {
        notes.push(format!("samples/s not given: {r}"));
    }
    notes
}

/// Sanity checks before samples/s is printed: a reason to refuse it, or `None`.
///
/// - a per-sample cost of zero (nothing counted: samples/s would be infinite or meaningless);
/// - a batch that equals a weight argument's dimension while no data argument has it as its
///   leading dim (the batch was read from a weight: an embedding's vocabulary, a kernel);
/// - samples/s × FLOPs per sample above the chip's peak FLOP/s (physically impossible).
pub(super) fn sanity(
    cost: &CostReport,
    roles: &ArgRoles,
    by_args: bool,
    module_batch: u64,
    head: Option<(f64, f64)>,
) -> Option<String> {
    if cost.totals.flops == 0 {
        return Some("the per-sample cost is 0 FLOPs (no op was counted)".to_owned());
    }
    if by_args && let Some(w) = roles.batch_is_weight_dim(module_batch) {
        return Some(format!(
            "the batch {module_batch} looks read from a weight (`{}` {:?} is used as a weight): name the data arguments with --data-args",
            w.label(),
            w.shape.clone().unwrap_or_default()
        ));
    }
    #[allow(clippy::cast_precision_loss, reason = "estimate")]
    let per_sample = cost.totals.flops as f64 / module_batch.max(1) as f64;
    if let Some((sps, peak)) = head
        && sps * per_sample > peak * (1.0 + 1e-9)
    {
        return Some(format!(
            "{sps:.0} samples/s x {per_sample:.3e} FLOPs per sample exceeds the chip's peak {peak:.3e} FLOP/s"
        ));
    }
    None
}
