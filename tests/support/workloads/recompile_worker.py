"""Real recompiles of real third-party code, captured from step 0: transformers' GPT-2 and a length
made on the device.

Run as ``python -m tests.support.workloads.recompile_worker LOGDIR`` (CPU XLA device). It captures
two sessions of LOGDIR in-process with ``xlaprof.profile(LOGDIR, steps=range(0, STEPS))``, no
spans but the step markers (the last step waits for the device), and prints one JSON line with, per session, its path and the truth the
script itself knows: the lengths it chose per step, and torch_xla's ``CompileTime`` and
``ExecuteTime`` counts over the captured steps.

- ``gpt2``: ``GPT2LMHeadModel`` from a tiny config (random weights, no hub download) trained with
  AdamW, which creates its state at the first step (the first graph has fewer inputs), on
  batches whose sequence length cycles through ``GPT2_LENGTHS`` (the graph's input shape changes):
  ``len(GPT2_LENGTHS) + 1`` compiles.
- ``device_length``: inputs of a fixed shape, but a length ``n`` from ``DEVICE_LENGTHS`` enters
  the graph through tensors made on the device from the Python int (``torch.arange(n, device=d)``
  position ids, ``torch.randn(b, n, d, device=d)`` noise) and a slice ``x[:, :n]``: the entry
  parameters never change, intermediates do.
"""
from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("PJRT_DEVICE", "CPU")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# LLVM's optimizations off (set by main(), in the worker's own process: a test imports this module
# for its constants, and every process that test session started after would have inherited a
# device whose programs run about 25% slower): GPT-2's graphs compile about 3x faster, and the HLO
# (what the recompile explainer reads) is the same.
FAST_COMPILE_XLA_FLAGS = "--xla_backend_optimization_level=0"
FAST_COMPILE_ENV = {"XLA_FLAGS": FAST_COMPILE_XLA_FLAGS}  # a worker's environment variables, compiling fast

STEPS = 6
GPT2_LENGTHS = (40, 16, 24)  # step k trains on GPT2_LENGTHS[k % 3]
DEVICE_LENGTHS = (20, 28, 36)  # step k uses DEVICE_LENGTHS[k % 3]
BATCH, WIDTH, MAX_LENGTH = 2, 32, 64


def counts() -> dict[str, int]:
    import torch_xla.debug.metrics as met

    return {name: int((met.metric_data(name) or [0])[0]) for name in ("CompileTime", "ExecuteTime")}


def captured(logdir: str, name: str, step) -> dict:
    """Run ``step(k)`` for k < STEPS under a step-0 capture; the session and torch_xla's counts. The
    last step waits for the device (as a training script's end does), so the capture, which stops as
    that step ends, holds all of its work: the window of the truth and of the trace are the same."""
    import torch_xla.core.xla_model as xm

    import xlaprof

    before = counts()
    with xlaprof.profile(logdir, name=name, steps=range(0, STEPS)) as run:
        for k in range(STEPS):
            with xlaprof.step(k):
                step(k)
                if k == STEPS - 1:
                    xm.wait_device_ops()
    after = counts()
    return {"path": run.path, **{name: after[name] - before[name] for name in before}}


def gpt2(logdir: str) -> dict:
    import torch
    import torch_xla
    from transformers import GPT2Config, GPT2LMHeadModel

    device = torch_xla.device()
    torch.manual_seed(0)
    config = GPT2Config(n_layer=2, n_head=2, n_embd=64, vocab_size=512, n_positions=128)
    model = GPT2LMHeadModel(config).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    lengths = [GPT2_LENGTHS[k % len(GPT2_LENGTHS)] for k in range(STEPS)]

    def step(k: int) -> None:
        ids = torch.randint(0, config.vocab_size, (BATCH, lengths[k])).to(device)
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch_xla.sync()

    return {**captured(logdir, "gpt2", step), "lengths": lengths}


def device_length(logdir: str) -> dict:
    import torch
    import torch_xla

    device = torch_xla.device()
    torch.manual_seed(0)
    position = torch.nn.Embedding(MAX_LENGTH, WIDTH).to(device)
    layer = torch.nn.Linear(WIDTH, WIDTH).to(device)
    optimizer = torch.optim.SGD([*position.parameters(), *layer.parameters()], lr=1e-3)
    x = torch.randn(BATCH, MAX_LENGTH, WIDTH).to(device)
    torch_xla.sync()
    lengths = [DEVICE_LENGTHS[k % len(DEVICE_LENGTHS)] for k in range(STEPS)]

    def step(k: int) -> None:
        n = lengths[k]
        positions = torch.arange(n, device=device)  # the positions line
        noise = torch.randn(BATCH, n, WIDTH, device=device)  # the noise line
        h = layer(x[:, :n] + position(positions) + noise)
        loss = h.pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch_xla.sync()

    return {**captured(logdir, "device_length", step), "lengths": lengths}


def main(argv: list[str] | None = None) -> None:
    (logdir,) = argv if argv is not None else sys.argv[1:]
    os.environ.setdefault("XLA_FLAGS", FAST_COMPILE_XLA_FLAGS)  # before torch_xla starts its client
    print(json.dumps({"gpt2": gpt2(logdir), "device_length": device_length(logdir)}), flush=True)


if __name__ == "__main__":
    main()
