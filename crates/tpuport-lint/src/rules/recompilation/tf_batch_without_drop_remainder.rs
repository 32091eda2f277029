//! TPU103: `tf.data` batches that keep the remainder.

use tpuport_python::ast::{Call, Expr};

use crate::checker::Checker;
use crate::fix::{Edit, Fix, edits};
use crate::rules::helpers::{is_tf_dataset, keyword_truthy, method};
use crate::semantic::Framework;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for `dataset.batch(n)` / `dataset.padded_batch(n)` on a `tf.data` pipeline
    /// without `drop_remainder=True`.
    ///
    /// ## Why is this bad on TPU?
    /// Without `drop_remainder`, the batch dimension is unknown (`None`) in the dataset's
    /// element spec. TPUs need static shapes: `TPUStrategy` either rejects the dataset or
    /// compiles again for the final, smaller batch of each epoch.
    ///
    /// ## Example
    /// ```python
    /// ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(1024).batch(128)
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(1024).batch(128, drop_remainder=True)
    /// ```
    ///
    /// ## Fix safety
    /// The fix is unsafe: the last partial batch of each epoch is dropped.
    ///
    /// ## References
    /// - [tensorflow/tensorflow#29825: Keras `fit` recompiles for the last batch](https://github.com/tensorflow/tensorflow/issues/29825)
    /// - [tensorflow/models#6508: `drop_remainder` for TPU input pipelines](https://github.com/tensorflow/models/issues/6508)
    pub(crate) struct TfBatchWithoutDropRemainder { method: String }
}

impl Violation for TfBatchWithoutDropRemainder {
    fn message(&self) -> String {
        format!(
            "`.{}()` without `drop_remainder=True`: the batch dimension is not static",
            self.method
        )
    }
    fn fix_title(&self) -> Option<String> {
        Some("Pass `drop_remainder=True`".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, _expr: &Expr, call: &Call) {
    if !checker.uses(Framework::TensorFlow) {
        return;
    }
    let Some((recv, m)) = method(call) else { return };
    if !matches!(m, "batch" | "padded_batch")
        || call.has_kwargs_splat()
        || !is_tf_dataset(checker, recv)
    {
        return;
    }
    if call.args.is_empty() && call.keyword("batch_size").is_none() {
        return;
    }
    let edit = match (call.keyword("drop_remainder"), keyword_truthy(call, "drop_remainder")) {
        (Some(k), Some(false)) => Edit::replace(k.value.span, "True"),
        (None, _) => edits::append_argument(call, "drop_remainder=True"),
        _ => return,
    };
    let Some(span) = crate::rules::helpers::method_span(call) else { return };
    if let Some(d) = checker.report(&TfBatchWithoutDropRemainder { method: m.to_owned() }, span) {
        d.set_fix(Fix::unsafe_(vec![edit]));
    }
}
