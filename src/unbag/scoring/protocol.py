"""What a scoring protocol is: `Protocol`, the entry of a module-level `PROTOCOLS` table."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Protocol:
    """A registered protocol: `build(argument, options, bench)` -> (scoring function, options it records)."""
    form: str
    build: Callable[[str, dict, str], tuple[Callable, dict]]
    options: bool = False  # takes keyword options (e.g. SGI's)
    cached: bool = False  # its scoring function takes `cache=` (the job's JobCache)
    # whose recipe it is: "paper" (a paper's, or the baseline every paper reports) or "unbag"
    # (unbag's own improvement); or a function of the options it records (a head's: its kind's)
    recipe: str | Callable[[dict], str] = "paper"
    # it adapts the model on the items it scores (ttm): its results say so, and every table labels it
    transductive: bool = False
    bare: bool = False  # a prefix protocol ("ttm:") that may be named alone ("ttm") for its defaults
