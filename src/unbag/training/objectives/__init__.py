"""Training objectives: one file each, registered by method name (each declares its `needs`)."""
from __future__ import annotations

from .base import Needs, Objective
from .clic import CLICObjective
from .clip import ClipObjective
from .degla import DeGLAObjective
from .dense import DenseObjective
from .ft import FTObjective
from .negclip import NegCLIPObjective

OBJECTIVES: dict[str, type[Objective]] = {"clip": ClipObjective, "ft": FTObjective, "negclip": NegCLIPObjective,
              "clic": CLICObjective, "degla": DeGLAObjective, "clip-dense": DenseObjective}

__all__ = ["OBJECTIVES", "Needs", "Objective"]
