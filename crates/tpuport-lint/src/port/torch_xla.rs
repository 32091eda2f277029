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

/// `torch.device("cuda" if torch.cuda.is_available() else "cpu")`, the bare conditional,
/// `torch.accelerator.current_accelerator()`, and an `if` whose every branch only assigns the
/// device (`if use_cuda: device = ... else: device = torch.device("cpu")`) become
/// `torch_xla.device()`: the device is chosen unconditionally, since on a TPU VM the CUDA test
/// is false and the script would otherwise train on the CPU.
fn device_expressions(ctx: &Ctx<'_>, out: &mut Vec<Proposal>, _notes: &mut Vec<Note>) {
    struct Find<'c, 'a> {
        ctx: &'c Ctx<'a>,
        out: &'c mut Vec<Proposal>,
    }
    impl Find<'_, '_> {
        fn mentions_device_choice(&self, x: &Expr) -> bool {
            let t = x.span.slice(self.ctx.source);
            t.contains("\"cuda")
                || t.contains("'cuda")
                || t.contains("torch.cuda.is_available")
                || t.contains("accelerator")
                || t.contains("use_cuda")
                || t.contains("\"mps")
                || t.contains("'mps")
        }

        fn push(&mut self, span: tpuport_python::Span, text: String, description: &str) {
            let mut v = vec![Edit::replace(span, text)];
            v.extend(self.ctx.add_import("import torch_xla"));
            self.out.push(Proposal { edits: v, description: description.to_owned() });
        }

        /// `name` when every branch of `i` (an `else` included) is one `name = ...`.
        fn device_if<'s>(&self, s: &'s Stmt) -> Option<&'s str> {
            let StmtKind::If(i) = &s.kind else { return None };
            if !i.branches.iter().any(|b| b.test.is_none()) {
                return None;
            }
            let sole = |body: &'s [Stmt]| -> Option<&'s str> {
                match body {
                    [Stmt { kind: StmtKind::Assign { targets, .. }, .. }] => {
                        match targets.as_slice() {
                            [t] => t.as_name(),
                            _ => None,
                        }
                    }
                    _ => None,
                }
            };
            let name = sole(&i.body)?;
            if !name.to_ascii_lowercase().contains("device")
                || !i.branches.iter().all(|b| sole(&b.body) == Some(name))
            {
                return None;
            }
            let text = s.span.slice(self.ctx.source);
            let choice = text.contains("cuda")
                || text.contains("accelerator")
                || text.contains("\"cpu\"")
                || text.contains("'cpu'");
            choice.then_some(name)
        }
    }
    impl<'a> Visitor<'a> for Find<'_, '_> {
        fn visit_stmt(&mut self, s: &'a Stmt) {
            if let Some(name) = self.device_if(s) {
                self.push(
                    s.span,
                    format!("{name} = torch_xla.device()"),
                    "device: `torch_xla.device()`, chosen unconditionally (the CUDA/CPU branch is replaced)",
                );
                return;
            }
            walk_stmt(self, s);
        }
        fn visit_expr(&mut self, e: &'a Expr) {
            if let Some(call) = e.as_call()
                && self.ctx.semantic.resolves_to(
                    &call.func,
                    &[
                        "torch.accelerator.current_accelerator",
                        "torch.accelerator.current_device_index",
                    ],
                )
            {
                self.push(
                    call_span(call),
                    "torch_xla.device()".to_owned(),
                    "device: `torch_xla.device()` instead of the current accelerator",
                );
                return;
            }
            if let Some(call) = e.as_call()
                && self.ctx.semantic.resolves_to(&call.func, &["torch.device"])
                && call.args.len() == 1
                && !matches!(call.args[0].kind, ExprKind::Str(_))
                && self.mentions_device_choice(&call.args[0])
            {
                self.push(
                    call_span(call),
                    "torch_xla.device()".to_owned(),
                    "device: `torch_xla.device()`",
                );
                return;
            }
            if let ExprKind::IfExp { body, orelse, .. } = &e.kind
                && self.mentions_device_choice(e)
                && [body, orelse]
                    .iter()
                    .any(|p| p.as_str().is_some_and(crate::rules::helpers::is_cuda_device))
            {
                self.push(
                    e.span,
                    "torch_xla.device()".to_owned(),
                    "device: `torch_xla.device()` instead of a CUDA/CPU choice",
                );
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
                let prepared = match f.iter.as_call() {
                    Some(c) if c.func.as_name() == Some("enumerate") => c.args.first(),
                    _ => Some(&f.iter),
                }
                .and_then(Expr::dotted)
                .is_some_and(|d| self.ctx.semantic.prepared.contains(&d));
                // `accelerator.prepare` wraps loaders in an `MpDeviceLoader` on TPU.
                let loader_marks_step = iter.contains("MpDeviceLoader")
                    || prepared
                    || loader_in(self.ctx, &f.iter).is_some()
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
                    v.extend(self.ctx.add_import("import torch_xla"));
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

/// The loader a step loop iterates (`loader`, `self.loader` or `enumerate(loader)`): a known
/// `DataLoader` or a name that reads like one, not one that `accelerator.prepare` returned.
fn loader_in<'e>(ctx: &Ctx<'_>, iter: &'e Expr) -> Option<&'e Expr> {
    let inner = match iter.as_call() {
        Some(c) if c.func.as_name() == Some("enumerate") => c.args.first()?,
        _ => iter,
    };
    let dotted = inner.dotted()?;
    let last = dotted.rsplit('.').next().unwrap_or("");
    let loader =
        ctx.semantic.dataloaders.contains(&dotted) || crate::semantic::is_loader_name(last);
    (loader && !ctx.semantic.prepared.contains(&dotted)).then_some(inner)
}

/// Step loops (training and evaluation) over a data loader iterate
/// `pl.MpDeviceLoader(loader, device)`.
fn wrap_loaders(ctx: &Ctx<'_>, out: &mut Vec<Proposal>, _notes: &mut Vec<Note>) {
    struct Find<'c, 'a> {
        ctx: &'c Ctx<'a>,
        out: &'c mut Vec<Proposal>,
    }
    impl<'a> Visitor<'a> for Find<'_, '_> {
        fn visit_stmt(&mut self, s: &'a Stmt) {
            if let StmtKind::For(f) = &s.kind
                && self.ctx.semantic.step_loops.contains(&s.span)
                && let Some(loader) = loader_in(self.ctx, &f.iter)
            {
                let name = loader.span.slice(self.ctx.source);
                let device = if self.ctx.semantic.scopes.is_bound_at("device", s.span.start) {
                    "device"
                } else {
                    "torch_xla.device()"
                };
                let mut v = vec![Edit::replace(
                    loader.span,
                    format!("pl.MpDeviceLoader({name}, {device})"),
                )];
                v.extend(self.ctx.add_import("import torch_xla.distributed.parallel_loader as pl"));
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
                    {
                        // `rank` and `world_size` together, in one pass.
                        let gone: Vec<_> = call
                            .keywords
                            .iter()
                            .filter(|k| {
                                k.arg
                                    .as_ref()
                                    .is_some_and(|a| a.name == "rank" || a.name == "world_size")
                            })
                            .map(|k| k.span)
                            .collect();
                        if !gone.is_empty() {
                            self.out.push(Proposal {
                                edits: edits::remove_arguments(self.ctx.source, call, &gone),
                                description: "`init_process_group(\"xla\")`: rank and world size come from the XLA runtime".to_owned(),
                            });
                        }
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
