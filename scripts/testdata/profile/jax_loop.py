"""A small JAX training loop profiled with jax.profiler (fixture workload).

Usage: jax_loop.py LOG_DIR [--slow-loader]
"""
import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np


def batches(n, slow):  # PLANT: loader-fn
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((n, 8, 64), dtype=np.float32)
    ys = rng.integers(0, 10, (n, 8))
    for x, y in zip(xs, ys):
        if slow:
            time.sleep(0.03)  # PLANT: slow-loader
        yield x, y


def loss_fn(params, x, y):
    h = jax.nn.relu(x @ params["w1"] + params["b1"])
    logits = h @ params["w2"] + params["b2"]
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))


@jax.jit
def train_step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, grads), loss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log_dir")
    ap.add_argument("--slow-loader", action="store_true")
    a = ap.parse_args()
    k1, k2 = jax.random.split(jax.random.key(0))
    params = {
        "w1": jax.random.normal(k1, (64, 256)) * 0.05, "b1": jnp.zeros(256),
        "w2": jax.random.normal(k2, (256, 10)) * 0.05, "b2": jnp.zeros(10),
    }
    data = batches(12, a.slow_loader)
    x, y = next(data)
    params, loss = train_step(params, x, y)  # compile before tracing
    loss.block_until_ready()
    jax.profiler.start_trace(a.log_dir)
    for step, (x, y) in enumerate(data):
        with jax.profiler.StepTraceAnnotation("train", step_num=step):
            params, loss = train_step(params, x, y)
            loss.block_until_ready()
    jax.profiler.stop_trace()


if __name__ == "__main__":
    main()
