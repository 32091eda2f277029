#!/usr/bin/env python3
"""`make bench` for `tpuport compile`: libtpu ahead-of-time compilation for a v5e-8 topology on
this machine (no TPU), through tpuport vs through JAX, on the same StableHLO module.

Per model (the JAX fixtures' functions from scripts/fixtures/jax_models.py: mlp at batch 128 and
the transformer encoder block) and round:
  jax      a fresh Python process (JAX_PLATFORMS=cpu, TPU_LIBRARY_PATH=libtpu): import jax, then
           `get_topology_desc("v5e:2x4", chip_config_name="default", chips_per_host_bounds=(2,2,1),
           num_slices=1, wrap=(False,False,False))` and
           `jax.jit(f).lower(*ShapeDtypeStructs on one topology device).compile()`. It writes the
           lowered module's text, so tpuport compiles exactly that module. Figures: topology +
           lower + compile seconds in process (`aot_s`), and the process wall time.
  tpuport  `tpuport compile THAT_MODULE --target v5e-8 --format json --plugin libtpu`. Figures:
           `setup_ms + compile_ms` from its report (libtpu load, initialisation, topology,
           compile) and the process wall time.
ROUNDS rounds alternate the two sides; each figure is the median over rounds; the ratio is
tpuport / jax (below 1: tpuport faster). Both sides load the same libtpu (`make libtpu`) and
report the same per-device argument bytes (checked).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROUNDS = 3
MODELS = ("mlp_b128", "encoder")

CHILD = r"""
import json, os, sys, time
t0 = time.perf_counter()
sys.path.insert(0, sys.argv[1])
import jax_models as m
import jax, numpy as np
from jax.experimental import topologies
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
t_import = time.perf_counter()
name, out = sys.argv[2], sys.argv[3]
fn, args = {
    "mlp_b128": (m.mlp, m.mlp_args(128, m._rng("mlp_b128"))),
    "encoder": (m.encoder, m.encoder_args(m._rng("encoder"))),
}[name]
t1 = time.perf_counter()
topo = topologies.get_topology_desc(platform="tpu", topology_name="v5e:2x4",
    chip_config_name="default", chips_per_host_bounds=(2, 2, 1), num_slices=1,
    wrap=(False, False, False))
sh = NamedSharding(Mesh(topo.devices[:1], ("x",)), P())
specs = [jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=sh) for a in args]
lowered = jax.jit(fn).lower(*specs)
compiled = lowered.compile()
t2 = time.perf_counter()
open(out, "w").write(lowered.as_text())
mem = compiled.memory_analysis()
print(json.dumps({"aot_s": t2 - t1, "import_s": t_import - t0,
                  "arguments": mem.argument_size_in_bytes}))
"""


def run_jax(py: str, fixtures_src: Path, lib: str, name: str, out: Path) -> dict:
    env = dict(os.environ, JAX_PLATFORMS="cpu", TPU_LIBRARY_PATH=lib, TPU_SKIP_MDS_QUERY="1",
               TPU_WORKER_HOSTNAMES="localhost", TPU_ACCELERATOR_TYPE="v5litepod-8",
               ALLOW_MULTIPLE_LIBTPU_LOAD="1", TF_CPP_MIN_LOG_LEVEL="1")
    t = time.perf_counter()
    r = subprocess.run([py, "-c", CHILD, str(fixtures_src), name, str(out)], env=env,
                       capture_output=True, text=True, cwd=tempfile.gettempdir(), check=False)
    wall = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"jax side failed for {name}:\n{r.stderr[-3000:]}")
    d = json.loads(r.stdout.strip().splitlines()[-1])
    d["wall_s"] = wall
    return d


def run_tpuport(exe: str, lib: str, module: Path) -> dict:
    t = time.perf_counter()
    r = subprocess.run([exe, "--format", "json", "compile", str(module), "--target", "v5e-8",
                        "--plugin", lib], capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"tpuport compile failed for {module}:\n{r.stderr[-3000:]}")
    rep = json.loads(r.stdout)
    return {"aot_s": (rep["setup_ms"] + rep["compile_ms"]) / 1e3, "wall_s": wall,
            "arguments": rep["per_device"]["arguments"]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpuport", required=True)
    ap.add_argument("--libtpu", required=True, help="libtpu.so (make libtpu)")
    ap.add_argument("--rounds", type=int, default=ROUNDS)
    a = ap.parse_args()
    lib = str(Path(a.libtpu).resolve())
    if not Path(lib).is_file():
        print(f"bench_compile: {a.libtpu} missing (run `make libtpu`); benchmark not run")
        return
    src = Path(__file__).resolve().parent / "fixtures"
    py = sys.executable
    print(f"tpuport compile vs JAX topology + lower().compile(), target v5e-8 (v5e:2x4), "
          f"{a.rounds} rounds, medians; libtpu {lib}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in MODELS:
            module = Path(tmp) / f"{name}.mlir"
            jx, tp = [], []
            for _ in range(a.rounds):
                jx.append(run_jax(py, src, lib, name, module))
                tp.append(run_tpuport(a.tpuport, lib, module))
            if jx[0]["arguments"] != tp[0]["arguments"]:
                sys.exit(f"{name}: argument bytes differ: jax {jx[0]['arguments']} "
                         f"tpuport {tp[0]['arguments']}")
            med = lambda rs, k: statistics.median(r[k] for r in rs)  # noqa: E731
            ja, ta = med(jx, "aot_s"), med(tp, "aot_s")
            jw, tw = med(jx, "wall_s"), med(tp, "wall_s")
            print(f"  {name:<9} topology+compile: tpuport {ta * 1e3:7.0f} ms  jax {ja * 1e3:7.0f} ms  "
                  f"ratio {ta / ja:.2f} | process wall: tpuport {tw * 1e3:7.0f} ms  "
                  f"jax {jw * 1e3:7.0f} ms (import jax {med(jx, 'import_s') * 1e3:.0f} ms)  "
                  f"ratio {tw / jw:.2f}")


if __name__ == "__main__":
    main()
