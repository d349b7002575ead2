"""Per-item metric values -> flat 'split/category/metric' means, with tie counts."""
from __future__ import annotations

from collections import defaultdict

import torch


def aggregate(per_item: dict[str, torch.Tensor], groups: list[dict[str, str]],
              metrics: tuple[str, ...]) -> tuple[dict[str, float], dict[str, int], dict[str, int]]:
    """(metrics, ties, counts) keyed 'split/category/metric' (counts: 'split/category'), with
    'all' rows for every split and category level."""
    buckets: dict[str, list[int]] = defaultdict(list)
    for n, g in enumerate(groups):
        split, cat = g.get("split", "all"), g.get("category", "all")
        for key in {f"{split}/{cat}", f"{split}/all", f"all/{cat}", "all/all"}:
            buckets[key].append(n)
    out, ties, counts = {}, {}, {}
    for key in sorted(buckets):
        idx = torch.tensor(buckets[key])
        counts[key] = len(idx)
        for m in metrics:
            out[f"{key}/{m}"] = float(per_item[m][idx].float().mean())
            ties[f"{key}/{m}"] = int(per_item[f"tie/{m}"][idx].sum())
    return out, ties, counts
