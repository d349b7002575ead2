"""Per-item values -> flat 'subset/metric' results for the public benchmarks, micro and macro."""
from __future__ import annotations

from collections import defaultdict

import torch


def summarize(per_item: dict[str, torch.Tensor], subsets: list[str], metrics: tuple[str, ...],
              macro: list[str] | None = None) -> tuple[dict[str, float], dict[str, int], dict[str, int]]:
    """(metrics, ties, counts): 'SUBSET/m' per subset, 'all/m' over items (micro) and 'macro/m',
    the mean over subsets (only those in `macro` when given)."""
    idx: dict[str, list[int]] = defaultdict(list)
    for n, s in enumerate(subsets):
        idx[s].append(n)
    out, ties, counts = {}, {}, {}
    for s in sorted(idx):
        t = torch.tensor(idx[s])
        counts[s] = len(t)
        for m in metrics:
            out[f"{s}/{m}"] = float(per_item[m][t].float().mean())
            ties[f"{s}/{m}"] = int(per_item[f"tie/{m}"][t].sum())
    counts["all"] = len(subsets)
    chosen = [s for s in sorted(idx) if macro is None or s in macro]
    for m in metrics:
        out[f"all/{m}"] = float(per_item[m].float().mean())
        ties[f"all/{m}"] = int(per_item[f"tie/{m}"].sum())
        if len(idx) > 1 and chosen:
            out[f"macro/{m}"] = sum(out[f"{s}/{m}"] for s in chosen) / len(chosen)
    counts["macro"] = len(chosen)
    return out, ties, counts
