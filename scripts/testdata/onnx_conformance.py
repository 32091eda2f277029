#!/usr/bin/env python3
"""Writes the ONNX backend test cases to disk for `tpuport conformance` (`make conformance`).

onnx 1.23 ships no node test directories: `onnx.backend.test.loader.load_node_model_tests()`
builds the 1884 node cases in memory. This script writes them, and the `simple`,
`pytorch-converted` and `pytorch-operator` cases shipped in the onnx package, in the classic
layout:

  DIR/<suite>/<case>/model.onnx
  DIR/<suite>/<case>/test_data_set_0/input_<j>.pb, output_<j>.pb   (serialized TensorProto, or
                                                                     Sequence/Optional/Map proto)
  DIR/<suite>/<case>/case.json   {"suite", "name", "op", "ops", "rtol", "atol",
                                  "inputs": [{"name", "kind"}], "outputs": [...]}

`op` is the case's main op: the single node's op, else the ONNX op whose snake_case name is
the longest prefix of the case name (`test_layer_normalization_2d_expanded` ->
LayerNormalization), else the first op that is not a Constant. `rtol`/`atol` are the suite's
tolerances (onnx's defaults 1e-3 / 1e-7, or the case's own).

DIR defaults to ${XDG_CACHE_HOME:-~/.cache}/tpuport/onnx-conformance-<onnx version>-<hash of
this script>. The set is written to DIR.tmp-<pid> and renamed into place when complete; when
DIR exists the script does nothing. Prints DIR on stdout.
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import sys
import warnings
from pathlib import Path

import onnx
from onnx import numpy_helper
from onnx.backend.test.loader import DATA_DIR, load_model_tests, load_node_model_tests

SHIPPED = ("simple", "pytorch-converted", "pytorch-operator")
# Data movement around the op a multi-node case exists for.
PLUMBING = {"Constant", "Identity", "Unsqueeze", "Squeeze", "Reshape", "Shape", "Gather",
            "Cast", "Transpose", "Concat", "Slice", "Flatten", "Expand", "ConstantOfShape"}


def default_dir() -> Path:
    h = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tpuport"
    return root / f"onnx-conformance-{onnx.__version__}-{h}"


def snake(name: str) -> str:
    s = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    s = re.sub(r"(?<=[A-Z])([A-Z][a-z])", r"_\1", s)
    return s.lower()


SCHEMAS = sorted({s.name for s in onnx.defs.get_all_schemas_with_history()})
SNAKES = sorted(((snake(n), n) for n in SCHEMAS), key=lambda t: -len(t[0]))


def kind_of(t: onnx.TypeProto) -> str:
    return t.WhichOneof("value") or "none"


def all_ops(g: onnx.GraphProto) -> list[str]:
    out = []
    for n in g.node:
        out.append(n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}::{n.op_type}")
        for a in n.attribute:
            if a.HasField("g"):
                out += all_ops(a.g)
            for sg in a.graphs:
                out += all_ops(sg)
    return out


def main_op(name: str, model: onnx.ModelProto) -> str:
    nodes = list(model.graph.node)
    if len(nodes) == 1:
        n = nodes[0]
        return n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}::{n.op_type}"
    base = name.removeprefix("test_").lower()
    for s, n in SNAKES:
        if base == s or base.startswith(s + "_"):
            return n
    base_flat = base.replace("_", "")
    for s, n in SNAKES:
        flat = s.replace("_", "")
        if len(flat) > 2 and base_flat.startswith(flat):
            return n
    for n in nodes:
        if n.op_type not in PLUMBING:
            return n.op_type
    for n in nodes:
        if n.op_type != "Constant":
            return n.op_type
    return nodes[0].op_type if nodes else "(empty)"


def write_pb(path: Path, value, vi: onnx.ValueInfoProto) -> None:
    t = vi.type
    if isinstance(value, onnx.TensorProto):
        data = value.SerializeToString()
    elif t.HasField("map_type"):
        data = numpy_helper.from_dict(value, vi.name).SerializeToString()
    elif t.HasField("sequence_type"):
        data = numpy_helper.from_list(value, vi.name).SerializeToString()
    elif t.HasField("optional_type"):
        data = numpy_helper.from_optional(value, vi.name).SerializeToString()
    else:
        data = numpy_helper.from_array(value, vi.name).SerializeToString()
    path.write_bytes(data)


def write_case(root: Path, suite: str, case) -> None:
    d = root / suite / case.name
    d.mkdir(parents=True)
    model = case.model
    (d / "model.onnx").write_bytes(model.SerializeToString())
    for i, (inputs, outputs) in enumerate(case.data_sets):
        ds = d / f"test_data_set_{i}"
        ds.mkdir()
        for j, v in enumerate(inputs):
            write_pb(ds / f"input_{j}.pb", v, model.graph.input[j])
        for j, v in enumerate(outputs):
            write_pb(ds / f"output_{j}.pb", v, model.graph.output[j])
    meta(d, suite, case.name, model, case.rtol, case.atol)


def meta(d: Path, suite: str, name: str, model: onnx.ModelProto, rtol, atol) -> None:
    ops = all_ops(model.graph)
    for f in model.functions:
        ops += all_ops(onnx.helper.make_graph(f.node, f.name, [], []))
    info = {
        "suite": suite,
        "name": name,
        "op": main_op(name, model),
        "ops": sorted(set(ops)),
        "rtol": rtol,
        "atol": atol,
        "inputs": [{"name": v.name, "kind": kind_of(v.type)} for v in model.graph.input],
        "outputs": [{"name": v.name, "kind": kind_of(v.type)} for v in model.graph.output],
    }
    (d / "case.json").write_text(json.dumps(info, indent=1, sort_keys=True) + "\n")


def copy_shipped(root: Path, suite: str) -> int:
    n = 0
    tol = {t.name: (t.rtol, t.atol) for t in load_model_tests(kind=suite)}
    src = Path(DATA_DIR) / suite
    for c in sorted(p for p in src.iterdir() if (p / "model.onnx").is_file()):
        d = root / suite / c.name
        shutil.copytree(c, d)
        model = onnx.load(str(c / "model.onnx"), load_external_data=False)
        rtol, atol = tol.get(c.name, (1e-3, 1e-7))
        meta(d, suite, c.name, model, rtol, atol)
        n += 1
    return n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=None, help="target dir (default: cache dir)")
    a = ap.parse_args()
    out = (a.out or default_dir()).resolve()
    if (out / "index.json").is_file():
        print(out)
        return 0
    tmp = out.parent / f"{out.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    warnings.simplefilter("ignore")  # numpy overflow warnings while building the Cast cases
    counts = {}
    cases = load_node_model_tests()
    for c in cases:
        write_case(tmp, "node", c)
    counts["node"] = len(cases)
    for s in SHIPPED:
        counts[s] = copy_shipped(tmp, s)
    index = {"onnx": onnx.__version__, "suites": counts}
    (tmp / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    if out.exists():  # an incomplete set from an older layout: replace it
        shutil.rmtree(out)
    os.replace(tmp, out)
    print(out)
    print(f"onnx {onnx.__version__}: {counts}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
