//! Finding Python files (honouring `.gitignore`) and checking them in parallel.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::codes::Rule;
use crate::diagnostic::Diagnostic;
use crate::error::LintError;
use crate::fix::Applicability;
use crate::linter::{LintResult, lint_fix, lint_source};
use crate::semantic::Framework;
use crate::settings::RuleSet;

/// Expands `paths`: files as given, folders walked for `*.py` with `.gitignore` respected.
/// Results are sorted and de-duplicated; a walk error is kept as an `Err` entry.
#[must_use]
pub fn collect_python_files(paths: &[PathBuf]) -> Vec<Result<PathBuf, LintError>> {
    let mut out = Vec::new();
    for path in paths {
        if path.is_dir() {
            let walker = ignore::WalkBuilder::new(path)
                .hidden(true)
                .git_ignore(true)
                .require_git(false)
                .build();
            for entry in walker {
                match entry {
                    Ok(e) => {
                        let p = e.path();
                        if e.file_type().is_some_and(|t| t.is_file())
                            && p.extension().is_some_and(|x| x == "py" || x == "pyi")
                        {
                            out.push(Ok(p.to_path_buf()));
                        }
                    }
                    Err(source) => out.push(Err(LintError::Walk { path: path.clone(), source })),
                }
            }
        } else {
            out.push(Ok(path.clone()));
        }
    }
    out.sort_by(|a, b| match (a, b) {
        (Ok(a), Ok(b)) => a.cmp(b),
        (Ok(_), Err(_)) => std::cmp::Ordering::Less,
        (Err(_), Ok(_)) => std::cmp::Ordering::Greater,
        (Err(_), Err(_)) => std::cmp::Ordering::Equal,
    });
    out.dedup_by(|a, b| matches!((a, b), (Ok(a), Ok(b)) if a == b));
    out
}

/// What to do with fixes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FixMode {
    /// Report only.
    Check,
    /// Compute fixed text and a diff, write nothing.
    Diff,
    /// Write fixed files.
    Apply,
}

/// Options of one check run.
#[derive(Clone, Debug)]
pub struct CheckOptions {
    /// Enabled rules.
    pub rules: RuleSet,
    /// Report, diff or write.
    pub mode: FixMode,
    /// The least safe fix to apply.
    pub threshold: Applicability,
}

/// The result for one file.
#[derive(Debug)]
pub struct FileReport {
    /// The file.
    pub path: PathBuf,
    /// Its (final) text, when it could be read.
    pub source: Option<String>,
    /// Findings left.
    pub diagnostics: Vec<Diagnostic>,
    /// Frameworks detected.
    pub frameworks: Vec<Framework>,
    /// Fixes applied (or that would be, in diff mode).
    pub fixed: BTreeMap<Rule, usize>,
    /// Unified diff of the fixes (diff mode).
    pub diff: Option<String>,
    /// What went wrong, if anything.
    pub error: Option<LintError>,
}

impl FileReport {
    fn failed(path: PathBuf, error: LintError) -> FileReport {
        FileReport {
            path,
            source: None,
            diagnostics: Vec::new(),
            frameworks: Vec::new(),
            fixed: BTreeMap::new(),
            diff: None,
            error: Some(error),
        }
    }
}

/// Reads a file as UTF-8 text.
///
/// # Errors
/// When the file cannot be read or is not UTF-8.
pub fn read_source(path: &Path) -> Result<String, LintError> {
    let bytes =
        std::fs::read(path).map_err(|source| LintError::Read { path: path.to_owned(), source })?;
    String::from_utf8(bytes).map_err(|_| LintError::NotUtf8 { path: path.to_owned() })
}

/// Checks one file.
#[must_use]
pub fn check_file(path: &Path, opts: &CheckOptions) -> FileReport {
    let source = match read_source(path) {
        Ok(s) => s,
        Err(e) => return FileReport::failed(path.to_owned(), e),
    };
    let parse_err = |source| LintError::Parse { path: path.to_owned(), source };
    if opts.mode == FixMode::Check {
        return match lint_source(&source, &opts.rules) {
            Ok(LintResult { diagnostics, frameworks }) => FileReport {
                path: path.to_owned(),
                source: Some(source),
                diagnostics,
                frameworks,
                fixed: BTreeMap::new(),
                diff: None,
                error: None,
            },
            Err(e) => FileReport::failed(path.to_owned(), parse_err(e)),
        };
    }
    let outcome = match lint_fix(&source, &opts.rules, opts.threshold) {
        Ok(o) => o,
        Err(e) => return FileReport::failed(path.to_owned(), parse_err(e)),
    };
    let mut error = outcome
        .syntax_error
        .map(|rules| LintError::FixBrokeSyntax { path: path.to_owned(), rules });
    let changed = outcome.output != source;
    let diff = (opts.mode == FixMode::Diff && changed)
        .then(|| crate::render::unified_diff(&source, &outcome.output, path));
    if opts.mode == FixMode::Apply
        && changed
        && let Err(e) = crate::fs::write_atomic(path, &outcome.output)
    {
        error = Some(e);
    }
    let shown = if opts.mode == FixMode::Diff { source } else { outcome.output };
    let diagnostics = if opts.mode == FixMode::Diff {
        // In diff mode nothing is written: report what is left as findings of the original.
        lint_source(&shown, &opts.rules)
            .map(|r| r.diagnostics)
            .unwrap_or_default()
            .into_iter()
            .filter(|d| !d.fix.as_ref().is_some_and(|f| f.applies(opts.threshold)))
            .collect()
    } else {
        outcome.remaining.diagnostics
    };
    FileReport {
        path: path.to_owned(),
        source: Some(shown),
        diagnostics,
        frameworks: outcome.remaining.frameworks,
        fixed: outcome.fixed,
        diff,
        error,
    }
}

/// Checks every Python file under `paths` in parallel; reports keep path order.
#[must_use]
pub fn check_paths(paths: &[PathBuf], opts: &CheckOptions) -> Vec<FileReport> {
    let files = collect_python_files(paths);
    files
        .into_par_iter()
        .map(|f| match f {
            Ok(path) => check_file(&path, opts),
            Err(e) => {
                let p = match &e {
                    LintError::Walk { path, .. } => path.clone(),
                    _ => PathBuf::new(),
                };
                FileReport::failed(p, e)
            }
        })
        .collect()
}
