#!/usr/bin/env python3
"""Reference FLOP counts for `tpuport audit`'s acceptance tests (torch reference models).

For each model of scripts/fixtures/torch_models.py (built by that script's own `build`, so the
architecture, config and example inputs are exactly the fixture's: batch 1, sequence 128), runs
one forward pass under `torch.utils.flop_counter.FlopCounterMode` and records its total and its
per-operator counts. FlopCounterMode counts matmul / conv / SDPA only (mm, addmm, bmm, baddbmm,
convolution, scaled_dot_product_*): the test compares it with tpuport's dense MXU FLOPs.
torch's fused multi-head-attention fast path (`_native_multi_head_attention`, taken by
torchvision's ViT in eval/no_grad) is invisible to FlopCounterMode, which would drop the QKV and
output projections and the attention matmuls (22.5 G instead of 35.1 G for ViT-B/16); it is
switched off (`torch.backends.mha.set_fastpath_enabled(False)`) so that the same arithmetic runs
through counted ops. The ONNX exports contain those matmuls either way.

Output: ${XDG_CACHE_HOME:-$HOME/.cache}/tpuport/audit-refs-<sha256(this script)[:16]>/refs.json,
written atomically (temp dir + rename); a rerun with the file present is a no-op.
Prints the output directory on stdout (last line).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODELS = ("resnet50", "mobilenet_v2", "vit_b_16", "bert_base", "gpt2")


def out_dir() -> Path:
    digest = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "tpuport" / f"audit-refs-{digest}"


def main() -> None:
    dst = out_dir()
    if (dst / "refs.json").is_file():
        print(dst)
        return
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    sys.path.insert(0, str(HERE / "fixtures"))
    from torch_models import build  # noqa: E402  (read-only reuse of the fixture builder)

    torch.set_num_threads(max(1, os.cpu_count() or 1))
    torch.backends.mha.set_fastpath_enabled(False)
    refs = {"torch": torch.__version__, "models": {}}
    for name in MODELS:
        spec = build(name)
        args = tuple(spec.inputs.values())
        counter = FlopCounterMode(display=False)
        with torch.no_grad(), counter:
            if spec.varargs:
                spec.model(*args)
            else:
                spec.model(args[0])
        per_op = {str(k): int(v) for k, v in counter.get_flop_counts().get("Global", {}).items()}
        refs["models"][name] = {
            "flops": int(counter.get_total_flops()),
            "per_op": per_op,
            "inputs": {k: list(v.shape) for k, v in spec.inputs.items()},
        }
        print(f"{name}: {refs['models'][name]['flops']:,} FLOPs {per_op}", file=sys.stderr)
        del spec
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".audit-refs-", dir=dst.parent))
    (tmp / "refs.json").write_text(json.dumps(refs, indent=1, sort_keys=True))
    try:
        os.rename(tmp, dst)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)  # a concurrent run won the race
    print(dst)


if __name__ == "__main__":
    main()
