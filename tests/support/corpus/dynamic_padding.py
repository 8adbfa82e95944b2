"""BERT fine-tuning (tiny config, random weights) with transformers' ``DataCollatorWithPadding``:
each batch padded to its own longest sequence, so the sequence length changes from batch to batch
(not growing: random lengths, some seen before), with a ``loss.item()`` a step. A graph per distinct
length; the truth's explanation: the sequence dimension of the inputs and its values; the accepted
fix pads to a few fixed lengths (``pad_to_multiple_of`` or ``max_length``).
"""
from __future__ import annotations

from tests.support.corpus.tiny_models import bert_classifier

BATCH, VOCAB = 4, 200
# The longest sequence of each step's batch: new lengths and repeats, as a shuffled dataset gives them.
LONGEST = (21, 13, 21, 30, 13, 17, 30, 21, 26, 17, 13, 30, 26, 21)


def _tokenizer():
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from transformers import PreTrainedTokenizerFast

    vocab = {"[PAD]": 0, "[UNK]": 1, **{f"w{i}": i for i in range(2, VOCAB)}}
    return PreTrainedTokenizerFast(tokenizer_object=Tokenizer(WordLevel(vocab, unk_token="[UNK]")),
                                   pad_token="[PAD]", unk_token="[UNK]")


def build(torch, device, args: list[str]):
    import torch_xla
    from transformers import DataCollatorWithPadding

    model = bert_classifier(VOCAB, device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    collate = DataCollatorWithPadding(_tokenizer())
    generator = torch.Generator().manual_seed(0)

    def examples(longest: int) -> list[dict]:
        lengths = [longest] + torch.randint(4, longest + 1, (BATCH - 1,), generator=generator).tolist()
        return [{"input_ids": torch.randint(2, VOCAB, (n,), generator=generator).tolist(), "labels": k % 3}
                for k, n in enumerate(lengths)]

    def step(i: int) -> None:
        batch = {k: v.to(device) for k, v in collate(examples(LONGEST[i % len(LONGEST)])).items()}
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch_xla.sync()
        print(f"step {i} loss {loss.item():.4f}", end="\r")
    return step
