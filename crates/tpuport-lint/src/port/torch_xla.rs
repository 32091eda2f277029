//! PyTorch → PyTorch/XLA recipes (beyond the lint fixes the port also applies).

use tpuport_python::ast::{Expr, ExprKind, Stmt, StmtKind};
use tpuport_python::visitor::{Visitor, walk_expr, walk_stmt};

use super::{Ctx, Note, Proposal, Recipe, call_span};
use crate::fix::{Edit, edits};

pub(super) const RECIPES: &[Recipe] = &[
    device_expressions,
    wrap_loaders,
    sync_after_optimizer_step,
    xla_process_group,
    launcher_notes,
];

/// `torch.device("cuda" if torch.cuda.is_available() else "cpu")` and the bare conditional
/// become `torch_xla.device()`.
fn device_expressions(ctx: &Ctx<'_>, out: &mut Vec<Proposal>, _notes: &mut Vec<Note>) {
    struct Find<'c, 'a> {
        ctx: &'c Ctx<'a>,
        out: &'c mut Vec<Proposal>,
    }
    impl<'a> Visitor<'a> for Find<'_, '_> {
        fn visit_expr(&mut self, e: &'a Expr) {
            let mentions_cuda = |x: &Expr| {
                let t = x.span.slice(self.ctx.source);
                t.contains("\"cuda") || t.contains("'cuda") || t.contains("torch.cuda.is_available")
            };
            if let Some(call) = e.as_call()
                && self.ctx.semantic.resolves_to(&call.func, &["torch.device"])
                && call.args.len() == 1
                && !matches!(call.args[0].kind, ExprKind::Str(_))
                && mentions_cuda(&call.args[0])
            {
                let mut v = vec![Edit::replace(call_span(call), "torch_xla.device()")];
                v.extend(edits::add_import(
                    self.ctx.source,
                    self.ctx.parsed.module(),
                    "import torch_xla",
                ));
                self.out.push(Proposal {
                    edits: v,
                    description: "device: `torch_xla.device()`".to_owned(),
                });
                return;
            }
            if let ExprKind::Other(parts) = &e.kind
                && parts.len() == 3
                && mentions_cuda(e)
                && parts
                    .iter()
                    .any(|p| p.as_str().is_some_and(crate::rules::helpers::is_cuda_device))
                && e.span.slice(self.ctx.source).contains(" if ")
            {
                let mut v = vec![Edit::replace(e.span, "torch_xla.device()")];
                v.extend(edits::add_import(
                    self.ctx.source,
                    self.ctx.parsed.module(),
                    "import torch_xla",
                ));
                self.out.push(Proposal {
                    edits: v,
                    description: "device: `torch_xla.device()` instead of a CUDA/CPU choice"
                        .to_owned(),
                });
                return;
            }
            walk_expr(self, e);
        }
    }
    Find { ctx, out }.visit_body(&ctx.parsed.module().body);
}

/// In step loops that do not iterate an `MpDeviceLoader` (which marks the step itself), add
/// `torch_xla.sync()` after `optimizer.step()`.
fn sync_after_optimizer_step(ctx: &Ctx<'_>, out: &mut Vec<Proposal>, _notes: &mut Vec<Note>) {
    struct Find<'c, 'a> {
        ctx: &'c Ctx<'a>,
        out: &'c mut Vec<Proposal>,
    }
    impl<'a> Visitor<'a> for Find<'_, '_> {
        fn visit_stmt(&mut self, s: &'a Stmt) {
            if let StmtKind::For(f) = &s.kind
                && self.ctx.semantic.step_loops.contains(&s.span)
            {
                let iter = f.iter.span.slice(self.ctx.source);
                let loader_marks_step = iter.contains("MpDeviceLoader")
                    || loader_in(&f.iter).is_some()
                    || f.iter.as_name().is_some_and(|n| self.ctx.semantic.dataloaders.contains(n))
                    || f.iter
                        .as_call()
                        .and_then(|c| c.args.first())
                        .and_then(Expr::as_name)
                        .is_some_and(|n| self.ctx.semantic.dataloaders.contains(n));
                let body_text = Span::new(s.span.start, s.span.end).slice(self.ctx.source);
                if !loader_marks_step
                    && !body_text.contains("torch_xla.sync()")
                    && !body_text.contains("mark_step")
                    && let Some(step) = find_optimizer_step(&f.body)
                {
                    let indent = edits::indentation_at(self.ctx.source, step.span.start).to_owned();
                    let end = edits::line_end(self.ctx.source, step.span.end);
                    let mut v = vec![Edit::insert(end, format!("{indent}torch_xla.sync()\n"))];
                    v.extend(edits::add_import(
                        self.ctx.source,
                        self.ctx.parsed.module(),
                        "import torch_xla",
                    ));
                    self.out.push(Proposal {
                        edits: v,
                        description: "step boundary: `torch_xla.sync()` after the optimizer step"
                            .to_owned(),
                    });
                }
            }
            walk_stmt(self, s);
        }
        fn visit_expr(&mut self, _e: &'a Expr) {}
    }
    use tpuport_python::Span;
    Find { ctx, out }.visit_body(&ctx.parsed.module().body);
}

/// The loader variable a step loop iterates (`loader` or `enumerate(loader)`), when its name
/// says it is a data loader.
fn loader_in(iter: &Expr) -> Option<&Expr> {
    let inner = match iter.as_call() {
        Some(c) if c.func.as_name() == Some("enumerate") => c.args.first()?,
        _ => iter,
    };
    inner.as_name().filter(|n| n.to_ascii_lowercase().contains("loader")).map(|_| inner)
}

/// Step loops over a `*loader*` variable iterate `pl.MpDeviceLoader(loader, device)`.
fn wrap_loaders(ctx: &Ctx<'_>, out: &mut Vec<Proposal>, _notes: &mut Vec<Note>) {
    struct Find<'c, 'a> {
        ctx: &'c Ctx<'a>,
        out: &'c mut Vec<Proposal>,
    }
    impl<'a> Visitor<'a> for Find<'_, '_> {
        fn visit_stmt(&mut self, s: &'a Stmt) {
            if let StmtKind::For(f) = &s.kind
                && self.ctx.semantic.step_loops.contains(&s.span)
                && let Some(loader) = loader_in(&f.iter)
            {
                let name = loader.span.slice(self.ctx.source);
                let device =
                    if self.ctx.semantic.has_device_var { "device" } else { "torch_xla.device()" };
                let mut v = vec![Edit::replace(
                    loader.span,
                    format!("pl.MpDeviceLoader({name}, {device})"),
                )];
                v.extend(edits::add_import(
                    self.ctx.source,
                    self.ctx.parsed.module(),
                    "import torch_xla.distributed.parallel_loader as pl",
                ));
                self.out.push(Proposal { edits: v, description: format!("`{name}` wrapped in `MpDeviceLoader` (background host-to-device transfer, step marking)") });
            }
            walk_stmt(self, s);
        }
        fn visit_expr(&mut self, _e: &'a Expr) {}
    }
    Find { ctx, out }.visit_body(&ctx.parsed.module().body);
}

fn find_optimizer_step(body: &[Stmt]) -> Option<&Stmt> {
    for s in body {
        match &s.kind {
            StmtKind::Expr(e) => {
                if let Some(c) = e.as_call()
                    && let Some((recv, "step")) = crate::rules::helpers::method(c)
                    && recv.last_name().is_some_and(|n| n.to_ascii_lowercase().contains("opt"))
                {
                    return Some(s);
                }
            }
            StmtKind::If(i) => {
                if let Some(x) = find_optimizer_step(&i.body) {
                    return Some(x);
                }
            }
            StmtKind::With(w) => {
                if let Some(x) = find_optimizer_step(&w.body) {
                    return Some(x);
                }
            }
            _ => {}
        }
    }
    None
}

/// `init_process_group("xla", rank=.., world_size=..)`: rank and size come from the XLA
/// runtime; `torch.cuda.set_device(...)` statements go.
fn xla_process_group(ctx: &Ctx<'_>, out: &mut Vec<Proposal>, _notes: &mut Vec<Note>) {
    struct Find<'c, 'a> {
        ctx: &'c Ctx<'a>,
        out: &'c mut Vec<Proposal>,
    }
    impl<'a> Visitor<'a> for Find<'_, '_> {
        fn visit_body(&mut self, body: &'a [Stmt]) {
            for s in body {
                if let StmtKind::Expr(e) = &s.kind
                    && let Some(call) = e.as_call()
                {
                    if self.ctx.semantic.resolves_to(&call.func, &["torch.cuda.set_device"]) {
                        self.out.push(Proposal {
                            edits: vec![edits::delete_statement(
                                self.ctx.source,
                                s,
                                body.len() == 1,
                            )],
                            description:
                                "`torch.cuda.set_device` removed (each XLA process owns its device)"
                                    .to_owned(),
                        });
                        continue;
                    }
                    if self
                        .ctx
                        .semantic
                        .resolves_to(&call.func, &["torch.distributed.init_process_group"])
                        && call.arg(0, "backend").and_then(Expr::as_str) == Some("xla")
                        && let Some(k) = call.keywords.iter().find(|k| {
                            k.arg
                                .as_ref()
                                .is_some_and(|a| a.name == "rank" || a.name == "world_size")
                        })
                    {
                        self.out.push(Proposal {
                                edits: vec![edits::remove_argument(self.ctx.source, call, k.span)],
                                description: "`init_process_group(\"xla\")`: rank and world size come from the XLA runtime".to_owned(),
                            });
                    }
                }
                self.visit_stmt(s);
            }
        }
        fn visit_expr(&mut self, _e: &'a Expr) {}
    }
    Find { ctx, out }.visit_body(&ctx.parsed.module().body);
}

/// Notes for launch code that has no safe rewrite.
fn launcher_notes(ctx: &Ctx<'_>, _out: &mut Vec<Proposal>, notes: &mut Vec<Note>) {
    if ctx.semantic.uses(crate::semantic::Framework::PyTorch)
        && ctx.source.contains("local_rank")
        && let Some(at) = ctx.source.find("local_rank")
    {
        notes.push(Note {
                at: u32::try_from(at).unwrap_or(0),
                message: "`local_rank` selects a CUDA device: under torch_xla use `torch_xla.runtime.local_ordinal()` where a rank is still needed".to_owned(),
            });
    }
}
