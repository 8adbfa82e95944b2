"""A training loop that logs its loss with ``.item()`` inside every step, or does not: the before and
after of the real-capture tests of ``xlaprof diff``.

Run as ``python -m tests.support.read_workload LOGDIR NAME [--read]`` (on the CPU XLA device): it
trains a small MLP for ``STEPS`` steps, captures steps ``FIRST`` to ``STEPS - 1`` in-process
(after the first steps' compiles) as session ``NAME`` of ``LOGDIR``, and prints the session
directory. With ``--read``, the span ``log_loss`` reads the loss with ``.item()`` before the
backward pass, the classic mistake: a blocking read that also runs the forward graph early, so
the read costs host work as well as waiting. That keeps its cost clear of the noise of a busy
machine, where the CPU device and the host share the cores.
"""
from __future__ import annotations

import argparse
import os

os.environ.setdefault("PJRT_DEVICE", "CPU")

FIRST, STEPS = 20, 320


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logdir")
    parser.add_argument("name")
    parser.add_argument("--read", action="store_true", help="read the loss with .item() in every step")
    args = parser.parse_args(argv)

    import torch
    import torch_xla

    import xlaprof

    device = torch_xla.device()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 1)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    losses = []
    with xlaprof.profile(args.logdir, name=args.name, steps=range(FIRST, STEPS)) as run:
        for step in range(STEPS):
            with xlaprof.step(step):
                x = torch.randn(64, 256).to(device)
                loss = model(x).pow(2).mean()
                if args.read:
                    with xlaprof.trace("log_loss"):
                        losses.append(loss.item())
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
                torch_xla.sync()
    print(run.path)


if __name__ == "__main__":
    main()
