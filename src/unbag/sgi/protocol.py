"""Protocol `sgi`: Structure-Guided Inference on frozen encoders (arXiv 2604.11496, 2506.09691).

score(I, T) = mean over the caption's segments of the best cosine between the segment and an
image region (`assign="max"`, the paper's), or of a one-to-one segment-region assignment
(`assign="hungarian"`), optionally mixed with the global cosine: (1 - mix) * sgi + mix * global.

unbag's choices (documented in docs/sgi.md; the `sgi:paper` preset turns them all off): regions
default to background-difference blobs plus their unions, masked in place (absolute size and
position survive, unlike the paper's crops); with `match="kind"` an object segment is matched only
to single regions, a counted group segment ("three red spheres") only to unions of exactly that
many regions, and a relation segment to any region, so "a red cube" cannot be satisfied by a union
that merely contains red and a cube somewhere. Two structure checks add +-weight / K to the score
(K segments): `counts="check"` (count_weight) for each counted phrase of a caption that counts,
as the number of single regions that fit its description best matches the number it says or
not; `relations="geometry"` (relation_weight) for each relation whose words name a spatial
predicate (left of, right of, above, on, under, in front of, behind...), as it holds or fails
between the regions chosen for its subject and object.
"""
from __future__ import annotations

import torch

from ..benchmarks.base import Benchmark
from ..cache import JobCache
from ..models.base import Backend
from ..scoring.encode import encode_texts
from . import segments as seg
from .config import SGIConfig
from .encode import caption_segments, encode_regions
from .match import aggregate, allowed_pairs, checkable, count_check, counts_things, geometry


def score_sgi(backend: Backend, bench: Benchmark, batch_size: int = 512, progress: bool = False,
              cfg: SGIConfig | None = None, details: list | None = None,
              cache: JobCache | None = None, checks_only: bool = False) -> torch.Tensor:
    """Score tensor [items, images, captions] under SGI; `details` (a list) receives, per item,
    image and caption, the segments, regions chosen and their similarities. `checks_only`: only
    what the count and geometry checks add (0 where a caption has nothing to check). Regions and
    their embeddings are remembered in the job's `cache` (a fresh one when None)."""
    cfg = cfg or SGIConfig()
    items = bench.items
    n_img, n_cap = len(items[0].images), len(items[0].captions)
    regs = encode_regions(backend, bench, cfg, batch_size, cache=cache, progress=progress)
    segs = caption_segments(bench, cfg)
    flat = [s.text for ss in segs for s in ss]
    temb = encode_texts(backend, flat, progress=progress)
    # description embeddings ("a red cube" for "three red cubes"), for the captions that count
    counting = [cfg.counts != "off" and counts_things(ss) for ss in segs]
    demb = encode_texts(backend, [seg.description(s.text) for ss, k in zip(segs, counting) if k for s in ss],
                        progress=progress)
    scores = torch.empty(len(items), n_img, n_cap)
    t = d = 0
    seg_emb, desc_emb = [], []
    for ss, k in zip(segs, counting):
        seg_emb.append(temb[t:t + len(ss)])
        desc_emb.append(demb[d:d + len(ss)] if k else None)
        t += len(ss)
        d += len(ss) if k else 0
    for n in range(len(items)):
        for i in range(n_img):
            r = regs[n * n_img + i]
            for c in range(n_cap):
                ss, e = segs[n * n_cap + c], seg_emb[n * n_cap + c]
                if checks_only and not checkable(ss, cfg):
                    scores[n, i, c] = 0.0
                    continue
                sim = e @ r.emb.T
                allowed = allowed_pairs(ss, r) if cfg.match == "kind" else torch.ones_like(sim, dtype=torch.bool)
                scores[n, i, c], choice = aggregate(sim, allowed, cfg.assign)
                if checks_only:
                    scores[n, i, c] = 0.0
                if desc_emb[n * n_cap + c] is not None:
                    scores[n, i, c] += cfg.count_weight * sum(count_check(ss, r, desc_emb[n * n_cap + c],
                                                                       fit=cfg.counts == "fit")) / len(ss)
                if cfg.relations == "geometry":
                    geo = geometry(ss, [r.regions[j] for j in choice])
                    scores[n, i, c] += cfg.relation_weight * sum(geo) / len(ss)
                if details is not None:
                    details.append({"item": n, "image": i, "caption": c,
                                    "segments": [(s.text, s.kind) for s in ss],
                                    "regions": [r.regions[j] for j in choice],
                                    "sims": [float(sim[k, j]) for k, j in enumerate(choice)]})
    if cfg.mix > 0 and not checks_only:
        from ..scoring.cosine import score_global
        scores = (1 - cfg.mix) * scores + cfg.mix * score_global(backend, bench, batch_size, progress)
    return scores
