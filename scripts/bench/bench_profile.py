"""Benchmark: `tpuport profile` on a ~1 GB Chrome trace vs Python's `json.load` of the same file.

The trace is a real jax.profiler trace made longer. `scripts/testdata/profile/jax_loop.py --slow-loader`
(the workload of the `jax/slow` profile fixture) is run once under jax.profiler; its
`<host>.trace.json.gz` is the template. Every event between the first step's start and the last
step's end is repeated, shifted by one template period per copy, with `step_num` renumbered,
until the file reaches --size-mb. The TSL writer's layout is kept: its header, its metadata
events once, events grouped by thread (each thread's copies in a row, as the TSL writer emits
one line after the other), each event's text as written (17-digit `ts`/`dur`, string args), and
the closing `{}]}`. A gzip copy (`.trace.json.gz`, level 6) is written next to it. Both live in
a git-ignored cache (--cache, default `.cache/bench-profile`) and are reused while the template
workload, this generator and the size are unchanged.

Timed, in the same invocation, each run in a fresh process:
  tpuport   `tpuport --format json profile --fail-on never TRACE` (streams the file)
  baseline  `python -c "import json, sys; json.load(open(sys.argv[1]))" TRACE` (holds it parsed)
            (for the gzip copy: `json.load(gzip.open(...))`)
Wall time is the child's (interpreter / binary start-up included); peak RSS is the child's
`ru_maxrss` (getrusage RUSAGE_CHILDREN of a probe process that ran only that child). Before
timing, the file is read once so both sides start from the page cache, and tpuport's first
report is checked: it must have read every event written and found the template's steps.
Printed: medians (and each run), MB/s = file size (decompressed, 10^6 bytes) / median wall,
the peak RSS (max over runs) and the ratios baseline/tpuport.

Usage: bench_profile.py --tpuport PATH [--size-mb 1024] [--repeat 3] [--baseline-repeat 3]
                        [--no-gzip] [--cache DIR]
"""

import argparse
import gzip
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORKLOAD = ROOT / "scripts" / "testdata" / "profile" / "jax_loop.py"
# Bump when the generator's output changes (the cache key also hashes the workload and the size).
GENERATOR = 2

TS = re.compile(rb'"ts":(-?[0-9.eE+-]+)')
STEP = re.compile(rb'"step_num":"([0-9]+)"')


def template(workdir):
    """Runs the jax.profiler workload; returns (header, metadata events, events) as raw bytes."""
    logdir = workdir / "template"
    shutil.rmtree(logdir, ignore_errors=True)
    r = subprocess.run([sys.executable, str(WORKLOAD), str(logdir), "--slow-loader"], cwd=workdir,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    if r.returncode != 0:
        sys.exit(f"error: {WORKLOAD} failed: {r.stderr.strip()[-2000:]}")
    traces = sorted(logdir.glob("plugins/profile/*/*.trace.json.gz"))
    if len(traces) != 1:
        sys.exit(f"error: expected one trace.json.gz under {logdir}/plugins/profile, found {traces}")
    raw = gzip.decompress(traces[0].read_bytes())
    key = b'"traceEvents":['
    start = raw.index(key) + len(key)
    header = raw[:start]
    dec = json.JSONDecoder()
    text = raw.decode()
    pos = len(header.decode())
    meta, events = [], []
    while True:
        obj, end = dec.raw_decode(text, pos)
        if not obj:  # the TSL writer's closing `{}`
            break
        (meta if obj.get("ph") == "M" else events).append((obj, text[pos:end].encode()))
        pos = end + 1  # the comma
    if text[end:].strip() != "]}":
        sys.exit(f"error: unexpected end of {traces[0]}: {text[end:][:80]!r}")
    return header, [m for _, m in meta], events


def write_trace(path, size_mb, workdir):
    """Writes the long trace; returns a dict describing it."""
    header, meta, events = template(workdir)
    steps = [o for o, _ in events if o.get("args", {}).get("step_num") is not None]
    if len(steps) < 2:
        sys.exit("error: the template trace has fewer than two step annotations")
    first = min(float(o["ts"]) for o in steps)
    last = max(float(o["ts"]) + float(o.get("dur", 0)) for o in steps)
    # One copy: the events inside [first step start, last step end]; the period adds the mean gap
    # between steps so the copies follow each other like more steps of the same loop.
    starts = sorted(float(o["ts"]) for o in steps)
    gap = (starts[-1] - starts[0]) / (len(starts) - 1) - statistics.mean(float(o["dur"]) for o in steps)
    period = last - first + max(gap, 1.0)
    body = [(o, raw) for o, raw in events if first <= float(o["ts"]) <= last]
    nsteps = len(steps)
    # Group by thread in the template's order of first appearance (the TSL writer's line order).
    threads = {}
    for o, raw in body:
        m = TS.search(raw)
        s = STEP.search(raw)
        if s:
            parts = (raw[:m.start(1)], raw[m.end(1):s.start(1)], raw[s.end(1):])
            step = int(s.group(1))
        else:
            parts = (raw[:m.start(1)], raw[m.end(1):])
            step = None
        threads.setdefault((o.get("pid"), o.get("tid")), []).append((parts, float(o["ts"]) - first, step))
    per_copy = sum(len(r) + 1 for _, r in body)
    copies = max(1, -(-size_mb * 1_000_000 // per_copy))
    n_events = len(meta)
    with open(path, "wb") as out:
        out.write(header)
        for m in meta:
            out.write(m + b",")
        for evs in threads.values():
            for k in range(copies):
                base = k * period
                chunk = []
                for parts, rel, step in evs:
                    ts = format(base + rel, ".17g").encode()
                    if step is None:
                        chunk.append(parts[0] + ts + parts[1])
                    else:
                        chunk.append(parts[0] + ts + parts[1] + str(step + k * nsteps).encode() + parts[2])
                out.write(b",".join(chunk) + b",")
                n_events += len(chunk)
        out.write(b"{}]}")
    return {"events": n_events, "steps": nsteps * copies, "copies": copies,
            "template_events": len(body), "template_steps": nsteps, "threads": len(threads)}


def ensure(cache, size_mb):
    """The cached trace and its gzip copy, written when missing or stale."""
    cache.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha256(WORKLOAD.read_bytes() + f"{GENERATOR}/{size_mb}".encode()).hexdigest()[:16]
    trace, gz, meta_path = cache / "host.trace.json", cache / "host.trace.json.gz", cache / "meta.json"
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if meta.get("key") == key and trace.exists() and gz.exists():
            return trace, gz, meta
    meta_path.unlink(missing_ok=True)
    t0 = time.perf_counter()
    meta = write_trace(trace, size_mb, cache)
    t1 = time.perf_counter()
    with open(trace, "rb") as src, gzip.open(gz, "wb", compresslevel=6) as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
    meta.update(key=key, written_s=round(t1 - t0, 1), gzip_s=round(time.perf_counter() - t1, 1))
    meta_path.write_text(json.dumps(meta, indent=1))
    return trace, gz, meta


def measure(cmd, stdout_path=None):
    """Runs cmd in a fresh probe process; returns (wall seconds, peak RSS MiB) of cmd."""
    probe = (
        "import json, resource, subprocess, sys, time\n"
        "out = open(sys.argv[1], 'wb') if sys.argv[1] else subprocess.DEVNULL\n"
        "t0 = time.perf_counter()\n"
        "r = subprocess.run(sys.argv[2:], stdout=out, stderr=subprocess.PIPE)\n"
        "dt = time.perf_counter() - t0\n"
        "if r.returncode != 0: sys.exit(r.stderr.decode()[-2000:] or 'exit %d' % r.returncode)\n"
        "print(json.dumps([dt, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024]))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe, str(stdout_path or ""), *map(str, cmd)],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit(f"error: {' '.join(map(str, cmd))} failed: {out.stderr.strip()}")
    return tuple(json.loads(out.stdout))


def check_report(path, meta, label):
    """tpuport's report must account for every event written and every step."""
    rep = json.loads(Path(path).read_text())
    ins = rep.get("inputs", [])
    # tpuport counts every element of `traceEvents`, the TSL writer's closing `{}` included.
    if len(ins) != 1 or ins[0].get("events") != meta["events"] + 1:
        sys.exit(f"error: {label}: tpuport read {[i.get('events') for i in ins]} elements, "
                 f"the generator wrote {meta['events']} events and the closing {{}}")
    stats = [f for f in rep["findings"] if f["code"] == "PRF501"]
    codes = []
    for f in rep["findings"]:
        loc = f.get("location") or {}
        at = f" at {loc.get('file')}:{loc.get('line')} ({loc.get('function')})" if loc.get("file") else ""
        codes.append(f"{f['code']}{at}")
    return ins[0], codes, stats[0]["message"] if stats else "(no PRF501)"


def run_side(name, cmd, n, mb, stdout_path=None):
    times, rss = [], []
    for _ in range(n):
        dt, peak = measure(cmd, stdout_path)
        times.append(dt)
        rss.append(peak)
    med = statistics.median(times)
    print(f"    {name:<16} median {med:7.2f} s  {mb / med:7.1f} MB/s  peak RSS {max(rss):8.1f} MiB"
          f"  (runs: {', '.join(f'{t:.2f} s' for t in times)}; RSS: {', '.join(f'{r:.0f}' for r in rss)} MiB)",
          flush=True)
    return med, max(rss)


def warm(path):
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpuport", required=True)
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=3, help="tpuport runs per file")
    ap.add_argument("--baseline-repeat", type=int, default=3, help="json.load runs per file (0: none)")
    ap.add_argument("--no-gzip", action="store_true", help="skip the gzip copy")
    ap.add_argument("--cache", type=Path, default=ROOT / ".cache" / "bench-profile")
    a = ap.parse_args()
    tp = str(Path(a.tpuport).resolve())
    t0 = time.perf_counter()
    trace, gz, meta = ensure(a.cache.resolve(), a.size_mb)
    size, gz_size = trace.stat().st_size, gz.stat().st_size
    mb = size / 1e6
    print(f"bench_profile: {trace} {mb:.1f} MB ({gz_size / 1e6:.1f} MB gzip): {meta['copies']} copies of the "
          f"{meta['template_steps']}-step jax.profiler trace of {WORKLOAD.name} --slow-loader "
          f"({meta['template_events']} events, {meta['threads']} threads), {meta['events']} events, "
          f"{meta['steps']} steps (ready in {time.perf_counter() - t0:.1f} s)", flush=True)
    print(f"  tpuport: {tp}; python: {sys.executable} {sys.version.split()[0]}; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    files = [("plain", trace, "import json, sys; json.load(open(sys.argv[1]))")]
    if not a.no_gzip:
        files.append(("gzip", gz, "import gzip, json, sys; json.load(gzip.open(sys.argv[1]))"))
    report = a.cache.resolve() / "report.json"
    for label, path, baseline in files:
        warm(path)
        print(f"  {label}: {path.name} ({path.stat().st_size / 1e6:.1f} MB on disk, {mb:.1f} MB of JSON)", flush=True)
        dt, _ = measure([tp, "--format", "json", "profile", "--fail-on", "never", path], report)
        info, codes, steps = check_report(report, meta, label)
        print(f"    check: tpuport read {info['events']} events ({info['bytes']} bytes) in {dt:.2f} s, "
              f"findings {', '.join(codes)}; {steps}", flush=True)
        tpu = run_side("tpuport profile", [tp, "--format", "json", "profile", "--fail-on", "never", path],
                       a.repeat, mb)
        if a.baseline_repeat < 1:
            continue
        base = run_side("python json.load", [sys.executable, "-c", baseline, path], a.baseline_repeat, mb)
        print(f"    ratio: json.load takes {base[0] / tpu[0]:.1f}x tpuport's time and "
              f"{base[1] / tpu[1]:.0f}x its peak RSS ({base[1]:.0f} MiB vs {tpu[1]:.1f} MiB)", flush=True)
    print(f"  load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
