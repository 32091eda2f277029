"""A small torch_xla training loop on the CPU PJRT device (fixture workload).

Usage: xla_loop.py METRICS_OUT [--dynamic-shape] [--item] [--fallback] [--trace-dir DIR]
Run with PT_XLA_DEBUG_LEVEL=2 PT_XLA_DEBUG_FILE=... to get the debug log.
"""
import argparse

import torch
import torch_xla
import torch_xla.debug.metrics as met


def batch_rows(step, dynamic):
    if dynamic:
        return 16 + 8 * (step % 4)  # PLANT: dynamic-shape
    return 16


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("metrics_out")
    ap.add_argument("--dynamic-shape", action="store_true")
    ap.add_argument("--item", action="store_true")
    ap.add_argument("--fallback", action="store_true")
    ap.add_argument("--trace-dir")
    a = ap.parse_args()
    torch.manual_seed(0)
    dev = torch_xla.device()
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    if a.trace_dir:
        import socket

        import torch_xla.debug.profiler as xp

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        server = xp.start_server(port)  # noqa: F841
        xp.start_trace(a.trace_dir)
    total = 0.0
    for step in range(12):
        n = batch_rows(step, a.dynamic_shape)
        x = torch.randn(n, 32).to(dev)
        y = torch.randint(0, 4, (n,)).to(dev)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        if a.fallback:
            counts = torch.bincount(y, minlength=4)  # PLANT: fallback
            loss = loss + counts.float().mean() * 0
        if a.item:
            total += loss.item()  # PLANT: item
        torch_xla.sync()  # PLANT: sync
    if a.trace_dir:
        xp.stop_trace()
    with open(a.metrics_out, "w") as f:
        f.write(met.metrics_report())


if __name__ == "__main__":
    main()
