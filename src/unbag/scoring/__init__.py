"""Protocol registry: model + benchmark -> score tensor [items x images x captions].

A protocol is a name (`global`, `sgi`, `sgi:paper`) or a prefix with an argument (`head:PATH`).
To add one: write its scoring function (backend, bench, batch_size, progress) -> tensor and
register a builder here (CONTRIBUTING.md).
"""
from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass
from typing import Callable

from ..errors import UnbagError
from .cosine import score_global

# SGI presets: option values on top of SGIConfig's defaults (unbag's SGI). `sgi:paper` is the recipe
# of arXiv 2604.11496: crops of a sliding grid plus the full image, every segment against every
# region, one view per region, each segment's best cosine averaged, no structure checks.
SGI_PRESETS: dict[str, dict] = {
    "sgi": {},
    "sgi:paper": {"regions": "grid", "mode": "crop", "match": "all", "phases": 1, "assign": "max",
                  "relations": "cosine", "counts": "off", "mix": 0.0},
}


@dataclass(frozen=True)
class Protocol:
    """A registered protocol: `build(argument, options, bench)` -> (scoring function, options it records)."""
    form: str
    build: Callable[[str, dict, str], tuple[Callable, dict]]
    options: bool = False  # takes keyword options (e.g. SGI's)


def _global(arg: str, options: dict, bench: str) -> tuple[Callable, dict]:
    return score_global, {}


def _sgi(preset: str) -> Callable[[str, dict, str], tuple[Callable, dict]]:
    def build(arg: str, options: dict, bench: str) -> tuple[Callable, dict]:
        from ..benchmarks import sgi_defaults
        from ..sgi.protocol import SGIConfig, score_sgi
        declared = sgi_defaults(bench)  # what the benchmark's images call for (photos: `selective`)
        if declared and str(options.get("regions", "")).startswith("blobs"):
            warnings.warn(f"SGI regions {options['regions']!r} on {bench}: blobs are found against a plain "
                          f"background and find few objects on photos; this benchmark's default is "
                          f"{declared['regions']!r} (docs/sgi.md)", stacklevel=3)
        cfg = SGIConfig.from_options({**declared, **SGI_PRESETS[preset], **options})
        record = cfg.record()
        if declared and preset == "sgi":
            record["benchmark_defaults"] = declared
        return functools.partial(score_sgi, cfg=cfg), record
    return build


def _head(path: str, options: dict, bench: str) -> tuple[Callable, dict]:
    from ..heads.protocol import score_head
    from ..heads.train import load_head
    _, record = load_head(path)
    recorded = {"head": record["head"], "backbone": record["backbone"]}
    if record["head"]["kind"] == "tfregions":  # SGI's structure checks, added (heads/protocol.py)
        from ..sgi.protocol import SGIConfig
        cfg = SGIConfig.for_benchmark(bench).record()
        recorded["sgi_checks"] = {k: cfg[k] for k in ("counts", "count_weight", "relations", "relation_weight")}
        recorded["sgi_regions"] = cfg["regions"]
    return functools.partial(score_head, path=path), recorded


# exact names, then prefixes ending in ':' whose argument follows
PROTOCOLS: dict[str, Protocol] = {
    "global": Protocol("global (cosine of the global embeddings)", _global),
    "sgi": Protocol("sgi (unbag's SGI)", _sgi("sgi"), options=True),
    "sgi:paper": Protocol("sgi:paper (the paper's SGI recipe)", _sgi("sgi:paper"), options=True),
    "head:": Protocol("head:PATH | head:builtin:tflocal|tfglobal|tfregions (a trained alignment head)", _head),
}


def resolve(protocol: str, model_spec: str) -> str:
    """The protocol as it will run and be recorded: a shipped head ('head:builtin:KIND') becomes
    the folder of the head shipped for this built-in model; everything else is unchanged."""
    from ..heads.shipped import shipped_head
    return shipped_head(protocol, model_spec)


def lookup(protocol: str) -> tuple[Protocol, str]:
    """(the registered protocol, its argument) for a protocol string."""
    if protocol in PROTOCOLS:
        return PROTOCOLS[protocol], ""
    for key, p in PROTOCOLS.items():
        if key.endswith(":") and protocol.startswith(key):
            return p, protocol[len(key):]
    raise UnbagError(f"unknown protocol {protocol!r}; available: {' | '.join(p.form for p in PROTOCOLS.values())}")


def build(protocol: str, options: dict | None = None, bench: str = "") -> tuple[Callable, dict]:
    """(scoring function(backend, bench, batch_size, progress), the options it records) for scoring
    the benchmark named `bench` (its declared SGI defaults apply under the user's options); an
    option the protocol does not take is an error that names it."""
    options = {k: v for k, v in (options or {}).items() if v is not None}
    p, arg = lookup(protocol)
    if options and not p.options:
        raise UnbagError(f"protocol {protocol!r} takes no options, got {', '.join(sorted(options))} "
                         f"(options belong to the SGI protocols: {', '.join(SGI_PRESETS)})")
    return p.build(arg, options, bench)
