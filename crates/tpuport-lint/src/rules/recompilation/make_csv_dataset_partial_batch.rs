//! TPU110: `make_csv_dataset` with `num_epochs`, whose last batch is partial.

use tpuport_python::ast::{Call, Expr, ExprKind};

use crate::checker::Checker;
use crate::fix::{Edit, Fix};
use crate::rules::helpers::keyword_truthy;
use crate::semantic::Framework;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for `tf.data.experimental.make_csv_dataset(...)` called with `num_epochs` set
    /// (anything but `None`) when the result is not rebatched with `drop_remainder=True`
    /// (`.rebatch(n, drop_remainder=True)` or `.unbatch().batch(n, drop_remainder=True)` in
    /// the same chain; files that call `.rebatch(` or `.unbatch()` anywhere are left alone).
    ///
    /// ## Why is this bad on TPU?
    /// `make_csv_dataset` has no `drop_remainder` parameter: it batches with
    /// `drop_remainder=True` only when `num_epochs` is `None` (the rows repeat forever, so
    /// every batch is full). With `num_epochs=1` (or any count) the last batch of the data is
    /// smaller and the batch dimension of every element is `None`. TPUs need static shapes:
    /// `TPUStrategy` rejects the dataset or XLA compiles the step again for the short batch.
    ///
    /// ## Example
    /// ```python
    /// ds = tf.data.experimental.make_csv_dataset("train.csv", batch_size=256, label_name="y", num_epochs=1)
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// ds = tf.data.experimental.make_csv_dataset("train.csv", batch_size=256, label_name="y", num_epochs=1).rebatch(256, drop_remainder=True)
    /// ```
    /// or leave `num_epochs` unset (the dataset repeats, batches are full) and pass
    /// `steps_per_epoch` to `fit`.
    ///
    /// ## Fix safety
    /// The fix is unsafe: `.rebatch(batch_size, drop_remainder=True)` drops the rows of the
    /// last partial batch. It is offered only when `batch_size` is a name or a literal
    /// (copied into the `rebatch` call); `Dataset.rebatch` needs TensorFlow 2.12 or newer.
    ///
    /// ## References
    /// - [TensorFlow API: `tf.data.experimental.make_csv_dataset`](https://www.tensorflow.org/api_docs/python/tf/data/experimental/make_csv_dataset)
    /// - [TensorFlow API: `tf.data.Dataset.rebatch`](https://www.tensorflow.org/api_docs/python/tf/data/Dataset#rebatch)
    /// - [TensorFlow: TPU guide, static shapes and `drop_remainder`](https://www.tensorflow.org/guide/tpu)
    pub(crate) struct MakeCsvDatasetPartialBatch {}
}

impl Violation for MakeCsvDatasetPartialBatch {
    fn message(&self) -> String {
        "`make_csv_dataset` with `num_epochs` keeps a partial last batch: the batch dimension is not static"
            .to_owned()
    }
    fn fix_title(&self) -> Option<String> {
        Some("Append `.rebatch(batch_size, drop_remainder=True)`".to_owned())
    }
}

const MAKE_CSV: &[&str] = &[
    "tensorflow.data.experimental.make_csv_dataset",
    "tensorflow.compat.v1.data.experimental.make_csv_dataset",
    "tensorflow.compat.v2.data.experimental.make_csv_dataset",
    "tensorflow.contrib.data.make_csv_dataset",
];

/// Position of `num_epochs` in `make_csv_dataset`'s signature.
const NUM_EPOCHS_POS: usize = 10;

pub(crate) fn check(checker: &mut Checker, expr: &Expr, call: &Call) {
    if !checker.uses(Framework::TensorFlow) || !checker.semantic.resolves_to(&call.func, MAKE_CSV) {
        return;
    }
    let Some(epochs) = call.arg(NUM_EPOCHS_POS, "num_epochs") else { return };
    if matches!(epochs.kind, ExprKind::NoneLit) {
        return;
    }
    let rebatched = checker.chained_calls(expr).iter().any(|(m, c)| {
        matches!(*m, "rebatch" | "batch" | "padded_batch")
            && keyword_truthy(c, "drop_remainder") == Some(true)
    });
    if rebatched || checker.source.contains(".rebatch(") || checker.source.contains(".unbatch()") {
        return;
    }
    let batch = call.arg(1, "batch_size").filter(|b| {
        matches!(b.kind, ExprKind::Name(_) | ExprKind::Int(Some(_)))
            || (matches!(b.kind, ExprKind::Attribute { .. }) && b.dotted().is_some())
    });
    let batch = batch.map(|b| checker.text(b.span).to_owned());
    if let Some(d) = checker.report(&MakeCsvDatasetPartialBatch {}, call.func.span)
        && let Some(batch) = batch
    {
        d.set_fix(Fix::unsafe_(vec![Edit::insert(
            expr.span.end,
            format!(".rebatch({batch}, drop_remainder=True)"),
        )]));
    }
}
