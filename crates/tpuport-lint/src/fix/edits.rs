//! Edit builders shared by rules and port recipes.

use tpuport_python::Span;
use tpuport_python::ast::{Call, Module, Stmt, StmtKind};

use crate::fix::Edit;

/// All arguments of a call (positional and keyword) as spans, in source order.
fn argument_spans(call: &Call) -> Vec<Span> {
    let mut spans: Vec<Span> =
        call.args.iter().map(|a| a.span).chain(call.keywords.iter().map(|k| k.span)).collect();
    spans.sort();
    spans
}

/// Removes the argument at `span` from `call`, with the comma that separates it.
#[must_use]
pub fn remove_argument(source: &str, call: &Call, span: Span) -> Edit {
    let spans = argument_spans(call);
    let Some(i) = spans.iter().position(|s| *s == span) else { return Edit::delete(span) };
    if let Some(next) = spans.get(i + 1) {
        Edit::delete(Span::new(span.start, next.start))
    } else if i > 0 {
        Edit::delete(Span::new(spans[i - 1].end, span.end))
    } else {
        // The only argument: drop it and any trailing comma up to `)`.
        let close = call.arguments_span.end.saturating_sub(1);
        let tail = Span::new(span.end, close).slice(source);
        let end =
            if tail.trim().trim_start_matches(',').trim().is_empty() { close } else { span.end };
        Edit::delete(Span::new(span.start, end))
    }
}

/// Removes the arguments at `remove` from `call`, each with the comma that separates it: one
/// edit per run of adjacent removed arguments, so the edits never overlap and apply together.
#[must_use]
pub fn remove_arguments(source: &str, call: &Call, remove: &[Span]) -> Vec<Edit> {
    let spans = argument_spans(call);
    let gone: Vec<bool> = spans.iter().map(|s| remove.contains(s)).collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < spans.len() {
        if !gone[i] {
            i += 1;
            continue;
        }
        let mut j = i;
        while j + 1 < spans.len() && gone[j + 1] {
            j += 1;
        }
        out.push(if let Some(next) = spans.get(j + 1) {
            Edit::delete(Span::new(spans[i].start, next.start))
        } else if i > 0 {
            Edit::delete(Span::new(spans[i - 1].end, spans[j].end))
        } else {
            // Every argument: drop them and any trailing comma up to `)`.
            let close = call.arguments_span.end.saturating_sub(1);
            let tail = Span::new(spans[j].end, close).slice(source);
            let end = if tail.trim().trim_start_matches(',').trim().is_empty() {
                close
            } else {
                spans[j].end
            };
            Edit::delete(Span::new(spans[i].start, end))
        });
        i = j + 1;
    }
    out
}

/// Appends `text` (e.g. `drop_last=True`) as the last argument of `call`.
#[must_use]
pub fn append_argument(call: &Call, text: &str) -> Edit {
    match argument_spans(call).last() {
        Some(last) => Edit::insert(last.end, format!(", {text}")),
        None => Edit::insert(call.arguments_span.start + 1, text.to_owned()),
    }
}

/// Leading whitespace of the line holding `offset`.
#[must_use]
pub fn indentation_at(source: &str, offset: u32) -> &str {
    let start = source[..offset as usize].rfind('\n').map_or(0, |i| i + 1);
    let line = &source[start..];
    let n = line.len() - line.trim_start_matches([' ', '\t']).len();
    &line[..n]
}

/// Start of the line holding `offset`.
#[must_use]
pub fn line_start(source: &str, offset: u32) -> u32 {
    source[..offset as usize].rfind('\n').map_or(0, |i| u32::try_from(i + 1).unwrap_or(0))
}

/// End of the line holding `offset`, including the line break.
#[must_use]
pub fn line_end(source: &str, offset: u32) -> u32 {
    let len = u32::try_from(source.len()).unwrap_or(u32::MAX);
    source[offset as usize..].find('\n').map_or(len, |i| offset + u32::try_from(i + 1).unwrap_or(0))
}

/// Deletes statement `stmt`. If it is alone on its lines they go too; if it is the only
/// statement of its block it becomes `pass`.
#[must_use]
pub fn delete_statement(source: &str, stmt: &Stmt, sole_in_block: bool) -> Edit {
    if sole_in_block {
        return Edit::replace(stmt.span, "pass");
    }
    let start = line_start(source, stmt.span.start);
    let end = line_end(source, stmt.span.end);
    let before = &source[start as usize..stmt.span.start as usize];
    let after = &source[stmt.span.end as usize..end as usize];
    let after_code = after.split('#').next().unwrap_or("").trim();
    if before.trim().is_empty() && (after_code.is_empty()) {
        Edit::delete(Span::new(start, end))
    } else {
        Edit::replace(stmt.span, "pass")
    }
}

/// Where a new top-level import goes: after the last import of the module's leading block of
/// imports, docstring and `__future__` imports (byte offset of the next line).
#[must_use]
pub fn import_insertion_offset(source: &str, module: &Module) -> u32 {
    let mut offset = 0;
    for stmt in &module.body {
        match &stmt.kind {
            StmtKind::Import(_) | StmtKind::ImportFrom { .. } => {
                offset = line_end(source, stmt.span.end)
            }
            StmtKind::Expr(e) if offset == 0 && e.as_str().is_some() => {
                offset = line_end(source, stmt.span.end)
            }
            _ => break,
        }
    }
    offset
}

/// Whether the module already has the top-level statement `line` (e.g. `import torch_xla`).
#[must_use]
pub fn has_import_line(source: &str, line: &str) -> bool {
    source.lines().any(|l| l.trim_end() == line)
}

/// An edit inserting `line` as a top-level import, or `None` if it is already there.
#[must_use]
pub fn add_import(source: &str, module: &Module, line: &str) -> Option<Edit> {
    if has_import_line(source, line) {
        return None;
    }
    let offset = import_insertion_offset(source, module);
    let prefix = if offset > 0 && !source[..offset as usize].ends_with('\n') { "\n" } else { "" };
    Some(Edit::insert(offset, format!("{prefix}{line}\n")))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic, reason = "tests")]
mod tests {
    use tpuport_python::ast::StmtKind;
    use tpuport_python::parse_module;

    use super::remove_arguments;

    /// `src` (one call statement) with the keyword arguments named in `names` removed.
    fn without(src: &str, names: &[&str]) -> String {
        let parsed = parse_module(src).unwrap();
        let StmtKind::Expr(e) = &parsed.module().body[0].kind else { panic!("{src}") };
        let call = e.as_call().unwrap();
        let spans: Vec<_> = call
            .keywords
            .iter()
            .filter(|k| k.arg.as_ref().is_some_and(|a| names.contains(&a.name.as_str())))
            .map(|k| k.span)
            .collect();
        let mut edits = remove_arguments(src, call, &spans);
        edits.sort_by_key(|e| e.range.start);
        let mut out = src.to_owned();
        for e in edits.iter().rev() {
            assert!(
                edits
                    .iter()
                    .filter(|o| o.range.start < e.range.end && e.range.start < o.range.end)
                    .count()
                    <= 1
            );
            out.replace_range(e.range.start as usize..e.range.end as usize, &e.content);
        }
        out
    }

    #[test]
    fn adjacent_arguments_go_in_one_edit() {
        let names = ["rank", "world_size"];
        assert_eq!(without("f('xla', rank=r, world_size=w)\n", &names), "f('xla')\n");
        assert_eq!(without("f('xla', rank=r, world_size=w, x=1)\n", &names), "f('xla', x=1)\n");
        assert_eq!(without("f('xla', rank=r, x=1, world_size=w)\n", &names), "f('xla', x=1)\n");
        assert_eq!(without("f(rank=r, world_size=w,)\n", &names), "f()\n");
        assert_eq!(without("f(a, b=2)\n", &names), "f(a, b=2)\n");
    }
}
