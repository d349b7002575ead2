"""Protocols: model + benchmark -> score tensor [items x images x captions]."""
from __future__ import annotations

from ..errors import UnbagError
from .cosine import score_global

PROTOCOLS = {"global": score_global}


def get(protocol: str):
    """The scoring function of a protocol name."""
    if protocol not in PROTOCOLS:
        raise UnbagError(f"unknown protocol {protocol!r}; available: {', '.join(PROTOCOLS)}")
    return PROTOCOLS[protocol]
