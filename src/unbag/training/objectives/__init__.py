"""Training objectives: one file each, declaring its `Objective` in a module-level `OBJECTIVES`
table (by method name), which this registry collects (`unbag.utils.collect`)."""
from __future__ import annotations

from ...utils import collect
from .base import Needs, Objective

OBJECTIVES: dict[str, type[Objective]] = collect(__name__, "OBJECTIVES")


def options_of(method: str, given: dict) -> dict:
    """A registered method's options, `given` over its defaults."""
    return OBJECTIVES[method].option_values(given)


__all__ = ["OBJECTIVES", "Needs", "Objective", "options_of"]
