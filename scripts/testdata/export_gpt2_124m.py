"""keras-hub GPT-2 at its published 124M configuration (vocab 50257, 12 layers, width 768, 12
heads, MLP 3072, 1024 positions), random init, exported the way `scripts/testdata/stablehlo_exports.py`
exports its shrunk models: `jax.jit(f).lower(params, token_ids, padding_mask)` with the weights
as leading arguments. One of the original cases of issue 21 (where `audit` read batch 50257, the
vocabulary), made here without a download.

Writes OUT/jit.mlir, OUT/export.mlir, OUT/meta.json (as stablehlo_exports.py), and
OUT/jit.safetensors: every weight and state argument as `argN` (its flat argument index), the
file `tpuport batch OUT/jit.mlir` reads the weights from. Also OUT/rows/rows.npz: 4 rows of
token ids and padding mask as `input0` and `input1` (the names `tpuport batch` gives the data
arguments) to run it on.

    .venv/bin/python scripts/testdata/export_gpt2_124m.py --out DIR [--batch 1] [--seq 128]
"""

import argparse
import os
import sys

os.environ.setdefault("KERAS_BACKEND", "jax")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jax  # noqa: E402
import numpy as np  # noqa: E402

import stablehlo_exports as se  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seq", type=int, default=128)
    a = ap.parse_args()
    import keras
    import keras_hub
    from safetensors.numpy import save_file

    keras.utils.set_random_seed(0)
    backbone = keras_hub.models.GPT2Backbone(vocabulary_size=50257, num_layers=12, num_heads=12,
                                             hidden_dim=768, intermediate_dim=3072,
                                             max_sequence_length=1024)
    lm = keras_hub.models.GPT2CausalLM(backbone=backbone, preprocessor=None)
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, 50257, size=(a.batch, a.seq)).astype(np.int32)
    mask = np.ones((a.batch, a.seq), dtype=np.int32)
    params = se.keras_parts(lm)
    parent, name = os.path.split(os.path.abspath(a.out))
    se.export(parent, name, se.keras_fn(lm), params, (tokens, mask),
              se.keras_meta(lm, batch=a.batch, sequence=a.seq, tied=True, dtype="f32"))
    leaves = jax.tree_util.tree_leaves(params)
    save_file({f"arg{i}": np.ascontiguousarray(np.asarray(x)) for i, x in enumerate(leaves)},
              os.path.join(a.out, "jit.safetensors"))
    os.makedirs(os.path.join(a.out, "rows"), exist_ok=True)
    rows = rng.integers(0, 50257, size=(4, a.seq)).astype(np.int32)
    np.savez(os.path.join(a.out, "rows", "rows.npz"), input0=rows, input1=np.ones_like(rows))
    print(f"{len(leaves)} weight/state arguments, {lm.count_params()} parameters (count_params)",
          file=sys.stderr)


if __name__ == "__main__":
    main()
