"""Running metrics from torchmetrics: a BERT classifier (tiny config, random weights) whose loss is
averaged by a ``MeanMetric`` and whose accuracy by a ``MulticlassAccuracy``, both updated every step
before ``torch_xla.sync()``, as a training loop logs them. Both check their input on the host,
inside torchmetrics, by default: ``MeanMetric``'s ``nan_strategy="warn"`` tests it for NaN (``if
nans.any() or ...``: two reads), ``MulticlassAccuracy``'s ``validate_args=True`` counts the values
of its predictions and labels (``torch.unique``: two reads; the line tracer counts 16 of each in 8
steps). Reads the user did not write, at the ``update`` calls they can change. ``--no-reads``: the
A/B arm, ``nan_strategy="disable"`` and ``validate_args=False``: the same updates, nothing read.
"""
from __future__ import annotations

from tests.support.corpus.tiny_models import bert_classifier

BATCH, SEQ, VOCAB, CLASSES = 8, 24, 300, 3


def build(torch, device, args: list[str]):
    import torch_xla
    import torchmetrics

    model = bert_classifier(VOCAB, device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, VOCAB, (BATCH, SEQ)).to(device)
    labels = torch.randint(0, CLASSES, (BATCH,)).to(device)
    checked = "--no-reads" not in args
    mean_loss = torchmetrics.MeanMetric(nan_strategy="warn" if checked else "disable").to(device)
    accuracy = torchmetrics.classification.MulticlassAccuracy(num_classes=CLASSES, validate_args=checked).to(device)

    def step(i: int) -> None:
        out = model(input_ids=ids, labels=labels)
        out.loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        mean_loss.update(out.loss.detach())
        accuracy.update(out.logits.detach().argmax(-1), labels)
        torch_xla.sync()
    return step
