"""JAX loop fed by a class whose method decodes JPEGs with PIL (nothing in its names says
"data" or "load"); the loop blocks on every step's loss.

Usage: jax_jpeg_feeder.py LOG_DIR --variant host|mild|clean [--steps N]
host:  32 decodes per batch (~35 ms) before a ~7 ms step.
mild:  3 decodes per batch before a ~30 ms step (~10 % of the step waits on the host).
clean: batches decoded once up front and handed out from memory, ~30 ms step.
"""
import argparse
import io

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


def jpegs(n):
    rng = np.random.default_rng(0)
    out = []
    for _ in range(n):
        b = io.BytesIO()
        Image.fromarray((rng.random((256, 256, 3)) * 255).astype(np.uint8)).save(b, "JPEG", quality=90)
        out.append(b.getvalue())
    return out


class Feeder:
    def __init__(self, blobs, per_batch, rows=256, cached=False):
        self.blobs, self.per_batch, self.rows, self.i = blobs, per_batch, rows, 0
        self.cache = None
        if cached:
            self.cache = [self.pull() for _ in range(4)]

    def pull(self):  # PLANT: loader
        if self.cache is not None:
            self.i += 1
            return self.cache[self.i % len(self.cache)]
        feats = []
        for _ in range(self.per_batch):
            img = Image.open(io.BytesIO(self.blobs[self.i % len(self.blobs)])).convert("RGB")
            feats.append(np.asarray(img.resize((16, 16)), dtype=np.float32).reshape(-1) / 255.0)
            self.i += 1
        return np.resize(np.stack(feats), (self.rows, D))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log_dir")
    ap.add_argument("--variant", choices=["host", "mild", "clean"], required=True)
    ap.add_argument("--steps", type=int, default=40)
    a = ap.parse_args()
    per_batch, hidden, cached = {"host": (32, 256, False), "mild": (3, 1024, False), "clean": (32, 1024, True)}[a.variant]
    feeder = Feeder(jpegs(16), per_batch, cached=cached)
    params = init(jax.random.key(0), D, hidden)
    for _ in range(2):
        params, loss = train_step(params, feeder.pull())
        loss.block_until_ready()
    jax.profiler.start_trace(a.log_dir)
    for step in range(a.steps):
        x = feeder.pull()  # PLANT: loop
        with jax.profiler.StepTraceAnnotation("train", step_num=step):
            params, loss = train_step(params, x)
            loss.block_until_ready()
    jax.profiler.stop_trace()


if __name__ == "__main__":
    main()
