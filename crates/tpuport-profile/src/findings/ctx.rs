//! What every rule gets: the evidence, the options, the user's source files (read on demand,
//! when the paths the profilers wrote exist here) and the sink that turns a draft into a
//! [`Finding`].

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::{CodeDoc, DiagnoseOptions, Finding, Severity};
use crate::Evidence;
use crate::frames::Frame;

/// Largest source file read to quote a line.
const MAX_SOURCE: u64 = 8 << 20;
/// Most source files read per run.
const MAX_SOURCES: usize = 256;

/// The evidence as the rules see it.
#[derive(Debug)]
pub(crate) struct Ctx<'a> {
    pub(crate) ev: &'a Evidence,
    pub(crate) opts: &'a DiagnoseOptions,
    /// Folders of the input files: relative frame paths (kineto's) are looked up there.
    dirs: Vec<PathBuf>,
    sources: RefCell<HashMap<String, Option<Rc<Vec<String>>>>>,
}

impl<'a> Ctx<'a> {
    pub(crate) fn new(ev: &'a Evidence, opts: &'a DiagnoseOptions) -> Ctx<'a> {
        let mut dirs: Vec<PathBuf> = Vec::new();
        let paths = ev
            .traces
            .iter()
            .map(|(p, _)| p)
            .chain(ev.metrics.iter().map(|(p, _)| p))
            .chain(ev.xla_debug.iter().map(|(p, _)| p))
            .chain(ev.jax.iter().map(|(p, _)| p));
        for p in paths {
            // The file's folder and a few above it (a trace sits in plugins/profile/<run>/).
            for dir in p.ancestors().skip(1).take(5) {
                if !dir.as_os_str().is_empty() && !dirs.iter().any(|d| d == dir) {
                    dirs.push(dir.to_owned());
                }
            }
        }
        Ctx { ev, opts, dirs, sources: RefCell::new(HashMap::new()) }
    }

    /// The lines of a source file named by a frame, when it can be found and read here.
    pub(crate) fn source(&self, file: &str) -> Option<Rc<Vec<String>>> {
        if let Some(v) = self.sources.borrow().get(file) {
            return v.clone();
        }
        if self.sources.borrow().len() >= MAX_SOURCES {
            return None;
        }
        let p = Path::new(file);
        let candidates: Vec<PathBuf> = if p.is_absolute() {
            vec![p.to_owned()]
        } else {
            self.dirs.iter().map(|d| d.join(p)).chain(std::iter::once(p.to_owned())).collect()
        };
        let lines = candidates.iter().find_map(|c| {
            let meta = std::fs::metadata(c).ok()?;
            if !meta.is_file() || meta.len() > MAX_SOURCE {
                return None;
            }
            let text = std::fs::read(c).ok()?;
            Some(Rc::new(
                String::from_utf8_lossy(&text).lines().map(str::to_owned).collect::<Vec<_>>(),
            ))
        });
        self.sources.borrow_mut().insert(file.to_owned(), lines.clone());
        lines
    }

    /// The text of a frame's line, trimmed.
    pub(crate) fn line_text(&self, f: &Frame) -> Option<String> {
        let lines = self.source(&f.file)?;
        let idx = usize::try_from(f.line).ok()?.checked_sub(1)?;
        lines.get(idx).map(|l| l.trim().to_owned())
    }

    /// Steps counted by torch_xla (`MarkStep`) for the run that wrote `log`: the metrics report
    /// in the same file or folder, else the only metrics report given.
    pub(crate) fn mark_steps(&self, log: &Path) -> Option<u64> {
        let steps = |m: &crate::MetricsReport| m.counter("MarkStep").filter(|&n| n > 0);
        let near = self.ev.metrics.iter().find(|(p, _)| p == log || p.parent() == log.parent());
        match near {
            Some((_, m)) => steps(m),
            None if self.ev.metrics.len() == 1 => steps(&self.ev.metrics[0].1),
            None => None,
        }
    }
}

/// A finding before the sink fills in its code.
#[derive(Debug, Default)]
pub(crate) struct Draft {
    pub(crate) title: String,
    pub(crate) message: String,
    pub(crate) location: Option<Frame>,
    pub(crate) related: Vec<Frame>,
    pub(crate) details: Vec<String>,
    pub(crate) evidence: Vec<PathBuf>,
    /// Narrower than the code's list when the source line shows which pattern it is.
    pub(crate) check_rules: Option<Vec<&'static str>>,
    pub(crate) fix: Option<String>,
    /// Overrides the code's default.
    pub(crate) severity: Option<Severity>,
}

/// Collects one rule's findings.
#[derive(Debug)]
pub(crate) struct Sink<'s> {
    doc: &'static CodeDoc,
    cx: &'s Ctx<'s>,
    out: &'s mut Vec<Finding>,
}

impl<'s> Sink<'s> {
    pub(crate) fn new(
        doc: &'static CodeDoc,
        cx: &'s Ctx<'s>,
        out: &'s mut Vec<Finding>,
    ) -> Sink<'s> {
        Sink { doc, cx, out }
    }

    pub(crate) fn emit(&mut self, d: Draft) {
        let snippet = d.location.as_ref().and_then(|f| self.cx.line_text(f));
        let mut evidence = d.evidence;
        evidence.dedup();
        self.out.push(Finding {
            code: self.doc.code,
            name: self.doc.name,
            severity: d.severity.unwrap_or(self.doc.severity),
            title: d.title,
            message: d.message,
            location: d.location,
            snippet,
            related: d.related,
            details: d.details,
            evidence,
            check_rules: d.check_rules.unwrap_or_else(|| self.doc.extra.check_rules.to_vec()),
            fix: d.fix,
        });
    }
}

/// `1234.5 µs` as `1.23 ms` / `12.3 s`.
pub(crate) fn duration_us(us: f64) -> String {
    if us >= 1e6 {
        format!("{:.2} s", us / 1e6)
    } else if us >= 1e3 {
        format!("{:.2} ms", us / 1e3)
    } else {
        format!("{us:.1} µs")
    }
}

/// Median of a sorted slice.
pub(crate) fn median(sorted: &[f64]) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let n = sorted.len();
    if n % 2 == 1 { sorted[n / 2] } else { f64::midpoint(sorted[n / 2 - 1], sorted[n / 2]) }
}
