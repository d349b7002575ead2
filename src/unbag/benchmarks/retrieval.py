"""Retrieval sets: images, texts and which texts describe which image.

`ctrl-retrieval` is unbag's general-ability proxy: plain captions of training-distribution scenes
(no SWAP, no held-out pair) from a seed no training run uses; identical caption texts are merged,
so a caption that fits several images counts as right for each of them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .base import ImageRef

CTRL_RETRIEVAL_SEED = 7777


@dataclass
class RetrievalSet:
    name: str
    spec: str
    images: list[ImageRef]
    texts: list[str]
    image_texts: list[list[int]]  # for each image, the indices of the texts that describe it
    info: dict = field(default_factory=dict)
    image_size: int | None = None


def ctrl_retrieval(n: int = 1000, seed: int = CTRL_RETRIEVAL_SEED, px: int = 64) -> RetrievalSet:
    """n stream samples of the world's training distribution, with their captions."""
    from ..world import stream

    images, texts, index, image_texts = [], [], {}, []
    for k in range(n):
        s = stream.sample(seed, k, px)
        images.append(s.image)
        if s.caption not in index:
            index[s.caption] = len(texts)
            texts.append(s.caption)
        image_texts.append([index[s.caption]])
    return RetrievalSet("ctrl-retrieval", f"ctrl-retrieval (seed {seed}, n {n})", images, texts, image_texts,
                        {"seed": seed, "n_images": n, "n_texts": len(texts)}, px)
