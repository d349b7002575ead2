"""Training objectives: one file each, registered by method name (each declares its `needs`)."""
from __future__ import annotations

from .base import Needs, Objective
from .ce_clip import CEObjective
from .clic import CLICObjective
from .clip import ClipObjective
from .degla import DeGLAObjective
from .dense import DenseObjective
from .fsc_clip import FSCObjective
from .ft import FTObjective
from .negclip import NegCLIPObjective
from .regions import RegionObjective
from .tripletclip import TripletCLIPObjective

OBJECTIVES: dict[str, type[Objective]] = {"clip": ClipObjective, "ft": FTObjective, "negclip": NegCLIPObjective,
              "clic": CLICObjective, "degla": DeGLAObjective, "clip-dense": DenseObjective,
              "clip-regions": RegionObjective, "ce-clip": CEObjective,
              "fsc-clip": FSCObjective, "tripletclip": TripletCLIPObjective}


def options_of(method: str, given: dict) -> dict:
    """A registered method's options, `given` over its defaults."""
    return OBJECTIVES[method].option_values(given)


__all__ = ["OBJECTIVES", "Needs", "Objective", "options_of"]
