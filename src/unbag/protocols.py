"""Every protocol unbag scores with, collected from the `PROTOCOLS` tables of the layers that score:
scoring/ (global), sgi/ (sgi, sgi:paper), heads/ (head:PATH) and ttm.py (ttm, ttm:OPTIONS;
transductive). To add a protocol: declare it in the table of the file that implements it
(CONTRIBUTING.md)."""
from __future__ import annotations

import functools
from typing import Callable

from .cache import JobCache
from .errors import UnbagError
from .heads.shipped import shipped_head
from .scoring import Protocol
from .sgi.presets import SGI_PRESETS
from .utils import collect

# exact names, then prefixes ending in ':' whose argument follows
PROTOCOLS: dict[str, Protocol] = {k: p for layer in ("unbag.scoring", "unbag.sgi", "unbag.heads", "unbag.ttm")
                                  for k, p in collect(layer, "PROTOCOLS").items()}
__all__ = ["PROTOCOLS", "SGI_PRESETS", "build", "lookup", "resolve"]


def resolve(protocol: str, model_spec: str) -> str:
    """The protocol as it will run and be recorded: a shipped head ('head:builtin:KIND') becomes
    the folder of the head shipped for this built-in model; everything else is unchanged."""
    return shipped_head(protocol, model_spec)


def lookup(protocol: str) -> tuple[Protocol, str]:
    """(the registered protocol, its argument) for a protocol string."""
    if protocol in PROTOCOLS:
        return PROTOCOLS[protocol], ""
    if protocol + ":" in PROTOCOLS and PROTOCOLS[protocol + ":"].bare:  # named alone: its defaults ("ttm")
        return PROTOCOLS[protocol + ":"], ""
    for key, p in PROTOCOLS.items():
        if key.endswith(":") and protocol.startswith(key):
            return p, protocol[len(key):]
    raise UnbagError(f"unknown protocol {protocol!r}; available: {' | '.join(p.form for p in PROTOCOLS.values())}")


def recipe(protocol: str, recorded: dict) -> str:
    """Whose recipe a protocol is, "paper" or "unbag" (`Protocol.recipe`), given what it recorded."""
    p, _ = lookup(protocol)
    return p.recipe(recorded) if callable(p.recipe) else p.recipe


def build(protocol: str, options: dict | None = None, bench="",
          cache: JobCache | None = None) -> tuple[Callable, dict]:
    """(scoring function(backend, bench, batch_size, progress), the options it records) for scoring
    the benchmark `bench` (loaded, or its name; its declared SGI defaults apply under the user's options); an
    option the protocol does not take is an error that names it. A cached protocol remembers its
    work in `cache`, the job's (a fresh one when None)."""
    options = {k: v for k, v in (options or {}).items() if v is not None}
    p, arg = lookup(protocol)
    if options and not p.options:
        raise UnbagError(f"protocol {protocol!r} takes no options, got {', '.join(sorted(options))} "
                         f"(options belong to the SGI protocols: {', '.join(SGI_PRESETS)})")
    fn, recorded = p.build(arg, options, bench)
    if p.cached:
        fn = functools.partial(fn, cache=cache if cache is not None else JobCache())
    return fn, recorded
