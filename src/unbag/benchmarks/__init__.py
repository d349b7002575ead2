"""Benchmark registry: `NAME` or `NAME:DIR` -> Benchmark."""
from __future__ import annotations

from ..errors import UnbagError
from .base import Benchmark, Item, image_key, load_image

BENCHMARKS = ("ctrl", "ctrl-retrieval")


def load(spec: str, seed: int = 0):
    """Load a benchmark named by a spec: `ctrl` (generated in memory), `ctrl:DIR`, or the
    retrieval set `ctrl-retrieval[:N]`."""
    name, _, path = spec.partition(":")
    if name == "ctrl-retrieval":
        from .retrieval import ctrl_retrieval
        return ctrl_retrieval(int(path) if path else 1000)
    if name == "ctrl":
        from . import ctrl
        return ctrl.load(path) if path else ctrl.generated(seed=seed)
    raise UnbagError(f"unknown benchmark {name!r}; available: {', '.join(BENCHMARKS)} (as NAME or NAME:DIR)")


__all__ = ["Benchmark", "Item", "image_key", "load_image", "load", "BENCHMARKS"]
