#!/usr/bin/env python3
"""Lint throughput: `tpuport check` (every rule, preview included) against `ruff check --select ALL`.

The corpus is the installed Python sources of `torch` and `transformers` in the project venv:
a few thousand real files, millions of lines. Each tool runs 3 times (no cache); the median wall
time is reported with files, lines and lines/s, then the ratio. tpuport must report no parse
errors on this corpus (all of it is valid Python), so the run fails if it reports any.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

GOAL = 0.5  # tpuport's speed as a fraction of ruff's (issue acceptance)


def corpus(site: Path, packages: list[str]) -> tuple[list[Path], int, int]:
    roots = [site / p for p in packages]
    missing = [str(r) for r in roots if not r.is_dir()]
    if missing:
        sys.exit(f"error: corpus missing: {', '.join(missing)} (run `make venv`)")
    # Both tools lint stubs too.
    files = sorted(p for r in roots for g in ("*.py", "*.pyi") for p in r.rglob(g) if p.is_file())
    lines = 0
    for f in files:
        with open(f, "rb") as fh:
            lines += fh.read().count(b"\n")
    return roots, len(files), lines


def timed(cmd: list[str], out_path: str) -> tuple[float, int]:
    t0 = time.perf_counter()
    with open(out_path, "wb") as out:
        rc = subprocess.run(cmd, stdout=out, stderr=subprocess.DEVNULL, check=False).returncode
    return time.perf_counter() - t0, rc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tpuport", default="./target/release/tpuport")
    ap.add_argument("--ruff", default=str(Path(sys.executable).parent / "ruff"))
    ap.add_argument("--site", default=sysconfig.get_paths()["purelib"])
    ap.add_argument("--packages", default="torch,transformers")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    if not os.access(args.ruff, os.X_OK):
        sys.exit(f"error: {args.ruff}: ruff not installed (run `make venv`)")
    roots, n_files, n_lines = corpus(Path(args.site), args.packages.split(","))
    paths = [str(r) for r in roots]
    tools = {
        "tpuport": [args.tpuport, "check", "--format", "json", "--select", "ALL", "--preview",
                    "--quiet", "--color", "never", *paths],
        # --isolated: no pyproject/ruff.toml found inside the corpus changes what ruff runs.
        "ruff": [args.ruff, "check", "--select", "ALL", "--no-cache", "--exit-zero",
                 "--isolated", "--output-format", "concise", *paths],
    }
    print(f"lint corpus: {args.packages} from {args.site}: {n_files} files, {n_lines} lines")
    med = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, cmd in tools.items():
            out_path = os.path.join(tmp, f"{name}.out")
            times = []
            for _ in range(args.repeat):
                dt, rc = timed(cmd, out_path)
                ok = rc in (0, 1)
                if not ok:
                    sys.exit(f"error: {name} exited with {rc}: {' '.join(cmd[:6])} ...")
                times.append(dt)
            med[name] = statistics.median(times)
            extra = ""
            if name == "tpuport":
                report = json.loads(Path(out_path).read_text())
                errors = report.get("errors", [])
                extra = f", {len(report['findings'])} findings, {len(errors)} errors"
                if errors:
                    for e in errors[:10]:
                        print(f"  tpuport error: {e}")
                    sys.exit(f"error: tpuport reported {len(errors)} errors on valid Python")
            print(f"  {name:8s} {med[name]:7.2f} s (median of {args.repeat})  "
                  f"{n_lines / med[name]:12,.0f} lines/s{extra}")
    ratio = med["ruff"] / med["tpuport"]
    verdict = "meets" if ratio >= GOAL else "MISSES"
    print(f"  tpuport speed / ruff speed = {ratio:.2f}x ({verdict} the >= {GOAL}x goal)")
    return 0 if ratio >= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
