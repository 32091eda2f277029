#!/usr/bin/env python3
"""Benchmark `tpuport port --write` on large files made of the real corpus scripts.

The files are the corpus scripts (`crates/tpuport-lint/resources/corpus`, real public training
scripts) of one port target, concatenated again and again until the wanted size, each copy
with its top-level functions and classes renamed (`train` -> `train_c7`, by token, so comments,
strings and attributes stay as they are) and the `from __future__` imports moved to the top:
valid Python (checked with `compile`) with the findings of the real scripts in every copy.

* `--to torch-xla`: the 8 PyTorch scripts; `--to jax`: the 5 JAX/Flax scripts.
* Sizes 12.5k, 25k and 50k lines (whole copies, so a little more): median of `--runs` runs
  of `tpuport port --to T --write` on a fresh copy of the file each time, then a second
  `port --write` of the ported file, which must change nothing (its time is printed too).
* Baseline in the same invocation, same file: `ruff check --select ALL --fix --unsafe-fixes`
  (lint and rewrite of one file by a production Python linter); the ratio tpuport / ruff.

Exit 1 when the 50k-line port takes 1 s or more, when the time per line at 50k lines exceeds
2x the one at 12.5k lines (not linear), when a port changes nothing or a second port changes
the file.
"""

import argparse
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tokenize
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "crates" / "tpuport-lint" / "resources" / "corpus"
SIZES = (12_500, 25_000, 50_000)
LIMIT_S = 1.0


def corpus_scripts(target):
    rows = [l.split("\t") for l in (CORPUS / "MANIFEST.tsv").read_text().splitlines()[1:] if l]
    return [CORPUS / r[0] for r in rows if r[6] == target]


def top_level_names(text):
    """Names of the module-level `def` / `class` statements (by token, at column 0)."""
    names = set()
    toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
    for i, t in enumerate(toks[:-1]):
        if t.type == tokenize.NAME and t.string in ("def", "class") and t.start[1] == 0:
            names.add(toks[i + 1].string)
        if t.type == tokenize.NAME and t.string == "async" and t.start[1] == 0:
            if toks[i + 1].string == "def":
                names.add(toks[i + 2].string)
    return names


def renamed(text, suffix):
    """`text` with its top-level def/class names (and their uses) suffixed: not attributes
    (`model.train()`), not keyword arguments (`train=True`)."""
    names = top_level_names(text)
    toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
    lines = text.splitlines(keepends=True)
    edits = []  # (row, col) of names to suffix
    depth = 0
    for i, t in enumerate(toks):
        if t.type == tokenize.OP and t.string in "([{":
            depth += 1
        elif t.type == tokenize.OP and t.string in ")]}":
            depth -= 1
        if t.type != tokenize.NAME or t.string not in names:
            continue
        prev = toks[i - 1] if i else None
        nxt = toks[i + 1] if i + 1 < len(toks) else None
        if prev is not None and prev.type == tokenize.OP and prev.string == ".":
            continue
        if depth > 0 and nxt is not None and nxt.type == tokenize.OP and nxt.string == "=":
            continue
        edits.append(t.end)
    for row, col in sorted(edits, reverse=True):
        line = lines[row - 1]
        lines[row - 1] = line[:col] + suffix + line[col:]
    return "".join(lines)


def build(target, want_lines):
    scripts = [p.read_text() for p in corpus_scripts(target)]
    if not scripts:
        sys.exit(f"error: no corpus script has port target {target} in MANIFEST.tsv")
    future = set()
    bodies = []
    for s in scripts:
        kept = []
        for line in s.splitlines(keepends=True):
            if line.startswith("from __future__ import"):
                future.add(line if line.endswith("\n") else line + "\n")
            else:
                kept.append(line)
        body = "".join(kept)
        bodies.append(body if body.endswith("\n") else body + "\n")
    out = ["".join(sorted(future))]
    n = sum(x.count("\n") for x in out)
    copy = 0
    while n < want_lines:
        for b in bodies:
            part = renamed(b, f"_c{copy}")
            out.append(part)
            n += part.count("\n")
        copy += 1
    text = "".join(out)
    compile(text, f"<bench {target}>", "exec")  # valid Python, or the benchmark is wrong
    return text, copy


def run(cmd):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, check=False)
    dt = time.perf_counter() - t0
    if p.returncode not in (0, 1):
        sys.exit(f"error: {' '.join(map(str, cmd))} exited {p.returncode}: {p.stderr[-2000:]}")
    return dt


def median_port(cmd, path, text, runs):
    times = []
    for _ in range(runs):
        path.write_text(text)
        times.append(run(cmd + [str(path)]))
    return statistics.median(times), path.read_text()


def changed_lines(a, b, tmp):
    """Lines removed plus lines added between `a` and `b` (`diff -U0`)."""
    (tmp / "a.py").write_text(a)
    (tmp / "b.py").write_text(b)
    p = subprocess.run(["diff", "-U0", str(tmp / "a.py"), str(tmp / "b.py")],
                       capture_output=True, text=True, check=False)
    return sum(1 for l in p.stdout.splitlines()
               if l[:1] in "+-" and not l.startswith(("+++", "---")))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tpuport", default=str(REPO / "target/release/tpuport"))
    ap.add_argument("--ruff", default=str(REPO / ".venv/bin/ruff"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--targets", default="torch-xla,jax")
    args = ap.parse_args()
    if not os.access(args.tpuport, os.X_OK):
        sys.exit(f"error: {args.tpuport}: not an executable (run `make build`)")
    ruff = args.ruff if os.access(args.ruff, os.X_OK) else shutil.which("ruff")
    print(f"bench_port: {datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC}, load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} CPUs, "
          f"tpuport {args.tpuport}, median of {args.runs} runs")
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for target in args.targets.split(","):
            per_line = {}
            print(f"== port --to {target}: corpus scripts "
                  f"{', '.join(p.name for p in corpus_scripts(target))}")
            for want in SIZES:
                text, copies = build(target, want)
                n = text.count("\n")
                f = Path(tmp) / "train.py"
                f.write_text(text)
                chk = subprocess.run([args.tpuport, "check", "--preview", "--format", "json",
                                      "--quiet", str(f)], capture_output=True, text=True,
                                     check=False)
                findings = len(json.loads(chk.stdout)["findings"]) if chk.stdout else -1
                cmd = [args.tpuport, "port", "--to", target, "--write"]
                t, out = median_port(cmd, f, text, args.runs)
                changed = changed_lines(text, out, Path(tmp))
                if out == text:
                    print(f"FAIL: port --to {target} changed nothing on {n} lines")
                    ok = False
                again_times = []
                for _ in range(args.runs):
                    again_times.append(run(cmd + [str(f)]))
                    if f.read_text() != out:
                        print(f"FAIL: a second port --to {target} changed the file ({n} lines)")
                        ok = False
                        break
                t2 = statistics.median(again_times)
                per_line[want] = t / n
                line = (f"  {n:>6} lines ({copies} copies, {findings} findings): port --write "
                        f"median {t:.3f} s ({t / n * 1e6:.2f} us/line, {changed} lines changed); "
                        f"second port {t2:.3f} s, unchanged")
                if ruff:
                    r, _ = median_port([ruff, "check", "--select", "ALL", "--fix",
                                        "--unsafe-fixes", "--no-cache", "--isolated", "--quiet",
                                        "--exit-zero"], f, text, args.runs)
                    line += f"; ruff check --fix {r:.3f} s, ratio tpuport/ruff {t / r:.2f}x"
                print(line, flush=True)
                if want == SIZES[-1] and t >= LIMIT_S:
                    print(f"FAIL: port on {n} lines took {t:.3f} s (limit {LIMIT_S} s)")
                    ok = False
            growth = per_line[SIZES[-1]] / per_line[SIZES[0]]
            print(f"  time per line at {SIZES[-1]} / at {SIZES[0]} lines: {growth:.2f} "
                  "(1.0 = linear)")
            if growth > 2.0:
                print("FAIL: port time grows faster than linearly")
                ok = False
    print("bench_port: " + ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
