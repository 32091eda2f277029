//! TPU108: Python `if` / `while` on a tensor value in the step.

use tpuport_python::ast::{Stmt, StmtKind};

use crate::checker::Checker;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for `if` and `while` statements whose condition is a tensor (a loss, a model
    /// output, a traced argument of a jitted function) inside the training step loop or a
    /// jitted function.
    ///
    /// ## Why is this bad on TPU?
    /// Python needs a concrete `bool`, so the lazy graph is cut and executed to read the
    /// value (a device-to-host sync every step), and each branch taken is a different graph to
    /// compile. Under `jax.jit` the condition is a tracer and raises
    /// `TracerBoolConversionError`.
    ///
    /// ## Example
    /// ```python
    /// for x, y in loader:
    ///     loss = criterion(model(x), y)
    ///     if loss > 10:
    ///         loss = loss * 0.1
    ///     loss.backward()
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// for x, y in loader:
    ///     loss = criterion(model(x), y)
    ///     loss = torch.where(loss > 10, loss * 0.1, loss)
    ///     loss.backward()
    /// ```
    /// In JAX use `jax.lax.cond` / `jnp.where`, or mark the argument static. Inside a
    /// `tf.function` the rule is silent: AutoGraph turns such statements into `tf.cond` /
    /// `tf.while_loop`.
    ///
    /// ## Fix safety
    /// There is no fix.
    ///
    /// ## References
    /// - [pytorch/xla#2855: data-dependent control flow](https://github.com/pytorch/xla/issues/2855)
    /// - [jax-ml/jax#16430: `ConcretizationTypeError` from Python control flow](https://github.com/jax-ml/jax/issues/16430)
    pub(crate) struct TensorControlFlow { keyword: &'static str }
}

impl Violation for TensorControlFlow {
    fn message(&self) -> String {
        format!("Python `{}` on a tensor value forces a sync and a graph per branch", self.keyword)
    }
    fn fix_title(&self) -> Option<String> {
        Some("Compute both sides with `torch.where` / `jnp.where`, or use `jax.lax.cond` / `jax.lax.while_loop`".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, stmt: &Stmt) {
    // Inside `tf.function`, AutoGraph rewrites an `if` / `while` on a tensor into `tf.cond` /
    // `tf.while_loop`: one graph, no host read.
    if checker.jit_context().is_some_and(|(j, _)| j.transform == "tensorflow.function") {
        return;
    }
    if !(checker.in_step_region() || checker.jit_context().is_some()) {
        return;
    }
    let (test, keyword) = match &stmt.kind {
        StmtKind::If(i) => (&i.test, "if"),
        StmtKind::While(w) => (&w.test, "while"),
        _ => return,
    };
    if checker.is_tensor(test) {
        checker.report(&TensorControlFlow { keyword }, test.span);
    }
}
