"""Model repository for `tpuport serve`'s conformance and bad-input runs (scripts/serve_conformance.py).

Writes OUT/repo with two models exported from JAX as StableHLO text, one module per batch
bucket, weights as module arguments:
  mlp     softmax(relu(x @ w1 + b1) @ w2 + b2), x [N, 784] f32, buckets 1, 4, 8, weights in
          weights.safetensors
  dtypes  one [N, 3] input per protocol datatype (BOOL … FP64, FP16, BF16) and one output each:
          logical not for BOOL, x + 1 for integers (wrapping), x * 2 + 1 for floats; buckets 1, 4
and OUT/mlp_weights.npz (the weights, for the numpy reference). Run with the project venv
(jax, safetensors).
"""

import argparse
import json
import os

import jax
import jax.numpy as jnp
import numpy as np
from safetensors.numpy import save_file

jax.config.update("jax_enable_x64", True)

DTYPES = [  # (input name, numpy dtype name, wire datatype)
    ("b", "bool", "BOOL"),
    ("u8", "uint8", "UINT8"), ("u16", "uint16", "UINT16"), ("u32", "uint32", "UINT32"), ("u64", "uint64", "UINT64"),
    ("i8", "int8", "INT8"), ("i16", "int16", "INT16"), ("i32", "int32", "INT32"), ("i64", "int64", "INT64"),
    ("f16", "float16", "FP16"), ("bf16", "bfloat16", "BF16"), ("f32", "float32", "FP32"), ("f64", "float64", "FP64"),
]


def mlp(w1, b1, w2, b2, x):
    h = jax.nn.relu(x @ w1 + b1)
    return jax.nn.softmax(h @ w2 + b2, axis=-1)


def dtypes_fn(*xs):
    out = []
    for (name, _, _), x in zip(DTYPES, xs):
        if x.dtype == jnp.bool_:
            out.append(jnp.logical_not(x))
        elif jnp.issubdtype(x.dtype, jnp.integer):
            out.append(x + jnp.ones((), x.dtype))
        else:
            out.append(x * jnp.asarray(2, x.dtype) + jnp.asarray(1, x.dtype))
    return tuple(out)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    repo = os.path.join(a.out, "repo")
    rng = np.random.default_rng(0)

    d = os.path.join(repo, "mlp")
    os.makedirs(d, exist_ok=True)
    w = {
        "w1": (rng.standard_normal((784, 512)) / 28).astype(np.float32),
        "b1": (rng.standard_normal(512) * 0.1).astype(np.float32),
        "w2": (rng.standard_normal((512, 10)) / 22).astype(np.float32),
        "b2": (rng.standard_normal(10) * 0.1).astype(np.float32),
    }
    save_file(w, os.path.join(d, "weights.safetensors"))
    np.savez(os.path.join(a.out, "mlp_weights.npz"), **w)
    buckets = [1, 4, 8]
    for b in buckets:
        x = jax.ShapeDtypeStruct((b, 784), jnp.float32)
        ws = [jax.ShapeDtypeStruct(w[k].shape, jnp.float32) for k in ("w1", "b1", "w2", "b2")]
        write(os.path.join(d, f"mlp_b{b}.mlir"), jax.jit(mlp).lower(*ws, x).as_text())
    mods = ", ".join(f'"{b}" = "mlp_b{b}.mlir"' for b in buckets)
    write(os.path.join(d, "config.toml"), f"""[model]
kind = "stablehlo"
path = "weights.safetensors"
modules = {{ {mods} }}
args = ["weight:w1", "weight:b1", "weight:w2", "weight:b2", "input:x"]

[[input]]
name = "x"
datatype = "FP32"

[[output]]
name = "probs"

[batching]
buckets = {buckets}
max_queue_delay_us = 500
max_queue_size = 128
instances = 2
priority_levels = 2
""")

    d = os.path.join(repo, "dtypes")
    os.makedirs(d, exist_ok=True)
    buckets = [1, 4]
    for b in buckets:
        args = [jax.ShapeDtypeStruct((b, 3), jnp.dtype(np_name)) for _, np_name, _ in DTYPES]
        write(os.path.join(d, f"dtypes_b{b}.mlir"), jax.jit(dtypes_fn).lower(*args).as_text())
    mods = ", ".join(f'"{b}" = "dtypes_b{b}.mlir"' for b in buckets)
    ins = "\n".join(f'[[input]]\nname = "{n}"\ndatatype = "{dt}"\n' for n, _, dt in DTYPES)
    outs = "\n".join(f'[[output]]\nname = "out_{n}"\n' for n, _, _ in DTYPES)
    args = ", ".join(f'"input:{n}"' for n, _, _ in DTYPES)
    write(os.path.join(d, "config.toml"), f"""[model]
kind = "stablehlo"
modules = {{ {mods} }}
args = [{args}]

{ins}
{outs}
[batching]
buckets = {buckets}
max_queue_delay_us = 200
""")
    with open(os.path.join(a.out, "meta.json"), "w") as f:
        json.dump({"dtypes": DTYPES, "jax": jax.__version__}, f, indent=1)


if __name__ == "__main__":
    main()
