"""The optimiser's parameter groups and the learning-rate schedule, shared by the trainer and the heads."""
from __future__ import annotations

import math

import torch

from ..errors import UnbagError, warn


def warmup_steps(warmup: float, steps: int) -> int:
    """A warm-up given in steps, or as a fraction of the run if in (0, 1), in steps."""
    if isinstance(warmup, bool) or not isinstance(warmup, (int, float)) or not 0 <= warmup < float("inf"):
        raise UnbagError(f"warm-up {warmup}: use 0, a number of steps or a fraction of the run")
    return round(warmup * steps) if 0 < warmup < 1 else int(warmup)


def param_groups(model: torch.nn.Module, weight_decay: float) -> list[dict]:
    """AdamW groups: no decay on ndim<2 tensors, norms, biases, embeddings' gains, logit_scale."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        skip = p.ndim < 2 or "bias" in name or "ln_" in name or "norm" in name or "logit_scale" in name
        (no_decay if skip else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay},
            {"params": no_decay, "weight_decay": 0.0}]


def lr_lambda(cfg):
    """Linear warm-up then cosine to min_lr, as a multiplier of cfg.lr (`cfg`: lr, min_lr, steps,
    warmup); a warm-up as long as the run is warned about: the rate would never reach cfg.lr."""
    warmup = warmup_steps(cfg.warmup, cfg.steps)
    if warmup >= cfg.steps > 0:
        warn(f"warm-up of {warmup} steps is not shorter than the run ({cfg.steps} steps): the learning rate "
             f"peaks at {cfg.lr * cfg.steps / warmup:.3g}, never at lr {cfg.lr:g}; pass a shorter --warmup "
             "(steps, or a fraction of the run such as 0.1)")

    def f(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        t = (step - warmup) / max(1, cfg.steps - warmup)
        floor = cfg.min_lr / cfg.lr
        return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * min(1.0, t)))
    return f
