"""A guarded gradient clip: a BERT classifier (tiny config, random weights) trained with
``torch_xla.sync()``, its gradients clipped by ``torch.nn.utils.clip_grad_norm_(...,
error_if_nonfinite=True)``, which tests the total norm on the host inside torch's own code (a read
the user did not write: it is the clip's line that the user can change). ``--no-reads``: the A/B
arm, ``error_if_nonfinite=False``: the same norm and the same clipping, not read.
"""
from __future__ import annotations

from tests.support.corpus.tiny_models import bert_classifier

BATCH, SEQ, VOCAB = 8, 24, 300


def build(torch, device, args: list[str]):
    import torch_xla

    model = bert_classifier(VOCAB, device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids, labels = torch.randint(0, VOCAB, (BATCH, SEQ)).to(device), torch.randint(0, 3, (BATCH,)).to(device)
    guarded = "--no-reads" not in args

    def step(i: int) -> None:
        loss = model(input_ids=ids, labels=labels).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=guarded)
        optimizer.step()
        optimizer.zero_grad()
        torch_xla.sync()
    return step
