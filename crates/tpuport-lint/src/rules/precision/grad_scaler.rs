//! TPU402: `GradScaler` (loss scaling for fp16).

use tpuport_python::Span;
use tpuport_python::ast::{Call, Expr, ExprKind, Stmt, StmtKind};
use tpuport_python::visitor::{Visitor, walk_expr, walk_stmt};

use crate::checker::Checker;
use crate::fix::{Edit, Fix, edits};
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for `GradScaler` construction (`torch.cuda.amp.GradScaler`,
    /// `torch.amp.GradScaler`, `torch.GradScaler`).
    ///
    /// ## Why is this bad on TPU?
    /// Loss scaling exists because float16 underflows. TPUs train in bfloat16, which has
    /// float32's exponent range, so scaling is unnecessary; the CUDA scaler also asserts that
    /// outputs are CUDA or XLA tensors and breaks when one is on the CPU.
    ///
    /// ## Example
    /// ```python
    /// scaler = torch.cuda.amp.GradScaler()
    /// for x, y in loader:
    ///     loss = criterion(model(x), y)
    ///     scaler.scale(loss).backward()
    ///     scaler.step(optimizer)
    ///     scaler.update()
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// for x, y in loader:
    ///     loss = criterion(model(x), y)
    ///     loss.backward()
    ///     optimizer.step()
    /// ```
    ///
    /// ## Fix safety
    /// The fix is unsafe. When the scaler is assigned to a name whose only uses are
    /// `scale(x)`, `step(opt)`, `update()` and `unscale_(opt)`, it removes the scaler and
    /// rewrites those uses (`scaler.scale(loss)` → `loss`, `scaler.step(opt)` → `opt.step()`,
    /// `update()`/`unscale_()` statements deleted). Other uses (checkpointing the scaler's
    /// state, passing it around) leave only the finding.
    ///
    /// ## References
    /// - [pytorch/xla#3559: `GradScaler` asserts on CPU tensors](https://github.com/pytorch/xla/issues/3559)
    /// - [pytorch/xla#4740: bf16 on TPU needs no GradScaler](https://github.com/pytorch/xla/issues/4740)
    /// - [pytorch/pytorch#96370: bf16 and loss scaling](https://github.com/pytorch/pytorch/issues/96370)
    pub(crate) struct GradScaler {}
}

impl Violation for GradScaler {
    fn message(&self) -> String {
        "`GradScaler` is fp16 loss scaling; TPUs train in bfloat16 without it".to_owned()
    }
    fn fix_title(&self) -> Option<String> {
        Some("Remove the scaler: `scaler.scale(loss).backward()` → `loss.backward()`, `scaler.step(opt)` → `opt.step()`".to_owned())
    }
}

const SCALERS: &[&str] = &[
    "torch.cuda.amp.GradScaler",
    "torch.amp.GradScaler",
    "torch.GradScaler",
    "torch.cuda.amp.grad_scaler.GradScaler",
];

pub(crate) fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    if !checker.enabled(crate::codes::Rule::GradScaler) {
        return;
    }
    let StmtKind::Assign { targets, value } = &stmt.kind else { return };
    let Some(call) = value.as_call() else { return };
    if !checker.semantic.resolves_to(&call.func, SCALERS) {
        return;
    }
    let fix = match targets.as_slice() {
        [t] => t.as_name().and_then(|name| rewrite_uses(checker, name, stmt)),
        _ => None,
    };
    if let Some(d) = checker.report(&GradScaler {}, call.func.span)
        && let Some(f) = fix
    {
        d.set_fix(f);
    }
}

/// Builds the removal of the scaler `name` assigned in `def`, or `None` if some use is not
/// one of `scale` / `step` / `update` / `unscale_`.
fn rewrite_uses(checker: &Checker, name: &str, def: &Stmt) -> Option<Fix> {
    let mut finder = Uses {
        name,
        source: checker.source,
        edits: Vec::new(),
        ok: true,
        def: def.span,
        sole_stack: Vec::new(),
        def_sole: false,
    };
    finder.visit_body(&checker.module.body);
    if !finder.ok {
        return None;
    }
    let mut edit_list = finder.edits;
    edit_list.push(edits::delete_statement(checker.source, def, finder.def_sole));
    Some(Fix::unsafe_(edit_list))
}

struct Uses<'n> {
    name: &'n str,
    source: &'n str,
    edits: Vec<Edit>,
    ok: bool,
    def: Span,
    sole_stack: Vec<bool>,
    def_sole: bool,
}

impl Uses<'_> {
    fn scaler_method<'e>(&self, e: &'e Expr) -> Option<(&'e Call, &'e str)> {
        let call = e.as_call()?;
        match &call.func.kind {
            ExprKind::Attribute { value, attr } if value.as_name() == Some(self.name) => {
                Some((call, attr.name.as_str()))
            }
            _ => None,
        }
    }
}

impl<'a> Visitor<'a> for Uses<'_> {
    fn visit_body(&mut self, body: &'a [Stmt]) {
        self.sole_stack.push(body.len() == 1);
        for s in body {
            self.visit_stmt(s);
        }
        self.sole_stack.pop();
    }
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        let sole = self.sole_stack.last().copied().unwrap_or(false);
        if stmt.span == self.def {
            self.def_sole = sole;
            return;
        }
        if let StmtKind::Expr(e) = &stmt.kind
            && let Some((call, m)) = self.scaler_method(e)
            && matches!(m, "update" | "unscale_")
        {
            for a in &call.args {
                self.visit_expr(a);
            }
            self.edits.push(edits::delete_statement(self.source, stmt, sole));
            return;
        }
        walk_stmt(self, stmt);
    }
    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Some((call, m)) = self.scaler_method(expr) {
            let whole = Span::new(expr.span.start, expr.span.end);
            match (m, call.args.as_slice()) {
                ("scale", [x]) => self.edits.push(Edit::replace(whole, x.span.slice(self.source))),
                ("step", [opt]) => self
                    .edits
                    .push(Edit::replace(whole, format!("{}.step()", opt.span.slice(self.source)))),
                _ => self.ok = false,
            }
            return;
        }
        if expr.as_name() == Some(self.name) {
            self.ok = false;
        }
        walk_expr(self, expr);
    }
}
