//! `tpuport top` against a real `tpuport serve` (the ONNX fixture model, buckets 2 and 4, a
//! queue of one request and a 200 ms batching delay so that a burst overflows it):
//! `--once --format json` values equal the server's `/metrics`; an overload raises the
//! rejection-rate alarm; a request at batch 3 (between buckets) raises nothing, one whose rows
//! are 20 wide for a model that takes 16 the shape-drift and input-refusal alarms, exit-coded by
//! `--check`; the live view under load, captured from tmux, shows them.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::float_cmp, clippy::print_stderr)]

mod common;

use std::collections::BTreeMap;
use std::process::{Child, Stdio};
use std::time::Duration;

use common::http;

fn infer(addr: &str, rows: usize) -> u16 {
    let data: Vec<f32> = (0..rows * 16).map(|i| i as f32 * 0.01).collect();
    let body = serde_json::json!({"inputs": [{"name": "X", "shape": [rows, 16], "datatype": "FP32", "data": data}]});
    http(addr, "POST", "/v2/models/lin/infer", &body.to_string()).0
}

struct Server {
    child: Child,
    addr: String,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start() -> Server {
    let tmp = tempfile::tempdir().unwrap();
    common::onnx_repo(
        tmp.path(),
        "max_queue_size = 1\nmax_queue_delay_us = 200000\nwait_when_idle = true\n",
    );
    let mut child = common::command()
        .args(["serve", tmp.path().to_str().unwrap(), "--port", "0", "--no-cache"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (addr, _, mut err) = common::wait_ready(&mut child);
    // Keep draining stderr so the server never blocks on it.
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    Server { child, addr, _dir: tmp }
}

fn top_json(addr: &str) -> (i32, serde_json::Value) {
    let o =
        common::tpuport(&["--format", "json", "top", addr, "--once", "--check", "--libtpu", "off"]);
    assert!(o.code == 0 || o.code == 1, "{}", o.stderr);
    (o.code, serde_json::from_str(&o.stdout).unwrap())
}

fn rules(report: &serde_json::Value) -> Vec<String> {
    report["targets"][0]["alarms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["rule"].as_str().unwrap().to_owned())
        .collect()
}

/// `name{sorted labels}` → value, read from the exposition text with a parser of the test's
/// own (the server's label values here hold no `"`, `,` or `\`).
fn series_of_text(text: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let (series, value) = line.rsplit_once(' ').unwrap();
        let (name, labels) = match series.split_once('{') {
            Some((n, l)) => (n, l.trim_end_matches('}')),
            None => (series, ""),
        };
        let mut l: Vec<&str> = labels.split(',').filter(|x| !x.is_empty()).collect();
        l.sort_unstable();
        let v = if value == "+Inf" { f64::INFINITY } else { value.parse().unwrap() };
        out.insert(format!("{name}{{{}}}", l.join(",")), v);
    }
    out
}

fn series_of_json(report: &serde_json::Value) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for fam in report["targets"][0]["metrics"]["families"].as_object().unwrap().values() {
        for s in fam["samples"].as_array().unwrap() {
            let l: Vec<String> = s["labels"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| format!("{k}=\"{}\"", v.as_str().unwrap()))
                .collect();
            out.insert(
                format!("{}{{{}}}", s["name"].as_str().unwrap(), l.join(",")),
                s["value"].as_f64().unwrap_or(f64::INFINITY),
            );
        }
    }
    out
}

#[test]
fn top_reads_serve_and_raises_overload_and_drift_alarms() {
    let server = start();
    let addr = server.addr.clone();
    // Traffic inside the buckets, one request at a time: no alarm.
    for _ in 0..3 {
        assert_eq!(infer(&addr, 2), 200);
    }
    let (code, report) = top_json(&addr);
    assert_eq!(code, 0, "{report}");
    assert!(rules(&report).is_empty(), "{report}");
    assert_eq!(report["schema"], "tpuport.top/1");
    // The snapshot equals what /metrics says now (the server is idle in between).
    let (st, text) = http(&addr, "GET", "/metrics", "");
    assert_eq!(st, 200);
    let want = series_of_text(&text);
    let got = series_of_json(&report);
    assert!(want.len() > 40, "{text}");
    // Same series; same values (serde_json's default float parsing may differ from Rust's in
    // the last bit, hence the relative 1e-12).
    assert_eq!(got.keys().collect::<Vec<_>>(), want.keys().collect::<Vec<_>>());
    for (k, w) in &want {
        let g = got[k];
        assert!(g == *w || (g - w).abs() <= 1e-12 * w.abs(), "{k}: top {g}, /metrics {w}");
    }
    let lin = &report["targets"][0]["models"][0];
    assert_eq!(lin["model"], "lin");
    assert_eq!(lin["requests_total"], 3.0);

    // Overload: a burst of 12 into a queue of one request.
    let burst: Vec<_> = (0..12)
        .map(|_| {
            let a = addr.clone();
            std::thread::spawn(move || infer(&a, 2))
        })
        .collect();
    let codes: Vec<u16> = burst.into_iter().map(|h| h.join().unwrap()).collect();
    assert!(codes.contains(&503), "{codes:?}");
    let (code, report) = top_json(&addr);
    assert_eq!(code, 1, "{report}");
    assert_eq!(rules(&report), ["rejection_rate"], "{report}");

    // A request of 3 rows (buckets are 2 and 4) is dynamic batching (padded into 4), not drift.
    assert_eq!(infer(&addr, 3), 200);
    let (_, report) = top_json(&addr);
    assert!(!rules(&report).contains(&"shape_drift".to_owned()), "{report}");
    assert!(!rules(&report).contains(&"padding_waste".to_owned()), "{report}");
    // Shape drift: rows 20 wide for a model that takes 16, refused with a 400, counted as
    // drift, as a refusal and as a shape seen.
    let data: Vec<f32> = vec![0.5; 2 * 20];
    let body = serde_json::json!({"inputs": [{"name": "X", "shape": [2, 20], "datatype": "FP32", "data": data}]});
    let (st, msg) = http(&addr, "POST", "/v2/models/lin/infer", &body.to_string());
    assert_eq!(st, 400, "{msg}");
    let (code, report) = top_json(&addr);
    assert_eq!(code, 1);
    let got = rules(&report);
    assert!(got.contains(&"shape_drift".to_owned()), "{report}");
    assert!(got.contains(&"input_refusals".to_owned()), "{report}");
    let lin = &report["targets"][0]["models"][0];
    assert_eq!(lin["shape_drift"], serde_json::json!({"row_shape": 1.0}), "{report}");
    assert_eq!(lin["refusals"], serde_json::json!({"wrong_shape": 1.0}), "{report}");
    assert_eq!(lin["shapes"]["X"]["Nx20"], 1.0, "{report}");
    assert!(lin["shapes"]["X"]["Nx16"].as_f64().unwrap() >= 4.0, "{report}");
    // The text form says the same.
    let o = common::tpuport(&["top", &addr, "--once", "--libtpu", "off"]);
    assert_eq!(o.code, 0, "without --check alarms do not change the exit code: {}", o.stderr);
    for want in [
        "shape drift row_shape 1",
        "refused inputs wrong_shape 1",
        "Nx20 1",
        "ALARM shape_drift: lin: 1 request(s) whose shape the model does not take (row_shape 1)",
        "ALARM input_refusals: lin:",
        "rejections queue_full",
    ] {
        assert!(o.stdout.contains(want), "`{want}`:\n{}", o.stdout);
    }

    live_view_in_tmux(&addr);
}

/// The ratatui screen in a 120x40 tmux pane while requests flow.
fn live_view_in_tmux(addr: &str) {
    if std::process::Command::new("tmux").arg("-V").output().is_err() {
        eprintln!(
            "top_cli: tmux is not installed (`make deploy-tools`); the screen test is skipped"
        );
        return;
    }
    let socket = format!("tpuport-top-{}", std::process::id());
    let tmux = |args: &[&str]| {
        std::process::Command::new("tmux").args(["-L", &socket]).args(args).output().unwrap()
    };
    let bin = common::binary();
    let cmd = format!(
        "NO_COLOR=1 {} top {addr} --interval 0.5 --libtpu off --check; echo TOP-EXITED-$?; sleep 30",
        bin.display()
    );
    let out = tmux(&["new-session", "-d", "-s", "top", "-x", "120", "-y", "40", &cmd]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Load while the view runs.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let load = {
        let (a, stop) = (addr.to_owned(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                infer(&a, 4);
            }
        })
    };
    // The model row with a number in the req/s column (the second scrape on).
    let rate = |l: &str| {
        let f: Vec<&str> = l.trim_matches(['│', ' ']).split_whitespace().collect();
        f.len() > 2 && f[0] == "lin" && f[1].parse::<f64>().is_ok()
    };
    let mut screen = String::new();
    for _ in 0..40 {
        std::thread::sleep(Duration::from_millis(250));
        screen = String::from_utf8_lossy(&tmux(&["capture-pane", "-p", "-t", "top"]).stdout)
            .into_owned();
        if screen.contains("tpuport top") && screen.contains("shape_drift") && screen.contains("/s")
        {
            // Two scrapes are needed for a rate; wait for a number in the req/s column.
            if screen.lines().any(rate) {
                break;
            }
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    load.join().unwrap();
    let cleanup = || {
        let _ = tmux(&["kill-server"]);
    };
    let checks = [
        "tpuport top",
        "model",
        "req/s",
        "queue",
        "lin",
        "batch size",
        "rejections",
        "queue_full",
        "alarms",
        "shape_drift",
    ];
    if !screen.lines().any(rate) {
        cleanup();
        panic!("no requests/s figure for `lin` on the screen:\n{screen}");
    }
    for want in checks {
        if !screen.contains(want) {
            cleanup();
            panic!("`{want}` not on the screen:\n{screen}");
        }
    }
    // The rejection-rate alarm is per interval: the first frame (cumulative since start)
    // showed it, later ones without new rejections do not. `q` quits; --check makes the exit
    // code 1 (alarms were shown).
    tmux(&["send-keys", "-t", "top", "q"]);
    let mut after = String::new();
    for _ in 0..40 {
        std::thread::sleep(Duration::from_millis(100));
        after = String::from_utf8_lossy(&tmux(&["capture-pane", "-p", "-t", "top"]).stdout)
            .into_owned();
        if after.contains("TOP-EXITED-") {
            break;
        }
    }
    cleanup();
    assert!(after.contains("TOP-EXITED-1"), "{after}");
}
