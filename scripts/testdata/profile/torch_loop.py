"""A small PyTorch CPU training loop profiled with torch.profiler (fixture workload).

Usage: torch_loop.py (--out TRACE.json | --tb-dir DIR) [--slow-loader] [--item]
--tb-dir writes through tensorboard_trace_handler(use_gzip=True): DIR/<worker>.<ns>.pt.trace.json.gz
"""
import argparse
import time

import torch
from torch.profiler import ProfilerActivity, profile, schedule
from torch.utils.data import DataLoader, Dataset


class Samples(Dataset):
    """One sample per item, slow to produce (decoding stands in as a sleep)."""

    def __init__(self, n):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 256, generator=g)
        self.y = torch.randint(0, 10, (n,), generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):  # PLANT: loader-fn
        time.sleep(0.001)  # PLANT: slow-loader
        return self.x[i], self.y[i]


class Batches(Dataset):
    """Whole batches prepared ahead of time (the loader only hands them out)."""

    def __init__(self, n, batch):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n // batch, batch, 256, generator=g)
        self.y = torch.randint(0, 10, (n // batch, batch), generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--tb-dir")
    ap.add_argument("--slow-loader", action="store_true")
    ap.add_argument("--item", action="store_true")
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(256, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    if a.slow_loader:
        loader = DataLoader(Samples(64 * 12), batch_size=64, drop_last=True)
    else:
        loader = DataLoader(Batches(64 * 12, 64), batch_size=None)
    sched = schedule(wait=1, warmup=1, active=10, repeat=1)
    losses = []
    if a.tb_dir:
        ready = torch.profiler.tensorboard_trace_handler(a.tb_dir, use_gzip=True)
    else:
        def ready(p):
            p.export_chrome_trace(a.out)

    with profile(activities=[ProfilerActivity.CPU], schedule=sched, with_stack=True, on_trace_ready=ready) as prof:
        for x, y in loader:  # PLANT: loader-loop
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            if a.item:
                losses.append(loss.item())  # PLANT: item
            else:
                losses.append(loss.detach())
            prof.step()


if __name__ == "__main__":
    main()
