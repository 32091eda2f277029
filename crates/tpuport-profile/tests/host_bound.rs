//! PRF101 on recorded traces of real training loops (`make host-bound-traces`, issue 34): JAX
//! loops under jax.profiler and PyTorch loops under torch.profiler with loaders of several
//! shapes, each host-bound (and some mildly) and clean. The expectations and the dev /
//! held-out split were written in `scripts/testdata/host_bound/corpus.json` before the rule
//! was tuned; this test holds every trace to them, except the misses measured on the held-out
//! part, which are listed below with their reason and not asserted either way, and the traces
//! recorded while the loop was starved of CPU (the manifest's `contention`, measured from the
//! scheduler's statistics by the recorder, above its `contention_max`): a starved loop records
//! the machine's gaps, not its own. Those are reported, and at most a third may be.

#![allow(
    clippy::unwrap_used,
    clippy::panic,
    clippy::expect_used,
    clippy::print_stderr,
    reason = "tests"
)]

use std::path::{Path, PathBuf};

use serde_json::Value;
use tpuport_profile::findings::{DiagnoseOptions, Finding, Severity, diagnose};
use tpuport_profile::{Evidence, ReadOptions, discover, read_input};

/// Held-out traces whose measured outcome differs from the expectation written before tuning:
/// (trace, what differs, why). Not asserted; the figures in the report count them as misses.
const KNOWN_MISSES: &[(&str, &str, &str)] = &[
    (
        "torch-workers-clean",
        "fires (moderately)",
        "with two worker processes on a two-core host the main thread waits ~3.5 ms per ~27 ms \
         step in `_MultiProcessingDataLoaderIter.__next__` receiving batches: named input \
         while the CPU's aten timeline idles",
    ),
    (
        "jax-inann-clean",
        "fires (moderately) in some recordings",
        "the clean variant draws a 256x768 normal sample in Python inside the step beside a short \
         XLA:CPU step on two cores; three recordings on 2026-12-07 measured the device idle 0 %, \
         6.1 % and 16.4 % of the step (the last with no other process at normal priority), \
         around xprof's 5 % line",
    ),
    (
        "torch-thread-mild",
        "at the loop plant when recorded under load",
        "recorded while make test's other steps keep both cores busy, the prefetch thread falls \
         behind and the loop waits in `q.get()` (the `loop` plant), which PRF101 then names \
         (seen in a CI-like run, 2026-12-07); recorded on a quiet machine, the main thread's \
         time is in `jitter` (the `loader` plant) and the finding points there",
    ),
    (
        "jax-thread-host",
        "no location",
        "the loop waits in `queue.get` (a library frame) and a TSL trace names no caller line",
    ),
];

/// The corpus: `$TPUPORT_HOST_BOUND_TRACES`, else `<repo>/.cache/host-bound-traces`.
fn root() -> PathBuf {
    let dir = std::env::var_os("TPUPORT_HOST_BOUND_TRACES").map_or_else(
        || tpuport_testkit::repo_root().join(".cache/host-bound-traces"),
        PathBuf::from,
    );
    assert!(
        dir.join("manifest.json").is_file(),
        "host-bound traces missing: run `make host-bound-traces` (looked in {})",
        dir.display()
    );
    dir
}

fn profile(dir: &Path) -> Vec<Finding> {
    let found = discover(&[dir.to_owned()]);
    assert!(found.errors.is_empty(), "{:?}", found.errors);
    let mut ev = Evidence::default();
    for input in &found.inputs {
        read_input(input, &ReadOptions::default(), &mut ev).unwrap();
    }
    diagnose(&ev, &DiagnoseOptions::default())
}

/// Whether `line` of `script` is the planted line, or for `loader` a line of the planted
/// function's body (kineto names the loader's heavy line, not its `def`).
fn at_plant(root: &Path, plants: &Value, script: &str, what: &str, line: u64) -> bool {
    let plant = plants[script][what].as_u64().unwrap();
    if line == plant || what != "loader" {
        return line == plant;
    }
    let text = std::fs::read_to_string(root.join(script)).unwrap();
    let body_end = text
        .lines()
        .enumerate()
        .skip(usize::try_from(plant).unwrap())
        .find(|(_, l)| l.starts_with("def ") || l.starts_with("class "))
        .map_or(u64::MAX, |(i, _)| i as u64);
    line > plant && line <= body_end
}

#[test]
fn recorded_loops_meet_the_expectations_written_before_tuning() {
    let root = root();
    let m: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("manifest.json")).unwrap())
            .unwrap();
    let mut failures = Vec::new();
    // (split) -> [true positives, false positives, false negatives, true negatives]
    let mut counts: std::collections::BTreeMap<String, [u32; 4]> = Default::default();
    // A few large traces take most of the time in a debug build: read them side by side.
    let traces: Vec<(&String, &Value)> = m["traces"].as_object().unwrap().iter().collect();
    let threads = std::thread::available_parallelism().map_or(2, usize::from).clamp(2, 4);
    let limit = m["contention_max"].as_f64().unwrap_or(f64::INFINITY);
    let mut starved = Vec::new();
    let mut results: Vec<(usize, Vec<Finding>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|k| {
                let (root, traces) = (&root, &traces);
                s.spawn(move || {
                    (k..traces.len())
                        .step_by(threads)
                        .map(|i| (i, profile(&root.join(traces[i].0))))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    results.sort_by_key(|r| r.0);
    let total = traces.len();
    for ((id, t), (_, findings)) in traces.into_iter().zip(results) {
        let script = t["script"].as_str().unwrap();
        if let Some(c) = m["contention"][id].as_f64().filter(|c| *c > limit) {
            starved
                .push(format!("{id} ({:.0} % of its runnable time waiting for a CPU)", c * 100.0));
            continue;
        }
        let split = m["scripts"][script]["split"].as_str().unwrap().to_owned();
        let prf101: Vec<&Finding> = findings.iter().filter(|f| f.code == "PRF101").collect();
        let fired = prf101.iter().any(|f| f.severity >= Severity::Warning);
        let want = t["expect"] == "fire";
        let c = counts.entry(split).or_default();
        c[match (fired, want) {
            (true, true) => 0,
            (true, false) => 1,
            (false, true) => 2,
            (false, false) => 3,
        }] += 1;
        let known = |what: &str| KNOWN_MISSES.iter().any(|k| k.0 == id && k.1.starts_with(what));
        if fired != want && !known("fires") && !known("silent") {
            failures.push(format!(
                "{id}: expected {}, got {:?}",
                t["expect"],
                prf101.first().map(|f| &f.title)
            ));
        }
        if !want {
            let loud: Vec<_> = findings
                .iter()
                .filter(|f| f.severity >= Severity::Warning)
                .map(|f| f.code)
                .collect();
            if !loud.is_empty() && !known("fires") {
                failures.push(format!("{id}: a clean loop got {loud:?}"));
            }
            continue;
        }
        let Some(f) = prf101.first() else { continue };
        let class = t["class"].as_str().unwrap_or("");
        if !f.title.starts_with(class) {
            eprintln!("{id}: class {class} expected, got `{}`", f.title);
        }
        if let Some(what) = t["where"].as_str() {
            let ok = match &f.location {
                Some(loc) => {
                    Path::new(&loc.file).file_name().unwrap() == script
                        && at_plant(&root, &m["plants"], script, what, u64::from(loc.line))
                }
                None => known("no location"),
            };
            if !ok {
                let at = f.location.as_ref().map(ToString::to_string);
                if known("at ") {
                    eprintln!("{id}: at {at:?}, expected the `{what}` plant (a known miss)");
                } else {
                    failures.push(format!("{id}: at {at:?}, expected the `{what}` plant"));
                }
            }
        }
    }
    for (split, [tp, fp, fn_, tn]) in &counts {
        eprintln!(
            "{split}: precision {:.2}, recall {:.2} (tp {tp}, fp {fp}, fn {fn_}, tn {tn})",
            f64::from(*tp) / f64::from(tp + fp).max(1.0),
            f64::from(*tp) / f64::from(tp + fn_).max(1.0)
        );
    }
    if !starved.is_empty() {
        eprintln!("recorded under CPU contention, not asserted: {}", starved.join(", "));
    }
    assert!(
        starved.len() * 3 <= total,
        "{} of {total} traces were recorded on a busy machine ({}): record them again with \
         `make host-bound-traces` while nothing else runs",
        starved.len(),
        starved.join(", ")
    );
    assert!(failures.is_empty(), "{failures:#?}");
    // The dev part, on which the rule was built, is met in full.
    let dev = counts["dev"];
    assert_eq!((dev[1], dev[2]), (0, 0), "dev: {dev:?}");
}
