"""Metrics read only the score tensor [items x images x captions] and the items' groups."""
from .aggregate import aggregate
from .winoground import METRICS, winoground

__all__ = ["aggregate", "winoground", "METRICS"]
