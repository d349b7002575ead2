"""Training objectives: one file each, registered by method name."""
from __future__ import annotations

from .clic import CLICObjective
from .clip import ClipObjective
from .degla import DeGLAObjective
from .ft import FTObjective
from .negclip import NegCLIPObjective

OBJECTIVES = {"clip": ClipObjective, "ft": FTObjective, "negclip": NegCLIPObjective,
              "clic": CLICObjective, "degla": DeGLAObjective}
