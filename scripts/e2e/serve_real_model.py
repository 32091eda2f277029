#!/usr/bin/env python3
"""`tpuport serve` on a trained model nobody here made, driven by tritonclient.

The model is the text-direction classifier shipped in the PyPI wheel rapidocr-onnxruntime 1.4.4
(`ch_ppocr_mobile_v2.0_cls_infer.onnx`, exported by paddle2onnx, input `x` [-1,3,?,?], used
at 3x48x192). Steps:

1. `pip download --no-deps` the wheel, extract the .onnx, `tpuport lower` it at buckets
   1/8/32 (`--input-shape x=Bx3x48x192`);
2. onnxruntime (this venv) computes the reference outputs for 48 random inputs;
3. `tpuport serve` (CPU 1) answers tritonclient HTTP binary, HTTP JSON and gRPC, one row, 5 rows
   and 40 rows (split over buckets); every answer is compared with onnxruntime;
4. overload: the tritonclient gRPC asyncio client (CPU 0) keeps N requests in flight for D s
   against a second entry of the model (buckets 1/8, a 64-request queue, a 50 ms deadline); it reports 200s (OK) and 503s
   (UNAVAILABLE), their latencies, and checks the server's counts and
   `tpuport_compiles_after_ready_total`.

Usage: .venv/bin/python scripts/e2e/serve_real_model.py --tpuport target/release/tpuport \\
         --client-python .venv-serve/bin/python [--inflight 512 --seconds 20]
`make test` runs it with `--seconds 0` (answers only), `make bench-serve` with the overload.
Exit 1 when an answer differs or a count disagrees.
"""

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
import zipfile

import numpy as np

WHEEL = "rapidocr-onnxruntime==1.4.4"
MEMBER = "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx"
SHAPE = (3, 48, 192)
DEADLINE_MS = 50

CLIENT = r'''
import asyncio, json, sys, time
import numpy as np
import tritonclient.http as th, tritonclient.grpc as tg, tritonclient.grpc.aio as tga
from tritonclient.utils import InferenceServerException
cfg = json.loads(sys.argv[1])
data = np.load(cfg["inputs"])
x, out = data["x"], cfg["output"]
url = f"127.0.0.1:{cfg['port']}"
answers = {}
def http(rows, binary):
    c = th.InferenceServerClient(url)
    i = th.InferInput("x", list(rows.shape), "FP32"); i.set_data_from_numpy(rows, binary_data=binary)
    o = th.InferRequestedOutput(out, binary_data=binary)
    return c.infer("cls", [i], outputs=[o]).as_numpy(out)
def grpc(rows):
    c = tg.InferenceServerClient(url)
    i = tg.InferInput("x", list(rows.shape), "FP32"); i.set_data_from_numpy(rows)
    return c.infer("cls", [i]).as_numpy(out)
for n in (1, 5, 40):
    rows = x[:n]
    answers[f"http-binary-{n}"] = http(rows, True).tolist()
    answers[f"http-json-{n}"] = http(rows, False).tolist()
    answers[f"grpc-{n}"] = grpc(rows).tolist()
json.dump(answers, open(cfg["answers"], "w"))
if cfg["seconds"] <= 0:
    sys.exit(0)
async def overload():
    c = tga.InferenceServerClient(url)
    one = x[:1]
    lat = {"ok": [], "unavailable": [], "deadline_exceeded": []}
    other = []
    stop = time.monotonic() + cfg["seconds"]
    async def worker():
        while time.monotonic() < stop:
            i = tga.InferInput("x", [1, *one.shape[1:]], "FP32"); i.set_data_from_numpy(one)
            t = time.perf_counter()
            try:
                await c.infer("cls_overload", [i])
                lat["ok"].append(time.perf_counter() - t)
            except InferenceServerException as e:
                kind = str(e.status()).rsplit(".", 1)[-1].lower()
                if kind in lat:
                    lat[kind].append(time.perf_counter() - t)
                else:
                    other.append(str(e))
    t0 = time.monotonic()
    await asyncio.gather(*(worker() for _ in range(cfg["inflight"])))
    el = time.monotonic() - t0
    await c.close()
    q = lambda v, p: float(np.percentile(v, p)) * 1e3 if v else float("nan")
    print(json.dumps({"elapsed_s": el, "ok": len(lat["ok"]), "unavailable": len(lat["unavailable"]),
                      "deadline_exceeded": len(lat["deadline_exceeded"]),
                      "other": other[:5], "n_other": len(other),
                      "ok_p50_ms": q(lat["ok"], 50), "ok_p99_ms": q(lat["ok"], 99), "ok_max_ms": q(lat["ok"], 100),
                      "unavailable_p99_ms": q(lat["unavailable"], 99)}))
asyncio.run(overload())
'''


def hist_quantile(text, name, q, **labels):
    """Upper bound of the bucket holding quantile q of a Prometheus histogram."""
    by_le = {}
    for line in text.splitlines():
        m = re.match(rf'{name}_bucket\{{(.*)le="([^"]+)"\}}\s+(\S+)$', line)
        if m and all(f'{k}="{v}"' in m.group(1) for k, v in labels.items()):
            by_le[float(m.group(2))] = by_le.get(float(m.group(2)), 0.0) + float(m.group(3))
    rows = sorted(by_le.items())
    if not rows or rows[-1][1] == 0:
        return None
    return next(le for le, c in rows if c >= q * rows[-1][1])


def metric(text, name, **labels):
    total = None
    for line in text.splitlines():
        m = re.match(rf"{name}(?:\{{(.*)\}})?\s+(\S+)$", line)
        if m and all(f'{k}="{v}"' in (m.group(1) or "") for k, v in labels.items()):
            total = (total or 0.0) + float(m.group(2))
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpuport", required=True)
    ap.add_argument("--client-python", required=True, help="a Python with tritonclient[all]")
    ap.add_argument("--port", type=int, default=18431)
    ap.add_argument("--inflight", type=int, default=512)
    ap.add_argument("--seconds", type=float, default=20, help="overload duration; 0: answers only")
    ap.add_argument("--cache", default=".cache/serve-real", help="where the downloaded wheel is kept")
    a = ap.parse_args()
    import onnxruntime as ort

    failed = []

    def check(ok, what):
        print(f"  [{'ok' if ok else 'FAIL'}] {what}")
        if not ok:
            failed.append(what)

    tmp = tempfile.mkdtemp(prefix="serve-real-")
    os.makedirs(a.cache, exist_ok=True)
    if not glob.glob(os.path.join(a.cache, "rapidocr_onnxruntime-1.4.4-*.whl")):
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", WHEEL, "-d", a.cache], check=True)
    whl = glob.glob(os.path.join(a.cache, "rapidocr_onnxruntime-1.4.4-*.whl"))[0]
    onnx_path = os.path.join(tmp, "cls.onnx")
    with zipfile.ZipFile(whl) as z, open(onnx_path, "wb") as f:
        f.write(z.read(MEMBER))
    # Two entries over the same lowering: `cls` (buckets 1/8/32, no deadline) for the answers,
    # `cls_overload` (buckets 1/8, queue 64, a deadline) for the overload: a 32-row batch of
    # this model takes 50-90 ms on one core, longer than any useful deadline.
    for name, buckets, extra in (("cls", "1,8,32", ""),
                                 ("cls_overload", "1,8", f"max_queue_size = 64\ndefault_timeout_ms = {DEADLINE_MS}\n")):
        subprocess.run([a.tpuport, "lower", onnx_path, "--batch", buckets, "--input-shape",
                        f"x=Bx{SHAPE[0]}x{SHAPE[1]}x{SHAPE[2]}", "-o", os.path.join(tmp, "repo", name, "lowered"),
                        "-q"], check=True)
        with open(os.path.join(tmp, "repo", name, "config.toml"), "w") as f:
            f.write(f'[model]\nkind = "lowered"\npath = "lowered"\n\n[batching]\nbuckets = [{buckets.replace(",", ", ")}]\n'
                    f"max_queue_delay_us = 500\n{extra}")

    rng = np.random.default_rng(20261206)
    x = rng.uniform(-1, 1, size=(48, *SHAPE)).astype(np.float32)
    sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    out_name = sess.get_outputs()[0].name
    ref = np.concatenate([sess.run(None, {"x": x[i:i + 1]})[0] for i in range(len(x))])
    inputs = os.path.join(tmp, "inputs.npz")
    np.savez(inputs, x=x)

    srv = subprocess.Popen(["taskset", "-c", "1", a.tpuport, "serve", os.path.join(tmp, "repo"), "--port", str(a.port)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{a.port}"
    try:
        for _ in range(600):
            try:
                if urllib.request.urlopen(base + "/v2/health/ready", timeout=1).status == 200:
                    break
            except OSError:
                time.sleep(0.2)
        else:
            sys.exit(f"server not ready: {srv.stderr.read() if srv.poll() is not None else 'timeout'}")
        answers = os.path.join(tmp, "answers.json")
        cfg = {"port": a.port, "inputs": inputs, "output": out_name, "answers": answers,
               "seconds": a.seconds, "inflight": a.inflight}
        print(f"== {WHEEL}: {MEMBER.split('/')[-1]}, buckets 1/8/32, against onnxruntime {ort.__version__}")
        r = subprocess.run(["taskset", "-c", "0", a.client_python, "-c", CLIENT, json.dumps(cfg)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"client failed: {r.stderr[-2000:]}")
        got = json.load(open(answers))
        for key, rows in sorted(got.items()):
            n = int(key.rsplit("-", 1)[1])
            diff = float(np.max(np.abs(np.asarray(rows, np.float32) - ref[:n])))
            same_class = bool((np.argmax(rows, 1) == np.argmax(ref[:n], 1)).all())
            check(diff <= 1e-4 and same_class, f"{key}: max |diff| vs onnxruntime {diff:.2e}, same class for every row")
        if a.seconds > 0:
            o = json.loads(r.stdout.strip().splitlines()[-1])
            text = urllib.request.urlopen(base + "/metrics", timeout=5).read().decode()
            m = "cls_overload"
            s200 = metric(text, "tpuport_requests_total", model=m, protocol="grpc", code="OK") or 0
            s503 = metric(text, "tpuport_requests_total", model=m, protocol="grpc", code="Unavailable") or 0
            s504 = metric(text, "tpuport_requests_total", model=m, protocol="grpc", code="DeadlineExceeded") or 0
            srv_ok_p99 = hist_quantile(text, "tpuport_request_duration_seconds", 0.99, model=m, code="OK")
            reasons = {k: metric(text, "tpuport_rejections_total", model=m, reason=k) or 0
                       for k in ("queue_full", "timeout")}
            print(f"  overload: {a.inflight} gRPC requests in flight for {o['elapsed_s']:.1f} s (tritonclient aio, CPU 0): "
                  f"{o['ok']} OK ({o['ok'] / o['elapsed_s']:.0f}/s), {o['unavailable']} UNAVAILABLE, "
                  f"{o['deadline_exceeded']} DEADLINE_EXCEEDED, {o['n_other']} other")
            print(f"  OK latency p50 {o['ok_p50_ms']:.2f} ms, p99 {o['ok_p99_ms']:.2f} ms, max {o['ok_max_ms']:.2f} ms; "
                  f"UNAVAILABLE p99 {o['unavailable_p99_ms']:.2f} ms; rejections {reasons}; server read-to-answer p99 "
                  f"of the OKs <= {srv_ok_p99 * 1e3 if srv_ok_p99 else float('nan'):.0f} ms (histogram bucket)")
            check(o["unavailable"] > 0, "the server was overloaded (some requests refused)")
            check(o["n_other"] == 0, f"no error other than UNAVAILABLE or DEADLINE_EXCEEDED {o['other']}")
            check(s200 == o["ok"] and s503 == o["unavailable"] and s504 == o["deadline_exceeded"],
                  f"server counts equal the client's (server OK {s200:.0f}, UNAVAILABLE {s503:.0f}, "
                  f"DEADLINE_EXCEEDED {s504:.0f})")
            check(reasons["queue_full"] == s503 and reasons["timeout"] == s504,
                  "every refusal has its reason (queue_full: UNAVAILABLE, timeout: DEADLINE_EXCEEDED)")
            check(srv_ok_p99 is not None and srv_ok_p99 <= 2 * DEADLINE_MS * 1e-3,
                  f"server-side p99 of the OKs within twice the {DEADLINE_MS} ms deadline (histogram bucket)")
            # The client's own figure includes its event loop: one Python process on one core
            # with hundreds of requests in flight queues the answers it has received.
            print(f"  [note] client-side OK p99 {o['ok_p99_ms']:.0f} ms includes the Python client's own queueing")
            check(metric(text, "tpuport_compiles_after_ready_total") == 0, "no compile after ready")
    finally:
        srv.terminate()
        srv.wait(timeout=30)
    print(f"{len(failed)} failed checks")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
