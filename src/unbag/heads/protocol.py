"""Protocol `head:PATH`: a trained alignment head scores each item's candidate pairs.

The head is a cross-encoder, so it scores only the pairs an item asks about (images x captions of
the item), from frozen features computed once per distinct image and caption. A head adds the
fields and score terms it declares (TFRegions: SGI's regions and structure checks).
"""
from __future__ import annotations

import hashlib

import torch

from ..benchmarks.base import Benchmark
from ..cache import JobCache
from ..errors import UnbagError
from ..models.base import Backend, weights_id
from ..scoring import Protocol
from ..scoring.encode import pixels_of, unique
from ..world.styles import resolve
from .common import head_class, head_inputs
from .features import alternative_features, image_features, text_features
from .shipped import shipped_dir
from .train import head_id, load_head


def _nbytes(fields: dict) -> int:
    return sum(t.nbytes for t in fields.values())


@torch.inference_mode()
def score_head(backend: Backend, bench: Benchmark, batch_size: int = 256, progress: bool = False,
               path: str = "", cache: JobCache | None = None) -> torch.Tensor:
    """Score tensor [items, images, captions] from the head at `path` on `backend`'s features.
    The job's `cache` keeps the frozen features of the last benchmark scored (weights, images and
    captions), up to its byte bound: a plan scores one model's heads one after another on the same
    benchmark (the demo's: 0.23 GB)."""
    from ..benchmarks.base import image_key
    from ..sgi.config import SGIConfig
    from ..sgi.encode import caption_segments

    head, record = load_head(path)
    model_id = weights_id(backend)
    if record["backbone_id"] != model_id:
        raise UnbagError(f"{path}: head trained on backbone {record['backbone']!r}, not on "
                         f"{backend.spec!r} (different weights); evaluate it with --model {record['backbone']}")
    items = bench.items
    n_img, n_cap = len(items[0].images), len(items[0].captions)
    refs, wheres, texts = bench.flat()
    phrases = caption_segments(bench, SGIConfig())
    img_keys = [image_key(r) for r in refs]
    img_order, img_inv = unique(img_keys)
    cap_order, cap_inv = unique(texts)
    key = hashlib.sha1(repr((model_id, head.cfg.early, [img_keys[i] for i in img_order],
                             [(texts[c], [p.text for p in phrases[c]]) for c in cap_order])).encode()).hexdigest()
    cache = cache if cache is not None else JobCache()
    memo = cache.part("heads.features", lambda b: {})  # {key, fields}: the last benchmark's
    fields = memo.get("fields") if memo.get("key") == key else None
    if fields is None:  # the heads of one model share its frozen features
        memo.pop("fields", None)  # one benchmark's features at a time
        memo.pop("key", None)
        feats: dict[str, list] = {}
        for s in range(0, len(img_order), batch_size):
            ii = img_order[s:s + batch_size]
            px = pixels_of(backend, [refs[i] for i in ii], [wheres[i] for i in ii], bench.image_size)
            for k, v in image_features(backend, px, early=head.cfg.early).items():
                feats.setdefault(k, []).append(v)
        for s in range(0, len(cap_order), batch_size):
            cc = cap_order[s:s + batch_size]
            for k, v in text_features(backend, [texts[c] for c in cc], [phrases[c] for c in cc]).items():
                feats.setdefault(k, []).append(v)
        fields = {k: torch.cat(v) for k, v in feats.items()}
        if _nbytes(fields) <= cache.max_bytes:
            memo.update(key=key, fields=fields)
    if head.cfg.calibrate and "phr_alt" not in fields:  # only the texts' alternatives are new
        # the words its captions speak in: a world benchmark's world; free text's and photos' the default
        world = resolve(bench.info.get("style"))
        fields = fields | alternative_features(backend, [phrases[c] for c in cap_order], fields["phr_global"].shape[-1],
                                               world)
        if memo.get("key") == key and _nbytes(fields) <= cache.max_bytes:
            memo["fields"] = fields
    fields = {**fields, **head.bench_fields(backend, bench, img_order, batch_size, cache)}
    img, txt = head_inputs(fields, head.cfg)
    img_idx = torch.tensor(img_inv).view(len(items), n_img)
    cap_idx = torch.tensor(cap_inv).view(len(items), n_cap)
    ii = img_idx[:, :, None].expand(-1, -1, n_cap).reshape(-1)
    cc = cap_idx[:, None, :].expand(-1, n_img, -1).reshape(-1)
    pick = lambda d, idx: {n: None if t is None else t[idx] for n, t in d.items()}  # noqa: E731
    out = torch.cat([head(**pick(img, ii[s:s + batch_size]), **pick(txt, cc[s:s + batch_size]))
                     for s in range(0, len(ii), batch_size)]).view(len(items), n_img, n_cap)
    extra = head.extra_scores(backend, bench, batch_size, cache)
    return out if extra is None else out + extra


def _head(path: str, options: dict, bench: "str | Benchmark"):
    """The head protocol's builder: scoring with the head in `path` (a folder, or a shipped head
    'builtin:KIND@NAME'), and what it records."""
    import functools

    path = str(shipped_dir(path) or path)

    _, record = load_head(path)
    recorded = {"head": record["head"], "backbone": record["backbone"], "head_id": head_id(path, record),
                **head_class(record["head"]["kind"]).recorded(bench)}
    return functools.partial(score_head, path=path), recorded


PROTOCOLS: dict[str, Protocol] = {
    "head:": Protocol("head:PATH | head:builtin:KIND (a trained alignment head; KIND: a registered head)", _head,
                      cached=True, recipe=lambda recorded: head_class(recorded["head"]["kind"]).recipe_of(recorded["head"])),
}
