"""What every objective declares: its name, its paper's hyperparameters, its own options and the
batch fields it reads."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable, ClassVar

import torch

from ...errors import UnbagError
from ...models.base import Backend


@dataclass(frozen=True)
class Needs:
    """Batch fields an objective reads besides `images` and `captions` (training/data.py builds them)."""
    twins: bool = False  # binding-swap twins: `twin_of`, `twin_images`, `twin_captions`
    negatives: bool = False  # one hard-negative caption per sample: `neg_of`, `neg_captions`
    typed: bool = False  # K typed negatives per caption (TrainConfig.typed_negatives): `typed_captions`,
    # `typed_valid`
    concat: bool = False  # every other step concatenated image pairs (CLIC's batches) (`texts`: [p1; p2; p3; p4; n])
    objects: bool = False  # one object of each picture alone, masked as SGI's mask mode shows it, and its
    # description: `object_pixels`, `object_captions` (a world stream or pool only)
    teacher: bool = False  # an EMA teacher (the engine sets `objective.teacher`; needs ema > 0)
    # every sample's negative must be an image and its caption (TripletCLIP): data that cannot bring
    # negative images (a caption file, COCO) is refused before training
    negative_images: bool = False
    # a fixed list of typed negatives per caption, one per slot, None where a slot's rule does not
    # apply (CE-CLIP's four, FSC-CLIP's three): (caption, the world's exact candidates by type or
    # None for free text, rng) -> [negative or None, ...], as `typed_captions` ("###" where None)
    # and `typed_valid`; it replaces DeGLA's K negatives
    slots: Callable | None = None


class Objective:
    """A training method's loss: `__call__(backend, batch) -> (loss, values to log)`."""
    name: ClassVar[str] = ""
    defaults: ClassVar[dict] = {}  # the paper's hyperparameters (TrainConfig.for_method starts from them)
    needs: ClassVar[Needs] = Needs()
    log_period: ClassVar[int] = 1  # steps in its cycle (CLIC alternates two kinds): each log point writes them all
    # a dataclass of the method's own options (TrainConfig.options; the CLI makes a flag of each
    # field, its help from the field's metadata), None: it has none
    options: ClassVar[type | None] = None

    def __init__(self, **options) -> None:
        values = self.option_values(options)  # an unknown option is refused, named
        self.opts = self.options(**values) if self.options else None

    @classmethod
    def option_values(cls, given: dict) -> dict:
        """Every option of the method, `given` over its defaults (an unknown one is refused)."""
        if cls.options is None:
            if given:
                raise UnbagError(f"method {cls.name} takes no options of its own, got {sorted(given)}")
            return {}
        try:
            return asdict(cls.options(**given))
        except TypeError:
            known = sorted(asdict(cls.options()))
            raise UnbagError(f"method {cls.name}: unknown options {sorted(set(given) - set(known))}; it takes "
                             f"{', '.join(known)}") from None

    def __call__(self, backend: Backend, batch: dict) -> tuple[torch.Tensor, dict]:
        raise NotImplementedError

    def prepare(self, model: torch.nn.Module) -> dict[str, int] | None:
        """Change the model before its optimiser is made (FSC-CLIP's LoRA); -> new parameter counts, or None."""
        return None

    def finish(self, model: torch.nn.Module) -> None:
        """Make the trained model a plain one of its kind again before export (LoRA merged)."""

    def state(self) -> dict:
        """What the objective carries from step to step (CE-CLIP's thresholds), saved with each checkpoint."""
        return {}

    def load_state(self, state: dict) -> None:
        """Take back `state()` from a checkpoint."""
