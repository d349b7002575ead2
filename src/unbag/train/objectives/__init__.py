"""Training objectives: one file each, registered by method name."""
from __future__ import annotations

from .clip import ClipObjective

OBJECTIVES = {"clip": ClipObjective}
