"""Mixed precision as on a GPU: torch's ``autocast`` to bfloat16 and ``torch.amp.GradScaler("xla")``
around a BERT classifier (tiny config, random weights). The scaler's ``step`` reads whether the
gradients overflowed (an ``.item()`` inside torch's ``grad_scaler.py``) every step: a read the user
did not write, at their ``scaler.step(optimizer)`` line. ``--no-reads``: the A/B arm, the scaler
disabled (the fix for bfloat16, whose range needs no loss scaling): no read, and no unscaling.
"""
from __future__ import annotations

from tests.support.corpus.tiny_models import bert_classifier

BATCH, SEQ, VOCAB = 8, 24, 300


def build(torch, device, args: list[str]):
    import torch_xla

    model = bert_classifier(VOCAB, device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler("xla", enabled="--no-reads" not in args)
    ids, labels = torch.randint(0, VOCAB, (BATCH, SEQ)).to(device), torch.randint(0, 3, (BATCH,)).to(device)

    def step(i: int) -> None:
        with torch.autocast("xla", dtype=torch.bfloat16):
            loss = model(input_ids=ids, labels=labels).loss
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
        torch_xla.sync()
    return step
