//! A loaded model: one executable per bucket (through the executable cache), weights uploaded
//! once as device buffers, and the signature clients see.

use std::sync::Arc;
use std::time::Instant;

use tpuport_model::DType;
use tpuport_pjrt::{
    Buffer, CacheStatus, Client, CompileOptions, Device, LoadedExecutable, PjrtError, Program,
};

use crate::error::{InferError, ServeError};
use crate::metrics::{Registry, names};
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
pub(crate) struct Bucket {
    /// Rows (1 for an unbatched model).
    pub(crate) rows: usize,
    pub(crate) label: String,
    pub(crate) exe: LoadedExecutable,
    /// How the executable was obtained.
    pub(crate) source: ExeSource,
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
    pub(crate) slots: Vec<Slot>,
    pub(crate) buckets: Vec<Bucket>,
    pub(crate) weights: Vec<Buffer>,
    pub(crate) device: Device,
    pub(crate) client: Client,
    /// Warnings of the load (a stale saved executable compiled instead), for the reporter.
    pub(crate) warnings: Vec<String>,
}

/// Turns a plan into executables and device buffers.
pub(crate) fn load(
    plan: Plan,
    client: &Client,
    cache: Option<&tpuport_pjrt::ExecutableCache>,
    metrics: &Registry,
) -> Result<Arc<Model>, ServeError> {
    let name = plan.name.clone();
    let err = |m: String| ServeError::model(&name, m);
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
    metrics.gauge(names::WEIGHT_BYTES, &[&name]).set(i64::try_from(weight_bytes).unwrap_or(0));
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
        let (exe, status, source) = match loaded {
            Some(exe) => (exe, "saved", ExeSource::Saved),
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
                let (status, source) = match status {
                    CacheStatus::Hit => ("hit", ExeSource::CacheHit),
                    CacheStatus::Miss => ("miss", ExeSource::Compiled),
                    CacheStatus::Disabled => ("disabled", ExeSource::Compiled),
                    CacheStatus::WriteFailed(_) => ("write_failed", ExeSource::Compiled),
                };
                (exe, status, source)
            }
        };
        metrics.counter(names::COMPILE_CACHE, &[&name, status]).inc();
        let compiles = metrics.counter(names::COMPILES, &[&name]);
        if source == ExeSource::Compiled {
            compiles.inc();
        }
        let secs = t.elapsed().as_secs_f64();
        metrics
            .gauge(names::COMPILE_SECONDS, &[&name, &label])
            .set(i64::try_from((secs.ceil()) as u64).unwrap_or(0));
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
    pub(crate) fn execute_rows(
        &self,
        bucket: &Bucket,
        inputs: &[&[u8]],
    ) -> Result<Vec<Vec<u8>>, PjrtError> {
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

    /// Checks one request input against the signature before any data is decoded; returns
    /// the input's index, its row count and its element count.
    ///
    /// # Errors
    /// Unknown name, wrong datatype or shape, or a size past `max_bytes`.
    pub fn check_input(
        &self,
        name: &str,
        datatype: &str,
        shape: &[i64],
        max_bytes: usize,
    ) -> Result<(usize, usize, usize), InferError> {
        let idx = self.inputs.iter().position(|s| s.name == name).ok_or_else(|| {
            let names: Vec<&str> = self.inputs.iter().map(|s| s.name.as_str()).collect();
            InferError::invalid(format!(
                "model `{}` has no input `{name}`; inputs: {}",
                self.name,
                names.join(", ")
            ))
        })?;
        let s = &self.inputs[idx];
        let want = wire::name(s.dtype).unwrap_or("?");
        if datatype != want {
            return Err(InferError::invalid(format!(
                "input `{name}`: datatype {datatype}, the model takes {want}"
            )));
        }
        let dims: Vec<u64> =
            shape.iter().map(|&d| u64::try_from(d)).collect::<Result<_, _>>().map_err(|_| {
                InferError::invalid(format!("input `{name}`: negative dimension in {shape:?}"))
            })?;
        let (rows, row) = if self.batched {
            match dims.split_first() {
                Some((&n, rest)) => (n, rest),
                None => (0, &[][..]),
            }
        } else {
            (1, &dims[..])
        };
        if row != s.row_shape.as_slice() || (self.batched && dims.is_empty()) {
            let want_shape = s.metadata_shape(self.batched);
            return Err(InferError::invalid(format!(
                "input `{name}`: shape {shape:?}, the model takes {want_shape:?}"
            )));
        }
        if rows == 0 {
            return Err(InferError::invalid(format!("input `{name}`: batch size 0")));
        }
        let rows = usize::try_from(rows).map_err(|_| too_large(name))?;
        let bytes = rows.checked_mul(s.row_bytes).ok_or_else(|| too_large(name))?;
        if bytes > max_bytes {
            return Err(InferError::invalid(format!(
                "input `{name}`: shape {shape:?} claims {bytes} bytes, over the {max_bytes}-byte limit"
            )));
        }
        Ok((idx, rows, bytes / wire::size(s.dtype)))
    }
}

fn too_large(name: &str) -> InferError {
    InferError::invalid(format!("input `{name}`: the shape's size overflows"))
}
