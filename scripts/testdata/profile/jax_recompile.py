"""A JAX loop whose jitted step sees a new input shape every few steps (fixture workload).

Run with JAX_LOG_COMPILES=1 JAX_EXPLAIN_CACHE_MISSES=1; the logs go to stderr.
Usage: jax_recompile.py [--varying-shapes]
"""
import argparse

import jax
import jax.numpy as jnp
import numpy as np


@jax.jit  # PLANT: jit-fn (JAX reports a decorated function's first line, the decorator)
def step(w, x):
    return w - 0.01 * jax.grad(lambda w: jnp.mean((x @ w) ** 2))(w)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--varying-shapes", action="store_true")
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    w = jnp.ones((16, 4))
    for i in range(8):
        rows = 8 + 4 * (i % 4) if a.varying_shapes else 8
        x = rng.standard_normal((rows, 16), dtype=np.float32)
        w = step(w, x)  # PLANT: recompile
    w.block_until_ready()


if __name__ == "__main__":
    main()
