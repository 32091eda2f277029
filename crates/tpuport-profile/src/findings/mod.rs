//! Profile findings: what the evidence says is wrong, each with a stable code (`PRF1xx` input
//! pipeline, `PRF2xx` compilation, `PRF3xx` host syncs, `PRF4xx` CPU fallbacks, `PRF5xx` step
//! time, `PRF6xx` op time), the user's source line when the input names it, and the `check`
//! rules (`TPUnnn`) that find the same problem statically.
//!
//! One rule per file; the rule's doc comment is its user documentation, collected into
//! [`registry`], printed by `tpuport explain PRFnnn` and generated into `docs/profile/` by
//! [`docs`].

mod ctx;
pub mod docs;

use std::path::PathBuf;

use serde::Serialize;
pub use tpuport_analysis::findings::Severity;

use crate::Evidence;
use crate::frames::Frame;
pub(crate) use ctx::{Ctx, Draft, Sink};

/// One finding.
#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    /// Stable code (`PRF101`); `tpuport explain CODE` prints its doc.
    pub code: &'static str,
    /// Kebab-case name of the code.
    pub name: &'static str,
    /// Severity (the code's default unless the rule raises or lowers it).
    pub severity: Severity,
    /// One-line title.
    pub title: String,
    /// What was found, with figures.
    pub message: String,
    /// The user's source line this is about, when the input names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<Frame>,
    /// The text of that line, when the file is readable here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snippet: Option<String>,
    /// Other places involved (definitions, further call sites).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub related: Vec<Frame>,
    /// Further lines of evidence.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<String>,
    /// The input files this came from.
    pub evidence: Vec<PathBuf>,
    /// `check` rules that catch the same problem in the source before a run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub check_rules: Vec<&'static str>,
    /// What to do about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// Thresholds for [`diagnose`].
#[derive(Clone, Debug)]
pub struct DiagnoseOptions {
    /// Compilations of one graph site / function from which recompilation is reported (the
    /// first and a warm-up second are normal).
    pub recompile_min: usize,
    /// A step slower than this many times the median is an outlier (PRF502).
    pub outlier_factor: f64,
    /// Ops listed by PRF601.
    pub top_ops: usize,
    /// Codes or code prefixes not to run (`PRF601`, `PRF6`), case-insensitive.
    pub ignore: Vec<String>,
}

impl Default for DiagnoseOptions {
    fn default() -> Self {
        DiagnoseOptions { recompile_min: 3, outlier_factor: 2.0, top_ops: 10, ignore: Vec::new() }
    }
}

/// The documentation of one code.
#[derive(Clone, Copy, Debug)]
pub struct CodeDoc {
    /// Stable code.
    pub code: &'static str,
    /// Kebab-case name (`input-bound-steps`).
    pub name: &'static str,
    /// Default severity.
    pub severity: Severity,
    /// `check` rules that find the same problem statically.
    pub check_rules: &'static [&'static str],
    /// Rule source file, relative to the repository root.
    pub source: &'static str,
    raw_doc: &'static str,
}

impl CodeDoc {
    /// The family title of this code (from its hundreds digit).
    #[must_use]
    pub fn family(&self) -> &'static str {
        FAMILIES.iter().find(|(p, _)| self.code.starts_with(p)).map_or("Other", |(_, t)| t)
    }

    /// The user documentation (Markdown), from the rule's doc comment.
    #[must_use]
    pub fn doc(&self) -> String {
        tpuport_codedoc::clean(self.raw_doc)
    }

    /// The first sentence of "What it finds".
    #[must_use]
    pub fn summary(&self) -> String {
        tpuport_codedoc::summary(&self.doc(), "## What it finds")
    }
}

/// Families in code order: (prefix, title).
pub const FAMILIES: [(&str, &str); 6] = [
    ("PRF1", "Input pipeline"),
    ("PRF2", "Compilation"),
    ("PRF3", "Host syncs"),
    ("PRF4", "CPU fallbacks"),
    ("PRF5", "Step time"),
    ("PRF6", "Op time"),
];

/// A rule: its documentation (the struct's doc comment) and its check.
pub(crate) trait Rule {
    /// Finds the problem in the evidence and reports through `sink`.
    fn check(cx: &Ctx<'_>, sink: &mut Sink<'_>);
}

/// Declares a rule struct and captures its doc comment as an associated `DOC` constant.
macro_rules! profile_rule {
    ($(#[doc = $doc:literal])* pub(crate) struct $name:ident;) => {
        $(#[doc = $doc])*
        #[derive(Debug, Clone, Copy)]
        pub(crate) struct $name;
        impl $name {
            pub(crate) const DOC: &'static str = concat!($($doc, "\n"),*);
        }
    };
}

macro_rules! rules_table {
    ($( $code:literal, $sev:ident, $module:ident :: $ty:ident, $name:literal, [$($rule:literal),*]; )*) => {
        $( mod $module; )*

        static REGISTRY: &[CodeDoc] = &[
            $( CodeDoc {
                code: $code,
                name: $name,
                severity: Severity::$sev,
                check_rules: &[$($rule),*],
                source: concat!("crates/tpuport-profile/src/findings/", stringify!($module), ".rs"),
                raw_doc: $module::$ty::DOC,
            }, )*
        ];

        type CheckFn = fn(&Ctx<'_>, &mut Sink<'_>);
        static CHECKS: &[(&str, CheckFn)] = &[
            $( ($code, <$module::$ty as Rule>::check), )*
        ];
    };
}

rules_table! {
    "PRF101", Warning, input_bound::InputBound, "input-bound-steps", ["TPU601", "TPU604", "TPU602"];
    "PRF201", Warning, recompilation::Recompilation, "recompilation", ["TPU101", "TPU102", "TPU104", "TPU105", "TPU106", "TPU107", "TPU109", "TPU701"];
    "PRF202", Warning, eager_ops::EagerOps, "ops-outside-jit", [];
    "PRF203", Info, compile_time::CompileTime, "compile-time", [];
    "PRF301", Warning, host_sync::HostSync, "host-sync-per-step", ["TPU201", "TPU202", "TPU203", "TPU204", "TPU205", "TPU206", "TPU703"];
    "PRF401", Warning, cpu_fallback::CpuFallback, "cpu-fallback-ops", ["TPU105", "TPU106", "TPU109"];
    "PRF501", Info, step_time::StepTime, "step-time", [];
    "PRF502", Info, slow_steps::SlowSteps, "slow-steps", ["TPU802"];
    "PRF601", Info, top_ops::TopOps, "top-ops", [];
}

/// Every code, in code order.
#[must_use]
pub fn registry() -> &'static [CodeDoc] {
    REGISTRY
}

/// The doc of `code` (case-insensitive).
#[must_use]
pub fn lookup(code: &str) -> Option<&'static CodeDoc> {
    REGISTRY.iter().find(|d| d.code.eq_ignore_ascii_case(code))
}

/// Runs every rule over the evidence. Findings come most severe first, then by code.
#[must_use]
pub fn diagnose(ev: &Evidence, opts: &DiagnoseOptions) -> Vec<Finding> {
    let cx = Ctx::new(ev, opts);
    let mut out = Vec::new();
    for (code, f) in CHECKS {
        let ignored = opts.ignore.iter().any(|p| {
            code.get(..p.len()).is_some_and(|head| !p.is_empty() && head.eq_ignore_ascii_case(p))
        });
        if ignored {
            continue;
        }
        let Some(doc) = lookup(code) else { continue };
        let mut sink = Sink::new(doc, &cx, &mut out);
        f(&cx, &mut sink);
    }
    out.sort_by(|a, b| b.severity.cmp(&a.severity).then_with(|| a.code.cmp(b.code)));
    out
}
