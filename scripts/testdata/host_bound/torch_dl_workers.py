"""PyTorch loop over a DataLoader with two worker processes (torch.profiler, with_stack); the
main process waits in `_MultiProcessingDataLoaderIter.__next__` when the workers fall behind.

Usage: torch_dl_workers.py TRACE.json.gz --variant host|clean [--steps N]
host:  each sample costs a 2 ms wait plus a JPEG decode: two workers cannot keep up with a
       ~7 ms step.
clean: samples pre-decoded, the workers are far ahead of a ~26 ms step.
"""
import argparse
import io
import time

import numpy as np
import torch
from PIL import Image
from torch.profiler import ProfilerActivity, profile, schedule
from torch.utils.data import DataLoader, Dataset

D = 16 * 16 * 3


class Frames(Dataset):
    def __init__(self, n, slow):
        rng = np.random.default_rng(0)
        self.n, self.slow = n, slow
        self.blobs = []
        for _ in range(8):
            b = io.BytesIO()
            Image.fromarray((rng.random((256, 256, 3)) * 255).astype(np.uint8)).save(b, "JPEG", quality=90)
            self.blobs.append(b.getvalue())
        self.ready = torch.full((D,), 0.5)

    def __len__(self):
        return self.n

    def __getitem__(self, i):  # PLANT: loader
        if not self.slow:
            return self.ready
        time.sleep(0.002)
        img = Image.open(io.BytesIO(self.blobs[i % len(self.blobs)])).convert("RGB").resize((16, 16))
        return torch.from_numpy(np.asarray(img, dtype=np.float32).reshape(-1) / 255.0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--variant", choices=["host", "clean"], required=True)
    ap.add_argument("--steps", type=int, default=30)
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    hidden, slow = {"host": (128, True), "clean": (512, False)}[a.variant]
    model = torch.nn.Sequential(torch.nn.Linear(D, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, D))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    loader = DataLoader(Frames(32 * (a.steps + 4), slow), batch_size=32, num_workers=2,
                        persistent_workers=True, prefetch_factor=4)
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
