"""A library-like diffusion scheduler with the reads real schedulers make (diffusers' DPM-Solver:
``(self.timesteps == timestep).nonzero()`` then ``.item()``; a CPU table indexed by a device
timestep). No spans, no xlaprof: the tests find its lines from the sampled stacks alone.

``TinyScheduler(reads=False)`` computes the same update from a step counter instead: the A/B
twin whose saving is the reads' true cost.
"""
from __future__ import annotations

import torch


class TinyScheduler:
    def __init__(self, train_steps: int = 1000, reads: bool = True) -> None:
        self.alphas = torch.linspace(0.999, 0.02, train_steps)  # a CPU table, as schedulers keep
        self.reads = reads
        self.timesteps = torch.zeros(0)
        self.schedule: list[int] = []
        self.counter = 0

    def set_timesteps(self, steps: int, device) -> None:
        self.schedule = torch.linspace(len(self.alphas) - 1, 0, steps).long().tolist()
        self.timesteps = torch.tensor(self.schedule, device=device)
        self.counter = 0

    def index_for_timestep(self, timestep: torch.Tensor) -> int:
        return (self.timesteps == timestep).nonzero().item()

    def step(self, model_output: torch.Tensor, timestep: torch.Tensor, sample: torch.Tensor) -> torch.Tensor:
        if self.reads:
            index = self.index_for_timestep(timestep)
        else:
            index = self.counter
        self.counter += 1
        alpha = float(self.alphas[self.schedule[index]])
        return sample * alpha ** 0.5 - model_output * (1.0 - alpha) ** 0.5
