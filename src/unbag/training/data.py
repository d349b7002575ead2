"""Training data: sources of (image, captions) records and the batches each method needs.

Data specs:
  world[:DIST]              a ctrl training stream; binding-swap twins are its hard negatives.
                            DIST: finetuning (the default: held-out combinations never shown),
                            pretraining (every combination; what the built-in model learns
                            from) or pretraining-web (every combination, web-like captions)
  csv:PATH or PATH.csv      CLIC's layout: image path, caption, further sentences in later columns
  jsonl:PATH or PATH.jsonl  {"image": PATH, "caption": TEXT} or {"image": PATH, "captions": [TEXT, ...]}
  wds:URLS                  webdataset shards (brace patterns allowed): {key}.jpg|png + {key}.txt|json
  triplets:FILE.jsonl       TripletCLIP's quadruples: {"image", "caption", "neg_image", "neg_caption"}
                            per line, image paths relative to the file (its released webdataset,
                            keys .image .caption .neg_image .neg_caption, reads as wds:URLS)
  degla:FILE[:IMAGE_DIR]    DeGLA's negatives layout [{image_id, original, enhanced: [...]}, ...];
                            images from an "image" field (what `unbag negatives` writes) or, for
                            the published file, IMAGE_DIR/COCO_train2014_<12-digit id>.jpg

Batch k of a run holds samples [k*B, (k+1)*B) of the source's order; rank r of W takes the
r-th slice of B/W, so a run's data does not depend on how many processes share it (webdataset
streams excepted: there shards are split by node and worker, as is usual).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader, IterableDataset

from ..benchmarks.base import load_image
from ..benchmarks.common import caption_rows, coco_rows, read_json
from ..errors import UnbagError
from ..models.base import resize_crop
from ..negatives.swap import concat, swap_across, swap_within
from ..negatives.typed import RuleGenerator, WorldGenerator
from ..sgi.regions import background_color, masked, row_fill
from ..utils import opened, parse_json
from ..world import captions as cap, stream
from ..world.styles import world


@dataclass
class Record:
    image: np.ndarray | Image.Image
    captions: list[str]  # the caption, then further sentences about the same image (CLIC)
    twin_image: np.ndarray | None = None  # a binding-swap hard negative pair, when the source has one
    twin_caption: str | None = None
    negatives: list[str] | None = None  # typed hard negatives (DeGLA)
    object_image: np.ndarray | None = None  # one object of the picture alone, as SGI's mask mode shows it
    object_caption: str | None = None  # that object's description ("a large gray rubber sphere")


def square_pixels(image: np.ndarray | Image.Image, px: int) -> np.ndarray:
    """Resize the shorter side to px and centre-crop (open_clip's eval preprocessing) -> uint8 [px, px, 3]."""
    if isinstance(image, np.ndarray):
        if image.shape[:2] == (px, px):
            return image
        image = Image.fromarray(image)
    return np.asarray(resize_crop(image, px))


def wider(image: np.ndarray | Image.Image) -> bool:
    h, w = (image.shape[:2] if isinstance(image, np.ndarray) else image.size[::-1])
    return w >= h


def concat_pair(a: np.ndarray | Image.Image, b: np.ndarray | Image.Image, px: int) -> np.ndarray:
    """CLIC's input: both squash-resized to half the side, stacked (wide images) or side by side (tall)."""
    def squash(x, size):
        x = Image.fromarray(x) if isinstance(x, np.ndarray) else x.convert("RGB")
        return np.asarray(x.resize(size, Image.BICUBIC))
    if wider(a):
        return np.concatenate([squash(a, (px, px // 2)), squash(b, (px, px - px // 2))], axis=0)
    return np.concatenate([squash(a, (px // 2, px)), squash(b, (px - px // 2, px))], axis=1)


JITTER = 1  # px an object's box edge may move by in object views: SGI's proposer's boxes are not exact


# -- sources -----------------------------------------------------------------------------------
class WorldSource:
    """A world stream (`world[@WORLD]:`, or a rendered 3D pool): sample k, its further descriptions
    (other caption forms) and its twin."""

    def __init__(self, seed: int, px: int, dist: str = stream.DEFAULT, style: str | None = None,
                 pool: str | None = None):
        self.seed, self.px, self.world = seed, px, world(style)
        if pool is not None:  # a rendered 3D pool (world/pool3d.py)
            from ..world.pool3d import WORLD, PoolStream
            self.streams, self.world, self.dist = PoolStream(pool, seed), WORLD, None
            if self.streams.meta["size"] != px:
                raise UnbagError(f"pool:{pool}: rendered at {self.streams.meta['size']} px, the model takes {px} px")
        else:
            self.streams = self.world.part("stream")
            self.dist = self.streams.distribution(dist)
        self.style = self.world.name

    def _describe(self, s, rng: np.random.Generator) -> str:
        return self.world.part("stream").describe(s.scene, rng)

    def sample(self, k: int):
        """Sample k of the stream (image, caption, its segments, scene)."""
        return self.streams.sample(self.seed, k, self.px, self.dist)

    def twin(self, k: int, s=None):
        """The binding-swap twin of sample k (`s`, when given), or None."""
        return self.streams.twin(self.seed, k, self.px, s, self.dist)

    def object_view(self, k: int, s) -> tuple[np.ndarray, str]:
        """One object of sample k (`s`), drawn from its seed and index: the picture masked to the
        object's box, each edge moved by up to JITTER px, the rest filled as SGI's mask mode fills
        it on the world's pictures (each row's median on the 3D world's floor, the median colour
        on the flat world's), and the object's description."""
        rng = np.random.default_rng([self.seed, 14, k])
        objs = list(s.scene.objects)
        px = s.image.shape[0]
        boxes = self.world.object_boxes(s.scene, px)
        # filled as SGI fills a region of this world's pictures
        fill = row_fill(s.image) if self.world.sgi.get("fill") == "rows" else background_color(s.image)
        seen = [i for i, b in enumerate(boxes) if b is not None]  # a 3D pool keeps every object visible
        i = seen[int(rng.integers(len(seen)))]
        x0, y0, x1, y1 = (int(v) for v in np.asarray(boxes[i]) + rng.integers(-JITTER, JITTER + 1, 4) * [-1, -1, 1, 1])
        x0, y0 = min(max(x0, 0), px - 1), min(max(y0, 0), px - 1)
        box = (x0, y0, min(max(x1, x0 + 1), px), min(max(y1, y0 + 1), px))
        return masked(s.image, [box], fill), cap.phrase(objs[i])

    def record(self, k: int, twins: bool = False, extra: int = 0, typed: int = 0, objects: bool = False,
               slots=None) -> Record:
        s = self.sample(k)
        caps = [s.caption]
        if extra:
            rng = np.random.default_rng([self.seed, 10, k])
            caps += [self._describe(s, rng) for _ in range(extra)]
        t = self.twin(k, s) if twins else None
        negs = None
        if typed:
            rng = np.random.default_rng([self.seed, 13, k])
            gen = WorldGenerator.for_world(self.world)
            negs = [n for _, n in gen.generate_for(list(s.scene.objects), s.form, typed, rng)]
        if slots is not None:  # a method's own typed slots, from the world's exact edits
            rng = np.random.default_rng([self.seed, 13, k])
            negs = slots(s.caption, WorldGenerator.for_world(self.world).candidates(list(s.scene.objects), s.form), rng)
        view, desc = self.object_view(k, s) if objects else (None, None)
        return Record(s.image, caps, t.image if t else None, t.caption if t else None, negs, view, desc)

    def partner(self, k: int, rng: np.random.Generator, extra: int) -> Record:
        # an independent scene from the same stream, far from the training indices
        return self.record(2**40 + int(rng.integers(2**40)), extra=extra)


class FileSource:
    """Image paths with captions from a CSV (CLIC layout) or JSONL file, shuffled per epoch."""

    negatives: list[list[str]] | None = None  # per row, when the file brings them

    def __init__(self, path: str, seed: int):
        self.path, self.seed = Path(path), seed
        if not self.path.is_file():
            raise UnbagError(f"{self.path}: training data file not found")
        self.rows = list(self._read())
        if not self.rows:
            raise UnbagError(f"{self.path}: no image/caption rows")
        self._perm: tuple[int, np.ndarray] | None = None

    def _read(self):
        return caption_rows(self.path)

    def _open(self, i: int) -> Image.Image:
        return load_image(str(self.rows[i][0]), f"{self.path}: row {i + 1}")

    def index(self, k: int) -> int:
        epoch, pos = divmod(k, len(self.rows))
        if self._perm is None or self._perm[0] != epoch:
            self._perm = (epoch, np.random.default_rng([self.seed, 11, epoch]).permutation(len(self.rows)))
        return int(self._perm[1][pos])

    def record(self, k: int, twins: bool = False, extra: int = 0, typed: int = 0, slots=None) -> Record:
        i = self.index(k)
        negs = self.negatives[i] if self.negatives is not None else None
        if slots is not None:  # a method's own typed slots, by its rules for free text
            negs = slots(self.rows[i][1][0], None, np.random.default_rng([self.seed, 13, k]))
        elif typed and negs is None:
            rng = np.random.default_rng([self.seed, 13, k])
            negs = [n for _, n in RuleGenerator().generate(self.rows[i][1][0], typed, rng)]
        return Record(self._open(i), self.rows[i][1], negatives=negs)

    def partner(self, k: int, rng: np.random.Generator, extra: int, like: Record) -> Record:
        want = wider(like.image)
        for _ in range(100):  # CLIC draws until the orientation matches
            i = int(rng.integers(len(self.rows)))
            im = self._open(i)
            if wider(im) == want:
                break
        return Record(im, self.rows[i][1])


class CocoSource(FileSource):
    """COCO's captions file (`coco:ANNOTATIONS[:IMAGES]`): each image with all of its captions."""

    def __init__(self, path: str, seed: int, image_dir: str | None = None):
        self.image_dir = image_dir
        super().__init__(path, seed)

    def _read(self):
        return coco_rows(self.path, self.image_dir)


class TripletSource(FileSource):
    """A JSONL file of quadruples (image, caption, negative caption, negative image), TripletCLIP's fields."""

    FIELDS = ("image", "caption", "neg_image", "neg_caption")

    def _read(self) -> Iterator[tuple[Path, list[str]]]:
        self.twins: list[tuple[Path, str]] = []
        with opened(self.path).open(encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                rec = parse_json(line, f"{self.path}: line {n}")
                missing = [k for k in self.FIELDS if not isinstance(rec.get(k) if isinstance(rec, dict) else None, str)
                           or not rec[k].strip()]
                if missing:
                    raise UnbagError(f"{self.path}: line {n}: field(s) {', '.join(missing)} missing or empty "
                                     f"(each line needs {', '.join(self.FIELDS)})")
                self.twins.append((self.path.parent / rec["neg_image"], rec["neg_caption"]))
                yield self.path.parent / rec["image"], [rec["caption"]]

    def record(self, k: int, twins: bool = False, extra: int = 0, typed: int = 0, slots=None) -> Record:
        rec = super().record(k, twins, extra, typed, slots)
        i = self.index(k)
        path, caption = self.twins[i]
        rec.twin_image = load_image(str(path), f"{self.path}: row {i + 1} neg_image")
        rec.twin_caption = caption
        return rec


class DeGLASource(FileSource):
    """DeGLA's negatives file: each entry's caption, its enhanced negatives and its image."""

    def __init__(self, path: str, seed: int, image_dir: str | None = None):
        self.image_dir = Path(image_dir) if image_dir else None
        super().__init__(path, seed)

    def _read(self) -> Iterator[tuple[Path, list[str]]]:
        entries = read_json(self.path)
        if not isinstance(entries, list):
            raise UnbagError(f"{self.path}: expected a JSON list of {{image_id, original, enhanced}}")
        self.negatives = []
        for n, e in enumerate(entries):
            for f in ("original", "enhanced"):
                if f not in e:
                    raise UnbagError(f"{self.path}: entry {n}: missing field '{f}'")
            if "image" in e:
                image = self.path.parent / e["image"]
            elif "image_id" in e and self.image_dir is not None:
                image = self.image_dir / f"COCO_train2014_{int(e['image_id']):012d}.jpg"
            else:
                raise UnbagError(f"{self.path}: entry {n}: no 'image' field; give the COCO image "
                                 "folder as degla:FILE:IMAGE_DIR")
            if not str(e["original"]).strip():
                raise UnbagError(f"{self.path}: entry {n}: field 'original' is an empty caption")
            self.negatives.append([str(x) for x in e["enhanced"]])
            yield image, [str(e["original"])]


def wds_records(urls: str, skip: int) -> Iterator[Record]:
    """Records of webdataset shards, split by node and worker; the first `skip` are not decoded."""
    import webdataset as wds

    ds = wds.WebDataset(urls, nodesplitter=wds.split_by_node, workersplitter=wds.split_by_worker,
                        shardshuffle=False, empty_check=False)
    for n, s in enumerate(ds):
        if n < skip:
            continue
        key = s.get("__key__")
        img = next((s[e] for e in ("jpg", "png", "jpeg", "webp", "image") if e in s), None)
        if img is None:
            raise UnbagError(f"{s.get('__url__')}: sample {key}: no .jpg/.png image")
        twin = None
        if "neg_image" in s and "neg_caption" in s:  # TripletCLIP's release: a negative image and its caption
            twin = (load_image(s["neg_image"], f"{s.get('__url__')}: sample {key}.neg_image"),
                    s["neg_caption"].decode("utf-8").strip())
        if "caption" in s:
            caps = [s["caption"].decode("utf-8").strip()]
        elif "json" in s:
            obj = parse_json(s["json"].decode("utf-8", "replace"), f"{s.get('__url__')}: sample {key}.json")
            caps = obj.get("captions") or [obj.get("caption")]
        elif "txt" in s:
            caps = [s["txt"].decode().strip()]
        else:
            raise UnbagError(f"{s.get('__url__')}: sample {key}: no .txt or .json caption")
        if not caps or not all(isinstance(c, str) and c for c in caps):
            raise UnbagError(f"{s.get('__url__')}: sample {key}: empty caption")
        yield Record(load_image(img, f"{s.get('__url__')}: sample {key}"), caps,
                     twin_image=twin[0] if twin else None, twin_caption=twin[1] if twin else None)


# -- batches ------------------------------------------------------------------------------------
def _extra_sentences(rec: Record, rng: np.random.Generator, n: int) -> list[str]:
    """n further sentences of a record: sampled without replacement when it has enough, else with
    (CLIC); a record with no further sentence repeats its caption."""
    more = rec.captions[1:] or rec.captions[:1]
    idx = rng.choice(len(more), size=n, replace=len(more) < n)
    return [more[int(i)] for i in idx]


def clic_texts(rec: Record, other: Record, rng: np.random.Generator) -> tuple[list[str], str]:
    """CLIC's four positives and its cross-image negative for an image pair (rec on one side)."""
    c1, c2 = rec.captions[0], other.captions[0]
    e1, e2 = _extra_sentences(rec, rng, 2), _extra_sentences(other, rng, 2)
    pos = [concat([c1, c2]), concat([c2, c1])]
    for a, b in zip(e1, e2):
        pos.append(concat([a, b] if rng.random() < 0.5 else [b, a]))
    # two captions with no two different words (e.g. both "dog."): a swap inside their concatenation
    # or, with nothing to swap at all, an empty caption (an easy negative, never a positive)
    return pos, swap_across(c1, c2, rng) or swap_within(concat([c1, c2]), rng) or ""


class TrainBatches(IterableDataset):
    """Per-step batches of one rank: 'pairs' (with twins/negatives as asked) or CLIC's alternation."""

    def __init__(self, data: str, seed: int, batch_size: int, px: int, start_step: int, steps: int,
                 mode: str = "pairs", twins: bool = False, negatives: bool = False, rank: int = 0,
                 world_size: int = 1, typed: int = 0, objects: bool = False, slots=None,
                 negative_images: bool = False):
        if batch_size % world_size:
            raise UnbagError(f"batch size {batch_size} is not divisible by {world_size} processes")
        self.data, self.seed, self.batch_size, self.px = data, seed, batch_size, px
        self.start_step, self.steps, self.mode = start_step, steps, mode
        self.twins, self.negatives, self.rank, self.world_size = twins, negatives, rank, world_size
        self.typed, self.objects, self.spec, self.slots = typed, objects, parse_data(data), slots
        if objects and self.spec.kind != "world":
            raise UnbagError(f"{data}: this method trains on single objects cut out of the pictures, which "
                             f"needs the scenes behind them: use a world stream (world:, world3d:) or a pool:")
        if negative_images and self.spec.kind not in ("world", "triplets", "webdataset"):
            raise UnbagError(f"{data}: this method needs a negative image and caption for every sample, and this "
                             "data brings none (unbag generates no negative image): use the world (world[@WORLD][:DIST]"
                             ", pool:DIR), triplets:FILE.jsonl or TripletCLIP's webdataset (wds:URLS)")
        if self.spec.kind in ("file", "negatives", "coco", "triplets"):
            rows = len(self._source().rows)  # fail early, in the main process
            if batch_size > rows:
                raise UnbagError(f"batch size {batch_size} is larger than the {rows} rows of {data}: each image "
                                 f"would sit in a batch about {batch_size / rows:.0f} times and be its own "
                                 f"negative; use --batch-size {rows} or fewer, or more data")

    def _source(self):
        return source(self.spec, self.seed, self.px)

    def __iter__(self) -> Iterator[dict]:
        try:
            yield from self._batches()
        except UnbagError as e:  # handed back as its message: a worker's raise reaches the user as a traceback
            yield {ERROR: str(e)}

    def _batches(self) -> Iterator[dict]:
        info = torch.utils.data.get_worker_info()
        wid, nw = (info.id, info.num_workers) if info else (0, 1)
        b = self.batch_size // self.world_size
        if self.spec.kind == "webdataset":
            yield from self._iter_wds(wid, nw, b)
            return
        src = self._source()
        for step in range(self.start_step + wid, self.steps, nw):  # workers interleave steps
            first = step * self.batch_size + self.rank * b
            yield self.collate(src, step, list(range(first, first + b)))

    def _iter_wds(self, wid: int, nw: int, b: int) -> Iterator[dict]:
        # each worker streams its own shards; it makes every nw-th step of the run
        mine = range(self.start_step + wid, self.steps, nw)
        recs = wds_records(self.spec.path, skip=len(range(wid, self.start_step, nw)) * b)
        for step in mine:
            chunk = [r for _, r in zip(range(b), recs)]
            if len(chunk) < b:
                raise UnbagError(f"{self.data}: shards ran out at step {step}; "
                                 "add shards or lower --steps")
            first = step * self.batch_size + self.rank * b
            yield self.collate(chunk, step, list(range(first, first + b)))

    def collate(self, src, step: int, ks: list[int]) -> dict:
        recs = src if isinstance(src, list) else None
        concat_step = self.mode == "concat" and step % 2 == 0  # alternates: concatenated pairs, plain CLIP
        # object views come from world sources only (checked in __init__)
        views = {"objects": True} if self.objects and not concat_step else {}
        get = (lambda i, k: recs[i]) if recs else (lambda i, k: src.record(
            k, twins=self.twins or self.negatives, extra=2 if concat_step else 0, typed=self.typed, **views,
            slots=self.slots))
        rs = [get(i, k) for i, k in enumerate(ks)]
        # the epoch a batch belongs to (a file's rows, read over and over); a stream has one
        rows = len(src.rows) if isinstance(src, FileSource) else 0
        out = {"step": step, "mode": "concat" if concat_step else "pairs",
               "epoch": step * self.batch_size // rows if rows else 0}
        if concat_step:
            images, texts = [], [[] for _ in range(5)]
            for i, (r, k) in enumerate(zip(rs, ks)):
                rng = np.random.default_rng([self.seed, 9, k])
                if recs:  # a stream: a random other record of the batch with the same orientation
                    same = [j for j, o in enumerate(recs) if j != i and wider(o.image) == wider(r.image)]
                    other = recs[same[int(rng.integers(len(same)))] if same else (i + 1) % len(recs)]
                elif isinstance(src, WorldSource):
                    other = src.partner(k, rng, 2)
                else:
                    other = src.partner(k, rng, 2, r)
                pair = (r.image, other.image) if rng.random() < 0.5 else (other.image, r.image)
                images.append(concat_pair(*pair, self.px))
                pos, neg = clic_texts(r, other, rng)
                for t, s in zip(texts, pos + [neg]):
                    t.append(s)
            out["images"] = torch.from_numpy(np.stack(images))
            out["texts"] = [s for block in texts for s in block]  # [p1; p2; p3; p4; n], blocks of b
            return out
        out["images"] = torch.from_numpy(np.stack([square_pixels(r.image, self.px) for r in rs]))
        out["captions"] = [r.captions[0] for r in rs]
        if self.twins:
            tw = [(i, r) for i, r in enumerate(rs) if r.twin_image is not None]
            out["twin_of"] = torch.tensor([i for i, _ in tw], dtype=torch.long)
            out["twin_images"] = torch.from_numpy(  # a file's negative images are squared as its images
                np.stack([square_pixels(r.twin_image, self.px) for _, r in tw]) if tw
                else np.zeros((0, self.px, self.px, 3), np.uint8))
            out["twin_captions"] = [r.twin_caption for _, r in tw]
        if self.negatives:  # caption-only negatives: the twin's caption, else a POS word swap
            negs = []
            for i, (r, k) in enumerate(zip(rs, ks)):
                n = r.twin_caption or swap_within(r.captions[0], np.random.default_rng([self.seed, 12, k]))
                if n is not None:
                    negs.append((i, n))
            out["neg_of"] = torch.tensor([i for i, _ in negs], dtype=torch.long)
            out["neg_captions"] = [n for _, n in negs]
        if self.slots:  # a method's typed slots, sample-major; an empty slot holds "###" (CE-CLIP's filler)
            # a record source made them (record(slots=)); a webdataset stream's records are made here
            negs = [self.slots(r.captions[0], None, np.random.default_rng([self.seed, 13, k])) if recs
                    else r.negatives for r, k in zip(rs, ks)]
            out["typed_captions"] = [n if n is not None else "###" for ns in negs for n in ns]
            out["typed_valid"] = torch.tensor([[n is not None for n in ns] for ns in negs], dtype=torch.bool)
        elif self.typed:  # K typed negatives per sample, sample-major; repeats fill short lists
            texts, valid = [], []
            for i, (r, k) in enumerate(zip(rs, ks)):
                negs = list(r.negatives or [])
                if r.negatives is None and recs:  # a stream without negatives: make them
                    rng = np.random.default_rng([self.seed, 13, k])
                    negs = [n for _, n in RuleGenerator().generate(r.captions[0], self.typed, rng)]
                got = negs[:self.typed]
                valid.append([j < len(got) for j in range(self.typed)])
                texts += [got[j % len(got)] if got else r.captions[0] for j in range(self.typed)]
            out["typed_captions"] = texts
            out["typed_valid"] = torch.tensor(valid, dtype=torch.bool)
        if self.objects:  # one object of each picture (WorldSource.object_view)
            out["object_images"] = torch.from_numpy(np.stack([r.object_image for r in rs]))
            out["object_captions"] = [r.object_caption for r in rs]
        return out


@dataclass(frozen=True)
class DataSpec:
    """A training data spec, parsed once: what kind of source it names and its parts."""
    text: str
    kind: str  # world (a stream or a pool) | file | coco (COCO's captions file) | webdataset | negatives (DeGLA's
    # layout) | triplets (TripletCLIP's quadruples)
    style: str = ""  # world: its name (world/worlds/)
    dist: str | None = None  # world: the stream's distribution (None: a pool's own)
    path: str = ""  # the pool folder, caption file, shard URLs or negatives file
    image_dir: str | None = None  # negatives, coco: the COCO image folder


def _pool(data: str, path: str) -> DataSpec:
    from ..world.pool3d import WORLD, read_meta
    read_meta(path)
    return DataSpec(data, "world", WORLD.name, path=path)


def _coco(data: str, rest: str) -> DataSpec:
    path, _, images = rest.partition(":")
    if not path:
        raise UnbagError(f"{data!r}: name COCO's captions file, coco:ANNOTATIONS[:IMAGES]")
    return DataSpec(data, "coco", path=path, image_dir=images or None)


def _negatives(data: str, rest: str) -> DataSpec:
    path, _, image_dir = rest.partition(":")
    return DataSpec(data, "negatives", path=path, image_dir=image_dir or None)


# PREFIX:REST forms of the training data specs (world streams, world[@WORLD][:DIST]: world/stream.py)
DATA_FORMS = {
    "pool": _pool,  # a rendered 3D pool (world/pool3d.py)
    "wds": lambda data, rest: DataSpec(data, "webdataset", path=rest),
    "degla": _negatives,  # DeGLA's released negatives layout
    "triplets": lambda data, rest: DataSpec(data, "triplets", path=rest),  # TripletCLIP's quadruples
    "coco": _coco,
    "csv": lambda data, rest: DataSpec(data, "file", path=rest),
    "jsonl": lambda data, rest: DataSpec(data, "file", path=rest),
}


def parse_data(data: str) -> DataSpec:
    """The training data a spec names; an unknown spec is refused, naming the forms."""
    head, _, rest = data.partition(":")
    if stream.is_stream(data):
        return DataSpec(data, "world", *stream.parse_stream(data))
    if head in DATA_FORMS:
        return DATA_FORMS[head](data, rest)
    if data.endswith((".csv", ".jsonl")):
        return DataSpec(data, "file", path=data)
    raise UnbagError(f"unknown training data {data!r}; use world[@WORLD][:DIST], pool:DIR, csv:PATH, "
                     "jsonl:PATH, coco:ANNOTATIONS[:IMAGES], wds:URLS, triplets:FILE.jsonl or degla:FILE[:IMAGE_DIR]")


def check_data(data: str) -> None:
    """Refuse, before any work, a training data spec whose files are not there (a caption,
    annotation or negatives file that is missing or not a file, an image folder that is not one)."""
    spec = parse_data(data)
    if spec.kind in ("file", "coco", "negatives", "triplets"):
        if not Path(spec.path).is_file():
            raise UnbagError(f"{spec.path}: training data file not found")
        opened(spec.path)
        if spec.image_dir and not Path(spec.image_dir).is_dir():
            raise UnbagError(f"{spec.image_dir}: image folder of {data!r} not found")


def data_fingerprint(data: str) -> str | None:
    """A hash of what training data on disk holds, as a benchmark's files are hashed
    (`benchmarks.fingerprint`): its caption or annotation file by content and each image it names
    by its target's size and modification time (a rewritten caption or a replaced picture changes
    it); a pool by its meta file; None for data unbag generates or streams (world, webdataset)."""
    from ..benchmarks import fingerprint

    spec = parse_data(data)
    if spec.kind == "world":
        meta = Path(spec.path, "meta.json")
        return fingerprint([meta] if meta.is_file() else [], []) if spec.path else None
    if spec.kind not in ("file", "coco", "negatives", "triplets"):
        return None
    src = source(spec, 0, 0)  # a missing or malformed file is refused here, located
    negative_images = [str(p) for p, _ in getattr(src, "twins", [])]  # triplets: its negative images too
    return fingerprint([opened(spec.path)], [str(p) for p, *_ in src.rows] + negative_images)


def source(spec: DataSpec, seed: int, px: int) -> "WorldSource | FileSource":
    """The record source of a parsed spec (not for webdataset streams, read by `wds_records`)."""
    if spec.kind == "world":
        return WorldSource(seed, px, spec.dist or stream.DEFAULT, spec.style, pool=spec.path or None)
    if spec.kind == "negatives":
        return DeGLASource(spec.path, seed, spec.image_dir)
    if spec.kind == "file":
        return FileSource(spec.path, seed)
    if spec.kind == "triplets":
        return TripletSource(spec.path, seed)
    if spec.kind == "coco":
        return CocoSource(spec.path, seed, spec.image_dir)
    raise UnbagError(f"{spec.text}: a webdataset stream has no record source; read it with wds_records")


def batches(data: str, seed: int, batch_size: int, px: int, start_step: int, steps: int,
            workers: int = 1, twins: bool = False, negatives: bool = False, mode: str = "pairs",
            rank: int = 0, world_size: int = 1, typed: int = 0, objects: bool = False,
            slots=None, negative_images: bool = False) -> Iterator[dict]:
    """Iterate this rank's training batches from `start_step` to `steps`, in step order."""
    ds = TrainBatches(data, seed, batch_size, px, start_step, steps, mode, twins, negatives, rank, world_size,
                      typed, objects, slots, negative_images)
    # in step order across workers (DataLoader round-robins IterableDataset workers): deterministic
    loader = DataLoader(ds, batch_size=None, num_workers=workers, persistent_workers=False,
                        prefetch_factor=4 if workers else None)
    return _checked(loader)  # the data is checked above, now; the batches come as they are asked for


def _checked(loader: DataLoader) -> Iterator[dict]:
    for batch in loader:
        if ERROR in batch:
            raise UnbagError(batch[ERROR])
        yield batch


ERROR = "unbag_error"  # the key of a batch that carries a worker's error message instead of data
