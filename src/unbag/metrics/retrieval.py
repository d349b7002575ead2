"""Image-text retrieval recall@k from a similarity matrix, ties counted against the model.

A query is correct at k when fewer than k wrong candidates score >= its best right candidate:
a wrong candidate that ties the right one ranks ahead of it, as ties are wrong everywhere in unbag.
"""
from __future__ import annotations

import torch


def ranks(sim: torch.Tensor, positive: torch.Tensor) -> torch.Tensor:
    """1-based pessimistic rank of each row's best positive column: sim, positive [Q, C] -> [Q]."""
    best = sim.masked_fill(~positive, float("-inf")).max(1).values
    ahead = ((sim >= best[:, None]) & ~positive).sum(1)
    return ahead + 1


def recall(sim: torch.Tensor, image_texts: list[list[int]], ks: tuple[int, ...] = (1, 5, 10),
           intervals: bool = False):
    """Recall@k both ways: sim [images, texts]; image_texts[i] = the texts that describe image i.
    With `intervals`: (recalls, their 95% intervals, their methods; metrics/intervals.py)."""
    pos = torch.zeros(sim.shape, dtype=torch.bool)
    for i, ts in enumerate(image_texts):
        pos[i, ts] = True
    out, hits = {}, {}
    for name, s, p in (("i2t", sim, pos), ("t2i", sim.T, pos.T)):
        r = ranks(s, p)
        for k in ks:
            hits[f"{name}/R@{k}"] = (r <= k).float()
            out[f"{name}/R@{k}"] = float(hits[f"{name}/R@{k}"].mean())
    if not intervals:
        return out
    from .intervals import query_intervals
    return (out, *query_intervals(hits))
