"""transformers' ``generate()`` on an encoder-decoder model, T5 (tiny config, random weights),
summarizing documents of a new length each call (the source one token longer every call, as texts
arrive); greedy, a few new tokens. The encoder's input grows by one token per call, the decoder's
by one per token: a graph per length, the accepted fix pads the sources to one length.
"""
from __future__ import annotations

VOCAB, FIRST_SOURCE, NEW_TOKENS = 200, 10, 3


def build(torch, device, args: list[str]):
    import torch_xla
    from transformers import T5Config, T5ForConditionalGeneration

    model = T5ForConditionalGeneration(T5Config(
        vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=2,
        decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)).to(device).eval()
    documents = torch.randint(2, VOCAB, (1, 64))

    def step(i: int) -> None:
        source = documents[:, :FIRST_SOURCE + i].to(device)
        with torch.no_grad():
            summary = model.generate(source, attention_mask=torch.ones_like(source), max_new_tokens=NEW_TOKENS,
                                     do_sample=False)
        torch_xla.sync()
        return summary
    return step
