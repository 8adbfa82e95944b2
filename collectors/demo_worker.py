"""The demo workload: a small training loop on the CPU XLA device with two classic mistakes.

Run as ``python -m collectors.demo_worker --port P`` (``xlaprof demo`` does). It starts the
profiler server, prints ``ready <port>`` on stdout once warmed up, and trains until it is
stopped, ``--seconds`` pass, or its stdin closes. The mistakes, each in its own span:
- ``log_loss``: ``loss.item()`` every step, a blocking read: the host waits for the device to
  finish the step before it can trace the next one, so the device idles while it does;
- ``make_batch``: a sequence length that changes every ``--reshape-every`` steps (through
  ``DISTINCT_LENGTHS`` lengths, then again: memory stays bounded in a long run), so those steps
  trace a new graph shape and torch_xla recompiles.
With ``--fallback-every N``, a third: ``robust_stats`` takes a ``torch.median``, which has no XLA
lowering and runs on the CPU (an ``aten::`` fallback with its transfers).
"""
from __future__ import annotations

import os
import time

from collectors.worker_protocol import announce_ready, watch_stdin, worker_parser

os.environ.setdefault("PJRT_DEVICE", "CPU")


RESHAPE_EVERY = 5  # steps between two sequence lengths (without --fixed-shapes)
WIDTH = 1024  # hidden units: wide enough that a step keeps the device busy for milliseconds
DISTINCT_LENGTHS = 64  # lengths 16..79: after 64 * RESHAPE_EVERY steps the compiled graphs are reused
BATCH = 64


def build_model(torch, width: int = WIDTH):
    # With the device busy for milliseconds per step, the read's wait costs visibly.
    return torch.nn.Sequential(torch.nn.Linear(32, width), torch.nn.ReLU(), torch.nn.Linear(width, 1))


def demo_step(fixed_shapes: bool = False, read_every: int = 1, fallback_every: int = 0,
              reshape_every: int = RESHAPE_EVERY, width: int = WIDTH, batch: int = BATCH):
    """The demo's training step, on a fresh model on the XLA device: ``run(step)`` trains one step."""
    import torch
    import torch_xla

    import xlaprof

    device = torch_xla.device()
    torch.manual_seed(0)
    model = build_model(torch, width).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    losses: list[float] = []

    @xlaprof.trace("make_batch")
    def make_batch(step: int):
        # mistake 2: a new shape now and then
        length = 16 if fixed_shapes else 16 + (step // reshape_every) % DISTINCT_LENGTHS
        x = torch.randn(batch, length, 32).to(device)
        return x, x.mean(dim=(1, 2)).unsqueeze(1)

    def run(step: int) -> None:
        with xlaprof.step(step):
            x, y = make_batch(step)
            with xlaprof.trace("forward"):
                prediction = model(x).mean(dim=1)
                loss = torch.nn.functional.mse_loss(prediction, y)
                loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            torch_xla.sync()
            if fallback_every and step % fallback_every == 0:
                with xlaprof.trace("robust_stats"):
                    spread = x.median()  # noqa: F841 - mistake 3: no XLA lowering, runs on the CPU
                    torch_xla.sync()
            if read_every and step % read_every == 0:
                with xlaprof.trace("log_loss"):
                    losses.append(loss.item())  # mistake 1: a device->host read every step

    return run


def train(port: int, seconds: float, fixed_shapes: bool, read_every: int, fallback_every: int,
          reshape_every: int, width: int, batch: int) -> None:
    import xlaprof

    port = xlaprof.start_server(port)
    run = demo_step(fixed_shapes, read_every, fallback_every, reshape_every, width, batch)
    deadline = time.monotonic() + seconds
    step = 0
    while time.monotonic() < deadline:
        run(step)
        step += 1
        if step == 3:
            announce_ready(port)


def main(argv: list[str] | None = None) -> None:
    parser = worker_parser(__doc__.splitlines()[0], default_port=9012)
    parser.add_argument("--seconds", type=float, default=600.0, help="stop after this long")
    parser.add_argument("--fixed-shapes", action="store_true", help="fix mistake 2 (for comparisons)")
    parser.add_argument("--reshape-every", type=int, default=RESHAPE_EVERY, help="steps between two shapes")
    parser.add_argument("--width", type=int, default=WIDTH, help="the model's hidden units")
    parser.add_argument("--batch", type=int, default=BATCH, help="sequences per batch")
    parser.add_argument("--read-every", type=int, default=1, help="read the loss every N steps; 0: never")
    parser.add_argument("--fallback-every", type=int, default=0,
                        help="take a median (a CPU fallback) every N steps; 0: never")
    args = parser.parse_args(argv)
    watch_stdin(args)
    train(args.port, args.seconds, args.fixed_shapes, args.read_every, args.fallback_every,
          max(1, args.reshape_every), max(1, args.width), max(1, args.batch))


if __name__ == "__main__":
    main()
