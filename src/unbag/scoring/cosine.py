"""Protocol `global`: score(I, T) = cos(u(I), t(T)) of the global embeddings."""
from __future__ import annotations

import torch

from ..benchmarks.base import Benchmark, image_key
from ..cache import JobCache
from ..models.base import Backend, config_id, weights_id
from .encode import encode_images, encode_texts, precision_of, remembered
from .protocol import Protocol

CHUNK = 16384  # items whose embeddings are gathered at once


def score_global(backend: Backend, bench: Benchmark, batch_size: int = 256,
                 progress: bool = False, cache: JobCache | None = None) -> torch.Tensor:
    """Score tensor [items, images, captions] of global cosine similarities (the items share a
    shape). Each distinct image and caption is encoded once and the items' scores are gathered a
    chunk at a time (memory follows the distinct inputs, not the items); with the job's `cache`,
    once per job, however many times it is scored (a benchmark's items of several shapes are scored
    one shape at a time)."""
    refs, at_img, wheres = bench.items.images()
    texts, at_txt = bench.items.captions()
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
    at_img, at_txt = torch.from_numpy(at_img), torch.from_numpy(at_txt)
    out = torch.empty(len(at_img), at_img.shape[1], at_txt.shape[1])
    for s in range(0, len(out), CHUNK):
        out[s:s + CHUNK] = torch.einsum("nid,ncd->nic", img[at_img[s:s + CHUNK]], txt[at_txt[s:s + CHUNK]])
    return out


def _global(arg: str, options: dict, bench: "str | Benchmark") -> tuple:
    return score_global, {}


PROTOCOLS = {"global": Protocol("global (cosine of the global embeddings)", _global, cached=True, recipe="paper")}
