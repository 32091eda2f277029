//! TensorFlow/Keras → `TPUStrategy` recipes.

use tpuport_python::ast::{Stmt, StmtKind};

use super::{Ctx, Note, Proposal, Recipe};
use crate::fix::{Edit, edits};

pub(super) const RECIPES: &[Recipe] = &[mirrored_to_tpu_strategy, build_inside_scope];

const GPU_STRATEGIES: &[&str] = &[
    "tensorflow.distribute.MirroredStrategy",
    "tensorflow.distribute.MultiWorkerMirroredStrategy",
    "tensorflow.distribute.experimental.MultiWorkerMirroredStrategy",
    "tensorflow.distribute.experimental.CentralStorageStrategy",
];

/// `strategy = tf.distribute.MirroredStrategy()` → resolver, connect, initialise, `TPUStrategy`.
fn mirrored_to_tpu_strategy(ctx: &Ctx<'_>, out: &mut Vec<Proposal>, _notes: &mut Vec<Note>) {
    let tf = if ctx.semantic.binding("tf") == Some("tensorflow") { "tf" } else { "tensorflow" };
    for_each_stmt(&ctx.parsed.module().body, &mut |s| {
        let StmtKind::Assign { targets, value } = &s.kind else { return };
        let (Some(call), [target]) = (value.as_call(), targets.as_slice()) else { return };
        let Some(name) = target.as_name() else { return };
        if !ctx.semantic.resolves_to(&call.func, GPU_STRATEGIES) {
            return;
        }
        let indent = edits::indentation_at(ctx.source, s.span.start);
        let text = format!(
            "resolver = {tf}.distribute.cluster_resolver.TPUClusterResolver(tpu=\"local\")\n\
             {indent}{tf}.config.experimental_connect_to_cluster(resolver)\n\
             {indent}{tf}.tpu.experimental.initialize_tpu_system(resolver)\n\
             {indent}{name} = {tf}.distribute.TPUStrategy(resolver)"
        );
        let mut v = vec![Edit::replace(s.span, text)];
        if tf == "tensorflow" {
            v.extend(ctx.add_import("import tensorflow"));
        }
        out.push(Proposal {
            edits: v,
            description:
                "strategy: `TPUClusterResolver` + `TPUStrategy` (tpu=\"local\" on a TPU VM)"
                    .to_owned(),
        });
    });
}

/// Wraps model construction through `model.compile(...)` in `with strategy.scope():` when the
/// model is built outside any scope.
fn build_inside_scope(ctx: &Ctx<'_>, out: &mut Vec<Proposal>, notes: &mut Vec<Note>) {
    if ctx.source.contains(".scope()") {
        return;
    }
    let mut strategy = None;
    for_each_stmt(&ctx.parsed.module().body, &mut |s| {
        if let StmtKind::Assign { targets, value } = &s.kind
            && let Some(call) = value.as_call()
            && ctx.semantic.resolves_to(
                &call.func,
                &[
                    "tensorflow.distribute.TPUStrategy",
                    "tensorflow.distribute.experimental.TPUStrategy",
                ],
            )
            && let [t] = targets.as_slice()
        {
            strategy = t.as_name().map(str::to_owned);
        }
    });
    let Some(strategy) = strategy else { return };
    let mut done = false;
    visit_bodies(&ctx.parsed.module().body, &mut |body| {
        if done {
            return;
        }
        let build = body.iter().position(is_model_build);
        let compile = body.iter().position(is_compile);
        match (build, compile) {
            (Some(i), Some(j)) if i <= j => {
                let start = edits::line_start(ctx.source, body[i].span.start);
                let end = edits::line_end(ctx.source, body[j].span.end);
                let indent = edits::indentation_at(ctx.source, body[i].span.start).to_owned();
                let mut v = vec![Edit::insert(start, format!("{indent}with {strategy}.scope():\n"))];
                let mut offset = start;
                for line in ctx.source[start as usize..end as usize].split_inclusive('\n') {
                    if !line.trim().is_empty() {
                        v.push(Edit::insert(offset, "    "));
                    }
                    offset += u32::try_from(line.len()).unwrap_or(0);
                }
                // The `with` line and the first line's indent share an offset: merge them.
                let first = v.remove(1);
                v[0].content.push_str(&first.content);
                out.push(Proposal { edits: v, description: format!("model build and compile inside `{strategy}.scope()`") });
                done = true;
            }
            (Some(i), None) | (None, Some(i)) => notes.push(Note {
                at: body[i].span.start,
                message: format!("create and compile the model inside `with {strategy}.scope():` (variables must be created under the TPU strategy)"),
            }),
            _ => {}
        }
    });
}

fn is_model_build(s: &Stmt) -> bool {
    let StmtKind::Assign { value, .. } = &s.kind else { return false };
    let Some(call) = value.as_call() else { return false };
    let n = call.func.last_name().unwrap_or("").to_ascii_lowercase();
    n.contains("model") || n == "sequential" || n == "functional"
}

fn is_compile(s: &Stmt) -> bool {
    let StmtKind::Expr(e) = &s.kind else { return false };
    e.as_call().and_then(crate::rules::helpers::method).is_some_and(|(_, m)| m == "compile")
}

fn for_each_stmt<'a>(body: &'a [Stmt], f: &mut dyn FnMut(&'a Stmt)) {
    visit_bodies(body, &mut |b| b.iter().for_each(&mut *f));
}

pub(super) fn visit_bodies<'a>(body: &'a [Stmt], f: &mut dyn FnMut(&'a [Stmt])) {
    f(body);
    for s in body {
        match &s.kind {
            StmtKind::FunctionDef(d) => visit_bodies(&d.body, f),
            StmtKind::ClassDef(c) => visit_bodies(&c.body, f),
            StmtKind::If(i) => {
                visit_bodies(&i.body, f);
                for b in &i.branches {
                    visit_bodies(&b.body, f);
                }
            }
            StmtKind::For(x) => visit_bodies(&x.body, f),
            StmtKind::While(x) => visit_bodies(&x.body, f),
            StmtKind::With(x) => visit_bodies(&x.body, f),
            StmtKind::Try(t) => {
                visit_bodies(&t.body, f);
                visit_bodies(&t.finalbody, f);
            }
            _ => {}
        }
    }
}
