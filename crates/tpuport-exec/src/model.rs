//! A loaded model: one executable per bucket (a saved one, else through the executable
//! cache), weights uploaded once as device buffers, and the signature callers see. What a
//! monitoring system counts during the load goes to a [`LoadMetrics`] (`tpuport serve`'s
//! Prometheus registry; [`NoMetrics`] elsewhere).

use std::sync::Arc;
use std::time::Instant;

use tpuport_model::DType;
use tpuport_pjrt::{
    Buffer, CacheStatus, Client, CompileOptions, Device, ExecutableCache, LoadedExecutable,
    PjrtError, Program,
};

use crate::error::{ExecError, Result};
use crate::repo::{ArgPlan, Plan};
use crate::saved::Refusal;
use crate::wire;

/// One input or output as clients see it.
#[derive(Clone, Debug)]
pub struct TensorSig {
    /// Name.
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// Shape of one row (batched models) or of the whole tensor (unbatched).
    pub row_shape: Vec<u64>,
    /// Bytes of one row (or of the whole tensor).
    pub row_bytes: usize,
}

impl TensorSig {
    /// The shape in metadata: `-1` for the batch dimension of a batched model.
    #[must_use]
    pub fn metadata_shape(&self, batched: bool) -> Vec<i64> {
        let mut v: Vec<i64> = if batched { vec![-1] } else { Vec::new() };
        v.extend(self.row_shape.iter().map(|&d| i64::try_from(d).unwrap_or(i64::MAX)));
        v
    }
}

/// What each program argument is, in argument order (the same for every bucket).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    Input(usize),
    Weight(usize),
}

/// One compiled bucket.
#[derive(Debug)]
pub struct Bucket {
    /// Rows (1 for an unbatched model).
    pub rows: usize,
    /// The bucket's label in metrics and in `[executables] files` (`"8"`, `"none"`).
    pub label: String,
    exe: LoadedExecutable,
    /// How the executable was obtained.
    source: ExeSource,
}

/// How a bucket's executable was obtained at load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExeSource {
    /// Deserialized from an executable saved by `tpuport compile --save`.
    Saved,
    /// Deserialized from the executable cache.
    CacheHit,
    /// Compiled.
    Compiled,
}

impl ExeSource {
    /// `saved`, `cache hit`, `compiled`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ExeSource::Saved => "saved",
            ExeSource::CacheHit => "cache hit",
            ExeSource::Compiled => "compiled",
        }
    }
}

/// How a bucket's executable was obtained, as a metrics label: a saved executable, or the
/// executable cache's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheUse {
    /// Loaded from an executable saved by `tpuport compile --save`.
    Saved,
    /// Deserialized from the executable cache.
    Hit,
    /// Compiled and written to the cache.
    Miss,
    /// Compiled without a cache.
    Disabled,
    /// Compiled; writing it to the cache failed.
    WriteFailed,
}

impl CacheUse {
    /// `saved`, `hit`, `miss`, `disabled`, `write_failed`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            CacheUse::Saved => "saved",
            CacheUse::Hit => "hit",
            CacheUse::Miss => "miss",
            CacheUse::Disabled => "disabled",
            CacheUse::WriteFailed => "write_failed",
        }
    }

    /// How the executable was obtained.
    #[must_use]
    pub fn source(self) -> ExeSource {
        match self {
            CacheUse::Saved => ExeSource::Saved,
            CacheUse::Hit => ExeSource::CacheHit,
            CacheUse::Miss | CacheUse::Disabled | CacheUse::WriteFailed => ExeSource::Compiled,
        }
    }
}

/// What [`Model::load`] reports to a monitoring system while it loads. Every method does
/// nothing by default.
pub trait LoadMetrics {
    /// `model` uploaded `bytes` of weights.
    fn weight_bytes(&self, _model: &str, _bytes: usize) {}
    /// Bucket `bucket` (its label) of `model` has its executable, obtained as `cache` says,
    /// after `seconds` (compiling, or loading it).
    fn bucket_ready(&self, _model: &str, _bucket: &str, _cache: CacheUse, _seconds: f64) {}
}

/// Metrics that go nowhere.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoMetrics;

impl LoadMetrics for NoMetrics {}

/// A model ready to execute.
#[derive(Debug)]
pub struct Model {
    /// Name.
    pub name: String,
    /// Version served.
    pub version: String,
    /// Platform string in metadata.
    pub platform: &'static str,
    /// Whether the leading dimension is a batch dimension.
    pub batched: bool,
    /// Inputs.
    pub inputs: Vec<TensorSig>,
    /// Outputs.
    pub outputs: Vec<TensorSig>,
    slots: Vec<Slot>,
    buckets: Vec<Bucket>,
    weights: Vec<Buffer>,
    device: Device,
    client: Client,
    /// Warnings of the load (a stale saved executable compiled instead), for the reporter.
    warnings: Vec<String>,
}

impl Model {
    /// Turns a plan ([`crate::Repository::plan`], or a model opened from a path) into
    /// executables and device buffers on `client`: the weights uploaded once, each bucket's
    /// executable loaded from its saved file or obtained through `cache` (compiled when `None`),
    /// checked against the signature and run once on zeros. `metrics` hears the weight bytes
    /// and each bucket's executable.
    ///
    /// # Errors
    /// Buckets that disagree beyond the batch dimension, a type the protocol has no datatype
    /// for, a config that renames or types the tensors wrongly, a missing weight, a saved
    /// executable that is broken (or stale under `[executables] only`), a compile error, or an
    /// executable whose outputs differ from the signature; each names the model.
    pub fn load(
        plan: Plan,
        client: &Client,
        cache: Option<&ExecutableCache>,
        metrics: &dyn LoadMetrics,
    ) -> Result<Arc<Model>> {
        let name = plan.name.clone();
        let err = |m: String| ExecError::load(&name, m);
        let first = plan.buckets.first().ok_or_else(|| err("no program".into()))?;
        let batched = first.size.is_some();
        // Signature from the first bucket; every other bucket must agree.
        let mut inputs: Vec<TensorSig> = Vec::new();
        let mut weight_names: Vec<String> = Vec::new();
        let mut slots = Vec::new();
        for a in &first.args {
            match &a.what {
                ArgPlan::Input(n) => {
                    let row_shape = row_of(&a.shape, first.size).ok_or_else(|| {
                        err(format!("input `{n}` {:?} has no leading batch dimension", a.shape))
                    })?;
                    slots.push(Slot::Input(inputs.len()));
                    inputs.push(sig(n, a.dtype, row_shape).map_err(&err)?);
                }
                ArgPlan::Weight(n) => {
                    slots.push(Slot::Weight(weight_names.len()));
                    weight_names.push(n.clone());
                }
            }
        }
        let mut outputs = Vec::new();
        for r in &first.results {
            let row_shape = row_of(&r.shape, first.size).ok_or_else(|| {
                err(format!("output `{}` {:?} has no leading batch dimension", r.what, r.shape))
            })?;
            outputs.push(sig(&r.what, r.dtype, row_shape).map_err(&err)?);
        }
        for b in &plan.buckets[1..] {
            let same_args = b.args.len() == first.args.len()
                && b.args.iter().zip(&first.args).all(|(x, y)| {
                    x.what == y.what
                        && x.dtype == y.dtype
                        && row_of(&x.shape, b.size) == row_of(&y.shape, first.size)
                        || matches!(x.what, ArgPlan::Weight(_))
                            && x.what == y.what
                            && x.shape == y.shape
                });
            let same_results = b.results.len() == first.results.len()
                && b.results.iter().zip(&first.results).all(|(x, y)| {
                    x.dtype == y.dtype && row_of(&x.shape, b.size) == row_of(&y.shape, first.size)
                });
            if !same_args || !same_results {
                return Err(err(format!(
                    "{} has another signature than {} beyond the batch dimension",
                    b.origin, first.origin
                )));
            }
        }
        rename(&mut inputs, &plan.cfg.inputs, "input").map_err(&err)?;
        rename(&mut outputs, &plan.cfg.outputs, "output").map_err(&err)?;
        let device = client.devices().into_iter().next().ok_or_else(|| err("no device".into()))?;
        // Weights: uploaded once, in slot order.
        let mut weights = Vec::with_capacity(weight_names.len());
        let mut weight_bytes = 0usize;
        for n in &weight_names {
            let w = plan
                .weights
                .iter()
                .find(|w| &w.name == n)
                .ok_or_else(|| err(format!("weight `{n}` has no data")))?;
            weight_bytes += w.bytes.len();
            weights.push(client.buffer_from_bytes(w.dtype, &w.shape, &w.bytes, &device)?);
        }
        metrics.weight_bytes(&name, weight_bytes);
        drop(plan.weights);
        let mut buckets = Vec::new();
        let mut warnings = Vec::new();
        let running = (!plan.saved.is_empty()).then(|| crate::saved::Running::of(client));
        for b in plan.buckets {
            let label = b.label();
            let t = Instant::now();
            let mut loaded = None;
            if let (Some(file), Some(running)) = (plan.saved.get(&label), &running) {
                match crate::saved::load(client, running, file, &b.program) {
                    Ok(exe) => loaded = Some(exe),
                    Err(Refusal::Stale(why)) if !plan.saved_only => warnings.push(format!(
                        "bucket {label}: {why}; compiling it instead (set [executables] only = true \
                         to refuse)"
                    )),
                    Err(Refusal::Stale(why) | Refusal::Broken(why)) => {
                        return Err(err(format!("bucket {label}: {why}")));
                    }
                }
            }
            let (exe, cache_use) = match loaded {
                Some(exe) => (exe, CacheUse::Saved),
                None => {
                    let program = Program::mlir(b.program);
                    let opts = CompileOptions::default();
                    let (exe, status) = match cache {
                        Some(c) => {
                            let got = c
                                .get_or_compile(client, &program, &opts)
                                .map_err(|e| err(format!("compiling {}: {e}", b.origin)))?;
                            (got.executable, got.status)
                        }
                        None => (
                            client
                                .compile(&program, &opts)
                                .map_err(|e| err(format!("compiling {}: {e}", b.origin)))?,
                            CacheStatus::Disabled,
                        ),
                    };
                    let cache_use = match status {
                        CacheStatus::Hit => CacheUse::Hit,
                        CacheStatus::Miss => CacheUse::Miss,
                        CacheStatus::Disabled => CacheUse::Disabled,
                        CacheStatus::WriteFailed(_) => CacheUse::WriteFailed,
                    };
                    (exe, cache_use)
                }
            };
            metrics.bucket_ready(&name, &label, cache_use, t.elapsed().as_secs_f64());
            let source = cache_use.source();
            let info = exe.executable().outputs()?;
            if info.len() != outputs.len() {
                return Err(err(format!(
                    "{}: the executable has {} outputs, the signature {}",
                    b.origin,
                    info.len(),
                    outputs.len()
                )));
            }
            for (o, sig) in info.iter().zip(&outputs) {
                let mut want: Vec<u64> = b.size.into_iter().collect();
                want.extend_from_slice(&sig.row_shape);
                if o.dtype != sig.dtype || o.dims != want {
                    return Err(err(format!(
                        "{}: output `{}` is {}{:?} in the executable, {}{want:?} in the signature",
                        b.origin, sig.name, o.dtype, o.dims, sig.dtype
                    )));
                }
            }
            let rows =
                usize::try_from(b.size.unwrap_or(1)).map_err(|_| err("bucket too large".into()))?;
            buckets.push(Bucket { rows, label, exe, source });
        }
        let mut model = Model {
            name: plan.name,
            version: plan.cfg.version,
            platform: plan.platform,
            batched,
            inputs,
            outputs,
            slots,
            buckets,
            weights,
            device,
            client: client.clone(),
            warnings,
        };
        model.warm_up();
        Ok(Arc::new(model))
    }
}

/// The row shape of `shape` for bucket `size` (the whole shape when unbatched).
fn row_of(shape: &[u64], size: Option<u64>) -> Option<Vec<u64>> {
    match size {
        None => Some(shape.to_vec()),
        Some(s) => (shape.first() == Some(&s)).then(|| shape[1..].to_vec()),
    }
}

fn sig(name: &str, dtype: DType, row_shape: Vec<u64>) -> Result<TensorSig, String> {
    if wire::name(dtype).is_none() {
        return Err(format!("`{name}` is {dtype}, which the protocol has no datatype for"));
    }
    let elems = row_shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(usize::try_from(d).ok()?))
        .ok_or_else(|| format!("`{name}`: shape {row_shape:?} overflows"))?;
    let row_bytes =
        elems.checked_mul(wire::size(dtype)).ok_or_else(|| format!("`{name}`: too large"))?;
    Ok(TensorSig { name: name.to_owned(), dtype, row_shape, row_bytes })
}

fn rename(
    sigs: &mut [TensorSig],
    cfg: &[crate::config::TensorConfig],
    what: &str,
) -> Result<(), String> {
    if cfg.is_empty() {
        return Ok(());
    }
    if cfg.len() != sigs.len() {
        return Err(format!("config lists {} {what}s, the program has {}", cfg.len(), sigs.len()));
    }
    for (s, c) in sigs.iter_mut().zip(cfg) {
        if let Some(dt) = &c.datatype
            && wire::name(s.dtype) != Some(dt.as_str())
        {
            return Err(format!(
                "{what} `{}` is declared {dt}, the program has {}",
                c.name,
                wire::name(s.dtype).unwrap_or("?")
            ));
        }
        s.name.clone_from(&c.name);
    }
    Ok(())
}

impl Model {
    /// The largest bucket's rows (1 when unbatched).
    #[must_use]
    pub fn max_rows(&self) -> usize {
        self.buckets.last().map_or(1, |b| b.rows)
    }

    /// How each bucket's executable was obtained, in bucket order.
    #[must_use]
    pub fn executable_sources(&self) -> Vec<ExeSource> {
        self.buckets.iter().map(|b| b.source).collect()
    }

    /// Warnings of the load (a stale saved executable that was compiled instead).
    #[must_use]
    pub fn load_warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The buckets, smallest first.
    #[must_use]
    pub fn buckets(&self) -> &[Bucket] {
        &self.buckets
    }

    /// Bucket sizes.
    #[must_use]
    pub fn bucket_sizes(&self) -> Vec<usize> {
        self.buckets.iter().map(|b| b.rows).collect()
    }

    /// The index of the smallest bucket that holds `rows` (the largest when none does).
    #[must_use]
    pub fn bucket_for(&self, rows: usize) -> usize {
        self.buckets.iter().position(|b| b.rows >= rows).unwrap_or(self.buckets.len() - 1)
    }

    /// Runs bucket `bucket` (an index into [`Model::bucket_sizes`]) on one host buffer per
    /// input, each holding exactly the bucket's rows (the caller pads), and returns one host
    /// buffer per output holding the bucket's rows. Uploads the inputs, executes with the
    /// weights already on the device, downloads the outputs. Several threads may call it at
    /// once: each call is one execution in flight.
    ///
    /// # Errors
    /// A bucket index out of range or an input of the wrong length ([`PjrtError::InvalidArgument`]),
    /// or the runtime's failure.
    pub fn execute_bucket(
        &self,
        bucket: usize,
        inputs: &[&[u8]],
    ) -> Result<Vec<Vec<u8>>, PjrtError> {
        let b = self.buckets.get(bucket).ok_or_else(|| {
            PjrtError::InvalidArgument(format!("model `{}` has no bucket #{bucket}", self.name))
        })?;
        if inputs.len() != self.inputs.len() {
            return Err(PjrtError::InvalidArgument(format!(
                "model `{}` takes {} inputs, got {}",
                self.name,
                self.inputs.len(),
                inputs.len()
            )));
        }
        for (x, sig) in inputs.iter().zip(&self.inputs) {
            if x.len() != b.rows * sig.row_bytes {
                return Err(PjrtError::InvalidArgument(format!(
                    "input `{}`: {} bytes, the bucket of {} rows takes {}",
                    sig.name,
                    x.len(),
                    b.rows,
                    b.rows * sig.row_bytes
                )));
            }
        }
        self.execute_rows(b, inputs)
    }

    /// Runs every bucket once on zeros before the model turns ready. The first execution of an
    /// XLA:CPU executable costs more than the later ones (a text classifier from a PyPI wheel,
    /// 3x48x192 input: 39 ms against 3 ms at bucket 1, 38 against 14 ms at bucket 8), which
    /// the first requests would otherwise pay against their deadline. A bucket that fails here
    /// is reported as a warning; requests will meet the same error.
    fn warm_up(&mut self) {
        let mut failed = Vec::new();
        for b in &self.buckets {
            let zeros: Vec<Vec<u8>> =
                self.inputs.iter().map(|s| vec![0; b.rows * s.row_bytes]).collect();
            let refs: Vec<&[u8]> = zeros.iter().map(Vec::as_slice).collect();
            if let Err(e) = self.execute_rows(b, &refs) {
                failed.push(format!("bucket {}: a warm-up run on zeros failed: {e}", b.label));
            }
        }
        self.warnings.extend(failed);
    }

    /// [`Model::execute_bucket`] once the lengths are known to fit.
    fn execute_rows(&self, bucket: &Bucket, inputs: &[&[u8]]) -> Result<Vec<Vec<u8>>, PjrtError> {
        let mut bufs = Vec::with_capacity(self.inputs.len());
        for (bytes, sig) in inputs.iter().zip(&self.inputs) {
            let mut dims = Vec::with_capacity(sig.row_shape.len() + 1);
            if self.batched {
                dims.push(bucket.rows as u64);
            }
            dims.extend_from_slice(&sig.row_shape);
            bufs.push(self.client.buffer_from_bytes(sig.dtype, &dims, bytes, &self.device)?);
        }
        let args: Vec<&Buffer> = self
            .slots
            .iter()
            .map(|s| match *s {
                Slot::Input(i) => &bufs[i],
                Slot::Weight(w) => &self.weights[w],
            })
            .collect();
        let outs = bucket.exe.execute_one(&args)?;
        outs.iter()
            .zip(&self.outputs)
            .map(|(o, sig)| {
                let data = o.to_host()?.into_data();
                // Checked at load; kept so a plugin surprise fails the batch, not the caller.
                if data.len() != bucket.rows * sig.row_bytes {
                    return Err(PjrtError::InvalidArgument(format!(
                        "output `{}`: {} bytes, expected {}",
                        sig.name,
                        data.len(),
                        bucket.rows * sig.row_bytes
                    )));
                }
                Ok(data)
            })
            .collect()
    }

    /// The PJRT platform the model runs on (`cpu`, `tpu`, …).
    #[must_use]
    pub fn platform_name(&self) -> &str {
        self.client.platform_name()
    }
}
