"""A training loop with an evaluation pass every 4 steps: BERT (tiny config, random weights) for
sequence classification, the eval batches under ``torch.no_grad()`` with the accuracy counted on
the host a batch at a time (``correct += (pred == labels).sum().item()``), the training loss read
every step. ``--no-reads``: the A/B arm without the reads: the same counts kept on the device, each
eval batch's graph run by a sync where its ``.item()`` ran it, and the same prints of host values.
"""
from __future__ import annotations

from tests.support.corpus.tiny_models import bert_classifier

BATCH, SEQ, VOCAB, EVAL_BATCHES = 8, 24, 300, 3


def build(torch, device, args: list[str]):
    import torch_xla

    model = bert_classifier(VOCAB, device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    train = (torch.randint(0, VOCAB, (BATCH, SEQ)).to(device), torch.randint(0, 3, (BATCH,)).to(device))
    evals = [(torch.randint(0, VOCAB, (BATCH, SEQ)).to(device), torch.randint(0, 3, (BATCH,)).to(device))
             for _ in range(EVAL_BATCHES)]

    on_device = "--no-reads" in args
    host_loss = torch.tensor(1.0)

    def evaluate() -> float:
        model.eval()
        correct = 0
        with torch.no_grad():
            for ids, labels in evals:
                pred = model(input_ids=ids).logits.argmax(-1)
                if on_device:  # the same graph run, nothing read
                    correct = correct + (pred == labels).sum()
                    torch_xla.sync()
                else:
                    correct += (pred == labels).sum().item()
        model.train()
        return (0 if on_device else correct) / (BATCH * EVAL_BATCHES)

    def step(i: int) -> None:
        ids, labels = train
        loss = model(input_ids=ids, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch_xla.sync()
        print(f"loss {(host_loss if on_device else loss).item():.4f}", end="\r")
        if i % 4 == 3:
            print(f"accuracy {evaluate():.3f}", end="\r")
    return step
