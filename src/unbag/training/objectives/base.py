"""What every objective declares: its name, its paper's hyperparameters and the batch fields it reads."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from ...models.base import Backend


@dataclass(frozen=True)
class Needs:
    """Batch fields an objective reads besides `images` and `captions` (training/data.py builds them)."""
    twins: bool = False  # binding-swap twins: `twin_of`, `twin_images`, `twin_captions`
    negatives: bool = False  # one hard-negative caption per sample: `neg_of`, `neg_captions`
    typed: bool = False  # K typed negatives per caption (TrainConfig.typed_negatives): `typed_captions`,
    # `typed_valid`
    concat: bool = False  # every other step concatenated image pairs (CLIC's batches) (`texts`: [p1; p2; p3; p4; n])
    teacher: bool = False  # an EMA teacher (the engine sets `objective.teacher`; needs ema > 0)


class Objective:
    """A training method's loss: `__call__(backend, batch) -> (loss, values to log)`."""
    name: ClassVar[str] = ""
    defaults: ClassVar[dict] = {}  # the paper's hyperparameters (TrainConfig.for_method starts from them)
    needs: ClassVar[Needs] = Needs()
    log_period: ClassVar[int] = 1  # steps in its cycle (CLIC alternates two kinds): each log point writes them all

    def __call__(self, backend: Backend, batch: dict) -> tuple[torch.Tensor, dict]:
        raise NotImplementedError
