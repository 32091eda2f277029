//! `tpuport profile PATH…`: what a run's traces, torch_xla metrics reports and debug logs, and
//! JAX compile logs say is wrong, with the user's line and the `check` rule that finds the same
//! problem statically. JSON schema `tpuport.profile/1`: `docs/profile.md`.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use tpuport_profile::findings::{self, DiagnoseOptions, Severity};
use tpuport_profile::{Evidence, ProfileError, ReadOptions, Report};

use crate::cli::{Format, GlobalArgs};
use crate::commands::Status;
use crate::commands::audit::FailOn;
use crate::printer::Printer;

/// Arguments of `tpuport profile`.
#[derive(Debug, Args)]
pub(crate) struct ProfileArgs {
    /// Traces (`.json`, `.json.gz`, a `plugins/profile/<run>/` folder), torch_xla metrics
    /// reports, `PT_XLA_DEBUG` logs, JAX logs, or folders holding any mix.
    #[arg(required = true, value_name = "PATH")]
    pub(crate) paths: Vec<PathBuf>,
    /// Exit 1 when a finding reaches this severity.
    #[arg(long, value_enum, default_value_t = FailOn::Warning)]
    pub(crate) fail_on: FailOn,
    /// Codes or code prefixes not to report (`PRF601`, `PRF6`); repeatable.
    #[arg(long, value_name = "CODE")]
    pub(crate) ignore: Vec<String>,
    /// Ops listed per trace by PRF601.
    #[arg(long, default_value_t = 10)]
    pub(crate) top: usize,
    /// A step slower than this many times the median is an outlier (PRF502).
    #[arg(long, default_value_t = 2.0)]
    pub(crate) outlier_factor: f64,
    /// Compilations of one site or function from which PRF201 reports recompilation.
    #[arg(long, default_value_t = 3)]
    pub(crate) recompile_min: usize,
    /// Largest single trace event read, in MiB (a bigger one is an error, not an allocation).
    #[arg(long, default_value_t = 64, value_name = "MIB")]
    pub(crate) max_event_mib: usize,
    /// Print the time spent reading and diagnosing to stderr.
    #[arg(long)]
    pub(crate) timings: bool,
}

pub(crate) fn run(a: &ProfileArgs, g: &GlobalArgs, p: &Printer) -> anyhow::Result<Status> {
    if a.top == 0 {
        anyhow::bail!("--top must be at least 1");
    }
    if !(a.outlier_factor.is_finite() && a.outlier_factor >= 1.0) {
        anyhow::bail!("--outlier-factor must be a number of at least 1");
    }
    if a.max_event_mib == 0 || a.max_event_mib > 4096 {
        anyhow::bail!("--max-event-mib must be between 1 and 4096");
    }
    let t0 = Instant::now();
    let found = tpuport_profile::discover(&a.paths);
    for (path, why) in &found.skipped {
        p.info(&format!("skipped {}: {why}", path.display()));
    }
    let mut errors: Vec<ProfileError> = found.errors;
    let ropts = ReadOptions { max_event_bytes: a.max_event_mib << 20, top_ops: a.top.max(10) };
    let mut ev = Evidence::default();
    let mut inputs = Vec::new();
    for input in &found.inputs {
        p.info(&format!("reading {}", input.path.display()));
        match tpuport_profile::read_input(input, &ropts, &mut ev) {
            Ok(r) => inputs.push(r),
            Err(ProfileError::Unrecognized { path, what }) if !input.explicit => {
                p.info(&format!("skipped {}: {what}", path.display()));
            }
            Err(e) => errors.push(e),
        }
    }
    let t1 = Instant::now();
    let error_lines: Vec<String> = errors.iter().map(|e| tpuport_model::error_chain(e)).collect();
    for line in &error_lines {
        p.error(&anyhow::anyhow!("{line}"));
    }
    if inputs.is_empty() {
        anyhow::bail!("nothing to diagnose: no input could be read");
    }
    let dopts = DiagnoseOptions {
        recompile_min: a.recompile_min,
        outlier_factor: a.outlier_factor,
        top_ops: a.top,
        ignore: a.ignore.clone(),
    };
    let report = Report {
        schema: tpuport_profile::SCHEMA,
        inputs,
        findings: findings::diagnose(&ev, &dopts),
        errors: error_lines,
    };
    if a.timings {
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        p.note(&format!(
            "timings: read {:.3} ms, analysis {:.3} ms",
            ms(t1 - t0),
            ms(t1.elapsed())
        ));
    }
    match g.format {
        Format::Sarif => p.data(&tpuport_report::profile::sarif(&report)),
        f => super::emit_report(p, f, &report, || tpuport_report::profile::text(&report))?,
    }
    if !errors.is_empty() {
        return Ok(Status::Failure);
    }
    let threshold = match a.fail_on {
        FailOn::Info => Some(Severity::Info),
        FailOn::Warning => Some(Severity::Warning),
        FailOn::Error => Some(Severity::Error),
        FailOn::Never => None,
    };
    let hit = threshold.is_some_and(|t| report.findings.iter().any(|f| f.severity >= t));
    Ok(if hit { Status::Findings } else { Status::Success })
}
