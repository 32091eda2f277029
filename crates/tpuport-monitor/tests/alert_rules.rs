//! `deploy/prometheus/tpuport-alerts.yaml`: every metric its expressions use is one that
//! `tpuport serve` exports (names read from `crates/tpuport-serve/src/metrics.rs`), every alarm
//! of `tpuport top` has a rule; and, where `promtool` is installed (`make deploy-tools`),
//! `promtool check rules` and `promtool test rules` (the unit tests in
//! `tpuport-alerts.test.yaml`: each alert fires on the series that should raise it, not on a
//! healthy server) pass.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::process::Command;

#[test]
fn alert_rules_use_served_metrics_and_pass_promtool() {
    let root = tpuport_testkit::repo_root();
    let rules = root.join("deploy/prometheus/tpuport-alerts.yaml");
    let served = std::fs::read_to_string(root.join("crates/tpuport-serve/src/metrics.rs")).unwrap();
    // The rules file through a YAML parser: the alert names and every `tpuport_*` word.
    let out = tpuport_testkit::run_python(
        "import sys, yaml, re, json\nd = yaml.safe_load(open(sys.argv[1]))\nrules = [r for g in d['groups'] for r in g['rules']]\nprint(json.dumps({'alerts': [r['alert'] for r in rules], 'metrics': sorted({m for r in rules for m in re.findall(r'tpuport_[a-z_]+', r['expr'])})}))",
        &[&rules],
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let alerts: Vec<&str> =
        v["alerts"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    assert_eq!(
        alerts,
        [
            "TpuportCompileAfterReady",
            "TpuportShapeDrift",
            "TpuportInputRefusals",
            "TpuportPaddingWaste",
            "TpuportQueueGrowing",
            "TpuportRejectionRate"
        ]
    );
    let metrics = v["metrics"].as_array().unwrap();
    assert!(metrics.len() >= 5, "{metrics:?}");
    for m in metrics {
        // A histogram's series carry the family's name and a suffix.
        let m = m.as_str().unwrap();
        let family = ["_sum", "_count", "_bucket"]
            .iter()
            .find_map(|s| m.strip_suffix(s).filter(|f| served.contains(&format!("\"{f}\""))))
            .unwrap_or(m);
        assert!(
            served.contains(&format!("\"{family}\"")),
            "{m} is not a metric tpuport serve exports"
        );
    }
    let Ok(version) = Command::new("promtool").arg("--version").output() else {
        eprintln!(
            "alert_rules: promtool is not installed (`make deploy-tools`); checked by the YAML parser only"
        );
        return;
    };
    assert!(version.status.success());
    let dir = root.join("deploy/prometheus");
    for args in [
        &["check", "rules", "tpuport-alerts.yaml"][..],
        &["test", "rules", "tpuport-alerts.test.yaml"][..],
    ] {
        let o = Command::new("promtool").args(args).current_dir(&dir).output().unwrap();
        assert!(
            o.status.success(),
            "promtool {args:?}:\n{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
}
