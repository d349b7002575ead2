"""Training data sources as iterables of collated batches, starting at any step (for resume)."""
from __future__ import annotations

from typing import Iterator

import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset

from ..errors import UnbagError
from ..world import stream


class WorldBatches(IterableDataset):
    """Batches of the ctrl world stream: batch k holds stream samples [k*B, (k+1)*B)."""

    def __init__(self, seed: int, batch_size: int, px: int, start_step: int, steps: int,
                 twins: bool = False):
        self.seed, self.batch_size, self.px = seed, batch_size, px
        self.start_step, self.steps, self.twins = start_step, steps, twins

    def __iter__(self) -> Iterator[dict]:
        info = torch.utils.data.get_worker_info()
        wid, nw = (info.id, info.num_workers) if info else (0, 1)
        for step in range(self.start_step + wid, self.steps, nw):  # workers interleave steps
            samples = stream.batch(self.seed, step, self.batch_size, self.px)
            out = {"step": step,
                   "images": torch.from_numpy(np.stack([s.image for s in samples])),
                   "captions": [s.caption for s in samples]}
            if self.twins:  # binding-swap hard negatives, for the samples that have one
                start = step * self.batch_size
                tw = [(k, stream.twin(self.seed, start + k, self.px, s)) for k, s in enumerate(samples)]
                tw = [(k, t) for k, t in tw if t is not None]
                out["twin_of"] = torch.tensor([k for k, _ in tw], dtype=torch.long)
                out["twin_images"] = torch.from_numpy(
                    np.stack([t.image for _, t in tw]) if tw else np.zeros((0, self.px, self.px, 3), np.uint8))
                out["twin_captions"] = [t.caption for _, t in tw]
            yield out


def batches(data: str, seed: int, batch_size: int, px: int, start_step: int, steps: int,
            workers: int = 1, twins: bool = False) -> Iterator[dict]:
    """Iterate training batches of a data spec from `start_step` to `steps` (in step order)."""
    if data not in ("world", "ctrl"):
        raise UnbagError(f"unknown training data {data!r}; available: world")
    ds = WorldBatches(seed, batch_size, px, start_step, steps, twins)
    # in-order across workers (DataLoader round-robins IterableDataset workers), so deterministic
    return iter(DataLoader(ds, batch_size=None, num_workers=workers,
                           persistent_workers=False, prefetch_factor=4 if workers else None))
