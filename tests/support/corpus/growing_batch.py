"""A batch that grows by 8 every 2 steps (a curriculum), with a ``.item()`` a step: a new input shape,
so a recompile, at every growth. The truth's explanation: the batch dimension of the input, 8 more
each time; the accepted fix pads to a few bucket sizes.
"""
from __future__ import annotations


def build(torch, device, args: list[str]):
    import torch_xla

    net = torch.nn.Sequential(torch.nn.Linear(48, 96), torch.nn.ReLU(), torch.nn.Linear(96, 1)).to(device)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01)

    def step(i: int) -> None:
        batch = 32 + 8 * (i // 2)
        x = torch.randn(batch, 48).to(device)
        loss = net(x).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch_xla.sync()
        print(f"batch {batch} loss {loss.item():.4f}", end="\r")
    return step
