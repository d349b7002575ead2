"""Protocols: model + benchmark -> score tensor [items x images x captions]."""
from __future__ import annotations

import functools
from typing import Callable

from ..errors import UnbagError
from .cosine import score_global

PROTOCOLS = ("global", "sgi", "head:PATH")


def build(protocol: str, options: dict | None = None) -> tuple[Callable, dict]:
    """(scoring function(backend, bench, batch_size, progress), the options it records)."""
    options = {k: v for k, v in (options or {}).items() if v is not None}
    if protocol == "global":
        return score_global, {}
    if protocol == "sgi":
        from ..sgi.protocol import SGIConfig, score_sgi
        try:
            cfg = SGIConfig(**options)
        except TypeError as e:
            raise UnbagError(f"bad SGI option: {e}") from None
        return functools.partial(score_sgi, cfg=cfg), cfg.record()
    if protocol.startswith("head:"):
        from ..heads.protocol import score_head
        from ..heads.train import load_head
        path = protocol[len("head:"):]
        _, record = load_head(path)
        return functools.partial(score_head, path=path), {"head": record["head"], "backbone": record["backbone"]}
    raise UnbagError(f"unknown protocol {protocol!r}; available: {', '.join(PROTOCOLS)}")
