"""``torch.compile(backend="openxla")`` (TorchDynamo into torch_xla) on a transformer encoder layer,
inference with a sequence 8 tokens longer every 3 steps and an ``.argmax().item()`` a step: dynamo
and torch_xla compile a graph per sequence length, while the compiled function's frame stands at its
decorator line. The truth's explanation: the sequence dimension of the input (24, 32 in the window);
the accepted fix pads to a few bucket sizes.
"""
from __future__ import annotations


def build(torch, device, args: list[str]):
    layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, batch_first=True)
    layer, head = layer.to(device).eval(), torch.nn.Linear(64, 10).to(device)

    @torch.compile(backend="openxla")
    def classify(x):
        return head(layer(x)).mean(1)

    def step(i: int) -> None:
        x = torch.randn(4, 16 + 8 * (i // 3), 64).to(device)
        with torch.no_grad():
            label = classify(x).argmax().item()
        print(f"step {i} label {label}", end="\r")
    return step
