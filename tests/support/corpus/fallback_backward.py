"""An op with no XLA kernel inside ``backward()``: a small conv net upsampling with nearest neighbours,
whose ``upsample_nearest2d_backward`` runs as a CPU fallback on the autograd engine's thread, and a
``loss.item()`` a step. The truth's line for the fallback's reads is ``loss.backward()``.
``--no-reads``: the A/B arm without the reads: the same upsampling (the same forward op), its backward
written with ops XLA lowers (each 2x2 block's gradients summed on the device), and the same print of a
host tensor's value. Only what the fallback does differs: the graph is not cut, nothing is read.
"""
from __future__ import annotations


def build(torch, device, args: list[str]):
    import torch_xla

    class LoweredBackward(torch.autograd.Function):  # nearest-neighbour upsampling by 2, backward on the device
        @staticmethod
        def forward(ctx, x):
            return torch.nn.functional.interpolate(x, scale_factor=2, mode="nearest")

        @staticmethod
        def backward(ctx, grad):
            n, c, h, w = grad.shape
            return grad.reshape(n, c, h // 2, 2, w // 2, 2).sum((3, 5))

    class Upsample2x(torch.nn.Module):
        def forward(self, x):
            return LoweredBackward.apply(x)

    on_device = "--no-reads" in args
    upsample = Upsample2x() if on_device else torch.nn.Upsample(scale_factor=2, mode="nearest")
    net = torch.nn.Sequential(torch.nn.Conv2d(4, 8, 3, padding=1), upsample, torch.nn.Conv2d(8, 4, 3, padding=1)).to(device)
    host_loss = torch.tensor(1.0) if on_device else None
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
    x = torch.randn(2, 4, 16, 16).to(device)
    target = torch.randn(2, 4, 32, 32).to(device)

    def step(i: int) -> None:
        loss = torch.nn.functional.mse_loss(net(x), target)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch_xla.sync()
        print(f"loss {(loss if host_loss is None else host_loss).item():.4f}", end="\r")
    return step
