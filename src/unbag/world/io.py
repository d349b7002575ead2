"""The ctrl benchmark on disk: build it (deterministic bytes) and describe its format.

Two styles: `flat` (format version 1, below; today's default) and `3d` (version 2: CLEVR scenes,
swap3d.py; meta.json adds "style": "3d", objects add "xyz", "angle", "visible_px", items add
"scenes" (camera and lights) and "masks": per image a PNG of object index + 1 per pixel, in masks/).

Layout of DIR (format "unbag-ctrl", version 1; see docs/ctrl-format.md):
  meta.json     {"format", "version", "render", "seed", "size", "per_category", "categories",
                 "splits", "held_out"}
  items.jsonl   one SWAP item per line: {"id", "split", "category", "images": [2 paths relative
                to DIR], "captions": [2], "segments": [2 lists of {"text", "kind", "objects"}],
                "objects": [2 lists of {"shape", "color", "size", "material", "box"}],
                "held_out": [...]}; caption i is true of image i only
  images/       {id}_0.png, {id}_1.png (RGB, size x size)
"""
from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import numpy as np
from PIL import Image
from rich.progress import track

from ..utils import atomic_dir, up_to_date
from . import cache
from .render import RENDER_VERSION, render
from .scene import HELD_OUT
from .styles import check_render, size, world
from .swap import CATEGORIES, SPLITS, SwapItem, build_item
from .worlds import ordered_map

CLEVR3D, FLAT = world("3d"), world("flat")
FORMAT, VERSION = "unbag-ctrl", FLAT.ctrl_version


def png_bytes(arr: np.ndarray) -> bytes:
    """PNG encoding with fixed settings (no metadata), so equal pixels give equal bytes."""
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="PNG", optimize=False, compress_level=6)
    return buf.getvalue()


def item_record(item: SwapItem, px: int, image_paths: list[str]) -> dict:
    """The items.jsonl record of a SWAP item."""
    return {
        "id": item.id, "split": item.split, "category": item.category,
        "images": image_paths, "captions": item.captions, "segments": item.segments,
        "objects": [[{"shape": o.shape, "color": o.color, "size": o.size, "material": o.material,
                      "box": o.box(px)} for o in s.objects] for s in item.scenes],
        "held_out": item.held_out(),
    }


def meta_record(seed: int, px: int, per_category: int, categories: list[str]) -> dict:
    return {"format": FORMAT, "version": VERSION, "render": RENDER_VERSION, "seed": seed, "size": px,
            "per_category": per_category, "categories": categories, "splits": list(SPLITS),
            "held_out": {k: sorted(f"{a} {b}" for a, b in v) for k, v in HELD_OUT.items()}}


def generate(seed: int, per_category: int, categories: list[str] | None = None):
    """Yield SWAP items in file order: split, then category, then index."""
    for split in SPLITS:
        for cat in categories or CATEGORIES:
            for i in range(per_category):
                yield build_item(seed, split, cat, i)


def build(out: str | os.PathLike, seed: int = 0, per_category: int = 400, px: int | None = None,
          categories: list[str] | None = None, progress: bool = True, overwrite: bool = False,
          style: str | None = None, procs: int = 1, device: str | None = None) -> Path:
    """Write the benchmark to `out` atomically (a failed build leaves nothing behind) in the world
    `style` (a world/worlds/ name; None: the default world) at px (None: the world's size);
    3d renders CLEVR scenes over `procs` processes (the same bytes for any number), or on a GPU
    `device` (the same pictures up to float rounding). A folder this command wrote from the same
    recipe (world, seed, size, items, render version, device kind, torch version, world code),
    holding nothing else, is kept as it is unless `overwrite`."""
    from ..errors import UnbagError
    from ..utils import at_least
    px = size(style) if px is None else px
    if device is not None and not str(device).startswith("cpu"):
        import torch
        if not torch.cuda.is_available():
            raise UnbagError(f"--device {device}: no CUDA device here (torch {torch.__version__}); use --device cpu")
    procs = check_render(px, procs, seed)
    at_least("per_category", per_category)
    categories = list(categories or CATEGORIES)
    for c in categories:
        if c not in CATEGORIES:
            raise UnbagError(f"unknown category {c!r}; expected some of {', '.join(CATEGORIES)}")
    w = world(style)
    recipe = cache.recipe(w, seed, px, device) | {"per_category": per_category, "categories": categories}
    if not overwrite and up_to_date(out, "world build", recipe):
        if progress:
            print(f"world build: {out} is up to date (the same world, seed, size, items, render version, device, "
                  "torch and world code); nothing drawn (--overwrite draws it again)", file=sys.stderr)
        return Path(os.path.expanduser(out))
    return w.part("build")(out, seed, per_category, px, categories, progress, overwrite, procs, device, recipe)


def flat_item(job: tuple) -> tuple:
    """(item, [its two pictures], its record fields) of one flat SWAP item (worlds/__init__.py;
    drawn with PIL on the CPU whatever device the job names)."""
    seed, split, cat, index, px = job[:5]
    item = build_item(seed, split, cat, index)
    rec = item_record(item, px, [])
    return item, [render(s, px) for s in item.scenes], {k: rec[k] for k in ("segments", "objects", "held_out")}


def build_flat(out, seed: int, per_category: int, px: int, categories: list[str], progress: bool, overwrite: bool,
               procs: int = 1, device: str | None = None, recipe: dict | None = None) -> Path:
    """The flat world's `build` (format version 1; drawn here: a flat picture costs ~1 ms)."""
    total = len(SPLITS) * len(categories) * per_category
    with atomic_dir(out, "world build", overwrite, recipe=recipe) as tmp:
        (tmp / "images").mkdir()
        lines = []
        items = generate(seed, per_category, categories)
        for item in track(items, total=total, description="world build", disable=not progress):
            paths = []
            for k, scene in enumerate(item.scenes):
                rel = f"images/{item.id}_{k}.png"
                (tmp / rel).write_bytes(png_bytes(render(scene, px)))
                paths.append(rel)
            lines.append(json.dumps(item_record(item, px, paths)))
        (tmp / "items.jsonl").write_text("\n".join(lines) + "\n")
        (tmp / "meta.json").write_text(json.dumps(meta_record(seed, px, per_category, categories),
                                                  indent=2) + "\n")
    return Path(out)


# -- the 3D style (format version 2) ------------------------------------------------------------

def item3d_record(item, image_paths: list[str], mask_paths: list[str]) -> dict:
    """The items.jsonl record of a 3D SWAP item (format version 2)."""
    from .swap3d import object_records, scene_record
    return {"id": item.id, "split": item.split, "category": item.category, "images": image_paths,
            "masks": mask_paths, "captions": item.captions, "segments": item.segments,
            "objects": [object_records(s, m) for s, m in zip(item.scenes, item.instances)],
            "scenes": [scene_record(s) for s in item.scenes], "held_out": item.held_out()}


def meta3d_record(seed: int, px: int, per_category: int, categories: list[str]) -> dict:
    from .render3d import render_version
    from .swap3d import HELD_OUT as HELD_OUT3D
    return {"format": FORMAT, "version": CLEVR3D.ctrl_version, "style": CLEVR3D.name, "render": render_version(px), "seed": seed,
            "size": px,
            "per_category": per_category, "categories": categories, "splits": list(SPLITS),
            "held_out": {k: sorted(f"{a} {b}" for a, b in v) for k, v in HELD_OUT3D.items()}}


def mask_png(inst: np.ndarray) -> bytes:
    """An instance map (object index + 1, 0 for the floor) as an 8-bit greyscale PNG."""
    buf = io.BytesIO()
    Image.fromarray(inst.astype(np.uint8), mode="L").save(buf, format="PNG", optimize=False, compress_level=6)
    return buf.getvalue()


def render_item3d(job: tuple) -> tuple:
    """(item, [image PNG bytes], [mask PNG bytes]) of one 3D item (`item3d`'s job), what `build3d`
    writes."""
    item, images, _ = item3d(job)
    return item, [png_bytes(im) for im in images], [mask_png(m) for m in item.instances]


def item3d(job: tuple) -> tuple:
    """(item, [its two pictures], its record fields) of one 3D SWAP item (worlds/__init__.py;
    job: seed, split, category, index, px[, device]), built and drawn on one torch thread (a
    thread count changes how torch sums, so every build uses one per process); on a GPU device the
    pictures are the same up to float rounding."""
    import torch

    from .render3d import picture
    from .swap3d import build_item as build3d_item
    seed, split, cat, index, px = job[:5]
    device = job[5] if len(job) > 5 else None
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        item = build3d_item(seed, split, cat, index, px)
        images = [picture(s, px, device) for s in item.scenes]
    finally:
        torch.set_num_threads(before)
    rec = item3d_record(item, [], [])
    return item, images, {k: rec[k] for k in ("segments", "objects", "held_out", "scenes")}


def items3d(seed: int, per_category: int, px: int, categories: list[str], procs: int = 1, device: str | None = None):
    """Yield (item, image PNGs, mask PNGs) in file order, rendered over `procs` processes (one on a
    GPU `device`)."""
    jobs = [(seed, split, cat, i, px, device) for split in SPLITS for cat in categories for i in range(per_category)]
    yield from ordered_map(render_item3d, jobs, 1 if device and not str(device).startswith("cpu") else procs)


def build3d(out, seed: int, per_category: int, px: int, categories: list[str], progress: bool, overwrite: bool,
            procs: int = 1, device: str | None = None, recipe: dict | None = None) -> Path:
    """The 3D style of `build` (format version 2)."""
    total = len(SPLITS) * len(categories) * per_category
    with atomic_dir(out, "world build", overwrite, recipe=recipe) as tmp:
        (tmp / "images").mkdir()
        (tmp / "masks").mkdir()
        lines = []
        for item, images, masks in track(items3d(seed, per_category, px, categories, procs, device), total=total,
                                         description="world build (3d)", disable=not progress):
            paths = [f"images/{item.id}_{k}.png" for k in range(2)]
            mpaths = [f"masks/{item.id}_{k}.png" for k in range(2)]
            for rel, data in zip(paths + mpaths, images + masks):
                (tmp / rel).write_bytes(data)
            lines.append(json.dumps(item3d_record(item, paths, mpaths)))
        (tmp / "items.jsonl").write_text("\n".join(lines) + "\n")
        (tmp / "meta.json").write_text(json.dumps(meta3d_record(seed, px, per_category, categories), indent=2) + "\n")
    return Path(out)
