//! TPU503: GPU `tf.distribute` strategies.

use tpuport_python::ast::{Call, Expr};

use crate::checker::Checker;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for `tf.distribute.MirroredStrategy`, `MultiWorkerMirroredStrategy` and
    /// `CentralStorageStrategy`.
    ///
    /// ## Why is this bad on TPU?
    /// These strategies replicate over local GPUs (or CPUs) with NCCL / ring all-reduce. On a
    /// TPU they find no GPUs and train on the CPU; TPUs need a `TPUClusterResolver`,
    /// `initialize_tpu_system` and `TPUStrategy`.
    ///
    /// ## Example
    /// ```python
    /// strategy = tf.distribute.MirroredStrategy()
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="local")
    /// tf.config.experimental_connect_to_cluster(resolver)
    /// tf.tpu.experimental.initialize_tpu_system(resolver)
    /// strategy = tf.distribute.TPUStrategy(resolver)
    /// ```
    ///
    /// ## Fix safety
    /// There is no fix here; `tpuport port --to tf-tpu` rewrites the setup.
    ///
    /// ## References
    /// - [TensorFlow guide: TPU strategy setup](https://www.tensorflow.org/guide/tpu)
    /// - [googlecolab/colabtools#5194: `TPUClusterResolver(tpu='local')` on TPU VMs](https://github.com/googlecolab/colabtools/issues/5194)
    /// - [keras-team/keras#21190: MirroredStrategy vs multi-device TPU runs](https://github.com/keras-team/keras/issues/21190)
    pub(crate) struct MirroredStrategy { name: String }
}

impl Violation for MirroredStrategy {
    fn message(&self) -> String {
        format!("`{}` replicates over GPUs, not TPU cores", self.name)
    }
    fn fix_title(&self) -> Option<String> {
        Some("Use `tf.distribute.TPUStrategy` with a `TPUClusterResolver`".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, _expr: &Expr, call: &Call) {
    let Some(q) = checker.semantic.qualified_name(&call.func) else { return };
    let known = [
        "tensorflow.distribute.MirroredStrategy",
        "tensorflow.distribute.MultiWorkerMirroredStrategy",
        "tensorflow.distribute.experimental.MultiWorkerMirroredStrategy",
        "tensorflow.distribute.experimental.CentralStorageStrategy",
    ];
    if known.contains(&q.as_str()) {
        let name = q.rsplit('.').next().unwrap_or("").to_owned();
        checker.report(&MirroredStrategy { name }, call.func.span);
    }
}
