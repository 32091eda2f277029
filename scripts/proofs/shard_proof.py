#!/usr/bin/env python3
"""Proof of `tpuport shard` on JAX with 8 CPU devices.

For GPT-2, BERT-base and a Llama-style decoder (TinyLlama-1.1B's published config), at a
reduced layer count, this script:

1. writes a safetensors checkpoint *header* (a sparse file: names, shapes and dtypes of the
   HF state dict, no data) — what `tpuport shard` reads;
2. runs `tpuport shard CKPT --slice v5e-8 ... --emit jax -o plan.py --format json` and imports
   the emitted module (its `make_mesh`, `PARAM_SPECS`, `BATCH_SPEC`);
3. builds the model in plain JAX over a flat {HF name: array} dict (random init; the
   computations follow the HF modules: GPT-2 Conv1D `[in, out]`, BERT/Llama `nn.Linear`
   `[out, in]`; Llama without rotary embeddings, which hold no memory), places it with the
   plan's shardings, and compiles one AdamW training step (f32 params, grads, m, v; donated)
   and one inference step (logits);
4. compares `compiled.memory_analysis()` per device (argument + output + temp - alias, the
   formula MaxText uses) with the plan's per-chip total (without tiling padding: XLA:CPU
   does not tile), and prints the ratio.

With `--libtpu LIBTPU.so` the steps compile for a v5e:2x4 topology with the TPU compiler
instead (no TPU needed), and each step is also exported unsharded (`as_text(debug_info=True)`,
JAX's default Shardy constraints from `constrain()` inside) and given to `tpuport shard STEP
--workload W --mesh M --verify`; its per-chip figure is compared with JAX's compile of the
emitted plan, and the count is printed beside it.

Exit status 1 when a case is off by more than --tolerance (default 10 %).

Usage: XLA_FLAGS is set here (8 host devices) before JAX starts.
    .venv/bin/python scripts/proofs/shard_proof.py --tpuport target/debug/tpuport [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import struct
import subprocess
import sys
import tempfile
import time

os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
).strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# `--libtpu PATH`: compile for a v5e-8 topology with the real TPU compiler instead (no TPU
# needed; the environment libtpu wants is set before JAX starts).
LIBTPU = sys.argv[sys.argv.index("--libtpu") + 1] if "--libtpu" in sys.argv else None
if LIBTPU:
    os.environ.update(TPU_LIBRARY_PATH=os.path.abspath(LIBTPU), TPU_SKIP_MDS_QUERY="1",
                      TPU_WORKER_HOSTNAMES="localhost", TPU_ACCELERATOR_TYPE="v5litepod-8",
                      ALLOW_MULTIPLE_LIBTPU_LOAD="1", TF_CPP_MIN_LOG_LEVEL="1")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

# Published configs (HF config.json of openai-community/gpt2, google-bert/bert-base-uncased,
# TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T).
GPT2 = dict(vocab=50257, pos=1024, hidden=768, heads=12, inter=3072)
BERT = dict(vocab=30522, pos=512, types=2, hidden=768, heads=12, inter=3072)
LLAMA = dict(vocab=32000, hidden=2048, heads=32, kv_heads=4, inter=5632)


def gpt2_shapes(layers: int) -> dict[str, tuple[int, ...]]:
    c = GPT2
    h, f = c["hidden"], c["inter"]
    s = {"transformer.wte.weight": (c["vocab"], h), "transformer.wpe.weight": (c["pos"], h)}
    for i in range(layers):
        p = f"transformer.h.{i}."
        s.update({
            p + "ln_1.weight": (h,), p + "ln_1.bias": (h,),
            p + "attn.c_attn.weight": (h, 3 * h), p + "attn.c_attn.bias": (3 * h,),
            p + "attn.c_proj.weight": (h, h), p + "attn.c_proj.bias": (h,),
            p + "ln_2.weight": (h,), p + "ln_2.bias": (h,),
            p + "mlp.c_fc.weight": (h, f), p + "mlp.c_fc.bias": (f,),
            p + "mlp.c_proj.weight": (f, h), p + "mlp.c_proj.bias": (h,),
        })
    s.update({"transformer.ln_f.weight": (h,), "transformer.ln_f.bias": (h,)})
    return s


def bert_shapes(layers: int) -> dict[str, tuple[int, ...]]:
    c = BERT
    h, f = c["hidden"], c["inter"]
    s = {
        "embeddings.word_embeddings.weight": (c["vocab"], h),
        "embeddings.position_embeddings.weight": (c["pos"], h),
        "embeddings.token_type_embeddings.weight": (c["types"], h),
        "embeddings.LayerNorm.weight": (h,), "embeddings.LayerNorm.bias": (h,),
    }
    for i in range(layers):
        p = f"encoder.layer.{i}."
        for n in ("query", "key", "value"):
            s[p + f"attention.self.{n}.weight"] = (h, h)
            s[p + f"attention.self.{n}.bias"] = (h,)
        s.update({
            p + "attention.output.dense.weight": (h, h), p + "attention.output.dense.bias": (h,),
            p + "attention.output.LayerNorm.weight": (h,), p + "attention.output.LayerNorm.bias": (h,),
            p + "intermediate.dense.weight": (f, h), p + "intermediate.dense.bias": (f,),
            p + "output.dense.weight": (h, f), p + "output.dense.bias": (h,),
            p + "output.LayerNorm.weight": (h,), p + "output.LayerNorm.bias": (h,),
        })
    s.update({"pooler.dense.weight": (h, h), "pooler.dense.bias": (h,)})
    return s


def llama_shapes(layers: int) -> dict[str, tuple[int, ...]]:
    c = LLAMA
    h, f = c["hidden"], c["inter"]
    kv = h // c["heads"] * c["kv_heads"]
    s = {"model.embed_tokens.weight": (c["vocab"], h)}
    for i in range(layers):
        p = f"model.layers.{i}."
        s.update({
            p + "self_attn.q_proj.weight": (h, h), p + "self_attn.k_proj.weight": (kv, h),
            p + "self_attn.v_proj.weight": (kv, h), p + "self_attn.o_proj.weight": (h, h),
            p + "mlp.gate_proj.weight": (f, h), p + "mlp.up_proj.weight": (f, h),
            p + "mlp.down_proj.weight": (h, f),
            p + "input_layernorm.weight": (h,), p + "post_attention_layernorm.weight": (h,),
        })
    s.update({"model.norm.weight": (h,), "lm_head.weight": (c["vocab"], h)})
    return s


def write_header_only(path: str, shapes: dict[str, tuple[int, ...]]) -> None:
    """A valid safetensors file whose data section is a hole (sparse): f32 tensors."""
    header, off = {}, 0
    for name, shape in shapes.items():
        n = int(np.prod(shape)) * 4
        header[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [off, off + n]}
        off += n
    blob = json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        f.truncate(8 + len(blob) + off)


# ---------------------------------------------------------------------------------------------
# Models over flat {HF name: array} dicts.

# Set per case to the plan's activation constraint (`plan.constrain`): the hidden states are
# pinned to the batch split at every layer boundary, as MaxText does with its logical
# activation constraints; without it GSPMD may split them on the hidden dimension instead.
CONSTRAIN = [lambda x: x]
LOGITS = [lambda x: x]


def pin(x):
    return CONSTRAIN[0](x)


def layer_norm(x, w, b, eps=1e-5):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / jnp.sqrt(v + eps) * w + b


def rms_norm(x, w, eps=1e-5):
    return x / jnp.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def attention(q, k, v, heads, kv_heads, causal):
    b, s, _ = q.shape
    q = q.reshape(b, s, heads, -1)
    k = k.reshape(b, s, kv_heads, -1)
    v = v.reshape(b, s, kv_heads, -1)
    if kv_heads != heads:
        k = jnp.repeat(k, heads // kv_heads, axis=2)
        v = jnp.repeat(v, heads // kv_heads, axis=2)
    w = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(q.shape[-1])
    if causal:
        w = jnp.where(jnp.tril(jnp.ones((s, s), bool)), w, -1e9)
    w = jax.nn.softmax(w, axis=-1)
    return jnp.einsum("bhqk,bkhd->bqhd", w, v).reshape(b, s, -1)


def gpt2_forward(p, ids, layers, remat):
    c = GPT2
    x = p["transformer.wte.weight"][ids] + p["transformer.wpe.weight"][: ids.shape[1]]

    def block(x, i):
        q = f"transformer.h.{i}."
        y = layer_norm(x, p[q + "ln_1.weight"], p[q + "ln_1.bias"])
        qkv = y @ p[q + "attn.c_attn.weight"] + p[q + "attn.c_attn.bias"]
        a = attention(*jnp.split(qkv, 3, -1), c["heads"], c["heads"], True)
        x = x + a @ p[q + "attn.c_proj.weight"] + p[q + "attn.c_proj.bias"]
        y = layer_norm(x, p[q + "ln_2.weight"], p[q + "ln_2.bias"])
        y = jax.nn.gelu(y @ p[q + "mlp.c_fc.weight"] + p[q + "mlp.c_fc.bias"])
        return x + y @ p[q + "mlp.c_proj.weight"] + p[q + "mlp.c_proj.bias"]

    for i in range(layers):
        x = pin((jax.checkpoint(block, static_argnums=1) if remat else block)(pin(x), i))
    x = layer_norm(x, p["transformer.ln_f.weight"], p["transformer.ln_f.bias"])
    return LOGITS[0](x @ p["transformer.wte.weight"].T)


def bert_forward(p, ids, layers, remat):
    c = BERT
    e = "embeddings."
    x = p[e + "word_embeddings.weight"][ids] + p[e + "position_embeddings.weight"][: ids.shape[1]]
    x = x + p[e + "token_type_embeddings.weight"][0]
    x = layer_norm(x, p[e + "LayerNorm.weight"], p[e + "LayerNorm.bias"], 1e-12)

    def lin(x, n):
        return x @ p[n + ".weight"].T + p[n + ".bias"]

    def block(x, i):
        q = f"encoder.layer.{i}."
        a = attention(lin(x, q + "attention.self.query"), lin(x, q + "attention.self.key"),
                      lin(x, q + "attention.self.value"), c["heads"], c["heads"], False)
        x = layer_norm(x + lin(a, q + "attention.output.dense"),
                       p[q + "attention.output.LayerNorm.weight"],
                       p[q + "attention.output.LayerNorm.bias"], 1e-12)
        y = jax.nn.gelu(lin(x, q + "intermediate.dense"))
        return layer_norm(x + lin(y, q + "output.dense"), p[q + "output.LayerNorm.weight"],
                          p[q + "output.LayerNorm.bias"], 1e-12)

    for i in range(layers):
        x = pin((jax.checkpoint(block, static_argnums=1) if remat else block)(pin(x), i))
    pooled = jnp.tanh(lin(x[:, 0], "pooler.dense"))
    # Masked-LM style head tied to the word embeddings; the pooler feeds a scalar so it has a
    # gradient like the rest.
    return LOGITS[0](x @ p[e + "word_embeddings.weight"].T + pooled.mean() * 0.0)


def llama_forward(p, ids, layers, remat):
    c = LLAMA
    x = p["model.embed_tokens.weight"][ids]

    def block(x, i):
        q = f"model.layers.{i}."
        y = rms_norm(x, p[q + "input_layernorm.weight"])
        a = attention(y @ p[q + "self_attn.q_proj.weight"].T, y @ p[q + "self_attn.k_proj.weight"].T,
                      y @ p[q + "self_attn.v_proj.weight"].T, c["heads"], c["kv_heads"], True)
        x = x + a @ p[q + "self_attn.o_proj.weight"].T
        y = rms_norm(x, p[q + "post_attention_layernorm.weight"])
        g = jax.nn.silu(y @ p[q + "mlp.gate_proj.weight"].T) * (y @ p[q + "mlp.up_proj.weight"].T)
        return x + g @ p[q + "mlp.down_proj.weight"].T

    for i in range(layers):
        x = pin((jax.checkpoint(block, static_argnums=1) if remat else block)(pin(x), i))
    return LOGITS[0](rms_norm(x, p["model.norm.weight"]) @ p["lm_head.weight"].T)


MODELS = {
    "gpt2": (gpt2_shapes, gpt2_forward, GPT2["heads"]),
    "bert": (bert_shapes, bert_forward, BERT["heads"]),
    "llama": (llama_shapes, llama_forward, LLAMA["heads"]),
}


def load_plan(path: str):
    spec = importlib.util.spec_from_file_location("plan_" + str(abs(hash(path))), path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def memory(compiled) -> dict:
    ma = compiled.memory_analysis()
    d = {k: int(getattr(ma, k + "_size_in_bytes")) for k in ("argument", "output", "alias", "temp")}
    d["total"] = d["argument"] + d["output"] + d["temp"] - d["alias"]
    return d


def collective_counts(compiled) -> dict:
    text = compiled.as_text()
    return {op: text.count(f" {op}(") + text.count(f" {op}-start(")
            for op in ("all-gather", "reduce-scatter", "all-reduce")}


def tpuport_json(cmd):
    """Runs a `tpuport --format json` command; its report (exit 1, findings, still reports)."""
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def case(tpuport, tmp, model, layers, workload, batch, seq, mesh):
    shapes_fn, forward, heads = MODELS[model]
    shapes = shapes_fn(layers)
    ckpt = os.path.join(tmp, f"{model}{layers}.safetensors")
    if not os.path.exists(ckpt):
        write_header_only(ckpt, shapes)
    plan_py = os.path.join(tmp, f"plan_{model}_{workload}_{mesh or 'auto'}.py")
    cmd = [tpuport, "--format", "json", "shard", ckpt, "--slice", "v5e-8", "--workload", workload,
           "--batch", str(batch), "--seq", str(seq), "--param-dtype", "f32", "--dtype", "f32",
           "--heads", str(heads), "--emit", "jax", "-o", plan_py]
    if mesh:
        cmd += ["--mesh", mesh]
    report = tpuport_json(cmd)
    plan = load_plan(plan_py)
    mem = report["chosen"]["memory"]
    m = plan.make_mesh(DEVICES[0])
    CONSTRAIN[0] = lambda x: plan.constrain(x, m)
    LOGITS[0] = lambda x: jax.lax.with_sharding_constraint(x, plan.logits_sharding(m))
    shard = plan.param_shardings(m, shapes.keys())
    data = plan.batch_sharding(m, 2)
    rep = jax.sharding.NamedSharding(m, jax.sharding.PartitionSpec())
    abstract = {n: jax.ShapeDtypeStruct(s, jnp.float32, sharding=shard[n]) for n, s in shapes.items()}
    ids = jax.ShapeDtypeStruct((batch, seq), jnp.int32, sharding=data)
    remat = bool(mem["remat"])

    if workload == "train":
        def loss_fn(p, ids):
            logits = forward(p, ids, layers, remat)
            lp = jax.nn.log_softmax(logits[:, :-1], -1)
            return -jnp.take_along_axis(lp, ids[:, 1:, None], -1).mean()

        def step(p, mu, nu, ids):
            loss, g = jax.value_and_grad(loss_fn)(p, ids)
            b1, b2, lr, eps, wd = 0.9, 0.999, 1e-4, 1e-8, 0.01
            mu = {k: b1 * mu[k] + (1 - b1) * g[k] for k in p}
            nu = {k: b2 * nu[k] + (1 - b2) * g[k] * g[k] for k in p}
            p = {k: p[k] - lr * (mu[k] / (jnp.sqrt(nu[k]) + eps) + wd * p[k]) for k in p}
            return p, mu, nu, loss

        fn = jax.jit(step, in_shardings=(shard, shard, shard, data),
                     out_shardings=(shard, shard, shard, rep), donate_argnums=(0, 1, 2))
        lowered = fn.lower(abstract, abstract, abstract, ids)
    else:
        out = plan.logits_sharding(m)
        fn = jax.jit(lambda p, ids: forward(p, ids, layers, False),
                     in_shardings=(shard, data), out_shardings=out)
        lowered = fn.lower(abstract, ids)
    t0 = time.time()
    compiled = lowered.compile()
    secs = time.time() - t0
    got = memory(compiled)
    verified = None
    if LIBTPU:
        # The user's path: the same step exported unsharded (only its `constrain` pins inside),
        # given to `tpuport shard --verify`, which places the plan and compiles it with libtpu.
        plain = {n: jax.ShapeDtypeStruct(s, jnp.float32) for n, s in shapes.items()}
        ids0 = jax.ShapeDtypeStruct((batch, seq), jnp.int32)
        shardy = jax.config.jax_use_shardy_partitioner
        jax.config.update("jax_use_shardy_partitioner", EXPORT_SHARDY[0])
        try:
            if workload == "train":
                exported = jax.jit(step, donate_argnums=(0, 1, 2)).lower(plain, plain, plain, ids0)
            else:
                exported = jax.jit(lambda p, ids: forward(p, ids, layers, False)).lower(plain, ids0)
            text = exported.as_text(debug_info=True)
        finally:
            jax.config.update("jax_use_shardy_partitioner", shardy)
        step_path = os.path.join(tmp, f"step_{model}_{workload}_{mesh or 'auto'}.mlir")
        with open(step_path, "w") as f:
            f.write(text)
        chosen = report["chosen"]["mesh"]
        vcmd = [tpuport, "--format", "json", "shard", step_path, "--slice", "v5e-8", "--workload", workload,
                "--batch", str(batch), "--seq", str(seq), "--param-dtype", "f32", "--dtype", "f32",
                "--heads", str(heads), "--verify", "--plugin", LIBTPU,
                "--mesh", ",".join(f"{a}={chosen[a]}" for a in ("data", "fsdp", "tensor"))]
        v = tpuport_json(vcmd)
        verified = {"bytes": v["verified"]["compiler_bytes"], "count": v["chosen"]["memory"]["total"],
                    "unplanned": v["verified"]["unplanned"], "notes": v.get("notes", [])}
    # XLA:CPU does not tile: compare without the plan's TPU padding there.
    planned = mem["total"] - (0 if LIBTPU else mem["padding"])
    return {
        "model": f"{model} ({layers} layers)", "workload": workload, "batch": batch, "seq": seq,
        "mesh": report["chosen"]["strategy"] + " " + "x".join(str(report["chosen"]["mesh"][a]) for a in ("data", "fsdp", "tensor")),
        "remat": remat,
        "plan": planned, "plan_weights": mem["weights"], "plan_opt": mem["optimizer"] + mem["gradients"],
        "plan_act": mem["activations_remat"] if remat else mem["activations"],
        "xla": got, "ratio": got["total"] / planned, "compile_s": secs, "verified": verified,
        "collectives": collective_counts(compiled),
        "plan_comms": {k: report["chosen"]["comms"][k] for k in ("all_gather_bytes", "reduce_scatter_bytes", "all_reduce_bytes")},
    }


def gemma_case(tpuport, tmp, mesh):
    """A public training script's own step: Flax's Gemma example (scripts/testdata/flax_gemma_step.py).
    `tpuport shard --verify` gets the step lowered unsharded with its names; JAX compiles the
    same step with the emitted plan applied as a user would (`tree_shardings` per argument,
    the batch split, donated state pinned like its input), once with its default partitioner
    (Shardy) and once with GSPMD, the one `--verify` places for."""
    import re
    from functools import partial

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata"))
    import flax_gemma_step

    batch, seq = 8, 128
    _, _, args = flax_gemma_step.build(batch, seq, sharding="none")
    import train

    def wrapped(model, optimizer, rngs, batch, train_metrics):
        return train.jax_train_step(model, optimizer, rngs, batch, train_metrics, 0.0, 0, with_capture=True)

    plain = [jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), a) for a in args[:5]]
    step_path = os.path.join(tmp, f"step_flax_gemma_{mesh or 'auto'}.mlir")
    with open(step_path, "w") as f:
        f.write(jax.jit(wrapped, donate_argnums=(0, 1)).lower(*plain).as_text(debug_info=True))
    plan_py = os.path.join(tmp, f"plan_flax_gemma_{mesh or 'auto'}.py")
    cmd = [tpuport, "--format", "json", "shard", step_path, "--slice", "v5e-8", "--workload", "train",
           "--verify", "--plugin", LIBTPU, "--emit", "jax", "-o", plan_py]
    if mesh:
        cmd += ["--mesh", mesh]
    v = tpuport_json(cmd)
    plan = load_plan(plan_py)
    m = plan.make_mesh(DEVICES[0])
    names = ("model", "optimizer", "rngs", "batch", "train_metrics")
    ins = [plan.tree_shardings(a, m, n) for a, n in zip(args[:3], names)]
    ins.append({k: plan.batch_sharding(m, 2) for k in args[3]})
    ins.append(plan.tree_shardings(args[4], m, names[4]))
    # The step returns nnx.state((model, optimizer, rngs, train_metrics)): each updated leaf
    # keeps its argument's sharding, found by the same path components.
    def parts(path):
        return tuple(re.findall(r"[A-Za-z0-9_]+", path))
    by_parts = {parts(k): spec for k, spec in plan.PARAM_SPECS.items()}
    rep = jax.sharding.PartitionSpec()

    def out_sharding(path, _):
        t = parts(jax.tree_util.keystr(path))
        if len(t) >= 2 and t[0] == "0" and t[1] in ("0", "1", "2", "3"):
            return jax.sharding.NamedSharding(m, by_parts.get((names[(0, 1, 2, 4)[int(t[1])]],) + t[2:], rep))
        return jax.sharding.NamedSharding(m, rep)

    outs = jax.tree_util.tree_map_with_path(out_sharding, jax.eval_shape(wrapped, *plain))
    abstract = [jax.tree.map(lambda x, sh: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sh), a, sh)
                for a, sh in zip(args[:5], ins)]
    got = {}
    shardy = jax.config.jax_use_shardy_partitioner
    try:
        for partitioner, on in (("shardy", True), ("gspmd", False)):
            jax.config.update("jax_use_shardy_partitioner", on)
            fn = jax.jit(wrapped, donate_argnums=(0, 1), in_shardings=tuple(ins), out_shardings=outs)
            t0 = time.time()
            got[partitioner] = memory(fn.lower(*abstract).compile())
            got[partitioner + "_s"] = time.time() - t0
    finally:
        jax.config.update("jax_use_shardy_partitioner", shardy)
    chosen = v["chosen"]
    # The example's authors' own sharding (`ShardingConfig.fsdp_tp_sharding`, its activations
    # pinned too) over the same fsdp x tensor mesh: JAX compiles it as the training loop does,
    # and `tpuport shard --verify` gets the step the loop lowers over its 8 host devices (the
    # example's pins kept, the plan's specs on the arguments).
    own = own_verified = None
    if chosen["mesh"]["data"] == 1:
        import numpy as np
        shape = (chosen["mesh"]["fsdp"], chosen["mesh"]["tensor"])
        host = jax.make_mesh(shape, ("fsdp", "tensor"), devices=jax.devices()[:8])
        target = jax.sharding.Mesh(np.asarray(DEVICES[0]).reshape(shape), ("fsdp", "tensor"),
                                   axis_types=(jax.sharding.AxisType.Explicit,) * 2)
        step, _, nargs = flax_gemma_step.build(batch, seq, mesh=host)

        def on_target(x):
            spec = x.sharding.spec if isinstance(x.sharding, jax.sharding.NamedSharding) else rep
            return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=jax.sharding.NamedSharding(target, spec))

        with jax.set_mesh(target):
            own = memory(step.lower(*[jax.tree.map(on_target, a) for a in nargs[:5]], *nargs[5:]).compile())
        own_path = os.path.join(tmp, f"step_flax_gemma_own_{mesh or 'auto'}.mlir")
        with jax.set_mesh(host), open(own_path, "w") as f:
            f.write(step.lower(*nargs).as_text(debug_info=True))
        mesh_flag = ",".join(f"{a}={chosen['mesh'][a]}" for a in ("data", "fsdp", "tensor"))
        own_verified = tpuport_json([tpuport, "--format", "json", "shard", own_path, "--slice", "v5e-8",
                                     "--workload", "train", "--verify", "--plugin", LIBTPU,
                                     "--mesh", mesh_flag])["verified"]["compiler_bytes"]
    return {
        "own": own, "own_verified": own_verified,
        "model": "flax gemma example", "workload": "train", "batch": batch, "seq": seq,
        "mesh": chosen["strategy"] + " " + "x".join(str(chosen["mesh"][a]) for a in ("data", "fsdp", "tensor")),
        "verified": v["verified"]["compiler_bytes"], "count": chosen["memory"]["total"],
        "moments": len(v.get("state", [])), "xla": got["shardy"], "xla_gspmd": got["gspmd"],
        "ratio": got["shardy"]["total"] / v["verified"]["compiler_bytes"],
        "ratio_gspmd": got["gspmd"]["total"] / v["verified"]["compiler_bytes"],
        "compile_s": got["shardy_s"],
    }


# `--gemma`: the Flax Gemma example's step on these meshes (auto: the plan's own choice).
GEMMA_MESHES = [None, "data=8", "fsdp=8", "fsdp=4,tensor=2"]

DEVICES = [None]
# The step for `--verify` is exported as JAX does by default (Shardy constraints);
# `--export-gspmd`: with GSPMD `custom_call @Sharding` constraints instead.
EXPORT_SHARDY = [True]

# `tpuport run --devices 8` of each model's sharded inference module: every kind of axis once.
RUN_CASES = [
    ("gpt2", 4, "fsdp=4,tensor=2"),
    ("bert", 4, "data=2,fsdp=2,tensor=2"),
    ("llama", 2, "tensor=8"),
]


def run_check(tpuport, tmp, model, layers, batch, seq, mesh):
    """The sharded inference module, exported with its shardings, run by `tpuport run --devices
    8` on random weights; its logits must match the unsharded JAX forward on one device."""
    shapes_fn, forward, heads = MODELS[model]
    shapes = shapes_fn(layers)
    ckpt = os.path.join(tmp, f"{model}{layers}.safetensors")
    if not os.path.exists(ckpt):
        write_header_only(ckpt, shapes)
    plan_py = os.path.join(tmp, f"plan_run_{model}.py")
    cmd = [tpuport, "shard", ckpt, "--slice", "v5e-8", "--batch", str(batch), "--seq", str(seq),
           "--param-dtype", "f32", "--dtype", "f32", "--heads", str(heads), "--mesh", mesh,
           "--emit", "jax", "-o", plan_py]
    subprocess.run(cmd, capture_output=True, text=True, check=True)
    plan = load_plan(plan_py)
    m = plan.make_mesh()
    CONSTRAIN[0] = lambda x: plan.constrain(x, m)
    LOGITS[0] = lambda x: jax.lax.with_sharding_constraint(x, plan.logits_sharding(m))
    rng = np.random.default_rng(0)
    params = {n: (rng.standard_normal(s, dtype=np.float32) * 0.02) for n, s in shapes.items()}
    for n in params:
        if n.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight", "LayerNorm.weight", "norm.weight", "layernorm.weight")):
            params[n] = np.ones_like(params[n])
    ids = rng.integers(0, 1000, (batch, seq), dtype=np.int32)
    shard = plan.param_shardings(m, shapes.keys())
    fn = jax.jit(lambda p, i: forward(p, i, layers, False),
                 in_shardings=(shard, plan.batch_sharding(m, 2)), out_shardings=plan.logits_sharding(m))
    text = fn.lower(params, ids).as_text()
    mod = os.path.join(tmp, f"{model}_sharded.mlir")
    open(mod, "w").write(text)
    CONSTRAIN[0] = LOGITS[0] = lambda x: x
    one = jax.devices()[0]
    want = np.asarray(jax.jit(lambda p, i: forward(p, i, layers, False))(jax.device_put(params, one), jax.device_put(ids, one)))
    args = []
    # jax flattens the dict by sorted key, then the ids.
    for k, n in enumerate(sorted(params)):
        f = os.path.join(tmp, f"a{k}.npy")
        np.save(f, params[n])
        args += ["-i", f]
    f = os.path.join(tmp, "ids.npy")
    np.save(f, ids)
    args += ["-i", f]
    out = os.path.join(tmp, "run_out")
    r = subprocess.run([tpuport, "run", mod, *args, "--devices", "8", "--out", out],
                       capture_output=True, text=True)
    if r.returncode != 0:
        print(f"tpuport run failed: {r.stderr.strip()[-800:]}")
        return False
    got = np.load(os.path.join(out, "out0.npy"))
    err = float(np.max(np.abs(got - want)))
    ok = got.shape == want.shape and err < 1e-3
    print(f"tpuport run --devices 8 of the sharded {model} ({layers} layers) inference module, mesh {mesh}: "
          f"logits {got.shape}, max |diff| vs unsharded JAX {err:.2e} {'ok' if ok else 'MISMATCH'}")
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tpuport", default="target/debug/tpuport")
    ap.add_argument("--tolerance", type=float, default=0.10)
    ap.add_argument("--quick", action="store_true", help="one mesh per model")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--only", help="comma-separated models")
    ap.add_argument("--no-run", action="store_true", help="skip the `tpuport run --devices 8` check")
    ap.add_argument("--libtpu", help="libtpu.so: compile for a v5e-8 topology (make libtpu)")
    ap.add_argument("--batch", type=int, help="global batch of every case (default 8)")
    ap.add_argument("--seq", type=int, help="sequence length of every case (default 256)")
    ap.add_argument("--layers", type=int, help="layers of every model (default 4, Llama 2)")
    ap.add_argument("--export-gspmd", action="store_true",
                    help="with --libtpu: export the step with GSPMD constraints instead of Shardy ones (JAX's default)")
    ap.add_argument("--keep", help="write the checkpoints, plans and exported steps here (default: a temporary folder)")
    ap.add_argument("--gemma", nargs="?", const="all", choices=["all", "auto"],
                    help="with --libtpu: also prove the plan on Flax's Gemma example's own training step (all meshes, or only the plan's choice)")
    a = ap.parse_args()
    EXPORT_SHARDY[0] = not a.export_gspmd
    if a.libtpu:
        from jax.experimental import topologies
        topo = topologies.get_topology_desc(platform="tpu", topology_name="v5e:2x4",
                                            chip_config_name="default", chips_per_host_bounds=(2, 2, 1),
                                            num_slices=1, wrap=(False, False, False))
        DEVICES[0] = topo.devices
        print(f"compiling for {len(topo.devices)} x {topo.devices[0].device_kind} (libtpu {a.libtpu})")
    else:
        assert len(jax.devices()) == 8, jax.devices()
    cases = [
        ("gpt2", 4, "train", 8, 256, None), ("gpt2", 4, "infer", 8, 256, None),
        ("bert", 4, "train", 8, 256, None), ("bert", 4, "infer", 8, 256, None),
        ("llama", 2, "train", 8, 256, None), ("llama", 2, "infer", 8, 256, None),
    ]
    if not a.quick:
        cases += [
            ("gpt2", 4, "train", 8, 256, "fsdp=4,tensor=2"),
            ("bert", 4, "train", 8, 256, "data=2,fsdp=2,tensor=2"),
            ("llama", 2, "train", 8, 256, "fsdp=2,tensor=4"),
            ("llama", 2, "infer", 8, 256, "tensor=8"),
        ]
    cases = [(m, a.layers or n, w, a.batch or bt, a.seq or sq, mesh) for m, n, w, bt, sq, mesh in cases]
    if a.only:
        keep = set(a.only.split(","))
        cases = [c for c in cases if c[0] in keep]
    results, bad, runs, run_bad = [], 0, 0, 0
    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
    with (contextlib.nullcontext(a.keep) if a.keep else tempfile.TemporaryDirectory()) as tmp:
        # With --libtpu the plan's figure is `tpuport shard --verify`'s (the compiler's, for the
        # step exported unsharded); the count is printed beside it.
        head = "verify MiB" if a.libtpu else "plan MiB"
        print(f"{'model':16} {'step':6} {'mesh':18} {'remat':5} {head:>10} {'XLA MiB':>9} {'ratio':>6}  (weights+grads+opt / activations planned; XLA arg/out/temp/alias)")
        for c in cases:
            r = case(a.tpuport, tmp, *c)
            results.append(r)
            x = r["xla"]
            v = r["verified"]
            if v:
                r["count_ratio"] = r["ratio"]
                r["ratio"] = x["total"] / v["bytes"]
            ok = abs(r["ratio"] - 1) <= a.tolerance
            bad += not ok
            mib = 1 << 20
            plan = v["bytes"] if v else r["plan"]
            count = f" count {r['plan']/mib:.1f} ({r['count_ratio']:.3f})" if v else ""
            print(f"{r['model']:16} {r['workload']:6} {r['mesh']:18} {str(r['remat']):5} {plan/mib:10.1f} {x['total']/mib:9.1f} {r['ratio']:6.3f}"
                  f"  ({(r['plan_weights']+r['plan_opt'])/mib:.1f}+{r['plan_act']/mib:.1f}; {x['argument']/mib:.1f}/{x['output']/mib:.1f}/{x['temp']/mib:.1f}/{x['alias']/mib:.1f})"
                  f"{count} compile {r['compile_s']:.1f}s {'ok' if ok else 'OFF'}", flush=True)
        if a.gemma and a.libtpu:
            for mesh in GEMMA_MESHES if a.gemma == "all" else [None]:
                r = gemma_case(a.tpuport, tmp, mesh)
                results.append(r)
                ok = abs(r["ratio"] - 1) <= a.tolerance
                bad += not ok
                mib = 1 << 20
                print(f"{r['model']:16} {'train':6} {r['mesh']:18} {'False':5} {r['verified']/mib:10.1f} {r['xla']['total']/mib:9.1f} {r['ratio']:6.3f}"
                      f"  ({r['moments']} moments placed; GSPMD {r['xla_gspmd']['total']/mib:.1f} MiB, {r['ratio_gspmd']:.3f};"
                      f" arg/out/temp/alias B Shardy {'/'.join(str(r['xla'][k]) for k in ('argument', 'output', 'temp', 'alias'))}"
                      f" GSPMD {'/'.join(str(r['xla_gspmd'][k]) for k in ('argument', 'output', 'temp', 'alias'))})"
                      f" count {r['count']/mib:.1f} ({r['xla']['total']/r['count']:.3f}) compile {r['compile_s']:.1f}s {'ok' if ok else 'OFF'}"
                      + (f"; the example's own sharding {r['own']['total']/mib:.1f} MiB (its own export through --verify"
                         f" {r['own_verified']/mib:.1f})" if r["own"] else ""), flush=True)
        if not a.libtpu and not a.no_run:
            for model, layers, mesh in RUN_CASES:
                if not a.only or model in a.only.split(","):
                    ok = run_check(a.tpuport, tmp, model, layers, 8, 128, mesh)
                    runs += 1
                    bad += not ok
                    run_bad += not ok
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    print(f"{len(results) - (bad - run_bad)}/{len(results)} within {a.tolerance:.0%}")
    if runs:
        print(f"{runs - run_bad}/{runs} sharded modules run by `tpuport run --devices 8` match the unsharded forward")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
