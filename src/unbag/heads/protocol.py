"""Protocol `head:PATH`: a trained alignment head scores each item's candidate pairs.

The head is a cross-encoder, so it scores only the pairs an item asks about (images x captions of
the item), from frozen features computed once per distinct image and caption.

TFRegions starts as SGI's matching and learns a correction to it; SGI's two structure checks
(counts, spatial relations: docs/sgi.md) are not learned, so they are added to its score as SGI
adds them, in the head's units (times its temperature). An untrained TFRegions head therefore
ranks exactly as default SGI does.
"""
from __future__ import annotations

from dataclasses import replace

import torch

from ..benchmarks.base import Benchmark
from ..errors import UnbagError
from ..models.base import Backend, weights_id
from ..scoring.encode import pixels_of, unique
from .common import head_inputs
from .features import image_features, pack_regions, text_features
from .train import load_head


@torch.inference_mode()
def score_head(backend: Backend, bench: Benchmark, batch_size: int = 256, progress: bool = False,
               path: str = "") -> torch.Tensor:
    """Score tensor [items, images, captions] from the head at `path` on `backend`'s features."""
    from ..benchmarks.base import image_key
    from ..sgi.protocol import SGIConfig, caption_segments, encode_regions

    head, record = load_head(path)
    if record["backbone_id"] != weights_id(backend):
        raise UnbagError(f"{path}: head trained on backbone {record['backbone']!r}, not on "
                         f"{backend.spec!r} (different weights); evaluate it with --model {record['backbone']}")
    items = bench.items
    n_img, n_cap = len(items[0].images), len(items[0].captions)
    refs, wheres, texts = bench.flat()
    phrases = caption_segments(bench, SGIConfig())
    img_order, img_inv = unique([image_key(r) for r in refs])
    cap_order, cap_inv = unique(texts)
    feats: dict[str, list] = {}
    for s in range(0, len(img_order), batch_size):
        ii = img_order[s:s + batch_size]
        px = pixels_of(backend, [refs[i] for i in ii], [wheres[i] for i in ii], bench.image_size)
        for k, v in image_features(backend, px).items():
            feats.setdefault(k, []).append(v)
    if head.cfg.kind == "tfregions":  # SGI's regions of every distinct image
        regions = encode_regions(backend, bench, SGIConfig.for_benchmark(bench.name), batch_size)
        for k, v in pack_regions([regions[i] for i in img_order]).items():
            feats[k] = [v]
    for s in range(0, len(cap_order), batch_size):
        cc = cap_order[s:s + batch_size]
        for k, v in text_features(backend, [texts[c] for c in cc], [phrases[c] for c in cc]).items():
            feats.setdefault(k, []).append(v)
    img, txt = head_inputs({k: torch.cat(v) for k, v in feats.items()}, head.cfg)
    img_idx = torch.tensor(img_inv).view(len(items), n_img)
    cap_idx = torch.tensor(cap_inv).view(len(items), n_cap)
    ii = img_idx[:, :, None].expand(-1, -1, n_cap).reshape(-1)
    cc = cap_idx[:, None, :].expand(-1, n_img, -1).reshape(-1)
    pick = lambda d, idx: {n: None if t is None else t[idx] for n, t in d.items()}  # noqa: E731
    out = torch.cat([head(**pick(img, ii[s:s + batch_size]), **pick(txt, cc[s:s + batch_size]))
                     for s in range(0, len(ii), batch_size)]).view(len(items), n_img, n_cap)
    if head.cfg.kind == "tfregions":
        out = out + head.logit_scale.exp() * structure_checks(backend, bench, batch_size)
    return out


def structure_checks(backend: Backend, bench: Benchmark, batch_size: int = 256) -> torch.Tensor:
    """What SGI's count and geometry checks add to each score [items, images, captions] (regions
    come from SGI's in-memory cache, so this costs the matching, not the encoding)."""
    from ..sgi.protocol import SGIConfig, score_sgi
    cfg = replace(SGIConfig.for_benchmark(bench.name), counts="check", relations="geometry")
    return score_sgi(backend, bench, batch_size, cfg=cfg, checks_only=True)
