//! The per-model batcher: a bounded priority queue and `instances` worker threads.
//!
//! A worker dispatches when the queued rows fill the largest bucket or the oldest request has
//! waited `max_queue_delay` (Triton's rule), and sooner when no execution of the model is in
//! flight and as many rows are queued as the previous batch held ("idle dispatch";
//! `wait_when_idle = true` turns it off). The previous batch is the estimate of what is still
//! coming: under one client at a time every batch is one row, so a lone request runs at once
//! instead of waiting out the delay; under 16 clients the batches are 16 rows, so an idle model
//! waits for 16 rather than running the first arrival alone and splitting every wave in two
//! (that cost the MLP of `scripts/bench/bench_serve.py` 13–17 % of its requests/s at concurrency
//! 16–64 on 2026-12-05 when any queued row was dispatched at once). It takes
//! rows in priority then arrival order (splitting a request larger than the largest bucket
//! over several batches), pads them into the smallest bucket that fits, uploads, executes,
//! downloads and hands each request its rows. Several workers
//! give several executions in flight on the device. Nothing compiles here: every bucket was
//! compiled before the model turned ready.
//!
//! Copies: binary request data is a slice of the request body (no copy); a request that fills
//! a bucket exactly is uploaded from that slice; otherwise its rows are copied once into the
//! worker's reusable padded host buffer. Outputs are downloaded once and every request gets a
//! slice of the download (no copy) unless it was split over several batches.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::oneshot;

use crate::error::{ErrorKind, InferError};
use crate::metrics::{Counter, Gauge, Histogram, Registry, names};
use tpuport_exec::Model;

/// Rows per output for one request, in the model's output order.
pub(crate) type Reply = Result<Vec<Bytes>, InferError>;

/// Counts answers sent to request tasks and not yet taken up by them.
#[derive(Debug, Default)]
pub(crate) struct Unclaimed {
    count: AtomicUsize,
    /// Signalled when the count falls to zero.
    none: tokio::sync::Notify,
}

impl Unclaimed {
    /// Waits while answers are waiting for their tasks: until the count falls to zero with
    /// no new answer sent in between, or until it falls to zero after `cap` has passed since
    /// `since`.
    ///
    /// No timer: the time is looked at when the count falls to zero, so a stream of answers
    /// holds a caller for at most `cap` and one more fall.
    pub(crate) async fn wait_none(&self, since: Instant, cap: Duration) {
        // The common case, without registering with the `Notify` (a lock).
        if self.count.load(Ordering::Acquire) == 0 {
            return;
        }
        loop {
            let none = self.none.notified();
            tokio::pin!(none);
            // Registered before the check, so a fall to zero after it still wakes us.
            none.as_mut().enable();
            if self.count.load(Ordering::Acquire) == 0 {
                return;
            }
            none.await;
            if since.elapsed() >= cap {
                return;
            }
        }
    }
}

/// One answer sent and not yet taken up: dropping it (the task took the answer, or the answer
/// was dropped unread because the task went away) lowers the count.
#[derive(Debug)]
pub(crate) struct Ticket(Arc<Unclaimed>);

impl Ticket {
    fn issue(u: Arc<Unclaimed>) -> Ticket {
        u.count.fetch_add(1, Ordering::AcqRel);
        Ticket(u)
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.none.notify_waiters();
        }
    }
}

/// What a request's task receives: its answer and the token that counts it as unclaimed.
pub(crate) type Answer = (Reply, Ticket);

/// A request in the queue.
#[derive(Debug)]
pub(crate) struct Item {
    rows: usize,
    inputs: Vec<Bytes>,
    enqueued: Instant,
    deadline: Option<Instant>,
    /// Rows handed to workers (changed under the queue lock).
    taken: AtomicUsize,
    state: Mutex<ItemState>,
}

#[derive(Debug)]
struct ItemState {
    done: usize,
    parts: Vec<(usize, Vec<Bytes>)>,
    /// Where the answer goes, with the count it is to be counted in; taken when answered.
    reply: Option<(oneshot::Sender<Answer>, Arc<Unclaimed>)>,
}

impl Item {
    /// A request of `rows` rows with one buffer per model input; `unclaimed` counts answers
    /// sent and not yet taken up.
    pub(crate) fn new(
        rows: usize,
        inputs: Vec<Bytes>,
        deadline: Option<Instant>,
        unclaimed: &Arc<Unclaimed>,
    ) -> (Arc<Item>, oneshot::Receiver<Answer>) {
        let (tx, rx) = oneshot::channel();
        let item = Item {
            rows,
            inputs,
            enqueued: Instant::now(),
            deadline,
            taken: AtomicUsize::new(0),
            state: Mutex::new(ItemState {
                done: 0,
                parts: Vec::new(),
                reply: Some((tx, unclaimed.clone())),
            }),
        };
        (Arc::new(item), rx)
    }

    fn lock(&self) -> MutexGuard<'_, ItemState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn fail(&self, e: InferError) {
        let reply = self.lock().reply.take();
        if let Some((tx, unclaimed)) = reply {
            let _ = tx.send((Err(e), Ticket::issue(unclaimed)));
        }
    }

    /// Records rows `start..start+len` of every output; answers when all rows are in.
    fn deliver(&self, start: usize, len: usize, outs: Vec<Bytes>) {
        let mut st = self.lock();
        st.parts.push((start, outs));
        st.done += len;
        if st.done < self.rows {
            return;
        }
        let Some((tx, unclaimed)) = st.reply.take() else { return };
        let mut parts = std::mem::take(&mut st.parts);
        drop(st);
        let result = if parts.len() == 1 {
            parts.pop().map(|(_, o)| o).unwrap_or_default()
        } else {
            parts.sort_by_key(|p| p.0);
            let n = parts.first().map_or(0, |p| p.1.len());
            (0..n)
                .map(|i| {
                    let mut v = Vec::with_capacity(parts.iter().map(|p| p.1[i].len()).sum());
                    for p in &parts {
                        v.extend_from_slice(&p.1[i]);
                    }
                    Bytes::from(v)
                })
                .collect()
        };
        let _ = tx.send((Ok(result), Ticket::issue(unclaimed)));
    }
}

/// Batching knobs after defaults.
#[derive(Clone, Debug)]
pub(crate) struct Knobs {
    pub(crate) max_delay: Duration,
    pub(crate) max_queue: usize,
    pub(crate) default_timeout: Option<Duration>,
    pub(crate) instances: usize,
    pub(crate) levels: usize,
    pub(crate) default_level: usize,
    /// Wait for `max_delay` even when nothing is executing.
    pub(crate) wait_when_idle: bool,
}

struct QState {
    levels: Vec<VecDeque<Arc<Item>>>,
    items: usize,
    rows: usize,
    inflight: usize,
    /// Rows of the batch dispatched last (0 before the first): idle dispatch waits for as many.
    last_rows: usize,
    closed: bool,
}

struct ModelMetrics {
    queue_duration: Arc<Histogram>,
    compute: Vec<Arc<Histogram>>,
    executions: Vec<Arc<Counter>>,
    batch_size: Arc<Histogram>,
    padding: Arc<Histogram>,
    depth: Arc<Gauge>,
    inflight: Arc<Gauge>,
    queue_full: Arc<Counter>,
    timeout: Arc<Counter>,
    shutting_down: Arc<Counter>,
    internal: Arc<Counter>,
}

struct Shared {
    model: Arc<Model>,
    knobs: Knobs,
    q: Mutex<QState>,
    cv: Condvar,
    idle: Condvar,
    m: ModelMetrics,
}

/// A model's queue and workers.
pub(crate) struct Batcher {
    shared: Arc<Shared>,
    workers: Mutex<Vec<std::thread::JoinHandle<()>>>,
}

impl std::fmt::Debug for Batcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batcher").field("model", &self.shared.model.name).finish_non_exhaustive()
    }
}

impl Batcher {
    /// Starts the workers.
    pub(crate) fn start(model: Arc<Model>, knobs: Knobs, reg: &Registry) -> Batcher {
        let n = &model.name;
        let m = ModelMetrics {
            queue_duration: reg.histogram(names::QUEUE_DURATION, &[n]),
            compute: model
                .buckets()
                .iter()
                .map(|b| reg.histogram(names::COMPUTE_DURATION, &[n, &b.label]))
                .collect(),
            executions: model
                .buckets()
                .iter()
                .map(|b| reg.counter(names::EXECUTIONS, &[n, &b.label]))
                .collect(),
            batch_size: reg.histogram(names::BATCH_SIZE, &[n]),
            padding: reg.histogram(names::PADDING_RATIO, &[n]),
            depth: reg.gauge(names::QUEUE_DEPTH, &[n]),
            inflight: reg.gauge(names::INFLIGHT, &[n]),
            queue_full: reg.counter(names::REJECTIONS, &[n, "queue_full"]),
            timeout: reg.counter(names::REJECTIONS, &[n, "timeout"]),
            shutting_down: reg.counter(names::REJECTIONS, &[n, "shutting_down"]),
            internal: reg.counter(names::REJECTIONS, &[n, "execution_error"]),
        };
        let shared = Arc::new(Shared {
            q: Mutex::new(QState {
                levels: (0..knobs.levels).map(|_| VecDeque::new()).collect(),
                items: 0,
                rows: 0,
                inflight: 0,
                last_rows: 0,
                closed: false,
            }),
            cv: Condvar::new(),
            idle: Condvar::new(),
            model,
            knobs,
            m,
        });
        let workers = (0..shared.knobs.instances)
            .filter_map(|i| {
                let s = shared.clone();
                std::thread::Builder::new()
                    .name(format!("tpuport-{}-{i}", s.model.name))
                    .spawn(move || worker(&s))
                    .ok()
            })
            .collect();
        Batcher { shared, workers: Mutex::new(workers) }
    }

    /// Counts a request whose deadline passed before it reached the queue and returns its
    /// error (503, reason `timeout`).
    pub(crate) fn late(&self) -> InferError {
        self.shared.timed_out("before it reached the queue")
    }

    /// The knobs.
    pub(crate) fn knobs(&self) -> &Knobs {
        &self.shared.knobs
    }

    /// Queues a request at `level` (0 = highest).
    pub(crate) fn submit(&self, item: Arc<Item>, level: usize) -> Result<(), InferError> {
        let s = &self.shared;
        let mut st = s.lock();
        if st.closed {
            s.m.shutting_down.inc();
            return Err(InferError::new(ErrorKind::Unavailable, "the server is shutting down"));
        }
        if st.items >= s.knobs.max_queue {
            s.m.queue_full.inc();
            return Err(InferError::new(
                ErrorKind::Unavailable,
                format!("model `{}`: queue full ({} requests)", s.model.name, s.knobs.max_queue),
            ));
        }
        st.items += 1;
        st.rows += item.rows;
        let level = level.min(st.levels.len() - 1);
        st.levels[level].push_back(item);
        s.m.depth.set(st.items as i64);
        drop(st);
        s.cv.notify_one();
        Ok(())
    }

    /// Stops taking requests; workers finish what is queued, then exit.
    pub(crate) fn close(&self) {
        self.shared.lock().closed = true;
        self.shared.cv.notify_all();
    }

    /// Waits until nothing is queued or executing, at most until `deadline`; true when idle.
    pub(crate) fn wait_idle(&self, deadline: Instant) -> bool {
        let s = &self.shared;
        let mut st = s.lock();
        loop {
            if st.items == 0 && st.inflight == 0 {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            st = s.idle.wait_timeout(st, deadline - now).unwrap_or_else(PoisonError::into_inner).0;
        }
    }

    /// Fails whatever is still queued (after the drain deadline) and joins the workers.
    pub(crate) fn abort_and_join(&self) {
        let s = &self.shared;
        let items: Vec<Arc<Item>> = {
            let mut st = s.lock();
            st.closed = true;
            st.items = 0;
            st.rows = 0;
            st.levels.iter_mut().flat_map(std::mem::take).collect()
        };
        for it in items {
            s.m.shutting_down.inc();
            it.fail(InferError::new(ErrorKind::Unavailable, "the server is shutting down"));
        }
        s.cv.notify_all();
        let handles =
            std::mem::take(&mut *self.workers.lock().unwrap_or_else(PoisonError::into_inner));
        for h in handles {
            let _ = h.join();
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, QState> {
        self.q.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts a request refused for its deadline (reason `timeout`) and returns its error.
    fn timed_out(&self, when: &str) -> InferError {
        self.m.timeout.inc();
        InferError::new(ErrorKind::Timeout, format!("the request timed out {when}"))
    }
}

/// Rows of one request handed to one batch.
struct Piece {
    item: Arc<Item>,
    start: usize,
    len: usize,
}

fn worker(s: &Shared) {
    let mut scratch: Vec<Vec<u8>> = s.model.inputs.iter().map(|_| Vec::new()).collect();
    while let Some(pieces) = next_batch(s) {
        run_batch(s, &pieces, &mut scratch);
        let mut st = s.lock();
        st.inflight -= 1;
        s.m.inflight.set(st.inflight as i64);
        if st.items == 0 && st.inflight == 0 {
            s.idle.notify_all();
        }
    }
}

/// Waits for a batch and takes its rows; `None` when closed and empty.
fn next_batch(s: &Shared) -> Option<Vec<Piece>> {
    let max_rows = s.model.max_rows();
    let mut st = s.lock();
    loop {
        expire(s, &mut st);
        if st.items == 0 {
            if st.closed {
                s.idle.notify_all();
                return None;
            }
            st = s.cv.wait(st).unwrap_or_else(PoisonError::into_inner);
            continue;
        }
        let oldest = st.levels.iter().filter_map(|l| l.front()).map(|i| i.enqueued).min();
        let now = Instant::now();
        let due = oldest.map_or(now, |t| t + s.knobs.max_delay);
        // Nothing executing and the rows the last batch had are here: a batch now costs no
        // overlap, and the requests that arrive while it runs form the next one.
        let idle =
            st.inflight == 0 && !s.knobs.wait_when_idle && st.rows >= st.last_rows.min(max_rows);
        if st.rows >= max_rows || now >= due || st.closed || !s.model.batched || idle {
            break;
        }
        st = s.cv.wait_timeout(st, due - now).unwrap_or_else(PoisonError::into_inner).0;
    }
    let cap = if s.model.batched { max_rows } else { 1 };
    let mut pieces = Vec::new();
    let mut room = cap;
    let now = Instant::now();
    let mut finished = 0;
    for level in &mut st.levels {
        while room > 0 {
            let Some(item) = level.front() else { break };
            let taken = item.taken.load(Ordering::Relaxed);
            if taken == 0 {
                s.m.queue_duration.observe((now - item.enqueued).as_secs_f64());
            }
            let len = (item.rows - taken).min(room);
            item.taken.store(taken + len, Ordering::Relaxed);
            pieces.push(Piece { item: item.clone(), start: taken, len });
            room -= len;
            if taken + len == item.rows {
                level.pop_front();
                finished += 1;
            }
        }
    }
    st.items -= finished;
    let took = cap - room;
    st.rows -= took;
    st.last_rows = took;
    st.inflight += 1;
    s.m.depth.set(st.items as i64);
    s.m.inflight.set(st.inflight as i64);
    let more = st.items > 0;
    drop(st);
    if more {
        s.cv.notify_one();
    }
    Some(pieces)
}

/// Answers and drops queued requests whose deadline has passed (those not started).
fn expire(s: &Shared, st: &mut QState) {
    let now = Instant::now();
    let mut expired = Vec::new();
    for level in &mut st.levels {
        level.retain(|it| {
            let late =
                it.deadline.is_some_and(|d| now >= d) && it.taken.load(Ordering::Relaxed) == 0;
            if late {
                expired.push(it.clone());
            }
            !late
        });
    }
    for it in expired {
        st.items -= 1;
        st.rows -= it.rows;
        it.fail(s.timed_out("in the queue"));
    }
    s.m.depth.set(st.items as i64);
}

fn run_batch(s: &Shared, pieces: &[Piece], scratch: &mut [Vec<u8>]) {
    let model = &s.model;
    let total: usize = pieces.iter().map(|p| p.len).sum();
    let b = model.bucket_for(total);
    let bucket = &model.buckets()[b];
    let t = Instant::now();
    match execute(model, b, pieces, total, scratch) {
        Ok(outs) => {
            s.m.compute[b].observe(t.elapsed().as_secs_f64());
            s.m.executions[b].inc();
            s.m.batch_size.observe(total as f64);
            s.m.padding.observe((bucket.rows - total) as f64 / bucket.rows as f64);
            let mut off = 0;
            for p in pieces {
                let slices = outs
                    .iter()
                    .zip(&model.outputs)
                    .map(|(o, sig)| o.slice(off * sig.row_bytes..(off + p.len) * sig.row_bytes))
                    .collect();
                p.item.deliver(p.start, p.len, slices);
                off += p.len;
            }
        }
        Err(e) => {
            for p in pieces {
                s.m.internal.inc();
                p.item.fail(InferError::new(ErrorKind::Internal, format!("execution failed: {e}")));
            }
        }
    }
}

fn execute(
    model: &Model,
    b: usize,
    pieces: &[Piece],
    total: usize,
    scratch: &mut [Vec<u8>],
) -> Result<Vec<Bytes>, tpuport_pjrt::PjrtError> {
    let bucket = &model.buckets()[b];
    let whole = pieces.len() == 1 && pieces[0].item.rows == bucket.rows && total == bucket.rows;
    for (i, sig) in model.inputs.iter().enumerate() {
        if whole {
            continue;
        }
        let buf = &mut scratch[i];
        buf.clear();
        for p in pieces {
            let src = &p.item.inputs[i];
            buf.extend_from_slice(&src[p.start * sig.row_bytes..(p.start + p.len) * sig.row_bytes]);
        }
        buf.resize(bucket.rows * sig.row_bytes, 0);
    }
    let inputs: Vec<&[u8]> = (0..model.inputs.len())
        .map(|i| if whole { &pieces[0].item.inputs[i][..] } else { &scratch[i][..] })
        .collect();
    let outs = model.execute_bucket(b, &inputs)?;
    Ok(outs.into_iter().map(Bytes::from).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(c: &Unclaimed) -> usize {
        c.count.load(Ordering::Acquire)
    }

    #[test]
    fn an_answer_is_unclaimed_until_its_task_drops_it() {
        let c = Arc::new(Unclaimed::default());
        let (item, mut rx) = Item::new(2, Vec::new(), None, &c);
        item.deliver(0, 1, vec![Bytes::from_static(b"a")]);
        assert_eq!(count(&c), 0, "half the rows are not an answer");
        item.deliver(1, 1, vec![Bytes::from_static(b"b")]);
        assert_eq!(count(&c), 1);
        let (reply, token) = rx.try_recv().expect("answered");
        assert_eq!(reply.expect("ok"), vec![Bytes::from_static(b"ab")]);
        assert_eq!(count(&c), 1, "taken from the channel, still held");
        drop(token);
        assert_eq!(count(&c), 0);
    }

    #[test]
    fn an_answer_to_a_task_that_went_away_is_not_counted() {
        let c = Arc::new(Unclaimed::default());
        // The task is gone before the answer.
        let (item, rx) = Item::new(1, Vec::new(), None, &c);
        drop(rx);
        item.fail(InferError::new(ErrorKind::Timeout, "late"));
        assert_eq!(count(&c), 0);
        // The task goes away after the answer was sent, without reading it.
        let (item, rx) = Item::new(1, Vec::new(), None, &c);
        item.deliver(0, 1, vec![Bytes::new()]);
        assert_eq!(count(&c), 1);
        drop(rx);
        assert_eq!(count(&c), 0);
        // A second answer to the same request is never sent.
        item.fail(InferError::new(ErrorKind::Timeout, "late"));
        assert_eq!(count(&c), 0);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_new_request_waits_for_pending_answers_and_no_longer_than_the_cap() {
        let c = Arc::new(Unclaimed::default());
        // Nothing pending: no wait.
        tokio::time::timeout(Duration::from_secs(5), c.wait_none(Instant::now(), Duration::ZERO))
            .await
            .expect("returns at once");
        // One answer pending: the waiter sleeps until it is taken up.
        let (item, mut rx) = Item::new(1, Vec::new(), None, &c);
        item.deliver(0, 1, vec![Bytes::new()]);
        let waiter = tokio::spawn({
            let c = c.clone();
            async move { c.wait_none(Instant::now(), Duration::from_secs(60)).await }
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished(), "returned while an answer was pending");
        drop(rx.try_recv().expect("answered"));
        tokio::time::timeout(Duration::from_secs(5), waiter).await.expect("woken").expect("ran");
        // Answers keep coming: a fall to zero with a new answer sent before the waiter runs
        // holds it again, until the cap has passed.
        let first = Ticket::issue(c.clone());
        let waiter = tokio::spawn({
            let c = c.clone();
            let since = Instant::now();
            async move { c.wait_none(since, Duration::from_millis(20)).await }
        });
        tokio::task::yield_now().await;
        drop(first);
        let second = Ticket::issue(c.clone());
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished(), "went before the cap with an answer pending");
        tokio::time::sleep(Duration::from_millis(30)).await;
        drop(second);
        let third = Ticket::issue(c.clone());
        tokio::time::timeout(Duration::from_secs(5), waiter).await.expect("woken").expect("ran");
        drop(third);
        assert_eq!(count(&c), 0);
    }
}
