"""Alignment heads over frozen features. Each head is one file declaring its `Head` in a module-level
`HEADS` table; `heads()` collects them (CONTRIBUTING.md: adding a head)."""
from .common import Head, HeadConfig, head_class, heads

HEADS = heads()  # every head, by name (in file-name order: help texts and errors list them so)

__all__ = ["HEADS", "Head", "HeadConfig", "head_class", "heads"]
