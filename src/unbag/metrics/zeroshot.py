"""Zero-shot classification metrics from a similarity matrix [images, classes], ties against the model.

Named as CLIP_benchmark names them (`top1`, `top5`, `mean_per_class_recall`); top-k only where
k < the number of classes (CLIP_benchmark reports no top-5 below 6 classes). CLIP_benchmark's
`topk` breaks an exact tie arbitrarily; unbag counts a class that ties the true one as ranked
ahead of it (pessimistic rank, as for retrieval), so a tie is wrong. On untied scores the two agree.
"""
from __future__ import annotations

import torch

from .retrieval import ranks


def zeroshot(sim: torch.Tensor, labels: list[int], ks: tuple[int, ...] = (1, 5), intervals: bool = False):
    """top-k accuracy for each k < classes, and the mean over classes with images of their top-1
    recall. With `intervals`: (those, their 95% intervals, their methods; metrics/intervals.py):
    Wilson for top-k (each image scored on its own against fixed class embeddings), a bootstrap
    over images for the mean per-class recall."""
    y = torch.as_tensor(labels)
    pos = torch.zeros(sim.shape, dtype=torch.bool)
    pos[torch.arange(len(y)), y] = True
    r = ranks(sim, pos)
    out = {f"top{k}": float((r <= k).float().mean()) for k in ks if k == 1 or k < sim.shape[1]}
    right = (r <= 1).float()
    # sklearn's balanced_accuracy_score, which CLIP_benchmark reports: classes without images are left out
    out["mean_per_class_recall"] = float(torch.stack([right[y == c].mean() for c in y.unique()]).mean())
    if not intervals:
        return out
    from .intervals import Part, item_intervals, wilson
    bounds = {f"top{k}": list(wilson(float((r <= k).sum()), len(r))) for k in ks if f"top{k}" in out}
    how = {k: "wilson" for k in bounds}
    classes = {f"class={int(c)}": Part("mean", "right", tuple(int(i) for i in (y == c).nonzero().flatten()))
               for c in y.unique()}
    parts = {**classes, "mean_per_class_recall": Part("macro", "right", of=tuple(classes))}
    got, kinds = item_intervals({"right": right}, parts, len(y))
    # a class's own recall over its images is a binary mean, but the macro needs its bootstrap
    bounds["mean_per_class_recall"], how["mean_per_class_recall"] = got["mean_per_class_recall"], kinds["mean_per_class_recall"]
    return out, bounds, how
