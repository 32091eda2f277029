//! Which names each scope binds, and where: enough to say whether a name a rule or a port
//! recipe wants to use (`device`, `torch_xla`) is defined at a given offset, and to keep what
//! the linter infers about a name (tensor or not) inside the function that binds it.
//!
//! A scope is the module or a `def` / `class` body, identified by the offset where its
//! statement starts ([`MODULE`] for the module). Bindings are assignment, loop, `with`, import,
//! `def` and `class` targets plus parameters. Comprehension variables, `global` declarations and
//! `except ... as` names are not modelled.

use std::collections::{HashMap, HashSet};

use tpuport_python::Span;
use tpuport_python::ast::{Expr, ExprKind, Module, Stmt, StmtKind};

/// The module scope's id.
pub(crate) const MODULE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct ScopeInfo {
    id: u32,
    span: Span,
    parent: u32,
    is_class: bool,
}

/// Bindings per scope.
#[derive(Debug, Default)]
pub(crate) struct Scopes {
    /// Function and class scopes, by start offset.
    scopes: Vec<ScopeInfo>,
    by_id: HashMap<u32, usize>,
    /// Offsets where `(scope, name)` is bound, in source order.
    bindings: HashMap<(u32, String), Vec<u32>>,
    params: HashSet<(u32, String)>,
}

impl Scopes {
    pub(crate) fn build(module: &Module) -> Scopes {
        let mut s = Scopes::default();
        s.body(&module.body, MODULE);
        s.scopes.sort_by_key(|i| i.span.start);
        s.by_id = s.scopes.iter().enumerate().map(|(i, info)| (info.id, i)).collect();
        s
    }

    fn bind(&mut self, scope: u32, name: &str, at: u32) {
        self.bindings.entry((scope, name.to_owned())).or_default().push(at);
    }

    fn target(&mut self, scope: u32, t: &Expr) {
        match &t.kind {
            ExprKind::Name(n) => self.bind(scope, n, t.span.start),
            ExprKind::Tuple(v) | ExprKind::List(v) => v.iter().for_each(|x| self.target(scope, x)),
            ExprKind::Starred(x) => self.target(scope, x),
            _ => {}
        }
    }

    fn body(&mut self, body: &[Stmt], scope: u32) {
        for s in body {
            self.stmt(s, scope);
        }
    }

    fn stmt(&mut self, s: &Stmt, scope: u32) {
        match &s.kind {
            StmtKind::FunctionDef(f) => {
                self.bind(scope, &f.name.name, s.span.start);
                let id = s.span.start;
                self.scopes.push(ScopeInfo { id, span: s.span, parent: scope, is_class: false });
                for p in &f.params {
                    self.params.insert((id, p.name.name.clone()));
                }
                self.body(&f.body, id);
            }
            StmtKind::ClassDef(c) => {
                self.bind(scope, &c.name.name, s.span.start);
                let id = s.span.start;
                self.scopes.push(ScopeInfo { id, span: s.span, parent: scope, is_class: true });
                self.body(&c.body, id);
            }
            StmtKind::Assign { targets, .. } => targets.iter().for_each(|t| self.target(scope, t)),
            StmtKind::AugAssign { target, .. } => self.target(scope, target),
            StmtKind::AnnAssign { target, value: Some(_), .. } => self.target(scope, target),
            StmtKind::For(f) => {
                self.target(scope, &f.target);
                self.body(&f.body, scope);
                self.body(&f.orelse, scope);
            }
            StmtKind::While(w) => {
                self.body(&w.body, scope);
                self.body(&w.orelse, scope);
            }
            StmtKind::If(i) => {
                self.body(&i.body, scope);
                for b in &i.branches {
                    self.body(&b.body, scope);
                }
            }
            StmtKind::With(w) => {
                for item in &w.items {
                    if let Some(v) = &item.var {
                        self.target(scope, v);
                    }
                }
                self.body(&w.body, scope);
            }
            StmtKind::Try(t) => {
                self.body(&t.body, scope);
                for h in &t.handlers {
                    self.body(&h.body, scope);
                }
                self.body(&t.orelse, scope);
                self.body(&t.finalbody, scope);
            }
            StmtKind::Import(names) => {
                for a in names {
                    let local = a
                        .asname
                        .clone()
                        .unwrap_or_else(|| a.name.split('.').next().unwrap_or("").to_owned());
                    self.bind(scope, &local, s.span.start);
                }
            }
            StmtKind::ImportFrom { names, .. } => {
                for a in names {
                    let local = a.asname.clone().unwrap_or_else(|| a.name.clone());
                    self.bind(scope, &local, s.span.start);
                }
            }
            StmtKind::Other { bodies, .. } => bodies.iter().for_each(|b| self.body(b, scope)),
            StmtKind::Expr(_) | StmtKind::Return(_) | StmtKind::Pass => {}
            StmtKind::AnnAssign { .. } => {}
        }
    }

    /// The innermost scope holding `offset`.
    pub(crate) fn scope_at(&self, offset: u32) -> u32 {
        let i = self.scopes.partition_point(|s| s.span.start <= offset);
        let mut cur = i.checked_sub(1).map(|i| self.scopes[i]);
        while let Some(info) = cur {
            if info.span.start <= offset && offset < info.span.end {
                return info.id;
            }
            cur = self.by_id.get(&info.parent).map(|&i| self.scopes[i]);
        }
        MODULE
    }

    /// The scope enclosing `scope` (`None` for the module).
    pub(crate) fn parent(&self, scope: u32) -> Option<u32> {
        (scope != MODULE).then(|| self.by_id.get(&scope).map_or(MODULE, |&i| self.scopes[i].parent))
    }

    fn is_class(&self, scope: u32) -> bool {
        self.by_id.get(&scope).is_some_and(|&i| self.scopes[i].is_class)
    }

    /// Whether `scope` binds `name` itself (parameter or any binding).
    pub(crate) fn binds(&self, scope: u32, name: &str) -> bool {
        let key = (scope, name.to_owned());
        self.params.contains(&key) || self.bindings.contains_key(&key)
    }

    /// Whether `name` is defined when the code at `offset` runs: a parameter or an earlier
    /// binding of the innermost scope; otherwise any binding of an enclosing function or the
    /// module (functions run after the module body that defines them).
    pub(crate) fn is_bound_at(&self, name: &str, offset: u32) -> bool {
        let here = self.scope_at(offset);
        let key = (here, name.to_owned());
        if self.params.contains(&key) {
            return true;
        }
        if let Some(at) = self.bindings.get(&key) {
            return at.iter().any(|&b| b < offset);
        }
        let mut cur = self.parent(here);
        while let Some(s) = cur {
            if !self.is_class(s) && self.binds(s, name) {
                return true;
            }
            cur = self.parent(s);
        }
        false
    }

    /// The scopes from `scope` outwards (class bodies skipped above the first), for name lookup.
    pub(crate) fn lookup_chain(&self, scope: u32) -> impl Iterator<Item = u32> + '_ {
        let mut cur = Some(scope);
        let mut first = true;
        std::iter::from_fn(move || {
            loop {
                let s = cur?;
                cur = self.parent(s);
                if first || !self.is_class(s) {
                    first = false;
                    return Some(s);
                }
            }
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn names_are_bound_by_scope_and_order() {
        let src = "import torch\nx = 1\n\ndef f(a):\n    y = a\n    return device\n\n\
                   def g():\n    z = device\n    device = 2\n\ndevice = torch.device('cpu')\n";
        let m = tpuport_python::parse_module(src).unwrap();
        let s = Scopes::build(m.module());
        let at = |needle: &str| u32::try_from(src.find(needle).unwrap()).unwrap();
        // `device` is a module global: defined inside `f` (runs later)...
        assert!(s.is_bound_at("device", at("return device")));
        // ...but `g` binds it locally after the use: UnboundLocalError.
        assert!(!s.is_bound_at("device", at("z = device") + 4));
        assert!(s.is_bound_at("a", at("y = a") + 4));
        assert!(!s.is_bound_at("y", at("def g")));
        assert!(s.is_bound_at("torch", at("x = 1")));
        assert_eq!(s.scope_at(at("x = 1")), MODULE);
        assert_ne!(s.scope_at(at("y = a")), MODULE);
    }
}
