#!/usr/bin/env python3
"""Proof of `tpuport shard --emit torch-xla`: the emitted `xs.mark_sharding` code runs under
torch_xla SPMD on CPU with 8 fake devices for one forward/backward/AdamW step of a small
GPT-2 (HF `transformers` GPT2LMHeadModel, 2 layers, from GPT-2's published config at a
smaller width), and its loss matches the same step without sharding.

1. builds the model in torch, saves its state dict as safetensors;
2. `tpuport shard model.safetensors --slice v5e-8 --workload train --emit torch-xla -o plan.py`;
3. moves the model to the XLA device, `plan.make_mesh()`, `plan.shard_model(model, mesh)`,
   `plan.shard_batch(ids, mesh)`, runs the step, and reads each parameter's sharding back
   (`torch_xla._XLAC._get_xla_sharding_spec`).

Run with the torch_xla venv: .venv-xla/bin/python scripts/shard_proof_torch_xla.py --tpuport target/debug/tpuport
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile

os.environ.setdefault("PJRT_DEVICE", "CPU")
os.environ.setdefault("CPU_NUM_DEVICES", "8")

import numpy as np  # noqa: E402
import torch  # noqa: E402


def build(seed: int):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    cfg = GPT2Config(n_layer=2, n_embd=256, n_head=8, n_positions=128, vocab_size=50257,
                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    return GPT2LMHeadModel(cfg)


def step(model, ids, device):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    out = model(input_ids=ids, labels=ids)
    out.loss.backward()
    opt.step()
    return out.loss


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tpuport", default="target/debug/tpuport")
    ap.add_argument("--mesh", default="fsdp=4,tensor=2")
    a = ap.parse_args()
    import torch_xla
    import torch_xla.core.xla_model as xm
    from safetensors.torch import save_file

    with tempfile.TemporaryDirectory() as tmp:
        model = build(0)
        sd = {k: v.contiguous() for k, v in model.state_dict().items() if k != "lm_head.weight"}
        ckpt = os.path.join(tmp, "model.safetensors")
        save_file(sd, ckpt)
        plan_py = os.path.join(tmp, "plan.py")
        cmd = [a.tpuport, "shard", ckpt, "--slice", "v5e-8", "--workload", "train", "--batch", "8",
               "--seq", "64", "--heads", "8", "--mesh", a.mesh, "--emit", "torch-xla", "-o", plan_py]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stderr, file=sys.stderr)
            return 2
        spec = importlib.util.spec_from_file_location("plan", plan_py)
        plan = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(plan)

        ids = torch.randint(0, 50257, (8, 64), generator=torch.Generator().manual_seed(1))
        # Reference: the same step, unsharded, on CPU.
        ref = step(build(0), ids, "cpu").item()

        mesh = plan.make_mesh()
        dev = torch_xla.device()
        m = build(0).to(dev)
        missing = plan.shard_model(m, mesh)
        x = plan.shard_batch(ids.to(dev), mesh)
        loss = step(m, x, dev)
        xm.mark_step()
        got = loss.item()
        specs = {}
        for name, p in m.named_parameters():
            specs[name] = torch_xla._XLAC._get_xla_sharding_spec(p)
        split = sum(1 for s in specs.values() if s and "replicated" not in s)
        print(f"mesh {plan.MESH_SHAPE} {plan.MESH_AXES}; {len(specs)} parameters, {split} split, "
              f"not in the plan: {missing}")
        for n in ("transformer.h.0.attn.c_attn.weight", "transformer.h.0.mlp.c_proj.weight",
                  "transformer.wte.weight"):
            print(f"  {n}: plan {plan.PARAM_SPECS.get(n)} -> {specs.get(n)}")
        print(f"loss sharded {got:.6f} vs unsharded CPU {ref:.6f} (|diff| {abs(got - ref):.2e})")
        ok = abs(got - ref) < 1e-3 * max(1.0, abs(ref)) and split > 0
        print("ok" if ok else "MISMATCH")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
