"""PyTorch loop fed by a background thread through a bounded queue (a hand-rolled prefetcher),
no DataLoader (torch.profiler, with_stack).

Usage: torch_thread_prefetch.py TRACE.json.gz --variant host|mild|clean [--steps N]
host:  the producer decodes 32 JPEGs per batch, slower than the ~7 ms step: the loop waits
       in `queue.get`.
mild:  the producer is ahead, but the loop adds ~3 ms of NumPy jitter per batch before a
       ~26 ms step (~10 %).
clean: pre-decoded batches, ~26 ms step.
"""
import argparse
import io
import queue
import threading

import numpy as np
import torch
from PIL import Image
from torch.profiler import ProfilerActivity, profile, schedule

D = 16 * 16 * 3


def produce(q, n, decode):  # PLANT: producer
    rng = np.random.default_rng(0)
    blobs = []
    for _ in range(8):
        b = io.BytesIO()
        Image.fromarray((rng.random((256, 256, 3)) * 255).astype(np.uint8)).save(b, "JPEG", quality=90)
        blobs.append(b.getvalue())
    ready = np.full((256, D), 0.5, np.float32)
    for i in range(n):
        if decode:
            rows = [np.asarray(Image.open(io.BytesIO(blobs[(i + k) % 8])).convert("RGB").resize((16, 16)),
                               dtype=np.float32).reshape(-1) / 255.0 for k in range(32)]
            q.put(np.resize(np.stack(rows), (256, D)))
        else:
            q.put(ready)
    q.put(None)


def jitter(x, rng, rounds):  # PLANT: loader
    for _ in range(rounds):
        x = x + rng.standard_normal(x.shape, dtype=np.float32) * 1e-3
        x = np.sort(x, axis=1)
    return x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--variant", choices=["host", "mild", "clean"], required=True)
    ap.add_argument("--steps", type=int, default=30)
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    hidden, decode, rounds = {"host": (128, True, 0), "mild": (512, False, 1), "clean": (512, False, 0)}[a.variant]
    model = torch.nn.Sequential(torch.nn.Linear(D, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, D))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    q = queue.Queue(maxsize=2)
    threading.Thread(target=produce, args=(q, a.steps + 4, decode), daemon=True).start()
    rng = np.random.default_rng(1)
    sched = schedule(wait=1, warmup=2, active=a.steps, repeat=1)
    with profile(activities=[ProfilerActivity.CPU], schedule=sched, with_stack=True,
                 on_trace_ready=lambda p: p.export_chrome_trace(a.out)) as prof:
        while (x := q.get()) is not None:  # PLANT: loop
            x = torch.from_numpy(jitter(x, rng, rounds))
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), x)
            loss.backward()
            opt.step()
            prof.step()


if __name__ == "__main__":
    main()
