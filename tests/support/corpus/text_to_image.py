"""A text-to-image fine-tuning step: diffusers' ``UNet2DConditionModel`` conditioned on a frozen
transformers ``CLIPTextModel`` (tiny configs, random weights), DDPM's ``add_noise``, AdamW and a
``loss.item()`` a step, over two aspect-ratio buckets of latents (16x16 for the first two steps, then
16x24): the bucket change recompiles the step. Its up-blocks upsample with nearest neighbours, whose
backward falls back to the CPU inside ``loss.backward()``.
"""
from __future__ import annotations

SWITCH_AT = 2  # steps 0 and 1 in the 16x16 bucket, then 16x24


def build(torch, device, args: list[str]):
    import torch_xla
    from diffusers import DDPMScheduler, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    text = CLIPTextModel(CLIPTextConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                        num_attention_heads=2, max_position_embeddings=16)).to(device).eval()
    text.requires_grad_(False)
    unet = UNet2DConditionModel(sample_size=16, in_channels=4, out_channels=4, layers_per_block=1,
                                block_out_channels=(32, 64), down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                                up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), cross_attention_dim=32,
                                attention_head_dim=8, norm_num_groups=8).to(device)
    scheduler = DDPMScheduler(num_train_timesteps=100)
    optimizer = torch.optim.AdamW(unet.parameters(), lr=1e-4)
    tokens = torch.randint(0, 128, (2, 8))

    def step(i: int) -> None:
        width = 16 if i < SWITCH_AT else 24
        latents = torch.randn(2, 4, 16, width).to(device)
        noise = torch.randn_like(latents)
        timesteps = torch.randint(0, 100, (2,)).to(device)
        with torch.no_grad():
            states = text(tokens.to(device))[0]
        noisy = scheduler.add_noise(latents, noise, timesteps)
        pred = unet(noisy, timesteps, encoder_hidden_states=states).sample
        loss = torch.nn.functional.mse_loss(pred, noise)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch_xla.sync()
        print(f"loss {loss.item():.4f}", end="\r")
    return step
