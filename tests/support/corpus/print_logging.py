"""``print(tensor)`` logging: a small MLP trained with the loss and a weight statistic printed every
step (each print reads the device value), the way a notebook logs.
"""
from __future__ import annotations

import io


def build(torch, device, args: list[str]):
    import torch_xla

    net = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1)).to(device)
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    x, y = torch.randn(64, 32).to(device), torch.randn(64, 1).to(device)
    sink = io.StringIO()

    def step(i: int) -> None:
        loss = torch.nn.functional.mse_loss(net(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch_xla.sync()
        print("loss", loss, file=sink)
        print("weight norm", net[0].weight.norm(), file=sink)
    return step
