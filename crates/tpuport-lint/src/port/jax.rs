//! JAX recipes: `pmap` → `jit` with `NamedSharding` over a `Mesh`, replication helpers →
//! `device_put`, collectives over the old pmap axis, buffer donation.

use tpuport_python::ast::{Call, Expr, ExprKind, Stmt, StmtKind};
use tpuport_python::visitor::{Visitor, walk_expr, walk_stmt};

use super::{Ctx, Note, Proposal, Recipe, call_span};
use crate::fix::{Edit, edits};
use crate::rules::jax::missing_donate_argnums::rebinding_call;

pub(super) const RECIPES: &[Recipe] = &[
    pmap_to_jit,
    per_device_batches,
    mesh_definitions,
    replication_helpers,
    donation,
    super::jax_outputs::first_replica,
    super::jax_outputs::local_replicate,
];

/// Keywords of `pmap` kept (renamed) on `jit`.
fn jit_keywords(ctx: &Ctx<'_>, call: &Call, skip_first_arg: bool) -> (Vec<String>, Vec<String>) {
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    for k in &call.keywords {
        let Some(arg) = &k.arg else { continue };
        let value = k.value.span.slice(ctx.source);
        match arg.name.as_str() {
            "donate_argnums" | "donate_argnames" | "static_argnames" => {
                kept.push(format!("{}={value}", arg.name))
            }
            "static_broadcasted_argnums" => kept.push(format!("static_argnums={value}")),
            "axis_name" => {}
            other => dropped.push(other.to_owned()),
        }
    }
    let _ = skip_first_arg;
    (kept, dropped)
}

fn pmap_axis(call: &Call) -> Option<String> {
    call.keyword("axis_name").and_then(|k| k.value.as_str()).map(str::to_owned)
}

/// `jax.pmap(f, axis_name=..)` → `jax.jit(f, ..)`; `@jax.pmap` / `@partial(jax.pmap, ..)` → jit.
fn pmap_to_jit(ctx: &Ctx<'_>, out: &mut Vec<Proposal>, notes: &mut Vec<Note>) {
    struct Find<'c, 'a> {
        ctx: &'c Ctx<'a>,
        out: &'c mut Vec<Proposal>,
        notes: &'c mut Vec<Note>,
    }
    impl<'a> Visitor<'a> for Find<'_, '_> {
        fn visit_expr(&mut self, e: &'a Expr) {
            let ctx = self.ctx;
            if ctx.semantic.qualified_name(e).as_deref() == Some("jax.pmap") && e.dotted().is_some()
            {
                // Bare reference (decorator `@jax.pmap` or argument of `partial`).
                self.out.push(Proposal { edits: vec![Edit::replace(e.span, "jax.jit")], description: "`jax.pmap` → `jax.jit` (inputs sharded over the mesh instead of a device axis)".to_owned() });
                self.notes.push(Note {
                    at: e.span.start,
                    message: "outputs of the former pmap function are global arrays now, not stacked per device: drop `[0]` / `unreplicate` on them and size batches globally".to_owned(),
                });
                return;
            }
            if let Some(call) = e.as_call() {
                let is_pmap = ctx.semantic.resolves_to(&call.func, &["jax.pmap"]);
                let is_partial_pmap = ctx.semantic.resolves_to(&call.func, &["functools.partial"])
                    && call
                        .args
                        .first()
                        .is_some_and(|a| ctx.semantic.resolves_to(a, &["jax.pmap"]));
                if is_pmap || is_partial_pmap {
                    let (kept, dropped) = jit_keywords(ctx, call, is_partial_pmap);
                    let head = if is_partial_pmap {
                        format!("{}(jax.jit", call.func.span.slice(ctx.source))
                    } else {
                        "jax.jit(".to_owned()
                    };
                    // Only the function stays positional: every other `jit` argument is
                    // keyword-only, and pmap's second positional argument is its axis name.
                    let mut args: Vec<String> = call
                        .args
                        .iter()
                        .skip(usize::from(is_partial_pmap))
                        .take(usize::from(!is_partial_pmap))
                        .map(|a| a.span.slice(ctx.source).to_owned())
                        .collect();
                    args.extend(kept);
                    let sep = if is_partial_pmap && !args.is_empty() { ", " } else { "" };
                    let text = format!("{head}{sep}{})", args.join(", "));
                    self.out.push(Proposal {
                        edits: vec![Edit::replace(call_span(call), text)],
                        description: "`jax.pmap` → `jax.jit`".to_owned(),
                    });
                    self.notes.push(Note {
                        at: call.func.span.start,
                        message: "outputs of the former pmap function are global arrays now, not stacked per device: drop `[0]` / `unreplicate` on them and size batches globally".to_owned(),
                    });
                    if !dropped.is_empty() {
                        self.notes.push(Note {
                            at: call.func.span.start,
                            message: format!("pmap options `{}` have no jit equivalent: express them as `in_shardings`/`out_shardings`", dropped.join("`, `")),
                        });
                    }
                    return;
                }
            }
            walk_expr(self, e);
        }
    }
    Find { ctx, out, notes }.visit_body(&ctx.parsed.module().body);
}

/// The pmap axis names used in the file (default `batch`).
fn axis_names(ctx: &Ctx<'_>) -> Vec<String> {
    struct Find<'c, 'a> {
        ctx: &'c Ctx<'a>,
        names: Vec<String>,
    }
    impl<'a> Visitor<'a> for Find<'_, '_> {
        fn visit_expr(&mut self, e: &'a Expr) {
            if let Some(call) = e.as_call() {
                let pmapish = self.ctx.semantic.resolves_to(&call.func, &["jax.pmap"])
                    || call
                        .args
                        .first()
                        .is_some_and(|a| self.ctx.semantic.resolves_to(a, &["jax.pmap"]));
                if pmapish && let Some(n) = pmap_axis(call) {
                    self.names.push(n);
                }
                let collective = self
                    .ctx
                    .semantic
                    .qualified_name(&call.func)
                    .is_some_and(|q| q.starts_with("jax.lax.p"));
                if collective && let Some(n) = call.arg(1, "axis_name").and_then(Expr::as_str) {
                    self.names.push(n.to_owned());
                }
            }
            walk_expr(self, e);
        }
    }
    let mut f = Find { ctx, names: Vec::new() };
    f.visit_body(&ctx.parsed.module().body);
    f.names.dedup();
    f.names
}

/// Adds the mesh and the two shardings once, after the imports, when the file uses pmap-era
/// data placement.
fn mesh_definitions(ctx: &Ctx<'_>, out: &mut Vec<Proposal>, _notes: &mut Vec<Note>) {
    // pmap-era placement, or a rewrite that already uses the shardings without the file
    // defining them (its mesh insertion lost a clash in an earlier pass).
    let pmap_era = uses_pmap_era_api(ctx);
    let dangling = ["data_sharding", "replicated_sharding"]
        .iter()
        .any(|n| ctx.source.contains(n) && !ctx.semantic.scopes.binds(crate::scope::MODULE, n));
    let needs = pmap_era || dangling;
    // Only JAX files: a `replicate(` in unrelated code is no reason to add a mesh.
    let jax_file = ctx.semantic.uses(crate::semantic::Framework::Jax);
    if !needs || !jax_file || ctx.source.contains("data_mesh = jax.make_mesh(") {
        return;
    }
    let axis = axis_names(ctx).into_iter().next().unwrap_or_else(|| "batch".to_owned());
    let module = ctx.parsed.module();
    let offset = edits::import_insertion_offset(ctx.source, module);
    // `import jax` goes first in the inserted text: the mesh lines below use it.
    let mut text =
        if ctx.semantic.is_imported("jax") { String::new() } else { "import jax\n".to_owned() };
    let mut names = Vec::new();
    if ctx.semantic.binding("NamedSharding") != Some("jax.sharding.NamedSharding") {
        names.push("NamedSharding");
    }
    if ctx.semantic.binding("P") != Some("jax.sharding.PartitionSpec") {
        names.push("PartitionSpec as P");
    }
    if !names.is_empty() {
        text.push_str(&format!("from jax.sharding import {}\n", names.join(", ")));
    }
    text.push_str(&format!(
        "\ndata_mesh = jax.make_mesh((jax.device_count(),), (\"{axis}\",))\n\
         data_sharding = NamedSharding(data_mesh, P(\"{axis}\"))\n\
         replicated_sharding = NamedSharding(data_mesh, P())\n"
    ));
    let v = vec![Edit::insert(offset, text)];
    out.push(Proposal { edits: v, description: format!("a 1-D `Mesh` over all devices (axis \"{axis}\") with data and replicated `NamedSharding`s") });
}

/// `replicate(x)` → `jax.device_put(x, replicated_sharding)`, `unreplicate(x)` → `x`,
/// `shard(x)` → `jax.device_put(x, data_sharding)`, `device_put_replicated(x, devs)` →
/// `jax.device_put(x, replicated_sharding)`, and `pmean`/`psum` over the old pmap axis.
fn replication_helpers(ctx: &Ctx<'_>, out: &mut Vec<Proposal>, notes: &mut Vec<Note>) {
    let axes = axis_names(ctx);
    struct Find<'c, 'a> {
        ctx: &'c Ctx<'a>,
        out: &'c mut Vec<Proposal>,
        notes: &'c mut Vec<Note>,
        axes: Vec<String>,
    }
    impl<'a> Visitor<'a> for Find<'_, '_> {
        fn visit_body(&mut self, body: &'a [Stmt]) {
            for s in body {
                // `x = jax.lax.pmean(x, "batch")` goes away entirely.
                if let StmtKind::Assign { targets, value } = &s.kind
                    && let [t] = targets.as_slice()
                    && let Some(call) = value.as_call()
                    && self.ctx.semantic.resolves_to(&call.func, &["jax.lax.pmean"])
                    && call
                        .args
                        .first()
                        .and_then(Expr::as_name)
                        .is_some_and(|a| t.as_name() == Some(a))
                    && call
                        .arg(1, "axis_name")
                        .and_then(Expr::as_str)
                        .is_some_and(|a| self.axes.iter().any(|n| n == a))
                {
                    self.notes.push(Note {
                        at: s.span.start,
                        message: "removed a `pmean` over the old pmap axis: under jit the value is already global; check that the loss is a mean over the whole batch".to_owned(),
                    });
                    self.out.push(Proposal {
                        edits: vec![edits::delete_statement(self.ctx.source, s, body.len() == 1)],
                        description: "`pmean` over the pmap axis removed (global arrays under jit)"
                            .to_owned(),
                    });
                    continue;
                }
                self.visit_stmt(s);
            }
        }
        fn visit_expr(&mut self, e: &'a Expr) {
            let ctx = self.ctx;
            let Some(call) = e.as_call() else {
                walk_expr(self, e);
                return;
            };
            let q = ctx.semantic.qualified_name(&call.func).unwrap_or_default();
            let first = call.args.first().map(|a| a.span.slice(ctx.source).to_owned());
            let (text, what) = match (q.as_str(), &first) {
                ("flax.jax_utils.replicate", Some(x)) | ("jax.device_put_replicated", Some(x)) => (
                    format!("jax.device_put({x}, replicated_sharding)"),
                    "replicated placement with `NamedSharding(mesh, P())`",
                ),
                ("flax.jax_utils.unreplicate", Some(x)) => {
                    (x.clone(), "no unreplicate: arrays are global under jit")
                }
                ("flax.training.common_utils.shard", Some(x)) => (
                    format!("jax.device_put({x}, data_sharding)"),
                    "batch sharded over the mesh instead of reshaped per device",
                ),
                ("jax.lax.pmean", Some(x))
                    if call
                        .arg(1, "axis_name")
                        .and_then(Expr::as_str)
                        .is_some_and(|a| self.axes.iter().any(|n| n == a)) =>
                {
                    self.notes.push(Note {
                        at: call.func.span.start,
                        message: "removed a `pmean` over the old pmap axis: under jit the value is already global; check that the loss is a mean over the whole batch".to_owned(),
                    });
                    (x.clone(), "`pmean` over the pmap axis removed (global arrays under jit)")
                }
                ("jax.lax.psum" | "jax.lax.all_gather" | "jax.lax.axis_index", _) => {
                    self.notes.push(Note {
                        at: call.func.span.start,
                        message: format!("`{}` refers to the pmap axis: rewrite with global array ops, or keep it inside `jax.shard_map(f, mesh=mesh, in_specs=..., out_specs=...)`", call.func.span.slice(ctx.source)),
                    });
                    walk_expr(self, e);
                    return;
                }
                _ => {
                    walk_expr(self, e);
                    return;
                }
            };
            self.out.push(Proposal {
                edits: vec![Edit::replace(call_span(call), text)],
                description: what.to_owned(),
            });
        }
    }
    Find { ctx, out, notes, axes }.visit_body(&ctx.parsed.module().body);
}

/// Adds `donate_argnums` to jitted functions whose arguments are rebound to their results.
fn donation(ctx: &Ctx<'_>, out: &mut Vec<Proposal>, _notes: &mut Vec<Note>) {
    let mut wanted: Vec<(String, Vec<usize>)> = Vec::new();
    super::tf_tpu::visit_bodies(&ctx.parsed.module().body, &mut |body| {
        for s in body {
            if let Some((f, idx, _)) = rebinding_call(s)
                && ctx
                    .semantic
                    .jitted
                    .get(f)
                    .is_some_and(|i| !i.donates && i.transform == "jax.jit")
                && !wanted.iter().any(|(n, _)| n == f)
            {
                wanted.push((f.to_owned(), idx));
            }
        }
    });
    for (name, idx) in wanted {
        let nums = if idx.len() == 1 {
            format!("({},)", idx[0])
        } else {
            format!("({})", idx.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "))
        };
        let Some(site) = find_site(ctx, &name) else { continue };
        let edit = match site {
            Site::Bare(span) => {
                let partial = if ctx.semantic.binding("partial") == Some("functools.partial") {
                    "partial"
                } else {
                    "functools.partial"
                };
                let mut v =
                    vec![Edit::replace(span, format!("{partial}(jax.jit, donate_argnums={nums})"))];
                if partial == "functools.partial" {
                    v.extend(ctx.add_import("import functools"));
                }
                v
            }
            Site::Call(call) => {
                vec![edits::append_argument(call, &format!("donate_argnums={nums}"))]
            }
        };
        out.push(Proposal {
            edits: edit,
            description: format!(
                "`{name}`: `donate_argnums={nums}` (inputs rebound to outputs reuse their buffers)"
            ),
        });
    }
}

enum Site<'a> {
    Bare(tpuport_python::Span),
    Call(&'a Call),
}

fn find_site<'a>(ctx: &'a Ctx<'a>, name: &str) -> Option<Site<'a>> {
    let info = ctx.semantic.jitted.get(name)?;
    struct Find<'c, 'a> {
        ctx: &'c Ctx<'a>,
        span: tpuport_python::Span,
        found: Option<Site<'a>>,
    }
    impl<'a> Visitor<'a> for Find<'_, 'a> {
        fn visit_stmt(&mut self, s: &'a Stmt) {
            if let StmtKind::FunctionDef(f) = &s.kind {
                for d in &f.decorators {
                    if d.span == self.span {
                        self.found = Some(match &d.kind {
                            ExprKind::Call(c) => Site::Call(c),
                            _ => Site::Bare(d.span),
                        });
                    }
                }
            }
            walk_stmt(self, s);
        }
        fn visit_expr(&mut self, e: &'a Expr) {
            if e.span == self.span
                && let Some(c) = e.as_call()
            {
                self.found = Some(Site::Call(c));
            }
            walk_expr(self, e);
        }
    }
    let mut f = Find { ctx, span: info.site, found: None };
    let _ = f.ctx;
    f.visit_body(&ctx.parsed.module().body);
    f.found
}

/// Whether `e` is `jax.local_device_count()` / `jax.device_count()` or a name bound to one.
fn is_device_count(ctx: &Ctx<'_>, e: &Expr, counts: &[String]) -> bool {
    e.as_call().is_some_and(|c| {
        ctx.semantic.resolves_to(&c.func, &["jax.local_device_count", "jax.device_count"])
    }) || e.as_name().is_some_and(|n| counts.iter().any(|c| c == n))
}

/// Names assigned from `jax.local_device_count()` / `jax.device_count()` anywhere in the file.
fn device_count_names(ctx: &Ctx<'_>) -> Vec<String> {
    let mut out = Vec::new();
    super::tf_tpu::visit_bodies(&ctx.parsed.module().body, &mut |body| {
        for s in body {
            if let StmtKind::Assign { targets, value } = &s.kind
                && let [t] = targets.as_slice()
                && let Some(n) = t.as_name()
                && is_device_count(ctx, value, &[])
            {
                out.push(n.to_owned());
            }
        }
    });
    out
}

/// In a former pmap file, the per-device batch layout goes: `x.reshape(n_devices, -1, ...)` (or
/// `x.reshape((n_devices, -1) + x.shape[1:])`) becomes `jax.device_put(x, data_sharding)`, which
/// keeps the global batch and shards it over the mesh; `jax_utils.prefetch_to_device(it, k)`
/// becomes `it` (its batches are placed by that `device_put`); `axis_name=` of the old pmap axis
/// goes from calls other than collectives (no named axis exists under `jit`).
fn per_device_batches(ctx: &Ctx<'_>, out: &mut Vec<Proposal>, notes: &mut Vec<Note>) {
    if !ctx.source.contains("pmap") || !ctx.semantic.uses(crate::semantic::Framework::Jax) {
        return;
    }
    let counts = device_count_names(ctx);
    let axes = axis_names(ctx);
    struct Find<'c, 'a> {
        ctx: &'c Ctx<'a>,
        out: &'c mut Vec<Proposal>,
        notes: &'c mut Vec<Note>,
        counts: Vec<String>,
        axes: Vec<String>,
    }
    impl Find<'_, '_> {
        fn leading_is_device_count(&self, call: &Call) -> bool {
            let first = match call.args.as_slice() {
                [a, ..] => match &a.kind {
                    ExprKind::Tuple(v) => v.first(),
                    ExprKind::BinOp { left, op: "+", .. } => match &left.kind {
                        ExprKind::Tuple(v) => v.first(),
                        _ => None,
                    },
                    _ => Some(a),
                },
                [] => None,
            };
            first.is_some_and(|f| is_device_count(self.ctx, f, &self.counts))
        }
    }
    impl<'a> Visitor<'a> for Find<'_, '_> {
        fn visit_body(&mut self, body: &'a [Stmt]) {
            for s in body {
                // `it = prefetch_to_device(it, 2)` goes as a whole.
                if let StmtKind::Assign { targets, value } = &s.kind
                    && let [t] = targets.as_slice()
                    && let Some(call) = value.as_call()
                    && self
                        .ctx
                        .semantic
                        .resolves_to(&call.func, &["flax.jax_utils.prefetch_to_device"])
                    && call.args.first().is_some_and(|a| {
                        a.span.slice(self.ctx.source) == t.span.slice(self.ctx.source)
                    })
                {
                    self.out.push(Proposal {
                        edits: vec![edits::delete_statement(self.ctx.source, s, body.len() == 1)],
                        description:
                            "`prefetch_to_device` removed: batches are placed with `data_sharding`"
                                .to_owned(),
                    });
                    continue;
                }
                self.visit_stmt(s);
            }
        }
        fn visit_expr(&mut self, e: &'a Expr) {
            let ctx = self.ctx;
            let Some(call) = e.as_call() else {
                walk_expr(self, e);
                return;
            };
            if let Some((recv, "reshape")) = crate::rules::helpers::method(call)
                && self.leading_is_device_count(call)
            {
                let x = recv.span.slice(ctx.source);
                self.out.push(Proposal {
                    edits: vec![Edit::replace(call_span(call), format!("jax.device_put({x}, data_sharding)"))],
                    description: "per-device batch reshape → the global batch sharded over the mesh (`data_sharding`)".to_owned(),
                });
                self.notes.push(Note {
                    at: call.func.span.start,
                    message: "batches keep their global shape and are sharded with `jax.device_put(x, data_sharding)`; on several hosts build them with `jax.make_array_from_process_local_data` instead".to_owned(),
                });
                return;
            }
            if ctx.semantic.resolves_to(&call.func, &["flax.jax_utils.prefetch_to_device"])
                && let Some(it) = call.args.first()
            {
                self.out.push(Proposal {
                    edits: vec![Edit::replace(call_span(call), it.span.slice(ctx.source))],
                    description:
                        "`prefetch_to_device` removed: batches are placed with `data_sharding`"
                            .to_owned(),
                });
                return;
            }
            let collective = ctx
                .semantic
                .qualified_name(&call.func)
                .is_some_and(|q| q.starts_with("jax.lax.") || q == "jax.pmap");
            if !collective
                && let Some(k) = call.keyword("axis_name")
                && k.value.as_str().is_some_and(|a| self.axes.iter().any(|n| n == a))
                && !call.args.first().is_some_and(|a| ctx.semantic.resolves_to(a, &["jax.pmap"]))
            {
                self.out.push(Proposal {
                    edits: vec![edits::remove_argument(ctx.source, call, k.span)],
                    description:
                        "`axis_name` of the old pmap axis removed (no named axis under jit)"
                            .to_owned(),
                });
            }
            walk_expr(self, e);
        }
    }
    Find { ctx, out, notes, counts, axes }.visit_body(&ctx.parsed.module().body);
}

/// Whether the file refers to `jax.pmap` or a helper that lays data out per device for it.
fn uses_pmap_era_api(ctx: &Ctx<'_>) -> bool {
    const NAMES: &[&str] = &[
        "jax.pmap",
        "flax.jax_utils.replicate",
        "flax.training.common_utils.shard",
        "flax.training.common_utils.shard_prng_key",
        "jax.device_put_replicated",
        "jax.device_put_sharded",
    ];
    struct Find<'c, 'a> {
        ctx: &'c Ctx<'a>,
        found: bool,
    }
    impl<'a> Visitor<'a> for Find<'_, '_> {
        fn visit_expr(&mut self, e: &'a Expr) {
            if self.found {
                return;
            }
            if e.dotted().is_some() && self.ctx.semantic.resolves_to(e, NAMES) {
                self.found = true;
                return;
            }
            walk_expr(self, e);
        }
    }
    let mut f = Find { ctx, found: false };
    f.visit_body(&ctx.parsed.module().body);
    f.found
}
