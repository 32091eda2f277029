"""StableHLO exports from frameworks tpuport did not write, weights passed as leading arguments.

For `tpuport audit` / `inspect` argument roles (issue 21): which arguments are weights, data and
state, the batch and sequence, the parameter count. Each model is exported the way its users
export it (`jax.jit(f).lower(params, x)` and `jax.export`), random init from the published
structure (tiny widths where noted: the structure is the real one, the export stays quick):

  keras_resnet50     keras.applications.ResNet50, image [2, 224, 224, 3]
  keras_mobilenetv2  keras.applications.MobileNetV2, image [2, 224, 224, 3]
  kerashub_gpt2      keras_hub GPT2CausalLM (2 layers, width 64, vocab 1000), token ids [2, 32]
                     + padding mask; the output projection is the token embedding (tied)
  kerashub_gemma     keras_hub GemmaCausalLM in bf16 (2 layers, GQA, vocab 1000), token ids [2, 32]
  kerashub_gpt2_train  the GPT-2 above in the Keras JAX guide's training step (AdamW,
                     `train_step(state, tokens, mask)`, state = three variable lists, donated)
  flax_resnet18      a Flax linen ResNet-18 (BatchNorm statistics as `batch_stats`), image
                     [2, 64, 64, 3]
  nnx_transformer    a Flax NNX decoder (2 blocks, width 64, vocab 512, tied embedding),
                     token ids [4, 16]
  flax_gemma_train   the training step of Flax's Gemma example as its script jits it (google/
                     flax examples/gemma/train.py at a commit, scripts/corpus/flax_gemma): 4
                     layers, width 256, vocab 35,008, AdamW, f32 weights computing in bf16,
                     packed batch [8, 128] x 4

Per model, OUT/<name>/:
  export.mlir   `jax.export(...).mlir_module()`: argument names as `loc("params['...']")`
  jit.mlir      `jax.jit(f).lower(...).as_text()`: no names, only the ops tell the roles
  meta.json     the framework's figures: parameters (trainable) and state elements as the
                framework counts them, flat argument indices of the data arguments, batch,
                sequence, whether the embedding is tied, and XLA's `cost_analysis()` FLOPs of
                the compiled module (CPU) and of the lowered one (before CPU passes)

Run with the project venv (jax, keras, keras-hub, flax). OUT/.done marks a complete set.
"""

import argparse
import json
import os
import sys
import time

os.environ.setdefault("KERAS_BACKEND", "jax")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import jax
import jax.numpy as jnp
import numpy as np


def leaves(tree):
    return jax.tree_util.tree_leaves(tree)


def size(tree):
    return int(sum(np.prod(x.shape, dtype=np.int64) for x in leaves(tree)))


def export(out, name, fn, params, data, meta, donate=False):
    """Writes both module texts and meta.json; `fn(params, *data)`. `donate`: the first
    argument's buffers are donated (a training step updating its state in place)."""
    jitted = jax.jit(fn, keep_unused=True, donate_argnums=(0,) if donate else ())
    n_param_leaves = len(leaves(params))
    n_data_leaves = len(leaves(data))
    write(out, name, jitted, (params, *data), range(n_param_leaves, n_param_leaves + n_data_leaves), meta)


def write(out, name, jitted, args, data_args, meta, static=None):
    """Lowers `jitted(*args, **static)` both ways and writes the module texts and meta.json;
    `data_args`: the flat indices of the data leaves; `static`: the static keyword arguments."""
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    t = time.time()
    static = static or {}
    lowered = jitted.lower(*args, **static)
    with open(os.path.join(d, "jit.mlir"), "w") as f:
        f.write(lowered.as_text())
    exported = jax.export.export(jitted)(*args, **static)
    with open(os.path.join(d, "export.mlir"), "w") as f:
        f.write(exported.mlir_module())
    def flops(c):
        return float((c[0] if isinstance(c, list) else c)["flops"])
    n_leaves = len(leaves(args))
    data_args = list(data_args)
    meta = dict(meta)
    meta.update(
        name=name,
        arguments=n_leaves,
        data_args=data_args,
        xla_flops=flops(lowered.compile().cost_analysis()),
        # XLA:CPU wraps bf16 arithmetic in f32 converts, which the compiled count includes: a
        # bf16 module is compared with the count before CPU passes.
        xla_lowered_flops=flops(lowered.cost_analysis()),
        jax=jax.__version__,
    )
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
    print(f"{name}: {n_leaves - len(data_args)} weight/state leaves, {meta['xla_flops']:.3e} FLOPs, {time.time() - t:.1f}s",
          file=sys.stderr)


def keras_parts(model):
    """The variables as one pytree keyed by path: trainable weights and non-trainable state."""
    trainable = {v.path: v.value for v in model.trainable_variables}
    state = {v.path: v.value for v in model.non_trainable_variables}
    return {"trainable": trainable, "non_trainable": state}


def keras_fn(model):
    tv_paths = [v.path for v in model.trainable_variables]
    ntv_paths = [v.path for v in model.non_trainable_variables]

    def fn(params, *data):
        tv = [params["trainable"][p] for p in tv_paths]
        ntv = [params["non_trainable"][p] for p in ntv_paths]
        x = data[0] if len(data) == 1 else {"token_ids": data[0], "padding_mask": data[1]}
        y, _ = model.stateless_call(tv, ntv, x, training=False)
        return y

    return fn


def keras_meta(model, **kw):
    trainable = int(sum(np.prod(v.shape) for v in model.trainable_variables))
    state = int(sum(np.prod(v.shape) for v in model.non_trainable_variables))
    # count_params() sums model.weights: non-trainable variables that are not weights (dropout
    # seed generators) are passed as arguments but not counted there.
    weights = {id(w) for w in model.weights}
    untracked = int(sum(np.prod(v.shape) for v in model.non_trainable_variables if id(v) not in weights))
    m = {"framework": "keras", "params": trainable, "state": state, "untracked_state": untracked,
         "count_params": int(model.count_params())}
    m.update(kw)
    return m


def keras_cnn(out, name, ctor):
    import keras

    keras.utils.set_random_seed(0)
    model = ctor(weights=None, input_shape=(224, 224, 3), classes=1000)
    x = np.random.default_rng(0).standard_normal((2, 224, 224, 3)).astype(np.float32)
    export(out, name, keras_fn(model), keras_parts(model), (x,),
           keras_meta(model, batch=2, sequence=None, tied=False, dtype="f32"))


def keras_lm(out, name, backbone, lm_cls, dtype):
    import keras

    lm = lm_cls(backbone=backbone, preprocessor=None)
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, 1000, size=(2, 32)).astype(np.int32)
    mask = np.ones((2, 32), dtype=np.int32)
    mask[1, 24:] = 0
    keras.utils.set_random_seed(0)
    export(out, name, keras_fn(lm), keras_parts(lm), (tokens, mask),
           keras_meta(lm, batch=2, sequence=32, tied=True, dtype=dtype))


def keras_lm_train(out, name, lm):
    """The training step of Keras's "training loop from scratch in JAX" guide for a causal LM:
    `train_step(state, tokens, mask)` with `state = (trainable, non_trainable, optimizer
    variables)`, AdamW through `stateless_apply`, the state donated. Its arguments are list
    items (`params[2][5]`): the optimizer's moments are told from the weights by their order."""
    import keras

    opt = keras.optimizers.AdamW(1e-3)
    opt.build(lm.trainable_variables)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, 1000, size=(2, 32)).astype(np.int32)
    mask = np.ones((2, 32), dtype=np.int32)

    def train_step(state, tokens, mask):
        tv, ntv, ov = state

        def loss(tv):
            x = {"token_ids": tokens, "padding_mask": mask}
            logits, ntv2 = lm.stateless_call(tv, ntv, x, training=True)
            return loss_fn(tokens[:, 1:], logits[:, :-1]), ntv2

        (value, ntv2), grads = jax.value_and_grad(loss, has_aux=True)(tv)
        tv2, ov2 = opt.stateless_apply(ov, grads, tv)
        return (tv2, ntv2, ov2), value

    state = ([v.value for v in lm.trainable_variables], [v.value for v in lm.non_trainable_variables],
             [v.value for v in opt.variables])
    meta = keras_meta(lm, batch=2, sequence=32, tied=True, dtype="f32", train=True,
                      optimizer_variables=[[v.path, list(v.shape)] for v in opt.variables])
    # State as the step carries it: the model's non-trainable variables and every optimizer
    # variable (Keras's count_params() counts the model only).
    meta["state"] += int(sum(np.prod(v.shape) for v in opt.variables))
    del meta["count_params"]
    export(out, name, train_step, state, (tokens, mask), meta, donate=True)


def kerashub(out):
    import keras
    import keras_hub

    keras.utils.set_random_seed(0)
    gpt2 = keras_hub.models.GPT2Backbone(vocabulary_size=1000, num_layers=2, num_heads=4, hidden_dim=64,
                                         intermediate_dim=256, max_sequence_length=64)
    keras_lm(out, "kerashub_gpt2", gpt2, keras_hub.models.GPT2CausalLM, "f32")
    keras_lm_train(out, "kerashub_gpt2_train", keras_hub.models.GPT2CausalLM(backbone=gpt2, preprocessor=None))
    gemma = keras_hub.models.GemmaBackbone(vocabulary_size=1000, num_layers=2, num_query_heads=4,
                                           num_key_value_heads=1, hidden_dim=64, intermediate_dim=256,
                                           head_dim=16, dtype="bfloat16")
    keras_lm(out, "kerashub_gemma", gemma, keras_hub.models.GemmaCausalLM, "bf16")


def flax_resnet(out):
    import flax.linen as nn

    class Block(nn.Module):
        features: int
        strides: int

        @nn.compact
        def __call__(self, x, train):
            norm = lambda: nn.BatchNorm(use_running_average=not train, momentum=0.9, epsilon=1e-5)
            y = nn.Conv(self.features, (3, 3), (self.strides, self.strides), padding=[(1, 1), (1, 1)], use_bias=False)(x)
            y = nn.relu(norm()(y))
            y = nn.Conv(self.features, (3, 3), padding=[(1, 1), (1, 1)], use_bias=False)(y)
            y = norm()(y)
            if x.shape[-1] != self.features or self.strides != 1:
                x = nn.Conv(self.features, (1, 1), (self.strides, self.strides), use_bias=False)(x)
                x = norm()(x)
            return nn.relu(x + y)

    class ResNet18(nn.Module):
        classes: int = 1000

        @nn.compact
        def __call__(self, x, train=False):
            x = nn.Conv(64, (7, 7), (2, 2), padding=[(3, 3), (3, 3)], use_bias=False)(x)
            x = nn.relu(nn.BatchNorm(use_running_average=not train)(x))
            x = nn.max_pool(x, (3, 3), (2, 2), padding=((1, 1), (1, 1)))
            for i, f in enumerate((64, 128, 256, 512)):
                for j in range(2):
                    x = Block(f, 2 if i > 0 and j == 0 else 1)(x, train)
            x = jnp.mean(x, axis=(1, 2))
            return nn.Dense(self.classes)(x)

    model = ResNet18()
    x = np.random.default_rng(0).standard_normal((2, 64, 64, 3)).astype(np.float32)
    variables = model.init(jax.random.PRNGKey(0), x)

    def fn(variables, x):
        return model.apply(variables, x, train=False)

    export(out, "flax_resnet18", fn, variables, (x,),
           {"framework": "flax.linen", "params": size(variables["params"]), "state": size(variables["batch_stats"]),
            "batch": 2, "sequence": None, "tied": False, "dtype": "f32"})

    # A training step (Adam) updating parameters, batch statistics and optimizer state in place:
    # every state buffer is donated, so the module marks them `tf.aliasing_output`.
    import optax

    tx = optax.adam(1e-3)
    xs = np.random.default_rng(1).standard_normal((8, 32, 32, 3)).astype(np.float32)
    labels = np.random.default_rng(2).integers(0, 1000, size=(8,)).astype(np.int32)
    state = {"params": variables["params"], "batch_stats": variables["batch_stats"],
             "opt": tx.init(variables["params"])}

    def train_step(state, x, y):
        def loss_fn(p):
            logits, upd = model.apply({"params": p, "batch_stats": state["batch_stats"]}, x, train=True,
                                      mutable=["batch_stats"])
            return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean(), upd

        (loss, upd), grads = jax.value_and_grad(loss_fn, has_aux=True)(state["params"])
        updates, opt = tx.update(grads, state["opt"], state["params"])
        new = {"params": optax.apply_updates(state["params"], updates), "batch_stats": upd["batch_stats"], "opt": opt}
        return new, loss

    export(out, "flax_resnet18_train", train_step, state, (xs, labels),
           {"framework": "flax.linen", "params": size(variables["params"]),
            "state": size(variables["batch_stats"]) + size(state["opt"]),
            "batch": 8, "sequence": None, "tied": False, "dtype": "f32", "train": True}, donate=True)


def nnx_transformer(out):
    from flax import nnx

    class Block(nnx.Module):
        def __init__(self, width, heads, rngs):
            self.ln1 = nnx.LayerNorm(width, rngs=rngs)
            self.attn = nnx.MultiHeadAttention(num_heads=heads, in_features=width, decode=False, rngs=rngs)
            self.ln2 = nnx.LayerNorm(width, rngs=rngs)
            self.up = nnx.Linear(width, 4 * width, rngs=rngs)
            self.down = nnx.Linear(4 * width, width, rngs=rngs)

        def __call__(self, x, mask):
            x = x + self.attn(self.ln1(x), mask=mask)
            return x + self.down(nnx.gelu(self.up(self.ln2(x))))

    class Decoder(nnx.Module):
        def __init__(self, vocab, width, heads, layers, max_len, rngs):
            self.embed = nnx.Embed(vocab, width, rngs=rngs)
            self.pos = nnx.Embed(max_len, width, rngs=rngs)
            self.blocks = nnx.List([Block(width, heads, rngs) for _ in range(layers)])
            self.ln = nnx.LayerNorm(width, rngs=rngs)

        def __call__(self, tokens):
            s = tokens.shape[1]
            x = self.embed(tokens) + self.pos(jnp.arange(s))[None]
            mask = nnx.make_causal_mask(tokens)
            for b in self.blocks:
                x = b(x, mask)
            return self.embed.attend(self.ln(x))

    model = Decoder(512, 64, 4, 2, 64, nnx.Rngs(0))
    graphdef, state = nnx.split(model)
    tokens = np.random.default_rng(0).integers(0, 512, size=(4, 16)).astype(np.int32)

    def fn(state, tokens):
        return nnx.merge(graphdef, state)(tokens)

    params = nnx.state(model, nnx.Param)
    export(out, "nnx_transformer", fn, state, (tokens,),
           {"framework": "flax.nnx", "params": size(params), "state": size(state) - size(params),
            "batch": 4, "sequence": 16, "tied": True, "dtype": "f32"})


def flax_gemma(out):
    """The training step of a public training script: Flax's Gemma example (scripts/corpus/
    flax_gemma, scripts/flax_gemma_step.py), lowered as its own jit wraps it."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import flax_gemma_step
    from flax import nnx

    step, mesh, args = flax_gemma_step.build(batch=8, seq=128)
    model, optimizer, rngs, data, metrics = args[:5]
    n = [len(leaves(x)) for x in (model, optimizer, rngs)]
    params = flax_gemma_step.param_count(model)
    # An RNG stream's key is a typed key array of shape (); the module carries it as uint32[2].
    def elements(x):
        if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
            x = jax.random.key_data(x)
        return int(np.prod(x.shape, dtype=np.int64))
    state = sum(elements(x) for t in (optimizer, rngs, metrics) for x in leaves(nnx.state(t)))
    with jax.set_mesh(mesh):
        write(out, "flax_gemma_train", step, args[:5], range(sum(n), sum(n) + len(leaves(data))),
              {"framework": "flax.nnx (google/flax examples/gemma/train.py)", "params": params,
               "state": state, "batch": 8, "sequence": 128, "tied": True, "dtype": "f32",
               "compute": "bf16", "train": True},
              static=dict(label_smoothing=args[5], pad_id=args[6]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", nargs="*", help="exporters to run (keras_cnn, kerashub, flax, nnx, gemma)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    done = os.path.join(a.out, ".done")
    if os.path.exists(done):
        os.remove(done)
    todo = set(a.only or ["keras_cnn", "kerashub", "flax", "nnx", "gemma"])
    if "flax" in todo:
        flax_resnet(a.out)
    if "nnx" in todo:
        nnx_transformer(a.out)
    if "gemma" in todo:
        flax_gemma(a.out)
    if "keras_cnn" in todo:
        import keras

        keras_cnn(a.out, "keras_resnet50", keras.applications.ResNet50)
        keras_cnn(a.out, "keras_mobilenetv2", keras.applications.MobileNetV2)
    if "kerashub" in todo:
        kerashub(a.out)
    if a.only is None:
        open(done, "w").close()


if __name__ == "__main__":
    main()
