"""Multi-scale training of an image classifier: transformers' ``ResNetForImageClassification`` (tiny
config, random weights) on batches whose height and width are drawn from 32 and 48 each (random
resized crops, two sizes per side, four shapes), the loss logged every 4 steps. A graph per shape,
each compiled once; the accepted fix pads or resizes to a few buckets.
"""
from __future__ import annotations

BATCH, CLASSES, SHAPES = 8, 10, ((32, 32), (32, 48), (48, 32), (48, 48))


def build(torch, device, args: list[str]):
    import torch_xla
    from transformers import ResNetConfig, ResNetForImageClassification

    model = ResNetForImageClassification(ResNetConfig(
        num_channels=3, embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1], layer_type="basic",
        num_labels=CLASSES)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

    def step(i: int) -> None:
        height, width = SHAPES[i % len(SHAPES)]
        images = torch.randn(BATCH, 3, height, width).to(device)
        labels = torch.randint(0, CLASSES, (BATCH,)).to(device)
        loss = torch.nn.functional.cross_entropy(model(pixel_values=images).logits, labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch_xla.sync()
        if i % 4 == 3:
            print(f"loss {loss.item():.4f}", end="\r")
    return step
