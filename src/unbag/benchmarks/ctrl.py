"""The built-in `ctrl` benchmark: generated in memory (`ctrl`) or read from disk (`ctrl:DIR`)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import UnbagError, where
from ..utils import parse_json, read_json, read_text
from ..world import cache
from ..world.io import FORMAT, VERSION
from ..world.styles import WORLDS, render_procs, size, world
from .base import Benchmark, Item

DEFAULT_PER_CATEGORY = 400


def _item(sw, images: list[np.ndarray], fields: dict) -> Item:
    """The benchmark item of a SWAP item (or what world/cache.py keeps of one: its id, split,
    category and captions), its two pictures and its record fields (held decoded: every protocol
    reads arrays at the model's size directly)."""
    return Item(id=sw.id, images=images, captions=sw.captions, group={"split": sw.split, "category": sw.category},
                meta=fields)


def _benchmark(items: list[Item], px: int, style: str, info: dict) -> Benchmark:
    w = world(style)
    return Benchmark("ctrl", "ctrl", items, image_size=px, grouping="split/category",
                     info=info | {"size": px, "render": w.render_version(px), "style": w.name, "source": "generated"},
                     sgi=dict(w.sgi))


def generated(seed: int = 0, per_category: int = DEFAULT_PER_CATEGORY, px: int | None = None, style: str | None = None,
              procs: int | None = None, categories: list[str] | None = None, device: str | None = None,
              progress: bool = False, split: str | None = None) -> Benchmark:
    """The ctrl benchmark of a world (None: the default one) rendered in memory at px (None: the
    world's size): the pixels of `unbag world build` (of some `categories` and one `split` only, when given), over
    `procs` processes (None: the machine's cores where the world pays for them and there are 20
    items a category or more; the same bytes for any number), or on a GPU `device` (the same
    pictures up to float rounding); items drawn before with the same recipe are read from the
    cache (world/cache.py)."""
    w = world(style)
    px = w.px if px is None else px
    if procs is None:
        procs = render_procs() if w.parallel and per_category >= 20 else 1
    items = [_item(*got) for got in cache.swap_items(w, seed, per_category, px, categories, procs, split=split,
                                                             device=device, progress=progress)]
    return _benchmark(items, px, w.name, {"seed": seed, "per_category": per_category})


def validation(seed: int, per_category: int, px: int, style: str | None = None) -> Benchmark:
    """In-distribution SWAP items of every category of a world (`seed`: one the test and the
    feature caches do not use), rendered at px (or read from the cache): the split a trainer
    selects checkpoints on."""
    w = world(style)
    items = [_item(*got) for got in cache.swap_items(w, seed, per_category, px, split="id")]
    return _benchmark(items, px, w.name, {"seed": seed, "per_category": per_category, "split": "id"})


def generated_item(item_id: str, seed: int = 0, px: int | None = None, style: str | None = None) -> Benchmark:
    """One item of the generated benchmark of a world (None: the default one), by id
    ('{split}-{category}-{index}'), built alone at px (None: the world's size)."""
    parts = item_id.split("-")
    w = world(style)
    if len(parts) != 3 or parts[0] not in w.splits() or parts[1] not in w.categories() or not parts[2].isdigit():
        raise UnbagError(f"ctrl: bad item id {item_id!r}; expected split-category-index, e.g. ood-color-0003")
    px = size(style) if px is None else px
    return _benchmark([_item(*w.swap_item(seed, parts[0], parts[1], int(parts[2]), px))], px, w.name, {"seed": seed})


def _require(rec: dict, key: str, kind, loc: tuple) -> object:
    if key not in rec:
        raise UnbagError(f"{where(*loc, key)} is missing")
    val = rec[key]
    if not isinstance(val, kind):
        raise UnbagError(f"{where(*loc, key)} should be {getattr(kind, '__name__', kind)}, "
                         f"got {type(val).__name__}")
    return val


def load(root: str | Path) -> Benchmark:
    """Read and validate a ctrl benchmark directory written by `unbag world build`."""
    root = Path(root)
    meta_path, items_path = root / "meta.json", root / "items.jsonl"
    if not root.is_dir():
        raise UnbagError(f"{root}: benchmark directory not found")
    meta = read_json(meta_path, "missing (not a ctrl benchmark directory?)")
    versions = {w.ctrl_version: name for name, w in WORLDS.items()}
    if meta.get("format") != FORMAT or meta.get("version") not in versions:
        raise UnbagError(f"{meta_path}: field 'format'/'version' is {meta.get('format')!r}/"
                         f"{meta.get('version')!r}, expected {FORMAT!r}/"
                         + " or ".join(f"{v} ({n})" for v, n in versions.items()))
    # a folder written before worlds were recorded is of the first world (format version 1)
    style = meta.get("style", versions[VERSION])
    if style not in WORLDS or WORLDS[style].ctrl_version != meta["version"]:
        raise UnbagError(f"{where(meta_path, None, 'style')}: {style!r} with version {meta['version']} "
                         "(" + ", ".join(f"version {v} is {n}" for v, n in versions.items()) + ")")
    w = WORLDS[style]
    side = meta.get("size")
    if not isinstance(side, int):
        raise UnbagError(f"{where(meta_path, None, 'size')} should be an integer")
    if not items_path.is_file():
        raise UnbagError(f"{items_path}: missing")
    items, seen = [], set()
    for n, line in enumerate(read_text(items_path).splitlines(), start=1):
        if not line.strip():
            continue
        rec = parse_json(line, f"{items_path}:{n}", whole=False)
        loc = (items_path, n)
        if not isinstance(rec, dict):
            raise UnbagError(f"{items_path}:{n}: expected a JSON object")
        item_id = _require(rec, "id", str, loc)
        if item_id in seen:
            raise UnbagError(f"{where(*loc, 'id')}: duplicate id {item_id!r}")
        seen.add(item_id)
        split = _require(rec, "split", str, loc)
        if split not in w.splits():
            raise UnbagError(f"{where(*loc, 'split')}: unknown split {split!r} (expected {', '.join(w.splits())})")
        category = _require(rec, "category", str, loc)
        if category not in w.categories():
            raise UnbagError(f"{where(*loc, 'category')}: unknown category {category!r} "
                             f"(expected one of {', '.join(w.categories())})")
        images = _require(rec, "images", list, loc)
        captions = _require(rec, "captions", list, loc)
        for key, vals in (("images", images), ("captions", captions)):
            if len(vals) != 2 or not all(isinstance(v, str) and v for v in vals):
                raise UnbagError(f"{where(*loc, key)} should be a list of 2 non-empty strings")
        for k, rel in enumerate(images):
            if not (root / rel).is_file():
                raise UnbagError(f"{where(*loc, f'images[{k}]')}: image file not found: {root / rel}")
        masks = rec.get("masks")
        if w.masks:
            masks = _require(rec, "masks", list, loc)
            if len(masks) != 2 or not all(isinstance(v, str) and (root / v).is_file() for v in masks):
                raise UnbagError(f"{where(*loc, 'masks')} should name the 2 instance-mask files under {root}")
        items.append(Item(id=item_id, images=[str(root / p) for p in images], captions=captions,
                          group={"split": split, "category": category},
                          meta={k: rec.get(k) for k in ("segments", "objects", "held_out")}
                          | ({"masks": [str(root / m) for m in masks], "scenes": rec.get("scenes")} if masks else {}),
                          source=f"{items_path}:{n}"))
    if not items:
        raise UnbagError(f"{items_path}: no items")
    return Benchmark("ctrl", f"ctrl:{root}", items, image_size=side, grouping="split/category",
                     info={k: meta.get(k) for k in ("seed", "per_category", "size")}
                     | {"render": meta.get("render", 1), "style": style, "source": str(root)},
                     sgi=dict(w.sgi))
