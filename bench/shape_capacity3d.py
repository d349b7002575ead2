"""Can a tower of a given shape and input size learn to read a single 3D object's shape at all?

The built-in model reads a lone object's colour, size and material at 64 px almost perfectly but
its shape at about 80% (bench/recognition3d.py), and every 3D SWAP item asks for shape. Whether
that is the resolution (a small object is about 5 px wide at 64 px), the tokenisation (a small
object inside one 8 px patch, read through one linear map) or the contrastive recipe is a question
of capacity, asked here apart from CLIP: towers trained from scratch, supervised on the four
attributes of single objects placed by CLEVR's rules, the same scenes for every tower; accuracy on
held-back objects, shape split by size.

Scenes are rendered once at 128 px (2x2 supersampling) and area-averaged to 64 px (so the 64 px
pictures are the same scenes, 4x4 supersampled; cached under --cache). Towers: `cnn` (four
conv-BN-ReLU blocks, a control for what the pixels hold) and open_clip ViTs named
`vit-pP-wW-lL`, optionally with a stem (`-conv`, `-poolstem`, `-deeppool`), at each --px; for each,
the time a training step takes and the time a forward pass over 256 pictures takes (what scoring
pays).

    .venv/bin/python bench/shape_capacity3d.py --towers cnn vit-p8-w64-l3 vit-p4-w64-l3 --px 64 128
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from unbag.models import token_pool
from unbag.models.stem import conv_stem, pool_stem
from unbag.world.render3d import CLEVR_COLORS, RENDER_VERSION, SCALE
from unbag.world.scene3d import MATERIALS3D, SHAPES3D, place, random_object

ATTRS = {"shape": SHAPES3D, "color": tuple(CLEVR_COLORS), "size": tuple(SCALE), "material": MATERIALS3D}


def _render(seed: int) -> tuple[np.ndarray, list[int]]:
    torch.set_num_threads(1)
    rng = np.random.default_rng([seed, 77])
    o = random_object(rng)
    scene, pic, _ = place(rng, [o], px=128)
    o = scene.objects[0]
    return pic, [ATTRS[k].index(getattr(o, k)) for k in ATTRS]


def dataset(n: int, cache: Path, procs: int) -> tuple[np.ndarray, np.ndarray]:
    """n single-object pictures at 128 px (uint8 [n, 128, 128, 3]) and their labels [n, 4]."""
    f = cache / f"single3d-{n}-render{RENDER_VERSION}.npz"  # other pixels, another file
    if f.exists():
        d = np.load(f)
        return d["images"], d["labels"]
    t = time.time()
    with mp.get_context("spawn").Pool(procs) as pool:
        out = pool.map(_render, range(n), chunksize=64)
    images, labels = np.stack([p for p, _ in out]), np.array([lab for _, lab in out])
    cache.mkdir(parents=True, exist_ok=True)
    tmp = f.with_suffix(".tmp.npz")
    np.savez(tmp, images=images, labels=labels)
    tmp.rename(f)
    print(f"rendered {n} scenes at 128 px in {time.time() - t:.0f} s")
    return images, labels


class CNN(nn.Module):
    def __init__(self, width: int = 64):
        super().__init__()
        layers, c = [], 3
        for w in (width // 4, width // 2, width, width):
            layers += [nn.Conv2d(c, w, 3, padding=1), nn.BatchNorm2d(w), nn.ReLU(), nn.MaxPool2d(2)]
            c = w
        self.body = nn.Sequential(*layers)
        self.out_dim = c

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x).amax((2, 3))


def deep_pool_stem(width: int, patch: int) -> nn.Sequential:
    """unbag's `pool` stem with one more 3x3 conv block on the token grid (no pooling) before its
    1x1 projection: the CNN's fourth block, which the `pool` stem lacks (a candidate, not in unbag)."""
    *blocks, proj = pool_stem(width, patch)
    return nn.Sequential(*blocks, nn.Conv2d(width, width, 3, padding=1, bias=False), nn.GroupNorm(8, width),
                         nn.ReLU(), proj)


# name suffix -> stem: unbag's (models/stem.py), or a candidate
STEMS = {"-conv": conv_stem, "-poolstem": pool_stem, "-deeppool": deep_pool_stem}


def tower(name: str, px: int) -> nn.Module:
    """`cnn`, or an open_clip ViT `vit-pP-wW-lL[-avg|-max]` (head width 32, as the built-in model's;
    `-avg`: the mean of the patch tokens in place of the class token, which `-l0` needs; `-max`:
    their maximum, as the CNN pools), with a
    stem in place of its patch embedding when the name ends in one of STEMS: `-conv`, unbag's
    convolutional stem (stride-2 convolutions); `-poolstem`, its `pool` stem (the CNN's blocks);
    `-deeppool`, that stem with the CNN's fourth block."""
    if name == "cnn":
        return CNN()
    from open_clip.transformer import VisionTransformer
    suffix = next((k for k in STEMS if name.endswith(k)), "")
    parts = name.removesuffix(suffix).split("-")[1:]
    pool = parts[-1] if parts[-1] in ("avg", "max") else "tok"
    p, w, depth = (int(s[1:]) for s in parts[:3])
    m = VisionTransformer(image_size=px, patch_size=p, width=w, layers=depth, heads=max(1, w // 32), mlp_ratio=4.0,
                          output_dim=w, pool_type="tok" if pool == "max" else pool)
    if pool == "max":
        token_pool.apply(m, "max")  # unbag's `"unbag_pool": "max"`
    if suffix:
        m.conv1 = STEMS[suffix](w, p)
    m.out_dim = w
    return m


def train_eval(name: str, px: int, images: np.ndarray, labels: np.ndarray, n_test: int, steps: int,
               batch: int, lr: float) -> dict:
    torch.manual_seed(0)
    x = torch.from_numpy(images).permute(0, 3, 1, 2).float().div(255)
    if px != 128:
        x = F.interpolate(x, size=(px, px), mode="area")
    x = (x - 0.5) / 0.25
    y = torch.from_numpy(labels)
    xtr, ytr, xte, yte = x[n_test:], y[n_test:], x[:n_test], y[:n_test]
    body = tower(name, px)
    heads = nn.ModuleList(nn.Linear(body.out_dim, len(v)) for v in ATTRS.values())
    params = list(body.parameters()) + list(heads.parameters())
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.05)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, lr, total_steps=steps, pct_start=0.1)
    g = torch.Generator().manual_seed(0)
    t = time.time()
    body.train()
    for _ in range(steps):
        idx = torch.randint(len(xtr), (batch,), generator=g)
        xb = xtr[idx]
        if torch.rand((), generator=g) < 0.5:
            xb = xb.flip(3)  # a mirrored scene is a scene (shape, colour, size and material unchanged)
        h = body(xb)
        loss = sum(F.cross_entropy(hd(h), ytr[idx, k]) for k, hd in enumerate(heads))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    secs = time.time() - t
    body.eval()
    with torch.no_grad():
        h = torch.cat([body(xte[i:i + 256]) for i in range(0, n_test, 256)])
        pred = torch.stack([hd(h).argmax(1) for hd in heads], 1)
        t = float("inf")
        for _ in range(3):  # what scoring costs: a forward pass over 256 pictures, best of three
            t0 = time.perf_counter()
            body(xte[:256])
            t = min(t, time.perf_counter() - t0)
    ok = (pred == yte).float()
    out = {k: 100 * float(ok[:, i].mean()) for i, k in enumerate(ATTRS)}
    for s, size in enumerate(ATTRS["size"]):
        out[f"shape|{size}"] = 100 * float(ok[yte[:, 2] == s, 0].mean())
    out["ms/step"] = 1000 * secs / steps
    out["ms/256"] = 1000 * t
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--towers", nargs="+", default=["cnn", "vit-p8-w64-l3", "vit-p4-w64-l3"])
    ap.add_argument("--px", nargs="+", type=int, default=[64, 128])
    ap.add_argument("--n", type=int, default=7000, help="scenes; the first --test are held back")
    ap.add_argument("--test", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--cache", type=Path, default=Path("runs/bench-cache"))
    a = ap.parse_args()
    images, labels = dataset(a.n, a.cache, a.procs)
    torch.set_num_threads(a.procs)
    print(f"{a.n - a.test} training and {a.test} test single objects; {a.steps} steps of {a.batch}; accuracy %")
    print("| tower | px | shape | shape, small | shape, large | color | size | material | ms / step | ms / 256 pictures |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in a.towers:
        for px in a.px:
            r = train_eval(name, px, images, labels, a.test, a.steps, a.batch, a.lr)
            print(f"| {name} | {px} | {r['shape']:.1f} | {r['shape|small']:.1f} | {r['shape|large']:.1f} | "
                  f"{r['color']:.1f} | {r['size']:.1f} | {r['material']:.1f} | {r['ms/step']:.0f} | {r['ms/256']:.0f} |", flush=True)


if __name__ == "__main__":
    main()
