//! A depth-first visitor over [`crate::ast`], in source order.

use crate::ast::{Expr, ExprKind, Stmt, StmtKind};

/// Override `visit_stmt` / `visit_expr`; call [`walk_stmt`] / [`walk_expr`] to descend.
pub trait Visitor<'a> {
    /// Called for each statement.
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        walk_stmt(self, stmt);
    }
    /// Called for each expression.
    fn visit_expr(&mut self, expr: &'a Expr) {
        walk_expr(self, expr);
    }
    /// Called for each body (a block of statements).
    fn visit_body(&mut self, body: &'a [Stmt]) {
        for s in body {
            self.visit_stmt(s);
        }
    }
}

/// Visits the children of `stmt`.
pub fn walk_stmt<'a, V: Visitor<'a> + ?Sized>(v: &mut V, stmt: &'a Stmt) {
    match &stmt.kind {
        StmtKind::FunctionDef(f) => {
            for d in &f.decorators {
                v.visit_expr(d);
            }
            for p in &f.params {
                if let Some(a) = &p.annotation {
                    v.visit_expr(a);
                }
                if let Some(d) = &p.default {
                    v.visit_expr(d);
                }
            }
            if let Some(r) = &f.returns {
                v.visit_expr(r);
            }
            v.visit_body(&f.body);
        }
        StmtKind::ClassDef(c) => {
            for e in c.decorators.iter().chain(&c.bases) {
                v.visit_expr(e);
            }
            for k in &c.keywords {
                v.visit_expr(&k.value);
            }
            v.visit_body(&c.body);
        }
        StmtKind::For(f) => {
            v.visit_expr(&f.target);
            v.visit_expr(&f.iter);
            v.visit_body(&f.body);
            v.visit_body(&f.orelse);
        }
        StmtKind::While(w) => {
            v.visit_expr(&w.test);
            v.visit_body(&w.body);
            v.visit_body(&w.orelse);
        }
        StmtKind::If(i) => {
            v.visit_expr(&i.test);
            v.visit_body(&i.body);
            for b in &i.branches {
                if let Some(t) = &b.test {
                    v.visit_expr(t);
                }
                v.visit_body(&b.body);
            }
        }
        StmtKind::With(w) => {
            for item in &w.items {
                v.visit_expr(&item.context);
                if let Some(var) = &item.var {
                    v.visit_expr(var);
                }
            }
            v.visit_body(&w.body);
        }
        StmtKind::Try(t) => {
            v.visit_body(&t.body);
            for h in &t.handlers {
                if let Some(ty) = &h.type_ {
                    v.visit_expr(ty);
                }
                v.visit_body(&h.body);
            }
            v.visit_body(&t.orelse);
            v.visit_body(&t.finalbody);
        }
        StmtKind::Assign { targets, value } => {
            for t in targets {
                v.visit_expr(t);
            }
            v.visit_expr(value);
        }
        StmtKind::AugAssign { target, value } => {
            v.visit_expr(target);
            v.visit_expr(value);
        }
        StmtKind::AnnAssign { target, annotation, value } => {
            v.visit_expr(target);
            v.visit_expr(annotation);
            if let Some(val) = value {
                v.visit_expr(val);
            }
        }
        StmtKind::Expr(e) => v.visit_expr(e),
        StmtKind::Return(e) => {
            if let Some(e) = e {
                v.visit_expr(e);
            }
        }
        StmtKind::Import(_) | StmtKind::ImportFrom { .. } | StmtKind::Pass => {}
        StmtKind::Other { exprs, bodies } => {
            for e in exprs {
                v.visit_expr(e);
            }
            for b in bodies {
                v.visit_body(b);
            }
        }
    }
}

/// Visits the children of `expr`.
pub fn walk_expr<'a, V: Visitor<'a> + ?Sized>(v: &mut V, expr: &'a Expr) {
    match &expr.kind {
        ExprKind::Attribute { value, .. } | ExprKind::Starred(value) => v.visit_expr(value),
        ExprKind::Call(c) => {
            v.visit_expr(&c.func);
            for a in &c.args {
                v.visit_expr(a);
            }
            for k in &c.keywords {
                v.visit_expr(&k.value);
            }
        }
        ExprKind::Subscript { value, slice } => {
            v.visit_expr(value);
            v.visit_expr(slice);
        }
        ExprKind::Compare { left, comparators, .. } => {
            v.visit_expr(left);
            for c in comparators {
                v.visit_expr(c);
            }
        }
        ExprKind::BinOp { left, right, .. } => {
            v.visit_expr(left);
            v.visit_expr(right);
        }
        ExprKind::UnaryOp { operand, .. } => v.visit_expr(operand),
        ExprKind::BoolOp { values, .. }
        | ExprKind::Tuple(values)
        | ExprKind::List(values)
        | ExprKind::FString(values)
        | ExprKind::Other(values) => {
            for e in values {
                v.visit_expr(e);
            }
        }
        ExprKind::Dict(items) => {
            for i in items {
                if let Some(k) = &i.key {
                    v.visit_expr(k);
                }
                v.visit_expr(&i.value);
            }
        }
        ExprKind::IfExp { test, body, orelse } => {
            v.visit_expr(test);
            v.visit_expr(body);
            v.visit_expr(orelse);
        }
        ExprKind::Lambda { params, body } => {
            for p in params {
                if let Some(d) = &p.default {
                    v.visit_expr(d);
                }
            }
            v.visit_expr(body);
        }
        ExprKind::Name(_)
        | ExprKind::Str(_)
        | ExprKind::Bytes
        | ExprKind::Int(_)
        | ExprKind::Float(_)
        | ExprKind::Bool(_)
        | ExprKind::NoneLit
        | ExprKind::Ellipsis => {}
    }
}
