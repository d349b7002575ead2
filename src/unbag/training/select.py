"""Checkpoint selection on an in-distribution validation split, never the test.

The paper's FT baseline (arXiv 2604.11496, following BiVLC's fine-tuning script) keeps the
checkpoint that scores best on validation. With `--select ctrl-id[@WORLD][:N]` (no @WORLD: the
default world) the trainer scores every checkpoint by global cosine on N
in-distribution SWAP items per category of that world, drawn with a seed that neither the test
(0) nor the heads' feature caches (1000) use, and exports the best one as the run's model.
"""
from __future__ import annotations

import torch

from ..benchmarks.base import Benchmark
from ..errors import UnbagError
from ..world.styles import resolve, split_world

VAL_SEED = 4242
DEFAULT_PER_CATEGORY = 100


SPLIT = "ctrl-id"  # --select ctrl-id[@WORLD][:N] (world/styles.py)


def parse(spec: str) -> tuple[str, int]:
    """(world, items per category) of a `ctrl-id[@WORLD][:N]` spec."""
    parts = split_world(spec, (SPLIT,), "--select")
    n = parts[2] if parts else ""
    if parts is None or (n and not n.isdigit()) or (n and int(n) < 1):
        raise UnbagError(f"--select {spec!r}: expected ctrl-id[@WORLD][:N] (no @WORLD: the default world); "
                         "N items per category")
    return resolve(parts[1]), int(n) if n else DEFAULT_PER_CATEGORY


def validation_set(spec: str, px: int) -> Benchmark:
    """In-distribution SWAP items of every category (seed VAL_SEED) of the spec's world, rendered at px."""
    from ..benchmarks.ctrl import validation
    style, n = parse(spec)
    return validation(VAL_SEED, n, px, style)


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
