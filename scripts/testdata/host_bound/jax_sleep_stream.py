"""JAX loop over a Python generator that waits (an I/O stand-in) before every batch; the step
is dispatched asynchronously (no per-step block), as most JAX loops are.

Usage: jax_sleep_stream.py LOG_DIR --variant host|clean [--steps N]
host:  the generator sleeps 40 ms per batch, the step computes ~5 ms (the issue's loop).
clean: no wait, a step ~6x heavier: the device is the bottleneck.
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


def stream(n, wait_s):  # PLANT: loader
    rng = np.random.default_rng(0)
    for _ in range(n):
        if wait_s:
            time.sleep(wait_s)
        yield rng.standard_normal((256, D), dtype=np.float32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log_dir")
    ap.add_argument("--variant", choices=["host", "clean"], required=True)
    ap.add_argument("--steps", type=int, default=40)
    a = ap.parse_args()
    wait, hidden = {"host": (0.040, 256), "clean": (0.0, 1536)}[a.variant]
    params = init(jax.random.key(0), D, hidden)
    for x in stream(2, 0.0):  # compile and warm up outside the trace
        params, loss = train_step(params, x)
    loss.block_until_ready()
    jax.profiler.start_trace(a.log_dir)
    for step, x in enumerate(stream(a.steps, wait)):  # PLANT: loop
        with jax.profiler.StepTraceAnnotation("train", step_num=step):
            params, loss = train_step(params, x)
    loss.block_until_ready()
    jax.profiler.stop_trace()


if __name__ == "__main__":
    main()
