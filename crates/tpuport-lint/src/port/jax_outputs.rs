//! JAX recipes for what the code around a former `pmap` function does with its stacked
//! per-device values: `loss[0]` on an output becomes `loss`, and a file-local
//! `replicate(tree)` helper (the `flax.jax_utils.replicate` idiom) becomes a replicated
//! `device_put`.

use std::collections::HashSet;

use tpuport_python::ast::{Expr, ExprKind, Stmt, StmtKind};
use tpuport_python::visitor::{Visitor, walk_expr, walk_stmt};

use super::{Ctx, Note, Proposal, call_span};
use crate::fix::Edit;

/// Whether `d` (a decorator or an assigned value) is `jax.pmap`, `jax.pmap(..)` or
/// `partial(jax.pmap, ..)`.
fn is_pmap(ctx: &Ctx<'_>, d: &Expr) -> bool {
    if ctx.semantic.resolves_to(d, &["jax.pmap"]) {
        return true;
    }
    d.as_call().is_some_and(|c| {
        ctx.semantic.resolves_to(&c.func, &["jax.pmap"])
            || (ctx.semantic.resolves_to(&c.func, &["functools.partial"])
                && c.args.first().is_some_and(|a| ctx.semantic.resolves_to(a, &["jax.pmap"])))
    })
}

/// Names of functions that are pmapped in this file (decorated, or `g = jax.pmap(f)`).
fn pmapped(ctx: &Ctx<'_>) -> HashSet<String> {
    let mut names = HashSet::new();
    for s in &ctx.parsed.module().body {
        match &s.kind {
            StmtKind::FunctionDef(f) if f.decorators.iter().any(|d| is_pmap(ctx, d)) => {
                names.insert(f.name.name.clone());
            }
            StmtKind::Assign { targets, value } if is_pmap(ctx, value) => {
                names.extend(targets.iter().filter_map(Expr::as_name).map(str::to_owned));
            }
            _ => {}
        }
    }
    names
}

/// Names bound (anywhere in `body`, nested blocks included) from a call to a pmapped function.
fn outputs(body: &[Stmt], fns: &HashSet<String>) -> HashSet<String> {
    struct Find<'f> {
        fns: &'f HashSet<String>,
        out: HashSet<String>,
    }
    impl<'a> Visitor<'a> for Find<'_> {
        fn visit_stmt(&mut self, s: &'a Stmt) {
            if let StmtKind::Assign { targets, value } = &s.kind
                && let Some(call) = value.as_call()
                && call.func.as_name().is_some_and(|f| self.fns.contains(f))
            {
                for t in targets {
                    match &t.kind {
                        ExprKind::Name(n) => {
                            self.out.insert(n.clone());
                        }
                        ExprKind::Tuple(items) => {
                            self.out
                                .extend(items.iter().filter_map(Expr::as_name).map(str::to_owned));
                        }
                        _ => {}
                    }
                }
            }
            if !matches!(s.kind, StmtKind::FunctionDef(_) | StmtKind::ClassDef(_)) {
                walk_stmt(self, s);
            }
        }
    }
    let mut f = Find { fns, out: HashSet::new() };
    f.visit_body(body);
    f.out
}

/// `out[0]` on an output of a former pmap function → `out` (it is one global array under jit).
pub(super) fn first_replica(ctx: &Ctx<'_>, out: &mut Vec<Proposal>, notes: &mut Vec<Note>) {
    let fns = pmapped(ctx);
    if fns.is_empty() {
        return;
    }
    struct Rewrite<'c> {
        source: &'c str,
        names: HashSet<String>,
        out: &'c mut Vec<Proposal>,
    }
    impl<'a> Visitor<'a> for Rewrite<'_> {
        fn visit_stmt(&mut self, s: &'a Stmt) {
            if !matches!(s.kind, StmtKind::FunctionDef(_) | StmtKind::ClassDef(_)) {
                walk_stmt(self, s);
            }
        }
        fn visit_expr(&mut self, e: &'a Expr) {
            if let ExprKind::Subscript { value, slice } = &e.kind
                && let Some(n) = value.as_name()
                && self.names.contains(n)
                && matches!(slice.kind, ExprKind::Int(Some(0)))
            {
                self.out.push(Proposal {
                    edits: vec![Edit::replace(e.span, value.span.slice(self.source))],
                    description: format!(
                        "`{n}[0]` → `{n}`: an output of the former pmap function is one global array"
                    ),
                });
                return;
            }
            walk_expr(self, e);
        }
    }
    // Each function body (and the module body) is one scope.
    let mut scopes: Vec<&[Stmt]> = vec![&ctx.parsed.module().body];
    super::tf_tpu::visit_bodies(&ctx.parsed.module().body, &mut |body| {
        for s in body {
            if let StmtKind::FunctionDef(f) = &s.kind {
                scopes.push(&f.body);
            }
        }
    });
    let before = out.len();
    for body in scopes {
        let names = outputs(body, &fns);
        if !names.is_empty() {
            Rewrite { source: ctx.source, names, out }.visit_body(body);
        }
    }
    if out.len() > before {
        notes.push(Note {
            at: out[before].edits[0].range.start,
            message: "dropped `[0]` on outputs of the former pmap function: check that no other code still expects one value per device".to_owned(),
        });
    }
}

/// `replicate(x)` where `replicate` is a module-level helper of this pmap file →
/// `jax.device_put(x, replicated_sharding)` (the helper stacks one copy per device, which a
/// jitted function would read as a batch axis).
pub(super) fn local_replicate(ctx: &Ctx<'_>, out: &mut Vec<Proposal>, notes: &mut Vec<Note>) {
    let has_helper = ctx
        .parsed
        .module()
        .body
        .iter()
        .any(|s| matches!(&s.kind, StmtKind::FunctionDef(f) if f.name.name == "replicate"));
    if !has_helper || pmapped(ctx).is_empty() {
        return;
    }
    struct Find<'c> {
        source: &'c str,
        out: &'c mut Vec<Proposal>,
        first: Option<u32>,
    }
    impl<'a> Visitor<'a> for Find<'_> {
        fn visit_expr(&mut self, e: &'a Expr) {
            if let Some(call) = e.as_call()
                && call.func.as_name() == Some("replicate")
                && let [x] = call.args.as_slice()
                && call.keywords.is_empty()
            {
                let text =
                    format!("jax.device_put({}, replicated_sharding)", x.span.slice(self.source));
                self.first.get_or_insert(call.func.span.start);
                self.out.push(Proposal {
                    edits: vec![Edit::replace(call_span(call), text)],
                    description: "local `replicate(..)` helper → replicated placement with `NamedSharding(mesh, P())`".to_owned(),
                });
                return;
            }
            walk_expr(self, e);
        }
    }
    let mut f = Find { source: ctx.source, out, first: None };
    f.visit_body(&ctx.parsed.module().body);
    if let Some(at) = f.first {
        notes.push(Note {
            at,
            message: "the file-local `replicate` helper is no longer called by the port: delete it if nothing else uses it".to_owned(),
        });
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]
mod tests {
    use crate::port::{Target, port_source};

    const PMAP: &str = "import jax\nimport jax.numpy as jnp\n\n\
        def replicate(tree):\n    return jax.tree_util.tree_map(lambda x: jnp.stack([x] * 8), tree)\n\n\
        @jax.pmap\ndef step(p, x):\n    return p, (x * p).sum()\n\n\
        def main(p, xs):\n    p = replicate(p)\n    other = [1, 2]\n    for x in xs:\n        \
        p, loss = step(p, x)\n        print(loss[0], other[0], loss[1])\n    return loss[0]\n";

    #[test]
    fn drops_first_replica_index_only_on_pmap_outputs() {
        let r = port_source(PMAP, Target::Jax).unwrap();
        assert!(r.output.contains("print(loss, other[0], loss[1])"), "{}", r.output);
        assert!(r.output.contains("    return loss\n"), "{}", r.output);
        assert!(r.output.contains("p = jax.device_put(p, replicated_sharding)"), "{}", r.output);
        assert!(r.manual.iter().any(|m| m.message.contains("dropped `[0]`")));
    }

    #[test]
    fn leaves_files_without_pmap_alone() {
        let src = "def replicate(t):\n    return t\n\ndef f(step, x):\n    \
            a, b = step(x)\n    return replicate(a)[0]\n";
        let r = port_source(src, Target::Jax).unwrap();
        assert_eq!(r.output, src);
    }

    #[test]
    fn mesh_lines_come_after_their_jax_import() {
        let src = "from flax.jax_utils import replicate\n\nstate = replicate({'w': 1.0})\n";
        let r = port_source(src, Target::Jax).unwrap();
        let import = r.output.find("import jax\n").expect("import jax added");
        let mesh = r.output.find("jax.make_mesh(").expect("mesh added");
        assert!(import < mesh, "{}", r.output);
    }
}
