//! `tpuport check`: lint Python scripts for TPU-hostile patterns.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use tpuport_lint::files::{CheckOptions, FixMode, check_paths};
use tpuport_lint::fix::Applicability;
use tpuport_lint::render::TextOptions;
use tpuport_lint::{RuleSet, Selector, error_chain};
use tpuport_report::check::{
    render_json, render_sarif, render_statistics, render_summary, render_text,
};

use crate::cli::{Format, GlobalArgs};
use crate::commands::Status;
use crate::printer::Printer;

/// Arguments of `tpuport check`.
#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// Files or folders to check (folders are walked for `*.py`, honouring `.gitignore`).
    #[arg(required = true)]
    pub(crate) paths: Vec<PathBuf>,
    /// Only these codes or prefixes (e.g. `TPU2`, `TPU301`, `ALL`); comma-separated or repeated.
    #[arg(long, value_delimiter = ',')]
    pub(crate) select: Vec<String>,
    /// Skip these codes or prefixes.
    #[arg(long, value_delimiter = ',')]
    pub(crate) ignore: Vec<String>,
    /// Also run preview rules.
    #[arg(long)]
    pub(crate) preview: bool,
    /// Apply safe fixes in place.
    #[arg(long)]
    pub(crate) fix: bool,
    /// Also apply unsafe fixes (with `--fix` or `--diff`).
    #[arg(long)]
    pub(crate) unsafe_fixes: bool,
    /// Print the fixes as a unified diff instead of writing them.
    #[arg(long, conflicts_with = "fix")]
    pub(crate) diff: bool,
    /// Print a count per code instead of each finding.
    #[arg(long)]
    pub(crate) statistics: bool,
}

pub(crate) fn run(a: &CheckArgs, g: &GlobalArgs, p: &Printer) -> anyhow::Result<Status> {
    let parse = |v: &[String]| -> anyhow::Result<Vec<Selector>> {
        v.iter()
            .filter(|s| !s.trim().is_empty())
            .map(|s| Selector::parse(s).map_err(anyhow::Error::from))
            .collect()
    };
    let select = parse(&a.select).context("invalid --select")?;
    let ignore = parse(&a.ignore).context("invalid --ignore")?;
    let threshold = if a.unsafe_fixes { Applicability::Unsafe } else { Applicability::Safe };
    let mode = if a.diff {
        FixMode::Diff
    } else if a.fix {
        FixMode::Apply
    } else {
        FixMode::Check
    };
    let opts = CheckOptions { rules: RuleSet::new(&select, &ignore, a.preview), mode, threshold };
    let reports = check_paths(&a.paths, &opts);

    let mut failed = false;
    for r in &reports {
        if let Some(e) = &r.error {
            failed = true;
            p.warn(&error_chain(e));
        }
        if !r.frameworks.is_empty() {
            let names: Vec<&str> = r.frameworks.iter().map(|f| f.name()).collect();
            p.info(&format!("{}: {}", r.path.display(), names.join(", ")));
        }
    }
    if mode == FixMode::Diff {
        for r in &reports {
            if let Some(d) = &r.diff {
                p.data(d);
            }
        }
    }
    match g.format {
        Format::Json => p.data(&render_json(&reports, threshold)?),
        Format::Sarif => p.data(&render_sarif(&reports)?),
        Format::Text if a.statistics => {
            p.data(&render_statistics(&reports, threshold));
        }
        Format::Text if mode == FixMode::Diff => {
            let fixed: usize = reports.iter().flat_map(|r| r.fixed.values()).sum();
            p.info(&format!("{fixed} fix(es) shown"));
            p.info(render_summary(&reports, threshold).trim_end());
        }
        Format::Text => {
            let opts = TextOptions { threshold, context: 1 };
            let text = render_text(&reports, opts);
            if g.quiet {
                // Only the findings, without the summary.
                let summary = render_summary(&reports, threshold);
                p.data(text.strip_suffix(&summary).unwrap_or(&text));
            } else {
                p.data(&text);
            }
        }
    }
    if failed {
        return Ok(Status::Failure);
    }
    let findings = reports.iter().any(|r| !r.diagnostics.is_empty());
    Ok(if findings { Status::Findings } else { Status::Success })
}
