"""Per-item metric values -> flat 'BUCKET/metric' means with tie counts: ctrl's split x category
buckets (`aggregate`) and the public benchmarks' subsets, micro and macro (`summarize`)."""
from __future__ import annotations

from collections import defaultdict

import torch

from .intervals import Part


def _means(per_item: dict[str, torch.Tensor], buckets: dict[str, list[int]], metrics: tuple[str, ...],
           out: dict, ties: dict, counts: dict, parts: dict | None) -> None:
    """Adds each bucket's mean of every metric over the items it applies to (a NaN value: a
    metric of another item shape), its tie count and its size (and to `parts`, how it was made)."""
    for key in sorted(buckets):
        idx = torch.tensor(buckets[key])
        counts[key] = len(idx)
        for m in metrics:
            v = per_item[m][idx].float()
            if not (~v.isnan()).any():
                continue
            out[f"{key}/{m}"] = float(v.nanmean())
            ties[f"{key}/{m}"] = int(per_item[f"tie/{m}"][idx].sum())
            if parts is not None:
                parts[f"{key}/{m}"] = Part("mean", m, tuple(buckets[key]))


def aggregate(per_item: dict[str, torch.Tensor], groups: list[dict[str, str]],
              metrics: tuple[str, ...], parts: dict | None = None) -> tuple[dict[str, float], dict[str, int], dict[str, int]]:
    """(metrics, ties, counts) keyed 'split/category/metric' (counts: 'split/category'), with
    'all' rows for every split and category level; `parts`, when given, gets how each was made."""
    buckets: dict[str, list[int]] = defaultdict(list)
    for n, g in enumerate(groups):
        split, cat = g.get("split", "all"), g.get("category", "all")
        for key in {f"{split}/{cat}", f"{split}/all", f"all/{cat}", "all/all"}:
            buckets[key].append(n)
    out, ties, counts = {}, {}, {}
    _means(per_item, buckets, metrics, out, ties, counts, parts)
    return out, ties, counts


def summarize(per_item: dict[str, torch.Tensor], subsets: list[str], metrics: tuple[str, ...],
              macro: list[str] | None = None,
              parts: dict | None = None) -> tuple[dict[str, float], dict[str, int], dict[str, int]]:
    """(metrics, ties, counts): 'SUBSET/m' per subset, 'all/m' over items (micro) and 'macro/m',
    the mean over subsets (only those in `macro` when given); `parts`, when given, gets how each
    was made."""
    idx: dict[str, list[int]] = defaultdict(list)
    for n, s in enumerate(subsets):
        idx[s].append(n)
    out, ties, counts = {}, {}, {}
    _means(per_item, {**idx, "all": list(range(len(subsets)))}, metrics, out, ties, counts, parts)
    chosen = [s for s in sorted(idx) if macro is None or s in macro]
    for m in metrics:
        have = [s for s in chosen if f"{s}/{m}" in out]  # the subsets whose items the metric applies to
        # a mean over two or more subsets (or over those a benchmark names, when it has several)
        if have and (len(have) > 1 or (macro is not None and len(idx) > 1)):
            out[f"macro/{m}"] = sum(out[f"{s}/{m}"] for s in have) / len(have)
            if parts is not None:
                parts[f"macro/{m}"] = Part("macro", m, of=tuple(f"{s}/{m}" for s in have))
    counts["macro"] = len(chosen)
    return out, ties, counts
