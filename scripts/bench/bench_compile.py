#!/usr/bin/env python3
"""`make bench` for `tpuport compile`: libtpu ahead-of-time compilation for a v5e-8 topology on
this machine (no TPU), through tpuport vs through JAX, on the same StableHLO module.

Per model (the JAX fixtures' functions from scripts/testdata/fixtures/jax_models.py: mlp at batch 128 and
the transformer encoder block) and round:
  jax      a fresh Python process (JAX_PLATFORMS=cpu, TPU_LIBRARY_PATH=libtpu, JAX's persistent
           compilation cache off): import jax, then
           `get_topology_desc("v5e:2x4", chip_config_name="default", chips_per_host_bounds=(2,2,1),
           num_slices=1, wrap=(False,False,False))` (loads and initialises libtpu, builds the
           topology), `jax.jit(f).lower(*ShapeDtypeStructs on one topology device)` (trace and
           lower to StableHLO) and `.compile()`. It writes the lowered module's text, so tpuport
           compiles exactly that module. Figures, timed in the process: topology, lower, compile;
           import time; and the process wall time.
  tpuport  `tpuport compile THAT_MODULE --target v5e-8 --format json --plugin libtpu` (one
           device of the v5e:2x4 topology, as JAX). Figures: `setup_ms + compile_ms` from its
           report (libtpu load, initialisation, topology, then PJRT_Compile; reading the module
           is outside both) and the process wall time.
Ratios are tpuport / jax (below 1: tpuport faster), from medians over --rounds rounds:
  topology+compile  tpuport's setup + compile vs JAX's topology + compile: the like-for-like
                    figure, both starting from the StableHLO module; JAX's trace + lower is
                    printed apart, and `import jax` is excluded (printed apart too);
  process wall      the whole command vs the whole Python process (import jax, trace and lower
                    included): what a user waits for.
Cold or warm: every run is a fresh process on both sides, so libtpu is loaded, initialised and
the topology built every time, and neither side caches compiled programs (tpuport has no cache
for TPU compiles; JAX's is switched off). One uncounted warm-up run per side and model comes
first, so both sides find libtpu (about 500 MB) and Python's files in the OS page cache. The two
sides alternate which goes first in each round. Both load the same libtpu (`make libtpu`) and
report the same per-device argument bytes (checked). The load average is printed before and
after: on a shared machine compare ratios from one invocation only.
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

ROUNDS = 5
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
t2 = time.perf_counter()
sh = NamedSharding(Mesh(topo.devices[:1], ("x",)), P())
specs = [jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=sh) for a in args]
lowered = jax.jit(fn).lower(*specs)
t3 = time.perf_counter()
compiled = lowered.compile()
t4 = time.perf_counter()
open(out, "w").write(lowered.as_text())
mem = compiled.memory_analysis()
print(json.dumps({"topology_s": t2 - t1, "lower_s": t3 - t2, "compile_s": t4 - t3,
                  "aot_s": (t2 - t1) + (t4 - t3), "import_s": t_import - t0,
                  "arguments": mem.argument_size_in_bytes}))
"""


def run_jax(py: str, fixtures_src: Path, lib: str, name: str, out: Path) -> dict:
    env = dict(os.environ, JAX_PLATFORMS="cpu", TPU_LIBRARY_PATH=lib, TPU_SKIP_MDS_QUERY="1",
               TPU_WORKER_HOSTNAMES="localhost", TPU_ACCELERATOR_TYPE="v5litepod-8",
               ALLOW_MULTIPLE_LIBTPU_LOAD="1", TF_CPP_MIN_LOG_LEVEL="1",
               JAX_ENABLE_COMPILATION_CACHE="false")
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
            "setup_s": rep["setup_ms"] / 1e3, "compile_s": rep["compile_ms"] / 1e3,
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
    src = Path(__file__).resolve().parent.parent / "testdata" / "fixtures"
    py = sys.executable
    load = lambda: " ".join(f"{x:.2f}" for x in os.getloadavg())  # noqa: E731
    print(f"tpuport compile vs JAX topology + lower().compile(), target v5e-8 (v5e:2x4, one "
          f"device), fresh process per run, 1 warm-up + {a.rounds} rounds, medians; "
          f"libtpu {lib}; tpuport {a.tpuport}; load average {load()}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in MODELS:
            module = Path(tmp) / f"{name}.mlir"
            run_jax(py, src, lib, name, module)  # warm-up; writes the module
            run_tpuport(a.tpuport, lib, module)
            jx, tp = [], []
            for i in range(a.rounds):
                if i % 2 == 0:
                    jx.append(run_jax(py, src, lib, name, module))
                    tp.append(run_tpuport(a.tpuport, lib, module))
                else:
                    tp.append(run_tpuport(a.tpuport, lib, module))
                    jx.append(run_jax(py, src, lib, name, module))
            if jx[0]["arguments"] != tp[0]["arguments"]:
                sys.exit(f"{name}: argument bytes differ: jax {jx[0]['arguments']} "
                         f"tpuport {tp[0]['arguments']}")
            med = lambda rs, k: statistics.median(r[k] for r in rs)  # noqa: E731
            ja, ta = med(jx, "aot_s"), med(tp, "aot_s")
            jw, tw = med(jx, "wall_s"), med(tp, "wall_s")
            print(f"  {name:<9} topology+compile: tpuport {ta * 1e3:6.0f} ms (setup "
                  f"{med(tp, 'setup_s') * 1e3:.0f} + compile {med(tp, 'compile_s') * 1e3:.0f})  "
                  f"jax {ja * 1e3:6.0f} ms (topology {med(jx, 'topology_s') * 1e3:.0f} + compile "
                  f"{med(jx, 'compile_s') * 1e3:.0f}; trace+lower {med(jx, 'lower_s') * 1e3:.0f} ms "
                  f"not counted)  ratio {ta / ja:.2f}")
            print(f"  {name:<9} process wall:     tpuport {tw * 1e3:6.0f} ms  jax {jw * 1e3:6.0f} ms "
                  f"(import jax {med(jx, 'import_s') * 1e3:.0f} ms included)  ratio {tw / jw:.2f}")
    print(f"load average after: {load()}")


if __name__ == "__main__":
    main()
