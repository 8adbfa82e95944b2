"""Speech fine-tuning with transformers' ``Wav2Vec2ForCTC`` (tiny config, random weights) on random
audio: its CTC loss has no XLA kernel, so ``aten::_ctc_loss`` runs as a CPU fallback in the forward
(inside the library, on the training thread) and its backward on the autograd engine's thread, with a
``loss.item()`` a step. The truth's lines: the model call and ``loss.backward()``. The step's sync
compiles a graph with more inputs at steps 2, 3 and 5 (AdamW's state entering the graph the reads
cut), each once: warming up, no shape to pad (PT_XLA_DEBUG_LEVEL=2 shows every later step reuse one).
"""
from __future__ import annotations

AUDIO, LABELS, VOCAB = 1600, 6, 12


def build(torch, device, args: list[str]):
    import torch_xla
    from transformers import Wav2Vec2Config, Wav2Vec2ForCTC

    config = Wav2Vec2Config(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                            intermediate_size=64, conv_dim=(16, 16), conv_stride=(5, 4), conv_kernel=(10, 4),
                            num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2, pad_token_id=0,
                            ctc_loss_reduction="mean", mask_time_prob=0.0)
    model = Wav2Vec2ForCTC(config).to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    audio = torch.randn(2, AUDIO).to(device)
    labels = torch.randint(1, VOCAB, (2, LABELS)).to(device)

    def step(i: int) -> None:
        loss = model(audio, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch_xla.sync()
        print(f"loss {loss.item():.4f}", end="\r")
    return step
