//! tpuport's own Python syntax tree: the node kinds rules look at, each with its byte span.
//!
//! Node kinds no rule needs are kept as [`StmtKind::Other`] / [`ExprKind::Other`] with their
//! child expressions and bodies, so a [`crate::visitor::Visitor`] still reaches every call.

use crate::span::Span;

/// A parsed module.
#[derive(Clone, Debug, Default)]
pub struct Module {
    /// Top-level statements.
    pub body: Vec<Stmt>,
}

/// A name with its span (function names, attributes, keyword names).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ident {
    /// The identifier text.
    pub name: String,
    /// Where it is.
    pub span: Span,
}

/// A statement.
#[derive(Clone, Debug)]
pub struct Stmt {
    /// The whole statement, without trailing comments.
    pub span: Span,
    /// What it is.
    pub kind: StmtKind,
}

/// Statement kinds.
#[derive(Clone, Debug)]
pub enum StmtKind {
    /// `def` / `async def`.
    FunctionDef(FunctionDef),
    /// `class`.
    ClassDef(ClassDef),
    /// `for` / `async for`.
    For(For),
    /// `while`.
    While(While),
    /// `if` with its `elif`/`else` branches.
    If(If),
    /// `with` / `async with`.
    With(With),
    /// `try`.
    Try(Try),
    /// `a = b = value`.
    Assign {
        /// Assignment targets.
        targets: Vec<Expr>,
        /// Assigned value.
        value: Expr,
    },
    /// `a += value`.
    AugAssign {
        /// Target.
        target: Expr,
        /// Value.
        value: Expr,
    },
    /// `a: T = value`.
    AnnAssign {
        /// Target.
        target: Expr,
        /// Annotation.
        annotation: Expr,
        /// Value, if any.
        value: Option<Expr>,
    },
    /// An expression statement.
    Expr(Expr),
    /// `return`.
    Return(Option<Expr>),
    /// `import a.b as c, d`.
    Import(Vec<Alias>),
    /// `from module import a as b`.
    ImportFrom {
        /// The module, without leading dots.
        module: Option<String>,
        /// Number of leading dots.
        level: u32,
        /// Imported names.
        names: Vec<Alias>,
    },
    /// `pass`.
    Pass,
    /// Anything else (`del`, `raise`, `assert`, `match`, `global`, `break`, …).
    Other {
        /// Child expressions.
        exprs: Vec<Expr>,
        /// Child bodies (e.g. match cases).
        bodies: Vec<Vec<Stmt>>,
    },
}

/// A function definition.
#[derive(Clone, Debug)]
pub struct FunctionDef {
    /// Function name.
    pub name: Ident,
    /// Decorator expressions, in source order.
    pub decorators: Vec<Expr>,
    /// Parameters, in order (`*args`/`**kwargs` included).
    pub params: Vec<Param>,
    /// Return annotation.
    pub returns: Option<Expr>,
    /// Body.
    pub body: Vec<Stmt>,
    /// `async def`.
    pub is_async: bool,
}

/// A function or lambda parameter.
#[derive(Clone, Debug)]
pub struct Param {
    /// Parameter name.
    pub name: Ident,
    /// Annotation.
    pub annotation: Option<Expr>,
    /// Default value.
    pub default: Option<Expr>,
}

/// A class definition.
#[derive(Clone, Debug)]
pub struct ClassDef {
    /// Class name.
    pub name: Ident,
    /// Decorators.
    pub decorators: Vec<Expr>,
    /// Base classes.
    pub bases: Vec<Expr>,
    /// Class keywords (`metaclass=`).
    pub keywords: Vec<Keyword>,
    /// Body.
    pub body: Vec<Stmt>,
}

/// A `for` loop.
#[derive(Clone, Debug)]
pub struct For {
    /// Loop target.
    pub target: Expr,
    /// Iterated expression.
    pub iter: Expr,
    /// Body.
    pub body: Vec<Stmt>,
    /// `else` body.
    pub orelse: Vec<Stmt>,
    /// `async for`.
    pub is_async: bool,
}

/// A `while` loop.
#[derive(Clone, Debug)]
pub struct While {
    /// Condition.
    pub test: Expr,
    /// Body.
    pub body: Vec<Stmt>,
    /// `else` body.
    pub orelse: Vec<Stmt>,
}

/// An `if` statement.
#[derive(Clone, Debug)]
pub struct If {
    /// Condition.
    pub test: Expr,
    /// Body.
    pub body: Vec<Stmt>,
    /// `elif` (with a test) and `else` (without) branches.
    pub branches: Vec<Branch>,
}

/// An `elif` or `else` branch.
#[derive(Clone, Debug)]
pub struct Branch {
    /// Span of the whole clause.
    pub span: Span,
    /// `elif` condition; `None` for `else`.
    pub test: Option<Expr>,
    /// Body.
    pub body: Vec<Stmt>,
}

/// A `with` statement.
#[derive(Clone, Debug)]
pub struct With {
    /// Context managers.
    pub items: Vec<WithItem>,
    /// Body.
    pub body: Vec<Stmt>,
    /// `async with`.
    pub is_async: bool,
}

/// One `ctx as var` item.
#[derive(Clone, Debug)]
pub struct WithItem {
    /// Context manager expression.
    pub context: Expr,
    /// Bound variable.
    pub var: Option<Expr>,
}

/// A `try` statement.
#[derive(Clone, Debug)]
pub struct Try {
    /// Body.
    pub body: Vec<Stmt>,
    /// `except` clauses.
    pub handlers: Vec<Handler>,
    /// `else` body.
    pub orelse: Vec<Stmt>,
    /// `finally` body.
    pub finalbody: Vec<Stmt>,
}

/// An `except` clause.
#[derive(Clone, Debug)]
pub struct Handler {
    /// Caught type.
    pub type_: Option<Expr>,
    /// Body.
    pub body: Vec<Stmt>,
}

/// An imported name.
#[derive(Clone, Debug)]
pub struct Alias {
    /// Dotted name as written (`torch.nn`).
    pub name: String,
    /// `as` name.
    pub asname: Option<String>,
    /// Span of the alias.
    pub span: Span,
}

/// An expression.
#[derive(Clone, Debug)]
pub struct Expr {
    /// Where it is (parentheses around it excluded).
    pub span: Span,
    /// What it is.
    pub kind: ExprKind,
}

/// Expression kinds.
#[derive(Clone, Debug)]
pub enum ExprKind {
    /// A name.
    Name(String),
    /// `value.attr`.
    Attribute {
        /// Object.
        value: Box<Expr>,
        /// Attribute name.
        attr: Ident,
    },
    /// A call.
    Call(Call),
    /// `value[slice]`.
    Subscript {
        /// Indexed object.
        value: Box<Expr>,
        /// Index.
        slice: Box<Expr>,
    },
    /// A string literal (implicitly concatenated parts joined).
    Str(String),
    /// A bytes literal.
    Bytes,
    /// An integer literal (`None` if it does not fit an `i64`).
    Int(Option<i64>),
    /// A float or complex literal.
    Float(f64),
    /// `True` / `False`.
    Bool(bool),
    /// `None`.
    NoneLit,
    /// `...`.
    Ellipsis,
    /// `a < b <= c`.
    Compare {
        /// Left operand.
        left: Box<Expr>,
        /// Operators.
        ops: Vec<CmpOp>,
        /// Right operands.
        comparators: Vec<Expr>,
    },
    /// `a and b`, `a or b`.
    BoolOp {
        /// `true` for `and`.
        is_and: bool,
        /// Operands.
        values: Vec<Expr>,
    },
    /// `a + b` and the other binary operators.
    BinOp {
        /// Left.
        left: Box<Expr>,
        /// Operator as written (`+`, `@`, `&`, …).
        op: &'static str,
        /// Right.
        right: Box<Expr>,
    },
    /// `not a`, `-a`, `~a`, `+a`.
    UnaryOp {
        /// Operator as written (`not`, `-`, `~`, `+`).
        op: &'static str,
        /// Operand.
        operand: Box<Expr>,
    },
    /// `(a, b)`.
    Tuple(Vec<Expr>),
    /// `[a, b]`.
    List(Vec<Expr>),
    /// `*a`.
    Starred(Box<Expr>),
    /// An f-string; holds its interpolated expressions.
    FString(Vec<Expr>),
    /// `lambda params: body`.
    Lambda {
        /// Parameters.
        params: Vec<Param>,
        /// Body.
        body: Box<Expr>,
    },
    /// `{k: v, **other}`.
    Dict(Vec<DictItem>),
    /// `body if test else orelse`.
    IfExp {
        /// Condition.
        test: Box<Expr>,
        /// Value when true.
        body: Box<Expr>,
        /// Value when false.
        orelse: Box<Expr>,
    },
    /// Anything else (sets, comprehensions, `await`, `yield`, slices, …).
    Other(Vec<Expr>),
}

/// One `key: value` (or `**value`, with no key) entry of a dict display.
#[derive(Clone, Debug)]
pub struct DictItem {
    /// Key; `None` for a `**mapping` splat.
    pub key: Option<Expr>,
    /// Value.
    pub value: Expr,
}

/// Comparison operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    /// `==`
    Eq,
    /// `!=`
    NotEq,
    /// `<`
    Lt,
    /// `<=`
    LtE,
    /// `>`
    Gt,
    /// `>=`
    GtE,
    /// `is`
    Is,
    /// `is not`
    IsNot,
    /// `in`
    In,
    /// `not in`
    NotIn,
}

/// A call.
#[derive(Clone, Debug)]
pub struct Call {
    /// Called expression.
    pub func: Box<Expr>,
    /// Positional arguments.
    pub args: Vec<Expr>,
    /// Keyword arguments (`arg: None` for `**kwargs`).
    pub keywords: Vec<Keyword>,
    /// The parenthesised argument list, `(` to `)` inclusive.
    pub arguments_span: Span,
}

impl Call {
    /// The keyword argument named `name`.
    #[must_use]
    pub fn keyword(&self, name: &str) -> Option<&Keyword> {
        self.keywords.iter().find(|k| k.arg.as_ref().is_some_and(|a| a.name == name))
    }

    /// Whether a `**kwargs` splat is passed (any keyword may hide in it).
    #[must_use]
    pub fn has_kwargs_splat(&self) -> bool {
        self.keywords.iter().any(|k| k.arg.is_none())
    }

    /// Positional argument `i`, or keyword `name`.
    #[must_use]
    pub fn arg(&self, i: usize, name: &str) -> Option<&Expr> {
        self.keyword(name).map(|k| &k.value).or_else(|| {
            let positional: Vec<&Expr> =
                self.args.iter().take_while(|a| !matches!(a.kind, ExprKind::Starred(_))).collect();
            positional.get(i).copied()
        })
    }
}

/// A keyword argument.
#[derive(Clone, Debug)]
pub struct Keyword {
    /// Name; `None` for `**kwargs`.
    pub arg: Option<Ident>,
    /// Value.
    pub value: Expr,
    /// Whole `name=value`.
    pub span: Span,
}

impl Expr {
    /// `a.b.c` as `["a", "b", "c"]` when the expression is a pure dotted name.
    #[must_use]
    pub fn dotted_parts(&self) -> Option<Vec<&str>> {
        match &self.kind {
            ExprKind::Name(n) => Some(vec![n.as_str()]),
            ExprKind::Attribute { value, attr } => {
                let mut parts = value.dotted_parts()?;
                parts.push(attr.name.as_str());
                Some(parts)
            }
            _ => None,
        }
    }

    /// `a.b.c` as one string when the expression is a pure dotted name.
    #[must_use]
    pub fn dotted(&self) -> Option<String> {
        self.dotted_parts().map(|p| p.join("."))
    }

    /// The call, if this is one.
    #[must_use]
    pub fn as_call(&self) -> Option<&Call> {
        match &self.kind {
            ExprKind::Call(c) => Some(c),
            _ => None,
        }
    }

    /// The string value, if this is a string literal.
    #[must_use]
    pub fn as_str(&self) -> Option<&str> {
        match &self.kind {
            ExprKind::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The name, if this is a bare name.
    #[must_use]
    pub fn as_name(&self) -> Option<&str> {
        match &self.kind {
            ExprKind::Name(s) => Some(s),
            _ => None,
        }
    }

    /// The last identifier of a name or attribute chain (`b` in `a.b`, `f` in `f`).
    #[must_use]
    pub fn last_name(&self) -> Option<&str> {
        match &self.kind {
            ExprKind::Name(n) => Some(n),
            ExprKind::Attribute { attr, .. } => Some(&attr.name),
            _ => None,
        }
    }

    /// The innermost name an attribute / subscript / call chain starts from (`a` in `a.b[0].c()`).
    #[must_use]
    pub fn root_name(&self) -> Option<&str> {
        match &self.kind {
            ExprKind::Name(n) => Some(n),
            ExprKind::Attribute { value, .. } | ExprKind::Subscript { value, .. } => {
                value.root_name()
            }
            ExprKind::Call(c) => c.func.root_name(),
            _ => None,
        }
    }
}
