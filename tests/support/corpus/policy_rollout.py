"""A policy-gradient rollout (REINFORCE) with its environment on the host: CartPole's physics in
numpy (as gym's classic-control CartPole computes them), a small policy MLP on the XLA device. Each
environment step moves the observation to the device, samples an action from
``torch.distributions.Categorical`` and reads it (``.item()``) to step the numpy environment; each
rollout of ``ROLLOUT`` environment steps ends in the update (the discounted returns computed on the
host, the loss on the device, AdamW) and ``torch_xla.sync()``. A step of the case is one rollout: the
device idles while the host steps the environment and at every action read.
"""
from __future__ import annotations

import math

ROLLOUT, GAMMA = 16, 0.99
GRAVITY, CART_MASS, POLE_MASS, POLE_HALF_LENGTH, FORCE, TAU = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
X_LIMIT, THETA_LIMIT = 2.4, 12 * 2 * math.pi / 360


def build(torch, device, args: list[str]):
    import numpy as np
    import torch_xla

    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    policy = torch.nn.Sequential(torch.nn.Linear(4, 64), torch.nn.Tanh(), torch.nn.Linear(64, 2)).to(device)
    optimizer = torch.optim.AdamW(policy.parameters(), lr=1e-3)
    state = rng.uniform(-0.05, 0.05, 4)

    def env_step(state, action: int):
        x, x_dot, theta, theta_dot = state
        force = FORCE if action == 1 else -FORCE
        cos, sin = math.cos(theta), math.sin(theta)
        total = CART_MASS + POLE_MASS
        temp = (force + POLE_MASS * POLE_HALF_LENGTH * theta_dot ** 2 * sin) / total
        theta_acc = (GRAVITY * sin - cos * temp) / (
            POLE_HALF_LENGTH * (4.0 / 3.0 - POLE_MASS * cos ** 2 / total))
        x_acc = temp - POLE_MASS * POLE_HALF_LENGTH * theta_acc * cos / total
        state = np.array([x + TAU * x_dot, x_dot + TAU * x_acc, theta + TAU * theta_dot, theta_dot + TAU * theta_acc])
        done = abs(state[0]) > X_LIMIT or abs(state[2]) > THETA_LIMIT
        return state, 1.0, done

    def returns_of(rewards: list[float]):
        out, running = np.zeros(len(rewards), dtype=np.float32), 0.0
        for k in reversed(range(len(rewards))):
            running = rewards[k] + GAMMA * running
            out[k] = running
        return (out - out.mean()) / (out.std() + 1e-6)

    def step(i: int) -> None:
        nonlocal state
        log_probs, rewards = [], []
        for _ in range(ROLLOUT):
            obs = torch.from_numpy(state).float().to(device)
            dist = torch.distributions.Categorical(logits=policy(obs))
            action = dist.sample()
            log_probs.append(dist.log_prob(action))
            state, reward, done = env_step(state, action.item())
            rewards.append(reward)
            if done:
                state = rng.uniform(-0.05, 0.05, 4)
        returns = torch.from_numpy(returns_of(rewards)).to(device)
        loss = -(torch.stack(log_probs) * returns).sum()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch_xla.sync()
    return step
