//! The Summary's top things to fix, most important first: the compiler's refusal, error
//! findings, memory (does not fit one chip; activations that remat would cut), layout (MXU
//! utilization, padded weights), the roofline bound, f32 weights, then the other findings.

use tpuport_model::{DType, ValueKind};

use super::{Fix, Passes};
use crate::findings::Severity;

/// The most fixes the Summary lists.
const MAX_FIXES: usize = 5;

/// Up to [`MAX_FIXES`] fixes, most important first.
pub(super) fn top_fixes(p: &Passes<'_>) -> Vec<Fix> {
    let mut fixes: Vec<Fix> = Vec::new();
    compiler(p, &mut fixes);
    findings(p, &mut fixes, |s| s == Severity::Error);
    memory(p, &mut fixes);
    layout(p, &mut fixes);
    roofline(p, &mut fixes);
    dtype(p, &mut fixes);
    findings(p, &mut fixes, |s| s <= Severity::Warning);
    fixes.truncate(MAX_FIXES);
    fixes
}

fn fix(source: &str, text: String) -> Fix {
    Fix { source: source.into(), code: None, text }
}

fn compiler(p: &Passes<'_>, fixes: &mut Vec<Fix>) {
    if let Some(c) = &p.compiler
        && !c.compiler_fits
    {
        fixes.push(fix(
            "compiler",
            format!(
                "the TPU compiler ({}) refuses the program on {}: it needs {} per device, {} available; shard it over more chips or lower the batch",
                c.compiler,
                c.target,
                gib(c.compiler_bytes),
                gib(c.hbm_limit)
            ),
        ));
    }
}

fn findings(p: &Passes<'_>, fixes: &mut Vec<Fix>, which: impl Fn(Severity) -> bool) {
    for f in p.findings.iter().filter(|f| which(f.severity)) {
        fixes.push(Fix {
            source: "finding".into(),
            code: Some(f.code.clone()),
            text: f.fix.clone().unwrap_or_else(|| f.title.clone()),
        });
    }
}

fn memory(p: &Passes<'_>, fixes: &mut Vec<Fix>) {
    if let Some(f) = p.head_fit()
        && f.replicated_chips.is_none_or(|c| c > 1)
    {
        fixes.push(fix(
            "memory",
            match (&f.replicated, &f.sharded) {
                (_, Some(s)) => format!(
                    "does not fit one {} chip ({} of state + {} per batch vs {} HBM): shard weights{} (FSDP) over {s}",
                    f.chip,
                    gib(f.state_bytes),
                    gib(f.batch_bytes),
                    gib(f.hbm_budget),
                    if p.opts.workload.is_training() {
                        ", gradients and optimizer state"
                    } else {
                        ""
                    }
                ),
                _ => format!(
                    "does not fit any {} slice: {} of state; use a larger generation, remat, or a smaller batch",
                    f.chip,
                    gib(f.state_bytes)
                ),
            },
        ));
    }
    if p.opts.workload.is_training()
        && let Some((_, fp)) = p.memory.padded.iter().find(|(id, _)| Some(id) == p.head.as_ref())
        && let Some(t) = fp.training.iter().find(|t| t.precision == "mixed")
        && t.activations > t.activations_remat.saturating_mul(2)
    {
        fixes.push(fix(
            "memory",
            format!(
                "activations take {} saved for backward; rematerialization (jax.checkpoint / activation checkpointing) cuts them to about {}",
                gib(t.activations),
                gib(t.activations_remat)
            ),
        ));
    }
}

fn layout(p: &Passes<'_>, fixes: &mut Vec<Fix>) {
    let Some(l) = p.head_layout() else { return };
    let total_mxu = p.cost.totals.mxu_flops.max(1);
    for m in l.worst_matmuls.iter().take(2) {
        // Worth a line when padding wastes >= 5 % of the model's MXU work.
        if m.wasted_flops.saturating_mul(20) >= total_mxu
            && let Some(fx) = &m.fix
        {
            fixes.push(fix(
                "layout",
                format!(
                    "`{}` runs at {:.0}% MXU utilization on {}: {fx}",
                    m.node,
                    m.utilization * 100.0,
                    l.chip
                ),
            ));
        }
    }
    if l.weights_padded > l.weights_logical.saturating_add(l.weights_logical / 10)
        && let Some(t) = l.worst_tensors.first()
        && let Some(fx) = &t.fix
    {
        fixes.push(fix(
            "layout",
            format!(
                "tiling pads weights from {} to {}; worst `{}` {:?}: {fx}",
                gib(l.weights_logical),
                gib(l.weights_padded),
                t.name,
                t.shape
            ),
        ));
    }
}

fn roofline(p: &Passes<'_>, fixes: &mut Vec<Fix>) {
    // A partial count says nothing about the bound.
    if p.unbound.is_some() {
        return;
    }
    let Some(r) = p.head_roofline() else { return };
    if r.bound != "memory" {
        return;
    }
    let batch = p.batch;
    fixes.push(fix(
        "roofline",
        match r.compute_bound_batch {
            Some(b) => format!(
                "memory-bound at batch {batch} on {}: a batch of {b} or more per chip keeps the MXUs busy",
                r.chip
            ),
            None => match r.compute_bound_batch_bf16 {
                Some(b) => format!(
                    "memory-bound on {} at any batch while tensors are f32; in bf16 a batch of {b} or more per chip is compute-bound",
                    r.chip
                ),
                None => format!(
                    "memory-bound on {} at every batch up to 65536: HBM traffic, not FLOPs, sets the speed",
                    r.chip
                ),
            },
        },
    ));
}

fn dtype(p: &Passes<'_>, fixes: &mut Vec<Fix>) {
    let f32_weights = p
        .model
        .graph
        .values
        .iter()
        .filter(|v| matches!(v.kind, ValueKind::Weight(_)))
        .any(|v| v.ty.dtype == Some(DType::F32));
    // The findings pass's f32-compute finding (AUD401) says the same with figures.
    let f32_finding = p.findings.iter().any(|f| f.code == "AUD401");
    if f32_weights && !f32_finding {
        fixes.push(fix(
            "dtype",
            "weights are f32: serve / train in bf16 (halves HBM and bandwidth; the MXU computes in bf16 anyway)".into(),
        ));
    }
}

/// Bytes in binary units for the fix lines (`1.5 MiB`).
pub(crate) fn gib(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    #[allow(clippy::cast_precision_loss, reason = "display")]
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 { format!("{b} B") } else { format!("{v:.1} {}", UNITS[u]) }
}
