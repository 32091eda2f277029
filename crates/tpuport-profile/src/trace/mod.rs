//! Chrome-trace JSON from torch.profiler (kineto) and from the TSL profiler behind
//! `jax.profiler` and `torch_xla.debug.profiler`, read in one streaming pass (two when Python
//! frames must be matched to events) into a [`TraceSummary`].
//!
//! Memory does not grow with the file: the ops table is keyed by op name (capped), and only
//! per-step records (step spans, data-loading spans, host-sync probes, compile spans) are kept,
//! each list capped. Python-tracer events are matched to those records in a second pass over
//! the file instead of being stored.

mod event;
pub(crate) mod scan;

use std::collections::HashMap;
use std::io::Read;

use serde::Serialize;

use crate::frames::{self, Frame};
use event::{Id, RawEvent, text};

/// Most distinct op names tracked; later names are summed as `(other ops)`.
const MAX_OPS: usize = 100_000;
/// Most records kept per list (steps, spans, probes, compiles).
const MAX_RECORDS: usize = 1_000_000;
/// Deepest `B`/`E` nesting tracked per thread.
const MAX_BE_DEPTH: usize = 256;
/// Most disjoint input intervals kept per gap between two steps.
const MAX_GAP_INTERVALS: usize = 8;
/// Most distinct thread and process ids interned.
const MAX_IDS: usize = 1_000_000;

/// Which profiler wrote the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Producer {
    /// torch.profiler (`export_chrome_trace`, `tensorboard_trace_handler`).
    Kineto,
    /// The TSL profiler (`jax.profiler`, `torch_xla.debug.profiler`, XProf's trace viewer).
    Tsl,
    /// Any other Trace Event Format file.
    Generic,
}

/// Where op time was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OpDomain {
    /// Device ops: XLA ops (`hlo_op`), `XLA Ops` threads, GPU kernels and copies.
    Device,
    /// Host ops: kineto `cpu_op` self time (a CPU-only PyTorch trace).
    Host,
}

/// One training step.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// The step number the trace gives (`ProfilerStep#N`, `step_num`).
    pub num: Option<i64>,
    /// Start, in the trace's microseconds.
    pub start_us: f64,
    /// From this step's start to the next step's start (the last: its own length).
    pub dur_us: f64,
    /// Time of this step spent in data loading (union of input spans inside it).
    pub input_us: f64,
}

/// Time of one op name.
#[derive(Debug, Clone, Serialize)]
pub struct OpTime {
    /// Op name (HLO instruction, kernel, or `aten::` op).
    pub name: String,
    /// HLO module, when the trace names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    /// Occurrences.
    pub count: u64,
    /// Total time in µs (self time for host ops).
    pub total_us: f64,
}

/// Host-to-device syncs forced by reading a device value on the host.
#[derive(Debug, Clone, Serialize)]
pub struct SyncSite {
    /// The event that marks the sync (`aten::_local_scalar_dense`, `…::ToLiteral`).
    pub op: String,
    /// How many times.
    pub count: u64,
    /// The user's line that made the call, when the trace has Python frames.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frame: Option<Frame>,
}

/// Data-loading evidence.
#[derive(Debug, Clone, Default, Serialize)]
pub struct InputEvidence {
    /// Which events counted as input (`DataLoader`, `tf.data`, `python generator`, …).
    pub kinds: Vec<String>,
    /// The user's line that pulls the next batch (kineto `CallFrom` of the loader's `__next__`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loop_site: Option<Frame>,
    /// User functions running inside data loading, most time first: (frame, µs).
    pub functions: Vec<(Frame, f64)>,
}

/// Compilation seen in the trace.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TraceCompiles {
    /// Compile events (outermost).
    pub count: u64,
    /// Their total time (union), µs.
    pub total_us: f64,
    /// torch_xla graph hashes with their compile counts.
    pub graph_hashes: Vec<(String, u64)>,
}

/// What one trace file says.
#[derive(Debug, Clone, Serialize)]
pub struct TraceSummary {
    /// Which profiler wrote it.
    pub producer: Producer,
    /// Events read.
    pub events: u64,
    /// Bytes of JSON read (decompressed).
    pub bytes: u64,
    /// The file ended before its event array did (read up to the last complete event).
    pub truncated: bool,
    /// From the first event to the end of the last, µs.
    pub span_us: f64,
    /// What marked the steps (`ProfilerStep#N`, a step annotation's name, `Steps`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step_marker: Option<String>,
    /// The steps, in time order.
    pub steps: Vec<Step>,
    /// Data loading.
    pub input: InputEvidence,
    /// Where the op time below was measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op_domain: Option<OpDomain>,
    /// Total op time, µs.
    pub op_total_us: f64,
    /// Ops by total time, largest first (at most `top`).
    pub top_ops: Vec<OpTime>,
    /// Host syncs, grouped by op and user line.
    pub syncs: Vec<SyncSite>,
    /// Compilation.
    pub compiles: TraceCompiles,
    /// Caps reached and other remarks.
    pub notes: Vec<String>,
}

/// An interval on one thread.
#[derive(Debug, Clone, Copy)]
struct Span {
    thread: u64,
    start: f64,
    end: f64,
}

#[derive(Debug, Clone)]
struct StepMark {
    num: Option<i64>,
    thread: u64,
    start: f64,
    end: f64,
    host: bool,
    label: String,
}

/// Op time by name, capped at [`MAX_OPS`] names.
#[derive(Debug, Default)]
struct OpTable {
    index: HashMap<String, usize>,
    ops: Vec<(String, OpAgg)>,
}

impl OpTable {
    fn add(
        &mut self,
        name: &str,
        module: Option<&str>,
        dur: f64,
        capped: &mut Vec<&'static str>,
    ) -> usize {
        let idx = match self.index.get(name) {
            Some(&i) => i,
            None if self.ops.len() < MAX_OPS => {
                self.ops.push((
                    name.to_owned(),
                    OpAgg { module: module.map(str::to_owned), ..OpAgg::default() },
                ));
                self.index.insert(name.to_owned(), self.ops.len() - 1);
                self.ops.len() - 1
            }
            None => {
                if !capped.contains(&"op names") {
                    capped.push("op names");
                }
                let other = "(other ops)";
                match self.index.get(other) {
                    Some(&i) => i,
                    None => {
                        self.ops.push((other.to_owned(), OpAgg::default()));
                        self.index.insert(other.to_owned(), self.ops.len() - 1);
                        self.ops.len() - 1
                    }
                }
            }
        };
        let agg = &mut self.ops[idx].1;
        agg.count += 1;
        agg.total += dur;
        idx
    }
}

#[derive(Debug, Default)]
struct OpAgg {
    module: Option<String>,
    count: u64,
    total: f64,
}

/// An open kineto `cpu_op` on a thread, for self time.
#[derive(Debug)]
struct Open {
    end: f64,
    dur: f64,
    children: f64,
    op: usize,
}

/// A `B` event waiting for its `E`.
#[derive(Debug)]
struct Begin {
    name: String,
    cat: String,
    ts: f64,
    step_num: Option<String>,
    hlo_op: Option<String>,
    hlo_module: Option<String>,
    graph_hash: Option<String>,
}

/// The fields classification needs, borrowed from an `X` event or built from a `B`/`E` pair.
struct View<'a> {
    name: &'a str,
    cat: &'a str,
    pid: u32,
    tid: u32,
    ts: f64,
    dur: f64,
    step_num: Option<&'a str>,
    hlo_op: Option<&'a str>,
    hlo_module: Option<&'a str>,
    graph_hash: Option<&'a str>,
}

/// A point where a user frame is wanted: a host sync or the start of a data-loading span.
#[derive(Debug, Clone, Copy)]
struct Probe {
    thread: u64,
    ts: f64,
    /// Index into `sync_ops` for syncs, `usize::MAX` for input spans.
    op: usize,
    /// Start of the innermost enclosing Python event with a user caller, and that caller.
    best: Option<(f64, u32)>,
}

const INPUT_PROBE: usize = usize::MAX;

/// Pass-one state and results.
#[derive(Debug, Default)]
pub(crate) struct Analyzer {
    kineto_keys: bool,
    tsl_keys: bool,
    num_ids: HashMap<i64, u32>,
    str_ids: HashMap<String, u32>,
    proc_names: HashMap<u32, String>,
    thread_names: HashMap<u64, String>,
    first_ts: Option<f64>,
    last_end: f64,
    begins: HashMap<u64, Vec<Begin>>,
    marks: Vec<StepMark>,
    input_spans: Vec<Span>,
    input_kinds: Vec<String>,
    device_ops: OpTable,
    host_ops: OpTable,
    open: HashMap<u64, Vec<Open>>,
    sync_ops: Vec<String>,
    probes: Vec<Probe>,
    compile_spans: Vec<Span>,
    graph_hashes: HashMap<String, u64>,
    python_events: u64,
    capped: Vec<&'static str>,
    // Pass two.
    frames: Vec<Frame>,
    frame_index: HashMap<Frame, u32>,
    gaps: Vec<(Span, Vec<(f64, f64)>)>,
    /// Input-like user Python functions seen in pass one: (thread, start, end, frame).
    py_input: Vec<(u64, f64, f64, u32)>,
    input_fn_time: HashMap<u32, f64>,
}

fn thread_key(pid: u32, tid: u32) -> u64 {
    (u64::from(pid) << 32) | u64::from(tid)
}

fn step_number(name: &str) -> Option<i64> {
    name.strip_prefix("ProfilerStep#").and_then(|n| n.parse().ok())
}

/// Whether a Python function name reads like data loading (used for frames between steps,
/// where no loader event exists: a JAX loop over a Python generator).
fn looks_like_input(func: &str) -> bool {
    const WORDS: &[&str] = &[
        "batch",
        "data",
        "load",
        "next",
        "iter",
        "fetch",
        "read",
        "prefetch",
        "sample",
        "shard",
        "token",
        "augment",
        "transform",
        "collate",
        "getitem",
        "input",
        "queue",
        "decode",
    ];
    let f = func.as_bytes();
    WORDS.iter().any(|w| f.windows(w.len()).any(|win| win.eq_ignore_ascii_case(w.as_bytes())))
}

fn push_capped<T>(v: &mut Vec<T>, x: T, capped: &mut Vec<&'static str>, what: &'static str) {
    if v.len() < MAX_RECORDS {
        v.push(x);
    } else if !capped.contains(&what) {
        capped.push(what);
    }
}

impl Analyzer {
    /// The interned number of a pid/tid (`""` when absent), `None` when never seen.
    fn lookup(&self, id: Option<&Id<'_>>) -> Option<u32> {
        match id {
            Some(Id::Num(n)) => self.num_ids.get(n).copied(),
            Some(Id::Str(s)) => self.str_ids.get(s.as_ref()).copied(),
            None => self.str_ids.get("").copied(),
        }
    }

    fn intern(&mut self, id: Option<&Id<'_>>) -> u32 {
        if let Some(n) = self.lookup(id) {
            return n;
        }
        let count = self.num_ids.len() + self.str_ids.len();
        if count >= MAX_IDS {
            if !self.capped.contains(&"thread ids") {
                self.capped.push("thread ids");
            }
            return u32::MAX;
        }
        let n = u32::try_from(count).unwrap_or(u32::MAX);
        match id {
            Some(Id::Num(v)) => {
                self.num_ids.insert(*v, n);
            }
            Some(Id::Str(s)) => {
                self.str_ids.insert(s.as_ref().to_owned(), n);
            }
            None => {
                self.str_ids.insert(String::new(), n);
            }
        }
        n
    }

    fn is_device_proc(&self, pid: u32) -> bool {
        self.proc_names.get(&pid).is_some_and(|n| n.starts_with("/device:"))
    }

    fn frame_id(&mut self, f: Frame) -> u32 {
        if let Some(&i) = self.frame_index.get(&f) {
            return i;
        }
        let i = u32::try_from(self.frames.len()).unwrap_or(u32::MAX);
        self.frames.push(f.clone());
        self.frame_index.insert(f, i);
        i
    }

    fn pass_one(&mut self, raw: &[u8]) -> Result<(), String> {
        let e: RawEvent<'_> =
            serde_json::from_slice(raw).map_err(|err| format!("bad trace event: {err}"))?;
        let pid = self.intern(e.pid.as_ref());
        let tid = self.intern(e.tid.as_ref());
        let key = thread_key(pid, tid);
        match e.ph() {
            "M" => {
                let name = e.args.as_ref().and_then(|a| text(&a.name)).unwrap_or("").to_owned();
                match e.name() {
                    "process_name" => {
                        if name.starts_with("/host:") || name.starts_with("/device:") {
                            self.tsl_keys = true;
                        }
                        self.proc_names.insert(pid, name);
                    }
                    "thread_name" => {
                        self.thread_names.insert(key, name);
                    }
                    _ => {}
                }
            }
            "X" => {
                let args = e.args.as_ref();
                let v = View {
                    name: e.name(),
                    cat: e.cat(),
                    pid,
                    tid,
                    ts: e.ts.map_or(0.0, |t| t.0),
                    dur: e.dur.map_or(0.0, |d| d.0.max(0.0)),
                    step_num: args.and_then(|a| text(&a.step_num)),
                    hlo_op: args.and_then(|a| text(&a.hlo_op)),
                    hlo_module: args.and_then(|a| text(&a.hlo_module)),
                    graph_hash: args.and_then(|a| text(&a.graph_hash)),
                };
                self.complete(&v);
            }
            "B" => {
                let stack = self.begins.entry(key).or_default();
                if stack.len() < MAX_BE_DEPTH {
                    let args = e.args.as_ref();
                    stack.push(Begin {
                        name: e.name().to_owned(),
                        cat: e.cat().to_owned(),
                        ts: e.ts.map_or(0.0, |t| t.0),
                        step_num: args.and_then(|a| text(&a.step_num)).map(str::to_owned),
                        hlo_op: args.and_then(|a| text(&a.hlo_op)).map(str::to_owned),
                        hlo_module: args.and_then(|a| text(&a.hlo_module)).map(str::to_owned),
                        graph_hash: args.and_then(|a| text(&a.graph_hash)).map(str::to_owned),
                    });
                }
            }
            "E" => {
                if let Some(b) = self.begins.get_mut(&key).and_then(Vec::pop) {
                    let end = e.ts.map_or(b.ts, |t| t.0);
                    let v = View {
                        name: &b.name,
                        cat: &b.cat,
                        pid,
                        tid,
                        ts: b.ts,
                        dur: (end - b.ts).max(0.0),
                        step_num: b.step_num.as_deref(),
                        hlo_op: b.hlo_op.as_deref(),
                        hlo_module: b.hlo_module.as_deref(),
                        graph_hash: b.graph_hash.as_deref(),
                    };
                    self.complete(&v);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Kineto `cpu_op` self time: closes the ops on this thread that ended before `ts`, then
    /// charges this op's time to its parent.
    fn host_op(&mut self, v: &View<'_>, key: u64) {
        let idx = self.host_ops.add(v.name, None, 0.0, &mut self.capped);
        let end = v.ts + v.dur;
        let stack = self.open.entry(key).or_default();
        let mut closed = Vec::new();
        while let Some(top) = stack.last() {
            if top.end <= v.ts {
                if let Some(o) = stack.pop() {
                    closed.push(o);
                }
            } else {
                break;
            }
        }
        if let Some(parent) = stack.last_mut()
            && end <= parent.end + 1e-3
        {
            parent.children += v.dur;
        }
        stack.push(Open { end, dur: v.dur, children: 0.0, op: idx });
        for o in closed {
            self.host_ops.ops[o.op].1.total += (o.dur - o.children).max(0.0);
        }
    }

    fn complete(&mut self, v: &View<'_>) {
        let key = thread_key(v.pid, v.tid);
        let end = v.ts + v.dur;
        self.first_ts = Some(self.first_ts.map_or(v.ts, |f| f.min(v.ts)));
        self.last_end = self.last_end.max(end);
        let thread = self.thread_names.get(&key).map(String::as_str).unwrap_or("");
        let device_proc = self.is_device_proc(v.pid);

        // Steps.
        if let Some(n) = step_number(v.name) {
            let m = StepMark {
                num: Some(n),
                thread: key,
                start: v.ts,
                end,
                host: true,
                label: "ProfilerStep#N".to_owned(),
            };
            push_capped(&mut self.marks, m, &mut self.capped, "steps");
            return;
        }
        if thread == "Steps" {
            let m = StepMark {
                num: v.name.parse().ok().or_else(|| v.step_num.and_then(|s| s.parse().ok())),
                thread: key,
                start: v.ts,
                end,
                host: false,
                label: "Steps".to_owned(),
            };
            push_capped(&mut self.marks, m, &mut self.capped, "steps");
            return;
        }
        if let Some(s) = v.step_num
            && v.hlo_op.is_none()
            && !v.name.starts_with('$')
            && !device_proc
            && !thread.starts_with("XLA")
        {
            let m = StepMark {
                num: s.parse().ok(),
                thread: key,
                start: v.ts,
                end,
                host: true,
                label: v.name.to_owned(),
            };
            push_capped(&mut self.marks, m, &mut self.capped, "steps");
            return;
        }

        // Python frames: those that read like data loading are kept for the gaps between step
        // annotations; the others are matched to probes in pass two.
        if v.cat == "python_function" || v.name.starts_with('$') {
            self.python_events += 1;
            let func =
                v.name.split_once("): ").or_else(|| v.name.split_once(' ')).map_or("", |(_, f)| f);
            if v.dur > 0.0
                && looks_like_input(func)
                && let Some(f) = frames::parse_tsl_function(v.name)
                    .or_else(|| frames::parse_kineto_function(v.name))
                && f.is_user()
            {
                let fid = self.frame_id(f);
                push_capped(
                    &mut self.py_input,
                    (key, v.ts, end, fid),
                    &mut self.capped,
                    "Python input frames",
                );
            }
            return;
        }

        // Data loading.
        let input_kind = if v.name.starts_with("enumerate(DataLoader)") {
            Some("DataLoader")
        } else if v.name.starts_with("Iterator::") {
            Some("tf.data")
        } else if v.name.contains("InfeedEnqueue") {
            Some("infeed")
        } else if v.cat == "gpu_memcpy" && v.name.contains("HtoD") {
            Some("host-to-device copy")
        } else {
            None
        };
        if let Some(kind) = input_kind {
            if !self.input_kinds.iter().any(|k| k == kind) {
                self.input_kinds.push(kind.to_owned());
            }
            push_capped(
                &mut self.input_spans,
                Span { thread: key, start: v.ts, end },
                &mut self.capped,
                "input spans",
            );
            if kind == "DataLoader" {
                let p = Probe { thread: key, ts: v.ts, op: INPUT_PROBE, best: None };
                push_capped(&mut self.probes, p, &mut self.capped, "probes");
            }
            if v.cat != "gpu_memcpy" {
                return;
            }
        }

        // Host syncs.
        let sync = v.name == "aten::_local_scalar_dense"
            || v.name.ends_with("::ToLiteral")
            || v.name.ends_with("::TransferFromDevice");
        if sync {
            let op = match self.sync_ops.iter().position(|s| s == v.name) {
                Some(i) => i,
                // A handful of names exist; a file inventing more shares the last slot.
                None if self.sync_ops.len() >= 16 => self.sync_ops.len() - 1,
                None => {
                    self.sync_ops.push(v.name.to_owned());
                    self.sync_ops.len() - 1
                }
            };
            push_capped(
                &mut self.probes,
                Probe { thread: key, ts: v.ts, op, best: None },
                &mut self.capped,
                "probes",
            );
        }

        // Compilation.
        if v.name == "XLAGraphExecutor::Compile"
            || v.name.ends_with("Client::Compile")
            || v.name == "backend_compile"
        {
            push_capped(
                &mut self.compile_spans,
                Span { thread: key, start: v.ts, end },
                &mut self.capped,
                "compiles",
            );
            if let Some(h) = v.graph_hash
                && (self.graph_hashes.len() < MAX_OPS || self.graph_hashes.contains_key(h))
            {
                *self.graph_hashes.entry(h.to_owned()).or_default() += 1;
            }
            return;
        }

        // Ops.
        let device_op = v.hlo_op.is_some()
            || (device_proc && (thread == "XLA Ops" || thread == "Async XLA Ops"))
            || matches!(v.cat, "kernel" | "gpu_memcpy" | "gpu_memset");
        if device_op {
            let name = v.hlo_op.unwrap_or(v.name);
            self.device_ops.add(name, v.hlo_module, v.dur, &mut self.capped);
        } else if v.cat == "cpu_op" {
            self.host_op(v, key);
        }
    }

    fn top(&mut self, key: &str, value: &[u8]) {
        match key {
            "schemaVersion" | "traceName" | "baseTimeNanoseconds" | "deviceProperties" => {
                self.kineto_keys = true
            }
            "metadata" if memchr::memmem::find(value, b"highres-ticks").is_some() => {
                self.tsl_keys = true
            }
            _ => {}
        }
    }

    /// Whether a second pass over Python events would add anything.
    fn wants_frames(&self) -> bool {
        self.python_events > 0 && (!self.probes.is_empty() || !self.input_spans.is_empty())
    }

    /// After pass one: closes open host ops, sorts records and finds the gaps between host step
    /// annotations (where a Python-generator loader runs).
    fn end_pass_one(&mut self) {
        let opens: Vec<Open> = self.open.drain().flat_map(|(_, v)| v).collect();
        for o in opens {
            self.host_ops.ops[o.op].1.total += (o.dur - o.children).max(0.0);
        }
        self.marks.sort_by(|a, b| a.start.total_cmp(&b.start));
        self.probes.sort_by(|a, b| a.thread.cmp(&b.thread).then(a.ts.total_cmp(&b.ts)));
        self.input_spans.sort_by(|a, b| a.thread.cmp(&b.thread).then(a.start.total_cmp(&b.start)));
        // Gaps: only between annotations that do not cover the whole iteration (TSL step
        // annotations inside the loop body), never between `ProfilerStep#N` spans.
        let host: Vec<&StepMark> =
            self.marks.iter().filter(|m| m.host && m.label != "ProfilerStep#N").collect();
        let mut gaps = Vec::new();
        for w in host.windows(2) {
            if w[1].start > w[0].end && w[0].thread == w[1].thread {
                gaps.push((
                    Span { thread: w[0].thread, start: w[0].end, end: w[1].start },
                    Vec::new(),
                ));
            }
        }
        gaps.sort_by(|a, b| a.0.thread.cmp(&b.0.thread).then(a.0.start.total_cmp(&b.0.start)));
        // Input-like Python functions that run inside a gap are its data loading.
        for &(key, ts, end, fid) in &self.py_input {
            let i =
                gaps.partition_point(|(g, _)| g.thread < key || (g.thread == key && g.start <= ts));
            let Some((g, merged)) = i.checked_sub(1).and_then(|i| gaps.get_mut(i)) else {
                continue;
            };
            if g.thread == key && ts >= g.start && end <= g.end {
                add_interval(merged, ts, end);
                *self.input_fn_time.entry(fid).or_default() += end - ts;
            }
        }
        self.gaps = gaps;
    }

    fn pass_two(
        &mut self,
        raw: &[u8],
        filter: &[memchr::memmem::Finder<'static>; 2],
    ) -> Result<(), String> {
        // Cheap filter: only Python events matter here.
        if filter.iter().all(|f| f.find(raw).is_none()) {
            return Ok(());
        }
        let e: RawEvent<'_> =
            serde_json::from_slice(raw).map_err(|err| format!("bad trace event: {err}"))?;
        if e.ph() != "X" || !(e.cat() == "python_function" || e.name().starts_with('$')) {
            return Ok(());
        }
        let (Some(pid), Some(tid)) = (self.lookup(e.pid.as_ref()), self.lookup(e.tid.as_ref()))
        else {
            return Ok(());
        };
        let key = thread_key(pid, tid);
        let ts = e.ts.map_or(0.0, |t| t.0);
        let end = ts + e.dur.map_or(0.0, |d| d.0.max(0.0));
        let own = frames::parse_kineto_function(e.name())
            .or_else(|| frames::parse_tsl_function(e.name()));
        let caller = e
            .args
            .as_ref()
            .and_then(|a| text(&a.call_from))
            .and_then(frames::split_file_line)
            .map(|(f, l)| Frame { file: f.to_owned(), line: l, function: None });

        // Probes inside this event: the innermost user caller (kineto), else the innermost user
        // function (TSL, which names only the function).
        let site = match (&caller, &own) {
            (Some(c), _) if c.is_user() => Some(c.clone()),
            (None, Some(o)) if o.is_user() => Some(o.clone()),
            _ => None,
        };
        if let Some(site) = site {
            let lo =
                self.probes.partition_point(|p| p.thread < key || (p.thread == key && p.ts < ts));
            let mut hits = Vec::new();
            for (i, p) in self.probes[lo..].iter().enumerate() {
                if p.thread != key || p.ts > end {
                    break;
                }
                if p.best.is_none_or(|(start, _)| ts >= start) {
                    hits.push(lo + i);
                }
            }
            if !hits.is_empty() {
                let fid = self.frame_id(site);
                for i in hits {
                    self.probes[i].best = Some((ts, fid));
                }
            }
        }

        // Time of user functions inside data-loading spans and inter-step gaps.
        if let Some(own) = own.filter(Frame::is_user) {
            let mut inside = 0.0;
            let lo = self
                .input_spans
                .partition_point(|s| s.thread < key || (s.thread == key && s.end < ts));
            // Only functions that run inside a span count (not `main`, which encloses them all).
            for s in &self.input_spans[lo..] {
                if s.thread != key || s.start > end {
                    break;
                }
                if ts >= s.start && end <= s.end {
                    inside += end - ts;
                }
            }
            if inside > 0.0 {
                let fid = self.frame_id(own);
                *self.input_fn_time.entry(fid).or_default() += inside;
            }
        }
        Ok(())
    }

    fn finish(mut self, stats: scan::ScanStats, top: usize) -> TraceSummary {
        let producer = if self.kineto_keys {
            Producer::Kineto
        } else if self.tsl_keys {
            Producer::Tsl
        } else {
            Producer::Generic
        };
        // Steps: host markers when there are any (they include data loading), else device; of
        // those, the thread (device line) with the most markers, so that several devices'
        // `Steps` lines or a second annotating thread do not interleave.
        let use_host = self.marks.iter().any(|m| m.host);
        let mut per_thread: HashMap<u64, usize> = HashMap::new();
        for m in self.marks.iter().filter(|m| m.host == use_host) {
            *per_thread.entry(m.thread).or_default() += 1;
        }
        let thread =
            per_thread.iter().max_by_key(|(t, n)| (**n, std::cmp::Reverse(**t))).map(|(t, _)| *t);
        let marks: Vec<&StepMark> =
            self.marks.iter().filter(|m| m.host == use_host && Some(m.thread) == thread).collect();
        let step_marker = marks.first().map(|m| m.label.clone());
        let mut steps: Vec<Step> = Vec::with_capacity(marks.len());
        for (i, m) in marks.iter().enumerate() {
            let end = match marks.get(i + 1) {
                Some(next) if next.start > m.start => next.start.max(m.end.min(next.start)),
                _ => m.end,
            };
            steps.push(Step {
                num: m.num,
                start_us: m.start,
                dur_us: (end - m.start).max(0.0),
                input_us: 0.0,
            });
        }
        // Input time per step: named input spans and input-like frames in gaps, each unioned.
        let mut input_iv: Vec<(f64, f64)> =
            self.input_spans.iter().map(|s| (s.start, s.end)).collect();
        for (_, merged) in &self.gaps {
            input_iv.extend(merged.iter().copied());
        }
        let input_iv = union(input_iv);
        if self.gaps.iter().any(|(_, m)| !m.is_empty()) {
            self.input_kinds.push("Python functions between steps".to_owned());
        }
        for s in &mut steps {
            s.input_us = overlap(&input_iv, s.start_us, s.start_us + s.dur_us);
        }

        let mut functions: Vec<(Frame, f64)> = self
            .input_fn_time
            .iter()
            .map(|(&fid, &t)| (self.frames[fid as usize].clone(), t))
            .collect();
        functions.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        functions.truncate(5);
        let mut sites: HashMap<u32, u64> = HashMap::new();
        for p in self.probes.iter().filter(|p| p.op == INPUT_PROBE) {
            if let Some((_, fid)) = p.best {
                *sites.entry(fid).or_default() += 1;
            }
        }
        let loop_site = sites
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
            .map(|(&fid, _)| self.frames[fid as usize].clone());

        // Syncs grouped by (op, frame). torch_xla's `TransferFromDevice` wraps the buffer's
        // `ToLiteral`: count the outer event only.
        let has_transfer = self.sync_ops.iter().any(|o| o.ends_with("::TransferFromDevice"));
        let counted = |op: usize| {
            op != INPUT_PROBE && !(has_transfer && self.sync_ops[op].ends_with("::ToLiteral"))
        };
        let mut groups: HashMap<(usize, Option<u32>), u64> = HashMap::new();
        for p in self.probes.iter().filter(|p| counted(p.op)) {
            *groups.entry((p.op, p.best.map(|b| b.1))).or_default() += 1;
        }
        let mut syncs: Vec<SyncSite> = groups
            .into_iter()
            .map(|((op, fid), count)| SyncSite {
                op: self.sync_ops[op].clone(),
                count,
                frame: fid.map(|f| self.frames[f as usize].clone()),
            })
            .collect();
        syncs.sort_by(|a, b| {
            b.count.cmp(&a.count).then_with(|| a.frame.cmp(&b.frame)).then_with(|| a.op.cmp(&b.op))
        });

        let (op_domain, table) = if !self.device_ops.ops.is_empty() {
            (Some(OpDomain::Device), self.device_ops)
        } else if !self.host_ops.ops.is_empty() {
            (Some(OpDomain::Host), self.host_ops)
        } else {
            (None, OpTable::default())
        };
        let op_total_us = table.ops.iter().map(|(_, a)| a.total).sum();
        let mut ops: Vec<OpTime> = table
            .ops
            .into_iter()
            .map(|(name, a)| OpTime { name, module: a.module, count: a.count, total_us: a.total })
            .collect();
        ops.sort_by(|a, b| b.total_us.total_cmp(&a.total_us).then_with(|| a.name.cmp(&b.name)));
        ops.truncate(top);

        let compile_iv = union(self.compile_spans.iter().map(|s| (s.start, s.end)).collect());
        let mut graph_hashes: Vec<(String, u64)> = self.graph_hashes.into_iter().collect();
        graph_hashes.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let compiles = TraceCompiles {
            count: count_outermost(&self.compile_spans),
            total_us: compile_iv.iter().map(|(a, b)| b - a).sum(),
            graph_hashes,
        };
        let mut notes: Vec<String> = self
            .capped
            .iter()
            .map(|c| format!("only the first {MAX_RECORDS} {c} were kept"))
            .collect();
        if stats.truncated {
            notes.push(
                "the trace ends before its event array does (read to the last complete event)"
                    .to_owned(),
            );
        }
        TraceSummary {
            producer,
            events: stats.events,
            bytes: stats.bytes,
            truncated: stats.truncated,
            span_us: self.first_ts.map_or(0.0, |f| (self.last_end - f).max(0.0)),
            step_marker,
            steps,
            input: InputEvidence { kinds: self.input_kinds, loop_site, functions },
            op_domain,
            op_total_us,
            top_ops: ops,
            syncs,
            compiles,
            notes,
        }
    }
}

/// Adds `[a, b)` to a small sorted list of disjoint intervals (merging; capped at
/// [`MAX_GAP_INTERVALS`] entries, beyond which the last one is widened to cover the rest).
fn add_interval(v: &mut Vec<(f64, f64)>, a: f64, b: f64) {
    v.push((a, b));
    let merged = union(std::mem::take(v));
    *v = merged;
    if v.len() > MAX_GAP_INTERVALS {
        let tail = v.split_off(MAX_GAP_INTERVALS - 1);
        let lo = tail.first().map_or(a, |t| t.0);
        let hi = tail.iter().map(|t| t.1).fold(b, f64::max);
        v.push((lo, hi));
    }
}

/// Sorted disjoint union of intervals.
fn union(mut v: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    v.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// Length of `[lo, hi)` covered by sorted disjoint intervals.
fn overlap(iv: &[(f64, f64)], lo: f64, hi: f64) -> f64 {
    let start = iv.partition_point(|x| x.1 <= lo);
    iv[start..].iter().take_while(|x| x.0 < hi).map(|x| (x.1.min(hi) - x.0.max(lo)).max(0.0)).sum()
}

/// Spans not nested inside another span of the same thread.
fn count_outermost(spans: &[Span]) -> u64 {
    let mut v: Vec<&Span> = spans.iter().collect();
    v.sort_by(|a, b| {
        a.thread.cmp(&b.thread).then(a.start.total_cmp(&b.start)).then(b.end.total_cmp(&a.end))
    });
    let mut n = 0;
    let mut cur: Option<(u64, f64)> = None;
    for s in v {
        match cur {
            Some((t, end)) if t == s.thread && s.start < end => {}
            _ => {
                n += 1;
                cur = Some((s.thread, s.end));
            }
        }
    }
    n
}

struct PassOne<'a>(&'a mut Analyzer);
impl scan::Sink for PassOne<'_> {
    fn top(&mut self, key: &str, value: &[u8]) {
        self.0.top(key, value);
    }
    fn event(&mut self, raw: &[u8]) -> Result<(), String> {
        self.0.pass_one(raw)
    }
}

struct PassTwo<'a>(&'a mut Analyzer, [memchr::memmem::Finder<'static>; 2]);
impl scan::Sink for PassTwo<'_> {
    fn top(&mut self, _key: &str, _value: &[u8]) {}
    fn event(&mut self, raw: &[u8]) -> Result<(), String> {
        self.0.pass_two(raw, &self.1)
    }
}

/// Reads a trace. `open` returns a fresh reader over the (decompressed) JSON each time it is
/// called: once, or twice when Python frames must be matched to events.
pub(crate) fn read_trace(
    mut open: impl FnMut() -> std::io::Result<Box<dyn Read>>,
    limit: usize,
    top: usize,
) -> Result<TraceSummary, scan::ScanError> {
    let mut a = Analyzer::default();
    let stats = scan::scan(open().map_err(scan::ScanError::Io)?, limit, &mut PassOne(&mut a))?;
    if !stats.has_events {
        return Err(scan::ScanError::NotATrace);
    }
    a.end_pass_one();
    if a.wants_frames() {
        let filter =
            [memchr::memmem::Finder::new(b"python_function"), memchr::memmem::Finder::new(b"\"$")];
        scan::scan(open().map_err(scan::ScanError::Io)?, limit, &mut PassTwo(&mut a, filter))?;
    }
    Ok(a.finish(stats, top))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn read(json: &str) -> TraceSummary {
        let owned = json.to_owned();
        read_trace(
            move || Ok(Box::new(std::io::Cursor::new(owned.clone().into_bytes()))),
            1 << 20,
            10,
        )
        .unwrap()
    }

    #[test]
    fn intervals() {
        let u = union(vec![(5.0, 7.0), (1.0, 3.0), (2.0, 4.0)]);
        assert_eq!(u, vec![(1.0, 4.0), (5.0, 7.0)]);
        assert_eq!(overlap(&u, 3.0, 6.0), 2.0);
        let mut v = Vec::new();
        add_interval(&mut v, 1.0, 2.0);
        add_interval(&mut v, 1.5, 3.0);
        assert_eq!(v, vec![(1.0, 3.0)]);
    }

    #[test]
    fn host_self_time_subtracts_children() {
        let t = read(
            r#"{"schemaVersion":1,"traceEvents":[
            {"ph":"X","cat":"cpu_op","name":"aten::linear","pid":1,"tid":1,"ts":0,"dur":10},
            {"ph":"X","cat":"cpu_op","name":"aten::addmm","pid":1,"tid":1,"ts":1,"dur":8},
            {"ph":"X","cat":"cpu_op","name":"aten::relu","pid":1,"tid":1,"ts":11,"dur":2}]}"#,
        );
        assert_eq!(t.producer, Producer::Kineto);
        assert_eq!(t.op_domain, Some(OpDomain::Host));
        let get = |n: &str| t.top_ops.iter().find(|o| o.name == n).unwrap().total_us;
        assert_eq!(get("aten::linear"), 2.0);
        assert_eq!(get("aten::addmm"), 8.0);
        assert_eq!(get("aten::relu"), 2.0);
    }

    #[test]
    fn tpu_layout_steps_from_one_device_line() {
        // The TSL writer's layout for two TPU cores: `Steps` and `XLA Ops` lines per device.
        let mut ev = String::from(
            r#"{"displayTimeUnit":"ns","metadata":{"highres-ticks":true},"traceEvents":[
            {"ph":"M","pid":1,"name":"process_name","args":{"name":"/device:TPU:0"}},
            {"ph":"M","pid":2,"name":"process_name","args":{"name":"/device:TPU:1"}},
            {"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"Steps"}},
            {"ph":"M","pid":1,"tid":3,"name":"thread_name","args":{"name":"XLA Ops"}},
            {"ph":"M","pid":2,"tid":1,"name":"thread_name","args":{"name":"Steps"}},"#,
        );
        for i in 0..4 {
            let t = f64::from(i) * 100.0;
            ev.push_str(&format!(
                r#"{{"ph":"X","pid":1,"tid":1,"ts":{t},"dur":90,"name":"{i}"}},{{"ph":"X","pid":2,"tid":1,"ts":{},"dur":90,"name":"{i}"}},{{"ph":"X","pid":1,"tid":3,"ts":{t},"dur":60,"name":"fusion.1"}},"#,
                t + 1.0
            ));
        }
        ev.push_str("{}]}");
        let t = read(&ev);
        assert_eq!(t.producer, Producer::Tsl);
        assert_eq!(t.step_marker.as_deref(), Some("Steps"));
        assert_eq!(
            t.steps.iter().map(|s| s.num).collect::<Vec<_>>(),
            [Some(0), Some(1), Some(2), Some(3)]
        );
        assert_eq!(t.steps[0].dur_us, 100.0);
        assert_eq!(t.op_domain, Some(OpDomain::Device));
        assert_eq!((t.top_ops[0].name.as_str(), t.top_ops[0].count), ("fusion.1", 4));
    }

    #[test]
    fn begin_end_pairs_become_steps() {
        let t = read(
            r#"[{"ph":"B","name":"ProfilerStep#3","pid":1,"tid":1,"ts":0},
               {"ph":"B","name":"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__","pid":1,"tid":1,"ts":1},
               {"ph":"E","pid":1,"tid":1,"ts":6},
               {"ph":"E","pid":1,"tid":1,"ts":10}"#,
        );
        assert_eq!(t.producer, Producer::Generic);
        assert_eq!(t.steps.len(), 1);
        assert_eq!(t.steps[0].num, Some(3));
        assert_eq!(t.steps[0].input_us, 5.0);
        assert!(t.truncated, "array without its closing bracket");
    }
}
