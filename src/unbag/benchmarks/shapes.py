"""Item shapes and their metrics: pure functions of a score tensor [items, images, captions].

Every function returns per-item values (floats in [0, 1]) and, under 'tie/<metric>', whether a
comparison that decided the item tied. unbag's strict rule: a tie is wrong, and in a ranking a
tied candidate goes above the true one. Where an official script breaks ties another way, the
`_official` twin follows it (argmax's first maximum, a stable sort, sklearn's tied thresholds).

Shapes: one image x K captions (`choose` over captions), K images x one caption (`choose` over
images), 2x2 (`winoground`), a rank (`recall_at`), per-class average precision (`average_precision`).
"""
from __future__ import annotations

import torch

from ..metrics.winoground import winoground  # noqa: F401 (the 2x2 shape's metric, declared with metrics)


def choose(s: torch.Tensor, label: torch.Tensor, name: str = "acc", official: bool = True) -> dict[str, torch.Tensor]:
    """Rows s [n, K] of candidates, `label` [n] the true one's index: `name` is right when the true
    candidate beats every other (strict); `name`_official when argmax, taking the first of equal
    maxima, picks it (numpy's and torch's argmax: a tie with an earlier candidate is wrong, with a
    later one right)."""
    if s.ndim != 2 or label.shape != (s.shape[0],):
        raise ValueError(f"choose needs scores [n, K] and labels [n], got {tuple(s.shape)} and {tuple(label.shape)}")
    true = s.gather(1, label[:, None])
    other = torch.ones_like(s, dtype=torch.bool).scatter_(1, label[:, None], False)
    earlier = torch.arange(s.shape[1])[None, :] < label[:, None]
    strict = ((s < true) | ~other).all(1)
    tie = ((s == true) & other).any(1)
    out = {name: strict.float(), f"tie/{name}": tie}
    if official:
        won = ((s < true) | ((s == true) & ~earlier) | ~other).all(1)
        out |= {f"{name}_official": won.float(), f"tie/{name}_official": tie}
    return out


def first_caption(scores: torch.Tensor, name: str = "acc", official: bool = True) -> dict[str, torch.Tensor]:
    """One image x K captions, the first caption the true one."""
    if scores.ndim != 3 or scores.shape[1] != 1 or scores.shape[2] < 2:
        raise ValueError(f"first_caption needs scores [items, 1, >=2], got {tuple(scores.shape)}")
    return choose(scores[:, 0], torch.zeros(len(scores), dtype=torch.long), name, official)


def recall_at(s: torch.Tensor, label: torch.Tensor, ks: tuple[int, ...] = (1, 3, 5, 10),
              official: bool = True) -> dict[str, torch.Tensor]:
    """R@k of rows s [n, K] with the true candidate at `label`: strict rank = the number of other
    candidates scoring >= it; official rank = those scoring > it plus the tied ones before it
    (a stable descending sort)."""
    true = s.gather(1, label[:, None])
    other = torch.ones_like(s, dtype=torch.bool).scatter_(1, label[:, None], False)
    earlier = torch.arange(s.shape[1])[None, :] < label[:, None]
    above, tied = ((s > true) & other), ((s == true) & other)
    strict = (above | tied).sum(1)
    stable = (above | (tied & earlier)).sum(1)
    out: dict[str, torch.Tensor] = {}
    for k in ks:
        out[f"R@{k}"] = (strict < k).float()
        out[f"tie/R@{k}"] = (stable < k) & (strict >= k)
        if official:
            out[f"R@{k}_official"] = (stable < k).float()
            out[f"tie/R@{k}_official"] = out[f"tie/R@{k}"]
    return out


def _ap(s: torch.Tensor, y: torch.Tensor, tied_share: bool) -> float:
    """Average precision of scores s [m] for 0/1 labels y [m]: `tied_share`, sklearn's step AP in
    which equal scores form one threshold (torchmetrics' binary AP); else every item its own
    threshold with tied negatives ranked above tied positives (strict)."""
    pos = int(y.sum())
    if tied_share:
        out, seen_tp, seen = 0.0, 0, 0
        for t in torch.unique(s, sorted=True).flip(0):
            at = s == t
            tp, n = int(y[at].sum()), int(at.sum())
            seen_tp, seen = seen_tp + tp, seen + n
            out += tp / pos * (seen_tp / seen)
        return out
    order = sorted(range(len(s)), key=lambda i: (-float(s[i]), int(y[i])))  # negatives first among ties
    hits, out = 0, 0.0
    for rank, i in enumerate(order, 1):
        if y[i]:
            hits += 1
            out += hits / rank
    return out / pos


def average_precision(scores: torch.Tensor, labels: list[torch.Tensor]) -> dict[str, torch.Tensor]:
    """Per-class AP: item n is a class, scores [n, K, 1] its K images against its name, labels[n]
    [K] 0/1 which images are the class; `mAP` strict (tied negatives first), `mAP_official` with
    tied scores sharing a threshold. A class needs a positive (callers skip the rest)."""
    if scores.ndim != 3 or scores.shape[2] != 1:
        raise ValueError(f"average_precision needs scores [classes, images, 1], got {tuple(scores.shape)}")
    strict, shared, tie = [], [], []
    for s, y in zip(scores[:, :, 0], labels):
        y = y.to(torch.long)
        if int(y.sum()) == 0:
            raise ValueError("average_precision: a class without a positive image has no AP")
        strict.append(_ap(s, y, False))
        shared.append(_ap(s, y, True))
        tie.append(bool(any(((s == v).sum() > 1) for v in s[y == 1])))
    t = torch.tensor(tie, dtype=torch.bool)
    return {"mAP": torch.tensor(strict), "tie/mAP": t, "mAP_official": torch.tensor(shared), "tie/mAP_official": t}


def labels_of(items, key: str = "label") -> torch.Tensor:
    """The items' `meta[key]` as a long tensor (the true candidate's index)."""
    return torch.tensor([int(it.meta[key]) for it in items], dtype=torch.long)


__all__ = ["average_precision", "choose", "first_caption", "labels_of", "recall_at", "winoground"]
