//! tpuport-profile: what a training run's evidence says is wrong, offline.
//!
//! Inputs are what the profilers already write:
//! - Chrome-trace JSON (`.json`, `.json.gz`) from torch.profiler (kineto) and from the TSL
//!   profiler behind `jax.profiler` and `torch_xla.debug.profiler`
//!   (`<logdir>/plugins/profile/<run>/<host>.trace.json.gz`), read by a streaming scanner
//!   ([`trace`]) in bounded memory;
//! - torch_xla's metrics report, its `PT_XLA_DEBUG` / `PT_XLA_DEBUG_LEVEL` output and the
//!   `pt-xla-profiler:` lines, and JAX's `jax_log_compiles` / `jax_explain_cache_misses` logs
//!   ([`text`]), in any mix inside one file.
//!
//! [`discover`] finds the files, [`read_input`] reads one into an [`Evidence`], and
//! [`findings::diagnose`] turns the evidence into findings with `PRFnnn` codes, each naming the
//! user's source line when the input has it and the `check` rule that finds the same problem
//! before a run.
//!
//! Nothing here prints.

mod error;
pub mod findings;
pub mod frames;
mod input;
pub mod text;
pub mod trace;

use std::path::PathBuf;

use serde::Serialize;

pub use error::ProfileError;
pub use frames::Frame;
pub use input::{Discovery, Input, InputKind, discover};
pub use text::jax_log::JaxLog;
pub use text::metrics::MetricsReport;
pub use text::xla_debug::XlaDebugLog;
pub use trace::TraceSummary;

/// Reading options.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// Largest single trace event held, bytes.
    pub max_event_bytes: usize,
    /// Ops kept per trace in the top-ops table.
    pub top_ops: usize,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions { max_event_bytes: 64 << 20, top_ops: 10 }
    }
}

/// What one file contributed.
#[derive(Debug, Clone, Serialize)]
pub struct InputReport {
    /// The file.
    pub path: PathBuf,
    /// What was found in it (`trace`, `metrics`, `xla-debug`, `jax-log`).
    pub found: Vec<&'static str>,
    /// Bytes read (decompressed).
    pub bytes: u64,
    /// Trace events read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events: Option<u64>,
}

/// Everything read, by kind, each with the file it came from.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Evidence {
    /// Chrome traces.
    pub traces: Vec<(PathBuf, TraceSummary)>,
    /// torch_xla metrics reports.
    pub metrics: Vec<(PathBuf, MetricsReport)>,
    /// torch_xla debug logs.
    pub xla_debug: Vec<(PathBuf, XlaDebugLog)>,
    /// JAX compile logs.
    pub jax: Vec<(PathBuf, JaxLog)>,
}

/// Reads one input into `ev`.
///
/// # Errors
/// The file cannot be read, is not valid trace JSON, or (for a file named on the command line)
/// holds nothing `profile` reads.
pub fn read_input(
    input: &Input,
    opts: &ReadOptions,
    ev: &mut Evidence,
) -> Result<InputReport, ProfileError> {
    let path = &input.path;
    match input.kind {
        InputKind::Trace => {
            let summary = trace::read_trace(
                || input::open(path, input.gzip),
                opts.max_event_bytes,
                opts.top_ops,
            )
            .map_err(|e| match e {
                trace::scan::ScanError::Io(source) => {
                    ProfileError::Io { path: path.clone(), source }
                }
                trace::scan::ScanError::Json { offset, message } => {
                    ProfileError::Json { path: path.clone(), offset, message }
                }
                trace::scan::ScanError::TooLarge { offset } => ProfileError::EventTooLarge {
                    path: path.clone(),
                    offset,
                    limit: opts.max_event_bytes,
                },
                trace::scan::ScanError::NotATrace => ProfileError::Unrecognized {
                    path: path.clone(),
                    what: "JSON without a `traceEvents` array: not a Chrome trace".to_owned(),
                },
            })?;
            let report = InputReport {
                path: path.clone(),
                found: vec!["trace"],
                bytes: summary.bytes,
                events: Some(summary.events),
            };
            ev.traces.push((path.clone(), summary));
            Ok(report)
        }
        InputKind::Text => {
            let r = input::open_lines(path, input.gzip).map_err(|e| ProfileError::io(path, e))?;
            let t = text::read_text(r).map_err(|e| ProfileError::io(path, e))?;
            if t.is_empty() {
                return Err(ProfileError::Unrecognized {
                    path: path.clone(),
                    what: "no metrics report, PT_XLA_DEBUG output or JAX compile log lines in this text file".to_owned(),
                });
            }
            let mut found = Vec::new();
            if let Some(m) = t.metrics {
                found.push("metrics");
                ev.metrics.push((path.clone(), m));
            }
            if let Some(x) = t.xla_debug {
                found.push("xla-debug");
                ev.xla_debug.push((path.clone(), x));
            }
            if let Some(j) = t.jax {
                found.push("jax-log");
                ev.jax.push((path.clone(), j));
            }
            Ok(InputReport { path: path.clone(), found, bytes: t.bytes, events: None })
        }
    }
}

/// The JSON schema name of [`Report`].
pub const SCHEMA: &str = "tpuport.profile/1";

/// What `tpuport profile` reports.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// [`SCHEMA`].
    pub schema: &'static str,
    /// The files read.
    pub inputs: Vec<InputReport>,
    /// Findings, most severe first.
    pub findings: Vec<findings::Finding>,
    /// Files that could not be read, one line each.
    pub errors: Vec<String>,
}
