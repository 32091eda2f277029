//! TPU605: Keras `compile` without `steps_per_execution`.

use tpuport_python::ast::{Call, Expr};

use crate::checker::Checker;
use crate::fix::{Fix, edits};
use crate::rules::helpers::method;
use crate::semantic::Framework;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for Keras `model.compile(optimizer=..., loss=...)` without
    /// `steps_per_execution`.
    ///
    /// ## Why is this bad on TPU?
    /// By default Keras returns to Python after every batch. On TPU the per-step host
    /// dispatch then dominates small steps; running several steps per call keeps the device
    /// busy.
    ///
    /// ## Example
    /// ```python
    /// model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", steps_per_execution=32)
    /// ```
    ///
    /// ## Fix safety
    /// The fix is unsafe: it adds `steps_per_execution=32`, which makes per-batch callbacks
    /// run every 32 batches.
    ///
    /// ## References
    /// - [keras-team/keras#23527: host dispatch overhead](https://github.com/keras-team/keras/issues/23527)
    /// - [tensorflow/docs#1906: `steps_per_execution` on TPU](https://github.com/tensorflow/docs/issues/1906)
    pub(crate) struct KerasCompileWithoutStepsPerExecution {}
}

impl Violation for KerasCompileWithoutStepsPerExecution {
    fn message(&self) -> String {
        "Keras `compile` without `steps_per_execution`: one host round trip per batch".to_owned()
    }
    fn fix_title(&self) -> Option<String> {
        Some("Pass `steps_per_execution` (e.g. 32)".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, _expr: &Expr, call: &Call) {
    if !checker.uses(Framework::TensorFlow) || call.has_kwargs_splat() {
        return;
    }
    let Some((_, "compile")) = method(call) else { return };
    if call.keyword("optimizer").is_none() && call.keyword("loss").is_none() {
        return;
    }
    if call.keyword("steps_per_execution").is_some() {
        return;
    }
    let edit = edits::append_argument(call, "steps_per_execution=32");
    if let Some(d) = checker.report(&KerasCompileWithoutStepsPerExecution {}, call.func.span) {
        d.set_fix(Fix::unsafe_(vec![edit]));
    }
}
