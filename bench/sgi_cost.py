"""SGI cost vs global scoring on the same ctrl test set, measured in one run (target <= 10x).

Each protocol starts from a cold cache; the benchmark is rendered once beforehand and shared.
Also prints the group scores so cost and accuracy are read together.

    .venv/bin/python bench/sgi_cost.py --per-category 100 --model builtin
"""
from __future__ import annotations

import argparse
import time

import torch

from unbag import metrics, models
from unbag.benchmarks.ctrl import generated
from unbag.scoring.cosine import score_global
from unbag.sgi.cache import RegionCache
from unbag.sgi.protocol import SGIConfig, score_sgi

# (regions, mode, relations, phases): the default first, then one change at a time
CONFIGS = [("blobs+groups", "mask", "cosine", 2), ("blobs+groups", "mask", "cosine", 1),
           ("blobs+groups", "mask", "geometry", 2), ("gt+groups", "mask", "cosine", 2),
           ("proposals+groups", "mask", "cosine", 2), ("grid", "mask", "cosine", 2),
           ("blobs+groups", "crop", "cosine", 1)]
CATEGORIES = ("color", "size", "material", "count", "relation")


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="builtin")
    p.add_argument("--per-category", type=int, default=100)
    p.add_argument("--threads", type=int, default=0)
    a = p.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    backend = models.load(a.model)
    bench = generated(seed=0, per_category=a.per_category)
    score_global(backend, generated(seed=1, per_category=2))  # warm-up (allocations, first calls)
    g, t_global = timed(lambda: score_global(backend, bench))
    rows = [("global", t_global, g)]
    for regions, mode, relations, phases in CONFIGS:
        cfg = SGIConfig(regions=regions, mode=mode, relations=relations, phases=phases)
        s, t = timed(lambda: score_sgi(backend, bench, cfg=cfg, cache=RegionCache()))
        name = f"sgi {regions}/{mode}" + ("/geometry" if relations == "geometry" else "")
        rows.append((name + (f"/phases {phases}" if mode == "mask" else ""), t, s))
    groups = [it.group for it in bench.items]
    print(f"{len(bench.items)} items, {2 * len(bench.items)} images; model {a.model}; group scores ID/OOD (%)")
    head = " ".join(f"{c:>11s}" for c in CATEGORIES + ("all",))
    print(f"| {'protocol':34s} | {'wall s':>7s} | {'x global':>8s} | " + " | ".join(head.split()) + " |")
    for name, t, s in rows:
        flat, _, _ = metrics.aggregate(metrics.winoground(s), groups, ("group",))
        cells = [f"{100 * flat[f'id/{c}/group']:.1f}/{100 * flat[f'ood/{c}/group']:.1f}" for c in CATEGORIES + ("all",)]
        print(f"| {name:34s} | {t:7.2f} | {t / t_global:8.2f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
