"""Winoground 2x2 metrics on a score tensor, strict `>`: a tie is wrong and is counted.

scores[n, i, c] = s(image i, caption c) of item n; caption c belongs to image c.
- text:  s(I0,C0) > s(I0,C1) and s(I1,C1) > s(I1,C0)
- image: s(I0,C0) > s(I1,C0) and s(I1,C1) > s(I0,C1)
- group: text and image
- pair:  mean over the two images of [s(Ii,Ci) > s(Ii,C(1-i))] (pairwise caption accuracy)
"""
from __future__ import annotations

import torch

METRICS = ("text", "image", "group", "pair")


def winoground(scores: torch.Tensor) -> dict[str, torch.Tensor]:
    """Per-item values of each metric and, under 'tie/<metric>', whether a comparison tied."""
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
    }
