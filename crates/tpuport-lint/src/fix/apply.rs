//! Splicing fixes into a source text.

use std::collections::BTreeMap;

use crate::codes::Rule;
use crate::diagnostic::Diagnostic;
use crate::fix::{Applicability, Edit};

/// Result of one fix pass.
#[derive(Debug, Default)]
pub struct AppliedFixes {
    /// The new text.
    pub output: String,
    /// How many fixes of each rule were applied.
    pub fixed: BTreeMap<Rule, usize>,
}

/// Applies the fixes of `diagnostics` allowed by `threshold`, in start order, skipping any fix
/// with an edit that overlaps an edit already taken (an identical edit counts as already done).
/// Returns `None` when no fix applied.
#[must_use]
pub fn apply_fixes(
    source: &str,
    diagnostics: &[Diagnostic],
    threshold: Applicability,
) -> Option<AppliedFixes> {
    let mut fixes: Vec<(&Diagnostic, &crate::fix::Fix)> = diagnostics
        .iter()
        .filter_map(|d| d.fix.as_ref().map(|f| (d, f)))
        .filter(|(_, f)| f.applies(threshold))
        .collect();
    fixes.sort_by_key(|(d, f)| (f.min_start(), d.rule));

    let mut taken: Vec<&Edit> = Vec::new();
    let mut fixed: BTreeMap<Rule, usize> = BTreeMap::new();
    for (diag, fix) in fixes {
        let fresh: Vec<&Edit> = fix.edits().iter().filter(|e| !taken.contains(e)).collect();
        if fresh.is_empty() {
            continue;
        }
        let in_bounds = fresh.iter().all(|e| {
            e.range.end as usize <= source.len()
                && source.is_char_boundary(e.range.start as usize)
                && source.is_char_boundary(e.range.end as usize)
        });
        if !in_bounds || fresh.iter().any(|e| taken.iter().any(|t| t.overlaps(e))) {
            continue;
        }
        taken.extend(fresh);
        *fixed.entry(diag.rule).or_default() += 1;
    }
    if taken.is_empty() {
        return None;
    }
    taken.sort();
    let mut output = String::with_capacity(source.len() + 64);
    let mut last = 0usize;
    for edit in taken {
        let (start, end) = (edit.range.start as usize, edit.range.end as usize);
        output.push_str(&source[last..start]);
        output.push_str(&edit.content);
        last = end;
    }
    output.push_str(&source[last..]);
    Some(AppliedFixes { output, fixed })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use tpuport_python::Span;

    use super::*;
    use crate::fix::Fix;

    fn diag(rule: Rule, fix: Fix) -> Diagnostic {
        Diagnostic {
            rule,
            message: String::new(),
            help: None,
            span: Span::empty(0),
            fix: Some(fix),
        }
    }

    #[test]
    fn overlapping_fix_is_skipped_identical_edit_shared() {
        let src = "abcdef";
        let import = Edit::insert(0, "X");
        let d = vec![
            diag(
                Rule::CudaMethodCall,
                Fix::safe(vec![import.clone(), Edit::replace(Span::new(1, 3), "B")]),
            ),
            diag(
                Rule::CudaDeviceString,
                Fix::safe(vec![import.clone(), Edit::replace(Span::new(2, 4), "C")]),
            ),
            diag(Rule::NcclBackend, Fix::safe(vec![import, Edit::replace(Span::new(4, 5), "E")])),
            diag(Rule::PinMemory, Fix::unsafe_(vec![Edit::delete(Span::new(5, 6))])),
        ];
        let out = apply_fixes(src, &d, Applicability::Safe).unwrap();
        assert_eq!(out.output, "XaBdEf");
        assert_eq!(out.fixed.values().sum::<usize>(), 2);
        let out = apply_fixes(src, &d, Applicability::Unsafe).unwrap();
        assert_eq!(out.output, "XaBdE");
    }
}
