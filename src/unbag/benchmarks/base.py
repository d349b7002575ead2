"""What a benchmark hands to scoring: items of images x captions, grouped for the metrics."""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import io
import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import torch
from PIL import Image, UnidentifiedImageError

from ..errors import UnbagError
from .items import ImageRef, Item, Items
from .shapes import winoground


def split_ref(ref: str) -> tuple[str, str]:
    """(the file an image reference reads, its fragment: 'crop=...', 'member=...', 'arrow=...' or '')."""
    path, hash_, frag = ref.rpartition("#")
    return (path, frag) if hash_ and frag.startswith(("crop=", "member=", "arrow=")) else (ref, "")


def ref_file(ref: str) -> str:
    """The file an image reference reads (its crop, archive member or Arrow cell cut off)."""
    return split_ref(ref)[0]


def two_by_two(scores: torch.Tensor, items: list[Item]) -> dict[str, torch.Tensor]:
    """Winoground's text, image and group scores of 2x2 items (the default metric)."""
    return winoground(scores)


# (score tensor [n, images, captions] of n items of one shape, those items) -> per-item values
# and 'tie/<metric>' masks (benchmarks/shapes.py)
Metric = Callable[[torch.Tensor, list[Item]], dict[str, torch.Tensor]]


@dataclass
class Benchmark:
    """A named list of items; `image_size` is the side every image must have, if fixed. Items may
    differ in shape (one image x K captions beside K images x one caption): each shape is scored
    and measured apart, and the results hold every item's own scores."""
    name: str
    spec: str
    items: Items  # a list of Items is stored as Items (flat memory)
    info: dict = field(default_factory=dict)
    image_size: int | None = None
    metric: Metric = two_by_two  # per-item values from the score tensor of items of one shape
    # per-item values from the items' text embeddings [n, captions, D] (SugarCrepe++'s text-only score)
    text_metric: Callable[[torch.Tensor, list[Item]], dict[str, torch.Tensor]] | None = None
    # the benchmark's own breakdowns beyond per-subset means (per-item values, items) -> {key: value}
    # (What'sUp's pair and set accuracy, VL-CheckList's categories)
    breakdown: Callable[[dict[str, torch.Tensor], list[Item]], dict[str, float]] | None = None
    # keys reported as weighted means of other reported keys (key -> {key: weight}), in order: a
    # later one may average earlier ones (VL-CheckList's categories and aspects); intervals follow
    composed: dict[str, dict[str, float]] = field(default_factory=dict)
    macro: list[str] | None = None  # subsets in the macro average (None: all of them)
    # the meta key of items scored together (What'sUp's object pair): intervals resample them as one
    cluster: str | None = None
    # how results are bucketed: by the items' `subset` (micro, macro and per subset, plus any other
    # group key) or, "split/category", per split x category with 'all' levels (ctrl)
    grouping: str = "subset"
    sgi: dict = field(default_factory=dict)  # SGI options its images call for, over its kind's (3D ctrl: objects)
    pictures: str = ""  # what its images are where no registered kind says (a user's own: "photos")

    def __post_init__(self) -> None:
        if not isinstance(self.items, Items):
            self.items = Items(self.items)

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
        chosen = [n for n, it in enumerate(self.items) if it.id == item_id]
        if not chosen:
            raise UnbagError(f"{self.spec}: no item with id {item_id!r}"
                             + (f" (ids look like {self.items[0].id!r})" if self.items else ""))
        return dataclasses.replace(self, items=self.items.take(chosen))

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
    path, frag = split_ref(ref)
    return str(Path(path)) + (f"#{frag}" if frag else "")


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


def zip_ref(archive: str | Path, member: str) -> str:
    """A reference to a member of a zip archive, read in place (ColorSwap's images.zip)."""
    return f"{archive}#member={member}"


def arrow_ref(path: str | Path, row: int, column: str) -> str:
    """A reference to an image cell ({bytes, path}) of an Arrow IPC stream file (a Hugging Face
    `save_to_disk` shard), read through a memory map so that no image is held before it is used."""
    return f"{path}#arrow={row},{column}"


@functools.lru_cache(maxsize=8)
def _zip(path: str, pid: int) -> zipfile.ZipFile:
    return zipfile.ZipFile(path)  # one handle per process: loader workers must not share its offset


@functools.lru_cache(maxsize=8)
def _arrow(path: str):
    import pyarrow as pa
    return pa.ipc.open_stream(pa.memory_map(path)).read_all()  # zero-copy over the map


def _source(path: str, frag: str):
    """What PIL opens for a reference: the file, or the bytes of a zip member or an Arrow cell."""
    if frag.startswith("member="):
        return io.BytesIO(_zip(path, os.getpid()).read(frag[7:]))
    if frag.startswith("arrow="):
        row, col = frag[6:].split(",", 1)
        cell = _arrow(path).column(col)[int(row)].as_py()
        data = cell.get("bytes") if isinstance(cell, dict) else cell
        if not data:
            raise FileNotFoundError(path)
        return io.BytesIO(data)
    return path


def _frame(path: str) -> np.ndarray:
    """A uint8 [H, W, 3] array from a .npy file, its header checked before any pixel is read (a
    header may claim gigapixels: refused as PIL refuses a decompression bomb)."""
    with open(path, "rb") as f:
        version = np.lib.format.read_magic(f)
        read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, _, dtype = read(f)
    if len(shape) != 3 or shape[2] != 3 or dtype != np.uint8:
        raise ValueError(f"expected a uint8 array [H, W, 3], got {dtype} {shape}")
    if shape[0] * shape[1] > (Image.MAX_IMAGE_PIXELS or float("inf")):
        raise Image.DecompressionBombError(f"its header claims {shape[0]}x{shape[1]} pixels")
    return np.load(path, allow_pickle=False)


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
        path, frag = split_ref(ref)
        try:
            if path.endswith(".npy"):  # EqBen's YouCook2 frames: arrays in BGR order
                a = _frame(path)
                img = Image.fromarray(np.ascontiguousarray(a[:, :, ::-1]), "RGB")
            else:
                with Image.open(_source(path, frag)) as f:
                    img = to_rgb(f)
            if frag.startswith("crop="):
                x, y, w, h = (float(v) for v in frag[5:].split(","))
                img = img.crop((x, y, x + w, y + h))  # rounded; outside the picture is black
        except (FileNotFoundError, KeyError):
            raise UnbagError(f"{where}: image file not found: {ref}") from None
        except Image.DecompressionBombError as e:
            raise UnbagError(f"{where}: image {path} is too large to decode safely ({e})") from None
        except (UnidentifiedImageError, OSError, SyntaxError, ValueError, zipfile.BadZipFile) as e:
            raise UnbagError(f"{where}: cannot read image {ref}: {e}") from None
    if expect_side is not None and img.size != (expect_side, expect_side):
        raise UnbagError(f"{where}: image {ref if isinstance(ref, str) else '(in memory)'} is "
                         f"{img.size[0]}x{img.size[1]}, the benchmark says {expect_side}x{expect_side}")
    return img
