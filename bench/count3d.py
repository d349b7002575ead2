"""Where SGI's count items fail on the 3D ctrl: finding the objects, or reading them.

A 3D count item shows two groups that differ in shape only ("one large gray rubber sphere and two
large gray rubber cubes" against "two ... spheres and one ... cube"), beside 0-2 objects of the
third shape. SGI's count check (docs/sgi.md) counts, for each counted phrase, the single regions
that fit its description best; it is right on a picture only when every counted object has a
region (the proposer) and that region is read as the right shape (the encoder). Per model, in one
run on the count items of a built 3D benchmark, with SGI's defaults for it:

- pictures whose single regions number their objects exactly (the proposer);
- counted objects with a single region (IoU >= 0.5 with the object's visible box), and of those
  the share whose region fits its own shape's description best among the caption's counted
  descriptions (centred over the picture's single regions, as the count check does);
- pictures with every counted object found and read right; both shares (read, all read) on ID
  and OOD items apart;
- the count check's verdict on each (picture, its own caption) pair: both counts right;
- SGI's group score on count items, ID / OOD.

    .venv/bin/unbag world build --style 3d --seed 0 --per-category 100 --procs 2 --out /tmp/ctrl3d
    .venv/bin/python bench/count3d.py --bench /tmp/ctrl3d --models builtin STAGED/builtin-pool
    .venv/bin/python bench/count3d.py --bench /tmp/ctrl3d --regions gt   # the benchmark's own boxes
"""
from __future__ import annotations

import argparse
import dataclasses

import torch

from unbag import models
from unbag.benchmarks import load
from unbag.benchmarks.base import Benchmark
from unbag.metrics.winoground import winoground
from unbag.scoring.encode import encode_texts
from unbag.sgi import segments as seg
from unbag.sgi.config import SGIConfig
from unbag.sgi.encode import box_of, caption_segments, encode_regions
from unbag.sgi.match import count_check
from unbag.sgi.protocol import score_sgi
from unbag.sgi.regions import iou


def count_items(root: str) -> Benchmark:
    """The count items of a built 3D benchmark, with its SGI defaults."""
    full = load(f"ctrl:{root}")
    items = [it for it in full.items if it.group["category"] == "count"]
    return Benchmark("ctrl", "ctrl", items, image_size=full.image_size, grouping="split/category", sgi=dict(full.sgi))


def measure(spec: str, bench: Benchmark, regions: str | None = None) -> dict[str, float]:
    """The shares listed in the module docstring (%) for one model (SGI's region source `regions`
    in place of the benchmark's default, when given: `gt` reads the benchmark's own boxes)."""
    backend = models.load(spec)
    cfg = SGIConfig.for_benchmark(bench)
    if regions:
        cfg = dataclasses.replace(cfg, regions=regions)
    regs = encode_regions(backend, bench, cfg)
    segs = caption_segments(bench, cfg)
    n = {k: 0 for k in ("pictures", "numbered", "objects", "found", "read", "all_read", "check_right")}
    by_split = {s: {k: 0 for k in ("pictures", "all_read", "found", "read")} for s in ("id", "ood")}
    for k, item in enumerate(bench.items):
        for i in range(2):
            r, ss = regs[2 * k + i], segs[2 * k + i]  # caption i is picture i's own
            desc = encode_texts(backend, [seg.description(s.text) for s in ss])
            singles = [j for j, reg in enumerate(r.regions) if len(reg) == 1]
            objects = item.meta["objects"][i]
            n["pictures"] += 1
            n["numbered"] += len(singles) == len(objects)
            check = [v for v in count_check(ss, r, desc, fit=cfg.counts == "fit") if v]
            n["check_right"] += bool(check) and all(v > 0 for v in check)
            shapes = [seg.description(s.text).split()[-1] for s in ss]
            sim = desc @ r.emb[singles].T
            fits = (sim - sim.mean(1, keepdim=True)).argmax(0) if singles else None
            every = True
            for o in objects:
                if o["shape"] not in shapes:  # an object of the third shape: no phrase counts it
                    continue
                n["objects"] += 1
                overlap = [iou(o["box"], box_of(r.regions[j])) for j in singles]
                if not overlap or max(overlap) < 0.5:
                    every = False
                    continue
                n["found"] += 1
                right = shapes[int(fits[overlap.index(max(overlap))])] == o["shape"]
                n["read"] += right
                by_split[item.group["split"]]["found"] += 1
                by_split[item.group["split"]]["read"] += right
                every &= right
            n["all_read"] += every
            by_split[item.group["split"]]["all_read"] += every
            by_split[item.group["split"]]["pictures"] += 1
    group = winoground(score_sgi(backend, bench, cfg=cfg))["group"]
    split = [it.group["split"] for it in bench.items]
    of = lambda s: torch.tensor([x == s for x in split])  # noqa: E731
    pct = lambda a, b: 100.0 * a / max(1, b)  # noqa: E731
    return {"numbered": pct(n["numbered"], n["pictures"]), "found": pct(n["found"], n["objects"]),
            "read": pct(n["read"], n["found"]), "all read": pct(n["all_read"], n["pictures"]),
            **{f"read {s}": pct(b["read"], b["found"]) for s, b in by_split.items()},
            **{f"all read {s}": pct(b["all_read"], b["pictures"]) for s, b in by_split.items()},
            "check right": pct(n["check_right"], n["pictures"]),
            **{f"group {s}": 100.0 * float(group[of(s)].mean()) for s in ("id", "ood")}}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bench", required=True, help="a built 3D benchmark (unbag world build --style 3d)")
    p.add_argument("--models", nargs="+", default=["builtin"])
    p.add_argument("--regions", help="SGI's region source instead of the benchmark's default (`gt`: its own boxes)")
    args = p.parse_args()
    torch.set_num_threads(2)
    bench = count_items(args.bench)
    print(f"{len(bench.items)} count items of {args.bench}, SGI options {bench.sgi}")
    rows = {spec: measure(spec, bench, args.regions) for spec in args.models}
    cols = list(next(iter(rows.values())))
    print("| model | " + " | ".join(cols) + " |\n|---|" + "---|" * len(cols))
    for spec, row in rows.items():
        print(f"| {spec} | " + " | ".join(f"{row[c]:.1f}" for c in cols) + " |")


if __name__ == "__main__":
    main()
