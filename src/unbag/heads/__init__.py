"""Alignment heads over frozen features. Each head is one file that registers itself; this list
of imports is the registry (CONTRIBUTING.md: adding a head)."""
# each registers its head, in this order (help texts and errors list them so)
from . import (
    tfglobal,  # noqa: F401
    tflocal,  # noqa: F401
    tflocal_li,  # noqa: F401
    tfregions,  # noqa: F401
)
from .common import HEADS, Head, HeadConfig, head_class, register_head

__all__ = ["HEADS", "Head", "HeadConfig", "head_class", "register_head"]
