"""The training step of Flax's Gemma example (`scripts/corpus/flax_gemma`, google/flax at a
commit), built the way `train.train_and_evaluate` builds it.

`build(batch, seq, mesh)` returns `(jitted_step, args)`: `train.jax_train_step` jitted with the
script's own `static_argnames` and `donate_argnames`, and the arguments it is called with: the
`Transformer`, the `nnx.Optimizer` over `optax.adamw` with the script's hyperparameters, the
`nnx.Rngs`, a packed batch (`inputs`, `inputs_position`, `inputs_segmentation`, `targets`), the
`nnx.MultiMetric`, label smoothing 0.0 and pad id 0. The model is the example's default
(`configs/tiny.py` `transformer_params`: 4 layers, width 256, 4 heads of 128, one KV head,
vocabulary 35,008 as for LM1B), sharded by the example's own `ShardingConfig.fsdp_tp_sharding`
over `mesh` (a 1x1 mesh by default: the step as one device runs it).

Modules `train.py` imports only for its data pipeline, sampler, tokenizer and metric writers
(clu, grain, sentencepiece, tensorflow-datasets) are replaced by empty ones: none of them is
called on the way to a step.
"""

import os
import sys
import types

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "flax_gemma")
TRANSFORMER_PARAMS = dict(
    num_layers=4, embed_dim=256, hidden_dim=256 * 4 // 2, num_heads=4, head_dim=128, num_kv_heads=1,
    use_post_attn_norm=False, use_post_ffw_norm=False, attention_types=(1, 1, 1, 1),
    final_logit_softcap=None,
)
VOCAB = 35_008


def _import_train():
    for name in ("clu", "clu.metric_writers", "clu.periodic_actions", "grain", "input_pipeline",
                 "sampler", "tokenizer"):
        sys.modules.setdefault(name, types.ModuleType(name))
    sys.modules["clu"].metric_writers = sys.modules["clu.metric_writers"]
    sys.modules["clu"].periodic_actions = sys.modules["clu.periodic_actions"]
    sys.modules["grain"].IterDataset = object
    if CORPUS not in sys.path:
        sys.path.insert(0, CORPUS)
    import train  # noqa: PLC0415
    return train


def build(batch=32, seq=128, mesh=None, devices=None, sharding="fsdp_tp"):
    """`sharding`: the example's `ShardingConfig.fsdp_tp_sharding` (its default: parameters and
    activations pinned to the `fsdp`/`tensor` axes) or `none` (`ShardingConfig.no_sharding`)."""
    from functools import partial

    import jax
    import jax.numpy as jnp
    import optax
    from flax import nnx

    train = _import_train()
    import sow_lib
    import transformer as transformer_lib
    from transformer_cfg import ShardingConfig

    if mesh is None:
        mesh = jax.make_mesh((1, 1), ("fsdp", "tensor"), devices=devices or jax.devices()[:1])
    if sharding == "none":
        shd = ShardingConfig.no_sharding()
    else:
        shd = ShardingConfig.fsdp_tp_sharding(fsdp_axis_name="fsdp", tensor_parallel_axis_name="tensor")
    cfg = transformer_lib.TransformerConfig.from_dict(
        **TRANSFORMER_PARAMS, num_embed=VOCAB, dtype=jnp.bfloat16, shd_config=shd)
    lr = train.create_learning_rate_schedule(learning_rate=0.0016, warmup_steps=1000)
    rngs = nnx.Rngs(params=0, dropout=0)
    with jax.set_mesh(mesh):
        model = transformer_lib.Transformer(cfg, rngs=rngs, sow_config=sow_lib.SowConfig())
        optimizer = nnx.Optimizer(
            model, tx=optax.adamw(lr, b1=0.9, b2=0.98, eps=1e-9, weight_decay=0.1), wrt=nnx.Param)
    metrics = nnx.MultiMetric(loss=nnx.metrics.Average("loss"), accuracy=nnx.metrics.Accuracy())
    step = jax.jit(partial(train.jax_train_step, with_capture=True),
                   static_argnames=("label_smoothing", "pad_id"), donate_argnames=("model", "optimizer"))
    keys = ("inputs", "inputs_position", "inputs_segmentation", "targets")
    data = {k: jnp.ones((batch, seq), jnp.int32) for k in keys}
    return step, mesh, (model, optimizer, rngs, data, metrics, 0.0, 0)


def param_count(model):
    import jax
    from flax import nnx

    return int(sum(x.size for x in jax.tree_util.tree_leaves(nnx.state(model, nnx.Param))))
