//! TPU702: a jitted step that rebinds its input without donating it.

use tpuport_python::ast::{ExprKind, Stmt, StmtKind};

use crate::checker::Checker;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for functions jitted with `jax.jit` / `jax.pmap` and no `donate_argnums` /
    /// `donate_argnames`, when a call rebinds an argument to the result
    /// (`state = train_step(state, batch)`).
    ///
    /// ## Why is this bad on TPU?
    /// Without donation XLA cannot reuse the input buffers for the output, so during the step
    /// two copies of the parameters and optimizer state live in HBM. Donation typically cuts
    /// peak memory by about a third for training steps and is often the difference between
    /// fitting and `RESOURCE_EXHAUSTED`.
    ///
    /// ## Example
    /// ```python
    /// @jax.jit
    /// def train_step(state, batch):
    ///     ...
    ///     return new_state, loss
    ///
    /// state, loss = train_step(state, batch)
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// @partial(jax.jit, donate_argnums=(0,))
    /// def train_step(state, batch):
    ///     ...
    /// ```
    ///
    /// ## Fix safety
    /// There is no fix here (`tpuport port --to jax` adds donation): a donated input must not
    /// be read after the call.
    ///
    /// ## References
    /// - [jax-ml/jax#2936: two copies of the parameters without donation](https://github.com/jax-ml/jax/issues/2936)
    /// - [poets-ai/elegy#226: donation cut memory by a third](https://github.com/poets-ai/elegy/issues/226)
    /// - [JAX FAQ: buffer donation](https://docs.jax.dev/en/latest/faq.html#buffer-donation)
    pub(crate) struct MissingDonateArgnums { name: String, args: String }
}

impl Violation for MissingDonateArgnums {
    fn message(&self) -> String {
        format!("`{}` rebinds `{}` to its result but donates no buffers", self.name, self.args)
    }
    fn fix_title(&self) -> Option<String> {
        Some("Pass `donate_argnums` for the arguments the step replaces".to_owned())
    }
}

/// `(function name, donated argument indices)` when `stmt` is `x, ... = f(x, ...)`.
pub(crate) fn rebinding_call(stmt: &Stmt) -> Option<(&str, Vec<usize>, Vec<&str>)> {
    let StmtKind::Assign { targets, value } = &stmt.kind else { return None };
    let call = value.as_call()?;
    let fname = call.func.as_name()?;
    let mut names: Vec<&str> = Vec::new();
    for t in targets {
        match &t.kind {
            ExprKind::Name(n) => names.push(n),
            ExprKind::Tuple(v) | ExprKind::List(v) => {
                names.extend(v.iter().filter_map(|e| e.as_name()))
            }
            _ => {}
        }
    }
    let mut idx = Vec::new();
    let mut args = Vec::new();
    for (i, a) in call.args.iter().enumerate() {
        if let Some(n) = a.as_name()
            && names.contains(&n)
        {
            idx.push(i);
            args.push(n);
        }
    }
    (!idx.is_empty()).then_some((fname, idx, args))
}

pub(crate) fn check(checker: &mut Checker, stmt: &Stmt) {
    let Some((fname, _, args)) = rebinding_call(stmt) else { return };
    let Some(info) = checker.semantic.jitted.get(fname) else { return };
    if info.donates || !matches!(info.transform.as_str(), "jax.jit" | "jax.pmap") {
        return;
    }
    let site = info.site;
    checker.report(&MissingDonateArgnums { name: fname.to_owned(), args: args.join("`, `") }, site);
}
