"""Do SGI's views of single 3D objects hold each counted object's shape, and can a tower read it?

SGI's count check needs every counted object read as its shape, from a picture of that object
alone (its box kept in place, the rest filled with each row's median: docs/sgi.md, mask mode).
Here towers are trained from scratch on shape labels of such views, one object of each picture of
a rendered pretraining pool, as `clip-regions` draws them (`WorldSource.object_view`: box edges
jittered by up to a pixel), and tested on every counted object of a built 3D benchmark's count
items, cut out at the benchmark's own boxes. Reported per tower (%): the shape among all three
(`3-way`), and against the other counted shape of its picture (`pair`, what the count check
weighs; ID and OOD items, objects under 40 visible pixels and the rest apart). A CNN
(`bench/shape_capacity3d.py`'s four conv-BN-ReLU-max-pool blocks) shows what the pixels hold; the
built-in model's own image tower (`vit-p8-w64-l3-poolstem`) what its shape allows; `probe:SPEC`
(an MLP on model SPEC's frozen image embeddings of the same views) what that model's embedding
holds. The built-in model's own reading of the same boxes: `bench/count3d.py --regions gt` (its
`read` column).

With `--count`, what each reading is worth to the count items' group score: SGI's scores with the
benchmark's boxes (the built-in model's match terms) with its count check reading every object of
a picture, third shape included, with the tower instead of the model's descriptions, by two rules:
`sgi`, the shipped rule (each description's scores centred over the picture's objects, an object
counts for its best description where positive; log-probabilities as scores) and `3-way`, where an
object counts only for the shape it is read as (a rule that knows the world's third shape, which
SGI's check does not). The model's own descriptions and the true shapes bound the column.

    .venv/bin/unbag world pool --data world@3d:pretraining --n 40960 --seed 0 --procs 2 --out runs/pool-pretraining
    .venv/bin/unbag world build --style 3d --seed 0 --per-category 400 --categories count --out runs/count400
    .venv/bin/python bench/object_reading3d.py --pool runs/pool-pretraining --bench runs/count400
    .venv/bin/python bench/object_reading3d.py --pool runs/pool-pretraining --bench runs/count400 \
        --towers cnn probe:builtin --lr 2e-3 3e-3 --count

Any size: render the pool and the benchmark with the same `--size` (towers take the pool's; the
`--count` match terms come from `--model`, which scales the pictures to its own size).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path
from typing import Callable

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from count3d import count_items
from PIL import Image
from shape_capacity3d import tower

from unbag import models
from unbag.metrics.winoground import winoground
from unbag.sgi import segments as seg
from unbag.sgi.config import SGIConfig
from unbag.sgi.encode import ImageRegions, caption_segments
from unbag.sgi.match import count_check
from unbag.sgi.protocol import score_sgi
from unbag.sgi.regions import masked, row_fill
from unbag.training.data import WorldSource
from unbag.world.scene3d import SHAPES3D

Reader = Callable[[np.ndarray], torch.Tensor]  # views [n, px, px, 3] -> shape logits [n, 3]


def train_views(pool: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    """n object views of the pool's first n pictures [n, px, px, 3] (px: the pool's) and their shapes [n]."""
    px = json.loads((Path(pool) / "meta.json").read_text())["size"]
    src = WorldSource(0, px, pool=pool)
    x, y = np.zeros((n, px, px, 3), np.uint8), np.zeros(n, np.int64)
    for k in range(n):
        x[k], desc = src.object_view(k, src.sample(k))
        y[k] = SHAPES3D.index(desc.split()[-1])
    return x, y


def count_objects(root: Path) -> dict[str, np.ndarray]:
    """Every object of the benchmark's count pictures, cut out at its own box: views, shape, whether a
    phrase counts it, the other counted shape of its picture (-1 for the third shape), split, visible
    pixels, and where it is (item among the count items, picture, object)."""
    out: dict[str, list] = {k: [] for k in ("x", "y", "counted", "other", "split", "visible", "where")}
    n = -1
    for line in (root / "items.jsonl").read_text().splitlines():
        it = json.loads(line)
        if it["category"] != "count":
            continue
        n += 1
        for i, ref in enumerate(it["images"]):
            img = np.asarray(Image.open(root / ref).convert("RGB"))
            objs = it["objects"][i]
            shapes = {objs[j]["shape"] for s in it["segments"][i] for j in s["objects"]}
            fill = row_fill(img)
            for j, o in enumerate(objs):
                counted = o["shape"] in shapes  # else the third shape: no phrase counts it
                out["x"].append(masked(img, [tuple(o["box"])], fill))
                out["y"].append(SHAPES3D.index(o["shape"]))
                out["counted"].append(counted)
                out["other"].append(SHAPES3D.index(next(s for s in shapes if s != o["shape"])) if counted else -1)
                out["split"].append(it["split"])
                out["visible"].append(o["visible_px"])
                out["where"].append((n, i, j))
    return {k: np.stack(v) if k == "x" else np.array(v) for k, v in out.items()}


def pixels(a: np.ndarray) -> torch.Tensor:
    return (torch.from_numpy(a).permute(0, 3, 1, 2).float() / 255 - 0.5) / 0.25


def batched(f: Callable[[np.ndarray], torch.Tensor], a: np.ndarray, size: int = 256) -> torch.Tensor:
    with torch.no_grad():
        return torch.cat([f(a[s:s + size]) for s in range(0, len(a), size)])


def train_tower(name: str, x: np.ndarray, y: np.ndarray, steps: int, batch: int, lr: float) -> Reader:
    """Tower `name` trained from scratch on (x, y), mirrored at random."""
    torch.manual_seed(0)
    body = tower(name, x.shape[1])
    net = nn.Sequential(body, nn.Linear(body.out_dim, len(SHAPES3D)))
    opt = torch.optim.AdamW(net.parameters(), lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, lr, total_steps=steps)
    g = torch.Generator().manual_seed(0)
    for _ in range(steps):
        idx = torch.randint(len(x), (batch,), generator=g).numpy()
        xb = pixels(x[idx])
        if torch.rand((), generator=g) < 0.5:
            xb = xb.flip(3)  # a mirrored object keeps its shape
        loss = F.cross_entropy(net(xb), torch.from_numpy(y[idx]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    net.eval()
    return lambda v: net(pixels(v))


def train_probe(spec: str, x: np.ndarray, y: np.ndarray, steps: int, batch: int, lr: float) -> Reader:
    """An MLP (one hidden layer of 256) on model `spec`'s frozen, normalised image embeddings."""
    backend = models.load(spec)

    def embed(v: np.ndarray) -> torch.Tensor:
        px = torch.stack([backend.preprocess(Image.fromarray(a)) for a in v])
        # cosine scale: unit vectors times 20 put the logits in a range AdamW reaches quickly
        return 20 * F.normalize(backend.encode_images(px).embeds.float(), dim=-1)

    feats, labels = batched(embed, x), torch.from_numpy(y)
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(feats.shape[1], 256), nn.GELU(), nn.Linear(256, len(SHAPES3D)))
    opt = torch.optim.AdamW(mlp.parameters(), lr, weight_decay=1e-4)
    g = torch.Generator().manual_seed(0)
    for _ in range(steps):
        idx = torch.randint(len(feats), (batch,), generator=g)
        loss = F.cross_entropy(mlp(feats[idx]), labels[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return lambda v: mlp(embed(v))


def shares(logits: torch.Tensor, test: dict[str, np.ndarray]) -> dict[str, float]:
    """The shares of the module docstring (%) over the counted objects."""
    c = test["counted"]
    lg, y = logits[c], test["y"][c]
    rows = torch.arange(len(lg))
    pair = (lg[rows, y] > lg[rows, test["other"][c]]).numpy()
    pct = lambda m: 100.0 * float(pair[m].mean())  # noqa: E731
    split, vis = test["split"][c], test["visible"][c]
    return {"3-way": 100.0 * float((lg.argmax(1).numpy() == y).mean()), "pair": pct(slice(None)),
            "pair ID": pct(split == "id"), "pair OOD": pct(split == "ood"),
            "pair < 40 px": pct(vis < 40), "pair >= 40 px": pct(vis >= 40)}


class CountGroup:
    """The count items' group score (ID, OOD %) when the count check reads shapes with given scores."""

    def __init__(self, root: Path, spec: str, test: dict[str, np.ndarray]):
        self.bench = count_items(str(root))
        backend = models.load(spec)
        self.cfg = dataclasses.replace(SGIConfig.for_benchmark(self.bench), regions="gt")
        self.full = score_sgi(backend, self.bench, cfg=self.cfg)
        self.matched = self.full - score_sgi(backend, self.bench, cfg=self.cfg, checks_only=True)
        self.segs = caption_segments(self.bench, self.cfg)
        self.rows = {tuple(w): k for k, w in enumerate(test["where"])}
        self.ood = torch.tensor([it.group["split"] == "ood" for it in self.bench.items])

    def group(self, scores: torch.Tensor) -> tuple[float, float]:
        g = winoground(scores)["group"]
        return 100.0 * float(g[~self.ood].mean()), 100.0 * float(g[self.ood].mean())

    def __call__(self, logits: torch.Tensor, rule: str) -> tuple[float, float]:
        lp = F.log_softmax(logits, -1)
        scores = self.matched.clone()
        for n, item in enumerate(self.bench.items):
            for i in range(len(item.images)):
                read = lp[[self.rows[(n, i, j)] for j in range(len(item.meta["objects"][i]))]]  # [objects, 3]
                for c in range(len(item.captions)):
                    ss = self.segs[n * len(item.captions) + c]
                    counted = [k for k, s in enumerate(ss) if s.kind in ("object", "group") and s.count]
                    shapes = [SHAPES3D.index(seg.description(ss[k].text).split()[-1]) for k in counted]
                    if rule == "sgi":  # SGI's own check, each description a one-hot of its shape
                        desc = torch.zeros(len(ss), len(SHAPES3D))
                        desc[counted, shapes] = 1.0
                        objects = ImageRegions([[None]] * len(read), read)
                        check = sum(count_check(ss, objects, desc, fit=self.cfg.counts == "fit"))
                    else:
                        best = [shapes.index(a) if a in shapes else -1 for a in read.argmax(1).tolist()]
                        check = sum(1.0 if best.count(q) == ss[k].count else -1.0 for q, k in enumerate(counted))
                    scores[n, i, c] += self.cfg.count_weight * check / len(ss)
        return self.group(scores)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pool", required=True, help="a rendered 3D pool (unbag world pool --data world@3d:pretraining)")
    p.add_argument("--bench", required=True, type=Path, help="a built 3D benchmark with count items")
    p.add_argument("--towers", nargs="+", default=["cnn", "vit-p8-w64-l3-poolstem"],
                   help="cnn | an open_clip ViT name (bench/shape_capacity3d.py) | probe:SPEC")
    p.add_argument("--lr", nargs="+", type=float, default=[2e-3, 1e-3], help="one per tower")
    p.add_argument("--n", type=int, default=20000, help="training views")
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--batch", type=int, default=128, help="towers' batch (probes take 512)")
    p.add_argument("--count", action="store_true", help="also the count items' group score with each reading")
    p.add_argument("--model", default="builtin", help="--count: the model whose SGI match terms are kept")
    a = p.parse_args()
    if len(a.lr) != len(a.towers):
        p.error(f"--lr: {len(a.lr)} values for {len(a.towers)} towers")
    torch.set_num_threads(2)
    x, y = train_views(a.pool, a.n)
    test = count_objects(a.bench)
    if test["x"].shape[1:3] != x.shape[1:3]:
        p.error(f"--bench {a.bench}: {test['x'].shape[1]} px pictures, --pool {a.pool}: {x.shape[1]} px")
    print(f"{a.n} training views of {a.pool}; {int(test['counted'].sum())} counted objects of {a.bench} "
          f"({len(test['y'])} with the third shape's)")
    count = CountGroup(a.bench, a.model, test) if a.count else None
    rows = {}
    for name, lr in zip(a.towers, a.lr):
        t = time.time()
        reader = (train_probe(name.removeprefix("probe:"), x, y, a.steps, 512, lr) if name.startswith("probe:")
                  else train_tower(name, x, y, a.steps, a.batch, lr))
        secs = time.time() - t
        logits = batched(reader, test["x"])
        rows[name] = shares(logits, test) | {"train s": secs}
        if count:
            for rule in ("sgi", "3-way"):
                rows[name] |= dict(zip((f"count {rule} ID", f"count {rule} OOD"), count(logits, rule)))
        print(f"{name}: " + ", ".join(f"{k} {v:.1f}" for k, v in rows[name].items()), flush=True)
    cols = list(next(iter(rows.values())))
    print("| tower | " + " | ".join(cols) + " |\n|---|" + "---|" * len(cols))
    for t, r in rows.items():
        print(f"| {t} | " + " | ".join(f"{r[c]:.1f}" for c in cols) + " |")
    if count:
        truth = torch.full((len(test["y"]), len(SHAPES3D)), -10.0)
        truth[torch.arange(len(truth)), torch.from_numpy(test["y"])] = 0.0
        print("count group ID / OOD: the model's own descriptions (SGI as shipped) "
              "{:.1f} / {:.1f}; no count check {:.1f} / {:.1f}; ".format(*count.group(count.full),
                                                                       *count.group(count.matched))
              + "true shapes, sgi rule {:.1f} / {:.1f}, 3-way {:.1f} / {:.1f}".format(*count(truth, "sgi"),
                                                                                     *count(truth, "3-way")))


if __name__ == "__main__":
    main()
