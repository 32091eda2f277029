"""Concurrency-1 latency of `tpuport serve` against `tpuport bench`'s execute time, same bucket.

Starts `tpuport serve` on the serve fixtures' repository (MLP 784-512-10 f32, buckets 1/4/8),
sends N sequential batch-1 requests on one keep-alive connection (binary tensor extension over
HTTP/1.1, then gRPC raw contents through tritonclient), and runs `tpuport bench` on the same
bucket-1 module. Prints medians and the difference server p50 - bench p50 (the issue's goal:
within 200 µs). Optionally pins the server and this client to given CPUs with taskset.
"""

import argparse
import http.client
import json
import os
import re
import signal
import subprocess
import time

import numpy as np
import tritonclient.grpc as tg


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpuport", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("-n", type=int, default=2000)
    ap.add_argument("--server-cpus", default="")
    ap.add_argument("--client-cpus", default="")
    a = ap.parse_args()
    repo = os.path.join(a.fixtures, "repo")
    pin = ["taskset", "-c", a.server_cpus] if a.server_cpus else []
    if a.client_cpus:
        os.sched_setaffinity(0, {int(c) for c in a.client_cpus.split(",")})
    p = subprocess.Popen(pin + [a.tpuport, "serve", repo, "--port", "0", "--model", "mlp"],
                         stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    addr = None
    while True:
        line = p.stderr.readline()
        if not line:
            raise SystemExit("server ended")
        m = re.search(r"listening on (\S+)", line)
        addr = m.group(1) if m else addr
        if line.startswith("ready:"):
            break
    host, port = addr.rsplit(":", 1)
    try:
        x = np.random.default_rng(0).standard_normal((1, 784)).astype(np.float32).tobytes()
        head = json.dumps({"inputs": [{"name": "x", "shape": [1, 784], "datatype": "FP32",
                                        "parameters": {"binary_data_size": len(x)}}],
                           "parameters": {"binary_data_output": True}}).encode()
        body = head + x
        hdr = {"Inference-Header-Content-Length": str(len(head)), "Content-Type": "application/octet-stream"}
        c = http.client.HTTPConnection(host, int(port))
        lat = []
        for i in range(a.n + 100):
            t = time.perf_counter()
            c.request("POST", "/v2/models/mlp/infer", body, hdr)
            r = c.getresponse()
            r.read()
            assert r.status == 200
            if i >= 100:
                lat.append(time.perf_counter() - t)
        g = tg.InferenceServerClient(addr)
        arr = np.frombuffer(x, np.float32).reshape(1, 784)
        glat = []
        for i in range(a.n // 2 + 50):
            inp = tg.InferInput("x", [1, 784], "FP32")
            inp.set_data_from_numpy(arr)
            t = time.perf_counter()
            g.infer("mlp", [inp])
            if i >= 50:
                glat.append(time.perf_counter() - t)
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=60)
    b = subprocess.run(pin + [a.tpuport, "--format", "json", "bench", os.path.join(repo, "mlp", "mlp_b1.mlir"),
                              "--iters", str(a.n)], capture_output=True, text=True, check=True)
    rep = json.loads(b.stdout)
    text = json.dumps(rep)
    m = re.search(r'"p50_us":\s*([0-9.eE+-]+)', text)
    bench_p50 = float(m.group(1)) / 1e6 if m else float("nan")
    us = lambda s: s * 1e6
    print(f"http binary c=1: p50 {us(pct(lat, .5)):.0f} us, p99 {us(pct(lat, .99)):.0f} us ({a.n} requests)")
    print(f"grpc raw    c=1: p50 {us(pct(glat, .5)):.0f} us, p99 {us(pct(glat, .99)):.0f} us ({len(glat)} requests)")
    print(f"tpuport bench mlp_b1 execute: p50 {us(bench_p50):.0f} us")
    print(f"http p50 - bench p50 = {us(pct(lat, .5) - bench_p50):.0f} us (goal <= 200 us)")


if __name__ == "__main__":
    main()
