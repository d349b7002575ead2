"""Protocol `global`: score(I, T) = cos(u(I), t(T)) of the global embeddings."""
from __future__ import annotations

import torch

from ..benchmarks.base import Benchmark
from ..models.base import Backend
from .encode import encode_images, encode_texts


def score_global(backend: Backend, bench: Benchmark, batch_size: int = 256,
                 progress: bool = False) -> torch.Tensor:
    """Score tensor [items, images, captions] of global cosine similarities."""
    items = bench.items
    n_img, n_cap = len(items[0].images), len(items[0].captions)
    refs, wheres, texts = bench.flat()
    img = encode_images(backend, refs, wheres, batch_size, bench.image_size, progress)
    txt = encode_texts(backend, texts, progress=progress)
    img = img.view(len(items), n_img, -1)
    txt = txt.view(len(items), n_cap, -1)
    return torch.einsum("nid,ncd->nic", img, txt)
