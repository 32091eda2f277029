#!/usr/bin/env python3
"""Measure what the TPU compiler (libtpu, through `tpuport compile`) does with layouts and
memory, and keep it as small committed test data. Not part of `make test` (it compiles the five
torch exports twice: tens of minutes on 2 cores); rerun it when libtpu changes:

    make libtpu build
    .venv/bin/python scripts/proofs/libtpu_measure.py --tpuport target/release/tpuport \
        --libtpu .cache/libtpu/*/libtpu/libtpu.so --fixtures .cache/fixtures

Writes:
  crates/tpuport-hw/tests/data/libtpu_layouts.json
      one row per (chip, dtype, shape): a program `a + a` on one parameter of that shape, compiled
      for one chip; the compiler's argument bytes (= the parameter's device bytes) and layout.
      Shapes that matter for the padding model: conv kernels OIHW and HWIO, small trailing dims,
      vectors and scalars, embeddings, image batches and activations at odd batch sizes.
  crates/tpuport/tests/data/libtpu_memory.json
      one row per (model, target): libtpu's per-device figures (arguments, outputs, peak live
      buffers, generated code, total) next to `tpuport audit --slice TARGET`'s per-chip estimate
      (`memory.per_device_padded[chip]`, else `memory.padded[chip].inference`), for the JAX
      fixtures, the five torch exports at batch 8 (through `tpuport compile`'s lowering) and the
      8-way sharded fixtures, on v5e-8 and v6e-8. `scripts/proofs/audit_vs_libtpu.py` makes the same
      comparison through `tpuport audit --compiler libtpu` (the table in docs/compile.md).
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SHAPES = [
    # conv kernels, OIHW then HWIO
    ("f32", [64, 3, 7, 7]), ("f32", [7, 7, 3, 64]),
    ("f32", [64, 64, 3, 3]), ("f32", [3, 3, 64, 64]),
    ("f32", [512, 512, 3, 3]), ("f32", [3, 3, 512, 512]),
    ("f32", [2048, 1024, 1, 1]), ("f32", [1, 1, 1024, 2048]),
    ("f32", [32, 1, 3, 3]), ("f32", [3, 3, 1, 32]),
    ("bf16", [512, 512, 3, 3]), ("bf16", [64, 3, 7, 7]),
    # small trailing dims, vectors, scalars
    ("f32", [1000, 3]), ("f32", [3, 1000]), ("f32", [4, 7]), ("f32", [5, 1]), ("f32", [17, 300]),
    ("f32", [512, 10]), ("f32", [10]), ("f32", [768]), ("f32", [1000]), ("f32", [7]), ("f32", []),
    ("bf16", [4, 7]), ("bf16", [1000, 3]), ("bf16", [17, 300]), ("bf16", [768]),
    ("i8", [33, 65]), ("i8", [3]), ("i32", [8, 128]), ("i32", [3, 5]),
    # embeddings
    ("f32", [50257, 768]), ("f32", [30522, 768]), ("f32", [1024, 768]), ("bf16", [50257, 768]),
    # image batches and activations at odd batch sizes
    ("f32", [8, 3, 224, 224]), ("f32", [8, 224, 224, 3]), ("f32", [3, 3, 224, 224]),
    ("f32", [3, 224, 224, 3]), ("f32", [1, 3, 224, 224]), ("f32", [7, 128, 768]),
    ("f32", [5, 784]), ("f32", [1, 784]), ("bf16", [7, 128, 768]), ("f32", [3, 12, 128, 128]),
]

CHIPS = [("v5e", "v5e-1"), ("v6e", "v6e-1")]

JAX = ["mlp_b1", "mlp_b128", "cnn_b8", "encoder", "encoder_bf16"]
SHARDED = ["mlp_sharded8_dp", "mlp_sharded8_dp_gspmd", "mlp_sharded8_tp", "mlp_sharded8_tp_gspmd"]
TORCH = {"resnet50": [], "mobilenet_v2": [], "vit_b_16": [],
         "bert_base": ["--dim", "sequence=128"], "gpt2": ["--dim", "sequence=128"]}
TARGETS = ["v5e-8", "v6e-8"]


def tpuport(exe: str, args: list[str]) -> dict:
    r = subprocess.run([exe, "--format", "json", *args], capture_output=True, text=True,
                       check=False)
    if r.returncode not in (0, 1):
        sys.exit(f"tpuport {' '.join(args)} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    return json.loads(r.stdout)


def mlir_type(dtype: str, shape: list[int]) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + dtype + ">"


def layouts(exe: str, lib: str) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for dtype, shape in SHAPES:
            t = mlir_type(dtype, shape)
            op = "stablehlo.add"
            m = Path(tmp) / "m.mlir"
            m.write_text(f"module @m {{\n  func.func public @main(%a: {t}) -> {t} {{\n"
                         f"    %0 = {op} %a, %a : {t}\n    return %0 : {t}\n  }}\n}}\n")
            for chip, target in CHIPS:
                rep = tpuport(exe, ["compile", str(m), "--target", target, "--plugin", lib])
                p = rep["parameters"][0]
                rows.append({"chip": chip, "dtype": dtype, "shape": shape,
                             "argument_bytes": rep["per_device"]["arguments"],
                             "layout": p["layout"], "logical_bytes": p["logical_bytes"]})
                print(f"  {chip} {dtype}{shape}: {rows[-1]['argument_bytes']} B {p['layout']}",
                      flush=True)
    return rows


def audit_estimate(rep: dict, chip: str):
    mem = rep["memory"]
    for c, figures in mem.get("per_device_padded", []):
        if c == chip:
            return figures.get("total")
    for c, figures in mem.get("padded", []):
        if c == chip:
            return figures.get("inference")
    return None


def memory(exe: str, lib: str, fixtures: Path, match: str | None) -> list[dict]:
    cases = [(f"jax/{n}", fixtures / "jax" / n / "jit.mlir", []) for n in JAX + SHARDED]
    cases += [(f"torch/{n} (batch 8)", fixtures / "torch" / n / "dynamo.onnx", ["--batch", "8", *x])
              for n, x in TORCH.items()]
    cases = [c for c in cases if match is None or match in c[0]]
    rows = []
    for name, path, extra in cases:
        for target in TARGETS:
            chip = target.split("-")[0]
            c = tpuport(exe, ["compile", str(path), "--target", target, "--plugin", lib, *extra])
            a = tpuport(exe, ["audit", str(path), "--slice", target, "--compiler", "none", *extra])
            d = c["per_device"]
            est = audit_estimate(a, chip)
            # HBM: the peak also counts on-chip VMEM (docs/compile.md).
            buffers = ((d["arguments"] or 0) + (d["outputs"] or 0) + (d["temporaries"] or 0)
                       - (d["aliased"] or 0))
            rows.append({
                "model": name, "target": target, "program_devices": c["program_devices"],
                "libtpu": {k: d[k] for k in ("arguments", "outputs", "temporaries", "peak",
                                             "generated_code", "total")},
                "libtpu_buffers": buffers,
                "audit_estimate": est,
                "audit_over_libtpu_buffers": (est / buffers) if est and buffers else None,
                "compile_ms": round(c["compile_ms"]),
            })
            r = rows[-1]
            print(f"  {name} {target}: libtpu buffers {buffers} total {d['total']} audit {est} "
                  f"ratio {r['audit_over_libtpu_buffers']}", flush=True)
    return rows


def dump(doc: dict) -> str:
    """JSON with one row per line (small diffs when a libtpu changes a few answers)."""
    head = {k: v for k, v in doc.items() if k != "rows"}
    lines = [json.dumps(r, separators=(", ", ": ")) for r in doc["rows"]]
    body = json.dumps(head, indent=1)[:-2]
    return body + ',\n "rows": [\n  ' + ",\n  ".join(lines) + "\n ]\n}\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpuport", required=True)
    ap.add_argument("--libtpu", required=True)
    ap.add_argument("--fixtures", required=True, type=Path)
    ap.add_argument("--only", choices=["layouts", "memory"])
    ap.add_argument("--match", help="memory: only models whose name contains this; their rows "
                                    "replace the same (model, target) rows of the existing file")
    a = ap.parse_args()
    lib = str(Path(a.libtpu).resolve())
    version = Path(lib).parent.parent.name
    head = {"libtpu": version, "command": "scripts/proofs/libtpu_measure.py (see its docstring)"}
    if a.only in (None, "layouts"):
        out = ROOT / "crates/tpuport-hw/tests/data/libtpu_layouts.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(dump({**head, "rows": layouts(a.tpuport, lib)}))
    if a.only in (None, "memory"):
        out = ROOT / "crates/tpuport/tests/data/libtpu_memory.json"
        rows = memory(a.tpuport, lib, a.fixtures, a.match)
        if a.match and out.exists():
            new = {(r["model"], r["target"]) for r in rows}
            old = [r for r in json.loads(out.read_text())["rows"]
                   if (r["model"], r["target"]) not in new]
            rows = old + rows
        out.write_text(dump({**head, "rows": rows}))


if __name__ == "__main__":
    main()
