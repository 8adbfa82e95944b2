"""A logger thread: each step hands its loss to a thread of the user's own through a queue, which
reads it (``loss.item()``) and shows it on a ``tqdm`` progress bar, so that the training thread never
waits for the value. ``--no-reads``: the A/B arm without the reads, the logger given a host tensor
(the bar, the queue and the thread kept).
"""
from __future__ import annotations

import io
import queue
import threading


def build(torch, device, args: list[str]):
    import torch_xla
    from tqdm import tqdm

    net = torch.nn.Sequential(torch.nn.Linear(32, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8)).to(device)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
    x, y = torch.randn(32, 32).to(device), torch.randint(0, 8, (32,)).to(device)
    host_loss = torch.tensor(1.0) if "--no-reads" in args else None
    losses: queue.Queue = queue.Queue()
    bar = tqdm(file=io.StringIO(), mininterval=0)

    def log() -> None:
        while True:
            loss = losses.get()
            bar.set_postfix(loss=f"{loss.item():.4f}")
            bar.update()

    threading.Thread(target=log, name="logger", daemon=True).start()

    def step(i: int) -> None:
        loss = torch.nn.functional.cross_entropy(net(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch_xla.sync()
        losses.put(loss if host_loss is None else host_loss)
    return step
