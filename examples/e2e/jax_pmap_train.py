"""Data-parallel linear regression with `jax.pmap` (the pre-sharding style tpuport ports).

Synthetic data y = X @ w_true + b_true + noise; the batch is split across every local device,
gradients are averaged with `jax.lax.pmean` over the pmap axis. Run it on 8 fake CPU devices:

    XLA_FLAGS=--xla_force_host_platform_device_count=8 python jax_pmap_train.py

The last line printed is `final_loss <value>`.
"""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

STEPS = 300
BATCH = 256
FEATURES = 16
LR = 0.05


def make_data(seed=0):
    rng = np.random.default_rng(seed)
    w_true = rng.normal(size=(FEATURES,)).astype(np.float32)
    x = rng.normal(size=(STEPS, BATCH, FEATURES)).astype(np.float32)
    noise = 0.01 * rng.normal(size=(STEPS, BATCH)).astype(np.float32)
    y = x @ w_true + 0.5 + noise
    return x, y


def replicate(tree):
    """One copy per local device, stacked on a leading axis (like `flax.jax_utils.replicate`)."""
    n = jax.local_device_count()
    return jax.tree_util.tree_map(lambda x: jnp.stack([x] * n), tree)


def loss_fn(params, x, y):
    pred = x @ params["w"] + params["b"]
    return jnp.mean((pred - y) ** 2)


@partial(jax.pmap, axis_name="batch")
def train_step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    grads = jax.lax.pmean(grads, axis_name="batch")
    loss = jax.lax.pmean(loss, axis_name="batch")
    params = jax.tree_util.tree_map(lambda p, g: p - LR * g, params, grads)
    return params, loss


def main():
    n = jax.local_device_count()
    xs, ys = make_data()
    params = {"w": jnp.zeros((FEATURES,)), "b": jnp.zeros(())}
    params = replicate(params)
    loss = None
    for step in range(STEPS):
        x = xs[step].reshape(n, BATCH // n, FEATURES)
        y = ys[step].reshape(n, BATCH // n)
        params, loss = train_step(params, x, y)
        if step % 100 == 0:
            print(f"step {step} loss {float(loss[0]):.6f}")
    print(f"final_loss {float(loss[0]):.8f}")


if __name__ == "__main__":
    main()
