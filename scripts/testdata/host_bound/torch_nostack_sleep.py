"""PyTorch loop profiled without Python stacks (`with_stack=False`, torch.profiler's default):
a one-letter generator waits before every batch (an I/O stand-in), no DataLoader.

Usage: torch_nostack_sleep.py TRACE.json.gz --variant host|clean [--steps N]
host:  a 35 ms wait per batch, ~7 ms step.
clean: no wait, ~26 ms step.
"""
import argparse
import time

import torch
from torch.profiler import ProfilerActivity, profile, schedule

D = 768


def q(n, wait_s):  # PLANT: loader
    g = torch.Generator().manual_seed(0)
    for _ in range(n):
        if wait_s:
            time.sleep(wait_s)
        yield torch.randn(256, D, generator=g)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--variant", choices=["host", "clean"], required=True)
    ap.add_argument("--steps", type=int, default=30)
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    hidden, wait = {"host": (128, 0.035), "clean": (512, 0.0)}[a.variant]
    model = torch.nn.Sequential(torch.nn.Linear(D, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, D))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    sched = schedule(wait=1, warmup=2, active=a.steps, repeat=1)
    with profile(activities=[ProfilerActivity.CPU], schedule=sched,
                 on_trace_ready=lambda p: p.export_chrome_trace(a.out)) as prof:
        for x in q(a.steps + 4, wait):  # PLANT: loop
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), x)
            loss.backward()
            opt.step()
            prof.step()


if __name__ == "__main__":
    main()
