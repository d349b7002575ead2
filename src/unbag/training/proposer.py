"""Training SGI's learned region source for 3D scenes (`sgi/proposer.py`, `--regions objects`): the
training pictures and targets, CenterNet's loss, the held-out measures and the training run.

    python -m unbag.training.proposer --out DIR --procs 2   # the shipped recipe: ~4 min of pictures
    # and ~22 min of training on 2 cores; DIR then holds weights.safetensors and proposer.json
"""
from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from ..sgi.proposer import STRIDE, Proposer, decode
from ..world.worlds.clevr3d import PX as PX_3D  # the proposer reads 3D scenes


def targets(inst: np.ndarray, sigma: float = 0.8) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(centre heatmap [h, w], box [4, h, w]: log width, log height, centre offset x, y in cells from
    the cell's centre; centre cells [h, w] bool) at half the resolution of an instance map (object
    index + 1, 0 for the rest): a Gaussian centred on the cell that holds each visible object's box
    centre."""
    h, w = inst.shape[0] // STRIDE, inst.shape[1] // STRIDE
    heat, size, centre = np.zeros((h, w), np.float32), np.zeros((4, h, w), np.float32), np.zeros((h, w), bool)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32) + 0.5
    for k in np.unique(inst):
        if k == 0:
            continue
        ys, xs = np.nonzero(inst == k)
        x0, y0, x1, y1 = xs.min(), ys.min(), xs.max() + 1, ys.max() + 1
        # the cell holding the box centre is the object's: its peak (1) and its size
        i, j = min(int((y0 + y1) / 2 / STRIDE), h - 1), min(int((x0 + x1) / 2 / STRIDE), w - 1)
        heat = np.maximum(heat, np.exp(-((xx - j - 0.5) ** 2 + (yy - i - 0.5) ** 2) / (2 * sigma ** 2)))
        centre[i, j] = True
        size[:, i, j] = [math.log(x1 - x0), math.log(y1 - y0),
                         (x0 + x1) / 2 / STRIDE - j - 0.5, (y0 + y1) / 2 / STRIDE - i - 0.5]
    return heat, size, centre


def focal_loss(logits: torch.Tensor, heat: torch.Tensor, centre: torch.Tensor) -> torch.Tensor:
    """CenterNet's penalty-reduced focal loss (alpha 2, beta 4), per object."""
    p = logits.sigmoid().clamp(1e-4, 1 - 1e-4)
    pos = centre.float()
    pos_loss = -((1 - p) ** 2 * p.log() * pos).sum()
    neg_loss = -((1 - heat) ** 4 * p ** 2 * (1 - p).log() * (1 - pos)).sum()
    return (pos_loss + neg_loss) / pos.sum().clamp_min(1)


def crowded_objects(rng: np.random.Generator) -> list:
    """The objects of a fuller scene (at the origin): two groups of 1-3 objects alike in all but
    shape, as a count item's are, and 0-2 random objects, in random order."""
    from ..world.scene3d import SHAPES3D
    from ..world.swap3d import random_obj
    a_shape, b_shape = (str(v) for v in rng.choice(SHAPES3D, size=2, replace=False))
    a = random_obj(rng, a_shape, allow_held_out=True)
    objs = [a] * int(rng.integers(1, 4)) + [replace(a, shape=b_shape)] * int(rng.integers(1, 4))
    objs += [random_obj(rng, str(rng.choice(SHAPES3D)), allow_held_out=True) for _ in range(int(rng.integers(0, 3)))]
    return [objs[i] for i in rng.permutation(len(objs))]


def scene_picture(seed: int, k: int, px: int = PX_3D, crowded: float = 0.0):
    """(picture [px, px, 3] uint8, instance map [px, px]) of scene k: the pretraining stream's, or
    with probability `crowded` a fuller one (`crowded_objects`), one torch thread (the same pixels anywhere)."""
    from ..world.render3d import picture
    from ..world.scene3d import place_drawn
    from ..world.stream3d import training_scene as stream_scene
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        if crowded and np.random.default_rng([seed, 3, 19, k]).random() < crowded:
            scene, inst = place_drawn(np.random.default_rng([seed, 3, 18, k]), crowded_objects, px)
        else:
            scene, inst = stream_scene(np.random.default_rng([seed, 3, 17, k]), px, allow_held_out=True)
        return picture(scene, px), inst
    finally:
        torch.set_num_threads(before)


def _scene(job: tuple) -> tuple[np.ndarray, np.ndarray]:
    return scene_picture(*job)


def training_data(n: int, seed: int, px: int = PX_3D, crowded: float = 0.0, procs: int = 1,
                  progress: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(pictures [n, px, px, 3] uint8, instance maps [n, px, px]) of scenes 0..n-1 (`scene_picture`),
    rendered over `procs` processes."""
    from rich.progress import track
    images, maps = np.zeros((n, px, px, 3), np.uint8), np.zeros((n, px, px), np.int32)
    jobs = [(seed, k, px, crowded) for k in range(n)]
    from contextlib import nullcontext
    from multiprocessing import get_context
    with get_context("spawn").Pool(procs) if procs > 1 else nullcontext() as pool:
        done = pool.imap(_scene, jobs, chunksize=16) if pool else map(_scene, jobs)
        for k, (img, inst) in enumerate(track(done, total=n, description="proposer data", disable=not progress)):
            images[k], maps[k] = img, inst
    return images, maps


def evaluate(model: Proposer, threshold: float, images: np.ndarray, maps: np.ndarray) -> dict:
    """On pictures with their instance maps: the share of pictures given exactly one box per
    visible object, and of objects with a box at IoU >= 0.5 and >= 0.3 (%), each by object count too."""
    from ..sgi.regions import iou
    from ..world.render3d import visible
    model.eval()
    got = []
    with torch.inference_mode():
        for s in range(0, len(images), 64):
            x = torch.from_numpy(images[s:s + 64]).permute(0, 3, 1, 2).float() / 255
            got += decode(*model(x), threshold)
    rows: dict[int, list] = {}
    for boxes, inst in zip(got, maps):
        gt = [v["box"] for v in visible(inst, int(inst.max())) if v["box"]]
        best = [max((iou(g, b) for b in boxes), default=0.0) for g in gt]
        rows.setdefault(len(gt), []).append((len(boxes) == len(gt), best))
    def shares(rs):
        best = [b for _, bs in rs for b in bs]
        return {"pictures": len(rs), "numbered": round(100 * float(np.mean([ok for ok, _ in rs])), 2),
                "iou50": round(100 * float(np.mean([b >= 0.5 for b in best])), 2),
                "iou30": round(100 * float(np.mean([b >= 0.3 for b in best])), 2)}
    return shares([r for rs in rows.values() for r in rs]) | {"by_objects": {n: shares(rows[n]) for n in sorted(rows)}}


def train(out: str | Path, n: int = 16000, steps: int = 12000, batch: int = 32, lr: float = 2e-3, seed: int = 0,
          width: int = 48, threshold: float = 0.3, offset: bool = True, crowded: float = 0.5, n_val: int = 1000,
          procs: int = 1, data_cache: str | Path | None = None, overwrite: bool = False, px: int = PX_3D) -> Path:
    """Train the proposer on n training pictures of px x px (`training_data`) and write weights.safetensors and
    proposer.json (config, data, time, losses, and the held-out measures of `evaluate` on n_val
    pictures of another seed) to `out` (a folder holding files unbag did not write is refused
    unless `overwrite`). With `data_cache`, the rendered pictures are kept in that folder, named by
    what made them, for the next run on the same data."""
    from safetensors.torch import save_file

    from ..utils import atomic_dir, check_out, versions
    check_out(out, "proposer", overwrite)  # before the work, not after it
    t0 = time.time()

    def data(n, seed):
        if data_cache is None:
            return training_data(n, seed, px, crowded=crowded, procs=procs, progress=True)
        cache = Path(data_cache) / f"proposer-data-n{n}-seed{seed}-crowded{crowded}-px{px}.npz"
        if cache.is_file():
            with np.load(cache) as f:
                return f["images"], f["maps"]
        images, maps = training_data(n, seed, px, crowded=crowded, procs=procs, progress=True)
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_name(cache.name + ".partial.npz")  # whole or not at all
        np.savez_compressed(tmp, images=images, maps=maps)
        tmp.replace(cache)
        return images, maps
    images, maps = data(n, seed)
    val = data(n_val, seed + 1000) if n_val else None
    t_data = time.time() - t0
    tg = [targets(m) for m in maps]
    heat = torch.from_numpy(np.stack([t[0] for t in tg]))
    size = torch.from_numpy(np.stack([t[1] for t in tg]))
    centre = torch.from_numpy(np.stack([t[2] for t in tg]))
    x_all = torch.from_numpy(images).permute(0, 3, 1, 2).float() / 255
    torch.manual_seed(seed)
    model = Proposer(width, offset)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    warm = max(1, steps // 20)  # linear warm-up, then cosine to 0
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda k: min(1.0, (k + 1) / warm) * 0.5 * (1 + math.cos(math.pi * min(1.0, k / max(1, steps)))))
    g = torch.Generator().manual_seed(seed)
    log = []
    nb = 4 if offset else 2
    for step in range(steps):
        idx = torch.randint(0, n, (batch,), generator=g)
        x = x_all[idx]
        flip = torch.rand(batch, generator=g) < 0.5  # left-right mirror: CLEVR's world is symmetric so
        x = torch.where(flip[:, None, None, None], x.flip(-1), x)
        h, s, c = heat[idx], size[idx, :nb], centre[idx]
        h, c = torch.where(flip[:, None, None], h.flip(-1), h), torch.where(flip[:, None, None], c.flip(-1), c)
        s = torch.where(flip[:, None, None, None], s.flip(-1), s)
        if offset:  # a mirrored centre's offset mirrors too
            s = torch.cat([s[:, :2], torch.where(flip[:, None, None], -s[:, 2], s[:, 2])[:, None], s[:, 3:]], 1)
        logits, pred = model(x)
        lf = focal_loss(logits, h, c)
        per = F.l1_loss(pred, s, reduction="none")
        ls = (per[:, :2].sum(1) * c).sum() / c.sum().clamp_min(1)
        lo = (per[:, 2:].sum(1) * c).sum() / c.sum().clamp_min(1) if offset else torch.zeros(())
        loss = lf + 0.5 * ls + lo
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % 100 == 0 or step == steps - 1:
            log.append({"step": step, "focal": round(lf.item(), 4), "size_l1": round(ls.item(), 4)}
                       | ({"offset_l1": round(lo.item(), 4)} if offset else {}))
            print(log[-1], flush=True)
    t_train = time.time() - t0 - t_data
    record = {"width": width, "threshold": threshold, "stride": STRIDE, "offset": offset,
              "data": {"stream": "world@3d:pretraining scenes" + (f", {crowded:.0%} fuller scenes" if crowded else ""),
                       "n": n, "seed": seed, "px": px, "crowded": crowded},
              "train": {"steps": steps, "batch": batch, "lr": lr, "seed": seed, "mirror": True},
              "data_s": round(t_data, 1), "train_s": round(t_train, 1), "log": log,
              "versions": versions()}
    if val is not None:
        record["held_out"] = {"n": n_val, "seed": seed + 1000, **evaluate(model, threshold, *val)}
        print({k: v for k, v in record["held_out"].items() if k != "by_objects"}, flush=True)
    with atomic_dir(out, "proposer", overwrite) as tmp:
        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(tmp / "weights.safetensors"))
        (tmp / "proposer.json").write_text(json.dumps(record, indent=2) + "\n")
    return Path(out)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description="train SGI's learned region source for 3D scenes")
    p.add_argument("--out", required=True)
    # the defaults are the shipped proposer's recipe (2026-12-05; before it: --n 4000 --steps 2000
    # --batch 16 --width 32 --no-offset --crowded 0)
    p.add_argument("--n", type=int, default=16000)
    p.add_argument("--steps", type=int, default=12000)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--width", type=int, default=48)
    p.add_argument("--offset", action=argparse.BooleanOptionalAction, default=True,
                   help="predict each centre's offset in its cell")
    p.add_argument("--crowded", type=float, default=0.5, help="share of fuller scenes (2-8 objects)")
    p.add_argument("--n-val", type=int, default=1000, help="held-out pictures (another seed) to measure on")
    p.add_argument("--procs", type=int, default=1, help="processes rendering the pictures")
    p.add_argument("--data-cache", help="a folder to keep the rendered pictures in for the next run")
    p.add_argument("--overwrite", action="store_true", help="replace a folder unbag wrote")
    p.add_argument("--px", type=int, default=PX_3D, help="the pictures' side: the size SGI will read them at "
                   f"(default {PX_3D}, the 3D world's)")
    a = p.parse_args()
    print(train(a.out, n=a.n, steps=a.steps, batch=a.batch, seed=a.seed, width=a.width, offset=a.offset,
                crowded=a.crowded, n_val=a.n_val, procs=a.procs, data_cache=a.data_cache, overwrite=a.overwrite, px=a.px))
