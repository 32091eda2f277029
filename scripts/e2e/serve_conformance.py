"""Conformance of `tpuport serve` with the Open Inference Protocol's reference client.

Starts `tpuport serve` on the repository written by scripts/testdata/serve_fixtures.py and drives it with
tritonclient (HTTP and gRPC, sync and asyncio; binary and JSON tensors) over every endpoint and
every datatype. Expectations, written before the first run:
  - health, server and model metadata, model readiness answer as the protocol says;
  - the MLP's outputs match a numpy float64 reference within 1e-5 absolute, and for requests
    whose batch is a compiled bucket they equal `tpuport run` on the same module and inputs
    bit for bit;
  - the dtypes model returns not(x) / x + 1 / x * 2 + 1 exactly for each of the 13 datatypes;
  - unknown models and bad shapes are client errors (4xx / INVALID_ARGUMENT or NOT_FOUND);
  - `tpuport_compiles_after_ready_total` stays 0; SIGTERM ends the server with exit 0.
With --schemathesis, schemathesis then runs against the served OpenAPI document and every
response must be below 500. Prints one `N passed, M failed` line; exits 1 on any failure.
"""

import argparse
import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

import ml_dtypes
import numpy as np
import tritonclient.grpc as tg
import tritonclient.grpc.aio as tga
import tritonclient.http as th
import tritonclient.http.aio as tha
from tritonclient.utils import InferenceServerException

RESULTS = []


def check(name, cond, detail=""):
    RESULTS.append((name, bool(cond)))
    if not cond:
        print(f"FAIL {name}: {detail}", flush=True)


def start(tpuport, repo):
    p = subprocess.Popen([tpuport, "serve", repo, "--port", "0", "--no-cache"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    addr = None
    t0 = time.time()
    while time.time() - t0 < 300:
        line = p.stderr.readline()
        if not line:
            break
        m = re.search(r"listening on (\S+)", line)
        if m:
            addr = m.group(1)
        if line.startswith("ready:"):
            return p, addr
    p.kill()
    raise SystemExit(f"server did not become ready (last line {line!r})")


def mlp_ref(w, x):
    h = np.maximum(x.astype(np.float64) @ w["w1"] + w["b1"], 0)
    o = h @ w["w2"] + w["b2"]
    o = np.exp(o - o.max(-1, keepdims=True))
    return o / o.sum(-1, keepdims=True)


def tpuport_run(tpuport, module, inputs):
    with tempfile.TemporaryDirectory() as d:
        args = []
        for i, a in enumerate(inputs):
            f = os.path.join(d, f"in{i}.npy")
            np.save(f, a)
            args += ["--input", f]
        out = os.path.join(d, "out")
        subprocess.run([tpuport, "run", module, "--out", out, "--no-cache", *args], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        n = len([f for f in os.listdir(out) if f.endswith(".npy")])
        outs = [np.load(os.path.join(out, f"out{i}.npy")) for i in range(n)]
        # numpy has no bfloat16 descr: a 2-byte opaque dtype is bf16 (the only one tpuport writes).
        return [o.view(ml_dtypes.bfloat16) if o.dtype.kind in "VS" and o.dtype.itemsize == 2 else o
                for o in outs]


def dtype_inputs(meta, rows, seed):
    rng = np.random.default_rng(seed)
    xs = []
    for name, np_name, wire in meta["dtypes"]:
        if wire == "BOOL":
            x = rng.integers(0, 2, (rows, 3)).astype(bool)
        elif np_name.startswith(("u", "i")):
            info = np.iinfo(np_name)
            x = rng.integers(info.min, info.max, (rows, 3), dtype=np.dtype(np_name), endpoint=True)
        else:
            x = (rng.integers(-64, 64, (rows, 3)) / 4).astype(np.float32)  # exact in every float type
            x = x.astype(ml_dtypes.bfloat16 if wire == "BF16" else np_name)
        xs.append((name, wire, x))
    return xs


def dtype_expect(wire, x):
    if wire == "BOOL":
        return np.logical_not(x)
    if np.issubdtype(x.dtype, np.integer):
        with np.errstate(over="ignore"):
            return (x + np.array(1, x.dtype)).astype(x.dtype)
    return (x.astype(np.float64) * 2 + 1).astype(x.dtype)


def as_wire(wire, x):
    # tritonclient (r26.06 and later) takes BF16 as ml_dtypes.bfloat16 arrays.
    return x


def same(y, want):
    """Exact equality; BF16 compared through float32 (numpy has no native bfloat16 ops)."""
    if y is None:
        return False
    y = np.asarray(y)
    if want.dtype == ml_dtypes.bfloat16 or y.dtype == ml_dtypes.bfloat16:
        return y.shape == want.shape and np.array_equal(y.astype(np.float32), want.astype(np.float32))
    return y.shape == want.shape and y.dtype == want.dtype and np.array_equal(y, want)


def sync_checks(kind, client_mod, url, w, meta, tpuport, fx):
    c = client_mod.InferenceServerClient(url)
    check(f"{kind} live", c.is_server_live())
    check(f"{kind} ready", c.is_server_ready())
    md = c.get_server_metadata()
    md = md if isinstance(md, dict) else json.loads(tg_json(md))
    check(f"{kind} server metadata", md["name"] == "tpuport" and "binary_tensor_data" in md["extensions"], md)
    for name in ("mlp", "dtypes"):
        check(f"{kind} model {name} ready", c.is_model_ready(name))
        check(f"{kind} model {name} ready v1", c.is_model_ready(name, "1"))
    mm = c.get_model_metadata("mlp")
    mm = mm if isinstance(mm, dict) else json.loads(tg_json(mm))
    check(f"{kind} model metadata", mm["inputs"][0]["name"] == "x" and [int(s) for s in mm["inputs"][0]["shape"]] == [-1, 784]
          and mm["outputs"][0]["name"] == "probs", mm)
    check(f"{kind} unknown model not ready", not safe(lambda: c.is_model_ready("nope")))
    grpc = kind.startswith("grpc")
    for binary in ([True] if grpc else [True, False]):
        tag = f"{kind} {'binary' if binary else 'json'}"
        for rows, seed in ((4, 1), (3, 2), (8, 3), (13, 4), (1, 5)):
            x = np.random.default_rng(seed).standard_normal((rows, 784)).astype(np.float32)
            inp = client_mod.InferInput("x", list(x.shape), "FP32")
            if grpc:
                inp.set_data_from_numpy(x)
                out = [client_mod.InferRequestedOutput("probs")]
            else:
                inp.set_data_from_numpy(x, binary_data=binary)
                out = [client_mod.InferRequestedOutput("probs", binary_data=binary)]
            r = c.infer("mlp", [inp], outputs=out, request_id=f"r{rows}")
            y = r.as_numpy("probs")
            ok = y is not None and y.shape == (rows, 10) and np.abs(y - mlp_ref(w, x)).max() < 1e-5
            check(f"{tag} mlp rows={rows} matches numpy", ok, None if y is None else np.abs(y - mlp_ref(w, x)).max())
            if rows in (1, 4, 8) and binary:
                ref = tpuport_run(tpuport, os.path.join(fx, "repo", "mlp", f"mlp_b{rows}.mlir"),
                                  [w["w1"], w["b1"], w["w2"], w["b2"], x])[0]
                check(f"{tag} mlp rows={rows} equals tpuport run", np.array_equal(y, ref),
                      np.abs(y - ref).max())
        # Default outputs (outputs=None: tritonclient asks for binary on HTTP).
        x = np.ones((2, 784), np.float32)
        inp = client_mod.InferInput("x", [2, 784], "FP32")
        inp.set_data_from_numpy(x) if grpc else inp.set_data_from_numpy(x, binary_data=binary)
        r = c.infer("mlp", [inp])
        check(f"{tag} default outputs", np.abs(r.as_numpy("probs") - mlp_ref(w, x)).max() < 1e-5)
        # Every datatype, at a bucket size (4) and a padded one (3).
        for rows in (4, 3):
            xs = dtype_inputs(meta, rows, rows)
            ins = []
            for name, wire, x in xs:
                i = client_mod.InferInput(name, [rows, 3], wire)
                if grpc:
                    i.set_data_from_numpy(as_wire(wire, x))
                else:
                    # BF16 must be binary over HTTP (the client says so); the rest follow `binary`.
                    i.set_data_from_numpy(as_wire(wire, x), binary_data=binary or wire == "BF16")
                ins.append(i)
            outs = [client_mod.InferRequestedOutput(f"out_{n}") if grpc else
                    client_mod.InferRequestedOutput(f"out_{n}", binary_data=binary or wire == "BF16")
                    for n, wire, _ in xs]
            r = c.infer("dtypes", ins, outputs=outs)
            for name, wire, x in xs:
                y = r.as_numpy(f"out_{name}")
                want = dtype_expect(wire, x)
                check(f"{tag} {wire} rows={rows}", same(y, want), f"{y!r} vs {want!r}")
            if rows == 4 and binary:
                ref = tpuport_run(tpuport, os.path.join(fx, "repo", "dtypes", "dtypes_b4.mlir"),
                                  [x for _, _, x in xs])
                for (name, wire, x), rr in zip(xs, ref):
                    y = r.as_numpy(f"out_{name}")
                    check(f"{tag} {wire} equals tpuport run", same(y, rr), f"{y!r} vs {rr!r}")
    # Client errors.
    try:
        inp = client_mod.InferInput("x", [1, 783], "FP32")
        inp.set_data_from_numpy(np.zeros((1, 783), np.float32))
        c.infer("mlp", [inp])
        check(f"{kind} bad shape rejected", False, "accepted")
    except InferenceServerException as e:
        st = str(e.status())
        check(f"{kind} bad shape is a client error", st in ("400", "StatusCode.INVALID_ARGUMENT"), st)
    try:
        inp = client_mod.InferInput("x", [1, 784], "FP32")
        inp.set_data_from_numpy(np.zeros((1, 784), np.float32))
        c.infer("nope", [inp])
        check(f"{kind} unknown model rejected", False, "accepted")
    except InferenceServerException as e:
        st = str(e.status())
        check(f"{kind} unknown model is not found", st in ("404", "StatusCode.NOT_FOUND"), st)
    c.close()


def tg_json(msg):
    from google.protobuf.json_format import MessageToJson
    return MessageToJson(msg, preserving_proto_field_name=True)


def safe(f):
    try:
        return f()
    except InferenceServerException:
        return False


async def aio_checks(kind, mod, url, w):
    c = mod.InferenceServerClient(url)
    check(f"{kind} live", await c.is_server_live())
    check(f"{kind} ready", await c.is_server_ready())
    check(f"{kind} model ready", await c.is_model_ready("mlp"))
    md = await c.get_model_metadata("mlp")
    md = md if isinstance(md, dict) else json.loads(tg_json(md))
    check(f"{kind} model metadata", md["name"] == "mlp", md)

    async def one(i):
        rows = 1 + i % 6
        x = np.random.default_rng(100 + i).standard_normal((rows, 784)).astype(np.float32)
        inp = mod.InferInput("x", [rows, 784], "FP32")
        inp.set_data_from_numpy(x)
        r = await c.infer("mlp", [inp])
        return np.abs(r.as_numpy("probs") - mlp_ref(w, x)).max() < 1e-5

    oks = await asyncio.gather(*[one(i) for i in range(48)])
    check(f"{kind} 48 concurrent requests match numpy", all(oks), oks.count(False))
    await c.close()


def scrape(http_url):
    return urllib.request.urlopen(f"http://{http_url}/metrics", timeout=10).read().decode()


def metric(text, series):
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.split()[-1])
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpuport", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--schemathesis", action="store_true")
    a = ap.parse_args()
    fx = a.fixtures
    w = dict(np.load(os.path.join(fx, "mlp_weights.npz")))
    meta = json.load(open(os.path.join(fx, "meta.json")))
    proc, addr = start(a.tpuport, os.path.join(fx, "repo"))
    try:
        sync_checks("http", th, addr, w, meta, a.tpuport, fx)
        sync_checks("grpc", tg, addr, w, meta, a.tpuport, fx)
        asyncio.run(aio_checks("http.aio", tha, addr, w))
        asyncio.run(aio_checks("grpc.aio", tga, addr, w))
        if a.schemathesis:
            # Twice: names as generated (mostly unknown models), then pinned to the MLP so the
            # infer path gets the generated bodies.
            with tempfile.TemporaryDirectory() as d:
                cfg = os.path.join(d, "schemathesis.toml")
                with open(cfg, "w") as f:
                    f.write('[parameters]\n"path.name" = "mlp"\n"path.version" = "1"\n')
                for label, extra in (("any name", []), ("model mlp", ["--config-file", cfg])):
                    exe = os.path.join(os.path.dirname(sys.executable), "schemathesis")
                    r = subprocess.run([exe, *extra, "run", f"http://{addr}/openapi.json",
                                        "--checks", "not_a_server_error", "-n", "40", "-w", "1",
                                        "--no-color"], capture_output=True, text=True, timeout=900, cwd=d)
                    cases = [l.strip() for l in r.stdout.splitlines() if "generated" in l]
                    print(f"schemathesis ({label}): {cases[-1] if cases else '?'}", flush=True)
                    check(f"schemathesis ({label}): no 5xx", r.returncode == 0,
                          r.stdout[-3000:] + r.stderr[-1000:])
        text = scrape(addr)
        check("no compile after ready", metric(text, "tpuport_compiles_after_ready_total") == 0.0)
        check("no 5xx counted", 'code="500"' not in text and 'code="Internal"' not in text)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = None
    check("SIGTERM exits 0", rc == 0, rc)
    failed = sum(1 for _, ok in RESULTS if not ok)
    print(f"{len(RESULTS) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
