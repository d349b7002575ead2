"""Alignment-head costs, measured in one run: a training epoch from the feature cache vs an FT
epoch on the same world samples, and head scoring vs global scoring on the same ctrl items.

    .venv/bin/python bench/heads_cost.py --cache runs/feat --head runs/head-tflocal-phrases runs/tfregions
"""
from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np
import torch

from unbag import models
from unbag.benchmarks.ctrl import generated
from unbag.heads.cache import FeatureCache
from unbag.heads.common import HeadConfig
from unbag.heads.extract import extract_world
from unbag.heads.protocol import score_head
from unbag.heads.train import HeadTrainConfig, build, step_loss
from unbag.scoring.cosine import score_global
from unbag.training.engine import TrainConfig, Trainer


def head_seconds_per_row(cache_dir: str, kind: str, steps: int, batch: int) -> float:
    cache = FeatureCache(cache_dir)
    cfg = HeadTrainConfig(head=HeadConfig(kind=kind))
    tokens = "img_regions" if kind == "tfregions" else "img_patches"
    cfg.head.dim, cfg.head.patches = (cache.index["fields"]["img_global"]["shape"][0],
                                      cache.index["fields"][tokens]["shape"][0])
    head = build(cfg.head)
    opt = torch.optim.AdamW(head.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)
    twins = cache.get("twin", np.arange(cache.rows)).numpy()
    t0 = None
    for s in range(steps + 3):
        if s == 3:
            t0 = time.perf_counter()
        rows = rng.choice(cache.rows, size=batch, replace=False)
        loss = step_loss(head, cache, rows, twins[rows], cfg.negatives, rng)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return (time.perf_counter() - t0) / (steps * batch)


def ft_seconds_per_sample(steps: int, batch: int, model: str = "builtin") -> float:
    with tempfile.TemporaryDirectory() as d:
        tr = Trainer(TrainConfig(method="ft", model=model, steps=steps + 3, batch_size=batch,
                                 ckpt_every=10**9, log_every=10**9, lr=1e-4), d)
        stamps = []
        real = tr.opt.step
        tr.opt.step = lambda *a, **k: (real(*a, **k), stamps.append(time.perf_counter()))[0]
        tr.fit(progress=False)
    return (stamps[-1] - stamps[2]) / (steps * batch)


def main() -> None:
    import warnings
    # the timing wrapper around optimizer.step hides it from the scheduler's order checks
    warnings.filterwarnings("ignore", message="Detected call of `lr_scheduler.step\\(\\)`")
    warnings.filterwarnings("ignore", message="Seems like `optimizer.step\\(\\)` has been overridden")
    p = argparse.ArgumentParser()
    p.add_argument("--cache", required=True)
    p.add_argument("--head", required=True, nargs="+", help="trained heads whose scoring cost to measure")
    p.add_argument("--per-category", type=int, default=100)
    p.add_argument("--ft-model", default=None, help="also time FT on this backbone (e.g. open_clip:ViT-B-32@random, random "
                   "weights): head cost does not depend on the backbone, FT's does")
    a = p.parse_args()
    backend = models.load("builtin")
    with tempfile.TemporaryDirectory() as d:
        t = time.perf_counter()
        extract_world(backend, f"{d}/c", n=1024, progress=False)
        extract = (time.perf_counter() - t) / 1024
    ft = ft_seconds_per_sample(12, 128)
    print(f"per training sample: FT {1e3 * ft:.2f} ms, feature extraction (once) {1e3 * extract:.2f} ms")
    big = ft_seconds_per_sample(2, 16, a.ft_model) if a.ft_model else None
    if big:
        print(f"per training sample: FT on {a.ft_model} {1e3 * big:.1f} ms")
    for kind in ("tflocal", "tflocal-li", "tfglobal", "tfregions"):
        head = head_seconds_per_row(a.cache, kind, 20, 64)
        print(f"{kind}: {1e3 * head:.2f} ms per training sample; epoch cost ratio FT / {kind}: {ft / head:.1f}x "
              f"(with a fresh cache: {ft / (head + extract):.1f}x)   (goal >= 20x)"
              + (f"; FT on {a.ft_model} / {kind}: {big / head:.0f}x" if big else ""))
    bench = generated(seed=0, per_category=a.per_category, style="flat")
    score_global(backend, generated(seed=1, per_category=2, style="flat"))
    t = time.perf_counter()
    score_global(backend, bench)
    tg = time.perf_counter() - t
    for path in a.head:
        t = time.perf_counter()
        score_head(backend, bench, path=path)  # cold: a fresh job cache, as the first head of a plan
        th = time.perf_counter() - t
        print(f"scoring {len(bench.items)} items: global {tg:.2f} s, head {path} {th:.2f} s, ratio {th / tg:.2f}x")


if __name__ == "__main__":
    main()
