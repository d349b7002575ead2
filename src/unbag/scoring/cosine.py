"""Protocol `global`: score(I, T) = cos(u(I), t(T)) of the global embeddings."""
from __future__ import annotations

import torch

from ..benchmarks.base import Benchmark, image_key
from ..cache import JobCache
from ..models.base import Backend, config_id, weights_id
from .encode import encode_images, encode_texts, precision_of, remembered


def score_global(backend: Backend, bench: Benchmark, batch_size: int = 256,
                 progress: bool = False, cache: JobCache | None = None) -> torch.Tensor:
    """Score tensor [items, images, captions] of global cosine similarities (the items share a
    shape). With the job's `cache`, each distinct image and caption is encoded once per job, however
    many times it is scored (a benchmark's items of several shapes are scored one shape at a time)."""
    items = bench.items
    n_img, n_cap = len(items[0].images), len(items[0].captions)
    refs, wheres, texts = bench.flat()
    if cache is None:
        img = encode_images(backend, refs, wheres, batch_size, bench.image_size, progress)
        txt = encode_texts(backend, texts, progress=progress)
    else:
        model = (config_id(backend), precision_of(backend))
        img = remembered(cache, ("global.images", weights_id(backend, image_only=True), *model),
                         [image_key(r) for r in refs],
                         lambda idx: encode_images(backend, [refs[i] for i in idx], [wheres[i] for i in idx],
                                                   batch_size, bench.image_size, progress))
        txt = remembered(cache, ("global.texts", weights_id(backend), *model), texts,
                         lambda idx: encode_texts(backend, [texts[i] for i in idx], progress=progress))
    img = img.view(len(items), n_img, -1)
    txt = txt.view(len(items), n_cap, -1)
    return torch.einsum("nid,ncd->nic", img, txt)
