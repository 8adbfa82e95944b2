"""An op with no XLA kernel inside ``backward()``: a small conv net upsampling with nearest neighbours,
whose ``upsample_nearest2d_backward`` runs as a CPU fallback on the autograd engine's thread, and a
``loss.item()`` a step. The truth's line for the fallback's reads is ``loss.backward()``.
"""
from __future__ import annotations


def build(torch, device, args: list[str]):
    import torch_xla

    net = torch.nn.Sequential(torch.nn.Conv2d(4, 8, 3, padding=1), torch.nn.Upsample(scale_factor=2, mode="nearest"),
                              torch.nn.Conv2d(8, 4, 3, padding=1)).to(device)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
    x = torch.randn(2, 4, 16, 16).to(device)
    target = torch.randn(2, 4, 32, 32).to(device)

    def step(i: int) -> None:
        loss = torch.nn.functional.mse_loss(net(x), target)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch_xla.sync()
        print(f"loss {loss.item():.4f}", end="\r")
    return step
