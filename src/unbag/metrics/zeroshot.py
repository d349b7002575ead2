"""Zero-shot classification metrics from a similarity matrix [images, classes], ties against the model.

Named as CLIP_benchmark names them (`top1`, `top5`, `mean_per_class_recall`); top-k only where
k < the number of classes (CLIP_benchmark reports no top-5 below 6 classes). CLIP_benchmark's
`topk` breaks an exact tie arbitrarily; unbag counts a class that ties the true one as ranked
ahead of it (pessimistic rank, as for retrieval), so a tie is wrong. On untied scores the two agree.
"""
from __future__ import annotations

import torch

from .retrieval import ranks


def zeroshot(sim: torch.Tensor, labels: list[int], ks: tuple[int, ...] = (1, 5)) -> dict[str, float]:
    """top-k accuracy for each k < classes, and the mean over classes with images of their top-1 recall."""
    y = torch.as_tensor(labels)
    pos = torch.zeros(sim.shape, dtype=torch.bool)
    pos[torch.arange(len(y)), y] = True
    r = ranks(sim, pos)
    out = {f"top{k}": float((r <= k).float().mean()) for k in ks if k == 1 or k < sim.shape[1]}
    right = (r <= 1).float()
    # sklearn's balanced_accuracy_score, which CLIP_benchmark reports: classes without images are left out
    out["mean_per_class_recall"] = float(torch.stack([right[y == c].mean() for c in y.unique()]).mean())
    return out
