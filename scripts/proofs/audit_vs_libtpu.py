#!/usr/bin/env python3
"""`tpuport audit`'s per-chip HBM estimate against libtpu's own figure (issue 12 acceptance).

For every case (the JAX fixtures, the five torch ONNX exports lowered by tpuport, the 8-way
sharded JAX fixtures, on v5e-8 and v6e-8, and one GPT-2 that does not fit a v5e chip) it runs

    tpuport audit MODEL --slice SLICE --compiler libtpu --plugin LIBTPU --format json [dims]

and reads the report's `compiler` section: the audit's estimate of the HBM one device needs
for the forward pass (weights, inputs, outputs, activations beyond on-chip VMEM, in the layouts
the compiler picks), libtpu's figure for the same (arguments + outputs - aliased + temporaries,
or the bytes its out-of-memory refusal names), the difference, both fit verdicts, and how many
weight layouts the compiler confirmed. Prints a markdown table (the one in docs/compile.md).
With --check, exits 1 when a compiled case is off by more than 10 %, a verdict disagrees, or
the compiler contradicts any of the audit's weight layouts (fewer confirmed than checked).

    .venv/bin/python scripts/proofs/audit_vs_libtpu.py --tpuport ./target/release/tpuport \
        --fixtures .cache/fixtures --libtpu .cache/libtpu/0.0.52/libtpu/libtpu.so [--check]

One case at a time (libtpu compiles use every core); each case's seconds go to stderr. About
7 minutes on the 2-core build machine (6 min 58 s measured, docs/compile.md), more under load.
"""

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

JAX = ("mlp_b1", "mlp_b128", "cnn_b8", "encoder", "encoder_bf16")
SHARDED = ("mlp_sharded8_dp", "mlp_sharded8_dp_gspmd", "mlp_sharded8_tp", "mlp_sharded8_tp_gspmd")
TORCH = {
    "resnet50": ["--batch", "8"],
    "mobilenet_v2": ["--batch", "8"],
    "vit_b_16": ["--batch", "8"],
    "bert_base": ["--batch", "8", "--dim", "sequence=128"],
    "gpt2": ["--batch", "8", "--dim", "sequence=128"],
}
LIMIT_PCT = 10.0


def cases(fixtures: Path):
    for target in ("v5e-8", "v6e-8"):
        for m in JAX:
            yield m, target, fixtures / "jax" / m / "jit.mlir", []
        for m, dims in TORCH.items():
            yield f"{m} (onnx, batch 8)", target, fixtures / "torch" / m / "dynamo.onnx", dims
        for m in SHARDED:
            yield m, target, fixtures / "jax" / m / "jit.mlir", []
    gpt2 = fixtures / "torch" / "gpt2" / "dynamo.onnx"
    yield "gpt2 (onnx, batch 64 x 1024)", "v5e-1", gpt2, ["--batch", "64", "--dim", "sequence=1024"]


def mib(b: int) -> str:
    return f"{b / 2**20:,.1f} MiB"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tpuport", default="./target/release/tpuport")
    ap.add_argument("--fixtures", default=".cache/fixtures")
    ap.add_argument("--libtpu", required=True)
    ap.add_argument("--check", action="store_true", help="exit 1 beyond 10 %%, on a verdict mismatch or an unconfirmed layout")
    ap.add_argument("--only", nargs="*", help="substrings of case names to run")
    a = ap.parse_args()
    rows, bad = [], []
    for name, target, path, extra in cases(Path(a.fixtures)):
        if a.only and not any(o in name for o in a.only):
            continue
        cmd = [a.tpuport, "audit", str(path), "--slice", target, "--compiler", "libtpu",
               "--plugin", a.libtpu, "--format", "json", *extra]
        t = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True)
        secs = time.perf_counter() - t
        if p.returncode != 0 or not p.stdout.strip():
            print(f"{name} {target}: exit {p.returncode}: {p.stderr.strip()[-400:]}", file=sys.stderr)
            bad.append(f"{name} {target}: did not run")
            continue
        c = json.loads(p.stdout)["compiler"]
        verdict = lambda fits: "fits" if fits else "does not fit"
        row = (
            f"| {name} | {target} | {c['devices']} | {mib(c['estimate_bytes'])} | "
            f"{mib(c['compiler_bytes'])} | {c['difference_pct']:+.1f} % | "
            f"{mib(c['generated_code']) if c['generated_code'] is not None else '-'} | "
            f"{verdict(c['estimate_fits'])} / {verdict(c['compiler_fits'])} | "
            f"{c['layouts_confirmed']} of {c['layouts_checked']} |"
        )
        rows.append(row)
        print(row, f"({secs:.0f} s)", file=sys.stderr, flush=True)
        if c["estimate_fits"] != c["compiler_fits"]:
            bad.append(f"{name} {target}: estimate {verdict(c['estimate_fits'])}, compiler {verdict(c['compiler_fits'])}")
        if c["compiler_fits"] and abs(c["difference_pct"]) > LIMIT_PCT:
            bad.append(f"{name} {target}: {c['difference_pct']:+.1f} %")
        if c["layouts_confirmed"] != c["layouts_checked"]:
            bad.append(f"{name} {target}: {c['layouts_confirmed']} of {c['layouts_checked']} "
                       f"weight layouts confirmed by the compiler")
    print("| model | slice | devices | audit estimate | libtpu (HBM buffers) | difference | libtpu code | fits (estimate / libtpu) | layouts confirmed |")
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    for b in bad:
        print(f"off: {b}", file=sys.stderr)
    return 1 if a.check and bad else 0


if __name__ == "__main__":
    sys.exit(main())
