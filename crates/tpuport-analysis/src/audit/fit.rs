//! Where the model fits: the smallest slice per generation (replicated, or with its state
//! sharded), whether the `--slice` asked for holds it, and which chip the headline is for.

use tpuport_hw::{Catalog, Chip};

use super::{AuditOptions, SliceFit};
use crate::memory::Footprint;
use crate::workload::Workload;

/// The headline chip: the slice's, else v5e (the usual first TPU), else the first audited.
pub(super) fn head_chip(opts: &AuditOptions, chips: &[&Chip]) -> Option<String> {
    opts.slice
        .as_ref()
        .map(|s| s.chip.clone())
        .or_else(|| chips.iter().find(|c| c.id == "v5e").map(|c| c.id.clone()))
        .or_else(|| chips.first().map(|c| c.id.clone()))
}

/// For `--slice`: `replicated`, `sharded` (fits only with state sharded), or `no`.
pub(super) fn slice_fit(opts: &AuditOptions, fits: &[SliceFit]) -> Option<String> {
    let sl = opts.slice.as_ref()?;
    let f = fits.iter().find(|f| f.chip == sl.chip)?;
    let n = u64::from(sl.chips.max(1));
    Some(if f.state_bytes + f.batch_bytes.div_ceil(n) <= f.hbm_budget {
        "replicated".to_owned()
    } else if (f.state_bytes + f.batch_bytes).div_ceil(n) <= f.hbm_budget {
        "sharded".to_owned()
    } else {
        "no".to_owned()
    })
}

/// The smallest slices of `chip`'s generation that hold footprint `f`, its batch part scaled
/// by `scale` (the asked batch over the module's).
pub(super) fn fit(
    catalog: &Catalog,
    chip: &Chip,
    f: &Footprint,
    workload: Workload,
    scale: f64,
) -> SliceFit {
    let (state, batch) = if workload.is_training() {
        let t = f.training.iter().find(|t| t.precision == "mixed").or(f.training.first());
        t.map_or((f.weights, f.inputs.saturating_add(f.hbm_activations)), |t| {
            let state = t.weights.saturating_add(t.gradients).saturating_add(t.optimizer_state);
            (state, f.inputs.saturating_add(t.activations))
        })
    } else {
        (f.weights, f.inputs.saturating_add(f.hbm_activations))
    };
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "bytes"
    )]
    let batch =
        if (scale - 1.0).abs() < f64::EPSILON { batch } else { (batch as f64 * scale) as u64 };
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "bytes")]
    let budget = chip.hbm_budget().unwrap_or(0.0) as u64;
    let slices = catalog.slices(chip);
    let chips = |s: &tpuport_hw::Slice| u64::from(s.chips).max(1);
    let rep = slices.iter().find(|s| state.saturating_add(batch.div_ceil(chips(s))) <= budget);
    let sh = slices.iter().find(|s| state.saturating_add(batch).div_ceil(chips(s)) <= budget);
    SliceFit {
        chip: chip.id.clone(),
        hbm_budget: budget,
        state_bytes: state,
        batch_bytes: batch,
        replicated: rep.map(|s| s.accelerator_type.clone()),
        replicated_chips: rep.map(|s| s.chips),
        sharded: sh.map(|s| s.accelerator_type.clone()),
        sharded_chips: sh.map(|s| s.chips),
    }
}
