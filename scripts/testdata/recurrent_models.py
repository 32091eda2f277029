#!/usr/bin/env python3
"""Recurrent and control-flow models with onnxruntime reference outputs, for
`crates/tpuport-lower/tests/onnx_recurrent.rs` (`make recurrent-models`).

Every case is a real export or a real shipped model, run by onnxruntime (CPU) on random inputs
at two sequence lengths (or two values of a data-dependent scalar):

  onnx/<case>.onnx         single LSTM / GRU / RNN / ReverseSequence nodes built with
                           onnx.helper over the attributes exporters leave at their defaults:
                           bidirectional with sequence_lens, initial states, peepholes, clip,
                           layout=1, input_forget, linear_before_reset, non-default activations
                           (different per direction) with alpha/beta
  torch/<model>/{legacy,dynamo}.onnx
                           PyTorch modules exported by the TorchScript exporter
                           (torch.onnx.export(dynamo=False)) and by torch.export
                           (dynamo=True): a 2-layer LSTM, a GRU with an initial state, a
                           bidirectional ReLU RNN, a model whose branch depends on a scalar
                           input `sr` (`if sr == 16000`, torch.jit.script / torch.cond), and a
                           while loop whose condition is computed from the data (legacy only:
                           the dynamo exporter does not translate torch.while_loop)
  keras/<model>.onnx       Keras 3 models converted by tf2onnx.convert.from_function: LSTM,
                           GRU and a bidirectional SimpleRNN (tf2onnx maps the LSTM to ONNX
                           LSTM and the others to Loop + ReverseSequence)
  vad/<file>.onnx          the voice-activity models shipped in the PyPI wheels silero-vad
                           6.2.3 and faster-whisper 1.2.1 (downloaded with `pip download
                           --no-deps`, the .onnx files extracted)

The inputs and outputs of run k of a case are `<case dir>/<stem>.in<k>.npz` and
`.out<k>.npz`, outputs keyed `out0, out1, ...` in graph-output order. `manifest.json` lists
each case: model path, source, runs (inputs, outputs, graph inputs whose values must be bound
at lowering time), and the StableHLO control-flow ops its lowering must contain.

DIR is --out, else ${XDG_CACHE_HOME:-~/.cache}/tpuport/recurrent-<hash of this script>; written
to DIR.tmp-<pid> and renamed when complete; nothing is done when DIR exists. Prints DIR.
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
import zipfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

SEED = 20261203
SEQS = (7, 13)
VAD_WHEELS = ("silero-vad==6.2.3", "faster-whisper==1.2.1")


def default_dir() -> Path:
    h = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tpuport"
    return root / f"recurrent-{h}"


RECURRENT = {"LSTM", "GRU", "RNN"}


def ops_of(g: onnx.GraphProto) -> list:
    out = []
    for n in g.node:
        out.append(n.op_type)
        for a in n.attribute:
            if a.HasField("g"):
                out += ops_of(a.g)
    return out


class Writer:
    """Runs onnxruntime on each model's inputs and records the cases."""

    def __init__(self, root: Path):
        self.root = root
        self.cases = []
        self.rng = np.random.default_rng(SEED)

    def add(self, rel: str, source: str, runs: list, expect=(), bind=(), reference=None):
        """`runs`: list of input dicts (name -> array). `reference(feed) -> outputs` replaces
        running the model itself in onnxruntime (for what onnxruntime does not run)."""
        path = self.root / rel
        model = onnx.load(path)
        names = [i.name for i in model.graph.input]
        # LSTM / GRU / RNN always lower to a stablehlo.while (exporters that unroll them, like
        # torch.export for nn.RNN, leave none).
        if RECURRENT & set(ops_of(model.graph)):
            expect = sorted(set(expect) | {"while"})
        if reference is None:
            sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
            reference = lambda feed: sess.run(None, feed)  # noqa: E731
        recs = []
        for k, feed in enumerate(runs):
            feed = {n: feed[n] for n in names if n in feed}
            outs = reference(feed)
            if not all(np.isfinite(o).all() for o in outs if o.dtype.kind == "f"):
                raise SystemExit(f"{rel}: the reference outputs are not finite")
            stem = path.with_suffix("")
            fin = Path(f"{stem}.in{k}.npz")
            fout = Path(f"{stem}.out{k}.npz")
            np.savez(fin, **feed)
            np.savez(fout, **{f"out{j}": v for j, v in enumerate(outs)})
            recs.append({
                "inputs": str(fin.relative_to(self.root)),
                "outputs": str(fout.relative_to(self.root)),
                "bind": list(bind),
            })
        self.cases.append({"name": rel.removesuffix(".onnx").replace("/", "_"), "model": rel,
                           "source": source, "expect": list(expect), "runs": recs})
        print(f"  {rel}: {len(recs)} run(s)", file=sys.stderr)

    def randn(self, *shape, scale=1.0):
        return (self.rng.standard_normal(shape) * scale).astype(np.float32)


# ---- single ONNX nodes ----

def node_model(path: Path, op: str, inputs: list, outputs: list, attrs: dict, inits: dict,
               opset: int = 22):
    """A one-node model; `inputs`: (name, elem type, shape) graph inputs; `inits`: name ->
    array initializers; `outputs`: names (types left to onnxruntime)."""
    ins = [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs]
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs if n]
    init = [onnx.numpy_helper.from_array(v, n) for n, v in inits.items()]
    order = [n for n, _, _ in inputs] + list(inits)
    node_inputs = attrs.pop("_inputs", order)
    node = helper.make_node(op, node_inputs, outputs, **attrs)
    g = helper.make_graph([node], op.lower(), ins, outs, init)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10
    onnx.save(m, path)


def onnx_cases(w: Writer):
    d = w.root / "onnx"
    d.mkdir()
    b, i, h = 3, 4, 5
    # (case, op, gates, directions, attrs, extra inputs)
    specs = [
        ("lstm_bidir_lens_peep_clip", "LSTM", 4, 2,
         {"direction": "bidirectional", "clip": 1.5}, ("B", "lens", "h0", "c0", "P")),
        ("lstm_layout1_input_forget_acts", "LSTM", 4, 1,
         {"layout": 1, "input_forget": 1, "activations": ["HardSigmoid", "LeakyRelu", "Softsign"],
          "activation_alpha": [0.3, 0.05], "activation_beta": [0.4]}, ("B", "h0", "c0")),
        ("lstm_reverse_lens", "LSTM", 4, 1, {"direction": "reverse"}, ("B", "lens", "h0")),
        ("lstm_bidir_per_direction_acts", "LSTM", 4, 2,
         {"direction": "bidirectional",
          "activations": ["Sigmoid", "Tanh", "Tanh", "HardSigmoid", "Elu", "ScaledTanh"],
          "activation_alpha": [0.25, 0.9, 1.3], "activation_beta": [0.45, 0.7]}, ("B",)),
        ("gru_bidir_lens_lbr", "GRU", 3, 2,
         {"direction": "bidirectional", "linear_before_reset": 1}, ("B", "lens", "h0")),
        ("gru_layout1_clip", "GRU", 3, 1, {"layout": 1, "clip": 0.8}, ("B", "h0")),
        ("gru_reverse_acts", "GRU", 3, 1,
         {"direction": "reverse", "activations": ["HardSigmoid", "Softplus"],
          "activation_alpha": [0.3], "activation_beta": [0.6]}, ("B",)),
        ("rnn_bidir_lens_relu", "RNN", 1, 2,
         {"direction": "bidirectional", "activations": ["Relu", "ThresholdedRelu"],
          "activation_alpha": [0.2]}, ("B", "lens", "h0")),
        ("rnn_layout1_affine", "RNN", 1, 1,
         {"layout": 1, "activations": ["Affine"], "activation_alpha": [0.5],
          "activation_beta": [0.1]}, ("B", "h0")),
    ]
    for name, op, g, nd, attrs, extra in specs:
        layout = attrs.get("layout", 0)
        x_shape = ["batch", "seq", i] if layout else ["seq", "batch", i]
        st_shape = [b, nd, h] if layout else [nd, b, h]
        inputs = [("X", TensorProto.FLOAT, x_shape)]
        inits = {"W": w.randn(nd, g * h, i, scale=0.5), "R": w.randn(nd, g * h, h, scale=0.5)}
        names = ["X", "W", "R", "", "", "", "", ""]
        if "B" in extra:
            inits["B"] = w.randn(nd, 2 * g * h, scale=0.3)
            names[3] = "B"
        if "lens" in extra:
            inputs.append(("lens", TensorProto.INT32, [b]))
            names[4] = "lens"
        if "h0" in extra:
            inputs.append(("h0", TensorProto.FLOAT, st_shape))
            names[5] = "h0"
        if "c0" in extra:
            inputs.append(("c0", TensorProto.FLOAT, st_shape))
            names[6] = "c0"
        if "P" in extra:
            inits["P"] = w.randn(nd, 3 * h, scale=0.5)
            names[7] = "P"
        while names and not names[-1]:
            names.pop()
        outs = ["Y", "Y_h", "Y_c"] if op == "LSTM" else ["Y", "Y_h"]
        node_model(d / f"{name}.onnx", op, inputs, outs,
                   dict(attrs, hidden_size=h, _inputs=names), inits)
        reference = None
        if layout:
            # onnxruntime runs only layout 0: the same node with layout 0 on transposed
            # inputs, outputs transposed back, is the reference (layout is a transposition).
            seq_first = [("X", TensorProto.FLOAT, ["seq", "batch", i])] + [
                (n, t, [nd, b, h]) for n, t, _ in inputs[1:]]
            attrs0 = {k: v for k, v in attrs.items() if k != "layout"}
            p0 = w.root / f"{name}.layout0.onnx"
            node_model(p0, op, seq_first, outs, dict(attrs0, hidden_size=h, _inputs=names),
                       inits)
            sess0 = ort.InferenceSession(str(p0), providers=["CPUExecutionProvider"])
            p0.unlink()

            def reference(feed, sess0=sess0):
                f0 = {n: v.transpose(1, 0, 2) for n, v in feed.items()}
                y, *states = sess0.run(None, f0)
                return [y.transpose(2, 0, 1, 3)] + [s.transpose(1, 0, 2) for s in states]
        runs = []
        for s in SEQS:
            feed = {"X": w.randn(*((b, s, i) if layout else (s, b, i)))}
            if "lens" in extra:
                # one full, one short, one of length 1 (onnxruntime rejects 0 here)
                feed["lens"] = np.array([s, s // 2, 1], dtype=np.int32)
            if "h0" in extra:
                feed["h0"] = w.randn(*st_shape, scale=0.5)
            if "c0" in extra:
                feed["c0"] = w.randn(*st_shape, scale=0.5)
            runs.append(feed)
        w.add(f"onnx/{name}.onnx", f"onnx.helper: one {op} node", runs, reference=reference)
    # ReverseSequence with batch_axis 0, time_axis 1 and a trailing feature dim.
    node_model(d / "reverse_sequence.onnx", "ReverseSequence",
               [("x", TensorProto.FLOAT, [4, "seq", 3]), ("lens", TensorProto.INT64, [4])],
               ["y"], {"batch_axis": 0, "time_axis": 1}, {})
    w.add("onnx/reverse_sequence.onnx", "onnx.helper: one ReverseSequence node",
          [{"x": w.randn(4, s, 3), "lens": np.array([s, 1, s - 2, 3], dtype=np.int64)}
           for s in SEQS])


# ---- PyTorch ----

def symbolic(path: Path) -> bool:
    """Whether the model's first input has a symbolic dim."""
    t = onnx.load(path).graph.input[0].type.tensor_type
    return any(d.dim_param or not d.HasField("dim_value") for d in t.shape.dim)


def torch_cases(w: Writer):
    import torch
    from torch import nn

    torch.manual_seed(SEED)

    class Lstm(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(8, 16, num_layers=2, batch_first=True)
            self.head = nn.Linear(16, 4)

        def forward(self, x):
            y, (h, c) = self.rnn(x)
            return self.head(y), h, c

    class Gru(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.GRU(8, 12)

        def forward(self, x, h0):
            return self.rnn(x, h0)

    class BiRnn(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.RNN(8, 10, nonlinearity="relu", bidirectional=True, batch_first=True)

        def forward(self, x):
            y, h = self.rnn(x)
            return y, h

    class Branch(nn.Module):
        """A frame model with a path per sample rate, like silero-vad's `sr == 16000`."""

        def __init__(self):
            super().__init__()
            self.a = nn.LSTM(8, 6, batch_first=True)
            self.b = nn.GRU(8, 6, batch_first=True)

        def hi(self, x):
            return torch.tanh(self.a(x)[0]).sum(1)

        def lo(self, x):
            return torch.sigmoid(self.b(x * 0.5)[0]).mean(1)

        def forward(self, x, sr):
            if bool(sr == 16000):
                return self.hi(x)
            return self.lo(x)

    class BranchCond(Branch):
        def forward(self, x, sr):
            return torch.cond(sr == 16000, self.hi, self.lo, (x,))

    class WhileLoop(nn.Module):
        """Doubles x until its mean magnitude passes a threshold (at most 20 steps)."""

        def forward(self, x, limit):
            i = 0
            while bool(x.abs().mean() < limit) and i < 20:
                x = x * 1.5 + 0.1
                i += 1
            return x

    seq = torch.export.Dim("seq", min=2, max=512)
    specs = [
        ("lstm", Lstm(), ("x",), ("y", "h", "c"), {"x": {1: "seq"}}, {"x": {1: seq}},
         lambda s: {"x": w.randn(2, s, 8)}),
        ("gru", Gru(), ("x", "h0"), ("y", "h"), {"x": {0: "seq"}}, {"x": {0: seq}, "h0": None},
         lambda s: {"x": w.randn(s, 3, 8), "h0": w.randn(1, 3, 12)}),
        ("birnn", BiRnn(), ("x",), ("y", "h"), {"x": {1: "seq"}}, {"x": {1: seq}},
         lambda s: {"x": w.randn(2, s, 8, scale=0.5)}),
    ]
    for name, m, ins, outs, dyn_legacy, dyn, make in specs:
        d = w.root / "torch" / name
        d.mkdir(parents=True)
        m.eval()
        runs = [make(s) for s in SEQS]
        example = tuple(torch.from_numpy(v) for v in runs[0].values())
        src = f"PyTorch nn.{type(m.rnn).__name__}"
        torch.onnx.export(m, example, d / "legacy.onnx", dynamo=False, input_names=list(ins),
                          output_names=list(outs), dynamic_axes=dyn_legacy, opset_version=17)
        w.add(f"torch/{name}/legacy.onnx", f"{src}, legacy exporter", runs)
        torch.onnx.export(m, example, d / "dynamo.onnx", dynamo=True, input_names=list(ins),
                          output_names=list(outs), dynamic_shapes=dyn, verbose=False)
        if symbolic(d / "dynamo.onnx"):
            w.add(f"torch/{name}/dynamo.onnx", f"{src}, dynamo exporter", runs)
            continue
        # torch.export specialised the sequence length: one export per length.
        (d / "dynamo.onnx").unlink()
        for s, feed in zip(SEQS, runs):
            ex = tuple(torch.from_numpy(v) for v in feed.values())
            torch.onnx.export(m, ex, d / f"dynamo_s{s}.onnx", dynamo=True,
                              input_names=list(ins), output_names=list(outs), verbose=False)
            w.add(f"torch/{name}/dynamo_s{s}.onnx",
                  f"{src}, dynamo exporter (sequence length specialised to {s})", [feed])

    # A branch on a scalar input: both values at both sequence lengths in one module.
    d = w.root / "torch" / "branch"
    d.mkdir(parents=True)
    m = Branch().eval()
    x0, sr0 = torch.randn(2, SEQS[0], 8), torch.tensor(16000)
    torch.onnx.export(torch.jit.script(m), (x0, sr0), d / "legacy.onnx", dynamo=False,
                      input_names=["x", "sr"], output_names=["p"],
                      dynamic_axes={"x": {1: "seq"}}, opset_version=17)
    mc = BranchCond().eval()
    mc.load_state_dict(m.state_dict())
    torch.onnx.export(mc, (x0, sr0), d / "dynamo.onnx", dynamo=True,
                      input_names=["x", "sr"], output_names=["p"],
                      dynamic_shapes={"x": {1: seq}, "sr": None}, verbose=False)
    runs = [{"x": w.randn(2, s, 8), "sr": np.array(sr, dtype=np.int64)}
            for s in SEQS for sr in (16000, 8000)]
    for exp in ("legacy", "dynamo"):
        w.add(f"torch/branch/{exp}.onnx", f"PyTorch `if sr == 16000`, {exp} exporter", runs,
              expect=["if"])

    # A while loop with a data-dependent condition (TorchScript exporter).
    d = w.root / "torch" / "while"
    d.mkdir(parents=True)
    torch.onnx.export(torch.jit.script(WhileLoop()), (torch.randn(3, 5), torch.tensor(2.0)),
                      d / "legacy.onnx", dynamo=False, input_names=["x", "limit"],
                      output_names=["y"], opset_version=17)
    runs = [{"x": w.randn(3, 5, scale=sc), "limit": np.array(2.0, dtype=np.float32)}
            for sc in (0.1, 3.0)]
    w.add("torch/while/legacy.onnx", "PyTorch scripted while loop, legacy exporter", runs,
          expect=["while"])


# ---- Keras through tf2onnx ----

def keras_cases(w: Writer):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import keras
    import tensorflow as tf
    import tf2onnx

    keras.utils.set_random_seed(SEED)
    d = w.root / "keras"
    d.mkdir()
    layers = {
        "lstm": lambda: keras.layers.LSTM(16, return_sequences=True),
        "gru": lambda: keras.layers.GRU(12, return_sequences=True),
        "birnn": lambda: keras.layers.Bidirectional(keras.layers.SimpleRNN(6, return_sequences=True)),
    }
    for name, make in layers.items():
        inp = keras.Input((None, 8))
        out = keras.layers.Dense(3)(make()(inp))
        m = keras.Model(inp, out)
        spec = (tf.TensorSpec((None, None, 8), tf.float32, name="x"),)

        @tf.function(input_signature=spec)
        def f(x, m=m):
            return m(x)

        tf2onnx.convert.from_function(f, input_signature=spec, opset=17,
                                      output_path=str(d / f"{name}.onnx"))
        w.add(f"keras/{name}.onnx", f"Keras {name} through tf2onnx",
              [{"x": w.randn(2, s, 8)} for s in SEQS])


# ---- voice-activity models from PyPI wheels ----

def vad_cases(w: Writer):
    d = w.root / "vad"
    d.mkdir()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", tmp,
                        *VAD_WHEELS], check=True)
        for whl in sorted(Path(tmp).glob("*.whl")):
            with zipfile.ZipFile(whl) as z:
                for n in z.namelist():
                    if n.endswith(".onnx"):
                        (d / Path(n).name).write_bytes(z.read(n))
    st = lambda: w.randn(2, 1, 128, scale=0.1)  # noqa: E731
    frame = lambda n: w.randn(1, n, scale=0.1)  # noqa: E731
    sr16 = np.array(16000, dtype=np.int64)
    # silero_vad.onnx: a 16 kHz and an 8 kHz path chosen by `If(sr == 16000)`, each valid only
    # for its own frame size (512 / 256 samples): sr is bound at lowering time.
    w.add("vad/silero_vad.onnx", "silero-vad 6.2.3 wheel",
          [{"input": frame(512), "state": st(), "sr": sr16},
           {"input": frame(256), "state": st(), "sr": np.array(8000, dtype=np.int64)}], bind=["sr"])
    w.add("vad/silero_vad_16k_op15.onnx", "silero-vad 6.2.3 wheel",
          [{"input": frame(512), "state": st(), "sr": sr16},
           {"input": w.randn(3, 512, scale=0.1), "state": w.randn(2, 3, 128, scale=0.1),
            "sr": sr16}])
    w.add("vad/silero_vad_half.onnx", "silero-vad 6.2.3 wheel",
          [{"input": frame(512), "state": st()},
           {"input": w.randn(3, 512, scale=0.1), "state": w.randn(2, 3, 128, scale=0.1)}])
    w.add("vad/silero_vad_op18_ifless.onnx", "silero-vad 6.2.3 wheel",
          [{"input": frame(512), "state": st(), "sr": sr16},
           {"input": frame(256), "state": st(), "sr": np.array(8000, dtype=np.int64)}],
          expect=["if"])
    w.add("vad/silero_vad_openvino_16k.onnx", "silero-vad 6.2.3 wheel",
          [{"input": w.randn(1, 576, scale=0.1), "state": st()}])
    for f, src in (("silero_vad_16k_sequence.onnx", "silero-vad 6.2.3 wheel"),
                   ("silero_vad_v6.onnx", "faster-whisper 1.2.1 wheel")):
        w.add(f"vad/{f}", src,
              [{"input": w.randn(n, 576, scale=0.1), "h": w.randn(1, 1, 128, scale=0.1),
                "c": w.randn(1, 1, 128, scale=0.1)} for n in (4, 9)])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    out = args.out or default_dir()
    if (out / "manifest.json").is_file():
        print(out)
        return 0
    tmp = out.with_name(f"{out.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    warnings.filterwarnings("ignore")
    w = Writer(tmp)
    onnx_cases(w)
    torch_cases(w)
    keras_cases(w)
    vad_cases(w)
    (tmp / "manifest.json").write_text(json.dumps({"seed": SEED, "cases": w.cases}, indent=1))
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
