//! The ONNX backend test cases through the lowering on a PJRT device, compared with their
//! expected outputs.
//!
//! A folder holds cases in the ONNX backend layout (`<suite>/<case>/model.onnx`,
//! `test_data_set_0/input_<j>.pb`, `output_<j>.pb`), as `scripts/testdata/onnx_conformance.py`
//! writes them (`make conformance`), with a `case.json` per case naming its main op, its tolerances and
//! the kinds of its inputs and outputs. Each case is imported with its input shapes bound from
//! the input files, lowered, compiled, run and compared (see [`case`] and [`compare`]). All
//! cases run in this one process on one PJRT client, in parallel; a panic in one case is
//! caught, and a case that runs past the timeout is reported as an error and abandoned.

mod case;
mod compare;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use tpuport_exec::Observer;
use tpuport_exec::error::{Result, invalid, io};
use tpuport_formats::ImportOptions;
use tpuport_pjrt::Client;

/// JSON schema id of the summary.
pub const SCHEMA: &str = "tpuport.conformance/1";

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Folder of cases (or one case folder).
    pub dir: PathBuf,
    /// Only cases whose `<suite>/<case>` name contains one of these.
    pub filter: Vec<String>,
    /// Parallel cases (default: the number of CPUs).
    pub jobs: Option<usize>,
    /// Time one case may take before it counts as an error.
    pub timeout: Duration,
    /// Reference models: node cases whose main op occurs in one of them are counted apart.
    pub reference: Vec<PathBuf>,
    /// PJRT plugin library (default: discovery).
    pub plugin: Option<PathBuf>,
}

/// How a case ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
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
pub(crate) struct CaseMeta {
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
pub(crate) struct IoMeta {
    name: String,
    kind: String,
}

/// One case found on disk.
#[derive(Debug)]
pub(crate) struct Case {
    suite: String,
    name: String,
    dir: PathBuf,
    meta: CaseMeta,
}

/// How one case ended.
#[derive(Clone, Debug, Serialize)]
pub struct CaseResult {
    /// Suite folder (empty for a case given directly).
    pub suite: String,
    /// Case folder name.
    pub name: String,
    /// Main op (`case.json`), `(unknown)` without one.
    pub op: String,
    /// Pass, fail, unsupported or error.
    pub outcome: Outcome,
    /// Stage that stopped the case (`data`, `import`, `lower`, `compile`, `execute`,
    /// `compare`, `panic`, `timeout`), empty on pass.
    pub stage: &'static str,
    /// Why, one line (paths relative to the case folder).
    pub reason: String,
    /// Wall time, milliseconds.
    pub ms: f64,
    /// Graph inputs bound to their test values at lowering time because an op needs them
    /// there (axes, shapes, pads given as inputs).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bound_inputs: Vec<String>,
}

/// Outcome counts.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Tally {
    /// Cases.
    pub total: usize,
    /// Passed.
    pub pass: usize,
    /// Ran and differed.
    pub fail: usize,
    /// Not handled by the lowering (or the runner).
    pub unsupported: usize,
    /// Failed to import, lower, compile or run.
    pub error: usize,
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

    /// Pass percentage (0 for no cases).
    #[must_use]
    pub fn pct(&self) -> f64 {
        #[allow(clippy::cast_precision_loss, reason = "case counts")]
        let p = if self.total == 0 { 0.0 } else { 100.0 * self.pass as f64 / self.total as f64 };
        p
    }
}

/// The run's summary.
#[derive(Debug, Serialize)]
pub struct Summary {
    /// [`SCHEMA`].
    pub schema: &'static str,
    /// The cases folder.
    pub dir: PathBuf,
    /// PJRT platform name.
    pub platform: String,
    /// Wall time, seconds (one decimal).
    pub wall_s: f64,
    /// Pass percentages: `all`, `node`, `node_reference_ops`, and each suite.
    pub pass_pct: BTreeMap<String, f64>,
    /// Every case.
    pub total: Tally,
    /// Per suite.
    pub suites: BTreeMap<String, Tally>,
    /// Node-suite cases whose main op occurs in a `--reference` model.
    pub node_reference_ops: Tally,
    /// Passing cases that needed graph inputs bound at lowering time.
    pub pass_with_bound_inputs: usize,
    /// Ops of the reference models.
    pub reference_ops: Vec<String>,
    /// Per main op.
    pub ops: BTreeMap<String, Tally>,
    /// Every case, in suite and name order.
    pub cases: Vec<CaseResult>,
}

/// Runs every case that matches.
///
/// # Errors
/// A folder without cases, an unreadable `case.json` or reference model, or no runtime.
pub fn run(opts: &Options, obs: &dyn Observer) -> Result<Summary> {
    let mut cases = discover(&opts.dir)?;
    if !opts.filter.is_empty() {
        cases.retain(|c| {
            let full = format!("{}/{}", c.suite, c.name);
            opts.filter.iter().any(|f| full.contains(f.as_str()))
        });
    }
    if cases.is_empty() {
        return Err(invalid(format!(
            "{}: no test cases (directories with model.onnx) match",
            opts.dir.display()
        )));
    }
    let reference_ops = reference_ops(&opts.reference)?;
    let rt = tpuport_pjrt::Runtime::open(opts.plugin.as_deref(), 1, false)?;
    obs.info(&format!("plugin: {} ({})", rt.found.path.display(), rt.found.source));
    let client = Arc::new(rt.client);
    let platform = client.platform_name().to_owned();
    let jobs =
        opts.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    obs.info(&format!("{} cases, {jobs} in parallel", cases.len()));
    let start = Instant::now();
    let timeout = opts.timeout.max(Duration::from_secs(1));
    let results = run_all(cases, client, jobs.max(1), timeout, obs)?;
    Ok(summarize(&opts.dir, platform, start.elapsed(), results, reference_ops))
}

/// Reads a floor file: minimum pass percentages by name (`{"node": 70.0, "all": 65.0}`).
///
/// # Errors
/// An unreadable file or one that is not a JSON object of numbers.
pub fn read_floor(path: &Path) -> Result<BTreeMap<String, f64>> {
    let text =
        std::fs::read_to_string(path).map_err(|e| io(format!("reading {}", path.display()), e))?;
    serde_json::from_str(&text).map_err(|e| {
        invalid(format!(
            "{}: expected a JSON object of pass percentages by name: {e}",
            path.display()
        ))
    })
}

/// The measured rates below their floor, as `name got% < floor min%`.
#[must_use]
pub fn below_floor(s: &Summary, floor: &BTreeMap<String, f64>) -> Vec<String> {
    let mut below = Vec::new();
    for (k, min) in floor {
        let got = s.pass_pct.get(k).copied().unwrap_or(0.0);
        if got + 1e-9 < *min {
            below.push(format!("{k} {got:.2}% < floor {min:.2}%"));
        }
    }
    below
}

/// Case directories under `dir` (depth ≤ 2), sorted by suite and name.
fn discover(dir: &Path) -> Result<Vec<Case>> {
    let mut out = Vec::new();
    if !dir.is_dir() {
        return Err(invalid(format!("{}: not a directory", dir.display())));
    }
    let mut visit = |d: &Path, suite: &str| -> Result<()> {
        let name = d.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let meta = match std::fs::read_to_string(d.join("case.json")) {
            Ok(t) => serde_json::from_str(&t)
                .map_err(|e| invalid(format!("{}: invalid case.json: {e}", d.display())))?,
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

fn sorted_dirs(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| io(format!("reading {}", dir.display()), e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    Ok(v)
}

/// The ops (`Op` or `domain::Op`) of the reference models, subgraphs and functions included.
fn reference_ops(models: &[PathBuf]) -> Result<BTreeSet<String>> {
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
    obs: &dyn Observer,
) -> Result<Vec<CaseResult>> {
    let n = cases.len();
    let cases = Arc::new(cases);
    let running: Arc<Mutex<HashMap<usize, Instant>>> = Arc::default();
    let (tx, rx) = mpsc::channel::<(usize, CaseResult)>();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .build()
        .map_err(|e| invalid(format!("starting {jobs} worker threads: {e}")))?;
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
                        case::run_case(c, &client, &mut bound)
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
            obs.info(&format!("{done}/{n} cases done"));
            last_note = Instant::now();
        }
    }
    results
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            r.ok_or_else(|| invalid(format!("case {} produced no result", cases[i].name)))
        })
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
