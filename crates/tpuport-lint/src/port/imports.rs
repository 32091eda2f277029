//! The last step of a port: every module name a rewrite wrote (`torch_xla.device()`,
//! `pl.MpDeviceLoader`, `NamedSharding`) is imported. Recipes add their imports with their
//! edits, but an import edit can lose a clash with another one at the same offset, or a recipe
//! can rely on a name another recipe imports; this pass makes the result independent of that.

use std::collections::HashSet;

use tpuport_python::ParsedModule;
use tpuport_python::ast::{Expr, ExprKind, Stmt};
use tpuport_python::visitor::{Visitor, walk_expr, walk_stmt};

use super::Target;
use crate::fix::edits;
use crate::scope::{MODULE, Scopes};

/// Names port recipes write, with the import that binds each.
fn known(target: Target) -> &'static [(&'static str, &'static str)] {
    match target {
        Target::TorchXla => &[
            ("torch_xla", "import torch_xla"),
            ("pl", "import torch_xla.distributed.parallel_loader as pl"),
            ("xm", "import torch_xla.core.xla_model as xm"),
            ("xr", "import torch_xla.runtime as xr"),
        ],
        Target::TfTpu => &[("tf", "import tensorflow as tf"), ("tensorflow", "import tensorflow")],
        Target::Jax => &[
            ("jax", "import jax"),
            ("NamedSharding", "from jax.sharding import NamedSharding"),
            ("P", "from jax.sharding import PartitionSpec as P"),
            ("functools", "import functools"),
        ],
    }
}

/// Where [`ensure_imports`] inserts.
pub(super) fn insertion_point(source: &str, parsed: &ParsedModule) -> u32 {
    edits::import_insertion_offset(source, parsed.module())
}

/// `source` with an import added for each known name that is read but bound nowhere in the
/// module's scope chain, and the lines added; `None` when nothing is missing.
pub(super) fn ensure_imports(
    source: &str,
    parsed: &ParsedModule,
    target: Target,
) -> Option<(String, Vec<String>)> {
    struct Reads<'n> {
        wanted: &'n [(&'static str, &'static str)],
        found: HashSet<&'static str>,
    }
    impl<'a> Visitor<'a> for Reads<'_> {
        fn visit_stmt(&mut self, s: &'a Stmt) {
            walk_stmt(self, s);
        }
        fn visit_expr(&mut self, e: &'a Expr) {
            if let ExprKind::Name(n) = &e.kind
                && let Some((name, _)) = self.wanted.iter().find(|(k, _)| k == n)
            {
                self.found.insert(name);
            }
            walk_expr(self, e);
        }
    }
    let wanted = known(target);
    let mut reads = Reads { wanted, found: HashSet::new() };
    reads.visit_body(&parsed.module().body);
    if reads.found.is_empty() {
        return None;
    }
    let scopes = Scopes::build(parsed.module());
    let mut lines = Vec::new();
    for (name, line) in wanted {
        // Bound anywhere in the module (an import, an assignment): a name the script defines
        // itself is left alone.
        if reads.found.contains(name)
            && !scopes.binds(MODULE, name)
            && !binds_anywhere(source, name)
        {
            lines.push((*line).to_owned());
        }
    }
    if lines.is_empty() {
        return None;
    }
    let at = insertion_point(source, parsed) as usize;
    let prefix = if at > 0 && !source[..at].ends_with('\n') { "\n" } else { "" };
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let out = format!("{}{prefix}{text}{}", &source[..at], &source[at..]);
    Some((out, lines))
}

/// Whether some function imports or defines `name` locally (then a read of it elsewhere is the
/// script's own affair, not a rewrite's).
fn binds_anywhere(source: &str, name: &str) -> bool {
    source.lines().any(|l| {
        let t = l.trim_start();
        (t.starts_with("import ") || t.starts_with("from "))
            && (t.ends_with(&format!(" {name}")) || t.contains(&format!(" {name},")))
    })
}
