"""Real third-party model code with no spans: transformers' GPT-2 (or a small MLP) training on the
CPU XLA device, with reads of device values at known lines and an optional slow loader.

Run as ``python -m tests.support.workloads.gpt2_worker --port P --watch-stdin [options]``. GPT-2 is
built from a tiny config with random weights (no hub downloads) and trained with AdamW. Per step:
``make_batch`` (sleeping ``--loader-sleep-ms`` like a slow data loader), forward, backward, the
optimizer's step, ``torch_xla.sync()``, then the reads: ``log_loss`` reads the loss (``.item()``,
the line marked ``READ: item``) and, with ``--element-read``, one logit is read right after (a
short read of a value already computed, marked ``READ: element``), each followed by busy Python
(``summarize``). No spans, no debug flags: only ``xlaprof.start_server``. Options:
- ``--model gpt2|mlp``: the model; ``mlp`` is a small Linear stack, so a slow loader dominates.
- ``--no-reads``: the A/B arm without the reads (the loss is kept on the device).
"""
from __future__ import annotations

import os
import time

from collectors.worker_protocol import announce_ready, watch_stdin, worker_parser

os.environ.setdefault("PJRT_DEVICE", "CPU")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

VOCAB, BATCH, SEQ = 512, 4, 32
LOSSES: list[float] = []
LOGITS: list[float] = []


def make_batch(torch, device, sleep_s: float):
    ids = torch.randint(0, VOCAB, (BATCH, SEQ))
    if sleep_s:
        time.sleep(sleep_s)  # LOADER: a slow data loader
    return ids.to(device)


def log_loss(loss) -> None:
    LOSSES.append(loss.item())  # READ: item


def summarize(values: list[float]) -> float:
    return sum(v * v for v in values[-2000:]) / max(len(values), 1)


def build(torch, device, model: str):
    if model == "mlp":
        net = torch.nn.Sequential(torch.nn.Embedding(VOCAB, 64), torch.nn.Linear(64, 256), torch.nn.GELU(),
                                  torch.nn.Linear(256, VOCAB)).to(device)

        def loss_of(ids):
            logits = net(ids)
            return torch.nn.functional.cross_entropy(logits.view(-1, VOCAB), ids.view(-1)), logits
        return net, loss_of
    from transformers import GPT2Config, GPT2LMHeadModel
    net = GPT2LMHeadModel(GPT2Config(n_layer=2, n_head=2, n_embd=64, vocab_size=VOCAB, n_positions=128,
                                     bos_token_id=0, eos_token_id=0)).to(device)

    def loss_of(ids):
        out = net(input_ids=ids, labels=ids)
        return out.loss, out.logits
    return net, loss_of


def train(args) -> None:
    import torch
    import torch_xla

    import xlaprof

    port = xlaprof.start_server(args.port)  # under a launcher, the base port plus the local rank
    device = torch_xla.device()
    torch.manual_seed(0)
    net, loss_of = build(torch, device, args.model)
    optimizer = torch.optim.AdamW(net.parameters(), lr=1e-3)
    step = 0
    while True:
        ids = make_batch(torch, device, args.loader_sleep_ms / 1000)
        loss, logits = loss_of(ids)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch_xla.sync()
        if args.reads:
            log_loss(loss)
            summarize(LOSSES)
            if args.element_read:
                LOGITS.append(float(logits[0, 0, 0]))  # READ: element
                summarize(LOGITS)
        step += 1
        if step == 3:
            announce_ready(port)


def main(argv: list[str] | None = None) -> None:
    parser = worker_parser(__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("gpt2", "mlp"), default="gpt2")
    parser.add_argument("--loader-sleep-ms", type=float, default=0.0)
    parser.add_argument("--no-reads", dest="reads", action="store_false")
    parser.add_argument("--element-read", action="store_true")
    args = parser.parse_args(argv)
    watch_stdin(args)
    train(args)


if __name__ == "__main__":
    main()
