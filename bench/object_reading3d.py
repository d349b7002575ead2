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
built-in model's own image tower (`vit-p8-w64-l3-poolstem`) what its shape allows. The built-in
model's reading of the same boxes: `bench/count3d.py --regions gt` (its `read` column).

    .venv/bin/unbag world pool --data world3d:pretraining --n 40960 --seed 0 --procs 2 --out runs/pool-pretraining
    .venv/bin/unbag world build --style 3d --seed 0 --per-category 400 --categories count --out runs/count400
    .venv/bin/python bench/object_reading3d.py --pool runs/pool-pretraining --bench runs/count400
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image

from shape_capacity3d import tower
from unbag.sgi.regions import masked, row_fill
from unbag.training.data import WorldSource
from unbag.world.scene3d import SHAPES3D


def train_views(pool: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    """n object views of the pool's first n pictures [n, 64, 64, 3] and their shapes [n]."""
    src = WorldSource(0, 64, pool=pool)
    x, y = np.zeros((n, 64, 64, 3), np.uint8), np.zeros(n, np.int64)
    for k in range(n):
        x[k], desc = src.object_view(k, src.sample(k))
        y[k] = SHAPES3D.index(desc.split()[-1])
    return x, y


def count_objects(root: Path) -> dict[str, np.ndarray]:
    """Every counted object of the benchmark's count items, cut out at its own box: views, shape,
    the other counted shape of its picture, split, visible pixels."""
    out: dict[str, list] = {k: [] for k in ("x", "y", "other", "split", "visible")}
    for line in (root / "items.jsonl").read_text().splitlines():
        it = json.loads(line)
        if it["category"] != "count":
            continue
        for i, ref in enumerate(it["images"]):
            img = np.asarray(Image.open(root / ref).convert("RGB"))
            objs = it["objects"][i]
            shapes = {objs[j]["shape"] for s in it["segments"][i] for j in s["objects"]}
            fill = row_fill(img)
            for o in objs:
                if o["shape"] not in shapes:  # the third shape: no phrase counts it
                    continue
                out["x"].append(masked(img, [tuple(o["box"])], fill))
                out["y"].append(SHAPES3D.index(o["shape"]))
                out["other"].append(SHAPES3D.index(next(s for s in shapes if s != o["shape"])))
                out["split"].append(it["split"])
                out["visible"].append(o["visible_px"])
    return {k: np.stack(v) if k == "x" else np.array(v) for k, v in out.items()}


def pixels(a: np.ndarray) -> torch.Tensor:
    return (torch.from_numpy(a).permute(0, 3, 1, 2).float() / 255 - 0.5) / 0.25


def train_eval(name: str, x: np.ndarray, y: np.ndarray, test: dict[str, np.ndarray], steps: int,
               batch: int, lr: float) -> dict[str, float]:
    """The shares of the module docstring for tower `name` trained on (x, y)."""
    torch.manual_seed(0)
    body = tower(name, 64)
    net = nn.Sequential(body, nn.Linear(body.out_dim, len(SHAPES3D)))
    opt = torch.optim.AdamW(net.parameters(), lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, lr, total_steps=steps)
    g = torch.Generator().manual_seed(0)
    t = time.time()
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
    secs = time.time() - t
    net.eval()
    with torch.no_grad():
        logits = torch.cat([net(pixels(test["x"][s:s + 512])) for s in range(0, len(test["x"]), 512)])
    rows = torch.arange(len(logits))
    pair = (logits[rows, test["y"]] > logits[rows, test["other"]]).numpy()
    pct = lambda m: 100.0 * float(pair[m].mean())  # noqa: E731
    return {"3-way": 100.0 * float((logits.argmax(1).numpy() == test["y"]).mean()), "pair": pct(slice(None)),
            "pair ID": pct(test["split"] == "id"), "pair OOD": pct(test["split"] == "ood"),
            "pair < 40 px": pct(test["visible"] < 40), "pair >= 40 px": pct(test["visible"] >= 40),
            "train s": secs}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pool", required=True, help="a rendered 3D pool (unbag world pool --data world3d:pretraining)")
    p.add_argument("--bench", required=True, type=Path, help="a built 3D benchmark with count items")
    p.add_argument("--towers", nargs="+", default=["cnn", "vit-p8-w64-l3-poolstem"])
    p.add_argument("--lr", nargs="+", type=float, default=[2e-3, 1e-3], help="one per tower")
    p.add_argument("--n", type=int, default=20000, help="training views")
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--batch", type=int, default=128)
    a = p.parse_args()
    if len(a.lr) != len(a.towers):
        p.error(f"--lr: {len(a.lr)} values for {len(a.towers)} towers")
    torch.set_num_threads(2)
    x, y = train_views(a.pool, a.n)
    test = count_objects(a.bench)
    print(f"{a.n} training views of {a.pool}; {len(test['y'])} counted objects of {a.bench}")
    rows = {t: train_eval(t, x, y, test, a.steps, a.batch, lr) for t, lr in zip(a.towers, a.lr)}
    cols = list(next(iter(rows.values())))
    print("| tower | " + " | ".join(cols) + " |\n|---|" + "---|" * len(cols))
    for t, r in rows.items():
        print(f"| {t} | " + " | ".join(f"{r[c]:.1f}" for c in cols) + " |")


if __name__ == "__main__":
    main()
