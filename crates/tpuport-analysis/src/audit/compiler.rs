//! The estimate next to the TPU compiler's answer (`--compiler`): the per-device bytes the
//! memory pass estimates for the compiler's chip, and every padding claim of the layout pass
//! re-checked against the layouts the compiler chose.

use tpuport_hw::Chip;

use super::AuditOptions;
use crate::compiler_check::{self, CompilerCheck, CompilerInput};
use crate::layout::LayoutReport;
use crate::memory::MemoryReport;

/// The check, when the caller passed the compiler's answer for one of `chips`.
pub(super) fn check(
    opts: &AuditOptions,
    chips: &[&Chip],
    layout: &mut LayoutReport,
    memory: &MemoryReport,
) -> Option<CompilerCheck> {
    let CompilerInput::Answered(facts) = &opts.compiler else { return None };
    let chip = chips.iter().find(|c| c.id == facts.chip)?;
    let rechecked = layout
        .chips
        .iter_mut()
        .find(|l| l.chip == chip.id)
        .map(|l| compiler_check::recheck_layouts(l, facts, chip))
        .unwrap_or_default();
    let estimate = memory
        .per_device_padded
        .iter()
        .find(|(id, _)| *id == chip.id)
        .map(|(_, d)| d.total)
        .or_else(|| memory.padded.iter().find(|(id, _)| *id == chip.id).map(|(_, f)| f.inference))
        .unwrap_or(0);
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "bytes")]
    let budget = chip.hbm_budget().unwrap_or(0.0) as u64;
    Some(compiler_check::check(facts, estimate, budget, rechecked))
}
