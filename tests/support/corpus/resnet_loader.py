"""torch_xla's own image-classification recipe (its ``test_train_mp_imagenet``) on a small ResNet:
transformers' ``ResNetForImageClassification`` (tiny config, random weights) fed by ``MpDeviceLoader``
over fake images, the optimizer stepped by ``xm.optimizer_step``, no sync in the step (the loader's
``next`` cuts the graph), and the loss logged every 2 steps through ``xm.add_step_closure`` with an
``xm.RateTracker``. ``--no-reads``: the A/B arm without the read, the same closure given a host tensor.
"""
from __future__ import annotations

BATCH, SIZE, CLASSES = 8, 32, 10
LOG_EVERY = 2
LOGGED: list[str] = []


def train_update(step, loss, tracker) -> None:
    LOGGED.append(f"step {step} loss {loss.item():.4f} rate {tracker.rate():.1f}")


def build(torch, device, args: list[str]):
    import torch_xla.core.xla_model as xm
    import torch_xla.distributed.parallel_loader as pl
    from transformers import ResNetConfig, ResNetForImageClassification

    model = ResNetForImageClassification(ResNetConfig(
        num_channels=3, embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1], layer_type="basic",
        num_labels=CLASSES)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    images = torch.utils.data.TensorDataset(torch.randn(4096, 3, SIZE, SIZE), torch.randint(0, CLASSES, (4096,)))
    loader = torch.utils.data.DataLoader(images, batch_size=BATCH, drop_last=True)
    def epochs():
        while True:
            yield from pl.MpDeviceLoader(loader, device)

    batches = epochs()
    tracker = xm.RateTracker()
    host_loss = torch.tensor(1.0) if "--no-reads" in args else None

    def step(i: int) -> None:
        x, y = next(batches)
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(pixel_values=x).logits, y)
        loss.backward()
        xm.optimizer_step(optimizer)
        tracker.add(BATCH)
        if i % LOG_EVERY == 0:
            xm.add_step_closure(train_update, args=(i, loss if host_loss is None else host_loss, tracker))
    return step
