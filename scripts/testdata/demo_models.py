#!/usr/bin/env python3
"""The inputs of `make demo`: two trained models nobody here made, taken from PyPI wheels, and
onnxruntime's outputs as the reference. Needs only numpy, onnxruntime and pip (seconds, no
torch, no export).

  ocr_rec.onnx        the PP-OCRv4 text recognizer shipped in rapidocr-onnxruntime 1.4.4
                      (`rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx`, PaddleOCR's
                      model exported by paddle2onnx; Apache-2.0), input `x` f32[B,3,48,W]
  inputs.npz, x.npy   8 images of 3x48x320, uniform in [-1, 1] (the model's normalized range)
  outputs_onnxruntime.npz
                      onnxruntime's (CPU) outputs for those inputs, keyed by output name
  mtcnn_onet.pt       the MTCNN output network shipped in facenet-pytorch 2.6.0
                      (`facenet_pytorch/data/onet.pt`: a state dict written by torch.save in the
                      legacy pickle format; MIT)
  meta.json           where each file came from (wheel, member, sha256, licence)

The wheels are fetched with `pip download --no-deps` and only the listed members are kept;
each member's sha256 is checked. Written to DIR.tmp-<pid> and renamed when complete; nothing is
done when DIR exists. Prints DIR.

    .venv/bin/python scripts/testdata/demo_models.py --out DIR
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import onnxruntime as ort

SEED = 20261207
SHAPE = (8, 3, 48, 320)
# (wheel, member, file written, sha256 of the member, licence)
MEMBERS = (
    ("rapidocr-onnxruntime==1.4.4", "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx", "ocr_rec.onnx",
     "48fc40f24f6d2a207a2b1091d3437eb3cc3eb6b676dc3ef9c37384005483683b", "Apache-2.0"),
    ("facenet-pytorch==2.6.0", "facenet_pytorch/data/onet.pt", "mtcnn_onet.pt",
     "165bfbe42940416ccfb977545cf0e976d5bf321f67083ae2aaaa5c764280118d", "MIT"),
)


def fetch(out: Path, wheels: Path) -> list:
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                    "-d", str(wheels), *sorted({m[0] for m in MEMBERS})], check=True)
    sources = []
    for spec, member, name, sha, licence in MEMBERS:
        dist, version = spec.split("==")
        whl = next(wheels.glob(f"{dist.replace('-', '_')}-{version}-*.whl"))
        with zipfile.ZipFile(whl) as z:
            data = z.read(member)
        got = hashlib.sha256(data).hexdigest()
        if got != sha:
            sys.exit(f"{whl.name}:{member}: sha256 {got}, expected {sha}")
        (out / name).write_bytes(data)
        sources.append({"file": name, "wheel": whl.name, "member": member, "sha256": sha, "licence": licence})
    return sources


def reference(out: Path) -> dict:
    x = np.random.default_rng(SEED).uniform(-1, 1, size=SHAPE).astype(np.float32)
    sess = ort.InferenceSession(str(out / "ocr_rec.onnx"), providers=["CPUExecutionProvider"])
    (name,) = [i.name for i in sess.get_inputs()]
    outs = sess.run(None, {name: x})
    np.savez(out / "inputs.npz", **{name: x})
    np.save(out / "x.npy", x)
    np.savez(out / "outputs_onnxruntime.npz", **{o.name: v for o, v in zip(sess.get_outputs(), outs)})
    return {"input": name, "shape": list(SHAPE), "seed": SEED, "onnxruntime": ort.__version__,
            "outputs": {o.name: list(v.shape) for o, v in zip(sess.get_outputs(), outs)}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    if a.out.is_dir():
        print(a.out)
        return
    a.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = a.out.parent / f"{a.out.name}.tmp-{os.getpid()}"
    tmp.mkdir()
    try:
        with tempfile.TemporaryDirectory(prefix="demo-wheels-") as wheels:
            sources = fetch(tmp, Path(wheels))
        meta = {"generator": "scripts/testdata/demo_models.py", "sources": sources, "reference": reference(tmp)}
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
        tmp.rename(a.out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(a.out)


if __name__ == "__main__":
    main()
