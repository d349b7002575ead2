"""SGI cost vs global scoring on the same ctrl test set, measured in one run.

Each protocol starts from a cold cache; the benchmark is rendered once beforehand and shared.
Also prints the group scores so cost and accuracy are read together. `mode=tokens` encodes each
region from only the patch tokens it covers (docs/sgi.md, "Region modes").

    .venv/bin/python bench/sgi_cost.py --per-category 100 --model builtin
    .venv/bin/python bench/sgi_cost.py --bench runs/ctrl3d --model builtin

With `--bench DIR` (a ctrl built by `unbag world build`, flat or 3D) the items are that folder's,
and SGI takes the options the benchmark declares (3D: chroma regions, rows fill), as `unbag eval`.
"""
from __future__ import annotations

import argparse
import time
from dataclasses import replace

import torch

from unbag import metrics, models
from unbag.benchmarks import sgi_defaults
from unbag.benchmarks.ctrl import generated, load
from unbag.scoring.cosine import score_global
from unbag.sgi.config import SGIConfig
from unbag.sgi.presets import SGI_PRESETS
from unbag.sgi.protocol import score_sgi
from unbag.world.swap import CATEGORIES

# (row name, SGI options): unbag's default first, then one change at a time, then the paper's recipe
# (the phase-count row is added in main: the count the benchmark does not declare)
CONFIGS = [("sgi (the benchmark's default)", {}), ("sgi mode=tokens", {"mode": "tokens"}),
           ("sgi:paper (crop)", SGI_PRESETS["sgi:paper"]),
           ("sgi:paper mode=tokens", {**SGI_PRESETS["sgi:paper"], "mode": "tokens"})]


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="builtin")
    p.add_argument("--per-category", type=int, default=100)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--bench", default=None, help="a built ctrl folder (default: the flat ctrl generated, seed 0)")
    a = p.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    backend = models.load(a.model)
    bench = load(a.bench) if a.bench else generated(seed=0, per_category=a.per_category, style="flat")
    declared = sgi_defaults(bench)
    score_global(backend, replace(bench, items=bench.items[-20:]))  # warm-up (allocations, first calls)
    g, t_global = timed(lambda: score_global(backend, bench))
    rows = [("global", t_global, g)]
    other = 1 if SGIConfig.from_options(declared).phases > 1 else 2  # one view where it declares more, else two
    for name, options in CONFIGS[:2] + [(f"sgi phases={other}", {"phases": other})] + CONFIGS[2:]:
        cfg = SGIConfig.from_options({**declared, **options})
        s, t = timed(lambda: score_sgi(backend, bench, cfg=cfg))  # cold: a fresh job cache
        rows.append((name, t, s))
    groups = [it.group for it in bench.items]
    print(f"{len(bench.items)} items, {2 * len(bench.items)} images; model {a.model}; SGI with the benchmark's "
          f"options {declared}; group scores ID/OOD (%)")
    head = " ".join(f"{c:>11s}" for c in CATEGORIES + ("all",))
    print(f"| {'protocol':34s} | {'wall s':>7s} | {'x global':>8s} | " + " | ".join(head.split()) + " |")
    for name, t, s in rows:
        flat, _, _ = metrics.aggregate(metrics.winoground(s), groups, ("group",))
        cells = [f"{100 * flat[f'id/{c}/group']:.1f}/{100 * flat[f'ood/{c}/group']:.1f}" for c in CATEGORIES + ("all",)]
        print(f"| {name:34s} | {t:7.2f} | {t / t_global:8.2f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
