"""A ``torch_xla.compile``d step: the whole training step traced once into one graph, with the loss
read every 4th step (the only host wait the user wrote). ``--no-reads``: the A/B arm without the
read, the same print of a host tensor's value.
"""
from __future__ import annotations


def build(torch, device, args: list[str]):
    import torch_xla

    net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 64)).to(device)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
    x = torch.randn(32, 64).to(device)

    def train_step():
        loss = (net(x) - x).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss

    compiled = torch_xla.compile(train_step)
    host_loss = torch.tensor(1.0) if "--no-reads" in args else None

    def step(i: int) -> None:
        loss = compiled()
        if i % 4 == 0:
            print(f"step {i} loss {(loss if host_loss is None else host_loss).item():.4f}", end="\r")
    return step
