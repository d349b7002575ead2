"""Metrics read only the score tensor [items x images x captions] and the items' groups."""
from .summary import aggregate, summarize
from .winoground import METRICS, winoground

__all__ = ["aggregate", "summarize", "winoground", "METRICS"]
