"""Epochs over a DataLoader without ``drop_last``: BERT (tiny config, random weights) for sequence
classification, trained on 88 examples in batches of 16 (the epoch's last batch holds 8) and
evaluated after each epoch on 40 in batches of 16 (the last holds 8), the accuracy counted on the
host a batch at a time and the loss read every step. Each loop's last, smaller batch is a graph of
its own, compiled in the first epoch. The truth's explanation: the batch dimension, 16 then 8; the
accepted fixes leave the last batch out of training (``drop_last=True``) or pad it.
"""
from __future__ import annotations

from tests.support.corpus.tiny_models import bert_classifier

BATCH, SEQ, VOCAB, TRAIN, EVAL = 16, 20, 300, 88, 40  # SEQ: no other case compiles these graphs
STEPS_PER_EPOCH = -(-TRAIN // BATCH)


def build(torch, device, args: list[str]):
    import torch_xla

    model = bert_classifier(VOCAB, device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def examples(count: int):
        return torch.utils.data.TensorDataset(torch.randint(0, VOCAB, (count, SEQ)), torch.randint(0, 3, (count,)))

    train = torch.utils.data.DataLoader(examples(TRAIN), batch_size=BATCH, shuffle=True)
    evals = torch.utils.data.DataLoader(examples(EVAL), batch_size=BATCH)

    def evaluate() -> float:
        model.eval()
        correct = 0
        with torch.no_grad():
            for ids, labels in evals:
                ids, labels = ids.to(device), labels.to(device)
                correct += (model(input_ids=ids).logits.argmax(-1) == labels).sum().item()
        model.train()
        return correct / EVAL

    def epochs():
        while True:
            yield from train

    batches = epochs()

    def step(i: int) -> None:
        ids, labels = next(batches)
        ids, labels = ids.to(device), labels.to(device)
        loss = model(input_ids=ids, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch_xla.sync()
        print(f"loss {loss.item():.4f}", end="\r")
        if i % STEPS_PER_EPOCH == STEPS_PER_EPOCH - 1:
            print(f"accuracy {evaluate():.3f}", end="\r")
    return step
