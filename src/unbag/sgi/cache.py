"""Region feature cache keyed by (image-tower weights, image content, regions, mode); in memory, optionally on disk."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import torch
from safetensors.torch import load_file

from ..cache import LRU
from ..utils import atomic_write


class RegionCache:
    """Maps a key string to a [R, D] tensor of region embeddings for one image; in memory it keeps
    at most `max_bytes`, dropping the least recently used first (None: no bound)."""

    def __init__(self, directory: str | os.PathLike | None = None, max_bytes: int | None = None):
        self.mem = LRU(max_bytes, size=lambda t: t.nbytes)
        self.dir = Path(directory) if directory else None
        self.hits = self.misses = 0

    @staticmethod
    def key(model: str, image_key: str, regions: list, mode: str, fill: str) -> str:
        blob = json.dumps([model, image_key, [list(map(list, r)) for r in regions], mode, fill])
        return hashlib.sha1(blob.encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.dir / key[:2] / f"{key}.safetensors"

    def get(self, key: str) -> torch.Tensor | None:
        hit = self.mem.get(key)
        if hit is None and self.dir is not None and self._path(key).is_file():
            hit = load_file(str(self._path(key)))["emb"]
            self.mem.put(key, hit)
        if hit is None:
            self.misses += 1
        else:
            self.hits += 1
        return hit

    def put(self, key: str, emb: torch.Tensor) -> None:
        self.mem.put(key, emb)
        if self.dir is not None:
            from safetensors.torch import save as save_bytes
            atomic_write(self._path(key), save_bytes({"emb": emb.contiguous()}))


__all__ = ["RegionCache"]
