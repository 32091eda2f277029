//! `tpuport conformance DIR`: the ONNX backend test cases through `tpuport lower` on a PJRT
//! device, compared with their expected outputs.
//!
//! DIR holds cases in the ONNX backend layout (`<suite>/<case>/model.onnx`,
//! `test_data_set_0/input_<j>.pb`, `output_<j>.pb`), as `scripts/onnx_conformance.py` writes
//! them (`make conformance`), with a `case.json` per case naming its main op, its tolerances and
//! the kinds of its inputs and outputs. Each case is imported with its input shapes bound from
//! the input files, lowered, compiled, run and compared (see [`compare`]). All cases run in
//! this one process on one PJRT client, in parallel; a panic in one case is caught, and a case
//! that runs past `--timeout` is reported as an error and abandoned.

mod compare;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use tpuport_formats::{ImportOptions, Limits};
use tpuport_lower::LowerError;
use tpuport_lower::onnx::{ArgSource, LowerOptions};
use tpuport_model::{HostTensor, Model, Shape, ValueKind, Weight, WeightData};
use tpuport_pjrt::{Client, ClientOptions, CompileOptions, Program};

use crate::cli::{Format, GlobalArgs};
use crate::commands::Status;
use crate::printer::Printer;

/// Arguments of `tpuport conformance`.
#[derive(Debug, Args)]
pub(crate) struct ConformanceArgs {
    /// Directory of test cases (`<suite>/<case>/model.onnx` + `test_data_set_0/`), as written
    /// by `scripts/onnx_conformance.py`; a single case directory also works.
    pub(crate) dir: PathBuf,
    /// Run only cases whose `<suite>/<case>` name contains this text (repeatable: any).
    #[arg(long, value_name = "TEXT")]
    pub(crate) filter: Vec<String>,
    /// Parallel cases (default: the number of CPUs).
    #[arg(long, short = 'j', value_name = "N")]
    pub(crate) jobs: Option<usize>,
    /// Seconds one case may take (import, lower, compile, run) before it counts as an error.
    #[arg(long, value_name = "SECONDS", default_value_t = 120)]
    pub(crate) timeout: u64,
    /// Write the JSON summary (totals, per suite, per op, every case) to this file.
    #[arg(long, value_name = "FILE")]
    pub(crate) json: Option<PathBuf>,
    /// Reference models (ONNX): the "reference ops" pass rate counts node cases whose main op
    /// occurs in one of them.
    #[arg(long = "reference", value_name = "MODEL.onnx")]
    pub(crate) reference: Vec<PathBuf>,
    /// JSON file of minimum pass percentages (`{"node": 70.0, "node_reference_ops": 90.0,
    /// "all": 65.0}`); exit 1 when a measured rate is below its floor.
    #[arg(long, value_name = "FILE")]
    pub(crate) floor: Option<PathBuf>,
    /// Show every failing case in the text report, not only the per-op table.
    #[arg(long)]
    pub(crate) cases: bool,
    /// PJRT plugin library (default: as for `run`).
    #[arg(long, value_name = "PATH")]
    pub(crate) plugin: Option<PathBuf>,
}

/// How a case ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
enum Outcome {
    Pass,
    /// Ran, and an output's shape, type or values differ.
    Fail,
    /// The lowering (or the runner) does not handle an op, attribute or value kind.
    Unsupported,
    /// Import, lowering, compile or execute failed, panicked or timed out.
    Error,
}

/// `case.json` written by the dump script.
#[derive(Debug, Default, Deserialize)]
struct CaseMeta {
    #[serde(default)]
    op: String,
    #[serde(default)]
    rtol: Option<f64>,
    #[serde(default)]
    atol: Option<f64>,
    #[serde(default)]
    inputs: Vec<IoMeta>,
    #[serde(default)]
    outputs: Vec<IoMeta>,
}

#[derive(Debug, Deserialize)]
struct IoMeta {
    name: String,
    kind: String,
}

/// One case found on disk.
#[derive(Debug)]
struct Case {
    suite: String,
    name: String,
    dir: PathBuf,
    meta: CaseMeta,
}

#[derive(Clone, Debug, Serialize)]
struct CaseResult {
    suite: String,
    name: String,
    op: String,
    outcome: Outcome,
    /// Stage that stopped the case (`data`, `import`, `lower`, `compile`, `execute`,
    /// `compare`, `panic`, `timeout`), empty on pass.
    stage: &'static str,
    reason: String,
    ms: f64,
    /// Graph inputs bound to their test values as constants because the lowering needs them
    /// at lowering time (axes, shapes, pads given as inputs).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    bound_inputs: Vec<String>,
}

#[derive(Clone, Copy, Debug, Default, Serialize)]
struct Tally {
    total: usize,
    pass: usize,
    fail: usize,
    unsupported: usize,
    error: usize,
}

impl Tally {
    fn add(&mut self, o: Outcome) {
        self.total += 1;
        match o {
            Outcome::Pass => self.pass += 1,
            Outcome::Fail => self.fail += 1,
            Outcome::Unsupported => self.unsupported += 1,
            Outcome::Error => self.error += 1,
        }
    }

    fn pct(&self) -> f64 {
        if self.total == 0 { 0.0 } else { 100.0 * self.pass as f64 / self.total as f64 }
    }
}

#[derive(Debug, Serialize)]
struct Summary {
    schema: &'static str,
    dir: PathBuf,
    platform: String,
    wall_s: f64,
    /// Pass percentages: `all`, `node`, `node_reference_ops`, and each suite.
    pass_pct: BTreeMap<String, f64>,
    total: Tally,
    suites: BTreeMap<String, Tally>,
    /// Node-suite cases whose main op occurs in a `--reference` model.
    node_reference_ops: Tally,
    /// Passing cases that needed graph inputs bound as constants.
    pass_with_bound_inputs: usize,
    reference_ops: Vec<String>,
    ops: BTreeMap<String, Tally>,
    cases: Vec<CaseResult>,
}

pub(crate) fn run(a: &ConformanceArgs, g: &GlobalArgs, p: &Printer) -> anyhow::Result<Status> {
    let floor = a.floor.as_deref().map(read_floor).transpose()?;
    let mut cases = discover(&a.dir)?;
    if !a.filter.is_empty() {
        cases.retain(|c| {
            let full = format!("{}/{}", c.suite, c.name);
            a.filter.iter().any(|f| full.contains(f.as_str()))
        });
    }
    if cases.is_empty() {
        bail!("{}: no test cases (directories with model.onnx) match", a.dir.display());
    }
    let reference_ops = reference_ops(&a.reference)?;
    let found = tpuport_pjrt::find(a.plugin.as_deref())?;
    p.info(&format!("plugin: {} ({})", found.path.display(), found.source));
    let plugin = tpuport_pjrt::load(&found.path)?;
    let client = Arc::new(Client::new(plugin, &ClientOptions::cpu_devices(1))?);
    let platform = client.platform_name().to_owned();
    let jobs =
        a.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    p.info(&format!("{} cases, {jobs} in parallel", cases.len()));
    let start = Instant::now();
    let results = run_all(cases, client, jobs.max(1), Duration::from_secs(a.timeout.max(1)), p)?;
    let summary = summarize(&a.dir, platform, start.elapsed(), results, reference_ops);
    if let Some(path) = &a.json {
        write_atomic(path, &serde_json::to_vec_pretty(&summary)?)?;
    }
    match g.format {
        Format::Json => p.data(&format!("{}\n", serde_json::to_string_pretty(&summary)?)),
        _ => p.data(&render(&summary, a.cases)),
    }
    if let Some(floor) = floor {
        let mut below = Vec::new();
        for (k, min) in &floor {
            let got = summary.pass_pct.get(k).copied().unwrap_or(0.0);
            if got + 1e-9 < *min {
                below.push(format!("{k} {got:.2}% < floor {min:.2}%"));
            }
        }
        if !below.is_empty() {
            p.warn(&format!("pass rate below the committed floor: {}", below.join(", ")));
            return Ok(Status::Findings);
        }
    }
    Ok(Status::Success)
}

fn read_floor(path: &Path) -> anyhow::Result<BTreeMap<String, f64>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| {
        format!("{}: expected a JSON object of pass percentages by name", path.display())
    })
}

fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    std::fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
}

/// Case directories under `dir` (depth ≤ 2), sorted by suite and name.
fn discover(dir: &Path) -> anyhow::Result<Vec<Case>> {
    let mut out = Vec::new();
    if !dir.is_dir() {
        bail!("{}: not a directory", dir.display());
    }
    let mut visit = |d: &Path, suite: &str| -> anyhow::Result<()> {
        let name = d.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let meta = match std::fs::read_to_string(d.join("case.json")) {
            Ok(t) => serde_json::from_str(&t)
                .with_context(|| format!("{}: invalid case.json", d.display()))?,
            Err(_) => CaseMeta::default(),
        };
        out.push(Case { suite: suite.to_owned(), name, dir: d.to_owned(), meta });
        Ok(())
    };
    if dir.join("model.onnx").is_file() {
        visit(dir, "")?;
        return Ok(out);
    }
    for suite in sorted_dirs(dir)? {
        let sname = suite.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if suite.join("model.onnx").is_file() {
            visit(&suite, "")?;
            continue;
        }
        for case in sorted_dirs(&suite)? {
            if case.join("model.onnx").is_file() {
                visit(&case, &sname)?;
            }
        }
    }
    Ok(out)
}

fn sorted_dirs(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    Ok(v)
}

/// The ops (`Op` or `domain::Op`) of the reference models, subgraphs and functions included.
fn reference_ops(models: &[PathBuf]) -> anyhow::Result<BTreeSet<String>> {
    fn walk(g: &tpuport_model::Graph, out: &mut BTreeSet<String>) {
        for n in &g.nodes {
            out.insert(op_name(&n.domain, &n.op));
            for (_, sg) in &n.subgraphs {
                walk(sg, out);
            }
        }
    }
    let mut out = BTreeSet::new();
    for m in models {
        let model = tpuport_formats::open(m, &ImportOptions::default())?;
        walk(&model.graph, &mut out);
        for f in &model.functions {
            walk(f, &mut out);
        }
    }
    Ok(out)
}

fn op_name(domain: &str, op: &str) -> String {
    if domain.is_empty() || domain == "ai.onnx" { op.to_owned() } else { format!("{domain}::{op}") }
}

/// Runs every case on a pool of `jobs` threads; returns results in case order.
fn run_all(
    cases: Vec<Case>,
    client: Arc<Client>,
    jobs: usize,
    timeout: Duration,
    p: &Printer,
) -> anyhow::Result<Vec<CaseResult>> {
    let n = cases.len();
    let cases = Arc::new(cases);
    let running: Arc<Mutex<HashMap<usize, Instant>>> = Arc::default();
    let (tx, rx) = mpsc::channel::<(usize, CaseResult)>();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(jobs).build()?;
    {
        let (cases, running) = (Arc::clone(&cases), Arc::clone(&running));
        // Detached: a case stuck in the plugin past its timeout must not hold up the report.
        std::thread::spawn(move || {
            pool.install(|| {
                (0..cases.len()).into_par_iter().for_each_with(tx, |tx, i| {
                    if let Ok(mut r) = running.lock() {
                        r.insert(i, Instant::now());
                    }
                    let c = &cases[i];
                    let t = Instant::now();
                    let mut bound = Vec::new();
                    let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        run_case(c, &client, &mut bound)
                    }));
                    let ms = t.elapsed().as_secs_f64() * 1e3;
                    let (outcome, stage, reason) = match res {
                        Ok(Ok(())) => (Outcome::Pass, "", String::new()),
                        Ok(Err(e)) => (e.outcome, e.stage, e.reason),
                        Err(panic) => {
                            let msg = panic
                                .downcast_ref::<String>()
                                .cloned()
                                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                                .unwrap_or_default();
                            (Outcome::Error, "panic", msg)
                        }
                    };
                    if let Ok(mut r) = running.lock() {
                        r.remove(&i);
                    }
                    let mut r = result(c, outcome, stage, reason, ms);
                    r.bound_inputs = bound;
                    let _ = tx.send((i, r));
                });
            });
        });
    }
    let mut results: Vec<Option<CaseResult>> = (0..n).map(|_| None).collect();
    let mut done = 0usize;
    let mut last_note = Instant::now();
    while done < n {
        match rx.recv_timeout(Duration::from_millis(500)) {
            Ok((i, r)) => {
                if results[i].is_none() {
                    results[i] = Some(r);
                    done += 1;
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        let stuck: Vec<(usize, Duration)> = running
            .lock()
            .map(|r| {
                r.iter().map(|(i, t)| (*i, t.elapsed())).filter(|(_, e)| *e > timeout).collect()
            })
            .unwrap_or_default();
        for (i, e) in stuck {
            if results[i].is_none() {
                let reason = format!("still running after {:.0} s (abandoned)", e.as_secs_f64());
                results[i] = Some(result(
                    &cases[i],
                    Outcome::Error,
                    "timeout",
                    reason,
                    e.as_secs_f64() * 1e3,
                ));
                done += 1;
            }
        }
        if last_note.elapsed() > Duration::from_secs(10) {
            p.info(&format!("{done}/{n} cases done"));
            last_note = Instant::now();
        }
    }
    results
        .into_iter()
        .enumerate()
        .map(|(i, r)| r.with_context(|| format!("case {} produced no result", cases[i].name)))
        .collect()
}

fn result(c: &Case, outcome: Outcome, stage: &'static str, reason: String, ms: f64) -> CaseResult {
    let op = if c.meta.op.is_empty() { "(unknown)".to_owned() } else { c.meta.op.clone() };
    // Paths inside the case directory read better relative to it.
    let prefix = format!("{}/", c.dir.display());
    let mut reason = reason.replace('\n', " ").replace(&prefix, "");
    if reason.len() > 400 {
        let mut cut = 400;
        while !reason.is_char_boundary(cut) {
            cut -= 1;
        }
        reason.truncate(cut);
        reason.push('…');
    }
    CaseResult {
        suite: c.suite.clone(),
        name: c.name.clone(),
        op,
        outcome,
        stage,
        reason,
        ms,
        bound_inputs: Vec::new(),
    }
}

/// Why a case did not pass.
#[derive(Debug)]
struct Stop {
    outcome: Outcome,
    stage: &'static str,
    reason: String,
}

fn stop(outcome: Outcome, stage: &'static str, reason: impl ToString) -> Stop {
    Stop { outcome, stage, reason: reason.to_string() }
}

fn run_case(c: &Case, client: &Client, bound: &mut Vec<String>) -> Result<(), Stop> {
    let nontensor =
        c.meta.inputs.iter().chain(&c.meta.outputs).find(|v| v.kind != "tensor_type").map(|v| {
            format!("{} is a {} value, not a tensor", v.name, v.kind.trim_end_matches("_type"))
        });
    if let Some(why) = nontensor {
        return Err(stop(Outcome::Unsupported, "data", why));
    }
    let ds = c.dir.join("test_data_set_0");
    let limits = Limits::default();
    let read_all = |prefix: &str| -> Result<Vec<HostTensor>, Stop> {
        let mut v = Vec::new();
        loop {
            let f = ds.join(format!("{prefix}_{}.pb", v.len()));
            if !f.is_file() {
                return Ok(v);
            }
            v.push(tpuport_formats::onnx::read_tensor_pb(&f, &limits).map_err(|e| {
                let o = match e {
                    tpuport_formats::FormatError::Unsupported { .. } => Outcome::Unsupported,
                    _ => Outcome::Error,
                };
                stop(o, "data", e)
            })?);
        }
    };
    let inputs = read_all("input")?;
    let expected = read_all("output")?;
    let model_path = c.dir.join("model.onnx");
    // The .pb files follow the ONNX graph's input order, which case.json records; without it,
    // the importer's caller-provided inputs (same order, initializers excluded).
    let names: Vec<String> = if c.meta.inputs.is_empty() {
        let m = tpuport_formats::open(&model_path, &ImportOptions::default())
            .map_err(|e| stop(Outcome::Error, "import", e))?;
        m.graph.inputs.iter().map(|v| m.graph.values[v.0 as usize].name.clone()).collect()
    } else {
        c.meta.inputs.iter().map(|v| v.name.clone()).collect()
    };
    if names.len() < inputs.len() {
        return Err(stop(
            Outcome::Error,
            "data",
            format!("{} input files but the model has {} inputs", inputs.len(), names.len()),
        ));
    }
    let mut opts = ImportOptions::default();
    for (n, t) in names.iter().zip(&inputs) {
        opts.input_shapes.insert(n.clone(), Shape::fixed(&t.shape));
    }
    let mut model =
        tpuport_formats::open(&model_path, &opts).map_err(|e| stop(Outcome::Error, "import", e))?;
    // A static-shape lowering needs shape-like operands (axes, target shapes, pads, slice
    // bounds) at lowering time; the node cases often pass them as graph inputs. Such an input
    // is bound to its test value as a constant and the case is lowered again; the case's
    // result records which inputs were bound.
    let lowered = loop {
        match tpuport_lower::onnx::lower(&model, &LowerOptions::default()) {
            Ok(l) => break l,
            Err(e) => {
                let folded = match &e {
                    LowerError::Unsupported { node, what, .. }
                        if what.contains("must be known at lowering time") =>
                    {
                        fold_input(&mut model, node, what, &names, &inputs)
                    }
                    _ => None,
                };
                match folded {
                    Some(name) => bound.push(name),
                    None if matches!(e, LowerError::Unsupported { .. }) => {
                        return Err(stop(Outcome::Unsupported, "lower", e));
                    }
                    None => return Err(stop(Outcome::Error, "lower", e)),
                }
            }
        }
    };
    let by_name: HashMap<&str, &HostTensor> =
        names.iter().map(String::as_str).zip(inputs.iter()).collect();
    let tol = (c.meta.rtol.unwrap_or(1e-3), c.meta.atol.unwrap_or(1e-7));
    run_lowered(client, &model, lowered, &by_name, &expected, tol)
}

/// Binds, compiles, runs a lowered module and compares its results with `expected` in order.
fn run_lowered(
    client: &Client,
    model: &Model,
    lowered: tpuport_lower::onnx::Lowered,
    inputs: &HashMap<&str, &HostTensor>,
    expected: &[HostTensor],
    (rtol, atol): (f64, f64),
) -> Result<(), Stop> {
    let args = bind_args(model, &lowered.args, inputs)?;
    let exe = client
        .compile(&Program::mlir(lowered.mlir.into_bytes()), &CompileOptions::default())
        .map_err(|e| stop(Outcome::Error, "compile", e))?;
    let device = exe
        .devices()
        .into_iter()
        .next()
        .ok_or_else(|| stop(Outcome::Error, "execute", "no device"))?;
    let bufs = args
        .iter()
        .map(|t| client.buffer_from_host(t, &device))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| stop(Outcome::Error, "execute", e))?;
    let refs: Vec<&tpuport_pjrt::Buffer> = bufs.iter().collect();
    let outs = exe.execute_one(&refs).map_err(|e| stop(Outcome::Error, "execute", e))?;
    if outs.len() < expected.len() {
        return Err(stop(
            Outcome::Fail,
            "compare",
            format!("{} results, expected {}", outs.len(), expected.len()),
        ));
    }
    for (j, (b, e)) in outs.iter().zip(expected).enumerate() {
        let got = b.to_host().map_err(|e| stop(Outcome::Error, "execute", e))?;
        if let Some(why) = compare::mismatch(&got, e, rtol, atol) {
            let name = lowered.results.get(j).map_or_else(|| format!("#{j}"), |r| r.name.clone());
            return Err(stop(Outcome::Fail, "compare", format!("output {name}: {why}")));
        }
    }
    Ok(())
}

/// Turns the graph input that `node`'s input named in `what` (`… (input 2) must be known …`)
/// reads into a weight holding its test value; returns its name, or `None` when that operand
/// is not a graph input with test data.
fn fold_input(
    model: &mut Model,
    node: &str,
    what: &str,
    names: &[String],
    inputs: &[HostTensor],
) -> Option<String> {
    let idx: usize = what.split("(input ").nth(1)?.split(')').next()?.trim().parse().ok()?;
    let g = &model.graph;
    let n = match node.strip_prefix('#').and_then(|i| i.parse::<usize>().ok()) {
        Some(i) => g.nodes.get(i)?,
        None => g.nodes.iter().find(|n| n.name == node)?,
    };
    let vid = (*n.inputs.get(idx)?)?;
    let name = g.values.get(vid.0 as usize)?.name.clone();
    let pos = g.inputs.iter().position(|v| *v == vid)?;
    let t = names.iter().position(|x| *x == name).and_then(|j| inputs.get(j))?;
    let id = model.weights.push(Weight {
        name: name.clone(),
        dtype: t.dtype,
        shape: t.shape.clone(),
        data: WeightData::Inline(Arc::from(t.data())),
    });
    model.graph.inputs.remove(pos);
    model.graph.values[vid.0 as usize].kind = ValueKind::Weight(id);
    Some(name)
}

/// Host tensors for the module's arguments: caller inputs by name, weights from the store.
fn bind_args(
    model: &Model,
    args: &[tpuport_lower::onnx::ArgBinding],
    inputs: &HashMap<&str, &HostTensor>,
) -> Result<Vec<HostTensor>, Stop> {
    args.iter()
        .map(|a| {
            let t = match &a.source {
                ArgSource::Input(n) => (*inputs.get(n.as_str()).ok_or_else(|| {
                    stop(Outcome::Error, "data", format!("no input file for module argument {n}"))
                })?)
                .clone(),
                ArgSource::Weight(n) => {
                    let w = model.weights.by_name(n).ok_or_else(|| {
                        stop(
                            Outcome::Error,
                            "lower",
                            format!("argument weight {n} not in the model"),
                        )
                    })?;
                    let bytes = w.bytes().map_err(|e| stop(Outcome::Error, "data", e))?;
                    HostTensor::new(w.dtype, w.shape.clone(), bytes.into_owned())
                        .map_err(|e| stop(Outcome::Error, "data", e))?
                }
            };
            if t.dtype != a.dtype || t.shape != a.shape {
                return Err(stop(
                    Outcome::Error,
                    "lower",
                    format!(
                        "module argument {:?} expects {}{:?}, data is {}{:?}",
                        a.source, a.dtype, a.shape, t.dtype, t.shape
                    ),
                ));
            }
            Ok(t)
        })
        .collect()
}

fn summarize(
    dir: &Path,
    platform: String,
    wall: Duration,
    cases: Vec<CaseResult>,
    reference_ops: BTreeSet<String>,
) -> Summary {
    let mut total = Tally::default();
    let mut suites: BTreeMap<String, Tally> = BTreeMap::new();
    let mut ops: BTreeMap<String, Tally> = BTreeMap::new();
    let mut node_ref = Tally::default();
    for c in &cases {
        total.add(c.outcome);
        suites.entry(c.suite.clone()).or_default().add(c.outcome);
        ops.entry(c.op.clone()).or_default().add(c.outcome);
        if c.suite == "node" && reference_ops.contains(&c.op) {
            node_ref.add(c.outcome);
        }
    }
    let mut pass_pct = BTreeMap::new();
    pass_pct.insert("all".to_owned(), round2(total.pct()));
    for (s, t) in &suites {
        pass_pct.insert(s.clone(), round2(t.pct()));
    }
    if !reference_ops.is_empty() {
        pass_pct.insert("node_reference_ops".to_owned(), round2(node_ref.pct()));
    }
    Summary {
        schema: "tpuport.conformance/1",
        dir: dir.to_owned(),
        platform,
        wall_s: (wall.as_secs_f64() * 10.0).round() / 10.0,
        pass_pct,
        total,
        suites,
        node_reference_ops: node_ref,
        pass_with_bound_inputs: cases
            .iter()
            .filter(|c| c.outcome == Outcome::Pass && !c.bound_inputs.is_empty())
            .count(),
        reference_ops: reference_ops.into_iter().collect(),
        ops,
        cases,
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn render(s: &Summary, all_cases: bool) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let w = s.ops.keys().map(String::len).max().unwrap_or(2).max(2);
    let _ = writeln!(
        out,
        "{:<w$} {:>5} {:>5} {:>5} {:>5} {:>5}  first problem",
        "op", "cases", "pass", "fail", "unsup", "error"
    );
    for (op, t) in &s.ops {
        let first = s
            .cases
            .iter()
            .find(|c| &c.op == op && c.outcome != Outcome::Pass)
            .map(|c| format!("{}: {} {}", c.name, c.stage, c.reason))
            .unwrap_or_default();
        let first: String = first.chars().take(110).collect();
        let _ = writeln!(
            out,
            "{op:<w$} {:>5} {:>5} {:>5} {:>5} {:>5}  {first}",
            t.total, t.pass, t.fail, t.unsupported, t.error
        );
    }
    if all_cases {
        out.push('\n');
        for c in s.cases.iter().filter(|c| c.outcome != Outcome::Pass) {
            let _ = writeln!(
                out,
                "{:<11} {}/{} [{}] {}: {}",
                format!("{:?}", c.outcome).to_lowercase(),
                c.suite,
                c.name,
                c.op,
                c.stage,
                c.reason
            );
        }
    }
    out.push('\n');
    let line = |name: &str, t: &Tally| {
        format!(
            "{name:<20} {:>5} cases: {:>5} pass ({:>5.1}%), {} fail, {} unsupported, {} error\n",
            t.total,
            t.pass,
            t.pct(),
            t.fail,
            t.unsupported,
            t.error
        )
    };
    for (suite, t) in &s.suites {
        out.push_str(&line(if suite.is_empty() { "(cases)" } else { suite }, t));
    }
    if !s.reference_ops.is_empty() {
        out.push_str(&line("node, reference ops", &s.node_reference_ops));
    }
    out.push_str(&line("total", &s.total));
    if s.pass_with_bound_inputs > 0 {
        let _ = writeln!(
            out,
            "{} of the passes bind shape-like graph inputs (axes, shapes, pads) as constants",
            s.pass_with_bound_inputs
        );
    }
    let _ = writeln!(out, "on {} in {:.1} s", s.platform, s.wall_s);
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use tpuport_lower::onnx::{ArgBinding, Lowered, ResultBinding};
    use tpuport_model::{DType, ModelFormat};

    use super::*;

    const ADD: &str = "func.func @main(%arg0: tensor<3xf32>) -> tensor<3xf32> {\n  \
        %0 = stablehlo.add %arg0, %arg0 : tensor<3xf32>\n  return %0 : tensor<3xf32>\n}\n";

    fn lowered() -> Lowered {
        Lowered {
            mlir: ADD.to_owned(),
            args: vec![ArgBinding {
                source: ArgSource::Input("x".into()),
                dtype: DType::F32,
                shape: vec![3],
            }],
            results: vec![ResultBinding { name: "y".into(), dtype: DType::F32, shape: vec![3] }],
        }
    }

    fn client() -> Client {
        let found = tpuport_pjrt::find(None).unwrap();
        Client::new(tpuport_pjrt::load(&found.path).unwrap(), &ClientOptions::cpu_devices(1))
            .unwrap()
    }

    /// The stages after lowering on the real CPU plugin: pass within tolerance, fail outside
    /// it, fail on a wrong shape, error when an argument's data has the wrong type.
    #[test]
    fn compiles_runs_and_classifies() {
        let c = client();
        let model = Model::empty(ModelFormat::Onnx);
        let x = HostTensor::from_f32(vec![3], &[1.0, -2.0, 3.5]).unwrap();
        let inputs: HashMap<&str, &HostTensor> = [("x", &x)].into_iter().collect();
        let tol = (1e-3, 1e-7);
        let want = HostTensor::from_f32(vec![3], &[2.0, -4.0, 7.0005]).unwrap();
        assert!(run_lowered(&c, &model, lowered(), &inputs, &[want], tol).is_ok());
        let off = HostTensor::from_f32(vec![3], &[2.0, -4.0, 7.1]).unwrap();
        let e = run_lowered(&c, &model, lowered(), &inputs, &[off], tol).unwrap_err();
        assert_eq!((e.outcome, e.stage), (Outcome::Fail, "compare"));
        assert!(e.reason.starts_with("output y: 1 of 3 elements differ"), "{}", e.reason);
        let shape = HostTensor::from_f32(vec![1, 3], &[2.0, -4.0, 7.0]).unwrap();
        let e = run_lowered(&c, &model, lowered(), &inputs, &[shape], tol).unwrap_err();
        assert_eq!(e.outcome, Outcome::Fail);
        let xi = HostTensor::new(DType::I32, vec![3], vec![0; 12]).unwrap();
        let inputs: HashMap<&str, &HostTensor> = [("x", &xi)].into_iter().collect();
        let e = run_lowered(&c, &model, lowered(), &inputs, &[], tol).unwrap_err();
        assert_eq!((e.outcome, e.stage), (Outcome::Error, "lower"));
    }
}
