"""Checkpoint selection on an in-distribution validation split, never the test.

The paper's FT baseline (arXiv 2604.11496, following BiVLC's fine-tuning script) keeps the
checkpoint that scores best on validation. With `--select ctrl-id[:N]` the trainer scores every
checkpoint by global cosine on N in-distribution SWAP items per category of the ctrl world, drawn
with a seed that neither the test (0) nor the heads' feature caches (1000) use, and exports the
best one as the run's model.
"""
from __future__ import annotations

import torch

from ..benchmarks.base import Benchmark
from ..errors import UnbagError

VAL_SEED = 4242
DEFAULT_PER_CATEGORY = 100


def parse(spec: str) -> int:
    """Items per category of a `ctrl-id[:N]` spec."""
    name, _, n = spec.partition(":")
    if name != "ctrl-id" or (n and not n.isdigit()) or (n and int(n) < 1):
        raise UnbagError(f"--select {spec!r}: expected ctrl-id or ctrl-id:N (N items per category)")
    return int(n) if n else DEFAULT_PER_CATEGORY


def validation_set(spec: str, px: int) -> Benchmark:
    """In-distribution SWAP items of every category (seed VAL_SEED) rendered at px."""
    from ..benchmarks.ctrl import validation
    return validation(VAL_SEED, parse(spec), px)


@torch.no_grad()
def validate(backend, bench: Benchmark) -> float:
    """Mean Winoground group score (strict >) of global cosine over the validation items."""
    from ..metrics import winoground
    from ..scoring.cosine import score_global

    was = backend.model.training
    backend.model.eval()
    try:
        group = winoground(score_global(backend, bench))["group"]
    finally:
        backend.model.train(was)
    return float(group.float().mean())
