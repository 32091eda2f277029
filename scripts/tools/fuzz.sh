#!/usr/bin/env bash
# `make fuzz`: run every importer's fuzz target for a bounded time (FUZZ_SECONDS each, default 60).
# cargo-fuzz needs nightly-only compiler flags; RUSTC_BOOTSTRAP=1 lets the pinned stable
# toolchain accept them, so no second toolchain has to be installed.
set -euo pipefail
cd "$(dirname "$0")/../../fuzz"
secs="${FUZZ_SECONDS:-60}"
export RUSTC_BOOTSTRAP=1
for t in onnx stablehlo safetensors torch npy; do
  mkdir -p "corpus/$t"
  echo "fuzzing $t for ${secs}s" >&2
  cargo fuzz run "$t" "corpus/$t" -- -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10
done
