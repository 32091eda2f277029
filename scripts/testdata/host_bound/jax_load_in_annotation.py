"""JAX loop whose step annotation covers the whole iteration: the next batch is taken inside
`StepTraceAnnotation`, so no gap between annotations holds the loading.

Usage: jax_load_in_annotation.py LOG_DIR --variant host|mild|clean [--steps N]
host:  a 35 ms wait plus a little NumPy per batch, ~7 ms step.
mild:  a 3 ms wait per batch, ~30 ms step (~10 % of the step).
clean: no wait, ~30 ms step.
"""
import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

D = 768


def init(key, d, h):
    k1, k2 = jax.random.split(key)
    return {"w1": jax.random.normal(k1, (d, h)) * 0.02, "w2": jax.random.normal(k2, (h, d)) * 0.02}


def loss_fn(p, x):
    return jnp.mean((jnp.tanh(x @ p["w1"]) @ p["w2"] - x) ** 2)


@jax.jit
def train_step(p, x):
    loss, g = jax.value_and_grad(loss_fn)(p, x)
    return jax.tree_util.tree_map(lambda a, b: a - 1e-3 * b, p, g), loss


class Shard:
    def __init__(self, wait_s):
        self.wait_s = wait_s
        self.rng = np.random.default_rng(0)

    def take(self):  # PLANT: loader
        if self.wait_s:
            time.sleep(self.wait_s)
        return self.rng.standard_normal((256, D), dtype=np.float32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log_dir")
    ap.add_argument("--variant", choices=["host", "mild", "clean"], required=True)
    ap.add_argument("--steps", type=int, default=40)
    a = ap.parse_args()
    wait, hidden = {"host": (0.035, 256), "mild": (0.003, 1024), "clean": (0.0, 1024)}[a.variant]
    src = Shard(wait)
    params = init(jax.random.key(0), D, hidden)
    for _ in range(2):
        params, loss = train_step(params, Shard(0).take())
    loss.block_until_ready()
    jax.profiler.start_trace(a.log_dir)
    for step in range(a.steps):
        with jax.profiler.StepTraceAnnotation("train", step_num=step):
            x = src.take()  # PLANT: loop
            params, loss = train_step(params, x)
            loss.block_until_ready()
    jax.profiler.stop_trace()


if __name__ == "__main__":
    main()
