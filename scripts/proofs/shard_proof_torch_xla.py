#!/usr/bin/env python3
"""Proof of `tpuport shard --emit torch-xla`: the emitted `xs.mark_sharding` code runs under
torch_xla SPMD on CPU with 8 fake devices for one forward/backward/AdamW step of a small
Llama-style decoder written in plain torch with HF Llama's module names (`nn.Linear` weights
`[out, in]`; 2 layers, width 256, 8 heads, 2 KV heads, vocab 32000), and its loss matches the
same step without sharding (`.venv-xla` has no `transformers`).

1. builds the model in torch, saves its state dict with `torch.save`;
2. `tpuport shard model.pt --slice v5e-8 --workload train --emit torch-xla -o plan.py`;
3. moves the model to the XLA device, `plan.make_mesh()`, `plan.shard_model(model, mesh)`,
   `plan.shard_batch(ids, mesh)`, runs the step, and reads each parameter's sharding back
   (`torch_xla._XLAC._get_xla_sharding_spec`);
4. the same step with `plan.wrap_fsdpv2(model, mesh)`: the plan's specs, then torch_xla's
   FSDPv2 (`SpmdFullyShardedDataParallel`) around the model, which shards what the plan left
   whole on its largest dimension over `fsdp`.

Run with the torch_xla venv: .venv-xla/bin/python scripts/proofs/shard_proof_torch_xla.py --tpuport target/debug/tpuport
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


H, HEADS, KV, F, V, LAYERS = 256, 8, 2, 688, 32000, 2
nn = torch.nn


class RMSNorm(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(h))

    def forward(self, x):
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-5) * self.weight


class Attn(nn.Module):
    def __init__(self):
        super().__init__()
        d = H // HEADS
        self.q_proj = nn.Linear(H, H, bias=False)
        self.k_proj = nn.Linear(H, KV * d, bias=False)
        self.v_proj = nn.Linear(H, KV * d, bias=False)
        self.o_proj = nn.Linear(H, H, bias=False)

    def forward(self, x):
        b, s, _ = x.shape
        d = H // HEADS
        q = self.q_proj(x).view(b, s, HEADS, d).transpose(1, 2)
        k = self.k_proj(x).view(b, s, KV, d).transpose(1, 2).repeat_interleave(HEADS // KV, 1)
        v = self.v_proj(x).view(b, s, KV, d).transpose(1, 2).repeat_interleave(HEADS // KV, 1)
        w = (q @ k.transpose(-1, -2)) / d ** 0.5
        w = w.masked_fill(torch.triu(torch.ones(s, s, dtype=torch.bool, device=x.device), 1), -1e9)
        return self.o_proj((w.softmax(-1) @ v).transpose(1, 2).reshape(b, s, H))


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate_proj = nn.Linear(H, F, bias=False)
        self.up_proj = nn.Linear(H, F, bias=False)
        self.down_proj = nn.Linear(F, H, bias=False)

    def forward(self, x):
        return self.down_proj(torch.nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.self_attn, self.mlp = Attn(), Mlp()
        self.input_layernorm, self.post_attention_layernorm = RMSNorm(H), RMSNorm(H)

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(V, H)
        self.layers = nn.ModuleList(Layer() for _ in range(LAYERS))
        self.norm = RMSNorm(H)


class CausalLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = Decoder()
        self.lm_head = nn.Linear(H, V, bias=False)

    def forward(self, ids):
        x = self.model.embed_tokens(ids)
        for layer in self.model.layers:
            x = layer(x)
        logits = self.lm_head(self.model.norm(x))
        return torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, V), ids[:, 1:].reshape(-1))


def build(seed: int):
    torch.manual_seed(seed)
    return CausalLM()


def step(model, ids, device):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss = model(ids)
    loss.backward()
    opt.step()
    return loss


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tpuport", default="target/debug/tpuport")
    ap.add_argument("--mesh", default="fsdp=4,tensor=2")
    a = ap.parse_args()
    import torch_xla

    with tempfile.TemporaryDirectory() as tmp:
        model = build(0)
        sd = {k: v.contiguous() for k, v in model.state_dict().items()}
        ckpt = os.path.join(tmp, "model.pt")
        torch.save(sd, ckpt)
        plan_py = os.path.join(tmp, "plan.py")
        cmd = [a.tpuport, "shard", ckpt, "--slice", "v5e-8", "--workload", "train", "--batch", "8",
               "--seq", "64", "--heads", str(HEADS), "--mesh", a.mesh, "--emit", "torch-xla", "-o", plan_py]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stderr, file=sys.stderr)
            return 2
        spec = importlib.util.spec_from_file_location("plan", plan_py)
        plan = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(plan)

        ids = torch.randint(0, V, (8, 64), generator=torch.Generator().manual_seed(1))
        mesh = plan.make_mesh()
        dev = torch_xla.device()
        m = build(0).to(dev)
        missing = plan.shard_model(m, mesh)
        x = plan.shard_batch(ids.to(dev), mesh)
        loss = step(m, x, dev)
        torch_xla.sync()
        got = loss.item()
        # Reference: the same step, unsharded, on CPU (after the XLA step: autograd sizes its
        # device queues on the first backward, and SPMD must be on before that).
        ref = step(build(0), ids, "cpu").item()
        specs = {}
        for name, p in m.named_parameters():
            specs[name] = torch_xla._XLAC._get_xla_sharding_spec(p)
        split = sum(1 for s in specs.values() if s and "replicated" not in s)
        print(f"mesh {plan.MESH_SHAPE} {plan.MESH_AXES}; {len(specs)} parameters, {split} split, "
              f"not in the plan: {missing}")
        for n in ("model.layers.0.self_attn.q_proj.weight", "model.layers.0.mlp.down_proj.weight",
                  "model.embed_tokens.weight", "lm_head.weight"):
            print(f"  {n}: plan {plan.PARAM_SPECS.get(n)} -> {specs.get(n)}")
        print(f"loss sharded {got:.6f} vs unsharded CPU {ref:.6f} (|diff| {abs(got - ref):.2e})")
        ok = abs(got - ref) < 1e-3 * max(1.0, abs(ref)) and split > 0
        print("ok" if ok else "MISMATCH")

        # FSDPv2: the plan's specs, then torch_xla's SpmdFullyShardedDataParallel around the
        # model (the loss is a scalar: nothing to shard on the output).
        m2 = plan.wrap_fsdpv2(build(0).to(dev), mesh, shard_output=lambda out, mesh: None)
        x2 = plan.shard_batch(ids.to(dev), mesh)
        loss2 = step(m2, x2, dev)
        torch_xla.sync()
        got2 = loss2.item()
        inner = m2.module if hasattr(m2, "module") else m2
        specs2 = {n: torch_xla._XLAC._get_xla_sharding_spec(p) for n, p in inner.named_parameters()}
        split2 = sum(1 for s in specs2.values() if s and "replicated" not in s)
        q = "model.layers.0.self_attn.q_proj.weight"
        print(f"FSDPv2 ({type(m2).__name__}): {split2} of {len(specs2)} parameters split; {q}: plan "
              f"{plan.PARAM_SPECS.get(q)} -> {specs2.get(q)}; loss {got2:.6f} vs unsharded CPU {ref:.6f} "
              f"(|diff| {abs(got2 - ref):.2e})")
        ok2 = abs(got2 - ref) < 1e-3 * max(1.0, abs(ref)) and split2 >= split
        print("ok" if ok2 else "MISMATCH")
        return 0 if ok and ok2 else 1


if __name__ == "__main__":
    sys.exit(main())
