"""Data-parallel MLP training with Flax, jax.pmap and jax.experimental.shard_map (pre-0.8 style)."""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import jax_utils
from flax import linen as nn
from flax.training import train_state
from flax.training.common_utils import shard
from jax.experimental.shard_map import shard_map
from jax.sharding import Mesh, PartitionSpec as P


class MLP(nn.Module):
    hidden: int = 512

    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(self.hidden)(x))
        return nn.Dense(10)(x)


def create_state(rng):
    model = MLP()
    params = model.init(rng, jnp.ones((1, 784)))["params"]
    return train_state.TrainState.create(apply_fn=model.apply, params=params, tx=optax.adam(1e-3))


@partial(jax.pmap, axis_name="batch")
def train_step(state, batch):
    def loss_fn(params):
        logits = state.apply_fn({"params": params}, batch["x"])
        return optax.softmax_cross_entropy_with_integer_labels(logits, batch["y"]).mean()

    loss, grads = jax.value_and_grad(loss_fn)(state.params)
    grads = jax.lax.pmean(grads, axis_name="batch")
    loss = jax.lax.pmean(loss, axis_name="batch")
    return state.apply_gradients(grads=grads), loss


devices = np.array(jax.devices())
mesh = Mesh(devices, ("x",))


def local_sum(block):
    return jax.lax.psum(block.sum(), "x")


total = shard_map(local_sum, mesh, in_specs=P("x"), out_specs=P(), check_rep=False)


def batches(rng, n_steps, batch_size):
    for _ in range(n_steps):
        rng, k1, k2 = jax.random.split(rng, 3)
        yield {"x": np.asarray(jax.random.normal(k1, (batch_size, 784))),
               "y": np.asarray(jax.random.randint(k2, (batch_size,), 0, 10))}


rng = jax.random.PRNGKey(0)
state = jax_utils.replicate(create_state(rng))
for step, batch in enumerate(batches(rng, 100, 256)):
    state, loss = train_step(state, shard(batch))
    if step % 10 == 0:
        print(step, float(loss[0]))
print("checksum", total(jnp.arange(8.0)))
final = jax_utils.unreplicate(state)
