"""How well a model recognises single objects of held-out combinations vs seen ones (ctrl world).

What caps SGI and the alignment heads out of distribution is not binding but recognition: an object
of a held-out combination (a small cylinder, a metal cube...) is never rendered in training, and
the encoders map it onto a seen combination. Two measurements, each seen vs held-out:

1. zero-shot, with the model's own text: one object rendered alone; among the 5 captions that
   differ only in the shape (or only in one attribute), is the true one the most similar?
2. linear probes on frozen features (global embedding, final-layer and first-block patch tokens
   pooled over the object's box), trained on seen combinations, tested on both.

    .venv/bin/python bench/heldout_recognition.py --model builtin
"""
from __future__ import annotations

import argparse

import numpy as np
import torch
import torch.nn.functional as F

from unbag import models
from unbag.scoring.encode import encode_texts
from unbag.world.captions import phrase
from unbag.world.render import render
from unbag.world.scene import COLORS, MATERIALS, SHAPES, SIZES, Scene, place, random_attrs

VALUES = {"shape": SHAPES, "color": tuple(COLORS), "size": SIZES, "material": MATERIALS}


def objects(rng: np.random.Generator, n: int, held: bool) -> list:
    """n single objects at random positions, all of held-out combinations or all of seen ones."""
    out = []
    while len(out) < n:
        o = random_attrs(rng, allow_held_out=True)
        placed = place(rng, [o]) if bool(o.held_out()) == held else None
        if placed:
            out.append(placed[0])
    return out


@torch.inference_mode()
def features(backend, objs: list, rng: np.random.Generator) -> dict[str, torch.Tensor]:
    """Per object: global embedding and patch tokens (final, first block) averaged over its box."""
    x = backend.normalize_pixels(torch.from_numpy(np.stack([render(Scene([o], int(rng.integers(2**31))), 64)
                                                             for o in objs])))
    f = backend.encode_images(x, tokens=True)
    out = {"global": F.normalize(f.embeds.float(), dim=-1)}
    rows, cols = f.grid
    patch = 64 // cols
    w = torch.zeros(len(objs), rows * cols)
    for k, o in enumerate(objs):
        x0, y0, x1, y1 = o.box(64)
        m = torch.zeros(rows, cols)
        m[y0 // patch:(y1 - 1) // patch + 1, x0 // patch:(x1 - 1) // patch + 1] = 1
        w[k] = m.flatten() / m.sum()
    out["patches"] = torch.einsum("np,npd->nd", w, f.patches.float())
    if hasattr(backend, "early_patches"):
        out["early patches"] = torch.einsum("np,npd->nd", w, backend.early_patches(x).float())
    return out


def zero_shot(backend, objs: list, feats: torch.Tensor, attr: str) -> float:
    """Share of objects whose true caption beats the captions that change only `attr`."""
    texts = [phrase(o.with_(**{attr: v})) for o in objs for v in VALUES[attr]]
    t = F.normalize(encode_texts(backend, texts).float(), dim=-1).view(len(objs), len(VALUES[attr]), -1)
    pred = torch.einsum("nd,nvd->nv", feats, t).argmax(1)
    true = torch.tensor([VALUES[attr].index(getattr(o, attr)) for o in objs])
    return float((pred == true).float().mean())


def probe(train: torch.Tensor, y: torch.Tensor, tests: list[tuple[torch.Tensor, torch.Tensor]], k: int) -> list[float]:
    """Multinomial logistic regression (L-BFGS, small L2) on standardised features; test accuracies."""
    mu, sd = train.mean(0), train.std(0) + 1e-6
    w = torch.zeros(train.shape[1], k, requires_grad=True)
    b = torch.zeros(k, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], max_iter=200)
    xs = (train - mu) / sd

    def closure():
        opt.zero_grad()
        loss = F.cross_entropy(xs @ w + b, y) + 1e-3 * (w ** 2).sum()
        loss.backward()
        return loss
    opt.step(closure)
    with torch.no_grad():
        return [float((((x - mu) / sd) @ w + b).argmax(1).eq(t).float().mean()) for x, t in tests]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="builtin")
    p.add_argument("--n", type=int, default=600, help="test objects per group (probes train on 5x as many)")
    p.add_argument("--seed", type=int, default=5)
    a = p.parse_args()
    torch.manual_seed(0)
    backend = models.load(a.model)
    rng = np.random.default_rng(a.seed)
    train, seen, held = objects(rng, 5 * a.n, False), objects(rng, a.n, False), objects(rng, a.n, True)
    f_train, f_seen, f_held = (features(backend, o, rng) for o in (train, seen, held))
    print(f"model {a.model}; {a.n} single objects per group; accuracy seen / held-out (%)")
    print(f"| {'measure':34s} | " + " | ".join(f"{k:>13s}" for k in VALUES) + " |")
    cells = [f"{100 * zero_shot(backend, seen, f_seen['global'], k):5.1f} / {100 * zero_shot(backend, held, f_held['global'], k):5.1f}"
             for k in VALUES]
    print(f"| {'zero-shot, own text (chance 1/n)':34s} | " + " | ".join(f"{c:>13s}" for c in cells) + " |")
    for name in f_train:
        cells = []
        for attr, vals in VALUES.items():
            label = lambda objs: torch.tensor([vals.index(getattr(o, attr)) for o in objs])  # noqa: E731
            s, h = probe(f_train[name], label(train), [(f_seen[name], label(seen)), (f_held[name], label(held))], len(vals))
            cells.append(f"{100 * s:5.1f} / {100 * h:5.1f}")
        print(f"| {'linear probe, ' + name:34s} | " + " | ".join(f"{c:>13s}" for c in cells) + " |")


if __name__ == "__main__":
    main()
