#!/usr/bin/env python3
"""Benchmark `tpuport port --to torch-xla` on large generated training scripts.

The file repeats a ~50-line PyTorch training block (CUDA device choice, DataLoaders, a train
and an evaluation loop, `.cuda()`, `.item()`, `torch.save`) with fresh names, so every block
gets rewritten. Sizes: 12.5k, 25k and 50k lines; the time per line must stay flat (linear
growth) and the 50k-line port must take under 1 s.

Baseline, same invocation, same file: `ruff check --select ALL --fix --unsafe-fixes` (lint and
rewrite of one file by a production Python linter). Prints medians of 3 runs and the ratio
tpuport / ruff. Exit 1 when the 50k-line port takes 1 s or more, or when the per-line time at
50k lines exceeds 2x the one at 12.5k lines.
"""

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

HEADER = """import os
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader

"""

BLOCK = """
class Net{i}(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(32, 4)

    def forward(self, x):
        return F.log_softmax(self.fc(x), dim=1)


def make_loaders_{i}(train_set, test_set):
    loader_kwargs = {{"batch_size": 64, "num_workers": 2, "pin_memory": True}}
    train_loader = DataLoader(train_set, shuffle=True, **loader_kwargs)
    test_loader = DataLoader(test_set, batch_size=256, num_workers=2)
    return train_loader, test_loader


def train_{i}(model, device, train_loader, optimizer):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()
        if batch_idx % 100 == 0:
            print(batch_idx, loss.item())


def test_{i}(model, device, test_loader):
    model.eval()
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            output = model(data.to(device))
            correct += output.argmax(1).eq(target.to(device)).sum().item()
    return correct


def main_{i}(train_set, test_set):
    if torch.cuda.is_available():
        device = torch.device("cuda")
    else:
        device = torch.device("cpu")
    model = Net{i}().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train_loader, test_loader = make_loaders_{i}(train_set, test_set)
    train_{i}(model, device, train_loader, optimizer)
    test_{i}(model, device, test_loader)
    torch.save(model.state_dict(), "net{i}.pt")
"""


def generate(lines):
    block_lines = BLOCK.count("\n")
    n = max(1, (lines - HEADER.count("\n")) // block_lines)
    return HEADER + "".join(BLOCK.format(i=i) for i in range(n))


def timed(cmd, path, text, runs):
    times = []
    for _ in range(runs):
        path.write_text(text)
        t0 = time.perf_counter()
        p = subprocess.run(cmd + [str(path)], capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - t0)
        if p.returncode not in (0, 1):
            sys.exit(f"error: {' '.join(cmd)} exited {p.returncode}: {p.stderr[-2000:]}")
    return statistics.median(times), path.read_text()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tpuport", default=str(REPO / "target/release/tpuport"))
    ap.add_argument("--ruff", default=str(REPO / ".venv/bin/ruff"))
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    if not Path(args.tpuport).exists():
        sys.exit(f"error: {args.tpuport} missing: run `make build`")
    ruff = args.ruff if Path(args.ruff).exists() else shutil.which("ruff")
    per_line = {}
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for lines in (12_500, 25_000, 50_000):
            text = generate(lines)
            n = text.count("\n")
            f = Path(tmp) / "train.py"
            t, out = timed([args.tpuport, "port", "--to", "torch-xla", "--write"], f, text, args.runs)
            assert "torch_xla.device()" in out and "pl.MpDeviceLoader(" in out, "nothing was ported"
            again = subprocess.run([args.tpuport, "port", "--to", "torch-xla", "--write", str(f)],
                                   capture_output=True, text=True, check=False)
            assert again.returncode in (0, 1) and f.read_text() == out, "second port changed the file"
            per_line[lines] = t / n
            line = f"port --to torch-xla  {n:>6} lines: median {t:.3f} s ({t / n * 1e6:.2f} us/line)"
            if ruff:
                r, _ = timed([ruff, "check", "--select", "ALL", "--fix", "--unsafe-fixes", "--no-cache",
                              "--isolated", "--quiet", "--exit-zero"], f, text, args.runs)
                line += f"; ruff check --fix {r:.3f} s; ratio tpuport/ruff {t / r:.2f}x"
            print(line)
            if lines == 50_000 and t >= 1.0:
                print(f"FAIL: port on {n} lines took {t:.3f} s (limit 1 s)")
                ok = False
    growth = per_line[50_000] / per_line[12_500]
    print(f"time per line at 50k / at 12.5k lines: {growth:.2f} (1.0 = linear)")
    if growth > 2.0:
        print("FAIL: port time grows faster than linearly")
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
