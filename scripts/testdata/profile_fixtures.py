"""Real profiler outputs for `tpuport profile`'s tests, made by running small training loops.

Usage: profile_fixtures.py --out DIR --xla-python PATH

Writes into DIR (run by `make profile-fixtures`, cached by a hash of this script, the workloads
under scripts/profile/ and the framework versions):

  torch_loop.py, jax_loop.py, xla_loop.py, jax_recompile.py   the workloads, copied here so the
                                                              paths the profilers record exist
  torch/slow/trace.json        torch.profiler, slow DataLoader + .item() per step (export_chrome_trace)
  torch/fast/*.pt.trace.json.gz  torch.profiler, fast loader, no .item() (tensorboard_trace_handler)
  jax/slow/plugins/profile/<run>/<host>.trace.json.gz   jax.profiler, slow Python generator
  jax/fast/plugins/profile/<run>/…                      jax.profiler, precomputed batches
  xla/dirty/{debug.log,metrics.txt,stderr.txt}  torch_xla, PT_XLA_DEBUG_LEVEL=2: a shape that
                               changes every step, .item() per step, torch.bincount (no lowering),
                               plus trace/plugins/profile/… from torch_xla.debug.profiler
  xla/dirty-full/{debug.log,metrics.txt}        the same with PT_XLA_DEBUG=1 (everything)
  xla/clean/{debug.log,metrics.txt}             torch_xla, PT_XLA_DEBUG_LEVEL=2, static shapes only
  jaxlog/varying.log, jaxlog/fixed.log          JAX_LOG_COMPILES + JAX_EXPLAIN_CACHE_MISSES stderr
  manifest.json                the planted lines (`# PLANT: name` comments) and the versions

"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent / "profile"
WORKLOADS = ["torch_loop.py", "jax_loop.py", "xla_loop.py", "jax_recompile.py"]


def run(cmd, env=None, stdout=None, stderr=None, timeout=300):
    full_env = dict(os.environ)
    full_env.update(env or {})
    t0 = time.time()
    r = subprocess.run(cmd, env=full_env, stdout=stdout, stderr=stderr, timeout=timeout, check=False)
    if r.returncode != 0:
        sys.exit(f"error: {' '.join(map(str, cmd))} exited {r.returncode}")
    print(f"  {time.time() - t0:5.1f} s  {' '.join(map(str, cmd[1:]))}", flush=True)


def plants(path):
    out = {}
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if "# PLANT: " in line:
            out[line.split("# PLANT: ", 1)[1].split()[0]] = i
    return out


def versions(python, names):
    code = f"import json, importlib.metadata as m; print(json.dumps({{n: m.version(n) for n in {names!r}}}))"
    return json.loads(subprocess.check_output([python, "-c", code], text=True))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--xla-python", required=True)
    a = ap.parse_args()
    out = a.out.resolve()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    py = sys.executable
    for w in WORKLOADS:
        shutil.copy(HERE / w, out / w)
    quiet = {"TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONWARNINGS": "ignore"}

    print("torch.profiler", flush=True)
    (out / "torch/slow").mkdir(parents=True)
    run([py, out / "torch_loop.py", "--out", out / "torch/slow/trace.json", "--slow-loader", "--item"], quiet,
        stderr=subprocess.DEVNULL)
    run([py, out / "torch_loop.py", "--tb-dir", out / "torch/fast"], quiet, stderr=subprocess.DEVNULL)

    print("jax.profiler", flush=True)
    run([py, out / "jax_loop.py", out / "jax/slow", "--slow-loader"], quiet, stderr=subprocess.DEVNULL)
    run([py, out / "jax_loop.py", out / "jax/fast"], quiet, stderr=subprocess.DEVNULL)

    print("JAX compile logs", flush=True)
    (out / "jaxlog").mkdir()
    logs = {"JAX_LOG_COMPILES": "1", "JAX_EXPLAIN_CACHE_MISSES": "1", **quiet}
    with open(out / "jaxlog/varying.log", "w") as f:
        run([py, out / "jax_recompile.py", "--varying-shapes"], logs, stderr=f)
    with open(out / "jaxlog/fixed.log", "w") as f:
        run([py, out / "jax_recompile.py"], logs, stderr=f)

    print("torch_xla", flush=True)
    xla_env = {"PJRT_DEVICE": "CPU", **quiet}
    dirty = ["--dynamic-shape", "--item", "--fallback"]
    for name, flags, debug in [
        ("dirty", dirty + ["--trace-dir", str(out / "xla/dirty/trace")], {"PT_XLA_DEBUG_LEVEL": "2"}),
        ("dirty-full", dirty, {"PT_XLA_DEBUG": "1"}),
        ("clean", [], {"PT_XLA_DEBUG_LEVEL": "2"}),
    ]:
        d = out / "xla" / name
        d.mkdir(parents=True)
        env = {**xla_env, **debug, "PT_XLA_DEBUG_FILE": str(d / "debug.log")}
        with open(d / "stderr.txt", "w") as f:
            run([a.xla_python, out / "xla_loop.py", d / "metrics.txt", *flags], env, stderr=f)

    manifest = {
        "plants": {w: plants(out / w) for w in WORKLOADS},
        "versions": {
            **versions(py, ["torch", "jax", "jaxlib"]),
            **{f"xla-venv {k}": v for k, v in versions(a.xla_python, ["torch", "torch_xla"]).items()},
        },
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
