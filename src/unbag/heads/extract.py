"""`unbag features`: extract a feature cache from the world stream, SWAP items or caption data."""
from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import torch
from PIL import Image
from rich.progress import Progress, track

from ..errors import UnbagError
from ..models.base import Backend
from ..sgi.segments import from_grammar
from ..utils import atomic_dir
from ..world.styles import world
from ..world.worlds import World
from .cache import ShardWriter, index_record, write
from .features import image_features, region_features, text_features


def extract_world(backend: Backend, out: str | os.PathLike, n: int, seed: int = 1, data: str = "world",
                  chunk: int = 256, progress: bool = True, overwrite: bool = False) -> Path:
    """Cache features of samples 0..n-1 of a world stream or pool (`data`, as the trainer reads
    it; `seed`: the stream's) and of their twins, with the regions SGI takes on that world (3D: objects)."""
    from ..training.data import parse_data, source

    spec = parse_data(data)
    if spec.kind != "world":
        raise UnbagError(f"{data!r}: not a world stream or pool")
    px = backend.image_size[0]
    src = source(spec, seed, px)
    sgi = world(spec.style).sgi or None
    rows: dict[str, list[np.ndarray]] = {}
    twin_rows: dict[str, list[np.ndarray]] = {}
    twin_of: list[int] = []
    for start in track(range(0, n, chunk), description="features", disable=not progress):
        samples = [src.sample(k) for k in range(start, min(n, start + chunk))]
        twins = [(start + j, src.twin(start + j, s)) for j, s in enumerate(samples)]
        twins = [(k, t) for k, t in twins if t is not None]
        for store, items in ((rows, samples), (twin_rows, [t for _, t in twins])):
            if not items:
                continue
            pixels = backend.normalize_pixels(torch.from_numpy(np.stack([x.image for x in items])))
            f = image_features(backend, pixels) | region_features(backend, [x.image for x in items], sgi) | text_features(
                backend, [x.caption for x in items], [from_grammar(x.segments) for x in items])
            for k, v in f.items():
                store.setdefault(k, []).append(v.numpy())
        twin_of += [k for k, _ in twins]
    fields = {k: np.concatenate(rows[k] + twin_rows.get(k, [])) for k in rows}
    twin = np.full(len(fields["img_global"]), -1, dtype=np.int64)
    for j, k in enumerate(twin_of):  # pair sample k with its twin row n + j, both ways
        twin[k], twin[n + j] = n + j, k
    fields["twin"] = twin
    meta = {"data": data, "seed": seed, "samples": n, "twins": len(twin_of)}
    return write(out, backend, fields, meta, overwrite)


def _swap_items(w: World, seed: int, ks: range, px: int) -> tuple[list, np.ndarray]:
    """In-distribution SWAP items k of a world and their images [2 per item, px, px, 3]."""
    cats = w.categories()
    got = [w.swap_item(seed, "id", cats[k % len(cats)], k // len(cats), px) for k in ks]
    return [it for it, _, _ in got], np.stack([im for _, images, _ in got for im in images])


SWAPS = "swaps"  # feature data of SWAP items: swaps[@WORLD] (world/styles.py)


def extract_swaps(backend: Backend, out: str | os.PathLike, n: int, seed: int = 1000, style: str | None = None,
                  chunk: int = 256, progress: bool = True, overwrite: bool = False) -> Path:
    """Cache features of n in-distribution SWAP items of the flat or 3D world (None: the default
    one; both images and captions; each row's twin is the other half of its item). Held-out
    combinations never occur: items are built for split "id", from a seed other than the test
    benchmark's. Region features come from the regions SGI takes on that world's benchmark (3D:
    objects). The cache records its world by its explicit name (swaps@flat or swaps@3d)."""
    w = world(style)
    px = backend.image_size[0]
    parts: dict[str, list[np.ndarray]] = {}
    for start in track(range(0, n, chunk), description="features", disable=not progress):
        items, images = _swap_items(w, seed, range(start, min(n, start + chunk)), px)
        f = (image_features(backend, backend.normalize_pixels(torch.from_numpy(images)))
             | region_features(backend, list(images), w.sgi or None)
             | text_features(backend, [c for it in items for c in it.captions],
                             [from_grammar(segs) for it in items for segs in it.segments]))
        for k, v in f.items():
            parts.setdefault(k, []).append(v.numpy())
    fields = {k: np.concatenate(v) for k, v in parts.items()}
    rows = len(fields["img_global"])
    fields["twin"] = np.arange(rows, dtype=np.int64) ^ 1  # rows 2i and 2i+1 are one item's halves
    return write(out, backend, fields, {"data": f"{SWAPS}@{w.name}", "seed": seed,
                                        "samples": rows, "twins": rows},
                 overwrite)


def caption_records(data: str, n: int, seed: int = 0) -> Iterator[tuple[Image.Image, str, list[str]]]:
    """(image, caption, the data's own hard negatives) of the first n records of caption data
    (csv:, jsonl:, wds:, degla:, as the trainer reads it; each record once, in the trainer's order)."""
    from ..training.data import parse_data, source, wds_records

    spec = parse_data(data)
    if spec.kind == "world":
        raise UnbagError("world data has its own feature extractor (extract_world)")
    if spec.kind == "webdataset":
        for k, rec in enumerate(wds_records(spec.path, skip=0)):
            if k == n:
                return
            yield rec.image, rec.captions[0], []
        return
    src = source(spec, seed, 0)
    for k in range(min(n, len(src.rows))):
        rec = src.record(k)
        yield rec.image, rec.captions[0], list(rec.negatives or [])


def extract_captions(backend: Backend, out: str | os.PathLike, data: str, n: int, seed: int = 0,
                     regions: bool = True, chunk: int = 64, progress: bool = True, overwrite: bool = False) -> Path:
    """Cache features of the first n records of caption data (photos with captions, e.g. COCO),
    each with one hard negative caption: the data's own (DeGLA's enhanced negatives) or else one
    of unbag's typed negatives of the caption (`unbag negatives`' rules: swapped or replaced
    attributes and objects, exchanged noun phrases). Regions (for TFRegions) come from SGI's
    photo region source; regions=False leaves them out."""
    from ..negatives.typed import RuleGenerator
    from ..sgi import segments as seg
    from ..sgi.config import PICTURE_DEFAULTS

    gen = RuleGenerator()
    total = negatives = 0
    with atomic_dir(out, "features", overwrite) as tmp, Progress(disable=not progress) as bar:
        shards = ShardWriter(tmp)  # rows go to disk shard by shard: a COCO-sized cache never sits in memory
        task = bar.add_task("features", total=n)
        records = caption_records(data, n, seed)
        while batch := list(itertools.islice(records, chunk)):
            rng = np.random.default_rng([seed, 17, total])
            negs = [own[int(rng.integers(len(own)))] if own else next((t for _, t in gen.generate(c, 1, rng)), None)
                    for _, c, own in batch]
            has_neg = np.array([x is not None for x in negs])
            caps = [c for _, c, _ in batch]
            negs = [x if x is not None else c for x, c in zip(negs, caps)]  # no negative: masked in the loss
            images = [im for im, _, _ in batch]
            pixels = torch.stack([backend.preprocess(im) for im in images])
            f = image_features(backend, pixels) | text_features(backend, caps, [seg.parse(c) for c in caps])
            if regions:
                f |= region_features(backend, [np.asarray(im) for im in images], PICTURE_DEFAULTS["photos"])
            f |= {f"neg_{k}": v for k, v in text_features(backend, negs, [seg.parse(c) for c in negs]).items()}
            shards.add({k: v.numpy() for k, v in f.items()} | {"has_neg": has_neg,
                                                               "twin": np.full(len(batch), -1, dtype=np.int64)})
            total, negatives = total + len(batch), negatives + int(has_neg.sum())
            bar.update(task, advance=len(batch))
        if not total:
            raise UnbagError(f"{data}: no records to extract features from")
        bar.update(task, total=total)  # the data may hold fewer than n records
        index = index_record(backend, total, shards.finish(), {"data": data, "samples": total, "twins": 0,
                                                         "negatives": negatives})
        (tmp / "index.json").write_text(json.dumps(index, indent=2) + "\n")
    return Path(out)


DEFAULT_N = 20000  # records a feature cache holds unless asked (a plan's head table: n)


def extract(backend: Callable[[], Backend], out: str | os.PathLike, data: str, n: int = DEFAULT_N,
            seed: int | None = None, regions: bool = True, progress: bool = True, overwrite: bool = False) -> Path:
    """`unbag features`: the cache of `data` (a world stream or pool, swaps[@WORLD], or caption data
    as the trainer reads it), its spec checked before `backend()` loads the model."""
    from ..training.data import parse_data
    from ..utils import at_least
    from ..world.stream import is_stream
    from ..world.styles import split_world
    at_least("n", n)
    head, _, rest = data.partition(":")
    swaps = split_world(data, (SWAPS,), "feature data")
    if (is_stream(data) or swaps) and rest.isdigit():
        raise UnbagError(f"feature data {data!r}: a seed is given apart: data={head!r}, seed={rest} "
                         f"(unbag features --data {head} --seed {rest}); after ':' a world names its distribution")
    if swaps:
        if swaps[2]:
            raise UnbagError(f"feature data {data!r}: swaps[@WORLD] takes nothing after ':'")
        kind = "swaps"
    else:
        try:
            kind = parse_data(data).kind
        except UnbagError as e:
            raise UnbagError(f"unknown feature data {data!r}; available: world[@WORLD][:DIST], "
                             f"pool:DIR, swaps[@WORLD], csv:PATH, jsonl:PATH, coco:ANNOTATIONS[:IMAGES], wds:URLS, "
                             f"degla:FILE[:IMAGE_DIR] ({e})") from None
    if kind not in ("world", "swaps"):
        return Path(extract_captions(backend(), out, data, n=n, seed=seed or 0, regions=regions,
                                     progress=progress, overwrite=overwrite))
    if not regions:
        raise UnbagError("regions=False is for caption data; world and swaps caches always hold regions")
    if kind == "swaps":
        return Path(extract_swaps(backend(), out, n=n, seed=1000 if seed is None else seed,
                                  style=swaps[1], progress=progress, overwrite=overwrite))
    return Path(extract_world(backend(), out, n=n, seed=1 if seed is None else seed, data=data, progress=progress,
                              overwrite=overwrite))


def is_caption_data(data: str) -> bool:
    """Whether feature data are photos with captions (csv:, jsonl:, coco:, wds:, degla:), not a
    world stream, pool or SWAP items."""
    from ..training.data import parse_data
    from ..world.styles import split_world
    if split_world(data, (SWAPS,), "feature data") is not None:
        return False
    return parse_data(data).kind != "world"
