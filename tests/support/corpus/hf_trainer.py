"""transformers' ``Trainer``, as its users run it: accelerate underneath, torch_xla found and used by
both (accelerate's device loader, an ``xm.mark_step()`` a step, ``clip_grad_norm_``, and at each
logging step the loss gathered through ``xm.mesh_reduce`` and ``grad_norm.item()``), training a BERT
classifier (tiny config, random weights) on random token ids. A step of the case is one
``trainer.train()`` of ``STEPS`` optimizer steps, logging every ``LOG_EVERY``: the warm one compiles
the graphs, the window's runs the same graphs again.
"""
from __future__ import annotations

import tempfile

from tests.support.corpus.tiny_models import bert_classifier

BATCH, SEQ, VOCAB, STEPS, LOG_EVERY = 8, 24, 300, 12, 4


def build(torch, device, args: list[str]):
    from transformers import Trainer, TrainingArguments

    class TokenIds(torch.utils.data.Dataset):
        def __len__(self) -> int:
            return BATCH * STEPS

        def __getitem__(self, i: int) -> dict:
            generator = torch.Generator().manual_seed(i)
            return {"input_ids": torch.randint(0, VOCAB, (SEQ,), generator=generator),
                    "labels": torch.randint(0, 3, (), generator=generator)}

    arguments = TrainingArguments(output_dir=tempfile.mkdtemp(prefix="hf-trainer-"), per_device_train_batch_size=BATCH,
                                  max_steps=STEPS, logging_steps=LOG_EVERY, optim="adamw_torch", report_to=[],
                                  save_strategy="no", disable_tqdm=True, dataloader_pin_memory=False)
    trainer = Trainer(model=bert_classifier(VOCAB, device), args=arguments, train_dataset=TokenIds())

    def step(i: int) -> None:
        trainer.train()
    return step
