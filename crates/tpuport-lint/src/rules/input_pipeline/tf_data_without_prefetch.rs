//! TPU602: a `tf.data` pipeline without `prefetch`.

use tpuport_python::ast::{Call, Expr};

use crate::checker::Checker;
use crate::fix::{Edit, Fix};
use crate::rules::helpers::{is_tf_dataset, method};
use crate::semantic::Framework;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for `tf.data` pipelines that batch but never call `.prefetch(...)` anywhere in
    /// the file.
    ///
    /// ## Why is this bad on TPU?
    /// Without prefetching, the host produces batch N+1 only after the TPU has consumed batch
    /// N, so input preparation and training alternate instead of overlapping; the TPU is
    /// idle for the whole input time of every step.
    ///
    /// ## Example
    /// ```python
    /// ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE).batch(256, drop_remainder=True)
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE).batch(256, drop_remainder=True).prefetch(tf.data.AUTOTUNE)
    /// ```
    ///
    /// ## Fix safety
    /// The fix is safe: it appends `.prefetch(tf.data.AUTOTUNE)` to the batch call (only
    /// when TensorFlow is imported as `tf`); the data is unchanged.
    ///
    /// ## References
    /// - [TensorFlow: better performance with the tf.data API](https://www.tensorflow.org/guide/data_performance)
    /// - [AdityaKane2001/regnety#4: input-bound TPU training](https://github.com/AdityaKane2001/regnety/issues/4)
    pub(crate) struct TfDataWithoutPrefetch {}
}

impl Violation for TfDataWithoutPrefetch {
    fn message(&self) -> String {
        "`tf.data` pipeline without `prefetch`: input and training do not overlap".to_owned()
    }
    fn fix_title(&self) -> Option<String> {
        Some("Append `.prefetch(tf.data.AUTOTUNE)`".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, expr: &Expr, call: &Call) {
    if !checker.uses(Framework::TensorFlow) || checker.semantic.has_prefetch {
        return;
    }
    let Some((recv, "batch" | "padded_batch")) = method(call) else { return };
    if !is_tf_dataset(checker, recv) {
        return;
    }
    // Only the outermost call of a chain: `ds.batch(n).map(f)` is flagged at `.batch`.
    let fix = checker.semantic.binding("tf") == Some("tensorflow");
    let Some(span) = crate::rules::helpers::method_span(call) else { return };
    if let Some(d) = checker.report(&TfDataWithoutPrefetch {}, span)
        && fix
    {
        d.set_fix(Fix::safe(vec![Edit::insert(expr.span.end, ".prefetch(tf.data.AUTOTUNE)")]));
    }
}
