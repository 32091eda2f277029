#!/usr/bin/env python3
"""Batch-8 inputs and onnxruntime reference outputs for the reference-model lowering test.

The fixture set (`$TPUPORT_FIXTURES/torch/<model>/`) holds inputs and onnxruntime outputs at the
exported batch (1). `crates/tpuport/tests/lower_models.rs` also checks batch 8; this script
writes, for resnet50, mobilenet_v2, vit_b_16, bert_base and gpt2:

  DIR/<model>/inputs_b8.npz            images: N(0,1); text: token ids uniform over the vocab,
                                       token types uniform over {0,1}, attention_mask 1 except
                                       odd rows, whose last 8*row positions are 0 (padding)
  DIR/<model>/outputs_<exp>_b8.npz     onnxruntime CPU outputs of <exp>.onnx (legacy, dynamo)

DIR defaults to ${XDG_CACHE_HOME:-~/.cache}/tpuport/lower-refs-<hash of this script and of
the fixtures' manifest.json>; written to DIR.tmp-<pid> and renamed when complete; nothing is
done when DIR exists. Prints DIR on stdout (`make lower-refs` exports it as
TPUPORT_LOWER_REFS).
"""

import argparse
import hashlib
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort

MODELS = ("resnet50", "mobilenet_v2", "vit_b_16", "bert_base", "gpt2")
EXPORTERS = ("legacy", "dynamo")
BATCH = 8
SEED = 20261203
VOCAB = {"bert_base": 30522, "gpt2": 50257}


def default_dir(fixtures: Path) -> Path:
    h = hashlib.sha256(Path(__file__).read_bytes())
    man = fixtures / "manifest.json"
    if man.is_file():
        h.update(man.read_bytes())
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tpuport"
    return root / f"lower-refs-{h.hexdigest()[:12]}"


def make_inputs(model: str, ref: dict, rng: np.random.Generator) -> dict:
    out = {}
    for name, v in ref.items():
        shape = (BATCH,) + v.shape[1:]
        if v.dtype.kind == "f":
            out[name] = rng.standard_normal(shape).astype(v.dtype)
        elif name == "input_ids":
            out[name] = rng.integers(0, VOCAB[model], shape).astype(v.dtype)
        elif name == "token_type_ids":
            out[name] = rng.integers(0, 2, shape).astype(v.dtype)
        elif name == "attention_mask":
            m = np.ones(shape, dtype=v.dtype)
            for r in range(1, BATCH, 2):
                m[r, shape[1] - 8 * r:] = 0
            out[name] = m
        else:
            raise SystemExit(f"{model}: no recipe for input {name} {v.dtype}{v.shape}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fixtures", type=Path, default=Path(os.environ.get("TPUPORT_FIXTURES", ".cache/fixtures")))
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch_dir = a.fixtures / "torch"
    if not torch_dir.is_dir():
        raise SystemExit(f"error: {torch_dir} missing: run `make fixtures`")
    out = (a.out or default_dir(a.fixtures.resolve())).resolve()
    if (out / ".done").is_file():
        print(out)
        return 0
    tmp = out.parent / f"{out.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    rng = np.random.default_rng(SEED)
    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    so.inter_op_num_threads = 1
    for model in MODELS:
        d = tmp / model
        d.mkdir()
        ref = dict(np.load(torch_dir / model / "inputs.npz"))
        inputs = make_inputs(model, ref, rng)
        np.savez(d / "inputs_b8.npz", **inputs)
        for exp in EXPORTERS:
            sess = ort.InferenceSession(str(torch_dir / model / f"{exp}.onnx"), so,
                                        providers=["CPUExecutionProvider"])
            names = [o.name for o in sess.get_outputs()]
            feed = {i.name: inputs[i.name] for i in sess.get_inputs()}
            res = sess.run(names, feed)
            np.savez(d / f"outputs_{exp}_b8.npz", **dict(zip(names, res)))
            print(f"{model}/{exp}: {[r.shape for r in res]}", file=sys.stderr)
    (tmp / ".done").write_text("")
    if out.exists():
        shutil.rmtree(out)
    os.replace(tmp, out)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
