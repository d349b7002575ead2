"""Do a model's patch tokens align with text, and does a dense loss make them? (TFLocal-LI's start)

TFLocal-LI (docs/heads.md) starts from late interaction over the frozen patch tokens: each object or
group phrase of a caption takes its best cosine over the image's joint-space patch tokens, and the
phrases' best cosines are averaged. This probe scores ctrl that way before and after continuing the
model's CLIP training on `world:pretraining` (every combination, as the built-in model was
pretrained) with that same late-interaction score as a second InfoNCE loss, FILIP-style (arXiv
2111.07783; phrases encoded alone instead of caption tokens), weight `--dense`. `--dense 0` is the
control: the same continued training with the CLIP loss alone. The dense term is `clip-dense`'s
(unbag/training/objectives/dense.py), here with the captions' own grammar phrases. Prints group
scores ID / OOD of late interaction and of global cosine; nothing is shipped (`--out` saves the
trained model). `--steps 0` scores a model as it is (e.g. a `clip-dense` run's).

It also scores the calibrated start of TFLocal-LI (`--calibrate`): each phrase's best cosine less
that of its closest one-word change (attribute or number).

`--why` also prints what the patch tokens know of each attribute: on ctrl's color / size / material
items, how often an object's own phrase beats the same phrase with one attribute changed (its size,
its material, or its shape made the other object's), by best cosine over the object's own patches
(the patches whose centre lies in its box) and over all patches. A SWAP item's two objects differ
only in shape and the swapped value, so the phrase the wrong caption gives an object is matched, at
best, by the other object: its shape is wrong. Late interaction can only bind as well as the
patches tell shapes apart (docs/heads.md, TFLocal-LI).

    .venv/bin/python bench/dense_alignment_probe.py --steps 600 --dense 1.0 --lr 1e-4
    .venv/bin/python bench/dense_alignment_probe.py --model runs/clip-dense/model --steps 0 --per-category 400
    .venv/bin/python bench/dense_alignment_probe.py --steps 0 --per-category 400 --why
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import torch
import torch.nn.functional as F

from unbag import metrics, models
from unbag.benchmarks.ctrl import generated
from unbag.scoring.encode import pixels_of
from unbag.sgi.config import SGIConfig
from unbag.sgi.encode import caption_segments
from unbag.sgi.segments import from_grammar
from unbag.training.objectives.clip import clip_loss
from unbag.training.objectives.dense import KINDS, alternatives, dense_loss, late_interaction
from unbag.world import stream
from unbag.world.captions import phrase
from unbag.world.io import generate
from unbag.world.scene import MATERIALS, SIZES
from unbag.world.swap import CATEGORIES


@torch.inference_mode()
def encode_ctrl(backend, bench) -> tuple[torch.Tensor, torch.Tensor]:
    """Unit patch tokens [2 * items, P, D] and global embeddings [2 * items, D] of ctrl's images."""
    refs, wheres, _ = bench.flat()
    f = backend.encode_images(pixels_of(backend, refs, wheres, bench.image_size), tokens=True)
    return F.normalize(f.patches, dim=-1), F.normalize(f.embeds, dim=-1)


@torch.inference_mode()
def ctrl_scores(backend, bench, patches: torch.Tensor, img: torch.Tensor) -> dict[str, dict]:
    """Group % ID / OOD per category of late interaction and of global cosine on ctrl."""
    _, _, texts = bench.flat()
    segs = caption_segments(bench, SGIConfig())
    kept = [[s.text for s in ss if s.kind in KINDS] for ss in segs]
    owner = torch.tensor([c for c, ps in enumerate(kept) for _ in ps])
    phr = F.normalize(backend.encode_texts(backend.tokenize([p for ps in kept for p in ps])).embeds, dim=-1)
    txt = F.normalize(backend.encode_texts(backend.tokenize(texts)).embeds, dim=-1)
    n = len(bench.items)
    first = torch.searchsorted(owner, torch.arange(len(texts) + 1))  # each caption's phrase rows
    li = torch.stack([late_interaction(phr[first[2 * i]:first[2 * i + 2]], owner[first[2 * i]:first[2 * i + 2]] - 2 * i,
                                       patches[2 * i:2 * i + 2], 2).T for i in range(n)])  # [items, images, captions]
    glob = torch.stack([img[2 * i:2 * i + 2] @ txt[2 * i:2 * i + 2].T for i in range(n)])
    # calibrated (TFLocal-LI --calibrate): each phrase's best cosine less its closest alternative's
    flat_phr = [p for ps in kept for p in ps]
    alts = [alternatives(p) for p in flat_phr]
    names = sorted({a for al in alts for a in al})
    emb = F.normalize(backend.encode_texts(backend.tokenize(names)).embeds, dim=-1)
    row = {t: i for i, t in enumerate(names)}
    best = torch.stack([(phr[k] @ patches[2 * (int(owner[k]) // 2) + j].T).amax(-1) for k in range(len(flat_phr))
                        for j in range(2)]).view(-1, 2)  # [phrases, the item's 2 images]
    for k, al in enumerate(alts):
        if al:
            im = 2 * (int(owner[k]) // 2)
            best[k] -= (emb[[row[a] for a in al]] @ patches[im:im + 2].reshape(-1, patches.shape[-1]).T
                        ).view(len(al), 2, -1).amax(-1).amax(0)
    cal = torch.zeros(len(texts), 2).index_add(0, owner, best) / torch.bincount(owner, minlength=len(texts)).clamp(min=1)[:, None]
    cal = cal.view(n, 2, 2).transpose(1, 2)  # [items, images, captions]
    out = {}
    for name, s in (("late interaction", li), ("calibrated LI", cal), ("global cosine", glob)):
        flat, _, _ = metrics.aggregate(metrics.winoground(s), [it.group for it in bench.items], ("group",))
        out[name] = {c: (100 * flat[f"id/{c}/group"], 100 * flat[f"ood/{c}/group"]) for c in CATEGORIES}
        out[name]["OOD avg c/s/m"] = float(np.mean([out[name][c][1] for c in CATEGORIES[:3]]))
    return out


CHANGES = ("size", "material", "shape")


@torch.inference_mode()
def attribute_discrimination(backend, patches: torch.Tensor, seed: int, per_category: int, px: int) -> dict:
    """% of (object, image) cases of ctrl's attribute items where the object's phrase beats each
    one-attribute change of it: {(category, split): {change: (own patches %, all patches %)}}.
    `patches`: ctrl's unit patch tokens (encode_ctrl), whose items are generate(seed, per_category)'s."""
    items = list(generate(seed, per_category))
    grid = int(round(patches.shape[1] ** 0.5))
    centres = (torch.arange(grid) + 0.5) * px / grid
    cases = []  # (key, image row, own patch mask, true phrase, changed phrases)
    for k, it in enumerate(items):
        if it.category not in CATEGORIES[:3]:
            continue
        for im, sc in enumerate(it.scenes):
            for o, other in ((sc.objects[0], sc.objects[1]), (sc.objects[1], sc.objects[0])):
                x0, y0, x1, y1 = o.box(px)
                own = (((centres >= y0) & (centres < y1))[:, None] & ((centres >= x0) & (centres < x1))[None]).flatten()
                changed = [o.with_(size=next(v for v in SIZES if v != o.size)),
                           o.with_(material=next(v for v in MATERIALS if v != o.material)), o.with_(shape=other.shape)]
                cases.append(((it.category, it.split), 2 * k + im, own, phrase(o), [phrase(c) for c in changed]))
    texts = sorted({t for c in cases for t in [c[3], *c[4]]})
    row = {t: i for i, t in enumerate(texts)}
    emb = F.normalize(backend.encode_texts(backend.tokenize(texts)).embeds, dim=-1)
    out: dict = {}
    for key, img, own, true, changed in cases:
        if not own.any():
            continue
        cos = emb[[row[true]] + [row[c] for c in changed]] @ patches[img].T  # [1 + changes, P]
        best_own, best_all = cos[:, own].amax(-1), cos.amax(-1)
        out.setdefault(key, []).append(torch.cat([best_own[1:] < best_own[0], best_all[1:] < best_all[0]]).float())
    return {key: {ch: (100 * float(torch.stack(v)[:, j].mean()), 100 * float(torch.stack(v)[:, 3 + j].mean()))
                  for j, ch in enumerate(CHANGES)} for key, v in sorted(out.items())}


def show_discrimination(table: dict) -> None:
    print("the object's phrase beats it with one attribute changed: % over own patches / all patches")
    for (cat, split), row in table.items():
        print(f"  {cat:8s} {split:3s} | " + " | ".join(f"{ch} {a:.1f} / {b:.1f}" for ch, (a, b) in row.items()))


def show(title: str, scores: dict) -> None:
    print(f"{title}: group % ID / OOD")
    for name, row in scores.items():
        cells = " | ".join(f"{c} {row[c][0]:.1f} / {row[c][1]:.1f}" for c in CATEGORIES)
        print(f"  {name:16s} | {cells} | OOD avg c/s/m {row['OOD avg c/s/m']:.1f}")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="builtin")
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--dense", type=float, default=1.0, help="weight of the late-interaction loss (0: control)")
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--per-category", type=int, default=100)
    p.add_argument("--out", default=None, help="save the trained model here")
    p.add_argument("--why", action="store_true", help="also print what the patch tokens know of each attribute")
    a = p.parse_args()
    torch.manual_seed(0)
    backend = models.load(a.model)
    bench = generated(seed=0, per_category=a.per_category, style="flat")
    def report(title: str) -> None:
        patches, img = encode_ctrl(backend, bench)
        show(title, ctrl_scores(backend, bench, patches, img))
        if a.why:
            show_discrimination(attribute_discrimination(backend, patches, 0, a.per_category, bench.image_size))

    report("before")
    if not a.steps:
        return
    model = backend.model.train()
    opt = torch.optim.AdamW([q for q in model.parameters() if q.requires_grad], lr=a.lr, weight_decay=0.1)
    t0 = time.time()
    for step in range(a.steps):
        # stream seed 5: other samples than the built-in model's pretraining run (seed 0)
        batch = [stream.sample(5, step * a.batch_size + j, backend.image_size[0], "pretraining")
                 for j in range(a.batch_size)]
        f = backend.encode_images(backend.normalize_pixels(torch.from_numpy(np.stack([s.image for s in batch]))),
                                  tokens=True)
        scale = backend.logit_scale
        loss = clip_loss(f.embeds, backend.encode_texts(backend.tokenize([s.caption for s in batch])).embeds, scale)
        if a.dense > 0:
            kept = [[s.text for s in from_grammar(x.segments) if s.kind in KINDS] for x in batch]
            owner = torch.tensor([c for c, ps in enumerate(kept) for _ in ps])
            phr = backend.encode_texts(backend.tokenize([q for ps in kept for q in ps])).embeds
            loss = loss + a.dense * dense_loss(phr, owner, f.patches, scale)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 100 == 0 or step == a.steps - 1:
            print(f"step {step} loss {float(loss.detach()):.3f} ({time.time() - t0:.0f} s)", flush=True)
    model.eval()
    report(f"after {a.steps} steps, dense weight {a.dense}, lr {a.lr}")
    if a.out:
        print("saved", backend.save(a.out))


if __name__ == "__main__":
    main()
