#!/usr/bin/env python3
"""Builds the small committed models that trigger (or must not trigger) each audit finding code.

Writes crates/tpuport-analysis/tests/data/findings/{*.onnx,*.mlir}. ONNX models are made with
the `onnx.helper` API; StableHLO ones by lowering small JAX functions (`jax.jit(f).lower(...)`),
plus two hand-written MLIR modules for patterns JAX never emits (data-dependent dynamic shapes).
Run with the project venv: `.venv/bin/python scripts/testdata/findings_fixtures.py` (`make findings-fixtures`).
Deterministic: rerunning rewrites the same bytes.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "crates", "tpuport-analysis", "tests", "data", "findings")


def vi(name, dtype, shape):
    return h.make_tensor_value_info(name, dtype, shape)


def init(name, arr):
    return nh.from_array(np.asarray(arr), name)


def save(name, nodes, inputs, outputs, inits=(), opset=17, extra_opsets=()):
    g = h.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    ops = [h.make_opsetid("", opset)] + [h.make_opsetid(d, v) for d, v in extra_opsets]
    m = h.make_model(g, opset_imports=ops, producer_name="tpuport-findings-fixtures")
    m.ir_version = 8
    if not extra_opsets:
        onnx.checker.check_model(m)
    onnx.save(m, os.path.join(OUT, name + ".onnx"))


def onnx_models():
    f32 = np.float32
    # Clean: a bf16 dense layer with static shapes, nothing to report.
    save("clean", [
        h.make_node("MatMul", ["x", "w"], ["mm"], name="dense/matmul"),
        h.make_node("Relu", ["mm"], ["y"], name="dense/relu"),
    ], [vi("x", T.BFLOAT16, [128, 256]), vi("w", T.BFLOAT16, [256, 256])], [vi("y", T.BFLOAT16, [128, 256])])
    # AUD101: boolean masking and nonzero.
    save("nonzero", [
        h.make_node("Greater", ["x", "zero"], ["mask"], name="mask"),
        h.make_node("NonZero", ["mask"], ["idx"], name="nonzero"),
        h.make_node("Compress", ["x", "flat"], ["sel"], name="masked_select", axis=0),
    ], [vi("x", T.FLOAT, [16]), vi("flat", T.BOOL, [16])],
        [vi("idx", T.INT64, [1, None]), vi("sel", T.FLOAT, [None])], [init("zero", np.array(0, f32))])
    # AUD102: a free sequence dim besides the batch.
    save("dynamic_dims", [h.make_node("Relu", ["x"], ["y"], name="relu")],
         [vi("x", T.FLOAT, ["batch", "sequence", 64])], [vi("y", T.FLOAT, ["batch", "sequence", 64])])
    # Not AUD102: only the batch is symbolic.
    save("batch_only", [h.make_node("Relu", ["x"], ["y"], name="relu")],
         [vi("x", T.FLOAT, ["batch", 64])], [vi("y", T.FLOAT, ["batch", 64])])
    # AUD103: Loop whose trip count is an input and whose body decides to stop.
    body = h.make_graph([
        h.make_node("Add", ["v_in", "one"], ["v_out"], name="body/add"),
        h.make_node("ReduceSum", ["v_out"], ["s"], name="body/sum", keepdims=0),
        h.make_node("Less", ["s", "limit"], ["cond_out"], name="body/less"),
    ], "body", [vi("i", T.INT64, []), vi("cond_in", T.BOOL, []), vi("v_in", T.FLOAT, [4])],
        [vi("cond_out", T.BOOL, []), vi("v_out", T.FLOAT, [4])],
        [init("one", np.ones(4, f32)), init("limit", np.array(100, f32))])
    save("loop_dynamic", [h.make_node("Loop", ["m", "c", "v0"], ["v"], name="while_loop", body=body)],
         [vi("m", T.INT64, []), vi("c", T.BOOL, []), vi("v0", T.FLOAT, [4])], [vi("v", T.FLOAT, [4])])
    # Not AUD103: constant trip count, condition passed through.
    body2 = h.make_graph([
        h.make_node("Identity", ["cond_in"], ["cond_out"], name="body/cond"),
        h.make_node("Add", ["v_in", "one"], ["v_out"], name="body/add"),
    ], "body", [vi("i", T.INT64, []), vi("cond_in", T.BOOL, []), vi("v_in", T.FLOAT, [4])],
        [vi("cond_out", T.BOOL, []), vi("v_out", T.FLOAT, [4])], [init("one", np.ones(4, f32))])
    save("loop_static", [h.make_node("Loop", ["m", "c", "v0"], ["v"], name="for_loop", body=body2)],
         [vi("v0", T.FLOAT, [4])], [vi("v", T.FLOAT, [4])],
         [init("m", np.array(10, np.int64)), init("c", np.array(True))])
    # AUD201: strings.
    save("strings", [h.make_node("StringNormalizer", ["text"], ["norm"], name="normalize", case_change_action="LOWER")],
         [vi("text", T.STRING, [8])], [vi("norm", T.STRING, [8])])
    # AUD202: float64.
    save("float64", [h.make_node("Add", ["x", "w"], ["y"], name="add64")],
         [vi("x", T.DOUBLE, [8, 8])], [vi("y", T.DOUBLE, [8, 8])], [init("w", np.ones((8, 8), np.float64))])
    # AUD203: a DFT.
    save("dft", [h.make_node("DFT", ["x", "", "axis"], ["y"], name="dft")],
         [vi("x", T.FLOAT, [1, 16, 1])], [vi("y", T.FLOAT, [1, 16, 2])], [init("axis", np.array(1, np.int64))], opset=20)
    # AUD301: top-k 1000 over 50000 logits.
    save("topk", [h.make_node("TopK", ["x", "k"], ["v", "i"], name="topk", axis=-1)],
         [vi("x", T.FLOAT, [1, 50000])], [vi("v", T.FLOAT, [1, 1000]), vi("i", T.INT64, [1, 1000])],
         [init("k", np.array([1000], np.int64))])
    # AUD302: scatter updates.
    save("scatter", [
        h.make_node("ScatterND", ["data", "idx", "upd"], ["s1"], name="scatter_1"),
        h.make_node("Relu", ["s1"], ["y"], name="relu"),
    ], [vi("data", T.FLOAT, [64, 16]), vi("idx", T.INT64, [4, 1]), vi("upd", T.FLOAT, [4, 16])],
        [vi("y", T.FLOAT, [64, 16])])
    # AUD303: random noise.
    save("random", [
        h.make_node("RandomNormalLike", ["x"], ["noise"], name="noise", seed=1.0),
        h.make_node("Add", ["x", "noise"], ["y"], name="add_noise"),
    ], [vi("x", T.FLOAT, [8, 8])], [vi("y", T.FLOAT, [8, 8])])
    # AUD304: detection post-processing.
    save("nms", [h.make_node("NonMaxSuppression", ["boxes", "scores", "maxout", "iou"], ["sel"], name="nms")],
         [vi("boxes", T.FLOAT, [1, 100, 4]), vi("scores", T.FLOAT, [1, 1, 100])], [vi("sel", T.INT64, [None, 3])],
         [init("maxout", np.array([10], np.int64)), init("iou", np.array([0.5], f32))])
    # AUD305: an onnxruntime contrib op.
    save("contrib", [h.make_node("FastGelu", ["x"], ["y"], name="fast_gelu", domain="com.microsoft")],
         [vi("x", T.FLOAT, [8, 64])], [vi("y", T.FLOAT, [8, 64])], extra_opsets=[("com.microsoft", 1)])
    # AUD401: an f32 dense layer.
    save("f32_matmul", [h.make_node("MatMul", ["x", "w"], ["y"], name="dense_f32")],
         [vi("x", T.FLOAT, [128, 512]), vi("w", T.FLOAT, [512, 512])], [vi("y", T.FLOAT, [128, 512])])
    # AUD402: softmax and layer norm.
    save("softmax_norm", [
        h.make_node("Softmax", ["x"], ["p"], name="attn/softmax", axis=-1),
        h.make_node("LayerNormalization", ["p", "g", "b"], ["y"], name="ln", axis=-1),
    ], [vi("x", T.FLOAT, [8, 128])], [vi("y", T.FLOAT, [8, 128])],
        [init("g", np.ones(128, f32)), init("b", np.zeros(128, f32))])
    # AUD403: exp / log.
    save("exp_log", [
        h.make_node("Exp", ["x"], ["e"], name="exp"),
        h.make_node("Log", ["e"], ["y"], name="log"),
    ], [vi("x", T.FLOAT, [8, 128])], [vi("y", T.FLOAT, [8, 128])])
    # AUD404: a long sum and a cumsum.
    save("long_reduce", [
        h.make_node("ReduceSum", ["x", "axes"], ["s"], name="sum", keepdims=0),
        h.make_node("CumSum", ["x", "axis"], ["c"], name="cumsum"),
    ], [vi("x", T.FLOAT, [4, 8192])], [vi("s", T.FLOAT, [4]), vi("c", T.FLOAT, [4, 8192])],
        [init("axes", np.array([1], np.int64)), init("axis", np.array(1, np.int64))])
    # AUD501: 40 adds on 4x4 tensors.
    nodes, prev = [], "x"
    for i in range(40):
        nodes.append(h.make_node("Add", [prev, "x"], [f"t{i}"], name=f"add_{i}"))
        prev = f"t{i}"
    nodes.append(h.make_node("Identity", [prev], ["y"], name="out"))
    save("tiny_ops", nodes, [vi("x", T.FLOAT, [4, 4])], [vi("y", T.FLOAT, [4, 4])])


# Hand-written StableHLO: a reshape whose target shape comes from tensor data (AUD101); JAX
# never emits one.
DYN_RESHAPE = """module @dyn {
  func.func public @main(%arg0: tensor<16xf32>, %arg1: tensor<2xi64>) -> tensor<?x?xf32> {
    %0 = stablehlo.abs %arg1 : tensor<2xi64>
    %1 = stablehlo.dynamic_reshape %arg0, %0 : (tensor<16xf32>, tensor<2xi64>) -> tensor<?x?xf32>
    return %1 : tensor<?x?xf32>
  }
}
"""


def jax_models():
    import jax
    import jax.numpy as jnp
    from jax import lax

    def write(name, f, *args):
        text = jax.jit(f).lower(*args).as_text()
        with open(os.path.join(OUT, name + ".mlir"), "w") as fh:
            fh.write(text)

    s = jax.ShapeDtypeStruct
    bf = jnp.bfloat16

    def clean(x, w1, w2):
        return jnp.maximum(x @ w1, 0).astype(bf) @ w2

    write("clean_stablehlo", clean, s((128, 256), bf), s((256, 256), bf), s((256, 256), bf))

    def while_dyn(x):
        return lax.while_loop(lambda v: jnp.sum(v) < 100.0, lambda v: v * 2.0 + 1.0, x)

    write("while_dynamic", while_dyn, s((8,), jnp.float32))

    def fori(x):
        return lax.fori_loop(0, 10, lambda i, v: v * 2.0, x)

    write("while_static", fori, s((8,), jnp.float32))

    def sort(x):
        return jnp.sort(x), lax.top_k(x, 512)[0]

    write("sort", sort, s((8192,), jnp.float32))

    def rng(key):
        return lax.rng_bit_generator(key, (16, 16))[1]

    write("rng", rng, s((4,), jnp.uint32))

    def fft(x):
        return jnp.fft.fft(x)

    write("fft", fft, s((64,), jnp.complex64))

    with jax.enable_x64(True):
        write("float64_stablehlo", lambda x: x * 2.0 + 1.0, s((8,), jnp.float64))

    def callback(x):
        return jax.pure_callback(lambda a: np.asarray(a) * 2, jax.ShapeDtypeStruct(x.shape, x.dtype), x)

    write("host_callback", callback, s((8,), jnp.float32))

    def attn(q, k):
        a = jax.nn.softmax((q @ k.T).astype(bf), axis=-1)
        m = jnp.mean(a, axis=-1, keepdims=True)
        v = jnp.mean((a - m) ** 2, axis=-1, keepdims=True)
        return (a - m) * lax.rsqrt(v + 1e-5)

    write("softmax_bf16", attn, s((128, 64), bf), s((128, 64), bf))

    def cumsum(x):
        return jnp.cumsum(x, axis=-1), jnp.sum(x.astype(bf), axis=-1)

    write("cumsum_bf16", cumsum, s((4, 8192), jnp.float32))

    def scat(x, i, u):
        for _ in range(4):
            x = x.at[i].add(u)
        return x

    write("scatter_stablehlo", scat, s((1024, 16), jnp.float32), s((8,), jnp.int32), s((8, 16), jnp.float32))


def main():
    os.makedirs(OUT, exist_ok=True)
    onnx_models()
    with open(os.path.join(OUT, "dynamic_reshape.mlir"), "w") as fh:
        fh.write(DYN_RESHAPE)
    jax_models()
    print(f"wrote {len(os.listdir(OUT))} files to {os.path.normpath(OUT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
