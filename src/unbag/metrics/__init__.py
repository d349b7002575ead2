"""Metrics read only the score tensor [items x images x captions] and the items' groups."""
from .groupmatch import group_match
from .summary import aggregate, summarize
from .winoground import METRICS, winoground

__all__ = ["aggregate", "group_match", "summarize", "winoground", "METRICS"]
