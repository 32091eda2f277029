"""The two JAX functions served side by side by scripts/bench_serve.py, and their fixtures.

  mlp  softmax(relu(x @ w1 + b1) @ w2 + b2), x [N, 784] f32 (784 -> 512 -> 10)
  cnn  x [N, 28, 28, 1] f32 (NHWC): conv 3x3x16 + relu, conv 3x3x32 stride 2 + relu,
       global mean pool, dense 32 -> 10, softmax

Run as a script (project venv: jax, safetensors), it writes OUT/repo/<model>/ for `tpuport
serve` (one StableHLO text module per batch bucket, weights as module arguments in
weights.safetensors, config.toml) and OUT/<model>_weights.npz for the peers, which import
this module and run the same functions under `jax.jit` on the same weights (they never
read the StableHLO). The batching knobs are written by bench_serve.py, not here.
"""

import argparse
import json
import os

import numpy as np

BUCKETS = [1, 4, 16, 64]
# (model, input name, per-row input shape, output name)
MODELS = {
    "mlp": ("x", (784,), "probs"),
    "cnn": ("x", (28, 28, 1), "probs"),
}


def weights(model):
    """Deterministic weights, scaled so activations stay O(1)."""
    rng = np.random.default_rng(0 if model == "mlp" else 1)
    f = lambda shape, s: (rng.standard_normal(shape) * s).astype(np.float32)
    if model == "mlp":
        return {"w1": f((784, 512), 1 / 28), "b1": f(512, 0.1), "w2": f((512, 10), 1 / 22), "b2": f(10, 0.1)}
    return {"k1": f((3, 3, 1, 16), 1 / 3), "c1": f(16, 0.1), "k2": f((3, 3, 16, 32), 1 / 12),
            "c2": f(32, 0.1), "wd": f((32, 10), 1 / 5.6), "bd": f(10, 0.1)}


def function(model):
    """(the function, its weight names in argument order); the input comes last."""
    import jax
    import jax.numpy as jnp

    if model == "mlp":
        def mlp(w1, b1, w2, b2, x):
            h = jax.nn.relu(x @ w1 + b1)
            return jax.nn.softmax(h @ w2 + b2, axis=-1)
        return mlp, ["w1", "b1", "w2", "b2"]

    def conv(x, k, stride):
        return jax.lax.conv_general_dilated(x, k, (stride, stride), "SAME",
                                            dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def cnn(k1, c1, k2, c2, wd, bd, x):
        h = jax.nn.relu(conv(x, k1, 1) + c1)
        h = jax.nn.relu(conv(h, k2, 2) + c2)
        h = jnp.mean(h, axis=(1, 2))
        return jax.nn.softmax(h @ wd + bd, axis=-1)
    return cnn, ["k1", "c1", "k2", "c2", "wd", "bd"]


def main():
    import jax
    import jax.numpy as jnp
    from safetensors.numpy import save_file

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    for model, (iname, row, oname) in MODELS.items():
        d = os.path.join(a.out, "repo", model)
        os.makedirs(d, exist_ok=True)
        w = weights(model)
        fn, names = function(model)
        save_file(w, os.path.join(d, "weights.safetensors"))
        np.savez(os.path.join(a.out, f"{model}_weights.npz"), **w)
        ws = [jax.ShapeDtypeStruct(w[k].shape, jnp.float32) for k in names]
        for b in BUCKETS:
            x = jax.ShapeDtypeStruct((b, *row), jnp.float32)
            with open(os.path.join(d, f"{model}_b{b}.mlir"), "w") as f:
                f.write(jax.jit(fn).lower(*ws, x).as_text())
        mods = ", ".join(f'"{b}" = "{model}_b{b}.mlir"' for b in BUCKETS)
        args = ", ".join([f'"weight:{k}"' for k in names] + [f'"input:{iname}"'])
        # bench_serve.py appends the [batching] table for each run.
        with open(os.path.join(d, "model.toml"), "w") as f:
            f.write(f"""[model]
kind = "stablehlo"
path = "weights.safetensors"
modules = {{ {mods} }}
args = [{args}]

[[input]]
name = "{iname}"
datatype = "FP32"

[[output]]
name = "{oname}"
""")
    with open(os.path.join(a.out, "meta.json"), "w") as f:
        json.dump({"jax": jax.__version__, "buckets": BUCKETS,
                   "models": {m: {"input": i, "row": list(r), "output": o} for m, (i, r, o) in MODELS.items()}},
                  f, indent=1)


if __name__ == "__main__":
    main()
