//! TPU603: `tf.py_function` / `tf.numpy_function`.

use tpuport_python::ast::{Call, Expr};

use crate::checker::Checker;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for `tf.py_function`, `tf.numpy_function` and `tf.compat.v1.py_func`.
    ///
    /// ## Why is this bad on TPU?
    /// These run arbitrary Python, which XLA cannot compile: inside a TPU step they fail, and
    /// in a `tf.data` pipeline they hold the GIL, serialise the pipeline and fail on remote
    /// TPU workers that cannot call back into the client's Python.
    ///
    /// ## Example
    /// ```python
    /// ds = ds.map(lambda x: tf.py_function(decode, [x], tf.float32))
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// ds = ds.map(lambda x: tf.io.decode_jpeg(x), num_parallel_calls=tf.data.AUTOTUNE)
    /// ```
    ///
    /// ## Fix safety
    /// There is no fix.
    ///
    /// ## References
    /// - [tensorflow/tensorflow#30818: `tf.py_function` fails on the TPU worker](https://github.com/tensorflow/tensorflow/issues/30818)
    /// - [tensorflow/tensorflow#66074: ops XLA cannot compile](https://github.com/tensorflow/tensorflow/issues/66074)
    pub(crate) struct TfPyFunction { name: String }
}

impl Violation for TfPyFunction {
    fn message(&self) -> String {
        format!("`{}` runs Python that XLA cannot compile or ship to a TPU worker", self.name)
    }
    fn fix_title(&self) -> Option<String> {
        Some(
            "Express the transformation with TensorFlow ops (`tf.io`, `tf.image`, `tf.strings`)"
                .to_owned(),
        )
    }
}

pub(crate) fn check(checker: &mut Checker, _expr: &Expr, call: &Call) {
    let Some(q) = checker.semantic.qualified_name(&call.func) else { return };
    if matches!(
        q.as_str(),
        "tensorflow.py_function" | "tensorflow.numpy_function" | "tensorflow.compat.v1.py_func"
    ) {
        let name = checker.text(call.func.span).to_owned();
        checker.report(&TfPyFunction { name }, call.func.span);
    }
}
