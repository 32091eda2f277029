//! The walk that runs rules with context: which loop, which function, which step region.

use std::collections::HashSet;

use tpuport_python::ast::{Call, Expr, ExprKind, Module, Stmt, StmtKind};
use tpuport_python::visitor::{Visitor, walk_expr, walk_stmt};
use tpuport_python::{ParsedModule, Span};

use crate::analyze;
use crate::diagnostic::Diagnostic;
use crate::fix::{Edit, edits};
use crate::semantic::{Framework, JitInfo, Semantic};
use crate::settings::RuleSet;
use crate::violation::{AsRule, Violation};

/// Walks one module and collects diagnostics.
pub(crate) struct Checker<'a> {
    pub(crate) source: &'a str,
    pub(crate) module: &'a Module,
    pub(crate) semantic: &'a Semantic,
    rules: &'a RuleSet,
    diagnostics: Vec<Diagnostic>,
    step_depth: usize,
    throttled: usize,
    /// `throttled` of the enclosing regions while inside a step loop.
    throttle_stack: Vec<usize>,
    loop_depth: usize,
    jit: Option<(&'a JitInfo, HashSet<String>)>,
    /// Length of each enclosing body (innermost last).
    bodies: Vec<usize>,
    /// Statements being visited (innermost last).
    stmts: Vec<&'a Stmt>,
    /// Expressions being visited (innermost last).
    exprs: Vec<&'a Expr>,
    /// Spans of subscripts that are assignment targets.
    store_targets: HashSet<Span>,
    /// Enclosing `def` / `class` scopes (innermost last; see [`crate::scope`]).
    scopes: Vec<u32>,
    /// Depth of `if` branches that only run off TPU (`else` of `if platform == "tpu"`).
    non_tpu: usize,
    /// Top-level lines of the file and the import insertion point, computed on first use.
    import_site: std::cell::OnceCell<(HashSet<&'a str>, u32)>,
}

impl<'a> Checker<'a> {
    pub(crate) fn new(
        source: &'a str,
        parsed: &'a ParsedModule,
        semantic: &'a Semantic,
        rules: &'a RuleSet,
    ) -> Self {
        Checker {
            source,
            module: parsed.module(),
            semantic,
            rules,
            diagnostics: Vec::new(),
            step_depth: 0,
            throttled: 0,
            throttle_stack: Vec::new(),
            loop_depth: 0,
            jit: None,
            bodies: Vec::new(),
            stmts: Vec::new(),
            exprs: Vec::new(),
            store_targets: HashSet::new(),
            scopes: vec![crate::scope::MODULE],
            non_tpu: 0,
            import_site: std::cell::OnceCell::new(),
        }
    }

    pub(crate) fn run(mut self) -> Vec<Diagnostic> {
        let module = self.module;
        self.walk_body(&module.body);
        self.diagnostics
    }

    /// Reports `v` at `span` when its rule is enabled; returns the diagnostic to attach a fix.
    pub(crate) fn report<V: Violation + AsRule>(
        &mut self,
        v: &V,
        span: Span,
    ) -> Option<&mut Diagnostic> {
        if !self.rules.enabled(V::RULE) {
            return None;
        }
        self.diagnostics.push(Diagnostic {
            rule: V::RULE,
            message: v.message(),
            help: v.fix_title(),
            span,
            fix: None,
        });
        self.diagnostics.last_mut()
    }

    /// Whether `rule` already reported at `span` (a constant reaching several calls is
    /// reported once).
    pub(crate) fn reported(&self, rule: crate::codes::Rule, span: Span) -> bool {
        self.diagnostics.iter().any(|d| d.rule == rule && d.span == span)
    }

    /// Whether the file imports `f`.
    pub(crate) fn uses(&self, f: Framework) -> bool {
        self.semantic.uses(f)
    }

    /// Whether `rule` runs (to skip costly fix construction).
    pub(crate) fn enabled(&self, rule: crate::codes::Rule) -> bool {
        self.rules.enabled(rule)
    }

    /// Inside the body of a training/eval step loop or step function, and not in a block that
    /// only runs every N steps (`if step % 100 == 0:`).
    pub(crate) fn in_step_region(&self) -> bool {
        self.step_depth > 0 && self.throttled == 0
    }

    /// Inside any loop body of the current function.
    pub(crate) fn in_loop(&self) -> bool {
        self.loop_depth > 0
    }

    /// The jitted function being visited, with its traced (non-static) parameter names.
    pub(crate) fn jit_context(&self) -> Option<&(&'a JitInfo, HashSet<String>)> {
        self.jit.as_ref()
    }

    /// Whether `expr` is a tensor in the current context.
    pub(crate) fn is_tensor(&self, expr: &Expr) -> bool {
        let empty = HashSet::new();
        let extra = self.jit.as_ref().map_or(&empty, |(_, p)| p);
        self.semantic.is_tensor_expr(expr, extra, self.scope())
    }

    /// The XLA device expression to write at `offset`: `device` where that name is defined
    /// there (a parameter, an earlier local, a global), else `torch_xla.device()`.
    pub(crate) fn device_expr(&self, offset: u32) -> &'static str {
        if self.semantic.scopes.is_bound_at("device", offset) {
            "device"
        } else {
            "torch_xla.device()"
        }
    }

    /// The scope being visited.
    pub(crate) fn scope(&self) -> u32 {
        self.scopes.last().copied().unwrap_or(crate::scope::MODULE)
    }

    /// Inside a branch that only runs on a non-TPU platform (the `else` of
    /// `if platform == "tpu":`, the body of `if platform == "gpu":` or `!= "tpu"`).
    pub(crate) fn in_non_tpu_branch(&self) -> bool {
        self.non_tpu > 0
    }

    /// The statement being visited.
    pub(crate) fn current_stmt(&self) -> Option<&'a Stmt> {
        self.stmts.last().copied()
    }

    /// The expression enclosing the one being visited.
    pub(crate) fn parent_expr(&self) -> Option<&'a Expr> {
        self.exprs.len().checked_sub(2).map(|i| self.exprs[i])
    }

    /// The methods chained onto `expr` (the expression being visited or one enclosing it), outwards:
    /// for `ds.batch(8).prefetch(2)` visited at `ds.batch(8)`, the `prefetch(2)` call.
    pub(crate) fn chained_calls(&self, expr: &Expr) -> Vec<(&'a str, &'a Call)> {
        let mut out = Vec::new();
        let mut cur = expr.span;
        let start = expr.span;
        let mut it = self.exprs.iter().rev().copied().skip_while(move |e| e.span != start).skip(1);
        while let Some(attr) = it.next() {
            let ExprKind::Attribute { value, attr: name } = &attr.kind else { break };
            if value.span != cur {
                break;
            }
            let Some(call_expr) = it.next() else { break };
            let ExprKind::Call(call) = &call_expr.kind else { break };
            if call.func.span != attr.span {
                break;
            }
            out.push((name.name.as_str(), call));
            cur = call_expr.span;
        }
        out
    }

    /// Whether `span` is the target of an assignment (`x[mask] = 0`).
    pub(crate) fn is_store_target(&self, span: Span) -> bool {
        self.store_targets.contains(&span)
    }

    /// Whether the current statement is the only one in its block.
    pub(crate) fn current_stmt_is_sole(&self) -> bool {
        self.bodies.last() == Some(&1)
    }

    /// An edit adding the top-level import `line` if it is missing.
    pub(crate) fn import_edit(&self, line: &str) -> Option<Edit> {
        let (lines, offset) = self.import_site.get_or_init(|| {
            let lines = self.source.lines().map(str::trim_end).collect();
            (lines, edits::import_insertion_offset(self.source, self.module))
        });
        if lines.contains(line) {
            return None;
        }
        let prefix =
            if *offset > 0 && !self.source[..*offset as usize].ends_with('\n') { "\n" } else { "" };
        Some(Edit::insert(*offset, format!("{prefix}{line}\n")))
    }

    /// The source text of `span`.
    pub(crate) fn text(&self, span: Span) -> &'a str {
        span.slice(self.source)
    }

    fn walk_body(&mut self, body: &'a [Stmt]) {
        self.bodies.push(body.len());
        for s in body {
            self.walk_stmt(s);
        }
        self.bodies.pop();
    }

    fn walk_exprs(&mut self, exprs: impl IntoIterator<Item = &'a Expr>) {
        for e in exprs {
            self.walk_expr(e);
        }
    }

    fn walk_stmt(&mut self, stmt: &'a Stmt) {
        self.stmts.push(stmt);
        match &stmt.kind {
            StmtKind::Assign { targets, .. } => {
                self.store_targets.extend(targets.iter().map(|t| t.span))
            }
            StmtKind::AugAssign { target, .. } | StmtKind::AnnAssign { target, .. } => {
                self.store_targets.insert(target.span);
            }
            _ => {}
        }
        analyze::statement(self, stmt);
        match &stmt.kind {
            StmtKind::FunctionDef(f) => {
                self.walk_exprs(&f.decorators);
                self.walk_exprs(f.params.iter().filter_map(|p| p.default.as_ref()));
                let saved = (self.step_depth, self.throttled, self.loop_depth, self.jit.take());
                self.step_depth = usize::from(self.semantic.step_functions.contains(&f.name.name));
                self.throttled = 0;
                self.loop_depth = 0;
                self.jit = self.semantic.jitted.get(&f.name.name).map(|info| {
                    let params = f
                        .params
                        .iter()
                        .map(|p| p.name.name.clone())
                        .filter(|n| !info.static_params.contains(n) && n != "self")
                        .collect();
                    (info, params)
                });
                self.scopes.push(stmt.span.start);
                self.walk_body(&f.body);
                self.scopes.pop();
                (self.step_depth, self.throttled, self.loop_depth, self.jit) = saved;
            }
            StmtKind::For(f) => {
                self.walk_expr(&f.iter);
                self.walk_expr(&f.target);
                let step = self.semantic.step_loops.contains(&stmt.span);
                self.enter_loop(step);
                self.walk_body(&f.body);
                self.leave_loop(step);
                self.walk_body(&f.orelse);
            }
            StmtKind::While(w) => {
                let step = self.semantic.step_loops.contains(&stmt.span);
                self.enter_loop(step);
                self.walk_expr(&w.test);
                self.walk_body(&w.body);
                self.leave_loop(step);
                self.walk_body(&w.orelse);
            }
            StmtKind::ClassDef(_) => {
                self.scopes.push(stmt.span.start);
                let mut v = Adapter { checker: self };
                walk_stmt(&mut v, stmt);
                self.scopes.pop();
            }
            StmtKind::If(i) => {
                self.walk_expr(&i.test);
                let throttle = self.step_depth > 0 && is_throttle(&i.test);
                self.throttled += usize::from(throttle);
                let platform = platform_test(&i.test);
                self.non_tpu += usize::from(platform == Some(false));
                self.walk_body(&i.body);
                self.non_tpu -= usize::from(platform == Some(false));
                self.non_tpu += usize::from(platform == Some(true));
                for b in &i.branches {
                    if let Some(t) = &b.test {
                        self.walk_expr(t);
                    }
                    self.walk_body(&b.body);
                }
                self.non_tpu -= usize::from(platform == Some(true));
                self.throttled -= usize::from(throttle);
            }
            _ => {
                let mut v = Adapter { checker: self };
                walk_stmt(&mut v, stmt);
            }
        }
        self.stmts.pop();
    }

    /// A step loop inside a throttled branch (`if step % 500 == 0:` holding a validation
    /// loop) steps on every one of its own iterations: its body is not throttled.
    fn enter_loop(&mut self, step: bool) {
        self.loop_depth += 1;
        self.step_depth += usize::from(step);
        if step {
            self.throttle_stack.push(std::mem::take(&mut self.throttled));
        }
    }

    fn leave_loop(&mut self, step: bool) {
        self.loop_depth -= 1;
        self.step_depth -= usize::from(step);
        if step {
            self.throttled = self.throttle_stack.pop().unwrap_or(0);
        }
    }

    fn walk_expr(&mut self, expr: &'a Expr) {
        self.exprs.push(expr);
        analyze::expression(self, expr);
        let mut v = Adapter { checker: self };
        walk_expr(&mut v, expr);
        self.exprs.pop();
    }
}

/// Routes the generic visitor back into the checker (so nested bodies keep their context).
struct Adapter<'c, 'a> {
    checker: &'c mut Checker<'a>,
}

impl<'a> Visitor<'a> for Adapter<'_, 'a> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        self.checker.walk_stmt(stmt);
    }
    fn visit_expr(&mut self, expr: &'a Expr) {
        self.checker.walk_expr(expr);
    }
    fn visit_body(&mut self, body: &'a [Stmt]) {
        self.checker.walk_body(body);
    }
}

/// `Some(true)` when the `if` body runs only on TPU (`platform == "tpu"`), `Some(false)` when
/// it runs only off TPU (`platform != "tpu"`, `== "gpu"` / `"cuda"` / `"cpu"`).
fn platform_test(test: &Expr) -> Option<bool> {
    if cuda_guard(test) {
        return Some(false);
    }
    let ExprKind::Compare { left, ops, comparators } = &test.kind else { return None };
    let ([op], [right]) = (ops.as_slice(), comparators.as_slice()) else { return None };
    let lit = right.as_str().or_else(|| left.as_str())?.to_ascii_lowercase();
    let eq = match op {
        tpuport_python::ast::CmpOp::Eq => true,
        tpuport_python::ast::CmpOp::NotEq => false,
        _ => return None,
    };
    match lit.as_str() {
        "tpu" => Some(eq),
        "gpu" | "cuda" | "cpu" | "rocm" if eq => Some(false),
        _ => None,
    }
}

/// A test that holds only where CUDA is: `torch.cuda.is_available()`, a flag named for it
/// (`use_cuda`, `args.cuda`, `is_cuda_available`), or an `and` with one of those.
fn cuda_guard(test: &Expr) -> bool {
    match &test.kind {
        ExprKind::BoolOp { is_and: true, values } => values.iter().any(cuda_guard),
        _ => {
            if let Some(c) = test.as_call() {
                return c.func.dotted().is_some_and(|d| d.ends_with("cuda.is_available"));
            }
            test.last_name().is_some_and(|n| {
                let n = n.to_ascii_lowercase();
                n == "cuda" || n == "use_cuda" || n == "is_cuda_available" || n == "cuda_available"
            })
        }
    }
}

/// Whether an `if` in the step loop runs only now and then: `step % N == 0`, or a comparison
/// of a loop counter with a constant (`if i == 0:`, once per loop).
fn is_throttle(e: &Expr) -> bool {
    if has_modulo(e) || schedule_call(e) {
        return true;
    }
    matches!(&e.kind, ExprKind::Compare { ops, comparators, .. }
        if ops.len() == 1
            && matches!(ops[0], tpuport_python::ast::CmpOp::Eq)
            && matches!(comparators[0].kind, ExprKind::Int(Some(_))))
}

/// A schedule check: a call handed the step counter (`u.itstime(step, log_every, total)`,
/// `should_log(global_step)`), alone or in an `and` / `or` / `not`.
fn schedule_call(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::BoolOp { values, .. } => values.iter().any(schedule_call),
        ExprKind::UnaryOp { operand, .. } => schedule_call(operand),
        _ => e.as_call().is_some_and(|c| {
            c.args.iter().chain(c.keywords.iter().map(|k| &k.value)).any(|a| {
                a.as_name().is_some_and(|n| {
                    let n = n.to_ascii_lowercase();
                    n.contains("step") || n == "it" || n == "iteration" || n == "iter_num"
                })
            })
        }),
    }
}

fn has_modulo(e: &Expr) -> bool {
    struct Find(bool);
    impl<'a> Visitor<'a> for Find {
        fn visit_expr(&mut self, e: &'a Expr) {
            if let ExprKind::BinOp { op: "%", .. } = e.kind {
                self.0 = true;
            }
            walk_expr(self, e);
        }
    }
    let mut f = Find(false);
    f.visit_expr(e);
    f.0
}
