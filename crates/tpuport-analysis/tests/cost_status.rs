//! The cost pass's typed status on real exports: loop bodies with a data-dependent trip count
//! and the costliest branch of a conditional are estimates, ops on unbound shapes are not
//! counted, and the report's `note` strings and `ops_uncounted` follow from the status.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::Path;

use tpuport_analysis::cost::{self, CostStatus, Estimate, Uncounted};
use tpuport_formats::ImportOptions;

fn findings_data(name: &str) -> std::path::PathBuf {
    tpuport_testkit::repo_root().join("crates/tpuport-analysis/tests/data/findings").join(name)
}

fn cost_of(path: &Path, opts: &ImportOptions) -> cost::CostReport {
    cost::analyze(&tpuport_formats::open(path, opts).unwrap())
}

#[test]
fn loop_bodies_with_dynamic_trip_counts_are_estimates() {
    let c = cost_of(&findings_data("loop_dynamic.onnx"), &ImportOptions::default());
    let body: Vec<_> = c.ops.iter().filter(|o| o.node.contains("/body/")).collect();
    assert!(!body.is_empty());
    for o in &body {
        assert!(
            matches!(o.status, CostStatus::Estimated(Estimate::LoopCountedOnce))
                || o.status.is_uncounted(),
            "{}: {:?}",
            o.node,
            o.status
        );
    }
    assert!(c.notes.iter().any(|n| n.contains("trip count not a constant")), "{:?}", c.notes);
    // A constant trip count multiplies the body instead: nothing is estimated.
    let c = cost_of(&findings_data("while_static.mlir"), &ImportOptions::default());
    assert!(c.ops.iter().all(|o| !matches!(o.status, CostStatus::Estimated(_))));
    assert!(c.ops.iter().any(|o| o.repeats > 1));
}

#[test]
fn the_counted_branch_is_an_estimate() {
    let path = tpuport_testkit::fixtures("onnx_small").join("if_subgraph.onnx");
    let c = cost_of(&path, &ImportOptions { batch: Some(2), ..ImportOptions::default() });
    let branch: Vec<_> = c.ops.iter().filter(|o| o.node.contains("branch/")).collect();
    assert!(!branch.is_empty(), "{:?}", c.ops.iter().map(|o| &o.node).collect::<Vec<_>>());
    assert!(
        branch.iter().all(|o| o.status == CostStatus::Estimated(Estimate::CostliestBranch)),
        "{:?}",
        branch.iter().map(|o| (&o.node, &o.status)).collect::<Vec<_>>()
    );
    assert_eq!(c.totals.ops_uncounted, 0);
}

#[test]
fn unbound_shapes_are_uncounted_and_serialise_as_notes() {
    let gpt2 = tpuport_testkit::fixtures("torch").join("gpt2").join("dynamo.onnx");
    let c = cost_of(&gpt2, &ImportOptions { batch: Some(1), ..ImportOptions::default() });
    let unbound =
        c.ops.iter().filter(|o| o.status == CostStatus::Uncounted(Uncounted::ShapeNotStatic));
    let n = unbound.count() as u64;
    assert!(n > 0);
    assert_eq!(c.totals.ops_uncounted, n);
    let op = c.ops.iter().find(|o| o.status.is_uncounted()).unwrap();
    let json = serde_json::to_value(op).unwrap();
    assert_eq!(json["note"], "shape not static (bind it with --batch / --dim)");
    // Bound, every op is counted and `note` is null.
    let dims = BTreeMap::from([("sequence".to_owned(), 128)]);
    let c = cost_of(&gpt2, &ImportOptions { batch: Some(1), dims, ..ImportOptions::default() });
    assert_eq!(c.totals.ops_uncounted, 0);
    assert!(serde_json::to_value(&c.ops[0]).unwrap()["note"].is_null());
}
