"""Feature cache for the alignment heads: frozen features extracted once, read many times.

Layout of DIR:
  index.json            backbone spec and weights hash, fields (dtype, row shape), rows, shards
  {field}-{k:05d}.npy   rows [k*SHARD, (k+1)*SHARD) of a field (fp16 features, bool masks, int64)
Fields: img_global [D], img_patches [P, D], img_patches_early [P, D] (after the first block, where
the backend offers it), txt_global [D], txt_tokens [L, D], txt_mask [L],
phr_global [K, D] (each caption phrase encoded on its own), phr_mask [K], phr_want [K] (how many
boxes a region must join to match the phrase: 1 for an object, n for "n ..." groups, 0 any),
img_regions [R, D] (SGI's region embeddings: blobs and their unions, masked in place, 2 phase
views; zero rows pad), reg_size [R] (boxes per region, 0 for padding), twin [] (row of this row's
binding-swap twin, -1 if none). Rows 0..N-1 are stream samples, the rest their twins.
Caches of caption data (csv/jsonl/wds/degla, e.g. COCO) have no twins; each row brings a hard
negative caption instead, as neg_txt_global, neg_txt_tokens, neg_txt_mask, neg_phr_global,
neg_phr_mask, neg_phr_want and has_neg [] (False where no negative could be made).
Scoring with a calibrated TFLocal-LI also computes phr_alt [K, A, D] and phr_alt_mask [K, A] (each
phrase's one-word changes encoded on their own, the first MAX_ALTS); caches never hold them.
"""
from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import Iterator

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from rich.progress import Progress, track

from ..errors import UnbagError
from ..models.base import Backend, weights_id
from ..sgi.segments import from_grammar
from ..utils import atomic_dir

SHARD = 8192
MAX_PHRASES = 5
MAX_REGIONS = 16  # single regions come first, so a crowded image loses unions, not objects
MAX_ALTS = 12  # changes of a counted world phrase that names a size, a color and a material: 1 + 7 + 1 + 3 numbers
FORMAT = "unbag-features"


def _l2(t: torch.Tensor) -> torch.Tensor:
    return F.normalize(t.float(), dim=-1).cpu()


@torch.inference_mode()
def image_features(backend: Backend, pixels: torch.Tensor, early: bool = True) -> dict:
    """Frozen global and patch features of preprocessed images [N, 3, H, W] (`early`: also the
    first-block patches, where the backend offers them; a second encoder pass)."""
    im = backend.encode_images(pixels.to(backend.device), tokens=True)
    out = {"img_global": _l2(im.embeds), "img_patches": _l2(im.patches)}
    if early and hasattr(backend, "early_patches"):  # for heads with early=True
        out["img_patches_early"] = _l2(backend.early_patches(pixels.to(backend.device)))
    return out


@torch.inference_mode()
def region_features(backend: Backend, images: list, sgi: dict | None = None) -> dict:
    """SGI's region embeddings of images (arrays or refs), padded to MAX_REGIONS, and region sizes
    (`sgi`: SGI options, e.g. the photo benchmarks' region source; default unbag's SGI)."""
    from ..benchmarks.base import Benchmark, Item
    from ..sgi.config import SGIConfig
    from ..sgi.encode import encode_regions

    bench = Benchmark("regions", "regions", [Item(str(k), [im], [], {}) for k, im in enumerate(images)])
    return pack_regions(encode_regions(backend, bench, SGIConfig.from_options(sgi or {})))


def pack_regions(regions: list) -> dict:
    """Cache fields img_regions [N, MAX_REGIONS, D] and reg_size [N, MAX_REGIONS] of sgi ImageRegions."""
    emb = torch.zeros(len(regions), MAX_REGIONS, regions[0].emb.shape[1] if regions else 1)
    size = torch.zeros(len(regions), MAX_REGIONS, dtype=torch.long)
    for k, r in enumerate(regions):
        n = min(len(r.regions), MAX_REGIONS)
        emb[k, :n] = r.emb[:n]
        size[k, :n] = torch.tensor([len(reg) for reg in r.regions[:n]])
    return {"img_regions": emb, "reg_size": size}


@torch.inference_mode()
def alternative_features(backend: Backend, phrases: list[list], dim: int) -> dict:
    """phr_alt [N, MAX_PHRASES, MAX_ALTS, dim] and phr_alt_mask: each phrase's one-word changes
    (training/objectives/dense.py `alternatives`), each distinct text encoded once."""
    from ..training.objectives.dense import alternatives

    alts = [[alternatives(p.text)[:MAX_ALTS] for p in ps[:MAX_PHRASES]] for ps in phrases]
    texts = sorted({a for per in alts for al in per for a in al})
    row = {t: i for i, t in enumerate(texts)}
    emb = torch.cat([_l2(backend.encode_texts(backend.tokenize(texts[s:s + 1024]).to(backend.device)).embeds)
                     for s in range(0, len(texts), 1024)]) if texts else torch.zeros(0, dim)
    out = torch.zeros(len(phrases), MAX_PHRASES, MAX_ALTS, dim)
    mask = torch.zeros(len(phrases), MAX_PHRASES, MAX_ALTS, dtype=torch.bool)
    for i, per in enumerate(alts):
        for k, al in enumerate(per):
            if al:
                out[i, k, :len(al)], mask[i, k, :len(al)] = emb[[row[a] for a in al]], True
    return {"phr_alt": out, "phr_alt_mask": mask}


@torch.inference_mode()
def text_features(backend: Backend, captions: list[str], phrases: list[list]) -> dict:
    """Frozen global and token features of captions, and each phrase (an sgi Segment) encoded on its own."""
    from ..sgi.match import region_count

    dev = backend.device
    tx = backend.encode_texts(backend.tokenize(captions).to(dev), tokens=True)
    flat = [p.text for ps in phrases for p in ps[:MAX_PHRASES]]
    pe = _l2(backend.encode_texts(backend.tokenize(flat).to(dev)).embeds)
    phr = torch.zeros(len(captions), MAX_PHRASES, pe.shape[1])
    pmask = torch.zeros(len(captions), MAX_PHRASES, dtype=torch.bool)
    want = torch.zeros(len(captions), MAX_PHRASES, dtype=torch.long)
    k = 0
    for i, ps in enumerate(phrases):
        n = min(len(ps), MAX_PHRASES)
        phr[i, :n], pmask[i, :n] = pe[k:k + n], True
        want[i, :n] = torch.tensor([region_count(p) for p in ps[:n]])
        k += n
    return {"txt_global": _l2(tx.embeds), "txt_tokens": _l2(tx.tokens), "txt_mask": tx.mask.cpu(),
            "phr_global": phr, "phr_mask": pmask, "phr_want": want}


def extract_world(backend: Backend, out: str | os.PathLike, n: int, seed: int = 1,
                  chunk: int = 256, progress: bool = True, overwrite: bool = False) -> Path:
    """Cache features of world stream samples 0..n-1 (seed) and of their twins."""
    from ..world import stream

    px = backend.image_size[0]
    rows: dict[str, list[np.ndarray]] = {}
    twin_rows: dict[str, list[np.ndarray]] = {}
    twin_of: list[int] = []
    for start in track(range(0, n, chunk), description="features", disable=not progress):
        samples = [stream.sample(seed, k, px) for k in range(start, min(n, start + chunk))]
        twins = [(start + j, stream.twin(seed, start + j, px, s)) for j, s in enumerate(samples)]
        twins = [(k, t) for k, t in twins if t is not None]
        for store, items in ((rows, samples), (twin_rows, [t for _, t in twins])):
            if not items:
                continue
            pixels = backend.normalize_pixels(torch.from_numpy(np.stack([x.image for x in items])))
            f = image_features(backend, pixels) | region_features(backend, [x.image for x in items]) | text_features(
                backend, [x.caption for x in items], [from_grammar(x.segments) for x in items])
            for k, v in f.items():
                store.setdefault(k, []).append(v.numpy())
        twin_of += [k for k, _ in twins]
    fields = {k: np.concatenate(rows[k] + twin_rows.get(k, [])) for k in rows}
    twin = np.full(len(fields["img_global"]), -1, dtype=np.int64)
    for j, k in enumerate(twin_of):  # pair sample k with its twin row n + j, both ways
        twin[k], twin[n + j] = n + j, k
    fields["twin"] = twin
    meta = {"data": f"world:{seed}", "samples": n, "twins": len(twin_of)}
    return write(out, backend, fields, meta, overwrite)


def extract_swaps(backend: Backend, out: str | os.PathLike, n: int, seed: int = 1000,
                  chunk: int = 256, progress: bool = True, overwrite: bool = False) -> Path:
    """Cache features of n in-distribution SWAP items (both images and captions; each row's twin is
    the other half of its item). Held-out combinations never occur: items are built for split "id",
    from a seed other than the test benchmark's."""
    from ..world.render import render
    from ..world.swap import CATEGORIES, build_item

    px = backend.image_size[0]
    parts: dict[str, list[np.ndarray]] = {}
    for start in track(range(0, n, chunk), description="features", disable=not progress):
        items = [build_item(seed, "id", CATEGORIES[k % len(CATEGORIES)], k // len(CATEGORIES))
                 for k in range(start, min(n, start + chunk))]
        images = np.stack([render(sc, px) for it in items for sc in it.scenes])
        f = (image_features(backend, backend.normalize_pixels(torch.from_numpy(images)))
             | region_features(backend, list(images))
             | text_features(backend, [c for it in items for c in it.captions],
                             [from_grammar(segs) for it in items for segs in it.segments]))
        for k, v in f.items():
            parts.setdefault(k, []).append(v.numpy())
    fields = {k: np.concatenate(v) for k, v in parts.items()}
    rows = len(fields["img_global"])
    fields["twin"] = np.arange(rows, dtype=np.int64) ^ 1  # rows 2i and 2i+1 are one item's halves
    return write(out, backend, fields, {"data": f"swaps:{seed}", "samples": rows, "twins": rows},
                 overwrite)


def caption_records(data: str, n: int, seed: int = 0) -> Iterator[tuple[Image.Image, str, list[str]]]:
    """(image, caption, the data's own hard negatives) of the first n records of caption data
    (csv:, jsonl:, wds:, degla:, as the trainer reads it; each record once, in the trainer's order)."""
    from ..training.data import DeGLASource, FileSource, source_kind, wds_records

    kind = source_kind(data)
    if kind == "world":
        raise UnbagError("world data has its own feature extractor: use world[:SEED] or swaps[:SEED]")
    if kind == "webdataset":
        for k, rec in enumerate(wds_records(data[len("wds:"):], skip=0)):
            if k == n:
                return
            yield rec.image, rec.captions[0], []
        return
    src = DeGLASource(data[len("degla:"):], seed) if kind == "negatives" else FileSource.from_spec(data, seed)
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
    from ..benchmarks import PHOTO_SGI
    from ..negatives.typed import RuleGenerator
    from ..sgi import segments as seg

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
                f |= region_features(backend, [np.asarray(im) for im in images], PHOTO_SGI)
            f |= {f"neg_{k}": v for k, v in text_features(backend, negs, [seg.parse(c) for c in negs]).items()}
            shards.add({k: v.numpy() for k, v in f.items()} | {"has_neg": has_neg,
                                                               "twin": np.full(len(batch), -1, dtype=np.int64)})
            total, negatives = total + len(batch), negatives + int(has_neg.sum())
            bar.update(task, advance=len(batch))
        if not total:
            raise UnbagError(f"{data}: no records to extract features from")
        bar.update(task, total=total)  # the data may hold fewer than n records
        index = _index(backend, total, shards.finish(), {"data": data, "samples": total, "twins": 0,
                                                         "negatives": negatives})
        (tmp / "index.json").write_text(json.dumps(index, indent=2) + "\n")
    return Path(out)


class ShardWriter:
    """Appends rows of fields and writes each full SHARD of rows to `{field}-{k:05d}.npy` (features as fp16)."""

    def __init__(self, folder: Path):
        self.folder, self.buf, self.fields, self.rows, self.shards = Path(folder), {}, {}, 0, 0

    def add(self, fields: dict[str, np.ndarray]) -> None:
        for name, arr in fields.items():
            if arr.dtype in (np.float32, np.float64):
                arr = arr.astype(np.float16)
            self.buf.setdefault(name, []).append(arr)
            self.fields[name] = {"dtype": str(arr.dtype), "shape": list(arr.shape[1:])}
        self.rows += len(next(iter(fields.values())))
        while self.rows - self.shards * SHARD >= SHARD:
            self._flush(SHARD)

    def _flush(self, n: int) -> None:
        for name, parts in self.buf.items():
            arr = np.concatenate(parts)
            np.save(self.folder / f"{name}-{self.shards:05d}.npy", np.ascontiguousarray(arr[:n]))
            self.buf[name] = [arr[n:]]
        self.shards += 1

    def finish(self) -> dict:
        """Write the rows left; the index's `fields` entry (dtype and row shape per field)."""
        if self.rows > self.shards * SHARD:
            self._flush(self.rows - self.shards * SHARD)
        return self.fields


def _index(backend: Backend, rows: int, fields: dict, meta: dict) -> dict:
    return {"format": FORMAT, "version": 1, "backbone": backend.spec, "backbone_id": weights_id(backend),
            "rows": rows, "shard_rows": SHARD, "fields": fields, **meta}


def write(out: str | os.PathLike, backend: Backend, fields: dict[str, np.ndarray], meta: dict,
          overwrite: bool = False) -> Path:
    """Write fields as shards (features as fp16) with an index, atomically."""
    with atomic_dir(out, "features", overwrite) as tmp:
        shards = ShardWriter(tmp)
        shards.add(fields)
        index = _index(backend, shards.rows, shards.finish(), meta)
        (tmp / "index.json").write_text(json.dumps(index, indent=2) + "\n")
    return Path(out)


class FeatureCache:
    """Read access to a cache: memory-mapped shards, rows fetched by index."""

    def __init__(self, root: str | os.PathLike, backend: Backend | None = None):
        self.root = Path(root)
        try:
            self.index = json.loads((self.root / "index.json").read_text())
        except FileNotFoundError:
            raise UnbagError(f"{self.root}: not a feature cache (no index.json); build one with "
                             "`unbag features`") from None
        if self.index.get("format") != FORMAT:
            raise UnbagError(f"{self.root}/index.json: field 'format' is not {FORMAT!r}")
        if backend is not None:
            self.check(backend.spec, weights_id(backend))
        self.rows = self.index["rows"]
        self._shards = {name: [np.load(p, mmap_mode="r") for p in sorted(self.root.glob(f"{name}-*.npy"))]
                        for name in self.index["fields"]}

    def check(self, spec: str, ident: str) -> None:
        """Refuse a cache built from another backbone."""
        if self.index["backbone_id"] != ident:
            raise UnbagError(f"{self.root}: cache built for backbone {self.index['backbone']!r} "
                             f"(weights {self.index['backbone_id'][:12]}), not for {spec!r} "
                             f"(weights {ident[:12]}); rebuild it with `unbag features --model {spec}`")

    def get(self, name: str, idx: np.ndarray) -> torch.Tensor:
        """Rows `idx` of a field as a tensor (float32 for features)."""
        shards, per = self._shards[name], self.index["shard_rows"]
        idx = np.asarray(idx)
        parts = [shards[i // per][i % per] for i in idx.tolist()]
        arr = np.stack(parts) if parts else np.zeros((0,) + tuple(self.index["fields"][name]["shape"]))
        t = torch.from_numpy(np.ascontiguousarray(arr))
        return t.float() if t.dtype == torch.float16 else t
