"""Winoground's 2x2 metrics on a score tensor, strict `>` (the 2x2 item shape of benchmarks/shapes.py)."""
from __future__ import annotations

import torch

from .groupmatch import group_match

METRICS = ("text", "image", "group", "pair", "groupmatch")


def winoground(scores: torch.Tensor) -> dict[str, torch.Tensor]:
    """2x2 items (caption c belongs to image c), strict `>`:
    text: s(I0,C0) > s(I0,C1) and s(I1,C1) > s(I1,C0); image: s(I0,C0) > s(I1,C0) and
    s(I1,C1) > s(I0,C1); group: both; pair: the mean over the two images of the caption choice;
    groupmatch: s(I0,C0) + s(I1,C1) > s(I0,C1) + s(I1,C0) (Test-Time Matching's GroupMatch, groupmatch.py)."""
    if scores.ndim != 3 or scores.shape[1:] != (2, 2):
        raise ValueError(f"winoground needs scores [items, 2, 2], got {tuple(scores.shape)}")
    s = scores
    t0, t1 = s[:, 0, 0] > s[:, 0, 1], s[:, 1, 1] > s[:, 1, 0]
    i0, i1 = s[:, 0, 0] > s[:, 1, 0], s[:, 1, 1] > s[:, 0, 1]
    tt = (s[:, 0, 0] == s[:, 0, 1]) | (s[:, 1, 1] == s[:, 1, 0])
    it = (s[:, 0, 0] == s[:, 1, 0]) | (s[:, 1, 1] == s[:, 0, 1])
    text, image = t0 & t1, i0 & i1
    return {
        "text": text.float(), "image": image.float(), "group": (text & image).float(),
        "pair": (t0.float() + t1.float()) / 2,
        "tie/text": tt, "tie/image": it, "tie/group": tt | it, "tie/pair": tt,
    } | group_match(scores)


__all__ = ["METRICS", "winoground"]
