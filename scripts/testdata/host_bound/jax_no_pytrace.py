"""JAX loop traced without the Python tracer (`python_tracer_level=0`): the trace has the step
annotations and the runtime's events but no Python function at all. The batches come from a
one-letter generator doing NumPy work (sorting and a matrix inverse per batch).

Usage: jax_no_pytrace.py LOG_DIR --variant host|clean [--steps N]
host:  ~30 ms of NumPy per batch before a ~7 ms step (blocked on).
clean: batches precomputed, ~30 ms step.
"""
import argparse

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


def m(n, work):  # PLANT: loader
    rng = np.random.default_rng(0)
    pre = rng.standard_normal((256, D), dtype=np.float32)
    for _ in range(n):
        if not work:
            yield pre
            continue
        x = np.sort(rng.standard_normal((256, D), dtype=np.float32), axis=1)
        for _ in range(3):
            x[:, :256] = np.linalg.inv(x[:, :256] + 16 * np.eye(256, dtype=np.float32))
        yield x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log_dir")
    ap.add_argument("--variant", choices=["host", "clean"], required=True)
    ap.add_argument("--steps", type=int, default=40)
    a = ap.parse_args()
    work, hidden = {"host": (True, 256), "clean": (False, 1024)}[a.variant]
    params = init(jax.random.key(0), D, hidden)
    for x in m(2, False):
        params, loss = train_step(params, x)
    loss.block_until_ready()
    opts = jax.profiler.ProfileOptions()
    opts.python_tracer_level = 0
    jax.profiler.start_trace(a.log_dir, profiler_options=opts)
    for step, x in enumerate(m(a.steps, work)):  # PLANT: loop
        with jax.profiler.StepTraceAnnotation("train", step_num=step):
            params, loss = train_step(params, x)
            loss.block_until_ready()
    jax.profiler.stop_trace()


if __name__ == "__main__":
    main()
