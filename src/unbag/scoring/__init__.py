"""Protocols: model + benchmark -> score tensor [items x images x captions]."""
from __future__ import annotations

import functools
from typing import Callable

from ..errors import UnbagError
from .cosine import score_global

# SGI presets: option values on top of SGIConfig's defaults (unbag's SGI). `sgi:paper` is the recipe
# of arXiv 2604.11496: crops of a sliding grid plus the full image, every segment against every
# region, one view per region, each segment's best cosine averaged.
SGI_PRESETS: dict[str, dict] = {
    "sgi": {},
    "sgi:paper": {"regions": "grid", "mode": "crop", "match": "all", "phases": 1, "assign": "max",
                  "relations": "cosine", "counts": "off", "mix": 0.0},
}
PROTOCOLS = ("global", *SGI_PRESETS, "head:PATH", "head:builtin:tflocal|tfglobal|tfregions")


def resolve(protocol: str, model_spec: str) -> str:
    """The protocol as it will run and be recorded: a shipped head ('head:builtin:KIND') becomes
    the folder of the head shipped for this built-in model; everything else is unchanged."""
    from ..heads.shipped import shipped_head
    return shipped_head(protocol, model_spec)


def build(protocol: str, options: dict | None = None) -> tuple[Callable, dict]:
    """(scoring function(backend, bench, batch_size, progress), the options it records); an option
    the protocol does not take is an error that names it."""
    options = {k: v for k, v in (options or {}).items() if v is not None}
    if protocol in SGI_PRESETS:
        from ..sgi.protocol import SGIConfig, score_sgi
        cfg = SGIConfig.from_options({**SGI_PRESETS[protocol], **options})
        return functools.partial(score_sgi, cfg=cfg), cfg.record()
    if options:
        raise UnbagError(f"protocol {protocol!r} takes no options, got {', '.join(sorted(options))} "
                         f"(options belong to the SGI protocols: {', '.join(SGI_PRESETS)})")
    if protocol == "global":
        return score_global, {}
    if protocol.startswith("head:"):
        from ..heads.protocol import score_head
        from ..heads.train import load_head
        path = protocol[len("head:"):]
        _, record = load_head(path)
        recorded = {"head": record["head"], "backbone": record["backbone"]}
        if record["head"]["kind"] == "tfregions":  # SGI's structure checks, added (heads/protocol.py)
            from ..sgi.protocol import SGIConfig
            cfg = SGIConfig().record()
            recorded["sgi_checks"] = {k: cfg[k] for k in ("counts", "count_weight", "relations", "relation_weight")}
        return functools.partial(score_head, path=path), recorded
    raise UnbagError(f"unknown protocol {protocol!r}; available: {', '.join(PROTOCOLS)}")
