"""The ctrl benchmark on disk: build it (deterministic bytes) and describe its format.

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
from pathlib import Path

import numpy as np
from PIL import Image
from rich.progress import track

from ..utils import atomic_dir
from .render import RENDER_VERSION, render
from .scene import HELD_OUT
from .swap import CATEGORIES, SPLITS, SwapItem, build_item

FORMAT, VERSION = "unbag-ctrl", 1


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


def build(out: str | os.PathLike, seed: int = 0, per_category: int = 400, px: int = 64,
          categories: list[str] | None = None, progress: bool = True, overwrite: bool = False) -> Path:
    """Write the benchmark to `out` atomically (a failed build leaves nothing behind)."""
    categories = list(categories or CATEGORIES)
    for c in categories:
        if c not in CATEGORIES:
            from ..errors import UnbagError
            raise UnbagError(f"unknown category {c!r}; expected some of {', '.join(CATEGORIES)}")
    total = len(SPLITS) * len(categories) * per_category
    with atomic_dir(out, "world build", overwrite) as tmp:
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
