#!/usr/bin/env python3
"""Benchmark and decisions of `tpuport shard` on a Llama-2-7B-shape checkpoint.

Writes a synthetic safetensors checkpoint with Llama-2-7B's state dict (names of HF
LlamaForCausalLM; shapes from meta-llama/Llama-2-7b-hf config.json: hidden 4096, intermediate
11008, 32 layers, 32 heads, vocab 32000; bf16), as a sparse file: a real header, no data
(13.5 GB apparent, a few KB on disk). Then:

- prints the plan's verdicts: v5e-8 training with AdamW at 8 x 2048 and 8 x 1024 tokens, and
  v5e-4 inference, next to the doc's 16 bytes/parameter formula (sharding-anchors.md §7);
- times `tpuport shard` end to end (process start, header read, planning of every mesh, report),
  median of --repeat runs, against `tpuport inspect --no-dedup` of the same file (the import
  alone) as the baseline, and checks the issue's budget (< 1 s).

Usage: python scripts/bench/bench_shard.py --tpuport target/release/tpuport
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time

HIDDEN, INTER, LAYERS, VOCAB = 4096, 11008, 32, 32000


def llama2_7b() -> dict[str, list[int]]:
    s = {"model.embed_tokens.weight": [VOCAB, HIDDEN]}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        for n in ("q", "k", "v", "o"):
            s[p + f"self_attn.{n}_proj.weight"] = [HIDDEN, HIDDEN]
        s[p + "mlp.gate_proj.weight"] = [INTER, HIDDEN]
        s[p + "mlp.up_proj.weight"] = [INTER, HIDDEN]
        s[p + "mlp.down_proj.weight"] = [HIDDEN, INTER]
        s[p + "input_layernorm.weight"] = [HIDDEN]
        s[p + "post_attention_layernorm.weight"] = [HIDDEN]
    s["model.norm.weight"] = [HIDDEN]
    s["lm_head.weight"] = [VOCAB, HIDDEN]
    return s


def write_sparse(path: str, shapes: dict[str, list[int]]) -> int:
    header, off = {"__metadata__": {"format": "pt"}}, 0
    for name, shape in shapes.items():
        n = 2
        for d in shape:
            n *= d
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [off, off + n]}
        off += n
    blob = json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        f.truncate(8 + len(blob) + off)
    return off // 2


def run(cmd: list[str]) -> tuple[float, subprocess.CompletedProcess]:
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    return time.perf_counter() - t, r


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tpuport", default="target/release/tpuport")
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    gib = 1 << 30
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = os.path.join(tmp, "model.safetensors")
        params = write_sparse(ckpt, llama2_7b())
        print(f"Llama-2-7B shapes: {params:,} parameters; file {os.path.getsize(ckpt) / 1e9:.1f} GB apparent, "
              f"{os.stat(ckpt).st_blocks * 512 / 1024:.0f} KiB on disk")
        print(f"doc formula (sharding-anchors.md §7, MaxText f32 w/g/mu/nu): 16 B x {params:,} / 8 = "
              f"{16 * params / 8 / 1e9:.2f} GB per chip on v5e-8")
        cases = [
            ("v5e-8 train adamw 8x2048", ["--slice", "v5e-8", "--workload", "train", "--optimizer", "adamw", "--batch", "8", "--seq", "2048", "--heads", "32"]),
            ("v5e-8 train adamw 8x1024", ["--slice", "v5e-8", "--workload", "train", "--optimizer", "adamw", "--batch", "8", "--seq", "1024", "--heads", "32"]),
            ("v5e-4 infer 4x2048", ["--slice", "v5e-4", "--batch", "4", "--seq", "2048", "--heads", "32"]),
        ]
        for label, args in cases:
            _, r = run([a.tpuport, "--format", "json", "shard", ckpt, *args])
            if r.returncode not in (0, 1):
                print(f"{label}: {r.stderr.strip()}", file=sys.stderr)
                return 2
            v = json.loads(r.stdout)
            c, m = v["chosen"], v["chosen"]["memory"]
            state = m["weights"] + m["gradients"] + m["optimizer"]
            print(f"{label:26} {c['strategy']:10} mesh {c['mesh']['data']}x{c['mesh']['fsdp']}x{c['mesh']['tensor']}: "
                  f"{m['total'] / 1e9:6.2f} GB of {m['budget'] / 1e9:.2f} GB ({'fits' if c['fits'] else 'DOES NOT FIT'}; "
                  f"weights+grads+optimizer {state / 1e9:.2f} GB, activations {'remat ' if m['remat'] else ''}"
                  f"{(m['activations_remat'] if m['remat'] else m['activations']) / 1e9:.2f} GB, fsdp gathered {m['fsdp_gathered'] / 1e9:.2f} GB); "
                  f"step {c['step_time_s'] * 1e3:.0f} ms predicted")
            if "fits_at" in v:
                f = v["fits_at"]
                print(f"{'':26} nearest that fits: global batch {f['batch']}, {f['strategy']} mesh "
                      f"{f['mesh']['data']}x{f['mesh']['fsdp']}x{f['mesh']['tensor']}, {f['bytes'] / 1e9:.2f} GB")
            if "fits_on" in v:
                f = v["fits_on"]
                print(f"{'':26} smallest larger slice that fits batch {f['batch']}: {f['slice']} ({f['chips']} chips), "
                      f"{f['strategy']} mesh {f['mesh']['data']}x{f['mesh']['fsdp']}x{f['mesh']['tensor']}, {f['bytes'] / 1e9:.2f} GB")
        shard = [run([a.tpuport, "--format", "json", "shard", ckpt, *cases[0][1]])[0] for _ in range(a.repeat)]
        inspect = [run([a.tpuport, "--format", "json", "inspect", ckpt, "--no-dedup"])[0] for _ in range(a.repeat)]
        ts, ti = statistics.median(shard), statistics.median(inspect)
        print(f"planning time (tpuport shard, end to end, median of {a.repeat}): {ts * 1e3:.1f} ms; "
              f"baseline tpuport inspect --no-dedup of the same file: {ti * 1e3:.1f} ms; ratio {ts / ti:.2f}x; "
              f"budget 1000 ms: {'ok' if ts < 1.0 else 'OVER'}")
        return 0 if ts < 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
