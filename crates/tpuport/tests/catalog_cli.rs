//! `tpuport catalog`: chips, sourced figures, slices, user overrides and their errors.

#![allow(clippy::unwrap_used, reason = "tests")]

mod common;

use common::tpuport;

#[test]
fn lists_chips_and_resolves_aliases_and_slices() {
    let o = tpuport(&["catalog"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    for id in ["v4", "v5e", "v5p", "v6e", "tpu7x", "a100", "h100", "h200"] {
        assert!(
            o.stdout.lines().any(|l| l.trim_start().starts_with(id)),
            "{id} missing:\n{}",
            o.stdout
        );
    }
    let o = tpuport(&["--format", "json", "catalog", "trillium"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["chip"]["id"], "v6e");
    let o = tpuport(&["--format", "json", "catalog", "v5p-8"]);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["chips"], 4, "v5p-8 names TensorCores: 4 chips");
    let o = tpuport(&["catalog", "v5e-7"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("v5e-7") && o.stderr.lines().count() == 1, "{}", o.stderr);
}

#[test]
fn override_file_changes_a_price_and_bad_files_name_the_field() {
    let d = tempfile::tempdir().unwrap();
    let good = d.path().join("prices.toml");
    std::fs::write(&good, "[[chip]]\nid = \"v5e\"\n[chip.price]\non_demand = \"0.99 USD/h\"\n")
        .unwrap();
    let o = tpuport(&["--format", "json", "catalog", "v5e", "--catalog", good.to_str().unwrap()]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert!((v["chip"]["price"]["on_demand"].as_f64().unwrap() - 0.99).abs() < 1e-9, "{v}");
    let bad = d.path().join("bad.toml");
    std::fs::write(&bad, "[[chip]]\nid = \"v5e\"\nhbm_bandwith = \"1 TB/s\"\n").unwrap();
    let o = tpuport(&["catalog", "--catalog", bad.to_str().unwrap()]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("bad.toml") && o.stderr.contains("hbm_bandwith"), "{}", o.stderr);
}
