"""JAX loop fed by a Grain-like prefetcher: a background thread decodes batches into a bounded
queue and the loop takes them with `queue.get` (the wait happens in the standard library).

Usage: jax_thread_prefetch.py LOG_DIR --variant host|clean [--steps N]
host:  the producer decodes 32 JPEGs per batch, slower than the ~7 ms step: the loop waits.
clean: the producer hands out pre-decoded batches, far faster than the ~30 ms step.
"""
import argparse
import io
import queue
import threading

import jax
import jax.numpy as jnp
import numpy as np
from PIL import Image

D = 16 * 16 * 3


def init(key, d, h):
    k1, k2 = jax.random.split(key)
    return {"w1": jax.random.normal(k1, (d, h)) * 0.02, "w2": jax.random.normal(k2, (h, d)) * 0.02}


def loss_fn(p, x):
    return jnp.mean((jnp.tanh(x @ p["w1"]) @ p["w2"] - x) ** 2)


@jax.jit
def train_step(p, x):
    loss, g = jax.value_and_grad(loss_fn)(p, x)
    return jax.tree_util.tree_map(lambda a, b: a - 1e-3 * b, p, g), loss


def blobs(n):
    rng = np.random.default_rng(0)
    out = []
    for _ in range(n):
        b = io.BytesIO()
        Image.fromarray((rng.random((256, 256, 3)) * 255).astype(np.uint8)).save(b, "JPEG", quality=90)
        out.append(b.getvalue())
    return out


def produce(q, jpgs, n, decode):  # PLANT: producer
    ready = np.full((256, D), 0.5, np.float32)
    for i in range(n):
        if decode:
            rows = [np.asarray(Image.open(io.BytesIO(jpgs[(i + k) % len(jpgs)])).convert("RGB").resize((16, 16)),
                               dtype=np.float32).reshape(-1) / 255.0 for k in range(32)]
            q.put(np.resize(np.stack(rows), (256, D)))
        else:
            q.put(ready)
    q.put(None)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log_dir")
    ap.add_argument("--variant", choices=["host", "clean"], required=True)
    ap.add_argument("--steps", type=int, default=40)
    a = ap.parse_args()
    decode, hidden = {"host": (True, 256), "clean": (False, 1024)}[a.variant]
    params = init(jax.random.key(0), D, hidden)
    params, loss = train_step(params, np.zeros((256, D), np.float32))
    loss.block_until_ready()
    q = queue.Queue(maxsize=2)
    threading.Thread(target=produce, args=(q, blobs(16), a.steps + 2, decode), daemon=True).start()
    for _ in range(2):
        params, loss = train_step(params, q.get())
    loss.block_until_ready()
    jax.profiler.start_trace(a.log_dir)
    step = 0
    while (x := q.get()) is not None:  # PLANT: loop
        with jax.profiler.StepTraceAnnotation("train", step_num=step):
            params, loss = train_step(params, x)
            loss.block_until_ready()
        step += 1
    jax.profiler.stop_trace()


if __name__ == "__main__":
    main()
