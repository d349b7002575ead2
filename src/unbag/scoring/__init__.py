"""Scoring: model + benchmark -> score tensor [items x images x captions], and what a protocol is.

A protocol is a name (`global`, `sgi`, `sgi:paper`) or a prefix with an argument (`head:PATH`),
registered as a `Protocol`: a builder (argument, options, benchmark name) -> (scoring function
(backend, bench, batch_size, progress[, cache]) -> tensor, the options it records). A protocol
that remembers work between calls declares `cached`: its scoring function then takes the job's
`cache` (a `unbag.cache.JobCache`) and keeps nothing of its own. This layer declares the
global protocol; sgi/ and heads/ declare their own, and `unbag.protocols` joins them
(CONTRIBUTING.md).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from .cosine import score_global

if TYPE_CHECKING:
    from ..benchmarks.base import Benchmark


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


def _global(arg: str, options: dict, bench: "str | Benchmark") -> tuple[Callable, dict]:
    return score_global, {}


# this layer's own protocols; sgi/ and heads/ declare theirs, and unbag.protocols joins them
PROTOCOLS: dict[str, Protocol] = {"global": Protocol("global (cosine of the global embeddings)", _global,
                                                    cached=True, recipe="paper")}
