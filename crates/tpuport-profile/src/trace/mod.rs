//! Chrome-trace JSON from torch.profiler (kineto) and from the TSL profiler behind
//! `jax.profiler` and `torch_xla.debug.profiler`, read in one streaming pass (two when Python
//! frames must be matched to events) into a [`TraceSummary`].
//!
//! Memory does not grow with the file: the ops table is keyed by op name (capped), and only
//! per-step records (step spans, data-loading spans, host-sync probes, compile spans) are kept,
//! each list capped. Python-tracer events are matched to those records in a second pass over
//! the file instead of being stored; the TSL tracer's calls, written in time order per thread,
//! are settled against their thread's dispatch in the first pass ([`lines`], for [`idle`]).

mod event;
mod idle;
mod intervals;
mod lines;
pub(crate) mod scan;

use std::collections::HashMap;
use std::io::Read;

use serde::Serialize;

use crate::frames::{self, Frame};
use event::{Id, RawEvent, text};
use intervals::{overlap, push_merged, union};
use lines::{HostCall, Line};

/// Most distinct op names tracked; later names are summed as `(other ops)`.
const MAX_OPS: usize = 100_000;
/// Most records kept per list (steps, spans, probes, compiles).
const MAX_RECORDS: usize = 1_000_000;
/// Deepest `B`/`E` nesting tracked per thread.
const MAX_BE_DEPTH: usize = 256;
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
    /// Time of this step spent in named data loading (the union of the input spans inside it)
    /// while the device idled; all of it when the trace has no device timeline.
    pub input_us: f64,
    /// Time of this step in which the device idled while the host ran something other than the
    /// step's device work (a loader of any name, other Python), outside named data loading.
    /// Zero without a device timeline or host step markers (see `idle`).
    pub host_us: f64,
    /// Device-busy time within the step, when the trace has a device timeline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_us: Option<f64>,
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
    /// The outermost Python calls on the step thread that ran while the device idled outside
    /// the step's device work (the steps' `host_us`), most time first.
    pub host_functions: Vec<HostFunction>,
}

/// A Python call that kept the host busy while the device idled.
#[derive(Debug, Clone, Serialize)]
pub struct HostFunction {
    /// The function (TSL frames name the file without its folder and the `def` line).
    pub frame: Frame,
    /// The line that called it (kineto's `CallFrom`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caller: Option<Frame>,
    /// Device-idle time inside its calls, µs.
    pub us: f64,
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
    /// What the device timeline was read from (XLA ops, XLA:CPU program executions, GPU
    /// kernels, or a CPU-only PyTorch trace's aten ops), when the trace has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_timeline: Option<String>,
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
    /// Device-busy intervals (see [`idle`]) and what they came from.
    device_iv: Vec<(f64, f64)>,
    device_kinds: Vec<&'static str>,
    /// kineto `cpu_op` intervals: the device timeline of a CPU-only PyTorch trace.
    cpu_op_iv: Vec<(f64, f64)>,
    /// Host events that drive the device (dispatch, execute, wait, aten ops), per thread.
    dispatch: Vec<Span>,
    /// Per-thread dispatch and Python state (the host's calls outside the device work).
    lines: HashMap<u64, Line>,
    /// The step thread's Python calls are settled in pass two (kineto, or out of order).
    host_calls_in_pass_two: bool,
    /// The thread with the host step markers; its dispatch intervals, unioned.
    step_thread: Option<u64>,
    dispatch_iv: Vec<(f64, f64)>,
    // Pass two.
    frames: Vec<Frame>,
    frame_index: HashMap<Frame, u32>,
    input_fn_time: HashMap<u32, f64>,
    /// Python calls on the step thread that touch no dispatch interval.
    host_calls: Vec<HostCall>,
}

fn thread_key(pid: u32, tid: u32) -> u64 {
    (u64::from(pid) << 32) | u64::from(tid)
}

fn step_number(name: &str) -> Option<i64> {
    name.strip_prefix("ProfilerStep#").and_then(|n| n.parse().ok())
}

/// Host events that drive the device: a call into the framework that dispatches, executes or
/// waits for device work (`PjitFunction(…)`, `…Execute…`, `…Await…`, transfers back to the
/// host, compiles), PyTorch ops (`cpu_op`), optimizer steps and CUDA runtime calls.
fn is_dispatch(name: &str, cat: &str) -> bool {
    matches!(cat, "cpu_op" | "cuda_runtime" | "cuda_driver")
        || name.starts_with("Optimizer.")
        || name.starts_with("PjitFunction")
        || name.starts_with("PmapFunction")
        || name.starts_with("XLAGraphExecutor::")
        || name.contains("Execute")
        || name.contains("Await")
        || name.contains("BlockHostUntilReady")
        || name.ends_with("::TransferFromDevice")
        || name.ends_with("::ToLiteral")
        || name.ends_with("Client::Compile")
        || name == "backend_compile"
}

/// Whether a Python event is the profiler's own machinery (`StepTraceAnnotation.__init__`,
/// `prof.step()`): never the user's host work.
fn is_profiler_frame(name: &str) -> bool {
    name.contains("profiler.py") || name.contains("/profiler/")
}

/// The thread with the most step markers of a kind (host or device), lowest id on a tie.
fn marker_thread(marks: &[StepMark], host: bool) -> Option<u64> {
    let mut per_thread: HashMap<u64, usize> = HashMap::new();
    for m in marks.iter().filter(|m| m.host == host) {
        *per_thread.entry(m.thread).or_default() += 1;
    }
    per_thread.iter().max_by_key(|(t, n)| (**n, std::cmp::Reverse(**t))).map(|(t, _)| *t)
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

    /// Adds an event to the device timeline (device ops and program executions, GPU kernels;
    /// host-to-device copies stay input), to the `cpu_op` timeline, and to its thread's
    /// dispatch intervals.
    fn timelines(&mut self, v: &View<'_>, key: u64, device_line: bool, device_proc: bool) {
        let end = v.ts + v.dur;
        let kind = if v.hlo_op.is_some() || device_line {
            Some("XLA ops")
        } else if v.name.starts_with("ThunkExecutor::Execute") {
            Some("XLA:CPU program executions")
        } else if matches!(v.cat, "kernel" | "gpu_memset")
            || (v.cat == "gpu_memcpy" && !v.name.contains("HtoD"))
        {
            Some("GPU kernels and copies")
        } else {
            None
        };
        if let Some(kind) = kind
            && v.dur > 0.0
        {
            if !self.device_kinds.contains(&kind) {
                self.device_kinds.push(kind);
            }
            if !push_merged(&mut self.device_iv, v.ts, end, MAX_RECORDS)
                && !self.capped.contains(&"device intervals")
            {
                self.capped.push("device intervals");
            }
        }
        if v.cat == "cpu_op"
            && v.dur > 0.0
            && !push_merged(&mut self.cpu_op_iv, v.ts, end, MAX_RECORDS)
            && !self.capped.contains(&"cpu_op intervals")
        {
            self.capped.push("cpu_op intervals");
        }
        if device_proc || !is_dispatch(v.name, v.cat) {
            return;
        }
        let line = self.lines.entry(key).or_default();
        line.dispatch(v.ts, end, MAX_RECORDS);
        // Nested events (an op's sub-ops) extend their thread's last interval.
        if let Some(last) = line.dispatch_last.and_then(|i| self.dispatch.get_mut(i))
            && v.ts >= last.start
            && v.ts <= last.end
        {
            last.end = last.end.max(end);
            return;
        }
        let span = Span { thread: key, start: v.ts, end };
        push_capped(&mut self.dispatch, span, &mut self.capped, "dispatch spans");
        line.dispatch_last = Some(self.dispatch.len() - 1);
    }

    fn complete(&mut self, v: &View<'_>) {
        let key = thread_key(v.pid, v.tid);
        let end = v.ts + v.dur;
        self.first_ts = Some(self.first_ts.map_or(v.ts, |f| f.min(v.ts)));
        self.last_end = self.last_end.max(end);
        let thread = self.thread_names.get(&key).map(String::as_str).unwrap_or("");
        let device_proc = self.is_device_proc(v.pid);
        let (steps_line, xla_line) = (thread == "Steps", thread.starts_with("XLA"));
        let ops_line = matches!(thread, "XLA Ops" | "Async XLA Ops");
        let device_line = device_proc && (ops_line || thread == "XLA Modules");

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
        if steps_line {
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
            && !xla_line
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

        // Python frames: TSL calls are settled against the thread's dispatch here (see
        // `lines`); kineto's, and the frames for probes, in pass two.
        if v.cat == "python_function" || v.name.starts_with('$') {
            self.python_events += 1;
            if v.cat == "python_function" {
                let line = self.lines.entry(key).or_default();
                line.python += 1;
                line.kineto_python = true;
            } else {
                let call = (v.dur > 0.0 && !is_profiler_frame(v.name)).then(|| {
                    let frame = frames::parse_tsl_function(v.name).map(|f| self.frame_id(f));
                    HostCall { start: v.ts, end: v.ts + v.dur, frame, caller: None }
                });
                self.lines.entry(key).or_default().python(v.ts, call, MAX_RECORDS);
            }
            return;
        }

        // The device timeline and the host's dispatch, for the idle time of each step.
        self.timelines(v, key, device_line, device_proc);

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
            || (device_proc && ops_line)
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

    /// Whether a second pass over Python events would add anything: frames for probes and
    /// input spans, and the host's calls outside the device work on the step thread.
    fn wants_frames(&self) -> bool {
        self.python_events > 0
            && (!self.probes.is_empty()
                || !self.input_spans.is_empty()
                || self.host_calls_in_pass_two)
    }

    /// After pass one: closes open host ops, sorts records, and finds the thread with the host
    /// step markers and its dispatch intervals.
    fn end_pass_one(&mut self) {
        let opens: Vec<Open> = self.open.drain().flat_map(|(_, v)| v).collect();
        for o in opens {
            self.host_ops.ops[o.op].1.total += (o.dur - o.children).max(0.0);
        }
        self.marks.sort_by(|a, b| a.start.total_cmp(&b.start));
        self.probes.sort_by(|a, b| a.thread.cmp(&b.thread).then(a.ts.total_cmp(&b.ts)));
        self.input_spans.sort_by(|a, b| a.thread.cmp(&b.thread).then(a.start.total_cmp(&b.start)));
        self.step_thread = marker_thread(&self.marks, true);
        for line in self.lines.values_mut() {
            line.settle(f64::INFINITY, MAX_RECORDS);
            line.dispatch_last = None;
        }
        if let Some(line) = self.step_thread.and_then(|t| self.lines.get_mut(&t))
            && line.python > 0
        {
            if line.kineto_python || line.unsorted {
                self.host_calls_in_pass_two = true;
            } else {
                self.host_calls = std::mem::take(&mut line.calls);
                if line.capped {
                    self.capped.push("host calls");
                }
            }
        }
        for line in self.lines.values_mut() {
            line.calls = Vec::new();
        }
        let dispatch = std::mem::take(&mut self.dispatch);
        self.dispatch_iv = union(
            dispatch
                .iter()
                .filter(|d| Some(d.thread) == self.step_thread)
                .map(|d| (d.start, d.end))
                .collect(),
        );
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

        // Calls on the step thread that touch no dispatch interval: host work outside the
        // device work. One nested in the previous call adds nothing.
        if self.host_calls_in_pass_two
            && Some(key) == self.step_thread
            && end > ts
            && !is_profiler_frame(e.name())
        {
            let i = self.dispatch_iv.partition_point(|x| x.1 <= ts);
            let touches = self.dispatch_iv.get(i).is_some_and(|x| x.0 < end);
            let nested = self.host_calls.last().is_some_and(|c| ts >= c.start && end <= c.end);
            if !touches && !nested {
                let frame = own.clone().map(|f| self.frame_id(f));
                let caller = caller.clone().filter(Frame::is_user).map(|f| self.frame_id(f));
                let call = HostCall { start: ts, end, frame, caller };
                push_capped(&mut self.host_calls, call, &mut self.capped, "host calls");
            }
        }

        // Time of user functions inside data-loading spans.
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

    /// The outermost host calls with their device-idle time, grouped by function and caller,
    /// most time first (at most five).
    fn host_functions(&mut self, host_iv: &[(f64, f64)]) -> Vec<HostFunction> {
        let mut calls = std::mem::take(&mut self.host_calls);
        calls.sort_by(|a, b| a.start.total_cmp(&b.start).then(b.end.total_cmp(&a.end)));
        let mut time: HashMap<(u32, Option<u32>), f64> = HashMap::new();
        let mut outer_end = f64::NEG_INFINITY;
        for c in calls {
            if c.end <= outer_end {
                continue;
            }
            outer_end = c.end;
            let us = overlap(host_iv, c.start, c.end);
            if let Some(f) = c.frame
                && us > 0.0
            {
                *time.entry((f, c.caller)).or_default() += us;
            }
        }
        let mut out: Vec<HostFunction> = time
            .into_iter()
            .map(|((f, c), us)| HostFunction {
                frame: self.frames[f as usize].clone(),
                caller: c.map(|c| self.frames[c as usize].clone()),
                us,
            })
            .collect();
        out.sort_by(|a, b| b.us.total_cmp(&a.us).then_with(|| a.frame.cmp(&b.frame)));
        out.truncate(5);
        out
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
        let thread = marker_thread(&self.marks, use_host);
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
                host_us: 0.0,
                device_us: None,
            });
        }
        // Where the device idles in each step and what the host does meanwhile.
        let (device, device_timeline) = if !self.device_iv.is_empty() {
            (union(std::mem::take(&mut self.device_iv)), Some(self.device_kinds.join(", ")))
        } else if producer == Producer::Kineto && !self.cpu_op_iv.is_empty() {
            let label = "aten ops (a CPU-only PyTorch trace: the CPU is the device)";
            (union(std::mem::take(&mut self.cpu_op_iv)), Some(label.to_owned()))
        } else {
            (Vec::new(), None)
        };
        let named = union(self.input_spans.iter().map(|s| (s.start, s.end)).collect());
        let frames_on_step_thread =
            self.step_thread.and_then(|t| self.lines.get(&t)).is_some_and(|l| l.python > 0);
        let evidence = frames_on_step_thread
            .then(|| union(self.host_calls.iter().map(|c| (c.start, c.end)).collect()));
        let host_iv = idle::account(
            &mut steps,
            &idle::Timelines {
                device: &device,
                named: &named,
                dispatch: &self.dispatch_iv,
                evidence: evidence.as_deref(),
                host_steps: use_host && thread == self.step_thread,
            },
        );
        let host_functions = self.host_functions(&host_iv);

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
            device_timeline,
            input: InputEvidence { kinds: self.input_kinds, loop_site, functions, host_functions },
            op_domain,
            op_total_us,
            top_ops: ops,
            syncs,
            compiles,
            notes,
        }
    }
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

/// Reads a trace held in a string (tests).
#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
pub(crate) fn read_str(json: &str) -> TraceSummary {
    let owned = json.to_owned();
    read_trace(move || Ok(Box::new(std::io::Cursor::new(owned.clone().into_bytes()))), 1 << 20, 10)
        .unwrap()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn read(json: &str) -> TraceSummary {
        read_str(json)
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
    fn host_work_in_time_order_or_not() {
        // Two steps: dispatch, device work on another thread, then a 60 µs loader call.
        let events = [
            r#"{"ph":"X","pid":1,"tid":1,"ts":0,"dur":30,"name":"train","args":{"step_num":"0"}}"#,
            r#"{"ph":"X","pid":1,"tid":1,"ts":1,"dur":5,"name":"PjitFunction(step)"}"#,
            r#"{"ph":"X","pid":1,"tid":1,"ts":10,"dur":20,"name":"CommonPjRtBuffer::Await"}"#,
            r#"{"ph":"X","pid":1,"tid":1,"ts":35,"dur":60,"name":"$train.py:7 pull"}"#,
            r#"{"ph":"X","pid":1,"tid":1,"ts":36,"dur":50,"name":"$time sleep"}"#,
            r#"{"ph":"X","pid":1,"tid":1,"ts":100,"dur":30,"name":"train","args":{"step_num":"1"}}"#,
            r#"{"ph":"X","pid":1,"tid":1,"ts":101,"dur":5,"name":"PjitFunction(step)"}"#,
            r#"{"ph":"X","pid":1,"tid":2,"ts":8,"dur":20,"name":"fusion","args":{"hlo_op":"fusion"}}"#,
            r#"{"ph":"X","pid":1,"tid":2,"ts":108,"dur":20,"name":"fusion","args":{"hlo_op":"fusion"}}"#,
        ];
        let trace = |order: &[usize]| {
            let body: Vec<&str> = order.iter().map(|&i| events[i]).collect();
            read(&format!(
                r#"{{"metadata":{{"highres-ticks":true}},"traceEvents":[{}]}}"#,
                body.join(",")
            ))
        };
        // In time order (settled in pass one) and with the loader written last (pass two).
        for t in [trace(&[0, 1, 2, 3, 4, 5, 6, 7, 8]), trace(&[0, 1, 2, 5, 6, 7, 8, 3, 4])] {
            assert_eq!(t.steps.len(), 2);
            assert_eq!((t.steps[0].host_us, t.steps[0].device_us), (60.0, Some(20.0)));
            assert_eq!(t.steps[1].host_us, 0.0);
            let f = &t.input.host_functions[0];
            assert_eq!((f.frame.file.as_str(), f.frame.line, f.us), ("train.py", 7, 60.0));
        }
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
