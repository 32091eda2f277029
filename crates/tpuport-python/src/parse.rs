//! Parsing a source text into a [`ParsedModule`].

use ruff_python_ast::token::TokenKind;
use ruff_text_size::Ranged;

use crate::ast::Module;
use crate::convert;
use crate::error::ParseError;
use crate::source::LineIndex;
use crate::span::Span;

/// A `# …` comment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Comment {
    /// From `#` to the end of the line (line break excluded).
    pub span: Span,
    /// The comment text, `#` included.
    pub text: String,
}

/// A parsed Python file: tree, comments and line index, borrowing nothing.
#[derive(Clone, Debug)]
pub struct ParsedModule {
    module: Module,
    comments: Vec<Comment>,
    lines: LineIndex,
}

impl ParsedModule {
    /// The syntax tree.
    #[must_use]
    pub fn module(&self) -> &Module {
        &self.module
    }

    /// All comments, in source order.
    #[must_use]
    pub fn comments(&self) -> &[Comment] {
        &self.comments
    }

    /// The line index of the parsed text.
    #[must_use]
    pub fn lines(&self) -> &LineIndex {
        &self.lines
    }
}

/// Parses `source` as a Python module. The first syntax error is returned as [`ParseError`].
///
/// # Errors
/// When `source` is not valid Python.
pub fn parse_module(source: &str) -> Result<ParsedModule, ParseError> {
    let lines = LineIndex::new(source);
    let parsed = ruff_python_parser::parse_module(source).map_err(|e| {
        let span = convert::span(e.location);
        let lc = lines.line_col(source, span.start);
        ParseError { message: e.error.to_string(), span, line: lc.line, column: lc.column }
    })?;
    let comments = parsed
        .tokens()
        .iter()
        .filter(|t| t.kind() == TokenKind::Comment)
        .map(|t| {
            let span = convert::span(t.range());
            Comment { span, text: span.slice(source).to_owned() }
        })
        .collect();
    let module = convert::module(parsed.syntax());
    Ok(ParsedModule { module, comments, lines })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::ast::{ExprKind, StmtKind};

    #[test]
    fn parses_calls_comments_and_errors() {
        let src = "import torch  # noqa\nx = model.cuda(non_blocking=True)\n";
        let p = parse_module(src).unwrap();
        assert_eq!(p.comments().len(), 1);
        assert_eq!(p.comments()[0].text, "# noqa");
        let StmtKind::Assign { value, .. } = &p.module().body[1].kind else {
            panic!("not an assign")
        };
        let ExprKind::Call(call) = &value.kind else { panic!("not a call") };
        assert_eq!(call.func.dotted().as_deref(), Some("model.cuda"));
        assert_eq!(call.arguments_span.slice(src), "(non_blocking=True)");
        assert_eq!(call.keyword("non_blocking").unwrap().value.span.slice(src), "True");
        let err = parse_module("def f(:\n").unwrap_err();
        assert_eq!(err.line, 1);
        assert!(err.to_string().starts_with("syntax error at 1:"), "{err}");
    }
}
