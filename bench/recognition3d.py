"""Can a model read single 3D objects? Perception apart from binding, on the 3D world.

A SWAP item asks a model to read every object's attributes and to bind them; a model that cannot
read one object's material alone cannot bind it either. Single objects placed by CLEVR's rules
(random camera and lights), each measured seen vs held-out (swap3d.HELD_OUT):

1. zero-shot with the model's own text, on the whole picture and on SGI's input (the picture
   masked to the object's box, the rest filled as SGI's `fill` says: the median colour or each
   row's): among the phrases that differ from the true one only in one attribute ("a small red
   metal cube" vs "a small red rubber cube"), is the true one the most
   similar to the global embedding (chance 1/3, 1/8, 1/2, 1/2)?
2. linear probes on frozen features (the global embedding; the final patch tokens averaged over
   the object's visible pixels), trained on seen objects, tested on both: what the image tower
   holds, whether or not its text side was aligned to it.

    .venv/bin/python bench/recognition3d.py --model builtin
"""
from __future__ import annotations

import argparse

import numpy as np
import torch
import torch.nn.functional as F
from heldout_recognition import probe  # the flat world's linear probe (bench/ is this script's path)

from unbag import models
from unbag.scoring.encode import encode_texts
from unbag.sgi.regions import background_color, masked, row_fill
from unbag.world.captions import phrase
from unbag.world.render3d import picture
from unbag.world.scene3d import SHAPES3D, place, random_object
from unbag.world.swap3d import VALUES as ATTRS, held_out

VALUES = {"shape": SHAPES3D, **ATTRS}


def objects(rng: np.random.Generator, n: int, held: bool, px: int) -> list:
    """n (object, picture, instance map) of single placed objects, all held-out or all seen."""
    out = []
    while len(out) < n:
        o = random_object(rng)
        if bool(held_out(o)) != held:
            continue
        scene, _, inst = place(rng, [o], px=px, draw=False)
        out.append((scene.objects[0], picture(scene, px), inst))
    return out


def masked_to_box(objs: list, rows: bool = False) -> list:
    """The same objects with each picture masked to the object's box, as SGI's mask mode sees it
    (filled with each row's median when `rows`, else the median colour)."""
    out = []
    for o, pic, inst in objs:
        ys, xs = np.nonzero(inst)
        box = (int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1)
        out.append((o, masked(pic, [box], row_fill(pic) if rows else background_color(pic)), inst))
    return out


@torch.inference_mode()
def features(backend, objs: list) -> dict[str, torch.Tensor]:
    """Per object: the unit global embedding and the patch tokens averaged over its visible pixels."""
    x = backend.normalize_pixels(torch.from_numpy(np.stack([p for _, p, _ in objs])))
    f = backend.encode_images(x, tokens=True)
    rows, cols = f.grid
    px = objs[0][1].shape[0]
    w = torch.stack([torch.from_numpy((inst > 0).astype(np.float32)).view(rows, px // rows, cols, px // cols)
                     .mean((1, 3)).flatten() for _, _, inst in objs])
    w = w / w.sum(1, keepdim=True)
    return {"global": F.normalize(f.embeds.float(), dim=-1),
            "patches": torch.einsum("np,npd->nd", w, f.patches.float())}


def zero_shot(backend, objs: list, feats: torch.Tensor, attr: str) -> float:
    """Share of objects whose true phrase beats every phrase that changes only `attr`."""
    texts = [phrase(o.__class__(**{**o.__dict__, attr: v})) for o, _, _ in objs for v in VALUES[attr]]
    t = F.normalize(encode_texts(backend, texts).float(), dim=-1).view(len(objs), len(VALUES[attr]), -1)
    pred = torch.einsum("nd,nvd->nv", feats, t).argmax(1)
    true = torch.tensor([VALUES[attr].index(getattr(o, attr)) for o, _, _ in objs])
    return float((pred == true).float().mean())


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="builtin")
    p.add_argument("--n", type=int, default=300, help="test objects per group (probes train on 4x as many)")
    p.add_argument("--px", type=int, default=64)
    p.add_argument("--seed", type=int, default=5)
    a = p.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(2)
    backend = models.load(a.model)
    rng = np.random.default_rng(a.seed)
    train, seen, held = (objects(rng, 4 * a.n, False, a.px), objects(rng, a.n, False, a.px),
                         objects(rng, a.n, True, a.px))
    f_train, f_seen, f_held = (features(backend, o) for o in (train, seen, held))
    print(f"model {a.model}; {a.n} single 3D objects per group at {a.px} px; accuracy % seen / held-out")
    print(f"| {'measure':34s} | " + " | ".join(f"{k:>13s}" for k in VALUES) + " |")
    cells = [f"{100 * zero_shot(backend, seen, f_seen['global'], k):5.1f} / "
             f"{100 * zero_shot(backend, held, f_held['global'], k):5.1f}" for k in VALUES]
    print(f"| {'zero-shot, own text (chance 1/n)':34s} | " + " | ".join(f"{c:>13s}" for c in cells) + " |")
    for rows, name in ((False, "masked to its box"), (True, "masked, rows' median fill")):
        m_seen, m_held = masked_to_box(seen, rows), masked_to_box(held, rows)
        g_seen, g_held = features(backend, m_seen)["global"], features(backend, m_held)["global"]
        cells = [f"{100 * zero_shot(backend, m_seen, g_seen, k):5.1f} / "
                 f"{100 * zero_shot(backend, m_held, g_held, k):5.1f}" for k in VALUES]
        print(f"| {'zero-shot, ' + name:34s} | " + " | ".join(f"{c:>13s}" for c in cells) + " |")
    # shape by size, seen objects: a small object covers a few pixels at 64 px
    for rows, name in ((None, "whole picture"), (True, "masked, rows' median fill")):
        objs = seen if rows is None else masked_to_box(seen, rows)
        g = features(backend, objs)["global"]
        cells = []
        for size in ("small", "large"):
            keep = [k for k, (o, _, _) in enumerate(objs) if o.size == size]
            cells.append(f"{size} {100 * zero_shot(backend, [objs[k] for k in keep], g[keep], 'shape'):5.1f}")
        print(f"| shape by size, seen, {name}: " + ", ".join(cells) + " |")
    for name in f_train:
        cells = []
        for attr, vals in VALUES.items():
            label = lambda objs: torch.tensor([vals.index(getattr(o, attr)) for o, _, _ in objs])  # noqa: E731
            s, h = probe(f_train[name], label(train), [(f_seen[name], label(seen)), (f_held[name], label(held))],
                         len(vals))
            cells.append(f"{100 * s:5.1f} / {100 * h:5.1f}")
        print(f"| {'linear probe, ' + name:34s} | " + " | ".join(f"{c:>13s}" for c in cells) + " |")


if __name__ == "__main__":
    main()
