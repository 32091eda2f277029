"""A small PyTorch CPU training loop profiled with torch.profiler (fixture workload).

Usage: torch_loop.py OUT.json [--slow-loader] [--item] [--gzip]
"""
import argparse
import time

import torch
from torch.profiler import ProfilerActivity, profile, schedule
from torch.utils.data import DataLoader, Dataset


class Samples(Dataset):
    def __init__(self, n, slow):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 64, generator=g)
        self.y = torch.randint(0, 10, (n,), generator=g)
        self.slow = slow

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        if self.slow:
            time.sleep(0.004)  # PLANT: slow-loader
        return self.x[i], self.y[i]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--slow-loader", action="store_true")
    ap.add_argument("--item", action="store_true")
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(Samples(8 * 16, a.slow_loader), batch_size=8, drop_last=True)
    sched = schedule(wait=1, warmup=1, active=6, repeat=1)
    losses = []
    with profile(activities=[ProfilerActivity.CPU], schedule=sched, with_stack=True,
                 on_trace_ready=lambda p: p.export_chrome_trace(a.out)) as prof:
        for x, y in loader:
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
