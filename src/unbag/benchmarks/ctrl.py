"""The built-in `ctrl` benchmark: generated in memory (`ctrl`) or read from disk (`ctrl:DIR`)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import UnbagError, where
from ..utils import parse_json, read_json, read_text
from ..world.io import FORMAT, VERSION, VERSION_3D, generate, item_record
from ..world.render import RENDER_VERSION, render
from ..world.renderers import render_version
from ..world.styles import PX_3D, PX_FLAT, resolve, size
from ..world.swap import CATEGORIES, SPLITS
from .base import Benchmark, Item, load_image

DEFAULT_PER_CATEGORY = 400


def _item(sw, px: int) -> Item:
    rec = item_record(sw, px, [])
    return Item(id=sw.id, images=[render(s, px) for s in sw.scenes], captions=sw.captions,
                group={"split": sw.split, "category": sw.category},
                meta={k: rec[k] for k in ("segments", "objects", "held_out")})


def generated(seed: int = 0, per_category: int = DEFAULT_PER_CATEGORY, px: int = PX_FLAT) -> Benchmark:
    """The ctrl benchmark rendered in memory (identical pixels to `unbag world build`)."""
    items = [_item(sw, px) for sw in generate(seed, per_category)]
    return Benchmark("ctrl", "ctrl", items, image_size=px, grouping="split/category",
                     info={"seed": seed, "per_category": per_category, "size": px, "render": RENDER_VERSION,
                           "style": "flat", "source": "generated"})


# SGI on CLEVR scenes: one box per object from the proposer learned on the training stream
# (sgi/proposer.py; 90.3% of the objects at IoU 0.5 and 1.0 box per object, where `chroma` finds
# 96.9% with 2.7 boxes each, and every extra box miscounts), masked onto each row's median, the
# empty floor, instead of one flat colour that a model trained on 3D scenes cannot read objects
# against (docs/world3d.md); a 3D count picture holds objects no phrase counts (other colours),
# so a region counts only where it fits a counted description (`counts="fit"`: count items of the
# stage-4 model, OOD 31 -> 43; on the flat world, where every object is counted, it would cost 9);
# one view per region: on two 3D models a second phase cost 1.4 and 2.2 points OOD and 12% of the time
SGI_3D = {"regions": "objects", "fill": "rows", "counts": "fit", "phases": 1}


def _item3d(sw, images: list[bytes]) -> Item:
    """The benchmark item of a 3D SWAP item and its two rendered pictures (PNG bytes, held decoded:
    every protocol reads arrays at the model's size directly, where PNG bytes were decoded and
    preprocessed again by each cell of a plan)."""
    from ..world.io import item3d_record
    rec = item3d_record(sw, [], [])
    pictures = [np.asarray(load_image(b, sw.id)) for b in images]
    return Item(id=sw.id, images=pictures, captions=sw.captions, group={"split": sw.split, "category": sw.category},
                meta={k: rec[k] for k in ("segments", "objects", "held_out", "scenes")})


def generated3d(seed: int = 0, per_category: int = DEFAULT_PER_CATEGORY, px: int = PX_3D,
                procs: int = 1, categories: list[str] | None = None) -> Benchmark:
    """The 3D ctrl benchmark rendered in memory (the pixels of `unbag world build --style 3d`; of
    some `categories` only, when given)."""
    from ..world.io import items3d
    from ..world.render3d import RENDER_VERSION as RENDER3D
    from ..world.swap3d import CATEGORIES as CATS3D

    cats = list(CATS3D) if categories is None else [c for c in CATS3D if c in categories]
    items = [_item3d(sw, images) for sw, images, _ in items3d(seed, per_category, px, cats, procs)]
    return Benchmark("ctrl", "ctrl", items, image_size=px, grouping="split/category",
                     info={"seed": seed, "per_category": per_category, "size": px, "render": RENDER3D, "style": "3d",
                           "source": "generated"}, sgi=dict(SGI_3D))


def validation(seed: int, per_category: int, px: int, style: str = "flat") -> Benchmark:
    """In-distribution SWAP items of every category of the flat or 3D world (`seed`: one the test
    and the feature caches do not use), rendered at px: the split a trainer selects checkpoints on."""
    if style == "3d":
        from ..world.io import render_item3d
        from ..world.swap3d import CATEGORIES as CATS3D
        items = [_item3d(*render_item3d((seed, "id", c, i, px))[:2]) for c in CATS3D for i in range(per_category)]
    else:
        from ..world.swap import build_item
        items = [_item(build_item(seed, "id", c, i), px) for c in CATEGORIES for i in range(per_category)]
    return Benchmark("ctrl", "ctrl", items, image_size=px, grouping="split/category",
                     info={"seed": seed, "per_category": per_category, "split": "id", "style": style,
                           "source": "generated"}, sgi=dict(SGI_3D) if style == "3d" else {})


def generated_item(item_id: str, seed: int = 0, px: int | None = None, style: str | None = None) -> Benchmark:
    """One item of the generated benchmark of a world (None: the default one), by id
    ('{split}-{category}-{index}'), built alone at px (None: the world's size)."""
    parts = item_id.split("-")
    if len(parts) != 3 or parts[0] not in SPLITS or parts[1] not in CATEGORIES or not parts[2].isdigit():
        raise UnbagError(f"ctrl: bad item id {item_id!r}; expected split-category-index, e.g. ood-color-0003")
    style = resolve(style)
    px = size(style) if px is None else px
    if style == "3d":
        from ..world.io import render_item3d
        it = _item3d(*render_item3d((seed, parts[0], parts[1], int(parts[2]), px))[:2])
    else:
        from ..world.swap import build_item
        it = _item(build_item(seed, parts[0], parts[1], int(parts[2])), px)
    return Benchmark("ctrl", "ctrl", [it], image_size=px, grouping="split/category",
                     info={"seed": seed, "size": px, "render": render_version(style), "style": style,
                           "source": "generated"}, sgi=dict(SGI_3D) if style == "3d" else {})


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
    if meta.get("format") != FORMAT or meta.get("version") not in (VERSION, VERSION_3D):
        raise UnbagError(f"{meta_path}: field 'format'/'version' is {meta.get('format')!r}/"
                         f"{meta.get('version')!r}, expected {FORMAT!r}/{VERSION} (flat) or {VERSION_3D} (3d)")
    style = meta.get("style", "flat")
    if (style == "3d") != (meta["version"] == VERSION_3D):
        raise UnbagError(f"{where(meta_path, None, 'style')}: {style!r} with version {meta['version']} "
                         f"(version {VERSION} is flat, {VERSION_3D} is 3d)")
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
        if split not in SPLITS:
            raise UnbagError(f"{where(*loc, 'split')}: unknown split {split!r} (expected {', '.join(SPLITS)})")
        category = _require(rec, "category", str, loc)
        if category not in CATEGORIES:
            raise UnbagError(f"{where(*loc, 'category')}: unknown category {category!r} "
                             f"(expected one of {', '.join(CATEGORIES)})")
        images = _require(rec, "images", list, loc)
        captions = _require(rec, "captions", list, loc)
        for key, vals in (("images", images), ("captions", captions)):
            if len(vals) != 2 or not all(isinstance(v, str) and v for v in vals):
                raise UnbagError(f"{where(*loc, key)} should be a list of 2 non-empty strings")
        for k, rel in enumerate(images):
            if not (root / rel).is_file():
                raise UnbagError(f"{where(*loc, f'images[{k}]')}: image file not found: {root / rel}")
        masks = rec.get("masks")
        if style == "3d":
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
                     sgi=dict(SGI_3D) if style == "3d" else {})
