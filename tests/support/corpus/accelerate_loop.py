"""A training loop written for Hugging Face accelerate: ``Accelerator().prepare`` wraps a BERT
classifier (tiny config, random weights), AdamW and a DataLoader (on XLA, a ``MpDeviceLoader`` whose
``next`` cuts the graph); each step ``accelerator.backward``, ``accelerator.clip_grad_norm_``, the
optimizer's step, the batch's predictions through ``accelerator.gather_for_metrics`` and their
accuracy counted on the host (``.item()``), the loss printed by ``accelerator.print`` every 4 steps.
``--no-reads``: the A/B arm: the same counts kept on the device and the same prints of a host value.
"""
from __future__ import annotations

from tests.support.corpus.tiny_models import bert_classifier

BATCH, SEQ, VOCAB, BATCHES = 8, 24, 300, 512


def build(torch, device, args: list[str]):
    from accelerate import Accelerator

    accelerator = Accelerator()
    model = bert_classifier(VOCAB, device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(0)
    batches = [(torch.randint(0, VOCAB, (BATCH, SEQ), generator=generator),
                torch.randint(0, 3, (BATCH,), generator=generator)) for _ in range(BATCHES)]
    loader = torch.utils.data.DataLoader(batches, batch_size=None)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    on_device = "--no-reads" in args
    batch_iter = iter(loader)
    seen = {"correct": 0, "host_loss": torch.tensor(1.0)}

    def step(i: int) -> None:
        ids, labels = next(batch_iter)
        out = model(input_ids=ids, labels=labels)
        accelerator.backward(out.loss)
        accelerator.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
        predictions = accelerator.gather_for_metrics(out.logits.argmax(-1))
        if on_device:  # the same count, kept on the device
            seen["correct"] = seen["correct"] + (predictions == labels).sum()
        else:
            seen["correct"] += (predictions == labels).sum().item()
        if i % 4 == 0:
            accelerator.print(f"loss {(seen['host_loss'] if on_device else out.loss).item():.4f}", end="\r")
    return step
