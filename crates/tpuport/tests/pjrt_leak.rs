//! Leak check: 10,000 executions through `tpuport bench` must not grow the process's resident
//! memory by more than a small bound (an output buffer, event or argument list leaked per
//! execution would).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]
#![allow(unreachable_pub, reason = "the shared test helpers are pub")]

mod common;

use std::path::Path;

const BOUND: u64 = 16 << 20;

/// A module whose one output is 64 KiB: 10,000 leaked outputs would be 640 MiB.
const WIDE: &str = r"module @wide {
  func.func public @main(%x: tensor<128x128xf32>, %y: tensor<128x128xf32>) -> tensor<128x128xf32> {
    %0 = stablehlo.multiply %x, %y : tensor<128x128xf32>
    %1 = stablehlo.add %0, %x : tensor<128x128xf32>
    return %1 : tensor<128x128xf32>
  }
}
";

fn bench_rss(cache: &Path, model: &Path, iters: u32) -> (u64, u64) {
    assert!(tpuport_pjrt::find_cpu().is_some(), "CPU PJRT plugin not found: run `make venv`");
    let o = common::output(
        common::runtime_command(cache)
            .args(["--format", "json", "bench", model.to_str().unwrap(), "--warmup", "50"])
            .args(["--iters", &iters.to_string()]),
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    let r = &v["results"][0];
    assert_eq!(r["iters"], iters);
    (r["rss_before_bytes"].as_u64().unwrap(), r["rss_after_bytes"].as_u64().unwrap())
}

#[test]
#[cfg(target_os = "linux")]
fn ten_thousand_executions_keep_resident_memory_flat() {
    let tmp = tempfile::tempdir().unwrap();
    let wide = tmp.path().join("wide.mlir");
    std::fs::write(&wide, WIDE).unwrap();
    let mlp = common::fixtures().join("jax/mlp_b1/jit.mlir");
    for model in [wide.as_path(), mlp.as_path()] {
        let (before, after) = bench_rss(tmp.path(), model, 10_000);
        assert!(before > 1 << 20, "{}: implausible RSS {before}", model.display());
        let grew = after.saturating_sub(before);
        assert!(
            grew < BOUND,
            "{}: RSS grew by {grew} bytes over 10000 executions ({before} -> {after})",
            model.display()
        );
    }
}
