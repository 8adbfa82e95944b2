"""A training loop that logs its loss with ``.item()`` inside every step, or does not: the before and
after of the real-capture tests of ``xlaprof diff``.

Run as ``python -m tests.support.read_workload LOGDIR NAME [--read] [--paced]`` (on the CPU XLA
device): it trains the head of a frozen MLP for ``STEPS`` steps, captures steps ``FIRST`` to
``STEPS - 1`` in-process (after the first steps' compiles) as session ``NAME`` of ``LOGDIR``, and
prints ``session <dir>``. With ``--read``, the span ``log_loss`` reads the loss with ``.item()``
before the backward pass, the classic mistake: a blocking read that runs the forward graph early,
and since its activations are not kept, the step's graph runs the forward again. With
``--paced`` it waits for a line on stdin before each step and prints ``stepped`` after it, so a
driver can run two variants in lockstep: on a busy machine, where the CPU device and the host
share the cores with everything else, both variants then see the same load step by step.
"""
from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("PJRT_DEVICE", "CPU")

FIRST, STEPS = 20, 320
WIDTH, BATCH = 512, 128


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logdir")
    parser.add_argument("name")
    parser.add_argument("--read", action="store_true", help="read the loss with .item() in every step")
    parser.add_argument("--paced", action="store_true", help="wait for a line on stdin before each step")
    args = parser.parse_args(argv)

    import torch
    import torch_xla

    import xlaprof

    device = torch_xla.device()
    torch.manual_seed(0)
    backbone = torch.nn.Sequential(*[layer for _ in range(3) for layer in (torch.nn.Linear(WIDTH, WIDTH),
                                                                          torch.nn.ReLU())]).to(device)
    backbone.requires_grad_(False)
    head = torch.nn.Linear(WIDTH, 1).to(device)
    optimizer = torch.optim.SGD(head.parameters(), lr=1e-3)
    losses = []
    with xlaprof.profile(args.logdir, name=args.name, steps=range(FIRST, STEPS)) as run:
        for step in range(STEPS):
            if args.paced:
                sys.stdin.readline()
            with xlaprof.step(step):
                x = torch.randn(BATCH, WIDTH).to(device)
                loss = head(backbone(x)).pow(2).mean()
                if args.read:
                    with xlaprof.trace("log_loss"):
                        losses.append(loss.item())
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
                torch_xla.sync()
            if args.paced:
                print("stepped", flush=True)
    print(f"session {run.path}", flush=True)


if __name__ == "__main__":
    main()
