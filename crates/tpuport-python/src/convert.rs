//! ruff's syntax tree to tpuport's [`crate::ast`].

use ruff_python_ast as r;
use ruff_python_ast::visitor as rv;
use ruff_text_size::{Ranged, TextRange};

use crate::ast::{
    Alias, Branch, Call, ClassDef, CmpOp, DictItem, Expr, ExprKind, For, FunctionDef, Handler,
    Ident, If, Keyword, Module, Param, Stmt, StmtKind, Try, While, With, WithItem,
};
use crate::span::Span;

pub(crate) fn span(r: TextRange) -> Span {
    Span::new(r.start().to_u32(), r.end().to_u32())
}

pub(crate) fn module(m: &r::ModModule) -> Module {
    Module { body: body(&m.body) }
}

fn body(stmts: &[r::Stmt]) -> Vec<Stmt> {
    stmts.iter().map(stmt).collect()
}

fn ident(i: &r::Identifier) -> Ident {
    Ident { name: i.id.to_string(), span: span(i.range) }
}

fn boxed(e: &r::Expr) -> Box<Expr> {
    Box::new(expr(e))
}

fn params(p: &r::Parameters) -> Vec<Param> {
    let mut out = Vec::new();
    for pwd in p.posonlyargs.iter().chain(&p.args) {
        out.push(param(&pwd.parameter, pwd.default.as_deref()));
    }
    if let Some(v) = &p.vararg {
        out.push(param(v, None));
    }
    for pwd in &p.kwonlyargs {
        out.push(param(&pwd.parameter, pwd.default.as_deref()));
    }
    if let Some(k) = &p.kwarg {
        out.push(param(k, None));
    }
    out
}

fn param(p: &r::Parameter, default: Option<&r::Expr>) -> Param {
    Param {
        name: ident(&p.name),
        annotation: p.annotation.as_deref().map(expr),
        default: default.map(expr),
    }
}

fn keywords(ks: &[r::Keyword]) -> Vec<Keyword> {
    ks.iter()
        .map(|k| Keyword {
            arg: k.arg.as_ref().map(ident),
            value: expr(&k.value),
            span: span(k.range),
        })
        .collect()
}

fn aliases(names: &[r::Alias]) -> Vec<Alias> {
    names
        .iter()
        .map(|a| Alias {
            name: a.name.id.to_string(),
            asname: a.asname.as_ref().map(|n| n.id.to_string()),
            span: span(a.range),
        })
        .collect()
}

fn stmt(s: &r::Stmt) -> Stmt {
    let kind = match s {
        r::Stmt::FunctionDef(f) => StmtKind::FunctionDef(FunctionDef {
            name: ident(&f.name),
            decorators: f.decorator_list.iter().map(|d| expr(&d.expression)).collect(),
            params: params(&f.parameters),
            returns: f.returns.as_deref().map(expr),
            body: body(&f.body),
            is_async: f.is_async,
        }),
        r::Stmt::ClassDef(c) => StmtKind::ClassDef(ClassDef {
            name: ident(&c.name),
            decorators: c.decorator_list.iter().map(|d| expr(&d.expression)).collect(),
            bases: c
                .arguments
                .as_ref()
                .map(|a| a.args.iter().map(expr).collect())
                .unwrap_or_default(),
            keywords: c.arguments.as_ref().map(|a| keywords(&a.keywords)).unwrap_or_default(),
            body: body(&c.body),
        }),
        r::Stmt::For(f) => StmtKind::For(For {
            target: expr(&f.target),
            iter: expr(&f.iter),
            body: body(&f.body),
            orelse: body(&f.orelse),
            is_async: f.is_async,
        }),
        r::Stmt::While(w) => StmtKind::While(While {
            test: expr(&w.test),
            body: body(&w.body),
            orelse: body(&w.orelse),
        }),
        r::Stmt::If(i) => StmtKind::If(If {
            test: expr(&i.test),
            body: body(&i.body),
            branches: i
                .elif_else_clauses
                .iter()
                .map(|c| Branch {
                    span: span(c.range),
                    test: c.test.as_ref().map(expr),
                    body: body(&c.body),
                })
                .collect(),
        }),
        r::Stmt::With(w) => StmtKind::With(With {
            items: w
                .items
                .iter()
                .map(|it| WithItem {
                    context: expr(&it.context_expr),
                    var: it.optional_vars.as_deref().map(expr),
                })
                .collect(),
            body: body(&w.body),
            is_async: w.is_async,
        }),
        r::Stmt::Try(t) => StmtKind::Try(Try {
            body: body(&t.body),
            handlers: t
                .handlers
                .iter()
                .map(|h| {
                    let r::ExceptHandler::ExceptHandler(h) = h;
                    Handler { type_: h.type_.as_deref().map(expr), body: body(&h.body) }
                })
                .collect(),
            orelse: body(&t.orelse),
            finalbody: body(&t.finalbody),
        }),
        r::Stmt::Assign(a) => StmtKind::Assign {
            targets: a.targets.iter().map(expr).collect(),
            value: expr(&a.value),
        },
        r::Stmt::AugAssign(a) => {
            StmtKind::AugAssign { target: expr(&a.target), value: expr(&a.value) }
        }
        r::Stmt::AnnAssign(a) => StmtKind::AnnAssign {
            target: expr(&a.target),
            annotation: expr(&a.annotation),
            value: a.value.as_deref().map(expr),
        },
        r::Stmt::Expr(e) => StmtKind::Expr(expr(&e.value)),
        r::Stmt::Return(ret) => StmtKind::Return(ret.value.as_deref().map(expr)),
        r::Stmt::Import(i) => StmtKind::Import(aliases(&i.names)),
        r::Stmt::ImportFrom(i) => StmtKind::ImportFrom {
            module: i.module.as_ref().map(|m| m.id.to_string()),
            level: i.level,
            names: aliases(&i.names),
        },
        r::Stmt::Pass(_) => StmtKind::Pass,
        other => {
            let mut c = Children::default();
            rv::walk_stmt(&mut c, other);
            StmtKind::Other { exprs: c.exprs, bodies: c.bodies }
        }
    };
    Stmt { span: span(s.range()), kind }
}

/// Collects the direct children of a node ruff knows and tpuport does not model.
#[derive(Default)]
struct Children {
    exprs: Vec<Expr>,
    bodies: Vec<Vec<Stmt>>,
}

impl<'a> rv::Visitor<'a> for Children {
    fn visit_expr(&mut self, e: &'a r::Expr) {
        self.exprs.push(expr(e));
    }
    fn visit_body(&mut self, b: &'a [r::Stmt]) {
        self.bodies.push(body(b));
    }
}

fn cmp(op: r::CmpOp) -> CmpOp {
    match op {
        r::CmpOp::Eq => CmpOp::Eq,
        r::CmpOp::NotEq => CmpOp::NotEq,
        r::CmpOp::Lt => CmpOp::Lt,
        r::CmpOp::LtE => CmpOp::LtE,
        r::CmpOp::Gt => CmpOp::Gt,
        r::CmpOp::GtE => CmpOp::GtE,
        r::CmpOp::Is => CmpOp::Is,
        r::CmpOp::IsNot => CmpOp::IsNot,
        r::CmpOp::In => CmpOp::In,
        r::CmpOp::NotIn => CmpOp::NotIn,
    }
}

fn expr(e: &r::Expr) -> Expr {
    let kind = match e {
        r::Expr::Name(n) => ExprKind::Name(n.id.to_string()),
        r::Expr::Attribute(a) => {
            ExprKind::Attribute { value: boxed(&a.value), attr: ident(&a.attr) }
        }
        r::Expr::Call(c) => ExprKind::Call(Call {
            func: boxed(&c.func),
            args: c.arguments.args.iter().map(expr).collect(),
            keywords: keywords(&c.arguments.keywords),
            arguments_span: span(c.arguments.range),
        }),
        r::Expr::Subscript(s) => {
            ExprKind::Subscript { value: boxed(&s.value), slice: boxed(&s.slice) }
        }
        r::Expr::StringLiteral(s) => ExprKind::Str(s.value.to_str().to_owned()),
        r::Expr::BytesLiteral(_) => ExprKind::Bytes,
        r::Expr::NumberLiteral(n) => match &n.value {
            r::Number::Int(i) => ExprKind::Int(i.as_i64()),
            r::Number::Float(f) => ExprKind::Float(*f),
            r::Number::Complex { real, .. } => ExprKind::Float(*real),
        },
        r::Expr::BooleanLiteral(b) => ExprKind::Bool(b.value),
        r::Expr::NoneLiteral(_) => ExprKind::NoneLit,
        r::Expr::EllipsisLiteral(_) => ExprKind::Ellipsis,
        r::Expr::Compare(c) => ExprKind::Compare {
            left: boxed(&c.left),
            ops: c.ops.iter().copied().map(cmp).collect(),
            comparators: c.comparators.iter().map(expr).collect(),
        },
        r::Expr::BoolOp(b) => ExprKind::BoolOp {
            is_and: b.op == r::BoolOp::And,
            values: b.values.iter().map(expr).collect(),
        },
        r::Expr::BinOp(b) => {
            ExprKind::BinOp { left: boxed(&b.left), op: b.op.as_str(), right: boxed(&b.right) }
        }
        r::Expr::UnaryOp(u) => ExprKind::UnaryOp { op: u.op.as_str(), operand: boxed(&u.operand) },
        r::Expr::Tuple(t) => ExprKind::Tuple(t.elts.iter().map(expr).collect()),
        r::Expr::List(l) => ExprKind::List(l.elts.iter().map(expr).collect()),
        r::Expr::Starred(s) => ExprKind::Starred(boxed(&s.value)),
        r::Expr::Lambda(l) => ExprKind::Lambda {
            params: l.parameters.as_deref().map(params).unwrap_or_default(),
            body: boxed(&l.body),
        },
        r::Expr::Dict(d) => ExprKind::Dict(
            d.items
                .iter()
                .map(|i| DictItem { key: i.key.as_ref().map(expr), value: expr(&i.value) })
                .collect(),
        ),
        r::Expr::If(i) => {
            ExprKind::IfExp { test: boxed(&i.test), body: boxed(&i.body), orelse: boxed(&i.orelse) }
        }
        r::Expr::FString(_) => {
            let mut c = Children::default();
            rv::walk_expr(&mut c, e);
            ExprKind::FString(c.exprs)
        }
        other => {
            let mut c = Children::default();
            rv::walk_expr(&mut c, other);
            ExprKind::Other(c.exprs)
        }
    };
    Expr { span: span(e.range()), kind }
}
