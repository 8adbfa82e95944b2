"""GPT-2 (tiny config, random weights) trained with transformers' gradient checkpointing (through
torch_xla's ``checkpoint``, as torch_xla asks): the
backward reruns each block's forward, its Python run by the autograd engine's thread, not the
training thread; the loss logged with ``.item()`` every step.
"""
from __future__ import annotations

BATCH, SEQ, VOCAB = 4, 32, 256


def build(torch, device, args: list[str]):
    import torch_xla
    from torch_xla.utils.checkpoint import checkpoint
    from transformers import GPT2Config, GPT2LMHeadModel

    model = GPT2LMHeadModel(GPT2Config(n_layer=4, n_head=2, n_embd=32, vocab_size=VOCAB, n_positions=64)).to(device)
    # torch.utils.checkpoint needs a device module (torch.xla) that XLA has not: torch_xla's own checkpoint.
    model.gradient_checkpointing_enable()
    model._set_gradient_checkpointing(enable=True, gradient_checkpointing_func=checkpoint)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, VOCAB, (BATCH, SEQ)).to(device)

    def step(i: int) -> None:
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch_xla.sync()
        print(f"loss {loss.item():.4f}", end="\r")
    return step
