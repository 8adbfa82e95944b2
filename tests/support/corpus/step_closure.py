"""A step closure: the loss is logged through ``xm.add_step_closure`` (torch_xla's own advice for
logging), which reads it after the step's sync: a read the user did not write as a read.
``--no-reads``: the A/B arm without the read, the same closure given a host tensor. ``--async``: the
closure runs on torch_xla's closure thread (``run_async=True``), which reads while the training
thread traces the next step.
"""
from __future__ import annotations

LOSSES: list[float] = []


def log(loss) -> None:
    LOSSES.append(loss.item())


def build(torch, device, args: list[str]):
    import torch_xla
    import torch_xla.core.xla_model as xm

    net = torch.nn.Sequential(torch.nn.Linear(32, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8)).to(device)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
    x, y = torch.randn(32, 32).to(device), torch.randint(0, 8, (32,)).to(device)
    host_loss = torch.tensor(1.0) if "--no-reads" in args else None
    run_async = "--async" in args

    def step(i: int) -> None:
        loss = torch.nn.functional.cross_entropy(net(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        xm.add_step_closure(log, args=(loss if host_loss is None else host_loss,), run_async=run_async)
        torch_xla.sync()
    return step
