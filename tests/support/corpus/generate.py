"""transformers' ``generate()`` on GPT-2 (tiny config, random weights), a prompt one token longer each
call, as a chat loop's history grows. ``--static``: the fixed arm, prompts padded to one length and a
static KV cache (the accepted fix), so every call has the same shapes; each call ends with a sync, as
a server hands its tokens on (without it, work after ``generate()``'s last read would never run).
``--sample``: tokens sampled (top-k 20, top-p 0.9: a sort, a cumulative sum and ``torch.multinomial``
each token) instead of the greedy choice. ``--beams``: beam search over two beams instead.
"""
from __future__ import annotations

VOCAB, FIRST_PROMPT, NEW_TOKENS, PAD_TO = 256, 6, 2, 24  # PAD_TO: past the longest prompt of the windows


def build(torch, device, args: list[str]):
    import torch_xla
    from transformers import GPT2Config, GPT2LMHeadModel

    static, sample, beams = "--static" in args, "--sample" in args, "--beams" in args
    model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=VOCAB, n_positions=64,
                                       bos_token_id=0, eos_token_id=1, pad_token_id=0)).to(device).eval()
    history = torch.randint(2, VOCAB, (1, 64))
    sampling = dict(do_sample=True, top_k=20, top_p=0.9) if sample else dict(do_sample=False)
    if beams:
        sampling["num_beams"] = 2

    def step(i: int) -> None:
        length = FIRST_PROMPT + i
        prompt = history[:, :length]
        mask = torch.ones_like(prompt)
        if static:  # left-padded to one length: the same shapes every call
            prompt = torch.nn.functional.pad(prompt, (PAD_TO - length, 0), value=0)
            mask = torch.nn.functional.pad(mask, (PAD_TO - length, 0), value=0)
        with torch.no_grad():
            out = model.generate(prompt.to(device), attention_mask=mask.to(device), max_new_tokens=NEW_TOKENS,
                                 pad_token_id=0, **sampling,
                                 cache_implementation="static" if static else None)
        if static:
            torch_xla.sync()
        return out
    return step
