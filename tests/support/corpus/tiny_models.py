"""The corpus' small transformers models, random weights (no downloads): one config per family, so
that the workloads built on one model differ only in how they use it."""
from __future__ import annotations


def bert_classifier(vocab: int, device):
    """BERT for sequence classification (3 labels), 2 layers of width 32, on ``device``."""
    from transformers import BertConfig, BertForSequenceClassification

    return BertForSequenceClassification(BertConfig(vocab_size=vocab, hidden_size=32, num_hidden_layers=2,
                                                    num_attention_heads=2, intermediate_size=64,
                                                    max_position_embeddings=64, num_labels=3)).to(device)
