"""Benchmark: `tpuport profile` on a large synthetic Chrome trace vs Python's `json.load`.

Writes a TSL-style trace (the layout jax.profiler writes: process/thread metadata, a host step
annotation per step, XLA ops with `hlo_op` args on a device line, Python-tracer events) of about
--size-mb MB into a temporary folder, then times, in the same invocation:
  tpuport   `tpuport --format json profile --fail-on never TRACE` (streams the file)
  baseline  `python -c "json.load(open(TRACE))"` (holds the parsed file)
Each is run --repeat times in its own process; the medians, MB/s, peak RSS of each process
(getrusage of the child) and the ratio baseline/tpuport are printed. The trace is deleted after.

Usage: bench_profile.py --tpuport PATH [--size-mb 1024] [--repeat 3]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def write_trace(path, size_mb):
    target = size_mb * 1_000_000
    with open(path, "w") as out:
        out.write('{"displayTimeUnit":"ns","metadata":{"highres-ticks":true},"traceEvents":[')
        out.write('{"ph":"M","pid":1,"name":"process_name","args":{"name":"/device:TPU:0"}},')
        out.write('{"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"XLA Ops"}},')
        out.write('{"ph":"M","pid":3,"name":"process_name","args":{"name":"/host:CPU"}},')
        out.write('{"ph":"M","pid":3,"tid":4,"name":"thread_name","args":{"name":"python"}},')
        written, step, t = 0, 0, 0.0
        while written < target:
            ev = [f'{{"ph":"X","pid":3,"tid":4,"ts":{t:.3f},"dur":900.0,"name":"train","args":{{"step_num":"{step}"}}}},']
            ev.append(f'{{"ph":"X","pid":3,"tid":4,"ts":{t + 905.0:.3f},"dur":80.0,"name":"$train.py:41 next_batch"}},')
            for i in range(200):
                ev.append(
                    f'{{"ph":"X","pid":1,"tid":2,"ts":{t + 10.0 + i * 4.4:.3f},"dur":4.0,"name":"fusion.{i}",'
                    f'"args":{{"hlo_op":"fusion.{i}","hlo_module":"jit_train_step","program_id":"17"}}}},'
                )
            chunk = "".join(ev)
            out.write(chunk)
            written += len(chunk)
            step += 1
            t += 1000.0
        out.write("{}]}")
    return os.path.getsize(path), step


def measure(cmd):
    """Runs cmd in a fresh process; returns (seconds, peak RSS MiB of that process)."""
    probe = (
        "import resource, subprocess, sys, time, json\n"
        "t0 = time.perf_counter()\n"
        "r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n"
        "dt = time.perf_counter() - t0\n"
        "if r.returncode != 0: sys.exit(r.stderr.decode()[-2000:] or 'exit %d' % r.returncode)\n"
        "print(json.dumps([dt, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024]))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe, *cmd], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit(f"error: {' '.join(cmd)} failed: {out.stderr.strip()}")
    return tuple(json.loads(out.stdout))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpuport", required=True)
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tpuport-bench-profile-") as d:
        path = os.path.join(d, "big.trace.json")
        t0 = time.perf_counter()
        size, steps = write_trace(path, a.size_mb)
        mb = size / 1e6
        print(f"bench_profile: synthetic TSL trace {mb:.0f} MB, {steps} steps x 202 events (written in {time.perf_counter() - t0:.1f} s)")
        runs = {
            "tpuport profile": [a.tpuport, "--format", "json", "profile", "--fail-on", "never", path],
            "python json.load": [sys.executable, "-c", "import json, sys; json.load(open(sys.argv[1]))", path],
        }
        res = {}
        for name, cmd in runs.items():
            times, rss = [], []
            for _ in range(a.repeat):
                dt, peak = measure(cmd)
                times.append(dt)
                rss.append(peak)
            res[name] = (statistics.median(times), max(rss))
            print(f"  {name:<17} median {res[name][0]:7.2f} s  {mb / res[name][0]:7.1f} MB/s  peak RSS {res[name][1]:8.1f} MiB  (runs: {', '.join(f'{t:.2f}' for t in times)})")
        ratio = res["python json.load"][0] / res["tpuport profile"][0]
        print(f"  ratio (json.load time / tpuport time): {ratio:.2f}x; peak RSS tpuport {res['tpuport profile'][1]:.0f} MiB vs json.load {res['python json.load'][1]:.0f} MiB")


if __name__ == "__main__":
    main()
