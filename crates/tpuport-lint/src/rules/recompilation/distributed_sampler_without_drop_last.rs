//! TPU102: a `DistributedSampler` that pads or keeps uneven shards.

use tpuport_python::ast::Call;

use crate::checker::Checker;
use crate::fix::{Edit, Fix, edits};
use crate::rules::helpers::keyword_truthy;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for `DistributedSampler(...)` without `drop_last=True`.
    ///
    /// ## Why is this bad on TPU?
    /// Without `drop_last`, the sampler pads the dataset with repeated samples so every
    /// replica gets the same count, and the loader on each replica can still end on a partial
    /// batch. On TPU every replica must run the same compiled program with the same shapes;
    /// a ragged tail means a recompilation at the end of each epoch, and different shapes per
    /// host can hang the collective.
    ///
    /// ## Example
    /// ```python
    /// sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank)
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, drop_last=True)
    /// ```
    ///
    /// ## Fix safety
    /// The fix is unsafe: the sampler then drops the tail of the dataset instead of repeating
    /// samples.
    ///
    /// ## References
    /// - [pytorch/xla#1279: partial batches and recompilation](https://github.com/pytorch/xla/issues/1279)
    /// - [pytorch/xla#7109: DDP hangs on a v3-8](https://github.com/pytorch/xla/issues/7109)
    pub(crate) struct DistributedSamplerWithoutDropLast {}
}

impl Violation for DistributedSamplerWithoutDropLast {
    fn message(&self) -> String {
        "`DistributedSampler` without `drop_last=True`: uneven shards change shapes at the end of an epoch".to_owned()
    }
    fn fix_title(&self) -> Option<String> {
        Some("Pass `drop_last=True`".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, call: &Call) {
    if !checker.semantic.resolves_to(
        &call.func,
        &["torch.utils.data.distributed.DistributedSampler", "torch.utils.data.DistributedSampler"],
    ) || call.has_kwargs_splat()
    {
        return;
    }
    let edit = match (call.keyword("drop_last"), keyword_truthy(call, "drop_last")) {
        (Some(k), Some(false)) => Edit::replace(k.value.span, "True"),
        (None, _) => edits::append_argument(call, "drop_last=True"),
        _ => return,
    };
    if let Some(d) = checker.report(&DistributedSamplerWithoutDropLast {}, call.func.span) {
        d.set_fix(Fix::unsafe_(vec![edit]));
    }
}
