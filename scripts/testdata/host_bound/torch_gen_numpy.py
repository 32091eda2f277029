"""PyTorch loop over a plain Python generator that builds each batch with NumPy (a sort and
matrix inverses), no DataLoader (torch.profiler, with_stack).

Usage: torch_gen_numpy.py TRACE.json.gz --variant host|mild|clean [--steps N]
host:  ~30 ms of NumPy per batch before a ~7 ms step.
mild:  ~3 ms of NumPy per batch before a ~26 ms step (~10 % of the step).
clean: batches precomputed, ~26 ms step.
"""
import argparse

import numpy as np
import torch
from torch.profiler import ProfilerActivity, profile, schedule

D = 768


def churn(n, inverses):  # PLANT: loader
    rng = np.random.default_rng(0)
    pre = rng.standard_normal((256, D), dtype=np.float32)
    for _ in range(n):
        if inverses == 0:
            yield torch.from_numpy(pre)
            continue
        x = np.sort(rng.standard_normal((256, D), dtype=np.float32), axis=1)
        for _ in range(inverses):
            x[:, :256] = np.linalg.inv(x[:, :256] + 16 * np.eye(256, dtype=np.float32))
        yield torch.from_numpy(x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--variant", choices=["host", "mild", "clean"], required=True)
    ap.add_argument("--steps", type=int, default=30)
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    hidden, inverses = {"host": (128, 6), "mild": (512, 1), "clean": (512, 0)}[a.variant]
    model = torch.nn.Sequential(torch.nn.Linear(D, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, D))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    sched = schedule(wait=1, warmup=2, active=a.steps, repeat=1)
    with profile(activities=[ProfilerActivity.CPU], schedule=sched, with_stack=True,
                 on_trace_ready=lambda p: p.export_chrome_trace(a.out)) as prof:
        for x in churn(a.steps + 4, inverses):  # PLANT: loop
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), x)
            loss.backward()
            opt.step()
            prof.step()


if __name__ == "__main__":
    main()
