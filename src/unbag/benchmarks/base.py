"""What a benchmark hands to scoring: items of images x captions, grouped for the metrics."""
from __future__ import annotations

import dataclasses
import hashlib
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Union

import numpy as np
from PIL import Image, UnidentifiedImageError

from ..errors import UnbagError

# a file path (optionally "PATH#crop=x,y,w,h"), pixels [H, W, 3] uint8, or encoded image bytes
ImageRef = Union[str, np.ndarray, bytes]


@dataclass
class Item:
    """One test item: images x captions; caption i belongs to image i (for 2x2 items)."""
    id: str
    images: list[ImageRef]
    captions: list[str]
    group: dict[str, str]  # e.g. {"split": "ood", "category": "color"}
    meta: dict = field(default_factory=dict)  # segments, objects, held-out combos...
    source: str | None = None  # "file:line" the item came from, for error messages


@dataclass
class Benchmark:
    """A named list of items; `image_size` is the side every image must have, if fixed."""
    name: str
    spec: str
    items: list[Item]
    info: dict = field(default_factory=dict)
    image_size: int | None = None
    metric: str = "winoground"  # winoground (2x2) | pairwise (first caption beats the rest) | itt
    macro: list[str] | None = None  # subsets in the macro average (None: all of them)
    # how results are bucketed: by the items' `subset` (micro, macro and per subset, plus any other
    # group key) or, "split/category", per split x category with 'all' levels (ctrl)
    grouping: str = "subset"
    sgi: dict = field(default_factory=dict)  # SGI options its images call for, over its kind's (3D ctrl: objects)

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self):
        return iter(self.items)

    def __getitem__(self, key: int | str) -> Item:
        """An item by position or by id."""
        if isinstance(key, str):
            for it in self.items:
                if it.id == key:
                    return it
            raise KeyError(f"{self.spec}: no item with id {key!r}")
        return self.items[key]

    def only(self, item_id: str) -> "Benchmark":
        """This benchmark restricted to the item with id `item_id`."""
        chosen = [it for it in self.items if it.id == item_id]
        if not chosen:
            raise UnbagError(f"{self.spec}: no item with id {item_id!r}"
                             + (f" (ids look like {self.items[0].id!r})" if self.items else ""))
        return dataclasses.replace(self, items=chosen)

    def flat(self) -> tuple[list[ImageRef], list[str], list[str]]:
        """Every image reference, where each comes from (for error messages), and every caption,
        item after item: the rows and columns of the score tensor, flattened."""
        refs = [r for it in self.items for r in it.images]
        wheres = [f"{it.source or it.id}: field 'images[{k}]'" for it in self.items for k in range(len(it.images))]
        return refs, wheres, [c for it in self.items for c in it.captions]


def image_key(ref: ImageRef) -> str:
    """Identity of an image for deduplication: its path, or a hash of its pixels."""
    if isinstance(ref, np.ndarray):
        return "sha1:" + hashlib.sha1(np.ascontiguousarray(ref).tobytes()).hexdigest()
    if isinstance(ref, bytes):
        return "sha1:" + hashlib.sha1(ref).hexdigest()
    path, _, crop = ref.partition("#")
    return str(Path(path)) + (f"#{crop}" if crop else "")


def crop_ref(path: str | Path, x: float, y: float, w: float, h: float) -> str:
    """A reference to a box of an image file (ARO's bbox crops)."""
    return f"{path}#crop={x},{y},{w},{h}"


def to_rgb(img: Image.Image) -> Image.Image:
    """An image as 8-bit RGB. PIL's convert("RGB") clips 16-bit and 32-bit greyscale to 255 (a
    16-bit PNG turns nearly white); those are scaled to 8 bits instead: 16-bit by 65535, float
    images in [0, 1] by 1."""
    if img.mode in ("I;16", "I;16L", "I;16B", "I;16N", "I", "F"):
        a = np.asarray(img, dtype=np.float64)
        if img.mode == "F":
            top = 1.0 if a.size and np.nanmax(a) <= 1.0 else 255.0
        else:
            top = 65535.0 if img.mode.startswith("I;16") or (a.size and a.max() > 255) else 255.0
        a = np.clip(np.nan_to_num(a) / top * 255.0 + 0.5, 0, 255).astype(np.uint8)
        img = Image.fromarray(a, mode="L")
    return img.convert("RGB")


def load_image(ref: ImageRef, where: str, expect_side: int | None = None) -> Image.Image:
    """Open an image reference as RGB, with an error that says which item and field is at fault;
    a picture over PIL's pixel limit (a decompression bomb: a small file that decodes to gigabytes)
    is refused before it is decoded."""
    if isinstance(ref, np.ndarray):
        img = Image.fromarray(ref)
    elif isinstance(ref, bytes):
        try:
            with Image.open(io.BytesIO(ref)) as f:
                img = to_rgb(f)
        except Image.DecompressionBombError as e:
            raise UnbagError(f"{where}: the embedded image is too large to decode safely ({e})") from None
        except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as e:
            raise UnbagError(f"{where}: cannot decode the embedded image: {e}") from None
    else:
        path, _, crop = ref.partition("#crop=")
        try:
            with Image.open(path) as f:
                img = to_rgb(f)
            if crop:
                x, y, w, h = (float(v) for v in crop.split(","))
                img = img.crop((x, y, x + w, y + h))
        except FileNotFoundError:
            raise UnbagError(f"{where}: image file not found: {ref}") from None
        except Image.DecompressionBombError as e:
            raise UnbagError(f"{where}: image {path} is too large to decode safely ({e})") from None
        except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as e:
            raise UnbagError(f"{where}: cannot read image {ref}: {e}") from None
    if expect_side is not None and img.size != (expect_side, expect_side):
        raise UnbagError(f"{where}: image {ref if isinstance(ref, str) else '(in memory)'} is "
                         f"{img.size[0]}x{img.size[1]}, the benchmark says {expect_side}x{expect_side}")
    return img
