"""Region feature cache keyed by (image-tower weights, image content, regions, mode); in memory, optionally on disk."""
from __future__ import annotations

import hashlib
import json
import os
from collections import OrderedDict
from pathlib import Path

import torch
from safetensors.torch import load_file

from ..utils import atomic_write


class RegionCache:
    """Maps a key string to a [R, D] tensor of region embeddings for one image; in memory it keeps
    at most `max_bytes`, dropping the least recently used first (None: no bound)."""

    def __init__(self, directory: str | os.PathLike | None = None, max_bytes: int | None = None):
        self.mem: OrderedDict[str, torch.Tensor] = OrderedDict()
        self.dir = Path(directory) if directory else None
        self.max_bytes, self.bytes = max_bytes, 0
        self.hits = self.misses = 0

    def _keep(self, key: str, emb: torch.Tensor) -> None:
        old = self.mem.pop(key, None)
        self.bytes += emb.nbytes - (old.nbytes if old is not None else 0)
        self.mem[key] = emb
        while self.max_bytes is not None and self.bytes > self.max_bytes and len(self.mem) > 1:
            self.bytes -= self.mem.popitem(last=False)[1].nbytes

    @staticmethod
    def key(model: str, image_key: str, regions: list, mode: str, fill: str) -> str:
        blob = json.dumps([model, image_key, [list(map(list, r)) for r in regions], mode, fill])
        return hashlib.sha1(blob.encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.dir / key[:2] / f"{key}.safetensors"

    def get(self, key: str) -> torch.Tensor | None:
        hit = self.mem.get(key)
        if hit is not None:
            self.mem.move_to_end(key)
        elif self.dir is not None and self._path(key).is_file():
            hit = load_file(str(self._path(key)))["emb"]
            self._keep(key, hit)
        if hit is None:
            self.misses += 1
        else:
            self.hits += 1
        return hit

    def put(self, key: str, emb: torch.Tensor) -> None:
        self._keep(key, emb)
        if self.dir is not None:
            from safetensors.torch import save as save_bytes
            atomic_write(self._path(key), save_bytes({"emb": emb.contiguous()}))


# one process scores the same images under several protocols and models of one image tower (a plan,
# the demo: about 0.2 GB); the bound keeps a long session over large photo benchmarks from growing
DEFAULT_MAX_BYTES = 2 * 2**30
_DEFAULT = RegionCache(max_bytes=DEFAULT_MAX_BYTES)


def default_cache() -> RegionCache:
    """The process-wide in-memory cache (shared by every SGI run in one process, at most
    DEFAULT_MAX_BYTES, least recently used dropped first)."""
    return _DEFAULT


__all__ = ["RegionCache", "default_cache"]
