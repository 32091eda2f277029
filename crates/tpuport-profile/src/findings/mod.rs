//! Profile findings: what the evidence says is wrong, each with a stable code (`PRF1xx` input
//! pipeline, `PRF2xx` compilation, `PRF3xx` host syncs, `PRF4xx` CPU fallbacks, `PRF5xx` step
//! time, `PRF6xx` op time), the user's source line when the input names it, and the `check`
//! rules (`TPUnnn`) that find the same problem statically.
//!
//! One rule per file; the rule's doc comment is its user documentation, collected into the
//! [`Profile`] registry (`tpuport-codes` renders it into `docs/profile/` and `tpuport explain`).

mod ctx;

use std::path::PathBuf;

use serde::Serialize;
pub use tpuport_codes::Severity;
use tpuport_codes::{CodeInfo, Fact, Registry, Table};

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

/// The documentation and facts of one code (see [`tpuport_codes::StableCode`] for its doc,
/// summary, page and lookup).
pub type CodeDoc = CodeInfo<Profile>;

/// What a profile code adds to the common facts.
#[derive(Clone, Copy, Debug)]
pub struct ProfileFacts {
    /// `check` rules that find the same problem statically.
    pub check_rules: &'static [&'static str],
}

/// The profile findings' registry: [`CodeDoc`] rows, documented under `docs/profile/`
/// (regenerate with `TPUPORT_UPDATE_DOCS=1 cargo test -p tpuport-profile --test docs`; the same
/// test fails when the checked-in files differ).
#[derive(Debug)]
pub struct Profile;

static PROFILE: Registry = Registry {
    name: "profile",
    title: "tpuport profile findings",
    docs_dir: "docs/profile",
    regenerate: "TPUPORT_UPDATE_DOCS=1 cargo test -p tpuport-profile --test docs",
    intro: "`tpuport profile PATH…` reports these (see [../profile.md](../profile.md)); run `tpuport explain CODE` for the same text in a terminal.",
    noun: "codes",
    summary_heading: "## What it finds",
    families: &FAMILIES,
};

impl Table for Profile {
    type Extra = ProfileFacts;
    fn registry() -> &'static Registry {
        &PROFILE
    }
    fn rows() -> &'static [CodeDoc] {
        CODES
    }
    /// Its severity, and the `tpuport check` rules that find the same problem before a run.
    fn facts(row: &CodeDoc) -> Vec<Fact> {
        let rules = row.extra.check_rules;
        let links: Vec<String> = rules.iter().map(|c| format!("[{c}](../rules/{c}.md)")).collect();
        vec![
            Fact::severity(row.severity),
            Fact {
                label: "Found before a run by `tpuport check`",
                column: "Check rules",
                value: if links.is_empty() { "-".to_owned() } else { links.join(", ") },
                short: rules.join(", "),
            },
        ]
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

/// A rule: its documentation (the struct's doc comment, see [`tpuport_codes::documented!`]) and
/// its check.
pub(crate) trait Rule {
    /// Finds the problem in the evidence and reports through `sink`.
    fn check(cx: &Ctx<'_>, sink: &mut Sink<'_>);
}

/// Rows: code, default severity, rule, name, `check` rules that find the same problem.
macro_rules! rules_table {
    ($( $code:literal, $sev:ident, $module:ident :: $ty:ident, $name:literal, [$($rule:literal),*]; )*) => {
        tpuport_codes::code_table! {
            table: Profile,
            dir: "crates/tpuport-profile/src/findings",
            check: Rule => fn(&Ctx<'_>, &mut Sink<'_>);
            $( $code, $sev, $module::$ty, $name, ProfileFacts { check_rules: &[$($rule),*] }; )*
        }
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

/// Runs every rule over the evidence. Findings come most severe first, then by code.
#[must_use]
pub fn diagnose(ev: &Evidence, opts: &DiagnoseOptions) -> Vec<Finding> {
    let cx = Ctx::new(ev, opts);
    let mut out = Vec::new();
    for (row, check) in tpuport_codes::enabled::<Profile, _>(CHECKS, &opts.ignore) {
        check(&cx, &mut Sink::new(row, &cx, &mut out));
    }
    out.sort_by(|a, b| b.severity.cmp(&a.severity).then_with(|| a.code.cmp(b.code)));
    out
}
