"""SGI's learned region source for 3D scenes (`--regions objects`): one box per object, with no
ground truth at test time.

`chroma` (regions.py) finds the objects of a CLEVR scene but returns two to five boxes for each on
crowded pictures (a component and its watershed pieces, the pieces a metal highlight splits), and
every extra box miscounts (docs/sgi.md). This source learns one box per object instead: a small
fully convolutional network in the manner of CenterNet (Zhou et al., arXiv 1904.07850) predicts,
at half the picture's resolution, a heatmap of object centres and each object's box size; the
heatmap's local maxima above a threshold become boxes. It is trained on pictures of the 3D
world's *training* stream (`world3d:pretraining` scenes) with the instance maps the renderer draws
beside them, never on a test item: a scene's objects are free to know there, as a detector's
training boxes are.

    python -m unbag.sgi.proposer --out src/unbag/weights/proposer3d   # about 10 min on 2 cores
"""
from __future__ import annotations

import argparse
import json
import math
import time
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..errors import UnbagError

SHIPPED = Path(__file__).resolve().parent.parent / "weights" / "proposer3d"
STRIDE = 2  # output cells per picture side: px / STRIDE


class Proposer(nn.Module):
    """Picture [B, 3, px, px] in [0, 1] -> (centre logits [B, px/2, px/2], log box size [B, 2, px/2, px/2])."""

    def __init__(self, width: int = 32):
        super().__init__()

        def block(cin, cout, stride=1, dilation=1):
            # batch norm: statistics fixed at inference, so a picture's boxes never depend on its batch
            return [nn.Conv2d(cin, cout, 3, stride, padding=dilation, dilation=dilation),
                    nn.BatchNorm2d(cout), nn.ReLU()]
        # dilated convolutions: the receptive field (about 60 px at the picture's scale) spans the largest object
        self.body = nn.Sequential(*block(3, width), *block(width, width, 2), *block(width, width, 1, 2),
                                  *block(width, width, 1, 4), *block(width, width, 1, 8))
        self.head = nn.Conv2d(width, 3, 1)
        nn.init.constant_(self.head.bias[:1], -4.0)  # few centres: start near 0 probability

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.head(self.body(x))
        return out[:, 0], out[:, 1:]


def targets(inst: np.ndarray, sigma: float = 0.8) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(centre heatmap [h, w], log box size [2, h, w], centre cells [h, w] bool) at half the
    resolution of an instance map (object index + 1, 0 for the rest): a Gaussian centred on the
    cell that holds each visible object's box centre."""
    h, w = inst.shape[0] // STRIDE, inst.shape[1] // STRIDE
    heat, size, centre = np.zeros((h, w), np.float32), np.zeros((2, h, w), np.float32), np.zeros((h, w), bool)
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
        size[:, i, j] = np.log([x1 - x0, y1 - y0])
    return heat, size, centre


def focal_loss(logits: torch.Tensor, heat: torch.Tensor, centre: torch.Tensor) -> torch.Tensor:
    """CenterNet's penalty-reduced focal loss (alpha 2, beta 4), per object."""
    p = logits.sigmoid().clamp(1e-4, 1 - 1e-4)
    pos = centre.float()
    pos_loss = -((1 - p) ** 2 * p.log() * pos).sum()
    neg_loss = -((1 - heat) ** 4 * p ** 2 * (1 - p).log() * (1 - pos)).sum()
    return (pos_loss + neg_loss) / pos.sum().clamp_min(1)


def decode(logits: torch.Tensor, size: torch.Tensor, threshold: float = 0.3,
           pad: int = 0) -> list[list[tuple[int, int, int, int]]]:
    """Boxes (x0, y0, x1, y1, in picture pixels) at the heatmap's 3x3 local maxima above
    `threshold` (of two touching maxima, the stronger or first), per picture, strongest first."""
    p = logits.sigmoid()
    peaks = (p == F.max_pool2d(p[:, None], 3, 1, 1)[:, 0]) & (p > threshold)
    px = logits.shape[-1] * STRIDE
    out = []
    for b in range(len(p)):
        ys, xs = torch.nonzero(peaks[b], as_tuple=True)
        order = p[b, ys, xs].argsort(descending=True)
        boxes, taken = [], []
        for i, j in zip(ys[order].tolist(), xs[order].tolist()):
            if any(abs(i - a) <= 1 and abs(j - c) <= 1 for a, c in taken):
                continue  # a plateau (two equal neighbours) is one peak
            taken.append((i, j))
            w, h = size[b, :, i, j].exp().tolist()
            # the centre inside its cell: the finer position is the cell's own, half a cell of error at most
            cx, cy = (j + 0.5) * STRIDE, (i + 0.5) * STRIDE
            box = (max(0, math.floor(cx - w / 2) - pad), max(0, math.floor(cy - h / 2) - pad),
                   min(px, math.ceil(cx + w / 2) + pad), min(px, math.ceil(cy + h / 2) + pad))
            if box[2] > box[0] and box[3] > box[1]:
                boxes.append(box)
        out.append(boxes)
    return out


@lru_cache(maxsize=1)
def shipped() -> tuple[Proposer, dict]:
    """The shipped proposer (eval mode, batch norms folded into their convolutions) and its record."""
    from safetensors.torch import load_file
    path = SHIPPED / "weights.safetensors"
    if not path.is_file():
        raise UnbagError(f"{path}: the learned region source's weights are missing (train them: python -m "
                         "unbag.sgi.proposer --out DIR)")
    record = json.loads((SHIPPED / "proposer.json").read_text())
    model = Proposer(record["width"])
    model.load_state_dict(load_file(str(path)))
    return folded(model.eval()), record


def folded(model: Proposer) -> Proposer:
    """An eval-mode proposer with each batch norm folded into the convolution before it (the same
    function, one pass over the activations fewer: about 15% less time in passes of 16 on 2 cores)."""
    from torch.nn.utils.fusion import fuse_conv_bn_eval
    layers = list(model.body)
    for k, layer in enumerate(layers):
        if isinstance(layer, nn.BatchNorm2d):
            layers[k - 1], layers[k] = fuse_conv_bn_eval(layers[k - 1], layer), nn.Identity()
    model.body = nn.Sequential(*layers)
    return model


@lru_cache(maxsize=1)
def weights_id() -> str:
    """The SHA-1 of the shipped proposer's weights file (what results record of it)."""
    import hashlib
    path = SHIPPED / "weights.safetensors"
    return hashlib.sha1(path.read_bytes()).hexdigest() if path.is_file() else "missing"


def batch_size(h: int, w: int) -> int:
    """Pictures per network pass at h x w: 16 at the world's 64 px, fewer for larger pictures
    (one for a photo), so that a pass holds about as many pixels whatever the size."""
    return max(1, min(16, 16 * 64 * 64 // (h * w)))


@torch.inference_mode()
def object_boxes_many(imgs: list[np.ndarray]) -> list[list[tuple[int, int, int, int]]]:
    """The boxes the shipped proposer finds in each picture (uint8 [h, w, 3]; h, w even), in passes
    of `batch_size` pictures of one size. A short last pass is filled up with blank pictures:
    every pass has the same shape, so the kernels, and how a picture's sums round, never depend
    on how many pictures came with it, nor on which (tests/sgi/test_proposer.py also checks
    that one and two threads give the same boxes)."""
    model, record = shipped()
    out: list[list] = [[] for _ in imgs]
    by_size: dict[tuple, list[int]] = {}
    for k, img in enumerate(imgs):
        by_size.setdefault(img.shape[:2], []).append(k)
    for (h, w), idx in by_size.items():
        n = batch_size(h, w)
        for s in range(0, len(idx), n):
            part = idx[s:s + n]
            x = torch.zeros(n, 3, h, w)
            x[:len(part)] = torch.from_numpy(np.stack([imgs[k] for k in part])).permute(0, 3, 1, 2).float() / 255
            logits, size = model(x)
            for k, boxes in zip(part, decode(logits[:len(part)], size[:len(part)], record["threshold"])):
                out[k] = boxes
    return out


def object_boxes(img: np.ndarray) -> list[tuple[int, int, int, int]]:
    """The boxes the shipped proposer finds in one picture (`object_boxes_many`)."""
    return object_boxes_many([img])[0]


def training_data(n: int, seed: int, px: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """(pictures [n, px, px, 3] uint8, instance maps [n, px, px]) of `world3d:pretraining` scenes
    drawn from their own generator (seed), one torch thread each (the same pixels anywhere)."""
    from ..world.render3d import picture
    from ..world.stream3d import training_scene
    images, maps = np.zeros((n, px, px, 3), np.uint8), np.zeros((n, px, px), np.int32)
    for k in range(n):
        scene, inst = training_scene(np.random.default_rng([seed, 3, 17, k]), px, allow_held_out=True)
        images[k], maps[k] = picture(scene, px), inst
    return images, maps


def train(out: str | Path, n: int = 4000, steps: int = 2000, batch: int = 16, lr: float = 2e-3, seed: int = 0,
          width: int = 32, threshold: float = 0.3, overwrite: bool = False) -> Path:
    """Train the proposer on n training-stream pictures and write weights.safetensors and
    proposer.json (config, data, time, final losses) to `out` (a folder holding files unbag did
    not write is refused unless `overwrite`)."""
    from safetensors.torch import save_file

    from ..utils import atomic_dir, check_out, versions
    t0 = time.time()
    # the rendered pictures, kept beside `out` for another run on the same data
    cache = Path(out).parent / f"proposer-data-n{n}-seed{seed}.npz"
    if cache.is_file():
        with np.load(cache) as f:
            images, maps = f["images"], f["maps"]
    else:
        images, maps = training_data(n, seed)
        np.savez_compressed(cache, images=images, maps=maps)
    t_data = time.time() - t0
    tg = [targets(m) for m in maps]
    heat = torch.from_numpy(np.stack([t[0] for t in tg]))
    size = torch.from_numpy(np.stack([t[1] for t in tg]))
    centre = torch.from_numpy(np.stack([t[2] for t in tg]))
    x_all = torch.from_numpy(images).permute(0, 3, 1, 2).float() / 255
    torch.manual_seed(seed)
    model = Proposer(width)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    warm = max(1, steps // 20)  # linear warm-up, then cosine to 0
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda k: min(1.0, (k + 1) / warm) * 0.5 * (1 + math.cos(math.pi * min(1.0, k / steps))))
    g = torch.Generator().manual_seed(seed)
    log = []
    for step in range(steps):
        idx = torch.randint(0, n, (batch,), generator=g)
        x = x_all[idx]
        flip = torch.rand(batch, generator=g) < 0.5  # left-right mirror: CLEVR's world is symmetric so
        x = torch.where(flip[:, None, None, None], x.flip(-1), x)
        h, s, c = heat[idx], size[idx], centre[idx]
        h, c = torch.where(flip[:, None, None], h.flip(-1), h), torch.where(flip[:, None, None], c.flip(-1), c)
        s = torch.where(flip[:, None, None, None], s.flip(-1), s)
        logits, pred = model(x)
        lf = focal_loss(logits, h, c)
        ls = (F.l1_loss(pred, s, reduction="none").sum(1) * c).sum() / c.sum().clamp_min(1)
        loss = lf + 0.5 * ls
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % 100 == 0 or step == steps - 1:
            log.append({"step": step, "focal": round(lf.item(), 4), "size_l1": round(ls.item(), 4)})
            print(log[-1], flush=True)
    record = {"width": width, "threshold": threshold, "stride": STRIDE,
              "data": {"stream": "world3d:pretraining scenes", "n": n, "seed": seed, "px": 64},
              "train": {"steps": steps, "batch": batch, "lr": lr, "seed": seed, "mirror": True},
              "data_s": round(t_data, 1), "train_s": round(time.time() - t0 - t_data, 1), "log": log,
              "versions": versions()}
    check_out(out, "proposer", overwrite)  # before the work, not after it
    with atomic_dir(out, "proposer", overwrite) as tmp:
        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(tmp / "weights.safetensors"))
        (tmp / "proposer.json").write_text(json.dumps(record, indent=2) + "\n")
    return Path(out)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description="train SGI's learned region source for 3D scenes")
    p.add_argument("--out", required=True)
    p.add_argument("--n", type=int, default=4000)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--width", type=int, default=32)
    p.add_argument("--overwrite", action="store_true", help="replace a folder unbag wrote")
    a = p.parse_args()
    print(train(a.out, n=a.n, steps=a.steps, seed=a.seed, width=a.width, overwrite=a.overwrite))
