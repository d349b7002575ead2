"""Batched, deduplicated encoding: each distinct image and caption goes through its encoder once."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from rich.progress import track

from ..benchmarks.base import image_key, load_image
from ..models.base import Backend


def unique(keys: Sequence[str]) -> tuple[list[int], list[int]]:
    """(index of the first occurrence of each distinct key, position of every key among them)."""
    first: dict[str, int] = {}
    order, inverse = [], []
    for i, k in enumerate(keys):
        if k not in first:
            first[k] = len(order)
            order.append(i)
        inverse.append(first[k])
    return order, inverse


def pixels_of(backend: Backend, refs: list, wheres: list[str], expect_side: int | None) -> torch.Tensor:
    """Preprocessed pixels [N, 3, H, W] of image references (errors name `wheres`)."""
    side = backend.image_size
    arrays = [r for r in refs if isinstance(r, np.ndarray)]
    if len(arrays) == len(refs) and all(a.shape[:2] == side for a in arrays):
        # rendered images already at the model's size: skip PIL (equal to preprocess, see tests)
        return backend.normalize_pixels(torch.from_numpy(np.stack(arrays)))
    return torch.stack([backend.preprocess(load_image(r, w, expect_side)) for r, w in zip(refs, wheres)])


@torch.inference_mode()
def encode_images(backend: Backend, refs: list, wheres: list[str] | None = None,
                  batch_size: int = 256, expect_side: int | None = None, progress: bool = False,
                  ) -> torch.Tensor:
    """L2-normalised global embeddings [N, D] of the images, one encoder pass per distinct image."""
    wheres = wheres or ["image"] * len(refs)
    order, inverse = unique([image_key(r) for r in refs])
    out = []
    starts = range(0, len(order), batch_size)
    for s in track(starts, description="encode images", disable=not progress):
        idx = order[s:s + batch_size]
        px = pixels_of(backend, [refs[i] for i in idx], [wheres[i] for i in idx], expect_side)
        out.append(F.normalize(backend.encode_images(px.to(backend.device)).embeds.float(), dim=-1).cpu())
    emb = torch.cat(out) if out else torch.empty(0, 0)
    return emb[torch.tensor(inverse, dtype=torch.long)]


@torch.inference_mode()
def encode_texts(backend: Backend, texts: list[str], batch_size: int = 1024,
                 progress: bool = False) -> torch.Tensor:
    """L2-normalised global embeddings [N, D] of the texts, one encoder pass per distinct text."""
    order, inverse = unique(texts)
    out = []
    starts = range(0, len(order), batch_size)
    for s in track(starts, description="encode texts", disable=not progress):
        ids = backend.tokenize([texts[i] for i in order[s:s + batch_size]]).to(backend.device)
        out.append(F.normalize(backend.encode_texts(ids).embeds.float(), dim=-1).cpu())
    emb = torch.cat(out) if out else torch.empty(0, 0)
    return emb[torch.tensor(inverse, dtype=torch.long)]


