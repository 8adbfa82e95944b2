"""A mixture-of-experts language model: transformers' Mixtral (tiny config, random weights, 4 experts,
2 per token) trained with AdamW and ``torch_xla.sync()`` on a new batch of a token stream each step.
Its eager experts (transformers' default, ``grouped_mm``, fails on XLA in ``torch.histc``; "eager" is
what a user switches to) route tokens with data-dependent ops inside transformers: ``nonzero()`` for
the experts hit, a test of each one, ``torch.where`` for its tokens, so every layer reads from the
device and each expert's token count is a new shape, a new graph, as the router changes.
``--batched``: the fixed arm, transformers' own ``experts_implementation="batched_mm"`` (every
token's experts gathered and batched: the same shapes every step, nothing read).
"""
from __future__ import annotations

BATCH, SEQ, VOCAB, STREAM = 4, 16, 300, 64


def build(torch, device, args: list[str]):
    import torch_xla
    from transformers import MixtralConfig, MixtralForCausalLM

    config = MixtralConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                           num_attention_heads=2, num_key_value_heads=1, num_local_experts=4,
                           num_experts_per_tok=2, max_position_embeddings=64)
    model = MixtralForCausalLM(config).to(device)
    model.set_experts_implementation("batched_mm" if "--batched" in args else "eager")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    corpus = torch.randint(0, VOCAB, (STREAM, SEQ))  # the token stream, on the host as a loader keeps it

    def step(i: int) -> None:
        batch = corpus[i * BATCH % STREAM:][:BATCH].to(device)  # a new batch each step: the routing moves
        out = model(input_ids=batch, labels=batch)
        out.loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch_xla.sync()
    return step
