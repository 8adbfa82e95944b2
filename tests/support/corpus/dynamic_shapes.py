"""Data-dependent shapes: per step, the positive scores' indices (``nonzero``) and values
(``masked_select``) feed a loss, so each step's graph size depends on device values.
"""
from __future__ import annotations


def build(torch, device, args: list[str]):
    import torch_xla

    net = torch.nn.Linear(16, 1).to(device)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
    x = torch.randn(128, 16).to(device)

    def step(i: int) -> None:
        scores = net(x).squeeze(-1)
        picked = torch.nonzero(scores > 0).squeeze(-1)
        positive = torch.masked_select(scores, scores > 0)
        loss = positive.sum() + scores[picked].mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch_xla.sync()
    return step
