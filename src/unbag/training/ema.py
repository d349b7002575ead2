"""An exponential moving average of a model's weights (DeGLA's teacher)."""
from __future__ import annotations

import copy

import torch


class EMA:
    """theta* <- alpha theta* + (1 - alpha) theta after every step; the copy never has gradients."""

    def __init__(self, model: torch.nn.Module, alpha: float):
        self.alpha = alpha
        self.model = copy.deepcopy(model).eval()
        for p in self.model.parameters():
            p.requires_grad_(False)

    @torch.no_grad()
    def update(self, model: torch.nn.Module) -> None:
        for e, p in zip(self.model.parameters(), model.parameters()):
            e.lerp_(p.detach().to(e.dtype), 1 - self.alpha)
        for e, b in zip(self.model.buffers(), model.buffers()):
            e.copy_(b)
