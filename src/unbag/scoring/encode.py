"""Batched, deduplicated encoding: each distinct image and caption goes through its encoder once."""
from __future__ import annotations

import contextlib
import os
from typing import Callable, Iterator, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from rich.progress import track

from ..benchmarks.base import image_key, load_image
from ..cache import LRU, JobCache
from ..errors import UnbagError
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


def remembered(cache: JobCache, part: tuple, keys: Sequence[str],
               encode: Callable[[list[int]], torch.Tensor]) -> torch.Tensor:
    """Embeddings [len(keys), D] of the inputs named `keys`, the ones not yet in the job's `cache`
    part (bounded by its bytes) made by `encode(positions)` and remembered."""
    memo = cache.part(part, lambda max_bytes: LRU(max_bytes, size=lambda t: t.nbytes))
    order, _ = unique(keys)
    missing = [i for i in order if keys[i] not in memo]
    if missing:
        for i, e in zip(missing, encode(missing)):
            memo.put(keys[i], e.clone())  # its own storage: the batch it came from can be freed
    got = {k: memo.get(k) for k in {keys[i] for i in order}}
    if any(v is None for v in got.values()):  # the bound dropped some of this call's own: encode them now
        return encode(list(range(len(keys))))
    return torch.stack([got[k] for k in keys]) if keys else torch.empty(0, 0)


# image decoding and preprocessing run in this many DataLoader processes (files and bytes only)
WORKERS = int(os.environ.get("UNBAG_WORKERS", min(4, max(0, (os.cpu_count() or 1) - 1))))


def _in_memory(refs: list, side: tuple[int, int]) -> bool:
    return all(isinstance(r, np.ndarray) and r.shape[:2] == side for r in refs)


def pixels_of(backend: Backend, refs: list, wheres: list[str], expect_side: int | None) -> torch.Tensor:
    """Preprocessed pixels [N, 3, H, W] of image references (errors name `wheres`)."""
    if _in_memory(refs, backend.image_size):
        # rendered images already at the model's size: skip PIL (equal to preprocess, see tests)
        return backend.normalize_pixels(torch.from_numpy(np.stack(refs)))
    return torch.stack([backend.preprocess(load_image(r, w, expect_side)) for r, w in zip(refs, wheres)])


class _Batches(torch.utils.data.Dataset):
    """Batch k of the given image references, decoded and preprocessed (in a loader worker)."""

    def __init__(self, prep: Callable, refs: list, wheres: list[str], expect_side: int | None, batch_size: int):
        self.prep, self.refs, self.wheres = prep, refs, wheres
        self.expect_side, self.batch_size = expect_side, batch_size

    def __len__(self) -> int:
        return (len(self.refs) + self.batch_size - 1) // self.batch_size

    def __getitem__(self, k: int) -> torch.Tensor | str:
        sl = slice(k * self.batch_size, (k + 1) * self.batch_size)
        try:
            return torch.stack([self.prep(load_image(r, w, self.expect_side))
                                for r, w in zip(self.refs[sl], self.wheres[sl])])
        except UnbagError as e:  # handed back as its message: a worker's raise reaches the user as a traceback
            return str(e)


def pixel_batches(backend: Backend, refs: list, wheres: list[str], batch_size: int,
                  expect_side: int | None) -> Iterator[torch.Tensor]:
    """Preprocessed batches of images: in-memory renders directly, files through a DataLoader
    (WORKERS processes, pinned memory on CUDA)."""
    if _in_memory(refs, backend.image_size) or WORKERS == 0 or len(refs) <= batch_size:
        for s in range(0, len(refs), batch_size):
            yield pixels_of(backend, refs[s:s + batch_size], wheres[s:s + batch_size], expect_side)
        return
    ds = _Batches(backend.preprocessor(), refs, wheres, expect_side, batch_size)
    for batch in torch.utils.data.DataLoader(ds, batch_size=None, num_workers=min(WORKERS, len(ds)),
                                             pin_memory=backend.device.type == "cuda"):
        if isinstance(batch, str):
            raise UnbagError(batch)
        yield batch


PRECISIONS = ("auto", "fp32", "bf16", "fp16")


def precision_of(backend: Backend) -> str:
    """The precision a backend encodes in: its `precision`, where `auto` is bf16 on CUDA, fp32 elsewhere."""
    p = getattr(backend, "precision", "auto")
    return ("bf16" if backend.device.type == "cuda" else "fp32") if p == "auto" else p


def autocast(backend: Backend):
    """Autocast in the backend's precision (features are returned in fp32); fp32: none."""
    p = precision_of(backend)
    if p == "fp32":
        return contextlib.nullcontext()
    return torch.autocast(backend.device.type, dtype=torch.bfloat16 if p == "bf16" else torch.float16)


@torch.inference_mode()
def encode_images(backend: Backend, refs: list, wheres: list[str] | None = None,
                  batch_size: int = 256, expect_side: int | None = None, progress: bool = False,
                  ) -> torch.Tensor:
    """L2-normalised global embeddings [N, D] of the images, one encoder pass per distinct image."""
    wheres = wheres or ["image"] * len(refs)
    order, inverse = unique([image_key(r) for r in refs])
    out = []
    batches = pixel_batches(backend, [refs[i] for i in order], [wheres[i] for i in order], batch_size, expect_side)
    total = (len(order) + batch_size - 1) // batch_size
    for px in track(batches, total=total, description="encode images", disable=not progress):
        with autocast(backend):
            emb = backend.encode_images(px.to(backend.device, non_blocking=True)).embeds
        out.append(F.normalize(emb.float(), dim=-1).cpu())
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
        with autocast(backend):
            emb = backend.encode_texts(ids).embeds
        out.append(F.normalize(emb.float(), dim=-1).cpu())
    emb = torch.cat(out) if out else torch.empty(0, 0)
    return emb[torch.tensor(inverse, dtype=torch.long)]


