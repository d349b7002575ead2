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

    .venv/bin/python bench/dense_alignment_probe.py --steps 600 --dense 1.0 --lr 1e-4
    .venv/bin/python bench/dense_alignment_probe.py --model runs/clip-dense/model --steps 0 --per-category 400
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
from unbag.sgi.protocol import SGIConfig, caption_segments
from unbag.sgi.segments import from_grammar
from unbag.training.objectives.clip import clip_loss
from unbag.training.objectives.dense import KINDS, dense_loss, late_interaction
from unbag.world import stream
from unbag.world.swap import CATEGORIES


@torch.inference_mode()
def ctrl_scores(backend, bench) -> dict[str, dict]:
    """Group % ID / OOD per category of late interaction and of global cosine on ctrl."""
    refs, wheres, texts = bench.flat()
    segs = caption_segments(bench, SGIConfig())
    f = backend.encode_images(pixels_of(backend, refs, wheres, bench.image_size), tokens=True)
    patches, img = F.normalize(f.patches, dim=-1), F.normalize(f.embeds, dim=-1)
    kept = [[s.text for s in ss if s.kind in KINDS] for ss in segs]
    owner = torch.tensor([c for c, ps in enumerate(kept) for _ in ps])
    phr = F.normalize(backend.encode_texts(backend.tokenize([p for ps in kept for p in ps])).embeds, dim=-1)
    txt = F.normalize(backend.encode_texts(backend.tokenize(texts)).embeds, dim=-1)
    n = len(bench.items)
    first = torch.searchsorted(owner, torch.arange(len(texts) + 1))  # each caption's phrase rows
    li = torch.stack([late_interaction(phr[first[2 * i]:first[2 * i + 2]], owner[first[2 * i]:first[2 * i + 2]] - 2 * i,
                                       patches[2 * i:2 * i + 2], 2).T for i in range(n)])  # [items, images, captions]
    glob = torch.stack([img[2 * i:2 * i + 2] @ txt[2 * i:2 * i + 2].T for i in range(n)])
    out = {}
    for name, s in (("late interaction", li), ("global cosine", glob)):
        flat, _, _ = metrics.aggregate(metrics.winoground(s), [it.group for it in bench.items], ("group",))
        out[name] = {c: (100 * flat[f"id/{c}/group"], 100 * flat[f"ood/{c}/group"]) for c in CATEGORIES}
        out[name]["OOD avg c/s/m"] = float(np.mean([out[name][c][1] for c in CATEGORIES[:3]]))
    return out


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
    a = p.parse_args()
    torch.manual_seed(0)
    backend = models.load(a.model)
    bench = generated(seed=0, per_category=a.per_category)
    show("before", ctrl_scores(backend, bench))
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
    show(f"after {a.steps} steps, dense weight {a.dense}, lr {a.lr}", ctrl_scores(backend, bench))
    if a.out:
        print("saved", backend.save(a.out))


if __name__ == "__main__":
    main()
