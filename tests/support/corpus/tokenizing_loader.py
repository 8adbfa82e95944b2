"""Text tokenized as the batches are drawn: a ``Dataset`` whose ``__getitem__`` runs transformers'
``BertTokenizer`` (its pure-Python WordPiece, over a vocabulary written at build time) on raw
texts of 600 words, in a ``DataLoader`` with ``num_workers=0``, so each batch is tokenized on the
training thread between the steps (about a third of the host's time), feeding a BERT classifier
(tiny config, random weights). The accepted fix: worker processes for the loader (or the text
tokenized once, ahead of training).
"""
from __future__ import annotations

import os
import random
import tempfile

from tests.support.corpus.tiny_models import bert_classifier

BATCH, SEQ, WORDS, SENTENCES, WORDS_PER_TEXT = 8, 24, 290, 4096, 600


def build(torch, device, args: list[str]):
    import torch_xla
    from transformers import BertTokenizer

    rng = random.Random(0)
    words = sorted({"".join(rng.choice("abcdefghij") for _ in range(rng.randint(3, 7))) for _ in range(WORDS)})
    with tempfile.TemporaryDirectory(prefix="vocab-") as directory:  # read whole by the tokenizer
        vocab = os.path.join(directory, "vocab.txt")
        with open(vocab, "w") as handle:
            handle.write("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
        tokenizer = BertTokenizer(vocab)
    texts = [" ".join(rng.choice(words) + rng.choice(["", "s", "ing"]) for _ in range(WORDS_PER_TEXT))
             for _ in range(SENTENCES)]

    class Sentences(torch.utils.data.Dataset):
        def __len__(self) -> int:
            return len(texts)

        def __getitem__(self, i: int):
            ids = tokenizer(texts[i], max_length=SEQ, truncation=True, padding="max_length")["input_ids"]
            return torch.tensor(ids), torch.tensor(i % 3)

    model = bert_classifier(len(words) + 5, device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    batches = iter(torch.utils.data.DataLoader(Sentences(), batch_size=BATCH))

    def step(i: int) -> None:
        ids, labels = next(batches)
        loss = model(input_ids=ids.to(device), labels=labels.to(device)).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch_xla.sync()
    return step
