"""Keep the best checkpoint: a BERT classifier (tiny config, random weights) trained with the legacy
``xm.mark_step()``, its loss compared on the host each step (``if loss < best``: a read the user did
not write as one) and, when it improved, the model saved with ``xm.save`` (every parameter moved to
the host). ``--no-reads``: the A/B arm, the loss improving as it does every step here, the same
``torch.save`` of a host copy of the state dict taken once before the steps: the save's host work
without the reads.
"""
from __future__ import annotations

import os
import tempfile

from tests.support.corpus.tiny_models import bert_classifier

BATCH, SEQ, VOCAB = 8, 24, 300


def build(torch, device, args: list[str]):
    import torch_xla.core.xla_model as xm

    model = bert_classifier(VOCAB, device)
    model.eval()  # no dropout: on one batch at a small rate the loss improves every step, so every run reads alike
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)
    ids, labels = torch.randint(0, VOCAB, (BATCH, SEQ)).to(device), torch.randint(0, 3, (BATCH,)).to(device)
    path = os.path.join(tempfile.mkdtemp(prefix="checkpoint-best-"), "best.pt")
    best = [float("inf")]
    host_state = {k: v.cpu() for k, v in model.state_dict().items()} if "--no-reads" in args else None

    def step(i: int) -> None:
        loss = model(input_ids=ids, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        xm.mark_step()
        if host_state is not None:
            torch.save(host_state, path)
        elif loss < best[0]:
            best[0] = loss.item()
            xm.save(model.state_dict(), path)
    return step
