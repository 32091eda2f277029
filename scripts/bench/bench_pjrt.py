#!/usr/bin/env python3
"""`make bench` for `tpuport bench`: execute latency through PJRT vs the jitted JAX function.

Same module, same inputs, same XLA:CPU, one device on each side:
  tpuport  `tpuport --format json bench FIXTURE/jit.mlir --input inputs/arg*.npy --iters 1000
           --warmup 50` (xla-cpu-pjrt plugin, 1 CPU device). Its figure is p50 of the per-call
           wall time of one `PJRT_LoadedExecutable_Execute` on device-resident input buffers
           (all inputs non-donated) plus waiting on the device-complete event; output buffers
           stay on the device (no device->host copy) and are freed after the clock stops.
  JAX      the function rebuilt exactly as scripts/testdata/fixtures/jax_models.py builds it (imported
           from there), `jax.jit(fn)` on the fixture's inputs/arg*.npy placed on the device with
           `jax.device_put` once, compiled and warmed with 50 calls; then 1000 calls each timed
           as `fn(*device_arrays).block_until_ready()` (jaxlib's CPU client, forced to 1
           device); figure: p50 of those per-call times. Outputs are not copied to the host.
Both figures include each side's dispatch overhead (Rust + PJRT C API vs Python + jit
dispatch) on top of the XLA:CPU kernel time, which is what the ratio is about.
ROUNDS rounds alternate the two sides (a fresh tpuport process per round, one warm JAX process
throughout); the reported figure per side is the median of the per-round p50s, and "best"
is the ratio of the fastest rounds (less sensitive to other load on a shared machine).

Goals from the PJRT issue: batch 1 at <= 0.7x JAX's time, batch 128 at <= 1.0x.

Leak check: one `tpuport bench mlp_b1 --iters 10000` and the growth of its resident set over
the timed loop (`rss_before_bytes` / `rss_after_bytes`, from /proc/self/statm).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROUNDS = 5
ITERS = 1000
WARMUP = 50
GOALS = {"mlp_b1": 0.7, "mlp_b128": 1.0}
HERE = Path(__file__).resolve().parent

# jax_models sets XLA_FLAGS (8 host devices) before importing jax; this bench wants one device,
# and backends are created lazily, so the flag is rewritten after the import.
sys.path.insert(0, str(HERE.parent / "testdata" / "fixtures"))
import jax_models

os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "").replace(
    "--xla_force_host_platform_device_count=8", "--xla_force_host_platform_device_count=1")
import jax
import numpy as np


def inputs(d: Path) -> list[Path]:
    out = []
    while (p := d / "inputs" / f"arg{len(out)}.npy").is_file():
        out.append(p)
    return out


def run_tpuport(exe: str, d: Path, iters: int, warmup: int) -> dict:
    cmd = [exe, "--format", "json", "bench", str(d / "jit.mlir"), "--iters", str(iters),
           "--warmup", str(warmup)]
    for p in inputs(d):
        cmd += ["--input", str(p)]
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        sys.exit(f"tpuport bench failed ({r.returncode}): {r.stderr.strip()}")
    return json.loads(r.stdout)["results"][0]


class JaxSide:
    def __init__(self, d: Path):
        meta = json.loads((d / "meta.json").read_text())
        fn = getattr(jax_models, meta["function"])
        host = [np.load(p) for p in inputs(d)]
        for a, (shape, _dt) in zip(host, meta["args"]):
            assert list(a.shape) == list(shape), (d, a.shape, shape)
        self.f = jax.jit(fn)
        self.args = [jax.device_put(a) for a in host]
        want = np.load(d / "outputs" / "out0.npy")
        got = np.asarray(self.f(*self.args))
        if not np.allclose(got, want, rtol=1e-4, atol=1e-5):
            sys.exit(f"{d.name}: rebuilt JAX function does not reproduce outputs/out0.npy")

    def p50_us(self, iters: int, warmup: int) -> float:
        f, a = self.f, self.args
        for _ in range(warmup):
            f(*a).block_until_ready()
        times = []
        clock = time.perf_counter_ns
        for _ in range(iters):
            t = clock()
            f(*a).block_until_ready()
            times.append(clock() - t)
        return statistics.median(times) / 1e3


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tpuport", default="./target/release/tpuport")
    ap.add_argument("--fixtures", default=".cache/fixtures")
    ap.add_argument("--rounds", type=int, default=ROUNDS)
    ap.add_argument("--no-encoder", action="store_true", help="skip the encoder block")
    args = ap.parse_args()
    root = Path(args.fixtures) / "jax"
    names = ["mlp_b1", "mlp_b128"] + ([] if args.no_encoder else ["encoder"])
    for n in names:
        if not (root / n / "jit.mlir").is_file():
            sys.exit(f"fixtures missing: run `make fixtures` ({root / n})")
    assert jax.device_count() == 1, f"JAX sees {jax.device_count()} devices, want 1"
    print(f"tpuport bench vs jax.jit on XLA:CPU, 1 device; jax {jax.__version__}, "
          f"{os.cpu_count()} CPU(s); {args.rounds} rounds x {ITERS} iters after {WARMUP} warm-up")
    print(f"{'module':<10} {'tpuport p50':>12} {'jax p50':>10} {'ratio':>7} {'goal':>7}  "
          f"best   rounds (tpuport/jax us)")
    failed = False
    for n in names:
        d = root / n
        side = JaxSide(d)
        tp, jx = [], []
        for _ in range(args.rounds):
            tp.append(run_tpuport(args.tpuport, d, ITERS, WARMUP)["p50_us"])
            jx.append(side.p50_us(ITERS, WARMUP))
        t, j = statistics.median(tp), statistics.median(jx)
        ratio = t / j
        goal = GOALS.get(n)
        verdict = "-" if goal is None else ("met" if ratio <= goal else "MISSED")
        failed |= verdict == "MISSED"
        goal_s = "-" if goal is None else f"<={goal:.1f}x"
        per = " ".join(f"{a:.0f}/{b:.0f}" for a, b in zip(tp, jx))
        best = min(tp) / min(jx)
        print(f"{n:<10} {t:>9.1f} us {j:>7.1f} us {ratio:>6.2f}x {goal_s:>7}  {verdict:<6} "
              f"{best:>5.2f}x  {per}")
        del side
    r = run_tpuport(args.tpuport, root / "mlp_b1", 10_000, WARMUP)
    b, a = r.get("rss_before_bytes"), r.get("rss_after_bytes")
    if b is None or a is None:
        print("leak check: resident memory not reported on this platform")
    else:
        print(f"leak check: mlp_b1, 10000 executions: RSS {b / 2**20:.1f} MiB -> "
              f"{a / 2**20:.1f} MiB ({(a - b) / 1024:+.0f} KiB)")
    if failed:
        print("note: at least one latency goal is not met on this machine")
    return 0


if __name__ == "__main__":
    sys.exit(main())
