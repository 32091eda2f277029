//! The crate layout's rules, checked against the workspace as cargo resolves it (README,
//! Layout; `../shared/DESIGN.md` §4):
//!
//! - no verb crate depends on another verb crate (shared capabilities live in a library below
//!   both: a model ready to run is `tpuport-exec`, not the server);
//! - the renderers (`tpuport-report`) build without a server or dataset stack: no axum, tonic,
//!   hyper, tokio, parquet, arrow or image in `cargo tree -p tpuport-report`;
//! - importers know nothing of TPUs, and the runtime nothing of ONNX: `tpuport-formats` does
//!   not depend on the chip catalog, `tpuport-pjrt` not on the importers.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::process::Command;

/// The crates behind one verb each (or one verb family), which must not depend on each other.
const VERB_CRATES: &[&str] = &[
    "tpuport-batch",
    "tpuport-compile",
    "tpuport-deploy",
    "tpuport-lint",
    "tpuport-monitor",
    "tpuport-profile",
    "tpuport-serve",
    "tpuport-validate",
];

/// Crates that make a server or a dataset reader; the renderers must not pull them in.
const HEAVY: &[&str] = &["axum", "tonic", "hyper", "tokio", "parquet", "arrow-array", "image"];

fn cargo_tree(package: &str, extra: &[&str]) -> String {
    let out = Command::new(env!("CARGO"))
        .current_dir(tpuport_testkit::repo_root())
        .args(["tree", "--offline", "--locked", "-e", "normal", "-p", package])
        .args(extra)
        .output()
        .expect("running cargo tree");
    assert!(
        out.status.success(),
        "cargo tree -p {package}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The names of the crates `package` depends on, directly (`depth 1`) or at any depth.
fn deps(package: &str, direct: bool) -> BTreeSet<String> {
    let mut args = vec!["--prefix", "none"];
    if direct {
        args.extend(["--depth", "1"]);
    }
    cargo_tree(package, &args)
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

#[test]
fn no_verb_crate_depends_on_another() {
    let mut wrong = Vec::new();
    for verb in VERB_CRATES {
        for d in deps(verb, true) {
            if d != *verb && VERB_CRATES.contains(&d.as_str()) {
                wrong.push(format!("{verb} -> {d}"));
            }
        }
    }
    assert!(wrong.is_empty(), "verb crates depending on verb crates: {wrong:?}");
}

#[test]
fn the_renderers_build_without_a_server_or_dataset_stack() {
    let all = deps("tpuport-report", false);
    let heavy: Vec<&&str> = HEAVY.iter().filter(|h| all.contains(**h)).collect();
    assert!(heavy.is_empty(), "tpuport-report pulls in {heavy:?}");
}

#[test]
fn importers_know_no_tpu_and_the_runtime_no_onnx() {
    let formats = deps("tpuport-formats", false);
    assert!(!formats.contains("tpuport-hw"), "tpuport-formats depends on the chip catalog");
    let pjrt = deps("tpuport-pjrt", false);
    assert!(!pjrt.contains("tpuport-formats"), "tpuport-pjrt depends on the importers");
}
