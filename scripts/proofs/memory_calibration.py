#!/usr/bin/env python3
"""`tpuport audit`'s per-chip HBM estimate against libtpu on the memory corpus (issue 34 item 5).

For every model of scripts/testdata/memory_corpus.py (36 models from published configs, split
dev / held-out by family) and each of v5e-8 and v6e-8:

  libtpu   `tpuport audit MODEL --slice S --compiler libtpu --plugin LIBTPU --format json`:
           the compiler's per-device HBM (arguments + outputs - aliased + temporaries). It does
           not depend on the estimator, so it is kept in CORPUS/libtpu-<version>.json and
           compiled once per libtpu version.
  estimate `tpuport audit MODEL --slice S --compiler none --format json`: the audit's own
           figure (memory.per_device_padded, else memory.padded's inference row), rerun every
           time (it is what changes while tuning).

Prints one markdown table row per model x chip and, per split, how many pairs are within 10 %,
the median and the worst |difference|. The held-out line is the result; dev is what the
estimator was tuned on. With --check, exits 1 when a held-out pair is off by more than 10 %.

    .venv/bin/python scripts/proofs/memory_calibration.py --tpuport target/release/tpuport \\
        --corpus ~/.cache/tpuport/memory-corpus-<hash> --libtpu ~/.cache/tpuport/libtpu/0.0.52/libtpu/libtpu.so
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SLICES = ("v5e-8", "v6e-8")
LIMIT_PCT = 10.0


def audit(tpuport: str, model: Path, slice_: str, extra: list[str]) -> dict:
    cmd = [tpuport, "--format", "json", "audit", str(model), "--slice", slice_, *extra]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()[-400:]}")
    return json.loads(p.stdout)


def estimate(report: dict, chip: str) -> int:
    mem = report["memory"]
    for key, field in (("per_device_padded", "total"), ("padded", "inference")):
        for row in mem.get(key) or []:
            if row[0] == chip:
                return int(row[1][field])
    raise RuntimeError(f"no memory figure for {chip}")


def compiler_figures(a, index: dict) -> dict:
    version = Path(a.libtpu).resolve().parent.parent.name
    path = a.corpus / f"libtpu-{version}.json"
    done = json.loads(path.read_text()) if path.is_file() else {}
    for name in index:
        for s in SLICES:
            key = f"{name}@{s}"
            if key in done:
                continue
            t = time.time()
            r = audit(a.tpuport, a.corpus / index[name]["file"], s,
                      ["--compiler", "libtpu", "--plugin", a.libtpu])
            c = r["compiler"]
            done[key] = {"bytes": c["compiler_bytes"], "fits": c["compiler_fits"],
                         "devices": c["devices"], "outcome": c["outcome"]}
            print(f"libtpu {key}: {c['compiler_bytes']:,} B, {time.time() - t:.0f} s", file=sys.stderr)
            # Written after every compile (temp file + rename): an interrupted run keeps its work.
            fd, tmp = tempfile.mkstemp(dir=a.corpus, prefix=".libtpu-")
            with os.fdopen(fd, "w") as f:
                json.dump(done, f, indent=1, sort_keys=True)
            os.replace(tmp, path)
    return done


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tpuport", required=True)
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--libtpu", required=True)
    ap.add_argument("--split", choices=("dev", "held-out"), help="only this part")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    index = json.loads((a.corpus / "index.json").read_text())
    if a.split:
        index = {k: v for k, v in index.items() if v["split"] == a.split}
    lib = compiler_figures(a, index)
    rows = []
    print("| model | family | split | chip | estimate | libtpu | difference |")
    print("|---|---|---|---|---:|---:|---:|")
    for name, m in index.items():
        for s in SLICES:
            chip = s.split("-")[0]
            est = estimate(audit(a.tpuport, a.corpus / m["file"], s, ["--compiler", "none"]), chip)
            cmp_ = lib[f"{name}@{s}"]["bytes"]
            pct = (est - cmp_) / cmp_ * 100.0
            rows.append({"model": name, "family": m["family"], "split": m["split"], "chip": chip,
                         "estimate": est, "libtpu": cmp_, "pct": pct})
            print(f"| {name} | {m['family']} | {m['split']} | {chip} | {est / 2**20:,.1f} MiB "
                  f"| {cmp_ / 2**20:,.1f} MiB | {pct:+.1f} % |", flush=True)
    print()
    bad = []
    for split in ("dev", "held-out"):
        part = [r for r in rows if r["split"] == split]
        if not part:
            continue
        off = [abs(r["pct"]) for r in part]
        within = sum(o <= LIMIT_PCT for o in off)
        worst = max(part, key=lambda r: abs(r["pct"]))
        print(f"{split}: {within} of {len(part)} model x chip pairs within {LIMIT_PCT:.0f} %; "
              f"median |difference| {statistics.median(off):.1f} %; worst {worst['model']} on "
              f"{worst['chip']} {worst['pct']:+.1f} %")
        if split == "held-out":
            bad = [r for r in part if abs(r["pct"]) > LIMIT_PCT]
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))
    if a.check and bad:
        for r in bad:
            print(f"FAIL {r['model']} on {r['chip']}: {r['pct']:+.1f} %", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
