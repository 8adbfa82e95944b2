"""A transformers training loop with gradient accumulation: BERT (tiny config, random weights) for
sequence classification, 4 micro-batches per optimizer step, the loss read once per optimizer step.
"""
from __future__ import annotations

from tests.support.corpus.tiny_models import bert_classifier

ACCUMULATE, BATCH, SEQ, VOCAB = 4, 4, 24, 300


def build(torch, device, args: list[str]):
    import torch_xla

    model = bert_classifier(VOCAB, device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    batches = [(torch.randint(0, VOCAB, (BATCH, SEQ)), torch.randint(0, 3, (BATCH,))) for _ in range(ACCUMULATE)]

    def step(i: int) -> None:
        total = 0.0
        for ids, labels in batches:
            out = model(input_ids=ids.to(device), labels=labels.to(device))
            (out.loss / ACCUMULATE).backward()
            total = total + out.loss.detach()
            torch_xla.sync()
        optimizer.step()
        optimizer.zero_grad()
        torch_xla.sync()
        print(f"loss {(total / ACCUMULATE).item():.4f}", end="\r")
    return step
