//! `tpuport top URL...`: watch `tpuport serve` instances' `/metrics` (and, on a TPU VM,
//! libtpu's runtime metrics): a live terminal view, or `--once` one snapshot, with alarms
//! exit-coded by `--check`. The scraping, the figures and the alarm rules are
//! `tpuport_monitor::{prom, top, libtpu}`; the screen is `top_view`.

use std::time::{Duration, Instant};

use anyhow::bail;
use clap::Args;
use serde::Serialize;
use tpuport_monitor::libtpu::{self, Snapshot};
use tpuport_monitor::prom::{self, Exposition};
use tpuport_monitor::top::{TargetView, Thresholds, Watch};

use crate::cli::{Format, GlobalArgs};
use crate::commands::Status;
use crate::printer::Printer;

/// JSON schema id of `--format json`.
const SCHEMA: &str = "tpuport.top/1";

/// Arguments of `tpuport top`.
#[derive(Debug, Args)]
pub(crate) struct TopArgs {
    /// Metrics endpoints of `tpuport serve`: `http://HOST:PORT/metrics`, or `HOST:PORT`.
    #[arg(required = true, value_name = "URL")]
    pub(crate) urls: Vec<String>,
    /// Take one snapshot, print it and exit.
    #[arg(long)]
    pub(crate) once: bool,
    /// Exit 1 when any alarm was raised (for CI), else 0.
    #[arg(long)]
    pub(crate) check: bool,
    /// Seconds between scrapes.
    #[arg(long, default_value_t = 2.0, value_name = "SECONDS")]
    pub(crate) interval: f64,
    /// Stop after this many seconds (default: until `q`, or forever when not on a terminal).
    #[arg(long, value_name = "SECONDS")]
    pub(crate) duration: Option<f64>,
    /// Alarm when a model's queue keeps growing this many seconds.
    #[arg(long, default_value_t = 30.0, value_name = "SECONDS")]
    pub(crate) queue_growth_seconds: f64,
    /// Alarm when more than this fraction of a model's requests is rejected in an interval.
    #[arg(long, default_value_t = 0.01, value_name = "FRACTION")]
    pub(crate) max_rejection_rate: f64,
    /// Alarm when more than this fraction of a model's requests is refused for its inputs
    /// (wrong dimension, datatype, missing input) in an interval.
    #[arg(long, default_value_t = 0.01, value_name = "FRACTION")]
    pub(crate) max_refusal_rate: f64,
    /// Alarm when padding is more than this fraction of the rows of a model's batches, on
    /// average over an interval.
    #[arg(long, default_value_t = 0.5, value_name = "FRACTION")]
    pub(crate) max_padding_ratio: f64,
    /// libtpu's runtime-metrics service: `auto` (localhost:8431 on a TPU VM), `off`, or
    /// `HOST:PORT`.
    #[arg(long, default_value = "auto", value_name = "ADDR")]
    pub(crate) libtpu: String,
}

/// One target in `--format json`: the figures, the alarms and every parsed sample.
#[derive(Debug, Serialize)]
struct TargetJson {
    #[serde(flatten)]
    view: TargetView,
    metrics: Option<Exposition>,
}

/// `--format json` of one snapshot.
#[derive(Debug, Serialize)]
struct Report {
    schema: &'static str,
    targets: Vec<TargetJson>,
    libtpu: Option<Snapshot>,
    libtpu_error: Option<String>,
    alarms: usize,
}

/// The state the loop carries.
pub(crate) struct Session {
    urls: Vec<String>,
    watch: Watch,
    libtpu: Option<String>,
    started: Instant,
    timeout: Duration,
}

/// One round of scrapes.
pub(crate) struct Round {
    pub(crate) views: Vec<TargetView>,
    pub(crate) metrics: Vec<Option<Exposition>>,
    pub(crate) libtpu: Option<Snapshot>,
    pub(crate) libtpu_error: Option<String>,
}

impl Session {
    pub(crate) fn round(&mut self) -> Round {
        let mut views = Vec::new();
        let mut metrics = Vec::new();
        for url in &self.urls {
            let at = self.started.elapsed().as_secs_f64();
            let scraped = prom::fetch(url, self.timeout)
                .and_then(|body| prom::parse(&body, url))
                .map_err(|e| e.to_string());
            metrics.push(scraped.as_ref().ok().cloned());
            views.push(self.watch.observe(url, at, scraped));
        }
        let (libtpu, libtpu_error) = match &self.libtpu {
            None => (None, None),
            Some(addr) => match libtpu::read(addr, self.timeout) {
                Ok(s) => (Some(s), None),
                Err(e) => (None, Some(e.to_string())),
            },
        };
        Round { views, metrics, libtpu, libtpu_error }
    }
}

fn normalize(url: &str) -> String {
    let with_scheme = if url.contains("://") { url.to_owned() } else { format!("http://{url}") };
    let after = with_scheme.split_once("://").map_or("", |x| x.1);
    if after.contains('/') { with_scheme } else { format!("{with_scheme}/metrics") }
}

/// `auto`: libtpu's default address when this machine has TPU device nodes
/// (`/dev/vfio/N` on v5e and later, `/dev/accelN` before; `tpu-hardware.md` §13).
fn libtpu_addr(arg: &str) -> Option<String> {
    match arg {
        "off" => None,
        "auto" => {
            let tpu = std::path::Path::new("/dev/accel0").exists()
                || std::fs::read_dir("/dev/vfio")
                    .map(|d| d.filter_map(Result::ok).any(|e| e.file_name() != "vfio"))
                    .unwrap_or(false);
            tpu.then(|| libtpu::DEFAULT_ADDR.to_owned())
        }
        addr => Some(addr.to_owned()),
    }
}

pub(crate) fn run(a: &TopArgs, g: &GlobalArgs, p: &Printer) -> anyhow::Result<Status> {
    if !(a.interval.is_finite() && a.interval >= 0.05) {
        bail!("--interval: {} is not a number of seconds >= 0.05", a.interval);
    }
    for (flag, v) in [
        ("--max-rejection-rate", a.max_rejection_rate),
        ("--max-refusal-rate", a.max_refusal_rate),
        ("--max-padding-ratio", a.max_padding_ratio),
    ] {
        if !(0.0..=1.0).contains(&v) {
            bail!("{flag}: {v} is outside 0..=1");
        }
    }
    if !(a.queue_growth_seconds.is_finite() && a.queue_growth_seconds >= 0.0) {
        bail!("--queue-growth-seconds: {} is not a number of seconds", a.queue_growth_seconds);
    }
    if g.format == Format::Sarif {
        bail!("--format sarif is only supported by `tpuport check`");
    }
    let urls: Vec<String> = a.urls.iter().map(|u| normalize(u)).collect();
    for u in &urls {
        if !u.starts_with("http://") {
            bail!("{u}: only http:// URLs are supported");
        }
    }
    let mut s = Session {
        urls,
        watch: Watch::new(Thresholds {
            queue_growth_s: a.queue_growth_seconds,
            max_rejection_rate: a.max_rejection_rate,
            max_refusal_rate: a.max_refusal_rate,
            max_padding_ratio: a.max_padding_ratio,
        }),
        libtpu: libtpu_addr(&a.libtpu),
        started: Instant::now(),
        timeout: Duration::from_secs_f64(a.interval.clamp(1.0, 10.0)),
    };
    let interactive = !a.once
        && g.format == Format::Text
        && std::io::IsTerminal::is_terminal(&std::io::stdout())
        && std::io::IsTerminal::is_terminal(&std::io::stdin());
    let seen = if interactive {
        crate::commands::top_view::run(&mut s, a.interval, a.duration)?
    } else {
        let mut seen = false;
        loop {
            let r = s.round();
            seen |= r.views.iter().any(|v| !v.alarms.is_empty());
            print_round(p, g.format, r)?;
            if a.once || a.duration.is_some_and(|d| s.started.elapsed().as_secs_f64() >= d) {
                break;
            }
            std::thread::sleep(Duration::from_secs_f64(a.interval));
        }
        seen
    };
    Ok(if a.check && seen { Status::Findings } else { Status::Success })
}

fn print_round(p: &Printer, format: Format, r: Round) -> anyhow::Result<()> {
    match format {
        Format::Json => {
            let alarms = r.views.iter().map(|v| v.alarms.len()).sum();
            let targets = r
                .views
                .into_iter()
                .zip(r.metrics)
                .map(|(view, metrics)| TargetJson { view, metrics })
                .collect();
            p.json(&Report {
                schema: SCHEMA,
                targets,
                libtpu: r.libtpu,
                libtpu_error: r.libtpu_error,
                alarms,
            })
        }
        _ => {
            p.data(&tpuport_report::top::render_text(
                &r.views,
                r.libtpu.as_ref(),
                r.libtpu_error.as_deref(),
            ));
            Ok(())
        }
    }
}
