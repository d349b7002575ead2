"""Winoground 2x2 metrics on a score tensor, strict `>` (declared with the item shapes in
benchmarks/shapes.py, where benchmarks name their metrics)."""
from ..benchmarks.shapes import winoground

METRICS = ("text", "image", "group", "pair")

__all__ = ["METRICS", "winoground"]
