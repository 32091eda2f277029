#!/usr/bin/env python3
"""The memory-estimate corpus: models built from published configs, for calibrating `tpuport
audit`'s per-chip HBM estimate against libtpu (issue 34 item 5, scripts/proofs/memory_calibration.py).

Every model is built the way its users build it, from the published architecture with random
weights (the figure depends on shapes, not values), and exported the way its framework exports:

  torchvision / transformers   torch.onnx.export (TorchScript exporter, opset 17), fixed shapes:
                               images [8, 3, 224, 224] (299 for Inception), tokens [8, 128]
                               with an explicit attention mask, eager attention, no KV cache;
                               the output is the model's own first output (logits of an LM head)
  keras.applications / keras-hub / flax
                               `jax.jit(f).lower(params, x).as_text()` (weights as leading
                               arguments, as stablehlo_exports.py does), images [8, 224, 224, 3]

THE SPLIT is by model family and was written into this file before any estimate was measured or
changed: `dev` families tune the estimator, `held-out` families are only measured. Families the
estimator was already shaped on in earlier waves (ResNet, MobileNetV2, ViT, BERT, GPT-2: the
torch fixtures) are in `dev`. A family never straddles the split (DenseNet is dev in both
frameworks, Inception and ConvNeXt held-out in both).

Output: ${XDG_CACHE_HOME:-$HOME/.cache}/tpuport/memory-corpus-<sha256(this file)[:16]>/
  <name>/model.onnx or <name>/jit.mlir, and index.json (name, split, family, framework, file,
  parameters, input shapes). Models are exported one process each into a partial folder that
  an interrupted run resumes, renamed to the output once complete; a rerun with the output
  present is a no-op. `--only NAME... --out DIR` exports just those into DIR (a debug aid).
Prints the output folder on stdout (last line).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "jax")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

IMG, SEQ, BATCH = 224, 128, 8

# name: (split, family, framework, builder argument)
MODELS: dict[str, tuple[str, str, str, str]] = {
    # --- development: tune on these ---
    "tv_resnet18": ("dev", "resnet", "torchvision", "resnet18"),
    "tv_resnet101": ("dev", "resnet", "torchvision", "resnet101"),
    "tv_resnext50": ("dev", "resnet", "torchvision", "resnext50_32x4d"),
    "tv_wide_resnet50": ("dev", "resnet", "torchvision", "wide_resnet50_2"),
    "tv_vgg11_bn": ("dev", "vgg", "torchvision", "vgg11_bn"),
    "tv_alexnet": ("dev", "alexnet", "torchvision", "alexnet"),
    "tv_mobilenet_v3_small": ("dev", "mobilenet", "torchvision", "mobilenet_v3_small"),
    "tv_mobilenet_v3_large": ("dev", "mobilenet", "torchvision", "mobilenet_v3_large"),
    "tv_efficientnet_b0": ("dev", "efficientnet", "torchvision", "efficientnet_b0"),
    "tv_densenet121": ("dev", "densenet", "torchvision", "densenet121"),
    "tv_squeezenet1_1": ("dev", "squeezenet", "torchvision", "squeezenet1_1"),
    "tv_googlenet": ("dev", "googlenet", "torchvision", "googlenet"),
    "tv_mnasnet1_0": ("dev", "mnasnet", "torchvision", "mnasnet1_0"),
    "tv_vit_b_32": ("dev", "vit", "torchvision", "vit_b_32"),
    "hf_bert_base": ("dev", "bert", "transformers", "bert"),
    "hf_roberta_base": ("dev", "bert", "transformers", "roberta"),
    "hf_distilbert": ("dev", "bert", "transformers", "distilbert"),
    "hf_gpt2": ("dev", "gpt2", "transformers", "gpt2"),
    "keras_resnet50v2": ("dev", "resnet", "keras", "ResNet50V2"),
    "keras_densenet121": ("dev", "densenet", "keras", "DenseNet121"),
    "keras_mobilenet_v3_small": ("dev", "mobilenet", "keras", "MobileNetV3Small"),
    "keras_efficientnet_b1": ("dev", "efficientnet", "keras", "EfficientNetB1"),
    # --- held-out: measured, never tuned on ---
    "tv_convnext_tiny": ("held-out", "convnext", "torchvision", "convnext_tiny"),
    "tv_regnet_y_800mf": ("held-out", "regnet", "torchvision", "regnet_y_800mf"),
    "tv_shufflenet_v2": ("held-out", "shufflenet", "torchvision", "shufflenet_v2_x1_0"),
    "tv_swin_t": ("held-out", "swin", "torchvision", "swin_t"),
    "tv_efficientnet_v2_s": ("held-out", "efficientnet_v2", "torchvision", "efficientnet_v2_s"),
    "tv_inception_v3": ("held-out", "inception", "torchvision", "inception_v3"),
    "hf_albert_base": ("held-out", "albert", "transformers", "albert"),
    "hf_opt_125m": ("held-out", "opt", "transformers", "opt"),
    "hf_smollm_135m": ("held-out", "llama", "transformers", "llama"),
    "hf_t5_small_encoder": ("held-out", "t5", "transformers", "t5"),
    "keras_convnext_tiny": ("held-out", "convnext", "keras", "ConvNeXtTiny"),
    "keras_xception": ("held-out", "xception", "keras", "Xception"),
    "keras_efficientnet_v2_b0": ("held-out", "efficientnet_v2", "keras", "EfficientNetV2B0"),
    "keras_inception_v3": ("held-out", "inception", "keras", "InceptionV3"),
    "kerashub_gpt2_base": ("held-out", "gpt2_kerashub", "kerashub", "gpt2"),
}


def out_dir() -> Path:
    digest = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "tpuport" / f"memory-corpus-{digest}"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------- torch

def _hf(arg: str):
    """A transformers model from its published config (the class defaults are the published
    base checkpoints' configs, except where set here from the checkpoint's config.json)."""
    import transformers as t

    eager = {"attn_implementation": "eager"}
    if arg == "bert":
        return t.BertModel(t.BertConfig(**eager)), True
    if arg == "roberta":  # roberta-base's config.json
        cfg = t.RobertaConfig(vocab_size=50265, max_position_embeddings=514, type_vocab_size=1,
                              pad_token_id=1, **eager)
        return t.RobertaModel(cfg), True
    if arg == "distilbert":
        return t.DistilBertModel(t.DistilBertConfig(**eager)), True
    if arg == "gpt2":
        return t.GPT2LMHeadModel(t.GPT2Config(use_cache=False, **eager)), True
    if arg == "albert":  # albert-base-v2's config.json
        cfg = t.AlbertConfig(hidden_size=768, num_attention_heads=12, intermediate_size=3072, **eager)
        return t.AlbertModel(cfg), True
    if arg == "opt":  # OPTConfig's defaults are facebook/opt-125m
        return t.OPTForCausalLM(t.OPTConfig(use_cache=False, **eager)), True
    if arg == "llama":  # HuggingFaceTB/SmolLM-135M's config.json
        cfg = t.LlamaConfig(vocab_size=49152, hidden_size=576, intermediate_size=1536,
                            num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
                            max_position_embeddings=2048, rope_theta=10000.0, tie_word_embeddings=True,
                            use_cache=False, **eager)
        return t.LlamaForCausalLM(cfg), True
    if arg == "t5":  # T5Config's defaults are t5-small
        return t.T5EncoderModel(t.T5Config(use_cache=False, **eager)), True
    raise ValueError(arg)


def torch_model(framework: str, arg: str, path: Path) -> dict:
    import torch

    torch.manual_seed(0)
    # torchvision's ViT takes torch's fused attention fast path under no_grad, which has no
    # ONNX export; off, the same attention runs through exportable ops.
    torch.backends.mha.set_fastpath_enabled(False)
    if framework == "torchvision":
        import torchvision

        kw = {"aux_logits": False, "init_weights": False} if arg == "inception_v3" else {}
        if arg == "googlenet":
            kw = {"aux_logits": False, "init_weights": False}
        model = getattr(torchvision.models, arg)(weights=None, **kw)
        side = 299 if arg == "inception_v3" else IMG
        inputs = {"input": torch.randn(BATCH, 3, side, side)}
        names_out = ["output"]
        wrapped = model
    else:
        model, _ = _hf(arg)
        ids = torch.randint(0, 1000, (BATCH, SEQ))
        inputs = {"input_ids": ids, "attention_mask": torch.ones(BATCH, SEQ, dtype=torch.int64)}
        names_out = ["output"]

        class First(torch.nn.Module):
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, input_ids, attention_mask):
                out = self.m(input_ids=input_ids, attention_mask=attention_mask, return_dict=False)
                return out[0]

        wrapped = First(model)
    wrapped.eval()
    params = int(sum(p.numel() for p in model.parameters()))
    with torch.no_grad():
        torch.onnx.export(wrapped, tuple(inputs.values()), str(path), dynamo=False, opset_version=17,
                          input_names=list(inputs), output_names=names_out, do_constant_folding=True)
    return {"parameters": params, "inputs": {k: list(v.shape) for k, v in inputs.items()}}


# --------------------------------------------------------------------------------------- jax

def jax_model(framework: str, arg: str, path: Path) -> dict:
    import jax
    import keras
    import numpy as np

    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    if framework == "keras":
        side = 299 if arg in ("Xception", "InceptionV3") else IMG
        model = getattr(keras.applications, arg)(weights=None, input_shape=(side, side, 3), classes=1000)
        data = (rng.standard_normal((BATCH, side, side, 3)).astype(np.float32),)
    else:  # keras-hub GPT-2 base with its published preset's backbone config (gpt2_base_en)
        import keras_hub

        backbone = keras_hub.models.GPT2Backbone(vocabulary_size=50257, num_layers=12, num_heads=12,
                                                 hidden_dim=768, intermediate_dim=3072,
                                                 max_sequence_length=1024)
        model = keras_hub.models.GPT2CausalLM(backbone=backbone, preprocessor=None)
        data = (rng.integers(0, 1000, size=(BATCH, SEQ)).astype(np.int32),
                np.ones((BATCH, SEQ), dtype=np.int32))
    # The same weights-first function and variable tree as stablehlo_exports.py's Keras exports.
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from stablehlo_exports import keras_fn, keras_parts  # noqa: E402

    fn, params = keras_fn(model), keras_parts(model)
    lowered = jax.jit(fn).lower(params, *data)
    path.write_text(lowered.as_text())
    n = int(sum(np.prod(v.shape) for v in model.trainable_variables))
    return {"parameters": n, "inputs": {f"arg{i}": list(d.shape) for i, d in enumerate(data)}}


def build(out: Path, names: list[str]) -> dict:
    index = {}
    for name in names:
        split, family, framework, arg = MODELS[name]
        d = out / name
        d.mkdir(parents=True, exist_ok=True)
        t = time.time()
        if framework in ("torchvision", "transformers"):
            file = "model.onnx"
            info = torch_model(framework, arg, d / file)
        else:
            file = "jit.mlir"
            info = jax_model(framework, arg, d / file)
        index[name] = {"split": split, "family": family, "framework": framework, "source": arg,
                       "file": f"{name}/{file}", **info}
        (d / "info.json").write_text(json.dumps(index[name], indent=1, sort_keys=True))
        log(f"{name}: {info['parameters']:,} parameters, {time.time() - t:.1f} s")
    return index


def build_each(out: Path) -> dict:
    """One process per model: torch and jaxlib each register LLVM's command-line options, and
    one process holding both aborts (`Option ... registered more than once`)."""
    index = {}
    for name in MODELS:
        if (out / name / "info.json").is_file():  # made by an interrupted run of this version
            index[name] = json.loads((out / name / "info.json").read_text())
            continue
        subprocess.run([sys.executable, __file__, "--only", name, "--out", str(out)], check=True,
                       stdout=subprocess.DEVNULL)
        index[name] = json.loads((out / name / "info.json").read_text())
    return index


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="*", help="export just these into --out (no index, no cache)")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    if a.only:
        build(a.out or Path("."), a.only)
        return
    dst = out_dir()
    if (dst / "index.json").is_file():
        print(dst)
        return
    dst.parent.mkdir(parents=True, exist_ok=True)
    # Models are exported into a partial folder of this version, which an interrupted run
    # resumes; it becomes the corpus (one rename) once every model and the index are in.
    tmp = dst.parent / f".{dst.name}.partial"
    tmp.mkdir(exist_ok=True)
    index = build_each(tmp)
    (tmp / "index.json").write_text(json.dumps(index, indent=1, sort_keys=True))
    os.rename(tmp, dst)
    for old in dst.parent.glob("memory-corpus-*"):
        if old != dst:
            shutil.rmtree(old, ignore_errors=True)
    print(dst)


if __name__ == "__main__":
    main()
