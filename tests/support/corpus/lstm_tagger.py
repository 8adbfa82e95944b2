"""A sequence tagger on ``torch.nn.LSTM`` over padded batches whose length changes from batch to batch
(12, 16, 20 in turn: each batch padded to its longest sentence), the padding masked out of the loss
with ``ignore_index`` (packed sequences do not run on the XLA device). A graph per length, each
compiled once; the accepted fix pads to a few buckets.
"""
from __future__ import annotations

BATCH, VOCAB, TAGS, LENGTHS, PAD = 8, 200, 5, (12, 16, 20), -100


def build(torch, device, args: list[str]):
    import torch_xla

    embed = torch.nn.Embedding(VOCAB, 32).to(device)
    lstm = torch.nn.LSTM(32, 32, batch_first=True).to(device)
    head = torch.nn.Linear(32, TAGS).to(device)
    optimizer = torch.optim.SGD([*embed.parameters(), *lstm.parameters(), *head.parameters()], lr=0.05)
    generator = torch.Generator().manual_seed(0)

    def step(i: int) -> None:
        longest = LENGTHS[i % len(LENGTHS)]
        lengths = torch.randint(longest // 2, longest + 1, (BATCH, 1), generator=generator)
        tags = torch.randint(0, TAGS, (BATCH, longest), generator=generator)
        tags[torch.arange(longest) >= lengths] = PAD
        ids = torch.randint(0, VOCAB, (BATCH, longest), generator=generator).to(device)
        out, _ = lstm(embed(ids))
        loss = torch.nn.functional.cross_entropy(head(out).flatten(0, 1), tags.to(device).flatten(), ignore_index=PAD)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch_xla.sync()
    return step
