"""Recorded traces of real training loops for `tpuport profile`'s host-bound finding.

Usage: host_bound_traces.py --out DIR [--only ID ...]

Runs every loop listed in scripts/testdata/host_bound/corpus.json (JAX loops under
jax.profiler, PyTorch loops under torch.profiler, on the CPU) and writes into DIR (run by
`make host-bound-traces`, cached by a hash of this script, the loops, corpus.json and the
framework versions; the tests read $TPUPORT_HOST_BOUND_TRACES):

  <script>.py                 the loops, copied here so the paths the profilers record exist
  <id>/plugins/profile/<run>/<host>.trace.json.gz   a JAX trace (the .xplane.pb is dropped)
  <id>/trace.json.gz          a PyTorch trace (export_chrome_trace)
  manifest.json               corpus.json's traces and split, the `# PLANT:` lines, the versions
                              and each run's wall time

About three minutes of CPU; some 30 MB.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent / "host_bound"
sys.path.insert(0, str(HERE.parent.parent))
from profile_fixtures import plants  # noqa: E402  (the `# PLANT: name` lines of a workload)


def versions(names):
    import importlib.metadata as m

    return {n: m.version(n) for n in names}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--only", nargs="*", help="trace ids to (re)record, keeping the others")
    a = ap.parse_args()
    corpus = json.loads((HERE / "corpus.json").read_text())
    out = a.out.resolve()
    if out.exists() and not a.only:
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    scripts = sorted(corpus["scripts"])
    for s in scripts:
        shutil.copy(HERE / s, out / s)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONWARNINGS": "ignore", "JAX_PLATFORMS": "cpu"}
    walls = {}
    for tid, t in corpus["traces"].items():
        if a.only and tid not in a.only:
            continue
        d = out / tid
        if d.exists():
            shutil.rmtree(d)
        d.mkdir()
        fw = corpus["scripts"][t["script"]]["framework"]
        target = d if fw == "jax" else d / "trace.json.gz"
        cmd = [sys.executable, str(out / t["script"]), str(target), "--variant", t["variant"]]
        t0 = time.time()
        r = subprocess.run(cmd, env=env, stderr=subprocess.PIPE, text=True, timeout=600, check=False)
        if r.returncode != 0:
            sys.exit(f"error: {' '.join(cmd)} exited {r.returncode}\n{r.stderr[-2000:]}")
        walls[tid] = round(time.time() - t0, 1)
        for pb in d.rglob("*.xplane.pb"):
            pb.unlink()
        print(f"  {walls[tid]:5.1f} s  {tid}", flush=True)
    manifest = {
        "traces": corpus["traces"],
        "scripts": corpus["scripts"],
        "plants": {s: plants(out / s) for s in scripts},
        "versions": versions(["jax", "jaxlib", "torch", "numpy", "pillow"]),
        "wall_s": walls,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
