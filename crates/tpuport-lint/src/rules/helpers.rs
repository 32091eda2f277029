//! Predicates shared by rules.

use tpuport_python::Span;
use tpuport_python::ast::{Call, Expr, ExprKind, Stmt, StmtKind};

use crate::checker::Checker;

/// `(receiver, method)` of `recv.method(...)`.
pub(crate) fn method(call: &Call) -> Option<(&Expr, &str)> {
    match &call.func.kind {
        ExprKind::Attribute { value, attr } => Some((value, attr.name.as_str())),
        _ => None,
    }
}

/// Span from the `.method` name to the end of the call (`cuda()` in `x.cuda()`).
pub(crate) fn method_span(call: &Call) -> Option<Span> {
    match &call.func.kind {
        ExprKind::Attribute { attr, .. } => {
            Some(Span::new(attr.span.start, call.arguments_span.end))
        }
        _ => None,
    }
}

/// A keyword's boolean state: `None` absent, `Some(false)` literal `False`, `Some(true)` anything else.
pub(crate) fn keyword_truthy(call: &Call, name: &str) -> Option<bool> {
    call.keyword(name).map(|k| {
        !matches!(k.value.kind, ExprKind::Bool(false) | ExprKind::NoneLit | ExprKind::Int(Some(0)))
    })
}

/// Whether a string names a CUDA device (`cuda`, `cuda:0`).
pub(crate) fn is_cuda_device(s: &str) -> bool {
    s == "cuda" || s.strip_prefix("cuda:").is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()))
}

/// Whether `call` is the builtin `name` (not shadowed by an import).
pub(crate) fn is_builtin_call(checker: &Checker, call: &Call, name: &str) -> bool {
    call.func.as_name() == Some(name) && !checker.semantic.is_imported(name)
}

/// The environment variable set by `stmt` (`os.environ["X"] = ...`, `os.environ.setdefault("X", ...)`,
/// `os.putenv("X", ...)`), with the span of the name literal.
pub(crate) fn env_var_set<'a>(checker: &Checker, stmt: &'a Stmt) -> Option<(&'a str, Span)> {
    match &stmt.kind {
        StmtKind::Assign { targets, .. } => targets.iter().find_map(|t| match &t.kind {
            ExprKind::Subscript { value, slice }
                if checker.semantic.resolves_to(value, &["os.environ"]) =>
            {
                slice.as_str().map(|s| (s, slice.span))
            }
            _ => None,
        }),
        StmtKind::Expr(e) => {
            let call = e.as_call()?;
            let ok =
                checker.semantic.resolves_to(&call.func, &["os.environ.setdefault", "os.putenv"])
                    || method(call).is_some_and(|(r, m)| {
                        m == "setdefault" && checker.semantic.resolves_to(r, &["os.environ"])
                    });
            if !ok {
                return None;
            }
            let first = call.args.first()?;
            first.as_str().map(|s| (s, first.span))
        }
        _ => None,
    }
}

/// Whether `expr` looks like a `tf.data.Dataset` (a chain rooted at `tf.data`, a chain of
/// dataset methods, or a variable named like a dataset).
pub(crate) fn is_tf_dataset(checker: &Checker, expr: &Expr) -> bool {
    const METHODS: &[&str] = &[
        "shuffle",
        "map",
        "repeat",
        "cache",
        "from_tensor_slices",
        "from_tensors",
        "from_generator",
        "interleave",
        "filter",
        "prefetch",
        "take",
        "skip",
        "zip",
        "list_files",
        "unbatch",
        "with_options",
        "range",
        "apply",
    ];
    if checker.semantic.qualified_name(expr).is_some_and(|q| q.starts_with("tensorflow.data")) {
        return true;
    }
    match &expr.kind {
        ExprKind::Call(c) => match method(c) {
            Some((recv, m)) => {
                METHODS.contains(&m) && (is_tf_dataset(checker, recv) || recv.dotted().is_some())
            }
            None => false,
        },
        ExprKind::Name(n) => {
            let n = n.to_ascii_lowercase();
            n == "ds" || n.ends_with("_ds") || n.starts_with("ds_") || n.contains("dataset")
        }
        ExprKind::Attribute { attr, .. } => attr.name.to_ascii_lowercase().contains("dataset"),
        _ => false,
    }
}

/// Whether `call` is `torch.utils.data.DataLoader(...)`.
pub(crate) fn is_dataloader(checker: &Checker, call: &Call) -> bool {
    checker.semantic.resolves_to(
        &call.func,
        &["torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"],
    )
}

/// Where a `DataLoader` keyword comes from.
pub(crate) enum LoaderKeyword<'a> {
    /// Passed as `name=value`.
    Explicit(&'a tpuport_python::ast::Keyword),
    /// An entry of a dict passed as `**kwargs` (followed through assignments and `.update`).
    FromDict(&'a crate::semantic::DictEntry),
    /// Not passed (the dicts splatted into the call are known and lack it).
    Absent,
    /// A `**kwargs` splat that cannot be followed may hold it.
    Unknown,
}

/// Finds keyword `name` of a `DataLoader(...)` call, looking into `**kwargs` dicts.
pub(crate) fn loader_keyword<'a>(
    sem: &'a crate::semantic::Semantic,
    call: &'a Call,
    name: &str,
) -> LoaderKeyword<'a> {
    if let Some(k) = call.keyword(name) {
        return LoaderKeyword::Explicit(k);
    }
    if !call.has_kwargs_splat() {
        return LoaderKeyword::Absent;
    }
    match sem.splat_entries(call) {
        Some(entries) => match entries.into_iter().find(|e| e.key == name) {
            Some(e) => LoaderKeyword::FromDict(e),
            None => LoaderKeyword::Absent,
        },
        None => LoaderKeyword::Unknown,
    }
}

/// Whether a `DataLoader(...)` call builds an evaluation loader, which must see every sample:
/// the variable it is assigned to, or the dataset it reads, is named for testing or validation.
pub(crate) fn is_eval_loader(checker: &Checker, call: &Call) -> bool {
    let named_eval = |n: &str| {
        let n = n.to_ascii_lowercase();
        ["test", "val", "eval", "dev"]
            .iter()
            .any(|k| n.starts_with(k) || n.contains(&format!("_{k}")))
    };
    let target = checker.current_stmt().and_then(|s| match &s.kind {
        StmtKind::Assign { targets, value } if value.span.contains(call.func.span) => {
            targets.first().and_then(|t| t.last_name().map(str::to_owned))
        }
        _ => None,
    });
    target.is_some_and(|t| named_eval(&t))
        || call.args.first().and_then(Expr::last_name).is_some_and(named_eval)
}
