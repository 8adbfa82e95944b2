"""An input-bound loop: torch_xla's ``MpDeviceLoader`` over a ``DataLoader`` whose ``collate_fn`` sleeps
20 ms on the loader's thread (a slow decode), feeding a small MLP; the main thread waits in
``next(batches)`` most of the time. The accepted fixes: more loader workers or a faster collate.
``--workers``: the collate in two DataLoader worker processes (which no stack sampler sees), the
loader thread waiting for them.
"""
from __future__ import annotations

import time

BATCH, FEATURES, SLEEP_S = 16, 64, 0.02


def slow_collate(samples):
    import torch

    time.sleep(SLEEP_S)  # the slow decode the loader's thread waits in
    return torch.stack([s[0] for s in samples]), torch.stack([s[1] for s in samples])


def build(torch, device, args: list[str]):
    import torch_xla
    import torch_xla.distributed.parallel_loader as pl

    data = torch.utils.data.TensorDataset(torch.randn(4096, FEATURES), torch.randint(0, 10, (4096,)))
    workers = dict(num_workers=2, prefetch_factor=1, persistent_workers=True) if "--workers" in args else {}
    loader = torch.utils.data.DataLoader(data, batch_size=BATCH, collate_fn=slow_collate, **workers)
    net = torch.nn.Sequential(torch.nn.Linear(FEATURES, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)).to(device)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
    # Prefetching one batch ahead (the default is 8 on the loader's side): the window's steps wait for
    # the collate, not for a queue filled while the harness set up.
    batches = iter(pl.MpDeviceLoader(loader, device, loader_prefetch_size=1, device_prefetch_size=1))

    def step(i: int) -> None:
        x, y = next(batches)
        loss = torch.nn.functional.cross_entropy(net(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch_xla.sync()
    return step
