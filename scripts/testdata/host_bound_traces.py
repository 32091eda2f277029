"""Recorded traces of real training loops for `tpuport profile`'s host-bound finding.

Usage: host_bound_traces.py --out DIR [--only ID ...]

Runs every loop listed in scripts/testdata/host_bound/corpus.json (JAX loops under
jax.profiler, PyTorch loops under torch.profiler, on the CPU) and writes into DIR (run by
`make host-bound-traces`, cached by a hash of this script, the loops, corpus.json and the
framework versions; the tests read $TPUPORT_HOST_BOUND_TRACES):

  <script>.py                 the loops, copied here so the paths the profilers record exist
  <id>/plugins/profile/<run>/<host>.trace.json.gz   a JAX trace (the .xplane.pb is dropped)
  <id>/trace.json.gz          a PyTorch trace (export_chrome_trace)
  manifest.json               corpus.json's traces and split, the `# PLANT:` lines, the versions,
                              each run's wall time and CPU contention

A trace is a recording of how a loop ran, and a loop starved of CPU (make test records these
while other steps build and train on the same two cores) records host gaps that are the
machine's, not the loop's. So each run's contention is measured from the kernel's counters,
independently of the profiler and of the rule under test: the CPU time that processes other
than the loop spent at normal priority while it ran (/proc/stat's user, system, irq, softirq
and steal, less the loop's own /proc/PID/stat time), over the machine's CPU time (niced work,
which make test's builds are, yields to the loop and does not count). A run above
CONTENTION_MAX is recorded again, up to ATTEMPTS times; the least contended run is kept, and
the manifest gives each trace's contention and the limit, so the tests tell a faithful
recording from a starved one.

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

# Largest share of the machine's CPU time that other processes may take at normal priority
# while a loop is recorded, and tries per trace.
CONTENTION_MAX = 0.25
ATTEMPTS = 3
TICK = os.sysconf("SC_CLK_TCK")


def busy_ticks():
    """The machine's CPU ticks at normal priority or in the kernel (not nice, idle, iowait)."""
    f = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    user, _nice, system, _idle, _iowait, irq, softirq, steal = f[:8]
    return user + system + irq + softirq + steal


def own_ticks(pid):
    """pid's CPU ticks, with its reaped children's (None once it is gone)."""
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return sum(int(x) for x in f[11:15])


def run_measured(cmd, env):
    """Runs cmd; returns (exit code, stderr, wall s, contention). The loop's own ticks are
    sampled every 20 ms (the last sample before it exits stands for its total)."""
    import tempfile

    with tempfile.TemporaryFile("w+") as err:
        t0, b0 = time.time(), busy_ticks()
        p = subprocess.Popen(cmd, env=env, stderr=err, text=True)
        own = 0
        while p.poll() is None:
            own = own_ticks(p.pid) or own
            time.sleep(0.02)
        wall, b1 = time.time() - t0, busy_ticks()
        err.seek(0)
        stderr = err.read()
    others = max(0, b1 - b0 - own)
    return p.returncode, stderr, wall, others / (TICK * wall * (os.cpu_count() or 1))


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
    walls, contention = {}, {}
    for tid, t in corpus["traces"].items():
        if a.only and tid not in a.only:
            continue
        d = out / tid
        fw = corpus["scripts"][t["script"]]["framework"]
        best = None
        for attempt in range(ATTEMPTS):
            tmp = out / f".{tid}.try{attempt}"
            if tmp.exists():
                shutil.rmtree(tmp)
            tmp.mkdir()
            target = tmp if fw == "jax" else tmp / "trace.json.gz"
            cmd = [sys.executable, str(out / t["script"]), str(target), "--variant", t["variant"]]
            code, stderr, wall, cont = run_measured(cmd, env)
            if code != 0:
                sys.exit(f"error: {' '.join(cmd)} exited {code}\n{stderr[-2000:]}")
            print(f"  {wall:5.1f} s  {tid}  contention {cont * 100:4.1f} %"
                  f"{'' if cont <= CONTENTION_MAX else ' (over the limit)'}", flush=True)
            if best is None or cont < best[2]:
                if best is not None:
                    shutil.rmtree(best[0])
                best = (tmp, wall, cont)
            else:
                shutil.rmtree(tmp)
            if cont <= CONTENTION_MAX:
                break
            time.sleep(5)
        if d.exists():
            shutil.rmtree(d)
        best[0].rename(d)
        walls[tid], contention[tid] = round(best[1], 1), round(best[2], 4)
        for pb in d.rglob("*.xplane.pb"):
            pb.unlink()
    manifest = {
        "traces": corpus["traces"],
        "scripts": corpus["scripts"],
        "plants": {s: plants(out / s) for s in scripts},
        "versions": versions(["jax", "jaxlib", "torch", "numpy", "pillow"]),
        "wall_s": walls,
        "contention": contention,
        "contention_max": CONTENTION_MAX,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
