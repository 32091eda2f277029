#!/usr/bin/env python3
"""`make bench` for `tpuport inspect`: tpuport vs a Python baseline on the same files, as ratios.

Baselines:
  ONNX:        onnx.load + onnx.shape_inference.infer_shapes + parameter count over initializers
  safetensors: safetensors.safe_open(...) keys and per-tensor shapes (header only)
Two comparisons per file, each the median of REPEATS runs:
  process  both sides as a fresh process, the way a user runs them (`tpuport inspect FILE` vs
           `python -c "<baseline>"`, interpreter start-up and imports included)
  library  the work alone: tpuport's own import + analysis time (`--timings`) vs the baseline
           function timed inside an already-started interpreter with its modules imported
A synthetic 7B-parameter safetensors header (Llama-2-7B names and shapes, data as a sparse
file) is generated in a temp dir.
"""

import argparse
import json
import re
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPEATS = 7

ONNX_BASELINE = """
import onnx
def work(path):
    m = onnx.load(path)
    m = onnx.shape_inference.infer_shapes(m)
    n = 0
    for init in m.graph.initializer:
        if len(init.dims) == 0:
            continue
        k = 1
        for d in init.dims:
            k *= d
        n += k
    return n
"""

SAFETENSORS_BASELINE = """
from safetensors import safe_open
def work(path):
    n = 0
    with safe_open(path, framework="np") as f:
        for k in f.keys():
            s = f.get_slice(k).get_shape()
            p = 1
            for d in s:
                p *= d
            n += p
    return n
"""


def median(xs):
    return statistics.median(xs)


def tpuport_times(tpuport, path, extra):
    wall, lib, report = [], [], None
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        r = subprocess.run([tpuport, "--format", "json", "inspect", str(path), "--timings", *extra],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        wall.append(time.perf_counter() - t0)
        if r.returncode != 0:
            sys.exit(f"tpuport failed on {path}: {r.stderr.decode().strip()}")
        m = re.search(r"timings: import ([\d.]+) ms, analysis ([\d.]+) ms", r.stderr.decode())
        lib.append((float(m.group(1)) + float(m.group(2))) / 1e3)
        report = json.loads(r.stdout)
    return median(wall), median(lib), report


def python_times(py, baseline, path):
    # library: in one interpreter, after imports
    ns = {}
    exec(baseline, ns)
    count = ns["work"](str(path))
    lib = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        ns["work"](str(path))
        lib.append(time.perf_counter() - t0)
    # process: a fresh interpreter each time
    wall = []
    code = baseline + f"\nprint(work({str(path)!r}))\n"
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        subprocess.run([py, "-c", code], check=True, stdout=subprocess.DEVNULL)
        wall.append(time.perf_counter() - t0)
    return median(wall), median(lib), count


def prod(s):
    n = 1
    for d in s:
        n *= d
    return n


def llama7b_shapes():
    d, ff, vocab, layers = 4096, 11008, 32000, 32
    t = {"model.embed_tokens.weight": [vocab, d], "model.norm.weight": [d], "lm_head.weight": [vocab, d]}
    for i in range(layers):
        p = f"model.layers.{i}."
        for n in ("q_proj", "k_proj", "v_proj", "o_proj"):
            t[p + f"self_attn.{n}.weight"] = [d, d]
        t[p + "mlp.gate_proj.weight"] = [ff, d]
        t[p + "mlp.up_proj.weight"] = [ff, d]
        t[p + "mlp.down_proj.weight"] = [d, ff]
        t[p + "input_layernorm.weight"] = [d]
        t[p + "post_attention_layernorm.weight"] = [d]
    return t


def write_synthetic_safetensors(path):
    header, off = {"__metadata__": {"format": "pt"}}, 0
    for name, shape in llama7b_shapes().items():
        nbytes = prod(shape) * 2
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [off, off + nbytes]}
        off += nbytes
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        f.truncate(8 + len(h) + off)  # sparse: no data blocks on disk
    return sum(prod(s) for s in llama7b_shapes().values())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpuport", required=True)
    ap.add_argument("--fixtures", required=True)
    a = ap.parse_args()
    fx = Path(a.fixtures)
    rows = []

    def measure(label, path, extra, baseline, expect=None):
        rw, rl, rep = tpuport_times(a.tpuport, path, extra)
        pw, pl, n_py = python_times(sys.executable, baseline, path)
        n_rs = rep["params"]["elements"]
        ok = n_rs == n_py and (expect is None or n_rs == expect)
        rows.append((label, rw, pw, rl, pl, ok))

    for model in ("bert_base", "resnet50", "gpt2"):
        for exp in ("legacy", "dynamo"):
            p = fx / "torch" / model / f"{exp}.onnx"
            if not p.exists():
                sys.exit(f"{p}: missing; run `make fixtures`")
            extra = ["--batch", "1"] + (["--dim", "sequence=128"] if model in ("bert_base", "gpt2") else [])
            measure(f"{model}/{exp}.onnx", p, extra, ONNX_BASELINE)
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "llama7b.safetensors"
        n = write_synthetic_safetensors(p)
        measure(f"7B safetensors header ({n/1e9:.2f}B params)", p, [], SAFETENSORS_BASELINE, n)

    print(f"inspect benchmark: median of {REPEATS} runs; ratio = python time / tpuport time")
    print(f"{'file':<36} {'process: tpuport':>16} {'python':>9} {'ratio':>7}   {'library: tpuport':>16} {'python':>9} {'ratio':>7}  counts")
    for name, rw, pw, rl, pl, ok in rows:
        print(f"{name:<36} {rw*1e3:>14.1f}ms {pw*1e3:>7.1f}ms {pw/rw:>6.1f}x   "
              f"{rl*1e3:>14.2f}ms {pl*1e3:>7.2f}ms {pl/rl:>6.1f}x  {'agree' if ok else 'DIFFER'}")
    if not all(r[-1] for r in rows):
        sys.exit("parameter counts disagree between tpuport and the baseline")


if __name__ == "__main__":
    main()
