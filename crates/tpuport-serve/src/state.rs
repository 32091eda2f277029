//! Shared server state: the models, readiness, metrics, and the protocol-neutral infer path
//! both front ends call.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, PoisonError, RwLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tpuport_pjrt::Client;

use crate::batcher::{Batcher, Item, Knobs, Unclaimed};
use crate::config::ServeOptions;
use crate::drift::{Drift, Refusal};
use crate::error::{ErrorKind, InferError, ServeError};
use crate::metrics::{Counter, Registry, names};
use tpuport_exec::Model;
use tpuport_exec::Repository;

/// Start-up and shutdown events, for the caller to show (the library never prints).
pub trait Reporter: Send + Sync {
    /// The listener is bound.
    fn listening(&self, addr: std::net::SocketAddr);
    /// A model loaded: its buckets and how long loading took.
    fn model_loaded(&self, model: &Model, seconds: f64);
    /// Something about a model's load the operator should know (a stale saved executable
    /// compiled instead); the model loads.
    fn model_warning(&self, _name: &str, _message: &str) {}
    /// A PJRT plugin found before the one used could not make a client here (libtpu without a
    /// TPU): one line naming both.
    fn plugin_skipped(&self, _note: &str) {}
    /// A model failed to load; the others still serve.
    fn model_failed(&self, name: &str, error: &ServeError);
    /// Every model has been tried; the server is ready when at least one loaded.
    fn ready(&self, models: usize, failed: usize);
    /// Shutdown started.
    fn draining(&self);
    /// Shutdown finished; `dropped` requests were still queued at the deadline.
    fn stopped(&self, dropped: bool);
    /// The metrics as they stand after the drain (Prometheus text), just before `stopped`:
    /// the counts of the last requests, which no scrape can see once the listener is closed.
    fn final_metrics(&self, _prometheus_text: &str) {}
}

/// A model's life.
pub(crate) enum Entry {
    Loading,
    Ready { model: Arc<Model>, batcher: Arc<Batcher>, drift: Arc<Drift> },
    Failed(String),
    Unloaded,
}

/// The server's state.
pub struct State {
    pub(crate) opts: ServeOptions,
    pub(crate) repo: Repository,
    pub(crate) metrics: Registry,
    pub(crate) models: RwLock<BTreeMap<String, Entry>>,
    pub(crate) client: OnceLock<Client>,
    ready: AtomicBool,
    draining: AtomicBool,
    compiles_after_ready: Arc<Counter>,
    /// Answers sent to request tasks and not yet taken up by them (see [`State::answers_first`]).
    unclaimed: Arc<Unclaimed>,
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State").field("repository", &self.repo.root()).finish_non_exhaustive()
    }
}

/// One decoded request input: which model input, its rows, its dense bytes.
pub(crate) struct Decoded {
    pub(crate) index: usize,
    pub(crate) rows: usize,
    pub(crate) data: Bytes,
}

/// Request-level options.
#[derive(Default)]
pub(crate) struct Schedule {
    pub(crate) priority: Option<u64>,
    pub(crate) timeout_us: Option<u64>,
    /// When the server took the request up (its handler started); the timeout counts from
    /// here, so time spent before the queue is inside the deadline too. `None`: from submit.
    pub(crate) arrived: Option<Instant>,
}

/// A ready model with its batcher and drift monitor.
type ReadyModel = (Arc<Model>, Arc<Batcher>, Arc<Drift>);

impl State {
    /// New state for `opts` (nothing loaded yet).
    ///
    /// # Errors
    /// When the repository cannot be opened.
    pub fn new(opts: ServeOptions) -> Result<State, ServeError> {
        let repo = Repository::open(&opts.repository)?;
        let metrics = Registry::new();
        let compiles_after_ready = metrics.counter(names::COMPILES_AFTER_READY, &[]);
        metrics.gauge(names::SERVER_READY, &[]).set(0);
        Ok(State {
            opts,
            repo,
            metrics,
            models: RwLock::new(BTreeMap::new()),
            client: OnceLock::new(),
            ready: AtomicBool::new(false),
            draining: AtomicBool::new(false),
            compiles_after_ready,
            unclaimed: Arc::new(Unclaimed::default()),
        })
    }

    /// Whether the server is ready (models loaded, not draining).
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire) && !self.draining.load(Ordering::Acquire)
    }

    /// Whether shutdown has started.
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Acquire)
    }

    pub(crate) fn set_ready(&self, v: bool) {
        self.ready.store(v, Ordering::Release);
        self.metrics.gauge(names::SERVER_READY, &[]).set(i64::from(v && !self.is_draining()));
    }

    pub(crate) fn start_draining(&self) {
        self.draining.store(true, Ordering::Release);
        self.metrics.gauge(names::SERVER_READY, &[]).set(0);
    }

    /// The metrics registry.
    pub fn metrics(&self) -> &Registry {
        &self.metrics
    }

    /// Programs compiled or loaded after readiness.
    pub fn compiles_after_ready(&self) -> u64 {
        self.compiles_after_ready.get()
    }

    pub(crate) fn read_models(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Entry>> {
        self.models.read().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn write_models(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, Entry>> {
        self.models.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// The PJRT client, created on first use (plugins skipped on the way go to `reporter`).
    pub(crate) fn client(&self, reporter: &dyn Reporter) -> Result<&Client, ServeError> {
        if let Some(c) = self.client.get() {
            return Ok(c);
        }
        let (c, skipped) = tpuport_exec::client(self.opts.plugin.as_deref())?;
        for note in &skipped {
            reporter.plugin_skipped(note);
        }
        Ok(self.client.get_or_init(|| c))
    }

    /// Loads model `name` (compiling every bucket) and starts its batcher. Blocking.
    pub(crate) fn load_model(&self, name: &str, reporter: &dyn Reporter) -> Result<(), ServeError> {
        self.write_models().insert(name.to_owned(), Entry::Loading);
        self.metrics.gauge(names::MODEL_READY, &[name]).set(0);
        let t = Instant::now();
        let after_ready = self.ready.load(Ordering::Acquire);
        let result = (|| {
            let plan = self.repo.plan(name)?;
            let cfg = plan.config().clone();
            let n_buckets = plan.bucket_count() as u64;
            let model =
                Model::load(plan, self.client(reporter)?, self.opts.cache.as_ref(), &self.metrics)?;
            if after_ready {
                self.compiles_after_ready.add(n_buckets);
            }
            let b = &cfg.batching;
            let knobs = Knobs {
                max_delay: Duration::from_micros(b.max_queue_delay_us),
                max_queue: cfg.queue_size(),
                default_timeout: (b.default_timeout_ms > 0)
                    .then(|| Duration::from_millis(b.default_timeout_ms)),
                instances: b.instances,
                levels: b.priority_levels,
                default_level: b.default_priority.unwrap_or(b.priority_levels).saturating_sub(1),
                wait_when_idle: b.wait_when_idle,
            };
            let drift = Arc::new(Drift::new(&self.metrics, &model));
            let batcher = Arc::new(Batcher::start(model.clone(), knobs, &self.metrics));
            Ok::<_, ServeError>((model, batcher, drift))
        })();
        match result {
            Ok((model, batcher, drift)) => {
                for w in model.load_warnings() {
                    reporter.model_warning(name, w);
                }
                reporter.model_loaded(&model, t.elapsed().as_secs_f64());
                self.metrics.gauge(names::MODEL_READY, &[name]).set(1);
                self.write_models().insert(name.to_owned(), Entry::Ready { model, batcher, drift });
                Ok(())
            }
            Err(e) => {
                reporter.model_failed(name, &e);
                self.write_models().insert(name.to_owned(), Entry::Failed(e.to_string()));
                Err(e)
            }
        }
    }

    /// Stops model `name`'s batcher (after its queue drains) and forgets it.
    pub(crate) fn unload_model(&self, name: &str) -> Result<(), InferError> {
        let old = {
            let mut models = self.write_models();
            match models.get(name) {
                None => return Err(not_found(name)),
                Some(Entry::Loading) => {
                    return Err(InferError::new(
                        ErrorKind::Unavailable,
                        format!("model `{name}` is loading"),
                    ));
                }
                _ => {}
            }
            models.insert(name.to_owned(), Entry::Unloaded)
        };
        self.metrics.gauge(names::MODEL_READY, &[name]).set(0);
        if let Some(Entry::Ready { batcher, .. }) = old {
            batcher.close();
            batcher.wait_idle(Instant::now() + self.opts.drain_timeout);
            batcher.abort_and_join();
        }
        Ok(())
    }

    /// The ready model `name` (version checked when given).
    pub(crate) fn model(
        &self,
        name: &str,
        version: Option<&str>,
    ) -> Result<ReadyModel, InferError> {
        let models = self.read_models();
        match models.get(name) {
            Some(Entry::Ready { model, batcher, drift }) => {
                if let Some(v) = version.filter(|v| !v.is_empty())
                    && v != model.version
                {
                    return Err(InferError::new(
                        ErrorKind::NotFound,
                        format!("model `{name}` has no version {v:?}"),
                    ));
                }
                Ok((model.clone(), batcher.clone(), drift.clone()))
            }
            Some(Entry::Loading) => {
                Err(InferError::new(ErrorKind::Unavailable, format!("model `{name}` is loading")))
            }
            Some(Entry::Failed(_) | Entry::Unloaded) => Err(InferError::new(
                ErrorKind::Unavailable,
                format!("model `{name}` is not loaded"),
            )),
            None => Err(not_found(name)),
        }
    }

    /// Runs one request: checks that every input is present once with the same rows, counts
    /// shape drift, queues it and waits for its outputs (one buffer per model output).
    pub(crate) async fn infer(
        &self,
        model: &Model,
        batcher: &Batcher,
        drift: &Drift,
        decoded: Vec<Decoded>,
        schedule: &Schedule,
    ) -> Result<Vec<Bytes>, InferError> {
        if self.is_draining() {
            return Err(InferError::new(ErrorKind::Unavailable, "the server is shutting down"));
        }
        let mut slots: Vec<Option<Bytes>> = model.inputs.iter().map(|_| None).collect();
        let mut rows = None;
        for d in decoded {
            let name = &model.inputs[d.index].name;
            if slots[d.index].is_some() {
                return Err(InferError::refused(
                    Refusal::DuplicateInput,
                    format!("input `{name}` is given twice"),
                ));
            }
            match rows {
                Some(r) if r != d.rows => {
                    return Err(InferError::refused(
                        Refusal::BatchMismatch,
                        format!("input `{name}` has batch size {}, another input has {r}", d.rows),
                    ));
                }
                _ => rows = Some(d.rows),
            }
            slots[d.index] = Some(d.data);
        }
        let missing: Vec<&str> = slots
            .iter()
            .zip(&model.inputs)
            .filter(|(s, _)| s.is_none())
            .map(|(_, i)| i.name.as_str())
            .collect();
        if !missing.is_empty() {
            return Err(InferError::refused(
                Refusal::MissingInput,
                format!("missing input(s): {}", missing.join(", ")),
            ));
        }
        let rows = rows.unwrap_or(0);
        if model.batched && rows > model.max_rows() {
            drift.over_max();
        }
        let knobs = batcher.knobs();
        let level = match schedule.priority {
            None | Some(0) => knobs.default_level,
            Some(p) => {
                let p = usize::try_from(p).unwrap_or(usize::MAX);
                if p > knobs.levels {
                    return Err(InferError::invalid(format!(
                        "priority {p}: model `{}` has levels 1..={}",
                        model.name, knobs.levels
                    )));
                }
                p - 1
            }
        };
        // A request may only lower the model's timeout.
        let timeout = match (schedule.timeout_us.filter(|t| *t > 0), knobs.default_timeout) {
            (Some(t), Some(d)) => Some(Duration::from_micros(t).min(d)),
            (Some(t), None) => Some(Duration::from_micros(t)),
            (None, d) => d,
        };
        let deadline = timeout.map(|t| schedule.arrived.unwrap_or_else(Instant::now) + t);
        let data = slots.into_iter().flatten().collect();
        let (item, rx) = Item::new(rows, data, deadline, &self.unclaimed);
        batcher.submit(item, level)?;
        match rx.await {
            Ok((reply, _taken)) => reply,
            Err(_) => Err(InferError::new(ErrorKind::Unavailable, "the server is shutting down")),
        }
    }

    /// Lets answers that are waiting for their tasks go before a new request is taken up;
    /// `Err` (503, reason `timeout`) when the request's deadline for `batcher`'s model, counted
    /// from `since`, passed meanwhile.
    ///
    /// A worker thread answers from outside the async runtime, so the answer's task is queued
    /// on the runtime's shared queue, which a busy runtime thread looks at only every few tasks.
    /// Under overload every connection has a request ready, each costing a body read, a decode
    /// and a submit or a 503, and an answer waited behind a round of them: 100–250 ms on one
    /// core with 1000 connections (docs/serve.md, Overload). A new request's task therefore
    /// sleeps while answers are unclaimed (it does not spin: the runtime shares its core with
    /// the executions) and the last answer taken up wakes it; it sleeps again when new answers
    /// came meanwhile, for at most `MAX_DEFER` in all. A late request is refused before it is
    /// decoded. Capping the wait at the request's own deadline instead was measured worse
    /// (docs/serve.md, Overload): the released requests' 503s kept the core busy and halved
    /// the 200s.
    pub(crate) async fn answers_first(
        &self,
        batcher: &Batcher,
        since: Instant,
    ) -> Result<(), InferError> {
        /// The longest a request defers to answers.
        const MAX_DEFER: Duration = Duration::from_millis(200);
        self.unclaimed.wait_none(since, MAX_DEFER).await;
        match batcher.knobs().default_timeout {
            Some(t) if since.elapsed() >= t => Err(batcher.late()),
            _ => Ok(()),
        }
    }

    /// Records a finished request.
    pub(crate) fn count(&self, model: &str, protocol: &str, code: &str, started: Instant) {
        self.metrics.counter(names::REQUESTS, &[model, protocol, code]).inc();
        self.metrics
            .histogram(names::REQUEST_DURATION, &[model, protocol, code])
            .observe(started.elapsed().as_secs_f64());
    }

    /// Updates the device-memory gauges where the plugin reports them.
    pub(crate) fn refresh_device_memory(&self) {
        let Some(c) = self.client.get() else { return };
        for (i, d) in c.devices().iter().enumerate() {
            if let Ok(s) = d.memory_stats() {
                let id = i.to_string();
                self.metrics.gauge(names::DEVICE_MEMORY, &[&id, "in_use"]).set(s.bytes_in_use);
                if let Some(l) = s.bytes_limit {
                    self.metrics.gauge(names::DEVICE_MEMORY, &[&id, "limit"]).set(l);
                }
            }
        }
    }
}

pub(crate) fn not_found(name: &str) -> InferError {
    InferError::new(ErrorKind::NotFound, format!("unknown model `{name}`"))
}
