"""PyTorch loop over a DataLoader with num_workers=0 whose Dataset decodes a JPEG per sample
with PIL in `__getitem__` (torch.profiler, with_stack).

Usage: torch_dl_inline.py TRACE.json.gz --variant host|clean [--steps N]
host:  32 decodes per batch (~35 ms) in the main process before a ~7 ms step.
clean: samples decoded once up front, ~26 ms step.
"""
import argparse
import io

import numpy as np
import torch
from PIL import Image
from torch.profiler import ProfilerActivity, profile, schedule
from torch.utils.data import DataLoader, Dataset

D = 16 * 16 * 3


def jpegs(n):
    rng = np.random.default_rng(0)
    out = []
    for _ in range(n):
        b = io.BytesIO()
        Image.fromarray((rng.random((256, 256, 3)) * 255).astype(np.uint8)).save(b, "JPEG", quality=90)
        out.append(b.getvalue())
    return out


class Pictures(Dataset):
    def __init__(self, n, predecode):
        self.blobs, self.n = jpegs(16), n
        self.cache = [self.decode(i) for i in range(16)] if predecode else None

    def __len__(self):
        return self.n

    def decode(self, i):
        img = Image.open(io.BytesIO(self.blobs[i % len(self.blobs)])).convert("RGB").resize((16, 16))
        return torch.from_numpy(np.asarray(img, dtype=np.float32).reshape(-1) / 255.0)

    def __getitem__(self, i):  # PLANT: loader
        return self.cache[i % 16] if self.cache is not None else self.decode(i)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--variant", choices=["host", "clean"], required=True)
    ap.add_argument("--steps", type=int, default=30)
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    hidden, predecode = {"host": (128, False), "clean": (512, True)}[a.variant]
    model = torch.nn.Sequential(torch.nn.Linear(D, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, D))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    loader = DataLoader(Pictures(32 * (a.steps + 4), predecode), batch_size=32, num_workers=0)
    sched = schedule(wait=1, warmup=2, active=a.steps, repeat=1)
    with profile(activities=[ProfilerActivity.CPU], schedule=sched, with_stack=True,
                 on_trace_ready=lambda p: p.export_chrome_trace(a.out)) as prof:
        for x in loader:  # PLANT: loop
            x = x.repeat(8, 1)
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), x)
            loss.backward()
            opt.step()
            prof.step()


if __name__ == "__main__":
    main()
