//! TPU803: saving a TPUStrategy model to a local path.

use tpuport_python::ast::Call;

use crate::checker::Checker;
use crate::rules::helpers::method;
use crate::semantic::Framework;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// In files that use `TPUStrategy`, checks for `model.save(...)`, `save_weights(...)` and
    /// `ModelCheckpoint(...)` with a literal local path (not `gs://`).
    ///
    /// ## Why is this bad on TPU?
    /// With a TPU Node or remote TPU workers, the save runs on the TPU host, which cannot
    /// write to the client's local disk ("File system scheme '[local]' not implemented").
    /// Use a Cloud Storage path, or save with
    /// `tf.saved_model.SaveOptions(experimental_io_device="/job:localhost")`.
    ///
    /// ## Example
    /// ```python
    /// model.save("checkpoints/model.keras")
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// model.save("gs://my-bucket/checkpoints/model.keras")
    /// ```
    ///
    /// ## Fix safety
    /// There is no fix.
    ///
    /// ## References
    /// - [huggingface/notebooks#313: "File system scheme '[local]' not implemented"](https://github.com/huggingface/notebooks/issues/313)
    /// - [tensorflow/tensorflow#33136: saving TPU-trained models](https://github.com/tensorflow/tensorflow/issues/33136)
    pub(crate) struct KerasSaveLocalPath { path: String }
}

impl Violation for KerasSaveLocalPath {
    fn message(&self) -> String {
        format!("Saving to local path `{}` from a TPUStrategy program", self.path)
    }
    fn fix_title(&self) -> Option<String> {
        Some(
            "Save to `gs://…` or pass `SaveOptions(experimental_io_device=\"/job:localhost\")`"
                .to_owned(),
        )
    }
}

pub(crate) fn check(checker: &mut Checker, call: &Call) {
    if !checker.uses(Framework::TensorFlow) || !checker.semantic.mentions_tpu_strategy {
        return;
    }
    let is_save = matches!(method(call), Some((_, "save" | "save_weights")))
        || call.func.last_name() == Some("ModelCheckpoint");
    if !is_save || call.keyword("options").is_some() {
        return;
    }
    let Some(path) =
        call.arg(0, "filepath").and_then(|a| a.as_str().map(|s| (s.to_owned(), a.span)))
    else {
        return;
    };
    if path.0.contains("://") {
        return;
    }
    checker.report(&KerasSaveLocalPath { path: path.0 }, path.1);
}
