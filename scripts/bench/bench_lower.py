#!/usr/bin/env python3
"""`make bench` for `tpuport lower`: ResNet-50 at batch 8, lowered by tpuport and run on XLA:CPU
through PJRT, vs onnxruntime's CPU execution provider on the same ONNX file; plus lowering and
compile time per reference model.

Same model file (`$TPUPORT_FIXTURES/torch/resnet50/<exporter>.onnx`), same batch (8), same
cores, same thread count T (default: the CPUs this process may use):
  tpuport      `tpuport lower MODEL --input-shape input=8x3x224x224 -o DIR` once, then per round
               `taskset -c CPUS tpuport --format json bench DIR/<b8 module>.mlir --iters ITERS
               --warmup WARMUP` (random argument values; weights are module arguments, so the
               values do not change the work). Figure: p50 of the per-call wall time of one
               PJRT execute on device-resident arguments (`p50_us`).
  onnxruntime  one `InferenceSession` (CPUExecutionProvider, intra_op_num_threads=T,
               inter_op_num_threads=1, sequential, all graph optimizations), this process pinned
               to the same CPUS, on an N(0,1) batch-8 input; WARMUP untimed runs, then ITERS runs
               each timed with perf_counter. Figure: p50.
ROUNDS rounds alternate the two sides; the printed figure per side is the median of the
per-round p50s, the ratio is tpuport / onnxruntime (below 1: tpuport faster).

Lowering + compile per model (legacy and dynamo exports of the five reference models, batch 8):
wall time of `tpuport lower MODEL --input-shape NAME=8x... --no-weights-file -o DIR` (import,
shape binding, lowering, writing the module and manifest; not the weights file), and `compile_cold_ms` of `tpuport bench DIR/<module> --iters 1` (one fresh XLA:CPU
compile).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

ROUNDS = 5
ITERS = 10
WARMUP = 3
MODELS = ("resnet50", "mobilenet_v2", "vit_b_16", "bert_base", "gpt2")
EXPORTERS = ("legacy", "dynamo")
BATCH = 8


def shapes(model_dir: Path) -> list[str]:
    """`--input-shape name=8x...` for every input of the fixture (batch 8, same sequence)."""
    z = np.load(model_dir / "inputs.npz")
    return [f"{k}={'x'.join(map(str, (BATCH,) + v.shape[1:]))}" for k, v in z.items()]


def lower(exe: str, model: Path, out: Path) -> tuple[Path, float]:
    cmd = [exe, "lower", str(model), "--no-weights-file", "-o", str(out)]
    for s in shapes(model.parent):
        cmd += ["--input-shape", s]
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t
    if r.returncode != 0:
        raise RuntimeError(f"tpuport lower {model} failed ({r.returncode}): {r.stderr.strip()}")
    mods = sorted(out.rglob("*.mlir"))
    pick = [m for m in mods if f"b{BATCH}" in m.name or f"b{BATCH}" in m.parent.name] or mods
    if not pick:
        raise RuntimeError(f"tpuport lower {model} wrote no .mlir under {out}")
    return pick[0], wall


def bench(exe: str, module: Path, cpus: str, iters: int, warmup: int) -> dict:
    cmd = ["taskset", "-c", cpus, exe, "--format", "json", "bench", str(module), "--iters",
           str(iters), "--warmup", str(warmup), "--no-cache"]
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"tpuport bench {module} failed ({r.returncode}): {r.stderr.strip()}")
    return json.loads(r.stdout)["results"][0]


class OrtSide:
    def __init__(self, model: Path, threads: int):
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.sess = ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"])
        i = self.sess.get_inputs()[0]
        rng = np.random.default_rng(0)
        self.feed = {i.name: rng.standard_normal((BATCH, 3, 224, 224)).astype(np.float32)}

    def p50_us(self, iters: int, warmup: int) -> float:
        for _ in range(warmup):
            self.sess.run(None, self.feed)
        times = []
        for _ in range(iters):
            t = time.perf_counter_ns()
            self.sess.run(None, self.feed)
            times.append((time.perf_counter_ns() - t) / 1e3)
        return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tpuport", default="./target/release/tpuport")
    ap.add_argument("--fixtures", type=Path, default=Path(".cache/fixtures"))
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--rounds", type=int, default=ROUNDS)
    ap.add_argument("--iters", type=int, default=ITERS)
    ap.add_argument("--exporter", default="dynamo", choices=EXPORTERS)
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    a = ap.parse_args()
    torch_dir = a.fixtures / "torch"
    if not torch_dir.is_dir():
        sys.exit(f"error: {torch_dir} missing: run `make fixtures`")
    cpus_list = sorted(os.sched_getaffinity(0))[: a.threads]
    cpus = ",".join(map(str, cpus_list))
    os.sched_setaffinity(0, cpus_list)
    result: dict = {"threads": a.threads, "cpus": cpus, "batch": BATCH, "models": {}}

    print(f"== lowering + compile, batch {BATCH} (tpuport lower wall time; one cold XLA:CPU compile)")
    print(f"{'model':<14} {'exporter':<8} {'lower s':>8} {'compile s':>10}")
    with tempfile.TemporaryDirectory(prefix="tpuport-bench-lower-") as tmp:
        resnet_module = None
        for m in MODELS:
            for exp in EXPORTERS:
                out = Path(tmp) / f"{m}-{exp}"
                try:
                    module, wall = lower(a.tpuport, torch_dir / m / f"{exp}.onnx", out)
                    row = bench(a.tpuport, module, cpus, 1, 0)
                    comp = row["compile_cold_ms"] / 1e3
                    print(f"{m:<14} {exp:<8} {wall:>8.2f} {comp:>10.2f}")
                    result["models"][f"{m}/{exp}"] = {"lower_s": wall, "compile_s": comp}
                    if m == "resnet50" and exp == a.exporter:
                        resnet_module = module
                except RuntimeError as e:
                    print(f"{m:<14} {exp:<8} failed: {str(e).splitlines()[0][:160]}")
                    result["models"][f"{m}/{exp}"] = {"error": str(e)[:1000]}
        if resnet_module is None:
            sys.exit("error: ResNet-50 did not lower; no latency comparison")

        print(f"\n== ResNet-50 ({a.exporter} export) batch {BATCH}, {a.threads} thread(s) on CPUs "
              f"{cpus}: p50 per call, median of {a.rounds} rounds x {a.iters} iterations")
        ortside = OrtSide(torch_dir / "resnet50" / f"{a.exporter}.onnx", a.threads)
        tp, orx = [], []
        for r in range(a.rounds):
            row = bench(a.tpuport, resnet_module, cpus, a.iters, WARMUP)
            tp.append(row["p50_us"])
            orx.append(ortside.p50_us(a.iters, WARMUP))
            print(f"  round {r + 1}: tpuport {tp[-1] / 1e3:8.1f} ms   onnxruntime {orx[-1] / 1e3:8.1f} ms")
    t_med, o_med = statistics.median(tp), statistics.median(orx)
    ratio, best = t_med / o_med, min(tp) / min(orx)
    print(f"tpuport (XLA:CPU)   {t_med / 1e3:8.1f} ms")
    print(f"onnxruntime CPU     {o_med / 1e3:8.1f} ms")
    print(f"ratio tpuport/ort   {ratio:8.2f}x (best rounds {best:.2f}x)")
    result["resnet50"] = {"exporter": a.exporter, "tpuport_p50_us": t_med, "ort_p50_us": o_med,
                          "ratio": ratio, "best_ratio": best, "rounds_tpuport_us": tp,
                          "rounds_ort_us": orx}
    if a.json:
        a.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
