"""A loss logged in the middle of the step: GPT-2 (tiny config, random weights) trained as a language
model, its loss printed with ``loss.item()`` after ``backward()`` and before ``optimizer.step()``, as
many training scripts log. The read syncs the loss alone, so the step's own sync runs the forward
and backward again for the gradients. ``--no-reads``: the A/B arm, the same print of a host float
(the formatting kept, nothing read).
"""
from __future__ import annotations

import io

VOCAB, BATCH, SEQ = 256, 8, 32


def build(torch, device, args: list[str]):
    import torch_xla
    from transformers import GPT2Config, GPT2LMHeadModel

    model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_head=2, n_embd=64, vocab_size=VOCAB, n_positions=64)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, VOCAB, (BATCH, SEQ)).to(device)
    sink, on_host = io.StringIO(), "--no-reads" in args

    def step(i: int) -> None:
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        print(f"step {i} loss {1.0 if on_host else loss.item():.4f}", file=sink)
        optimizer.step()
        optimizer.zero_grad()
        torch_xla.sync()
    return step
