//! TPU406: `XLA_USE_BF16` / `XLA_DOWNCAST_BF16`.

use tpuport_python::ast::Stmt;

use crate::checker::Checker;
use crate::rules::helpers::env_var_set;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for scripts setting `XLA_USE_BF16` or `XLA_DOWNCAST_BF16`.
    ///
    /// ## Why is this bad on TPU?
    /// The variables silently turn every float32 tensor into bfloat16, including loss
    /// accumulators and metrics (in bf16, 4096 + 1 = 4096), which slowed convergence in
    /// reported runs. They are deprecated in current PyTorch/XLA.
    ///
    /// ## Example
    /// ```python
    /// os.environ["XLA_USE_BF16"] = "1"
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// with torch.autocast("xla", dtype=torch.bfloat16):
    ///     loss = criterion(model(x), y)
    /// ```
    /// or cast the model explicitly with `model.to(torch.bfloat16)`.
    ///
    /// ## Fix safety
    /// There is no fix.
    ///
    /// ## References
    /// - [pytorch/xla#7150: `XLA_USE_BF16` is deprecated](https://github.com/pytorch/xla/issues/7150)
    /// - [pytorch/xla#3167: loss decreased much slower with `XLA_USE_BF16=1`](https://github.com/pytorch/xla/issues/3167)
    /// - [pytorch/xla#2425: bf16 accumulators](https://github.com/pytorch/xla/issues/2425)
    pub(crate) struct XlaUseBf16Env { var: String }
}

impl Violation for XlaUseBf16Env {
    fn message(&self) -> String {
        format!("`{}` casts every float32 tensor to bfloat16 and is deprecated", self.var)
    }
    fn fix_title(&self) -> Option<String> {
        Some("Use `torch.autocast(\"xla\", dtype=torch.bfloat16)` or explicit casts".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, stmt: &Stmt) {
    if let Some((var @ ("XLA_USE_BF16" | "XLA_DOWNCAST_BF16"), span)) = env_var_set(checker, stmt) {
        checker.report(&XlaUseBf16Env { var: var.to_owned() }, span);
    }
}
