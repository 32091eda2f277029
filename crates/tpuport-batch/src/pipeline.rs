//! The pipeline: decoder threads take windows in part order and read or decode their rows,
//! pad them to a bucket and queue them (bounded); executor threads (several executions in
//! flight) run them on the model; the writer (the calling thread) reassembles each part from
//! its windows, writes it, then records it in the manifest.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use tpuport_exec::Model;
use tpuport_model::DType;

use crate::error::{BatchError, Result};
use crate::image::{ConfigImage, ImageOptions, ImageSpec};
use crate::output::{self, Manifest, PartRecord};
use crate::source::{self, BadRow, Kind, Listing, NpzCache, ReadRows, TensorFile};
use crate::{Progress, Reporter};

/// Where a part's rows come from.
#[derive(Debug)]
pub(crate) enum Src {
    /// Rows of tensor file `plan.tensors[i]`.
    Tensor(usize),
    /// Images `start..end` of the listing.
    Images,
    /// A file that could not be opened: no rows, one error.
    Bad(BadRow),
}

/// One part: a source and a row range.
#[derive(Debug)]
pub(crate) struct Unit {
    pub(crate) src: Src,
    pub(crate) start: u64,
    pub(crate) end: u64,
}

/// Every part of the source, in order.
#[derive(Debug)]
pub(crate) struct Plan {
    pub(crate) units: Vec<Unit>,
    pub(crate) tensors: Vec<TensorFile>,
    pub(crate) spec: Option<ImageSpec>,
    /// Each file's key and length (for the fingerprint).
    pub(crate) files: Vec<(String, u64)>,
}

/// Cuts the source into parts of `part_rows` rows.
pub(crate) fn plan(
    listing: &Listing,
    model: &Model,
    image: &ImageOptions,
    config_image: Option<&ConfigImage>,
    part_rows: usize,
) -> Result<Plan> {
    let files = (0..listing.files.len())
        .map(|i| {
            let len = std::fs::metadata(&listing.files[i]).map_or(0, |m| m.len());
            (listing.key(i), len)
        })
        .collect();
    let step = part_rows as u64;
    let mut units = Vec::new();
    match listing.kind {
        Kind::Images => {
            let [input] = &model.inputs[..] else {
                return Err(BatchError::invalid(
                    "--input",
                    format!(
                        "images feed a model with one input; this one takes {}",
                        model.inputs.len()
                    ),
                ));
            };
            if input.dtype != DType::F32 {
                return Err(BatchError::invalid(
                    "--input",
                    format!("images become f32 rows; input `{}` is {}", input.name, input.dtype),
                ));
            }
            let spec = ImageSpec::resolve(&input.row_shape, image, config_image)
                .map_err(|m| BatchError::invalid(format!("input `{}`", input.name), m))?;
            let n = listing.files.len() as u64;
            let mut s = 0;
            while s < n {
                units.push(Unit { src: Src::Images, start: s, end: (s + step).min(n) });
                s += step;
            }
            Ok(Plan { units, tensors: Vec::new(), spec: Some(spec), files })
        }
        Kind::Tensors => {
            let mut tensors = Vec::new();
            for (i, path) in listing.files.iter().enumerate() {
                match source::open_tensor_file(path, listing.key(i), &model.inputs)? {
                    Ok(f) => {
                        let mut s = 0;
                        while s < f.rows {
                            units.push(Unit {
                                src: Src::Tensor(tensors.len()),
                                start: s,
                                end: (s + step).min(f.rows),
                            });
                            s += step;
                        }
                        tensors.push(f);
                    }
                    Err(reason) => units.push(Unit {
                        src: Src::Bad(BadRow { key: listing.key(i), reason }),
                        start: 0,
                        end: 0,
                    }),
                }
            }
            Ok(Plan { units, tensors, spec: None, files })
        }
    }
}

/// A run over some parts.
pub(crate) struct Job<'a> {
    pub(crate) model: &'a Model,
    pub(crate) listing: &'a Listing,
    pub(crate) plan: &'a Plan,
    /// Parts to write, in order.
    pub(crate) todo: &'a [usize],
    pub(crate) batch: usize,
    pub(crate) out: &'a Path,
    pub(crate) decoders: usize,
    pub(crate) in_flight: usize,
    pub(crate) fail_fast: bool,
    pub(crate) progress_every: Duration,
    pub(crate) format: output::OutputFormat,
}

/// What the run measured.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    pub(crate) parts: usize,
    pub(crate) rows: u64,
    pub(crate) bad_rows: u64,
    pub(crate) batches: u64,
    pub(crate) executed_rows: u64,
    pub(crate) padding_rows: u64,
    pub(crate) seconds: f64,
    pub(crate) busy: Duration,
    pub(crate) starved: Duration,
    pub(crate) decode: Duration,
}

/// One window of a part.
#[derive(Clone, Copy, Debug)]
struct Window {
    /// Index into `todo`.
    pos: usize,
    seq: usize,
    of: usize,
    start: u64,
    end: u64,
}

/// A window read and padded.
struct Decoded {
    w: Window,
    bucket: usize,
    read: ReadRows,
    decode: Duration,
}

/// A window executed: the good rows of every output.
struct Done {
    w: Window,
    outs: Vec<Vec<u8>>,
    keys: Vec<String>,
    bad: Vec<BadRow>,
    padding: u64,
    executed: u64,
    decode: Duration,
}

enum Msg {
    Done(Done),
    Failed(usize, tpuport_pjrt::PjrtError),
}

fn windows_of(u: &Unit, batch: u64) -> usize {
    usize::try_from((u.end - u.start).div_ceil(batch).max(1)).unwrap_or(usize::MAX)
}

/// Hands out windows in part order.
struct Dispatch<'a> {
    job: &'a Job<'a>,
    next: Mutex<(usize, usize)>,
    stop: AtomicBool,
}

impl Dispatch<'_> {
    fn next(&self) -> Option<Window> {
        if self.stop.load(Ordering::Relaxed) {
            return None;
        }
        let mut g = self.next.lock().unwrap_or_else(PoisonError::into_inner);
        let (pos, seq) = *g;
        let &unit = self.job.todo.get(pos)?;
        let u = &self.job.plan.units[unit];
        let b = self.job.batch as u64;
        let of = windows_of(u, b);
        let start = (u.start + seq as u64 * b).min(u.end);
        let end = (start + b).min(u.end);
        *g = if seq + 1 < of { (pos, seq + 1) } else { (pos + 1, 0) };
        Some(Window { pos, seq, of, start, end })
    }
}

/// Time the device was busy and time every executor starved.
struct Clock {
    executors: usize,
    st: Mutex<ClockState>,
}

struct ClockState {
    executing: usize,
    waiting: usize,
    busy_since: Instant,
    starved_since: Instant,
    busy: Duration,
    starved: Duration,
}

impl Clock {
    fn lock(&self) -> std::sync::MutexGuard<'_, ClockState> {
        self.st.lock().unwrap_or_else(PoisonError::into_inner)
    }
    fn wait_start(&self) {
        let mut s = self.lock();
        s.waiting += 1;
        if s.waiting == self.executors {
            s.starved_since = Instant::now();
        }
    }
    /// `counted`: the wait ended with a batch (not with the end of the input).
    fn wait_end(&self, counted: bool) {
        let mut s = self.lock();
        if s.waiting == self.executors && counted {
            let e = s.starved_since.elapsed();
            s.starved += e;
        }
        s.waiting -= 1;
    }
    fn exec_start(&self) {
        let mut s = self.lock();
        if s.executing == 0 {
            s.busy_since = Instant::now();
        }
        s.executing += 1;
    }
    fn exec_end(&self) {
        let mut s = self.lock();
        s.executing -= 1;
        if s.executing == 0 {
            let e = s.busy_since.elapsed();
            s.busy += e;
        }
    }
    fn busy_now(&self) -> Duration {
        let s = self.lock();
        s.busy + if s.executing > 0 { s.busy_since.elapsed() } else { Duration::ZERO }
    }
}

fn decode(job: &Job<'_>, w: Window, cache: &mut NpzCache) -> Decoded {
    let t = Instant::now();
    let unit = &job.plan.units[job.todo[w.pos]];
    let read = match &unit.src {
        Src::Bad(b) => ReadRows {
            inputs: vec![Vec::new(); job.model.inputs.len()],
            keys: Vec::new(),
            bad: vec![b.clone()],
        },
        Src::Tensor(i) => source::read_tensor_rows(
            &job.plan.tensors[*i],
            &job.model.inputs,
            w.start,
            w.end,
            cache,
        ),
        Src::Images => match &job.plan.spec {
            Some(spec) => {
                source::read_image_rows(job.listing, spec, w.start as usize, w.end as usize)
            }
            None => ReadRows::default(),
        },
    };
    let mut read = read;
    let rows = read.keys.len();
    let bucket = job.model.bucket_for(rows.max(1));
    let bucket_rows = job.model.bucket_sizes()[bucket];
    for (buf, sig) in read.inputs.iter_mut().zip(&job.model.inputs) {
        buf.resize(bucket_rows * sig.row_bytes, 0);
    }
    Decoded { w, bucket, read, decode: t.elapsed() }
}

fn execute(model: &Model, clock: &Clock, d: Decoded) -> Msg {
    let rows = d.read.keys.len();
    let Decoded { w, bucket, read, decode } = d;
    if rows == 0 {
        let outs = model.outputs.iter().map(|_| Vec::new()).collect();
        return Msg::Done(Done {
            w,
            outs,
            keys: read.keys,
            bad: read.bad,
            padding: 0,
            executed: 0,
            decode,
        });
    }
    let inputs: Vec<&[u8]> = read.inputs.iter().map(Vec::as_slice).collect();
    clock.exec_start();
    let res = model.execute_bucket(bucket, &inputs);
    clock.exec_end();
    match res {
        Ok(mut outs) => {
            for (o, sig) in outs.iter_mut().zip(&model.outputs) {
                o.truncate(rows * sig.row_bytes);
            }
            let bucket_rows = model.bucket_sizes()[bucket] as u64;
            Msg::Done(Done {
                w,
                outs,
                keys: read.keys,
                bad: read.bad,
                padding: bucket_rows - rows as u64,
                executed: bucket_rows,
                decode,
            })
        }
        Err(e) => Msg::Failed(w.pos, e),
    }
}

fn decoder(job: &Job<'_>, dispatch: &Dispatch<'_>, tx: &SyncSender<Decoded>) {
    let mut cache = NpzCache::default();
    while let Some(w) = dispatch.next() {
        if tx.send(decode(job, w, &mut cache)).is_err() {
            return;
        }
    }
}

fn executor(model: &Model, clock: &Clock, rx: &Mutex<Receiver<Decoded>>, tx: &SyncSender<Msg>) {
    loop {
        clock.wait_start();
        let got = rx.lock().unwrap_or_else(PoisonError::into_inner).recv();
        clock.wait_end(got.is_ok());
        let Ok(d) = got else { return };
        if tx.send(execute(model, clock, d)).is_err() {
            return;
        }
    }
}

/// A part being assembled.
struct Acc {
    got: usize,
    windows: Vec<Option<Done>>,
}

/// Runs `job`, recording each written part in `manifest`.
pub(crate) fn run(job: &Job<'_>, manifest: &mut Manifest, rep: &dyn Reporter) -> Result<Stats> {
    let t0 = Instant::now();
    let dispatch = Dispatch { job, next: Mutex::new((0, 0)), stop: AtomicBool::new(false) };
    let clock = Clock {
        executors: job.in_flight,
        st: Mutex::new(ClockState {
            executing: 0,
            waiting: 0,
            busy_since: t0,
            starved_since: t0,
            busy: Duration::ZERO,
            starved: Duration::ZERO,
        }),
    };
    let rows_total: u64 = job
        .todo
        .iter()
        .map(|&u| {
            let u = &job.plan.units[u];
            (u.end - u.start).max(u64::from(matches!(u.src, Src::Bad(_))))
        })
        .sum();
    let (dtx, drx) = sync_channel::<Decoded>(job.in_flight * 2);
    let (otx, orx) = sync_channel::<Msg>(job.in_flight * 2);
    let drx = Mutex::new(drx);
    let mut stats = Stats::default();
    let result = std::thread::scope(|s| {
        for _ in 0..job.decoders {
            let tx = dtx.clone();
            let d = &dispatch;
            s.spawn(move || decoder(job, d, &tx));
        }
        drop(dtx);
        for _ in 0..job.in_flight {
            let tx = otx.clone();
            let (c, rx) = (&clock, &drx);
            s.spawn(move || executor(job.model, c, rx, &tx));
        }
        drop(otx);
        let r = write_loop(
            job,
            &orx,
            manifest,
            rep,
            &mut stats,
            &clock,
            &dispatch.stop,
            t0,
            rows_total,
        );
        if r.is_err() {
            dispatch.stop.store(true, Ordering::Relaxed);
        }
        // Unblock the threads: drain whatever is still queued until every sender is gone.
        while orx.recv().is_ok() {}
        r
    });
    stats.seconds = t0.elapsed().as_secs_f64();
    stats.busy = clock.busy_now();
    stats.starved = clock.lock().starved;
    result.map(|()| stats)
}

#[allow(clippy::too_many_arguments, reason = "one call site; the pieces of one run")]
fn write_loop(
    job: &Job<'_>,
    rx: &Receiver<Msg>,
    manifest: &mut Manifest,
    rep: &dyn Reporter,
    stats: &mut Stats,
    clock: &Clock,
    stop: &AtomicBool,
    t0: Instant,
    rows_total: u64,
) -> Result<()> {
    let mut acc: BTreeMap<usize, Acc> = BTreeMap::new();
    let mut fail: Option<(usize, usize, BadRow)> = None;
    let mut last = Instant::now();
    let progress = |stats: &Stats| Progress {
        rows: stats.rows,
        bad_rows: stats.bad_rows,
        rows_total,
        parts: stats.parts,
        parts_total: job.todo.len(),
        seconds: t0.elapsed().as_secs_f64(),
        device_busy: clock.busy_now().as_secs_f64() / t0.elapsed().as_secs_f64().max(1e-9),
    };
    let mut shown = None;
    loop {
        if last.elapsed() >= job.progress_every {
            rep.progress(&progress(stats));
            shown = Some((stats.rows, stats.bad_rows, stats.parts));
            last = Instant::now();
        }
        let msg = match rx.recv_timeout(job.progress_every.max(Duration::from_millis(10))) {
            Ok(m) => m,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        let d = match msg {
            Msg::Done(d) => d,
            Msg::Failed(pos, e) => {
                return Err(BatchError::Execute { part: job.todo[pos], source: e });
            }
        };
        stats.decode += d.decode;
        if d.executed > 0 {
            stats.batches += 1;
        }
        stats.executed_rows += d.executed;
        stats.padding_rows += d.padding;
        for b in &d.bad {
            rep.bad_row(b);
        }
        let (pos, seq, of) = (d.w.pos, d.w.seq, d.w.of);
        if job.fail_fast
            && let Some(b) = d.bad.first()
            && fail.as_ref().is_none_or(|f| (pos, seq) < (f.0, f.1))
        {
            // Windows go out in order: every window before this one is already out, so the
            // parts before it still complete, and the first bad row in input order is found.
            stop.store(true, Ordering::Relaxed);
            fail = Some((pos, seq, b.clone()));
        }
        let a = acc
            .entry(pos)
            .or_insert_with(|| Acc { got: 0, windows: (0..of).map(|_| None).collect() });
        a.windows[seq] = Some(d);
        a.got += 1;
        if a.got < of {
            continue;
        }
        let Some(a) = acc.remove(&pos) else { continue };
        if fail.as_ref().is_some_and(|f| pos >= f.0) {
            continue;
        }
        let part = job.todo[pos];
        let done: Vec<Done> = a.windows.into_iter().flatten().collect();
        let mut outs: Vec<Vec<u8>> = job
            .model
            .outputs
            .iter()
            .enumerate()
            .map(|(i, _)| Vec::with_capacity(done.iter().map(|d| d.outs[i].len()).sum()))
            .collect();
        let mut keys = Vec::new();
        let mut bad = Vec::new();
        for d in done {
            for (o, x) in outs.iter_mut().zip(&d.outs) {
                o.extend_from_slice(x);
            }
            keys.extend(d.keys);
            bad.extend(d.bad);
        }
        let files = match job.format {
            output::OutputFormat::Npy => {
                output::write_part(job.out, part, &job.model.outputs, &outs, &keys)?
            }
            output::OutputFormat::Parquet => {
                output::write_part_parquet(job.out, part, &job.model.outputs, &outs, &keys)?
            }
        };
        stats.parts += 1;
        stats.rows += keys.len() as u64;
        stats.bad_rows += bad.len() as u64;
        let rec = PartRecord { part, rows: keys.len() as u64, files, bad };
        let at = manifest.done.partition_point(|p| p.part < part);
        manifest.done.insert(at, rec);
        manifest.write(job.out, &[])?;
    }
    if shown != Some((stats.rows, stats.bad_rows, stats.parts)) {
        rep.progress(&progress(stats));
    }
    if let Some((_, _, b)) = fail {
        manifest.write(job.out, std::slice::from_ref(&b))?;
        return Err(BatchError::BadRow { key: b.key, reason: b.reason });
    }
    Ok(())
}
