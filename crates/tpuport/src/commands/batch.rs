//! `tpuport batch MODEL --input SRC --output DST`: offline batch inference. This file parses
//! flags and shows progress; the pipeline is `tpuport-batch`.

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::bail;
use clap::{Args, ValueEnum};
use tpuport_batch::EnvVars;
use tpuport_batch::{
    BadRow, BatchOptions, ImageOptions, Layout, Loaded, OutputFormat, Progress, Reporter, Shard,
};

use crate::cli::GlobalArgs;
use crate::commands::Status;
use crate::printer::Printer;

/// Image layout flag.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum LayoutArg {
    /// `[3, H, W]`.
    Nchw,
    /// `[H, W, 3]`.
    Nhwc,
}

/// Output format flag.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum OutputFormatArg {
    /// `part-P.<output>.npy` and `part-P.keys.json`.
    Npy,
    /// `part-P.parquet`.
    Parquet,
}

/// Arguments of `tpuport batch`.
#[derive(Debug, Args)]
pub(crate) struct BatchArgs {
    /// The model: a `tpuport lower` folder, a model-repository entry (a folder with
    /// `config.toml`), a StableHLO module, or an ONNX model (lowered at `--buckets`).
    pub(crate) model: PathBuf,
    /// Input: a folder (walked), a file, or a glob (`shards/*.npy`) of `.npy`, `.npz` or
    /// safetensors shards (rows along the leading dimension), or of JPEG/PNG images.
    #[arg(long, short = 'i', value_name = "SRC")]
    pub(crate) input: PathBuf,
    /// Output folder: `part-NNNNN.<output>.npy` and `.keys.json` per part, a manifest, an
    /// errors file.
    #[arg(long, short = 'o', value_name = "DIR")]
    pub(crate) output: PathBuf,
    /// Rows per execution: one of the model's buckets (default: the largest).
    #[arg(long, value_name = "N")]
    pub(crate) batch: Option<usize>,
    /// Buckets to lower an ONNX model at, e.g. `1,8` (default 8).
    #[arg(long, value_delimiter = ',', value_name = "N,…")]
    pub(crate) buckets: Vec<u64>,
    /// The data arguments of a StableHLO module that takes its weights as arguments, by
    /// position or name (`3`, `x`, `%arg3`); every other argument is read from
    /// `<module>.safetensors` or `weights.safetensors` next to it. Without it, the argument
    /// roles of `tpuport audit` decide.
    #[arg(long = "data-args", value_name = "ARG,...", value_delimiter = ',')]
    pub(crate) data_args: Vec<String>,
    /// Rows per output part (rounded up to a multiple of the batch).
    #[arg(long, default_value_t = 1024, value_name = "N")]
    pub(crate) rows_per_part: usize,
    /// Image height and width, `224` or `224x224` (must match the model's input). This and the
    /// three image flags below override the `[image]` table of a model-repository entry's
    /// `config.toml`, field by field.
    #[arg(long, value_name = "H[xW]", value_parser = parse_size)]
    pub(crate) image_size: Option<(u32, u32)>,
    /// Per-channel mean subtracted after scaling pixels to [0, 1], e.g. `0.485,0.456,0.406`
    /// (default: the config's `[image] mean`, else 0).
    #[arg(long, value_name = "R,G,B", value_parser = parse_rgb)]
    pub(crate) mean: Option<[f32; 3]>,
    /// Per-channel standard deviation divided by, e.g. `0.229,0.224,0.225` (default: the
    /// config's `[image] std`, else 1).
    #[arg(long, value_name = "R,G,B", value_parser = parse_rgb)]
    pub(crate) std: Option<[f32; 3]>,
    /// How parts are written: `.npy` per output plus a keys file, or one Parquet file with a
    /// `key` column and a list column per output.
    #[arg(long, value_enum, default_value_t = OutputFormatArg::Npy)]
    pub(crate) output_format: OutputFormatArg,
    /// Image layout (default: the config's `[image] layout`, else from the model's input
    /// shape).
    #[arg(long, value_enum)]
    pub(crate) layout: Option<LayoutArg>,
    /// This process's shard (default: the Indexed Job's completion index, else 0).
    #[arg(long, env = EnvVars::JOB_COMPLETION_INDEX, value_name = "I")]
    pub(crate) shard_index: Option<usize>,
    /// Number of shards; part P goes to shard P mod N.
    #[arg(long, env = EnvVars::TPUPORT_SHARD_COUNT, value_name = "N")]
    pub(crate) shard_count: Option<usize>,
    /// Skip the parts the manifest lists as done (the default when a manifest exists).
    #[arg(long, conflicts_with = "restart")]
    pub(crate) resume: bool,
    /// Ignore an existing manifest and write every part again.
    #[arg(long)]
    pub(crate) restart: bool,
    /// Stop at the first bad row (default: record it in the errors file and go on).
    #[arg(long)]
    pub(crate) fail_fast: bool,
    /// Decoder threads (default: one per core).
    #[arg(long, value_name = "N")]
    pub(crate) decoders: Option<usize>,
    /// Executions in flight at once.
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub(crate) in_flight: usize,
    /// Seconds between progress lines on stderr.
    #[arg(long, default_value_t = 5.0, value_name = "SECONDS")]
    pub(crate) progress_every: f64,
    /// PJRT plugin library (default: discovery as for `tpuport run`).
    #[arg(long, value_name = "PATH")]
    pub(crate) plugin: Option<PathBuf>,
    /// Compile every bucket instead of using the executable cache.
    #[arg(long)]
    pub(crate) no_cache: bool,
}

fn parse_size(s: &str) -> Result<(u32, u32), String> {
    let (h, w) = s.split_once(['x', 'X']).unwrap_or((s, s));
    let p = |v: &str| v.trim().parse::<u32>().map_err(|_| format!("`{v}` is not a size"));
    let (h, w) = (p(h)?, p(w)?);
    if h == 0 || w == 0 {
        return Err("sizes must be at least 1".to_owned());
    }
    Ok((h, w))
}

fn parse_rgb(s: &str) -> Result<[f32; 3], String> {
    let v: Vec<f32> = s
        .split(',')
        .map(|x| x.trim().parse::<f32>().map_err(|_| format!("`{x}` is not a number")))
        .collect::<Result<_, _>>()?;
    match v[..] {
        [r, g, b] => Ok([r, g, b]),
        [x] => Ok([x; 3]),
        _ => Err("give one value or three (R,G,B)".to_owned()),
    }
}

/// Progress on stderr: a line rewritten in place on a terminal, a plain line otherwise.
struct Report<'a> {
    p: &'a Printer,
    terminal: bool,
    quiet: bool,
    /// Bad rows reported so far (only the first [`SHOWN_BAD_ROWS`] are shown).
    bad: std::sync::atomic::AtomicUsize,
}

/// Bad rows shown on stderr; the errors file has all of them.
const SHOWN_BAD_ROWS: usize = 20;

fn secs(s: f64) -> String {
    if s >= 3600.0 {
        format!("{}h{:02}m", (s / 3600.0) as u64, ((s % 3600.0) / 60.0) as u64)
    } else if s >= 60.0 {
        format!("{}m{:02}s", (s / 60.0) as u64, (s % 60.0) as u64)
    } else {
        format!("{s:.0}s")
    }
}

impl Reporter for Report<'_> {
    fn plugin_skipped(&self, note: &str) {
        self.p.warn(note);
    }
    fn loaded(&self, m: &Loaded) {
        if !self.quiet {
            self.p.note(&format!(
                "model {} loaded on {}: buckets {:?}, batch {}, {:.1} s",
                m.name, m.platform, m.buckets, m.batch, m.load_seconds
            ));
        }
    }
    fn resumed(&self, done: usize, total: usize) {
        if !self.quiet {
            self.p.note(&format!("resuming: {done} of {total} part(s) already done"));
        }
    }
    fn progress(&self, pr: &Progress) {
        if self.quiet {
            return;
        }
        let done = pr.rows + pr.bad_rows;
        let eta = pr.eta_seconds().map_or_else(|| "?".to_owned(), secs);
        if self.terminal {
            let width = 24usize;
            let frac = if pr.rows_total > 0 { done as f64 / pr.rows_total as f64 } else { 1.0 };
            let filled = ((frac * width as f64) as usize).min(width);
            let bar = format!("{}{}", "#".repeat(filled), "-".repeat(width - filled));
            let mut err = std::io::stderr().lock();
            let _ = std::io::Write::write_fmt(
                &mut err,
                format_args!(
                    "\r[{bar}] {done}/{} rows, {:.0} rows/s, ETA {eta}, device busy {:.0} %   ",
                    pr.rows_total,
                    pr.rows_per_second(),
                    pr.device_busy * 100.0
                ),
            );
            if done >= pr.rows_total {
                let _ = std::io::Write::write_all(&mut err, b"\n");
            }
        } else {
            self.p.note(&format!(
                "progress: {done}/{} rows ({} bad), parts {}/{}, {:.1} rows/s, ETA {eta}, device busy {:.0} %",
                pr.rows_total,
                pr.bad_rows,
                pr.parts,
                pr.parts_total,
                pr.rows_per_second(),
                pr.device_busy * 100.0
            ));
        }
    }
    fn bad_row(&self, b: &BadRow) {
        let n = self.bad.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if n < SHOWN_BAD_ROWS {
            self.p.warn(&format!("skipped {}: {}", b.key, b.reason));
        } else if n == SHOWN_BAD_ROWS {
            self.p.warn("more rows skipped; the errors file lists every one");
        }
    }
}

pub(crate) fn run(a: &BatchArgs, g: &GlobalArgs, p: &Printer) -> anyhow::Result<Status> {
    if !(a.progress_every > 0.0 && a.progress_every < 1e6) {
        bail!("--progress-every: {} is not a positive number of seconds", a.progress_every);
    }
    let count = a.shard_count.unwrap_or(1);
    let index = a.shard_index.unwrap_or(0);
    if count == 0 || index >= count {
        bail!("--shard-index {index} is outside 0..{count} (--shard-count {count})");
    }
    let mut o = BatchOptions::new(a.model.clone(), a.input.clone(), a.output.clone());
    o.buckets.clone_from(&a.buckets);
    o.data_args.clone_from(&a.data_args);
    o.batch = a.batch;
    o.rows_per_part = a.rows_per_part;
    o.image = ImageOptions {
        size: a.image_size,
        mean: a.mean,
        std: a.std,
        layout: a.layout.map(|l| match l {
            LayoutArg::Nchw => Layout::Nchw,
            LayoutArg::Nhwc => Layout::Nhwc,
        }),
    };
    o.shard = Shard { index, count };
    o.restart = a.restart;
    o.fail_fast = a.fail_fast;
    o.decoders = a.decoders.unwrap_or(0);
    o.in_flight = a.in_flight;
    o.plugin.clone_from(&a.plugin);
    if a.no_cache {
        o.cache = None;
    }
    o.progress_every = Duration::from_secs_f64(a.progress_every);
    o.format = match a.output_format {
        OutputFormatArg::Npy => OutputFormat::Npy,
        OutputFormatArg::Parquet => OutputFormat::Parquet,
    };
    let rep = Report {
        p,
        terminal: std::io::stderr().is_terminal(),
        quiet: g.quiet,
        bad: std::sync::atomic::AtomicUsize::new(0),
    };
    let summary = tpuport_batch::run(&o, &rep)?;
    super::emit_report(p, g.format, &summary, || tpuport_report::batch::render(&summary))?;
    Ok(Status::Success)
}
