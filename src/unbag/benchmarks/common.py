"""Helpers shared by the public-benchmark loaders: reading JSON with located errors, image folders."""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import UnbagError


def read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise UnbagError(f"{path}: file not found (see docs/benchmarks.md for the expected layout)") from None
    except json.JSONDecodeError as e:
        raise UnbagError(f"{path}:{e.lineno}: not valid JSON ({e.msg})") from None


def read_jsonl(path: Path) -> list[tuple[int, dict]]:
    if not path.is_file():
        raise UnbagError(f"{path}: file not found (see docs/benchmarks.md for the expected layout)")
    out = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            try:
                out.append((n, json.loads(line)))
            except json.JSONDecodeError as e:
                raise UnbagError(f"{path}:{n}: not valid JSON ({e.msg})") from None
    return out


def need(obj: dict, fields: tuple[str, ...], where: str) -> None:
    """Raise naming the first missing field."""
    if not isinstance(obj, dict):
        raise UnbagError(f"{where}: expected an object, got {type(obj).__name__}")
    for f in fields:
        if f not in obj:
            raise UnbagError(f"{where}: missing field '{f}'")


def need_text(obj: dict, fields: tuple[str, ...], where: str) -> None:
    """Raise naming the first of `fields` that is not a non-empty string (an empty caption would
    be scored, and could beat the true one)."""
    for f in fields:
        if not isinstance(obj[f], str) or not obj[f].strip():
            raise UnbagError(f"{where}: field '{f}' must be a non-empty caption, got {obj[f]!r}")


def image_dir(root: Path, *candidates: str) -> Path:
    """The first existing image folder among root/candidates (or root itself)."""
    for c in candidates:
        if (root / c).is_dir():
            return root / c
    return root


def images_at(root: Path, image_root: str | None) -> Path:
    """The image folder: IMAGE_ROOT when given (the official releases keep COCO's images apart),
    else DIR/images, DIR/val2017 or DIR."""
    if not image_root:
        return image_dir(root, "images", "val2017")
    if not Path(image_root).is_dir():
        raise UnbagError(f"{image_root}: image root not found (the IMAGE_ROOT of NAME:DIR:IMAGE_ROOT)")
    return Path(image_root)
