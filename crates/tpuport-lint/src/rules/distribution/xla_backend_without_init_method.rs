//! TPU509: `init_process_group("xla")` without `init_method="xla://"`.

use tpuport_python::ast::{Call, Expr};

use crate::checker::Checker;
use crate::fix::{Fix, edits};
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for `torch.distributed.init_process_group("xla")` without an `init_method`.
    ///
    /// ## Why is this bad on TPU?
    /// Without `init_method`, the default `env://` rendezvous waits for `MASTER_ADDR`,
    /// `RANK` and `WORLD_SIZE`, which a TPU launch does not set: the process group hangs.
    /// `xla://` takes rank and world size from the XLA runtime.
    ///
    /// ## Example
    /// ```python
    /// dist.init_process_group("xla")
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// dist.init_process_group("xla", init_method="xla://")
    /// ```
    ///
    /// ## Fix safety
    /// The fix is safe: it adds `init_method="xla://"`, the documented way to initialise the
    /// `xla` backend.
    ///
    /// ## References
    /// - [pytorch/xla#5303: DDP hangs until `init_method` is set](https://github.com/pytorch/xla/issues/5303)
    /// - [PyTorch/XLA DDP guide](https://docs.pytorch.org/xla/release/r2.8/perf/ddp.html)
    pub(crate) struct XlaBackendWithoutInitMethod {}
}

impl Violation for XlaBackendWithoutInitMethod {
    fn message(&self) -> String {
        "`init_process_group(\"xla\")` without `init_method=\"xla://\"` can hang".to_owned()
    }
    fn fix_title(&self) -> Option<String> {
        Some("Add `init_method=\"xla://\"`".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, _expr: &Expr, call: &Call) {
    if !checker.semantic.resolves_to(&call.func, &["torch.distributed.init_process_group"]) {
        return;
    }
    if call.arg(0, "backend").and_then(Expr::as_str) != Some("xla")
        || call.arg(1, "init_method").is_some()
        || call.has_kwargs_splat()
    {
        return;
    }
    let edit = edits::append_argument(call, "init_method=\"xla://\"");
    if let Some(d) = checker.report(&XlaBackendWithoutInitMethod {}, call.func.span) {
        d.set_fix(Fix::safe(vec![edit]));
    }
}
