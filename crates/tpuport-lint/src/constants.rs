//! String constants that reach a name: the facts rules need when a script configures its device
//! or process-group backend through a variable instead of at the call.
//!
//! Followed (file-wide, any scope, every assignment kept: a name assigned `"cuda"` anywhere may
//! reach the call):
//! - `name = "nccl"`, `name = "cuda" if c else "cpu"` (each branch), `name: str = "cuda"`;
//! - argparse options: `parser.add_argument("--dist-backend", default="nccl")` reaches any
//!   `X.dist_backend` (the parsed namespace's name varies: `args`, `opt`, `FLAGS`);
//! - at the use, an f-string, `"cuda:{}".format(rank)` or `"cuda:" + str(rank)` whose literal
//!   start names the device.

use std::collections::HashMap;

use tpuport_python::Span;
use tpuport_python::ast::{Expr, ExprKind, Module, Stmt, StmtKind};
use tpuport_python::visitor::{Visitor, walk_expr, walk_stmt};

/// Where string constants flow, per name (`device`) or option attribute (`.device`).
#[derive(Clone, Debug, Default)]
pub(crate) struct ConstStrings {
    by_key: HashMap<String, Vec<(Span, String)>>,
}

impl ConstStrings {
    pub(crate) fn build(module: &Module) -> ConstStrings {
        let mut c = Collector { out: ConstStrings::default() };
        c.visit_body(&module.body);
        c.out
    }

    /// The string constants `e` may hold, each with the span to report at: `e` itself when it
    /// is a literal (or a conditional of literals), else the assignments or option defaults
    /// that reach the name or attribute it reads. Formatted strings give their literal start
    /// (`f"cuda:{rank}"` → `cuda:`), with `e`'s span.
    pub(crate) fn reaching(&self, e: &Expr, source: &str) -> Vec<(Span, String)> {
        let mut out = Vec::new();
        self.collect(e, source, &mut out, 0);
        out
    }

    fn collect(&self, e: &Expr, source: &str, out: &mut Vec<(Span, String)>, depth: u8) {
        if depth > 3 {
            return;
        }
        match &e.kind {
            ExprKind::IfExp { body, orelse, .. } => {
                self.collect(body, source, out, depth + 1);
                self.collect(orelse, source, out, depth + 1);
            }
            ExprKind::Name(n) => {
                if let Some(v) = self.by_key.get(n.as_str()) {
                    out.extend(v.iter().cloned());
                }
            }
            ExprKind::Attribute { attr, .. } => {
                if let Some(v) = self.by_key.get(&format!(".{}", attr.name)) {
                    out.extend(v.iter().cloned());
                }
            }
            _ => {
                if let Some(s) = literal_start(e, source) {
                    out.push((e.span, s));
                }
            }
        }
    }
}

/// A string literal's value, or the literal text a formatted string starts with.
pub(crate) fn literal_start(e: &Expr, source: &str) -> Option<String> {
    match &e.kind {
        ExprKind::Str(s) => Some(s.clone()),
        ExprKind::FString(_) => {
            let text = source.get(e.span.start as usize..e.span.end as usize)?;
            let body = text.trim_start_matches(['f', 'F', 'r', 'R']);
            let body = body.trim_start_matches(['"', '\'']);
            Some(body.split('{').next().unwrap_or("").to_owned())
        }
        ExprKind::Call(c) => match &c.func.kind {
            ExprKind::Attribute { value, attr } if attr.name == "format" => {
                value.as_str().map(|s| s.split('{').next().unwrap_or("").to_owned())
            }
            _ => None,
        },
        ExprKind::BinOp { left, op: "+", .. } => left.as_str().map(str::to_owned),
        _ => None,
    }
}

/// The literals of a value: a string, or each branch of a conditional of strings.
fn literals(e: &Expr, out: &mut Vec<(Span, String)>) {
    match &e.kind {
        ExprKind::Str(s) => out.push((e.span, s.clone())),
        ExprKind::IfExp { body, orelse, .. } => {
            literals(body, out);
            literals(orelse, out);
        }
        _ => {}
    }
}

struct Collector {
    out: ConstStrings,
}

impl Collector {
    fn add(&mut self, key: String, value: &Expr) {
        let mut found = Vec::new();
        literals(value, &mut found);
        if !found.is_empty() {
            self.out.by_key.entry(key).or_default().extend(found);
        }
    }
}

impl<'a> Visitor<'a> for Collector {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match &stmt.kind {
            StmtKind::Assign { targets, value } => {
                for t in targets {
                    if let Some(n) = t.as_name() {
                        self.add(n.to_owned(), value);
                    }
                }
            }
            StmtKind::AnnAssign { target, value: Some(value), .. } => {
                if let Some(n) = target.as_name() {
                    self.add(n.to_owned(), value);
                }
            }
            _ => {}
        }
        walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, e: &'a Expr) {
        if let Some(c) = e.as_call()
            && c.func.last_name() == Some("add_argument")
            && let Some(default) = c.keyword("default")
        {
            let dest =
                c.keyword("dest").and_then(|k| k.value.as_str().map(str::to_owned)).or_else(|| {
                    c.args
                        .iter()
                        .filter_map(Expr::as_str)
                        .find(|s| s.starts_with("--"))
                        .map(|s| s.trim_start_matches('-').replace('-', "_"))
                });
            if let Some(d) = dest {
                self.add(format!(".{d}"), &default.value);
            }
        }
        walk_expr(self, e);
    }
}
