//! `tpuport serve REPO`: the KServe v2 (Open Inference Protocol) server. This file only parses
//! flags and reports start-up events; the server is `tpuport-serve`.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use tpuport_exec::{ExeSource, Model};
use tpuport_serve::{Reporter, ServeError, ServeOptions};

use crate::cli::GlobalArgs;
use crate::commands::Status;
use crate::printer::Printer;

/// Arguments of `tpuport serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Model repository: one folder per model, each with a `config.toml`.
    pub(crate) repository: PathBuf,
    /// Address to listen on (REST and gRPC share the port).
    #[arg(long, default_value = "127.0.0.1")]
    pub(crate) host: IpAddr,
    /// Port (0 picks a free one; the chosen address is printed on stderr).
    #[arg(long, default_value_t = 8000)]
    pub(crate) port: u16,
    /// Serve only these models (repeatable; default: every model folder).
    #[arg(long = "model", value_name = "NAME")]
    pub(crate) models: Vec<String>,
    /// PJRT plugin library (default: discovery as for `tpuport run`).
    #[arg(long, value_name = "PATH")]
    pub(crate) plugin: Option<PathBuf>,
    /// Compile every bucket instead of using the executable cache.
    #[arg(long)]
    pub(crate) no_cache: bool,
    /// Turn on model control (repository index, load, unload); the bearer token is the first
    /// line of this file.
    #[arg(long, value_name = "FILE")]
    pub(crate) control_token_file: Option<PathBuf>,
    /// Largest request body or gRPC message, in MiB.
    #[arg(long, default_value_t = 64, value_name = "MIB")]
    pub(crate) max_body_mib: usize,
    /// Open connections at most.
    #[arg(long, default_value_t = 1024, value_name = "N")]
    pub(crate) max_connections: usize,
    /// Seconds that queued and executing requests get to finish after SIGTERM.
    #[arg(long, default_value_t = 30, value_name = "SECONDS")]
    pub(crate) drain_timeout: u64,
    /// Write the Prometheus metrics as they stand after the drain to FILE on exit (the counts
    /// of the last requests, which no scrape sees once the listener has closed).
    #[arg(long, value_name = "FILE")]
    pub(crate) final_metrics: Option<PathBuf>,
}

struct Report {
    p: Printer,
    final_metrics: Option<PathBuf>,
}

impl Reporter for Report {
    fn listening(&self, addr: SocketAddr) {
        self.p.note(&format!("listening on {addr} (REST and gRPC)"));
    }
    fn model_loaded(&self, m: &Model, seconds: f64) {
        let buckets: Vec<String> = m.bucket_sizes().iter().map(ToString::to_string).collect();
        let sources = m.executable_sources();
        let mut how: Vec<String> = Vec::new();
        for s in [ExeSource::Saved, ExeSource::CacheHit, ExeSource::Compiled] {
            let n = sources.iter().filter(|x| **x == s).count();
            if n > 0 {
                how.push(format!("{n} {}", s.as_str()));
            }
        }
        self.p.note(&format!(
            "model {} loaded: {} input(s), {} output(s), buckets [{}], executables: {}, {seconds:.1} s",
            m.name,
            m.inputs.len(),
            m.outputs.len(),
            if m.batched { buckets.join(", ") } else { "unbatched".into() },
            how.join(", ")
        ));
    }
    fn model_warning(&self, name: &str, message: &str) {
        self.p.warn(&format!("model {name}: {message}"));
    }
    fn plugin_skipped(&self, note: &str) {
        self.p.warn(note);
    }
    fn model_failed(&self, name: &str, error: &ServeError) {
        self.p.warn(&format!("model {name} failed to load: {error}"));
    }
    fn ready(&self, models: usize, failed: usize) {
        if models > 0 {
            self.p.note(&format!("ready: {models} model(s) serving, {failed} failed"));
        }
    }
    fn draining(&self) {
        self.p.note("shutting down: draining queued requests");
    }
    fn final_metrics(&self, text: &str) {
        if let Some(f) = &self.final_metrics
            && let Err(e) = tpuport_model::fs::write_atomic_bytes(f, text.as_bytes())
        {
            self.p.warn(&format!("--final-metrics {}: {e}", f.display()));
        }
    }
    fn stopped(&self, dropped: bool) {
        if dropped {
            self.p.warn("drain timeout reached; requests still queued were answered 503");
        }
        self.p.note("stopped");
    }
}

pub(crate) fn run(a: &ServeArgs, g: &GlobalArgs, _p: &Printer) -> anyhow::Result<Status> {
    if a.max_body_mib == 0 || a.max_body_mib > 2047 {
        bail!("--max-body-mib: {} is outside 1..=2047", a.max_body_mib);
    }
    if a.max_connections == 0 {
        bail!("--max-connections: must be at least 1");
    }
    let mut o = ServeOptions::new(a.repository.clone());
    o.bind = SocketAddr::new(a.host, a.port);
    o.plugin.clone_from(&a.plugin);
    if a.no_cache {
        o.cache = None;
    }
    o.models.clone_from(&a.models);
    o.limits.max_body_bytes = a.max_body_mib << 20;
    o.limits.max_connections = a.max_connections;
    o.drain_timeout = Duration::from_secs(a.drain_timeout);
    if let Some(f) = &a.control_token_file {
        let text =
            std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
        let token = text.lines().next().unwrap_or("").trim().to_owned();
        if token.len() < 16 {
            bail!("{}: the control token must be at least 16 characters", f.display());
        }
        o.control_token = Some(token);
    }
    tpuport_serve::serve_blocking(
        o,
        Arc::new(Report { p: Printer::new(g), final_metrics: a.final_metrics.clone() }),
    )?;
    Ok(Status::Success)
}
