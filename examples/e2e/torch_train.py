"""Train a small MLP on synthetic regression data (a typical single-GPU PyTorch script).

The data come from numpy with a fixed seed, so every PyTorch build sees the same batches.
The last line printed is `final_loss <value>`.
"""

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

STEPS_PER_EPOCH = 50
EPOCHS = 6
BATCH = 64


def make_data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(STEPS_PER_EPOCH * BATCH, 32)).astype(np.float32)
    w = rng.normal(size=(32, 1)).astype(np.float32)
    y = np.tanh(x @ w) + 0.01 * rng.normal(size=(x.shape[0], 1)).astype(np.float32)
    return TensorDataset(torch.from_numpy(x), torch.from_numpy(y))


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.MSELoss()
    loader = DataLoader(make_data(), batch_size=BATCH, shuffle=False)
    loss = None
    for epoch in range(EPOCHS):
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} loss {loss.item():.6f}")
    print(f"final_loss {loss.item():.8f}")


if __name__ == "__main__":
    main()
