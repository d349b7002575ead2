"""95% intervals on every reported metric, and paired comparisons of two results on one item set.

- A proportion over independent items (a bucket's mean of a 0/1 per-item value: accuracy, a
  Winoground item's text / image / group score, zero-shot top-k) gets the Wilson score interval
  (Wilson 1927; Brown, Cai & DasGupta 2001 recommend it over the normal approximation, which
  collapses to a point at 0% and 100%).
- Everything else (a macro average over subsets, a mean of non-binary per-item values such as
  average precision, retrieval recall, a benchmark's own breakdowns over paired items) gets a
  seeded percentile bootstrap over items: RESAMPLES resamples of the benchmark's items with
  replacement, each metric recomputed on each, the 2.5th and 97.5th percentiles kept. Items a
  benchmark scores together (What'sUp's pairs: `Benchmark.cluster`) are resampled together.

Results record `intervals: {KEY: [lo, hi]}` and `interval_methods: {KEY: "wilson" | "bootstrap"}`
beside `interval_config` (level, resamples, seed): docs/results.md, "Intervals".
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch

LEVEL = 0.95
Z = 1.959963984540054  # the standard normal's 97.5th percentile
RESAMPLES = 1000
BREAKDOWN_RESAMPLES = 200  # a benchmark's own breakdown is recomputed in Python per resample
SEED = 0


def wilson(k: float, n: int, z: float = Z) -> tuple[float, float]:
    """The Wilson score interval of k successes in n trials (n = 0: the whole [0, 1])."""
    if n <= 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


CHUNK_CELLS = 1 << 22  # resamples x units drawn at a time: memory stays flat in the number of items


def resample_counts(n: int, resamples: int = RESAMPLES, seed: int = SEED) -> torch.Tensor:
    """How many times each of n units is drawn in each resample with replacement [resamples, n]."""
    return torch.cat(list(counts_in_chunks(n, resamples, seed))) if n else torch.zeros(resamples, 0)


def counts_in_chunks(n: int, resamples: int = RESAMPLES, seed: int = SEED, cells: int | None = None):
    """`resample_counts` a block of resamples at a time ([block, n] each, block * n <= `cells`):
    the same draws, in the same order, as the whole tensor (one generator, read in sequence). Each
    block is a view of one buffer, overwritten by the next: the buffers are allocated once, so
    that the heap is not fragmented by blocks of many sizes."""
    g = torch.Generator().manual_seed(seed)
    step = max(1, min(resamples, (cells or CHUNK_CELLS) // max(n, 1)))
    draws, counts, ones = torch.empty(step, n, dtype=torch.long), torch.empty(step, n), torch.ones(step, n)
    for lo in range(0, resamples, step):
        k = min(step, resamples - lo)
        torch.randint(n, (k, n), generator=g, out=draws[:k])
        yield counts[:k].zero_().scatter_add_(1, draws[:k], ones[:k])


def percentile(values: torch.Tensor, level: float = LEVEL) -> tuple[float, float]:
    """The central `level` percentile interval of bootstrap values (NaNs, resamples with no item
    of a bucket, left out)."""
    v = values[~values.isnan()].double()
    if not len(v):
        return math.nan, math.nan
    a = (1 - level) / 2
    return float(torch.quantile(v, a)), float(torch.quantile(v, 1 - a))


def binary(v: torch.Tensor) -> bool:
    return bool(((v == 0) | (v == 1)).all())


@dataclass(frozen=True)
class Part:
    """How a reported metric was made from per-item values: the mean of `metric` over `items`,
    or ("macro") the mean of other keys' values (weighted by `weights` when given)."""
    kind: str  # mean | macro
    metric: str = ""
    items: tuple[int, ...] = ()
    of: tuple[str, ...] = ()
    weights: tuple[float, ...] = ()


def item_intervals(per_item: dict[str, torch.Tensor], parts: dict[str, Part], n: int,
                   clusters: list | None = None,
                   breakdown: Callable[[list[tuple[int, int]]], dict[str, float]] | None = None,
                   breakdown_keys: tuple[str, ...] = (), resamples: int = RESAMPLES,
                   seed: int = SEED, keys=None) -> tuple[dict[str, list[float]], dict[str, str]]:
    """(intervals, methods) of the keys of `parts` (those among `keys`, when given) and of
    `breakdown_keys`: Wilson for a mean of 0/1 values over independent items, else the percentile
    bootstrap over the n items (over `clusters`, one label per item, when items are scored
    together), drawn a block of resamples at a time. `breakdown(draw)` recomputes the breakdown
    keys on a resample given as (item index, draw) pairs."""
    out: dict[str, list[float]] = {}
    how: dict[str, str] = {}
    boot = []
    for key in (parts if keys is None else [k for k in keys if k in parts]):
        p = parts[key]
        got = per_item[p.metric][list(p.items)].float() if p.kind == "mean" else None
        if got is not None and clusters is None and binary(got[~got.isnan()]):
            got = got[~got.isnan()]
            out[key], how[key] = list(wilson(float(got.sum()), len(got))), "wilson"
        else:
            boot.append(key)
    groups = _cluster_index(clusters, n)
    drawn = bootstrap_values(per_item, parts, boot, n, clusters, resamples, seed) if boot and n else {}
    for key in boot:
        out[key], how[key] = (list(percentile(drawn[key])) if n else [math.nan, math.nan]), "bootstrap"
    if breakdown is not None and breakdown_keys:
        got = [breakdown(idx) for idx in _draws(groups, min(resamples, BREAKDOWN_RESAMPLES), seed)] if n else []
        for key in breakdown_keys:
            vals = torch.tensor([g.get(key, math.nan) for g in got], dtype=torch.float64)
            out[key], how[key] = list(percentile(vals)), "bootstrap"
    return {k: [_round(a) for a in v] for k, v in out.items()}, how


def bootstrap_values(per_item: dict[str, torch.Tensor], parts: dict[str, Part], keys: list[str], n: int,
                     clusters: list | None = None, resamples: int = RESAMPLES,
                     seed: int = SEED) -> dict[str, torch.Tensor]:
    """Each resample's value of each of `keys` [resamples], the n items (or their `clusters`)
    drawn a block at a time (`counts_in_chunks`) into buffers allocated once: memory flat in n
    beyond the per-item values."""
    leaves: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}  # a bucket mean: its items and their values

    def collect(key: str) -> None:
        p = parts[key]
        if p.kind == "macro":
            for k in p.of:
                collect(k)
        elif key not in leaves:
            idx = torch.tensor(sorted(p.items), dtype=torch.long)
            v = per_item[p.metric][idx].float()
            keep = ~v.isnan()
            leaves[key] = (idx[keep].contiguous(), v[keep].contiguous())

    for k in keys:
        collect(k)
    unit = None
    if clusters is not None:  # an item's draws are its cluster's
        index: dict = {}
        unit = torch.tensor([index.setdefault(c, len(index)) for c in clusters])
    units = n if unit is None else int(unit.max()) + 1
    step = max(1, min(resamples, CHUNK_CELLS // max(units, 1)))
    widest = max([len(i) for i, _ in leaves.values()] + [1])
    gathered = torch.empty(step * widest)
    spread = torch.empty(step, n) if unit is not None else None
    got: dict[str, list[torch.Tensor]] = {k: [] for k in keys}
    for counts in counts_in_chunks(units, resamples, seed):
        k = len(counts)
        if unit is not None:
            counts = torch.index_select(counts, 1, unit, out=spread[:k])
        memo = {}
        for key, (idx, v) in leaves.items():
            w = torch.index_select(counts, 1, idx, out=gathered[:k * len(idx)].view(k, len(idx)))
            memo[key] = (w @ v) / w.sum(1)
        for key in keys:
            got[key].append(composed_of(parts, key, memo))
    return {k: torch.cat(v) for k, v in got.items()}


def composed_of(parts: dict[str, Part], key: str, memo: dict[str, torch.Tensor]) -> torch.Tensor:
    """Each resample's value of a reported key [resamples]: a bucket mean from `memo` (its values on
    these draws), or the (weighted) mean of the keys a macro averages, remembered in `memo`."""
    if key not in memo:
        p = parts[key]
        each = torch.stack([composed_of(parts, k, memo) for k in p.of])
        memo[key] = each.mean(0) if not p.weights else (torch.tensor(p.weights, dtype=each.dtype)[:, None] * each).sum(0)
    return memo[key]


def _cluster_index(clusters: list | None, n: int) -> list[list[int]]:
    if clusters is None:
        return [[i] for i in range(n)]
    index: dict = {}
    for i, c in enumerate(clusters):
        index.setdefault(c, []).append(i)
    return list(index.values())


def _draws(groups: list[list[int]], resamples: int, seed: int):
    """Resamples as (item index, draw) pairs, whole clusters drawn (`draw` tells a cluster's
    copies in one resample apart), for a breakdown recomputed per resample; one at a time."""
    g = torch.Generator().manual_seed(seed + 1)
    for _ in range(resamples):
        row = torch.randint(len(groups), (len(groups),), generator=g).tolist()
        yield [(i, d) for d, u in enumerate(row) for i in groups[u]]


def _round(x: float) -> float:
    return x if math.isnan(x) else round(x, 6)


def query_intervals(hits: dict[str, torch.Tensor], resamples: int = RESAMPLES,
                    seed: int = SEED) -> tuple[dict[str, list[float]], dict[str, str]]:
    """Intervals of retrieval recall (KEY -> each query's 0/1 hit): a bootstrap over the queries,
    whose ranks share their candidates (one resampling per query side)."""
    out, how = {}, {}
    for key, h in hits.items():
        part = {key: Part("mean", key, tuple(range(len(h))))}
        got = bootstrap_values({key: h}, part, [key], len(h), resamples=resamples, seed=seed)[key]
        out[key], how[key] = [_round(a) for a in percentile(got)], "bootstrap"
    return out, how


def interval_config(resamples: int = RESAMPLES, seed: int = SEED) -> dict:
    """What a results file records of how its intervals were made."""
    return {"level": LEVEL, "resamples": resamples, "breakdown_resamples": min(resamples, BREAKDOWN_RESAMPLES),
            "seed": seed}
