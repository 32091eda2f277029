//! `# noqa` and `# noqa: CODE, CODE` suppression comments.

use std::collections::HashMap;

use tpuport_python::{LineIndex, ParsedModule};

use crate::diagnostic::Diagnostic;

/// What a `noqa` comment on one line suppresses.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Directive {
    All,
    Codes(Vec<String>),
}

/// `noqa` directives by 0-based line.
#[derive(Debug, Default)]
pub(crate) struct NoqaMap(HashMap<usize, Directive>);

impl NoqaMap {
    pub(crate) fn new(parsed: &ParsedModule) -> NoqaMap {
        let mut map = HashMap::new();
        for c in parsed.comments() {
            if let Some(d) = parse_directive(&c.text) {
                map.insert(parsed.lines().line_of(c.span.start), d);
            }
        }
        NoqaMap(map)
    }

    /// Whether `d` is suppressed by a directive on its first or last line.
    pub(crate) fn suppresses(&self, lines: &LineIndex, d: &Diagnostic) -> bool {
        let first = lines.line_of(d.span.start);
        let last = lines.line_of(d.span.end.saturating_sub(1).max(d.span.start));
        [first, last].iter().any(|l| match self.0.get(l) {
            Some(Directive::All) => true,
            Some(Directive::Codes(codes)) => {
                codes.iter().any(|c| c.eq_ignore_ascii_case(d.rule.code()))
            }
            None => false,
        })
    }
}

/// Parses `# noqa`, `# noqa: TPU101,TPU202` (also inside a longer comment, as ruff does).
fn parse_directive(comment: &str) -> Option<Directive> {
    let lower = comment.to_ascii_lowercase();
    let at = lower.find("noqa")?;
    let before = lower[..at].trim_end();
    if !(before.ends_with('#')) {
        return None;
    }
    let rest = &comment[at + 4..];
    let Some(list) = rest.trim_start().strip_prefix(':') else {
        return Some(Directive::All);
    };
    let codes: Vec<String> = list
        .split(|c: char| c == ',' || c.is_whitespace())
        .map(str::trim)
        .take_while(|c| c.is_empty() || is_code(c))
        .filter(|c| !c.is_empty())
        .map(str::to_owned)
        .collect();
    if codes.is_empty() { Some(Directive::All) } else { Some(Directive::Codes(codes)) }
}

fn is_code(c: &str) -> bool {
    let letters = c.chars().take_while(char::is_ascii_alphabetic).count();
    letters > 0 && letters < c.len() && c[letters..].chars().all(|ch| ch.is_ascii_digit())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn directives() {
        assert_eq!(parse_directive("# noqa"), Some(Directive::All));
        assert_eq!(
            parse_directive("#noqa: TPU201, TPU202"),
            Some(Directive::Codes(vec!["TPU201".into(), "TPU202".into()]))
        );
        assert_eq!(
            parse_directive("# type: int  # noqa:TPU301 explained"),
            Some(Directive::Codes(vec!["TPU301".into()]))
        );
        assert_eq!(parse_directive("# a note about noqa"), None);
    }
}
