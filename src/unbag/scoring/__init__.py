"""Scoring: model + benchmark -> score tensor [items x images x captions], and what a protocol is.

A protocol is a name (`global`, `sgi`, `sgi:paper`) or a prefix with an argument (`head:PATH`),
declared as a `Protocol` (protocol.py) in the module-level `PROTOCOLS` table of the file that
implements it: a builder (argument, options, benchmark name) -> (scoring function
(backend, bench, batch_size, progress[, cache]) -> tensor, the options it records). A protocol
that remembers work between calls declares `cached`: its scoring function then takes the job's
`cache` (a `unbag.cache.JobCache`) and keeps nothing of its own. This layer declares the
global protocol (cosine.py); sgi/, heads/ and ttm.py declare their own, and `unbag.protocols`
collects them (CONTRIBUTING.md).
"""
from __future__ import annotations

from .cosine import score_global
from .protocol import Protocol

__all__ = ["Protocol", "score_global"]
