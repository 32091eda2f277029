#!/usr/bin/env python3
"""`make bench` for `tpuport inspect`: tpuport vs a Python baseline on the same files, as ratios.

Baselines (run in this process, imports excluded from the timing, which favours Python):
  ONNX:        onnx.load + onnx.shape_inference.infer_shapes + parameter count over initializers
  safetensors: safetensors.safe_open(...) keys and per-tensor shapes (header only)
tpuport is timed as a whole process (`tpuport --format json inspect FILE`), start-up included.
Each side runs REPEATS times; the medians are compared. A synthetic 7B-parameter safetensors
header (Llama-2-7B tensor names and shapes, data as a sparse file) is generated in a temp dir.
"""

import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPEATS = 7


def median_time(fn, repeats=REPEATS):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run_tpuport(tpuport, path, extra=()):
    def go():
        r = subprocess.run([tpuport, "--format", "json", "inspect", str(path), *extra],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if r.returncode != 0:
            sys.exit(f"tpuport failed on {path}: {r.stderr.decode().strip()}")
        return json.loads(r.stdout)
    report = go()
    return median_time(go), report


def onnx_baseline(path):
    import onnx
    from onnx import numpy_helper  # noqa: F401

    def go():
        m = onnx.load(str(path))
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
    count = go()
    return median_time(go), count


def safetensors_baseline(path):
    from safetensors import safe_open

    def go():
        shapes = {}
        with safe_open(str(path), framework="np") as f:
            for k in f.keys():
                shapes[k] = f.get_slice(k).get_shape()
        return sum(_prod(s) for s in shapes.values())
    count = go()
    return median_time(go), count


def _prod(s):
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
        nbytes = _prod(shape) * 2
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [off, off + nbytes]}
        off += nbytes
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        f.truncate(8 + len(h) + off)  # sparse: no data blocks on disk
    return sum(_prod(s) for s in llama7b_shapes().values())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpuport", required=True)
    ap.add_argument("--fixtures", required=True)
    a = ap.parse_args()
    fx = Path(a.fixtures)
    rows = []
    for model in ("bert_base", "resnet50", "gpt2"):
        for exp in ("legacy", "dynamo"):
            p = fx / "torch" / model / f"{exp}.onnx"
            if not p.exists():
                continue
            extra = ["--batch", "1"] + (["--dim", "sequence=128"] if model in ("bert_base", "gpt2") else [])
            t_rs, rep = run_tpuport(a.tpuport, p, extra)
            t_py, n_py = onnx_baseline(p)
            n_rs = rep["params"]["elements"]
            rows.append((f"{model}/{exp}.onnx", t_rs, t_py, n_rs == n_py))
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "llama7b.safetensors"
        n = write_synthetic_safetensors(p)
        t_rs, rep = run_tpuport(a.tpuport, p)
        t_py, n_py = safetensors_baseline(p)
        rows.append((f"synthetic 7B safetensors header ({n/1e9:.2f}B params)", t_rs, t_py,
                     rep["params"]["elements"] == n_py == n))
    print(f"inspect benchmark: median of {REPEATS} runs each; ratio = python / tpuport")
    print(f"{'file':<52} {'tpuport':>10} {'python':>10} {'ratio':>8}  counts agree")
    for name, t_rs, t_py, ok in rows:
        print(f"{name:<52} {t_rs*1e3:>8.1f}ms {t_py*1e3:>8.1f}ms {t_py/t_rs:>7.1f}x  {'yes' if ok else 'NO'}")
    if not all(ok for *_, ok in rows):
        sys.exit("parameter counts disagree between tpuport and the baseline")


if __name__ == "__main__":
    main()
