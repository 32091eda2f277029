#!/usr/bin/env python3
"""`make bench` for `tpuport audit`: tpuport vs a Python baseline on BERT-base ONNX, as ratios.

Baseline (the inspect bench's style, scripts/bench/bench_inspect.py): onnx + numpy computing the same
totals tpuport's audit reports — the ONNX file loaded with `onnx.load`, batch and sequence bound
on the inputs, shapes propagated with onnxruntime's `SymbolicShapeInference` (onnx's own
`infer_shapes` leaves the legacy export's reshape chains unresolved), then dense matmul / gemm /
conv FLOPs (2·M·N·K, with numpy broadcasting of batch dims), weight bytes, and the peak of live
intermediate tensors by a last-use liveness walk in node order. The MXU FLOP totals of both
sides must agree exactly (printed as `agree`).

Two comparisons per file, each the median of REPEATS runs:
  process  both sides as a fresh process, the way a user runs them (`tpuport audit FILE` vs
           `python -c "<baseline>"`, interpreter start-up and imports included)
  library  the work alone: tpuport's own import + analysis time (`--timings`) vs the baseline
           function timed inside an already-started interpreter with its modules imported
Goal: >= 10x.
"""

import argparse
import json
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPEATS = 5
DIMS = {"batch": 1, "sequence": 128}

BASELINE = """
import numpy as np
import onnx
from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

ITEMSIZE = {1: 4, 2: 1, 3: 1, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 16: 2}

def work(path, dims):
    m = onnx.load(path)
    for i in m.graph.input:
        for d in i.type.tensor_type.shape.dim:
            if d.dim_param in dims:
                d.dim_value = dims[d.dim_param]
    m = SymbolicShapeInference.infer_shapes(m, auto_merge=True)
    g = m.graph
    shapes, sizes = {}, {}
    for vi in list(g.value_info) + list(g.input) + list(g.output):
        t = vi.type.tensor_type
        s = [d.dim_value for d in t.shape.dim]
        shapes[vi.name] = s
        sizes[vi.name] = int(np.prod(s, dtype=np.int64)) * ITEMSIZE.get(t.elem_type, 4)
    weights = 0
    inits = set()
    for t in g.initializer:
        shapes[t.name] = list(t.dims)
        weights += int(np.prod(t.dims, dtype=np.int64)) * ITEMSIZE.get(t.data_type, 4)
        inits.add(t.name)
    flops = 0
    for n in g.node:
        if n.op_type == "MatMul":
            a, b = shapes[n.input[0]], shapes[n.input[1]]
            batch = int(np.prod(np.broadcast_shapes(tuple(a[:-2]), tuple(b[:-2])), dtype=np.int64))
            flops += 2 * batch * a[-2] * a[-1] * b[-1]
        elif n.op_type == "Gemm":
            at = {x.name: x.i for x in n.attribute}
            a, b = shapes[n.input[0]], shapes[n.input[1]]
            mm, k = (a[1], a[0]) if at.get("transA") else (a[0], a[1])
            nn = b[0] if at.get("transB") else b[1]
            flops += 2 * mm * k * nn
        elif n.op_type == "Conv":
            w, y = shapes[n.input[1]], shapes[n.output[0]]
            flops += 2 * int(np.prod(y, dtype=np.int64)) * int(np.prod(w[1:], dtype=np.int64))
    last = {}
    for i, n in enumerate(g.node):
        for x in n.input:
            last[x] = i
    outs = {o.name for o in g.output}
    live, peak = 0, 0
    for i, n in enumerate(g.node):
        for o in n.output:
            live += sizes.get(o, 0)
        peak = max(peak, live)
        for x in set(n.input):
            if last.get(x) == i and x not in inits and x not in outs and x in sizes:
                live -= sizes[x]
    return flops, weights, peak
"""


def tpuport_times(tpuport, path, extra):
    wall, lib, report = [], [], None
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        r = subprocess.run([tpuport, "--format", "json", "audit", str(path), "--timings", *extra],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        wall.append(time.perf_counter() - t0)
        if r.returncode != 0:
            sys.exit(f"tpuport failed on {path}: {r.stderr.decode().strip()}")
        m = re.search(r"timings: import ([\d.]+) ms, analysis ([\d.]+) ms", r.stderr.decode())
        lib.append((float(m.group(1)) + float(m.group(2))) / 1e3)
        report = json.loads(r.stdout)
    return statistics.median(wall), statistics.median(lib), report


def python_times(py, path):
    ns = {}
    exec(BASELINE, ns)
    result = ns["work"](str(path), DIMS)
    lib = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        ns["work"](str(path), DIMS)
        lib.append(time.perf_counter() - t0)
    wall = []
    code = BASELINE + f"\nprint(work({str(path)!r}, {DIMS!r}))\n"
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        subprocess.run([py, "-c", code], check=True, stdout=subprocess.DEVNULL)
        wall.append(time.perf_counter() - t0)
    return statistics.median(wall), statistics.median(lib), result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpuport", required=True)
    ap.add_argument("--fixtures", required=True)
    a = ap.parse_args()
    rows = []
    for exp in ("legacy", "dynamo"):
        p = Path(a.fixtures) / "torch" / "bert_base" / f"{exp}.onnx"
        if not p.exists():
            sys.exit(f"{p}: missing; run `make fixtures`")
        rw, rl, rep = tpuport_times(a.tpuport, p, ["--batch", "1", "--dim", "sequence=128"])
        pw, pl, (flops, weights, peak) = python_times(sys.executable, p)
        ours = rep["cost"]["totals"]["mxu_flops"]
        rows.append((f"bert_base/{exp}.onnx", rw, pw, rl, pl, ours == flops, ours, flops))
    print(f"audit benchmark: median of {REPEATS} runs; ratio = python time / tpuport time")
    print(f"{'file':<24} {'process: tpuport':>16} {'python':>9} {'ratio':>7}   "
          f"{'library: tpuport':>16} {'python':>9} {'ratio':>7}  MXU FLOPs")
    for name, rw, pw, rl, pl, ok, ours, theirs in rows:
        print(f"{name:<24} {rw*1e3:>14.1f}ms {pw*1e3:>7.1f}ms {pw/rw:>6.1f}x   "
              f"{rl*1e3:>14.2f}ms {pl*1e3:>7.2f}ms {pl/rl:>6.1f}x  "
              f"{'agree' if ok else f'DIFFER ({ours} vs {theirs})'}")
    if not all(r[5] for r in rows):
        sys.exit("MXU FLOP totals disagree between tpuport and the baseline")


if __name__ == "__main__":
    main()
