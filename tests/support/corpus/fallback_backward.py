"""An op with no XLA kernel inside ``backward()``: a small conv net upsampling with nearest neighbours,
whose ``upsample_nearest2d_backward`` runs as a CPU fallback on the autograd engine's thread, and a
``loss.item()`` a step. The truth's line for the fallback's reads is ``loss.backward()``.
``--no-reads``: the A/B arm without the reads, the same upsampling written with ops XLA lowers
(``repeat_interleave``: its backward a sum on the device) and the same print of a host tensor's value.
"""
from __future__ import annotations


def build(torch, device, args: list[str]):
    import torch_xla

    class Repeat2x(torch.nn.Module):  # nearest-neighbour upsampling by 2, lowered by XLA
        def forward(self, x):
            return x.repeat_interleave(2, dim=2).repeat_interleave(2, dim=3)

    on_device = "--no-reads" in args
    upsample = Repeat2x() if on_device else torch.nn.Upsample(scale_factor=2, mode="nearest")
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
