"""One peer server for scripts/bench/bench_serve.py: Triton (through nvidia-pytriton) or MLServer,
serving one of bench_serve_models.py's JAX functions under `jax.jit` on CPU.

Run with .venv-peers/bin/python (make venv-peers). Both peers get the same batching knobs
as `tpuport serve`: batches of at most --max-batch rows formed within --delay-us, padded here
to the smallest of the same buckets (each bucket jitted and run once before the server
starts, so nothing compiles on the request path), weights placed on the device once.

  triton    pytriton 0.7.0 (Triton 2.51 core, Python backend). Its backend stub runs from
            .venv-peers/stub (numpy 1.26: pytriton's proxy returns empty outputs under
            numpy 2, see docs/serving-anchors §5.8); this process keeps jax + numpy 2.
  mlserver  MLServer 1.7.1, adaptive batching, inference in the server process
            (parallel_workers 0, faster at low concurrency, measured in §5.8).

Runs until SIGTERM/SIGINT. Prints `ready` on stdout once the model answers.
"""

import argparse
import os
import pathlib
import signal
import sys
import sysconfig

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_serve_models as models  # noqa: E402


class Jitted:
    """The model's function, jitted per bucket, weights on the device; pads and slices rows."""

    def __init__(self, fixtures, model):
        import jax

        self.model = model
        fn, names = models.function(model)
        w = np.load(os.path.join(fixtures, f"{model}_weights.npz"))
        self.w = [jax.device_put(w[k]) for k in names]
        self.row = models.MODELS[model][1]
        self.f = jax.jit(fn)
        self.buckets = models.BUCKETS
        for b in self.buckets:
            np.asarray(self.f(*self.w, np.zeros((b, *self.row), np.float32)))

    def __call__(self, x):
        n = x.shape[0]
        outs = []
        for start in range(0, n, self.buckets[-1]):
            part = x[start:start + self.buckets[-1]]
            k = part.shape[0]
            b = next(b for b in self.buckets if b >= k)
            if b != k:
                pad = np.zeros((b, *self.row), np.float32)
                pad[:k] = part
                part = pad
            outs.append(np.asarray(self.f(*self.w, part))[:k])
        return outs[0] if len(outs) == 1 else np.concatenate(outs)


def triton(a, run):
    from pytriton.decorators import batch
    from pytriton.model_config import DynamicBatcher, ModelConfig, Tensor
    from pytriton.server import triton_server
    from pytriton.triton import Triton, TritonConfig

    stub = pathlib.Path(sys.exec_prefix) / "stub"
    if not (stub / "bin" / "python").exists():
        raise SystemExit(f"{stub}: the Triton stub venv is missing (make venv-peers)")
    triton_server.get_triton_python_backend_python_env = lambda: stub
    # pyenv-built interpreters: the stub must load this libpython, not the system's.
    libdir = sysconfig.get_config_var("LIBDIR")
    os.environ["LD_LIBRARY_PATH"] = ":".join(p for p in (libdir, os.environ.get("LD_LIBRARY_PATH")) if p)

    iname, row, oname = models.MODELS[a.model]

    @batch
    def infer(**inputs):
        return {oname: run(inputs[iname])}

    cfg = TritonConfig(http_address="127.0.0.1", http_port=a.port, grpc_address="127.0.0.1",
                       grpc_port=a.port + 1, metrics_port=a.port + 2, allow_gpu_metrics=False,
                       exit_timeout_secs=5)
    with Triton(config=cfg) as t:
        t.bind(model_name=a.model, infer_func=infer,
               inputs=[Tensor(name=iname, dtype=np.float32, shape=row)],
               outputs=[Tensor(name=oname, dtype=np.float32, shape=(10,))],
               config=ModelConfig(max_batch_size=a.max_batch,
                                  batcher=DynamicBatcher(max_queue_delay_microseconds=a.delay_us)),
               strict=False)
        print("ready", flush=True)
        t.serve()


# MLServer imports its runtime class by dotted path, so it is an attribute of this module,
# built on first access (importing mlserver next to tritonclient.grpc would register the
# `inference` protobuf package twice), and reads the jitted function from MLSERVER_RUN.
MLSERVER_RUN = None
_RUNTIME = None


def __getattr__(name):
    global _RUNTIME
    if name != "MLServerRuntime":
        raise AttributeError(name)
    if _RUNTIME is None:
        from mlserver import MLModel
        from mlserver.codecs import NumpyCodec
        from mlserver.types import InferenceResponse

        class MLServerRuntime(MLModel):
            async def load(self):
                return True

            async def predict(self, payload):
                run = MLSERVER_RUN
                x = NumpyCodec.decode_input(payload.inputs[0]).astype(np.float32, copy=False)
                x = x.reshape((-1, *run.row))
                oname = models.MODELS[run.model][2]
                return InferenceResponse(model_name=self.name,
                                         outputs=[NumpyCodec.encode_output(oname, run(x))])
        _RUNTIME = MLServerRuntime
    return _RUNTIME


def mlserver(a, run):
    import asyncio

    import bench_serve_peers as me
    from mlserver import MLServer
    from mlserver.settings import ModelSettings, Settings

    me.MLSERVER_RUN = run
    settings = Settings(host="127.0.0.1", http_port=a.port, grpc_port=a.port + 1,
                        metrics_port=a.port + 2, parallel_workers=0, debug=False)
    ms = ModelSettings(name=a.model, implementation="bench_serve_peers.MLServerRuntime",
                       max_batch_size=a.max_batch, max_batch_time=a.delay_us / 1e6)
    print("ready", flush=True)
    asyncio.run(MLServer(settings).start([ms]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", choices=["triton", "mlserver"], required=True)
    ap.add_argument("--model", choices=sorted(models.MODELS), required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--port", type=int, required=True, help="HTTP; gRPC and metrics take the next two")
    ap.add_argument("--max-batch", type=int, default=64)
    ap.add_argument("--delay-us", type=int, default=500)
    a = ap.parse_args()
    if a.max_batch != models.BUCKETS[-1]:
        raise SystemExit(f"--max-batch must be the largest bucket, {models.BUCKETS[-1]}")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    run = Jitted(a.fixtures, a.model)
    (triton if a.server == "triton" else mlserver)(a, run)


if __name__ == "__main__":
    main()
