//! [`run`]: the model opened through `tpuport-exec`, the input listed and planned into parts,
//! the pipeline run over the parts this shard owns and not yet done, the summary returned.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::image::{ConfigImage, ImageOptions};
use crate::output::{self, Manifest, OutputFormat};
use crate::source::{self, BadRow};
use crate::{BatchError, Loaded, Result, SCHEMA, Shard, Summary, pipeline};

/// What to run.
#[derive(Clone, Debug)]
pub struct BatchOptions {
    /// The model: a `tpuport lower` folder, a model-repository entry, StableHLO, or ONNX.
    pub model: PathBuf,
    /// The source: a folder, a file or a glob.
    pub input: PathBuf,
    /// The output folder (created).
    pub output: PathBuf,
    /// Buckets to lower an ONNX model at (default `[8]`).
    pub buckets: Vec<u64>,
    /// The data arguments of a StableHLO module (`--data-args`, by position or name); empty:
    /// the argument roles decide (see `tpuport_exec::OpenOptions::data_args`).
    pub data_args: Vec<String>,
    /// Rows per execution: one of the model's buckets (default the largest).
    pub batch: Option<usize>,
    /// Rows per output part (rounded up to a multiple of the batch).
    pub rows_per_part: usize,
    /// Image decoding (image sources only): each field set overrides the `[image]` table of
    /// a model-repository entry's `config.toml`, which fills the fields left unset.
    pub image: ImageOptions,
    /// This process's shard.
    pub shard: Shard,
    /// Ignore an existing manifest and write every part again.
    pub restart: bool,
    /// Stop at the first bad row instead of recording it and going on.
    pub fail_fast: bool,
    /// Decoder threads (0: one per core).
    pub decoders: usize,
    /// Executions in flight at once (at least 1; 2 keeps the device fed while one downloads).
    pub in_flight: usize,
    /// PJRT plugin (default: discovery).
    pub plugin: Option<PathBuf>,
    /// Executable cache (`None`: compile every bucket).
    pub cache: Option<tpuport_pjrt::ExecutableCache>,
    /// How often [`Reporter::progress`] is called.
    pub progress_every: Duration,
    /// How parts are written.
    pub format: OutputFormat,
}

impl BatchOptions {
    /// Defaults for `model`, `input` and `output`.
    #[must_use]
    pub fn new(model: PathBuf, input: PathBuf, output: PathBuf) -> BatchOptions {
        BatchOptions {
            model,
            input,
            output,
            buckets: Vec::new(),
            data_args: Vec::new(),
            batch: None,
            rows_per_part: 1024,
            image: ImageOptions::default(),
            shard: Shard::default(),
            restart: false,
            fail_fast: false,
            decoders: 0,
            in_flight: 2,
            plugin: None,
            cache: Some(tpuport_pjrt::ExecutableCache::default_location()),
            progress_every: Duration::from_secs(5),
            format: OutputFormat::Npy,
        }
    }
}

/// Progress so far (this run, this shard).
#[derive(Clone, Debug, Serialize)]
pub struct Progress {
    /// Rows written.
    pub rows: u64,
    /// Rows refused.
    pub bad_rows: u64,
    /// Rows this run has to do (good and bad).
    pub rows_total: u64,
    /// Parts written.
    pub parts: usize,
    /// Parts this run has to write.
    pub parts_total: usize,
    /// Seconds since the pipeline started.
    pub seconds: f64,
    /// Fraction of the time at least one execution was in flight.
    pub device_busy: f64,
}

impl Progress {
    /// Rows (good and bad) per second.
    #[must_use]
    pub fn rows_per_second(&self) -> f64 {
        if self.seconds > 0.0 { (self.rows + self.bad_rows) as f64 / self.seconds } else { 0.0 }
    }

    /// Estimated seconds left, when a rate is known.
    #[must_use]
    pub fn eta_seconds(&self) -> Option<f64> {
        let rate = self.rows_per_second();
        (rate > 0.0)
            .then(|| (self.rows_total.saturating_sub(self.rows + self.bad_rows)) as f64 / rate)
    }
}

/// Where a run reports (the library never prints).
pub trait Reporter: Send + Sync {
    /// A PJRT plugin found before the one used could not make a client here (libtpu without a
    /// TPU): one line naming both.
    fn plugin_skipped(&self, _note: &str) {}
    /// The model is ready.
    fn loaded(&self, _: &Loaded) {}
    /// `done` of `total` parts of this shard were already complete (resume).
    fn resumed(&self, _done: usize, _total: usize) {}
    /// Called every [`BatchOptions::progress_every`] while running.
    fn progress(&self, _: &Progress) {}
    /// A row was refused (recorded in the errors file).
    fn bad_row(&self, _: &BadRow) {}
}

/// A reporter that drops everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct Silent;

impl Reporter for Silent {}

/// Runs `opts`.
///
/// # Errors
/// The model or input cannot be opened, a manifest from another run, a failed execution or
/// write, or (with `fail_fast`) the first bad row. Completed parts stay written and listed.
pub fn run(opts: &BatchOptions, rep: &dyn Reporter) -> Result<Summary> {
    if opts.shard.count == 0 || opts.shard.index >= opts.shard.count {
        return Err(BatchError::invalid(
            "--shard-index",
            format!("{} is outside 0..{}", opts.shard.index, opts.shard.count),
        ));
    }
    if opts.rows_per_part == 0 {
        return Err(BatchError::invalid("--rows-per-part", "must be at least 1"));
    }
    let listing = source::list(&opts.input)?;
    let config_image = ConfigImage::of_model(&opts.model)?;
    let t = Instant::now();
    let (client, skipped) = tpuport_exec::client(opts.plugin.as_deref())?;
    for note in &skipped {
        rep.plugin_skipped(note);
    }
    let open = tpuport_exec::OpenOptions {
        buckets: opts.buckets.clone(),
        plugin: opts.plugin.clone(),
        cache: opts.cache.clone(),
        data_args: opts.data_args.clone(),
    };
    let model = tpuport_exec::open_model(&opts.model, &client, &open)?;
    if !model.batched {
        return Err(BatchError::invalid(
            opts.model.display().to_string(),
            "the model has no batch dimension to fill",
        ));
    }
    let sizes = model.bucket_sizes();
    let batch = opts.batch.unwrap_or_else(|| model.max_rows());
    if !sizes.contains(&batch) {
        return Err(BatchError::invalid(
            "--batch",
            format!("{batch} is not one of the model's buckets {sizes:?}"),
        ));
    }
    let loaded = Loaded {
        name: model.name.clone(),
        platform: model.platform_name().to_owned(),
        buckets: sizes,
        batch,
        load_seconds: t.elapsed().as_secs_f64(),
    };
    rep.loaded(&loaded);
    let part_rows = opts.rows_per_part.div_ceil(batch) * batch;
    let plan = pipeline::plan(&listing, &model, &opts.image, config_image.as_ref(), part_rows)?;
    let fingerprint = fingerprint(opts, &model, &plan, batch, part_rows);
    std::fs::create_dir_all(&opts.output).map_err(|e| BatchError::io(&opts.output, e))?;
    output::remove_stale_temporaries(&opts.output, opts.shard.index, opts.shard.count);
    let (mname, ename) = output::shard_files(opts.shard.index, opts.shard.count);
    let mpath = opts.output.join(&mname);
    let mine: Vec<usize> =
        (0..plan.units.len()).filter(|u| u % opts.shard.count == opts.shard.index).collect();
    let mut manifest = match Manifest::read(&mpath)? {
        Some(m) if !opts.restart => {
            if m.fingerprint != fingerprint {
                return Err(BatchError::Manifest {
                    path: mpath,
                    message: "written by a run with another model, input, batch, part size or \
                              image spec; use --restart to write the parts again, or another \
                              --output"
                        .to_owned(),
                });
            }
            m
        }
        _ => Manifest {
            schema: output::MANIFEST_SCHEMA.to_owned(),
            fingerprint,
            shard_index: opts.shard.index,
            shard_count: opts.shard.count,
            parts: mine.len(),
            done: Vec::new(),
        },
    };
    let skipped = manifest.done.len();
    if skipped > 0 {
        rep.resumed(skipped, mine.len());
    }
    let todo: Vec<usize> =
        mine.into_iter().filter(|u| !manifest.done.iter().any(|d| d.part == *u)).collect();
    let decoders = if opts.decoders == 0 {
        std::thread::available_parallelism().map_or(2, std::num::NonZero::get)
    } else {
        opts.decoders
    };
    let in_flight = opts.in_flight.max(1);
    let job = pipeline::Job {
        model: &model,
        listing: &listing,
        plan: &plan,
        todo: &todo,
        batch,
        out: &opts.output,
        decoders,
        in_flight,
        fail_fast: opts.fail_fast,
        progress_every: opts.progress_every,
        format: opts.format,
    };
    let stats = pipeline::run(&job, &mut manifest, rep)?;
    let secs = stats.seconds;
    Ok(Summary {
        schema: SCHEMA,
        model: loaded,
        output: opts.output.clone(),
        shard: opts.shard,
        parts: manifest.parts,
        parts_skipped: skipped,
        parts_written: stats.parts,
        rows: stats.rows,
        bad_rows: stats.bad_rows,
        batches: stats.batches,
        padding_waste: if stats.executed_rows > 0 {
            stats.padding_rows as f64 / stats.executed_rows as f64
        } else {
            0.0
        },
        seconds: secs,
        rows_per_second: if secs > 0.0 { stats.rows as f64 / secs } else { 0.0 },
        device_busy: if secs > 0.0 { stats.busy.as_secs_f64() / secs } else { 0.0 },
        input_wait: if secs > 0.0 { stats.starved.as_secs_f64() / secs } else { 0.0 },
        decode_seconds: stats.decode.as_secs_f64(),
        decoders,
        in_flight,
        manifest: mpath,
        errors_file: opts.output.join(ename),
    })
}

/// Hash of everything that decides the bytes of the parts.
fn fingerprint(
    opts: &BatchOptions,
    model: &tpuport_exec::Model,
    plan: &pipeline::Plan,
    batch: usize,
    part_rows: usize,
) -> String {
    let mut h = Sha256::new();
    let model_path = opts.model.canonicalize().unwrap_or_else(|_| opts.model.clone());
    h.update(model_path.to_string_lossy().as_bytes());
    for s in model.inputs.iter().chain(&model.outputs) {
        h.update(format!("{}:{}:{:?};", s.name, s.dtype, s.row_shape).as_bytes());
    }
    h.update(
        format!("{:?};{batch};{part_rows};{:?};", model.bucket_sizes(), opts.format).as_bytes(),
    );
    if let Some(spec) = &plan.spec {
        h.update(serde_json::to_string(spec).unwrap_or_default().as_bytes());
    }
    for (key, len) in &plan.files {
        h.update(format!("{key}\0{len}\0").as_bytes());
    }
    hex::encode(h.finalize())
}

/// The manifest path of a shard in `output`.
#[must_use]
pub fn manifest_path(output: &Path, shard: Shard) -> PathBuf {
    output.join(output::shard_files(shard.index, shard.count).0)
}
