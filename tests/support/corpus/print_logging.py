"""``print(tensor)`` logging: a small MLP trained with the loss and a weight statistic printed every
step (each print reads the device value), the way a notebook logs. ``--no-reads``: the A/B arm
without the reads, the same prints of host tensors of the same shapes (the formatting kept, the
device values not read); the weight's norm is still computed, kept on the device until the next
step's sync (only the read taken out: the norm's tracing and device work stay).
"""
from __future__ import annotations

import io


def build(torch, device, args: list[str]):
    import torch_xla

    net = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1)).to(device)
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    x, y = torch.randn(64, 32).to(device), torch.randn(64, 1).to(device)
    sink = io.StringIO()
    on_host = "--no-reads" in args
    host_loss, host_norm = torch.tensor(1.0), torch.tensor(1.0)
    kept = {}  # the arm without reads: the last norm, live until the next sync computes it

    def step(i: int) -> None:
        loss = torch.nn.functional.mse_loss(net(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch_xla.sync()
        print("loss", host_loss if on_host else loss, file=sink)
        norm = net[0].weight.norm()
        if on_host:
            kept["norm"] = norm
        print("weight norm", host_norm if on_host else norm, file=sink)
    return step
