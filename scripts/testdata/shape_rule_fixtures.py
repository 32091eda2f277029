#!/usr/bin/env python3
"""Builds the committed models that check tpuport's ONNX shape rules against ONNX's own.

Writes crates/tpuport-formats/tests/data/shape_rules/{opset*.onnx, expected.json}. Each model
holds one node per case (its constant inputs as initializers); `onnx.shape_inference` (strict,
with data propagation) infers every node output, and its answer goes to expected.json as
{file: {output: [elem_type, dims]}} (a dim is an int or a symbol name). The models' graph
outputs are written without types, so tpuport's importer infers them on its own
(`onnx_shape_rules.rs` compares). Run with the project venv:
`.venv/bin/python scripts/testdata/shape_rule_fixtures.py` (`make shape-rule-fixtures`). Deterministic.
"""
import json
import os

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

OUT = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "crates", "tpuport-formats", "tests", "data",
    "shape_rules",
)


class Model:
    """Cases of one opset, gathered into one graph."""

    def __init__(self, opset):
        self.opset = opset
        self.nodes, self.inputs, self.inits, self.outs = [], [], [], []

    def input(self, name, dtype, shape):
        self.inputs.append(h.make_tensor_value_info(name, dtype, shape))
        return name

    def const(self, name, arr, dtype=None):
        a = np.asarray(arr, dtype=dtype)
        self.inits.append(nh.from_array(a, name))
        return name

    def node(self, op, ins, outs, **attrs):
        self.nodes.append(h.make_node(op, ins, outs, name=outs[0], **attrs))
        self.outs.extend(o for o in outs if o)

    def save(self, name, expected):
        typed = [h.make_tensor_value_info(o, T.UNDEFINED, None) for o in self.outs]
        g = h.make_graph(self.nodes, name, self.inputs, typed, initializer=self.inits)
        m = h.make_model(g, opset_imports=[h.make_opsetid("", self.opset)],
                         producer_name="tpuport-shape-rule-fixtures")
        m.ir_version = 10
        inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True, data_prop=True)
        types = {v.name: v.type.tensor_type for v in inferred.graph.value_info}
        types.update({v.name: v.type.tensor_type for v in inferred.graph.output})
        want = {}
        for o in self.outs:
            t = types[o]
            assert t.elem_type != 0 and t.HasField("shape"), f"{name}: ONNX infers nothing for {o}"
            dims = [d.dim_value if d.HasField("dim_value") else d.dim_param for d in t.shape.dim]
            want[o] = [t.elem_type, dims]
        expected[name + ".onnx"] = want
        # Graph outputs stay untyped: tpuport must infer them itself.
        g.ClearField("output")
        g.output.extend(h.make_empty_tensor_value_info(o) for o in self.outs)
        onnx.save(m, os.path.join(OUT, name + ".onnx"))


def opset28():
    m = Model(28)
    # Attention, 4-D with grouped heads and a past cache; 3-D with head counts.
    q = m.input("att_q", T.FLOAT, [2, 4, 8, 16])
    k = m.input("att_k", T.FLOAT, [2, 2, 10, 16])
    v = m.input("att_v", T.FLOAT, [2, 2, 10, 24])
    pk = m.input("att_pk", T.FLOAT, [2, 2, 3, 16])
    pv = m.input("att_pv", T.FLOAT, [2, 2, 3, 24])
    m.node("Attention", [q, k, v, "", pk, pv], ["att4_y", "att4_pk", "att4_pv", "att4_qk"])
    q3 = m.input("att3_q", T.FLOAT, ["B", 8, 64])
    k3 = m.input("att3_k", T.FLOAT, ["B", 10, 32])
    v3 = m.input("att3_v", T.FLOAT, ["B", 10, 48])
    m.node("Attention", [q3, k3, v3], ["att3_y"], q_num_heads=4, kv_num_heads=2)
    # RotaryEmbedding: 4-D; 3-D with position ids into a cache.
    x = m.input("rot_x", T.FLOAT, [2, 4, 8, 16])
    c = m.input("rot_cos", T.FLOAT, [2, 8, 8])
    s = m.input("rot_sin", T.FLOAT, [2, 8, 8])
    m.node("RotaryEmbedding", [x, c, s], ["rot4_y"])
    x = m.input("rot3_x", T.FLOAT, [2, 8, 64])
    c = m.input("rot3_cos", T.FLOAT, [32, 8])
    s = m.input("rot3_sin", T.FLOAT, [32, 8])
    p = m.input("rot3_pos", T.INT64, [2, 8])
    m.node("RotaryEmbedding", [x, c, s, p], ["rot3_y"], num_heads=4)
    # SwiGLU, Swish, CumProd, BitCast.
    a = m.input("swiglu_a", T.FLOAT16, ["N", 3, 8])
    b = m.input("swiglu_b", T.FLOAT16, ["N", 3, 8])
    m.node("SwiGLU", [a, b], ["swiglu_y"])
    m.node("Swish", [m.input("swish_x", T.FLOAT, [2, 5])], ["swish_y"], alpha=1.5)
    ax = m.const("cumprod_axis", 1, np.int64)
    m.node("CumProd", [m.input("cumprod_x", T.DOUBLE, [3, 5]), ax], ["cumprod_y"], exclusive=1)
    m.node("BitCast", [m.input("bitcast_x", T.FLOAT, [3, 4])], ["bitcast_y"], to=T.INT32)
    # Windows.
    m.node("BlackmanWindow", [m.const("win_n10", 10, np.int64)], ["blackman_y"])
    m.node("HammingWindow", [m.const("win_n7", 7, np.int32)], ["hamming_y"],
           output_datatype=T.DOUBLE)
    m.node("HannWindow", [m.const("win_n5", 5, np.int64)], ["hann_y"], periodic=0)
    # CenterCropPad with and without axes.
    x = m.input("ccp_x", T.FLOAT, [10, 7, 3])
    m.node("CenterCropPad", [x, m.const("ccp_s2", [5, 9], np.int64)], ["ccp_axes_y"], axes=[0, 1])
    m.node("CenterCropPad", [x, m.const("ccp_s3", [4, 4, 4], np.int64)], ["ccp_y"])
    # DepthToSpace / SpaceToDepth.
    m.node("DepthToSpace", [m.input("d2s_x", T.FLOAT, [1, 8, 3, 4])], ["d2s_y"], blocksize=2,
           mode="CRD")
    m.node("SpaceToDepth", [m.input("s2d_x", T.FLOAT, ["N", 2, 6, 8])], ["s2d_y"], blocksize=2)
    # Quantization.
    x = m.input("q_x", T.FLOAT, [4, 5])
    sc = m.const("q_scale", 0.5, np.float32)
    m.node("QuantizeLinear", [x, sc, m.const("q_zp_i8", 3, np.int8)], ["quant_i8_y"])
    m.node("QuantizeLinear", [x, sc], ["quant_u8_y"])
    xq = m.input("dq_x", T.UINT8, [4, 5])
    m.node("DequantizeLinear", [xq, sc, m.const("dq_zp", 7, np.uint8)], ["dequant_y"])
    m.node("DequantizeLinear", [xq, m.const("dq_scale16", 0.25, np.float16)], ["dequant16_y"])
    a = m.input("qmm_a", T.UINT8, [2, 3, 4])
    b = m.input("qmm_b", T.UINT8, [4, 5])
    m.node("QLinearMatMul", [a, sc, m.const("qmm_azp", 1, np.uint8), b, sc,
                             m.const("qmm_bzp", 2, np.uint8), sc,
                             m.const("qmm_yzp", 3, np.uint8)], ["qmm_y"])
    # EyeLike, OneHot.
    x = m.input("eye_x", T.INT32, [3, 4])
    m.node("EyeLike", [x], ["eye_f_y"], dtype=T.FLOAT, k=1)
    m.node("EyeLike", [x], ["eye_y"])
    ind = m.input("oh_ind", T.INT64, [2, 3])
    vals = m.const("oh_vals", [0.0, 1.0], np.float32)
    m.node("OneHot", [ind, m.const("oh_depth", 7, np.int64), vals], ["onehot_ax1_y"], axis=1)
    m.node("OneHot", [ind, m.const("oh_depthf", 4.0, np.float32), vals], ["onehot_y"])
    # Losses.
    x = m.input("nll_x", T.FLOAT, [3, 5, 2])
    t = m.input("nll_t", T.INT64, [3, 2])
    m.node("NegativeLogLikelihoodLoss", [x, t], ["nll_none_y"], reduction="none")
    m.node("NegativeLogLikelihoodLoss", [x, t], ["nll_mean_y"])
    x = m.input("sce_x", T.FLOAT, [3, 5])
    t = m.input("sce_t", T.INT64, [3])
    m.node("SoftmaxCrossEntropyLoss", [x, t], ["sce_y", "sce_logp"])
    m.node("SoftmaxCrossEntropyLoss", [x, t], ["sce_none_y"], reduction="none")
    # Resize: scales, sizes, sizes on some axes with each aspect-ratio policy.
    x = m.input("rs_x", T.FLOAT, [1, 3, 8, 8])
    m.node("Resize", [x, "", m.const("rs_scales", [1, 1, 2, 1.5], np.float32)], ["rs_scales_y"],
           mode="linear")
    m.node("Resize", [x, "", "", m.const("rs_sizes", [1, 3, 5, 7], np.int64)], ["rs_sizes_y"])
    s2 = m.const("rs_sizes2", [5, 7], np.int64)
    for pol in ("stretch", "not_larger", "not_smaller"):
        m.node("Resize", [x, "", "", s2], [f"rs_{pol}_y"], axes=[2, 3],
               keep_aspect_ratio_policy=pol)
    # Scan: a running sum, along axis 0; and along axis 1 with the output stacked on axis 1.
    def body(p):
        return h.make_graph(
            [h.make_node("Add", [f"{p}_s", f"{p}_x"], [f"{p}_s2"]),
             h.make_node("Identity", [f"{p}_s2"], [f"{p}_o"])],
            f"{p}_body",
            [h.make_tensor_value_info(f"{p}_s", T.FLOAT, [2]),
             h.make_tensor_value_info(f"{p}_x", T.FLOAT, [2])],
            [h.make_tensor_value_info(f"{p}_s2", T.FLOAT, [2]),
             h.make_tensor_value_info(f"{p}_o", T.FLOAT, [2])],
        )

    s0 = m.input("scan_s0", T.FLOAT, [2])
    m.node("Scan", [s0, m.input("scan_x", T.FLOAT, [5, 2])], ["scan_state", "scan_out"],
           body=body("sb"), num_scan_inputs=1)
    m.node("Scan", [s0, m.input("scan_xt", T.FLOAT, [2, 6])], ["scan_t_state", "scan_t_out"],
           body=body("sbt"), num_scan_inputs=1, scan_input_axes=[1], scan_output_axes=[1])
    return m


def opset10():
    m = Model(10)
    x = m.input("rs10_x", T.FLOAT, [1, 1, 4, 6])
    m.node("Resize", [x, m.const("rs10_scales", [1, 1, 0.5, 2], np.float32)], ["rs10_y"])
    return m


def opset9():
    m = Model(9)
    x = m.input("up_x", T.FLOAT, [1, 1, 2, 3])
    m.node("Upsample", [x, m.const("up_scales", [1, 1, 2, 3], np.float32)], ["up_y"],
           mode="nearest")
    return m


def main():
    os.makedirs(OUT, exist_ok=True)
    expected = {}
    for name, m in (("opset28", opset28()), ("opset10", opset10()), ("opset9", opset9())):
        m.save(name, expected)
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
