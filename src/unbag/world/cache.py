"""Drawn SWAP items kept on disk, so a generated benchmark is drawn once per machine, not per run.

A world whose pictures cost more to draw than to read (`World.cached`: the 3D world, ~35 ms a
224 px picture on one core) keeps each item it draws for a generated ctrl under

    CACHE/ctrl/WORLD/SIZEpx-rRENDER-seedSEED-DEVICE-torchVERSION-CODE/ITEM_ID.npz

CACHE is $UNBAG_CACHE (`off`: keep nothing), else $XDG_CACHE_HOME/unbag, else ~/.cache/unbag.
An item is read back only when everything that drew it is the same: the world, the seed, the
picture side, the render version at that side, the device kind (a GPU's pixels differ from the
CPU's by rounding), torch's version (another may round differently) and CODE, a hash of the
world package's source (a change to how scenes are placed or captioned that forgot to bump a
version draws again). The item count is not part of
the key: items are drawn one by one from (seed, split, category, index), so 400 items a
category reuse the first 100's files. Each file is written whole (a temporary file renamed), so
a run stopped half-way leaves only whole items; one that cannot be read, or whose pictures do not
hash to what it recorded when drawn, is drawn again (with a warning). A cache
that cannot be written (a read-only home, a full disk) is warned about once and the items are
drawn as if it were off.
"""
from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import zipfile
from pathlib import Path
from typing import Iterator, NamedTuple

import numpy as np
from rich.progress import track

from ..errors import warn
from ..utils import atomic_write
from .worlds import World, item_id


class Drawn(NamedTuple):
    """What a generated benchmark reads of a drawn SWAP item besides its pictures and fields."""
    id: str
    split: str
    category: str
    captions: list


def root() -> Path | None:
    """The cache's folder ($UNBAG_CACHE, $XDG_CACHE_HOME/unbag or ~/.cache/unbag); None when
    UNBAG_CACHE is `off`."""
    env = os.environ.get("UNBAG_CACHE")
    if env is not None and env.strip().lower() in ("off", "0", "no", "false", ""):
        return None
    if env:
        return Path(os.path.expanduser(env))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "unbag"


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """A short hash of the world package's Python source (every module under unbag/world)."""
    here = Path(__file__).parent
    h = hashlib.sha256()
    for f in sorted(here.rglob("*.py")):
        h.update(f.relative_to(here).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def recipe(w: World, seed: int, px: int, device: str | None = None) -> dict:
    """Everything that decides a drawn item's bytes besides its id (torch's version too: another
    may round the renderer's last bits otherwise)."""
    import torch
    kind = "cpu" if device is None else str(device).split(":")[0]
    return {"world": w.name, "seed": seed, "size": px, "render": w.render_version(px), "device": kind,
            "code": code_version(), "torch": torch.__version__}


def folder(w: World, seed: int, px: int, device: str | None = None) -> Path | None:
    """Where the items of this recipe are kept; None when the cache is off or the world draws
    faster than it would read."""
    base = root()
    if base is None or not w.cached:
        return None
    r = recipe(w, seed, px, device)
    torch_version = r["torch"].replace("+", "_")
    return base / "ctrl" / w.name / f"{px}px-r{r['render']}-seed{seed}-{r['device']}-torch{torch_version}-{r['code']}"


def _digest(images: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(images).tobytes()).hexdigest()


def _save(path: Path, drawn: Drawn, images: list[np.ndarray], fields: dict) -> None:
    stacked = np.stack(images)
    record = json.dumps({"item": drawn._asdict(), "fields": fields, "sha256": _digest(stacked)})
    buf = io.BytesIO()
    np.savez_compressed(buf, images=stacked, record=np.array(record))
    atomic_write(path, buf.getvalue())


def _load(path: Path, item_id: str, px: int) -> tuple[Drawn, list[np.ndarray], dict] | None:
    """A kept item, or None where its file is missing, unreadable (cut short, overwritten), not this
    item's, or its pictures are not the ones it recorded (their hash, taken when drawn)."""
    try:
        with np.load(path, allow_pickle=False) as z:
            images, record = z["images"], json.loads(str(z["record"]))
        drawn = Drawn(**record["item"])
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile, json.JSONDecodeError):
        return None
    if drawn.id != item_id or images.shape != (2, px, px, 3) or images.dtype != np.uint8 \
            or record.get("sha256") != _digest(images):
        return None
    return drawn, list(images), record["fields"]


def _fresh(got: tuple) -> tuple[Drawn, list[np.ndarray], dict]:
    """A just-drawn item in the form a kept one is read back in (its fields through JSON)."""
    item, images, fields = got
    return (Drawn(item.id, item.split, item.category, list(item.captions)), [np.asarray(im) for im in images],
            json.loads(json.dumps(fields)))


def swap_items(w: World, seed: int, per_category: int, px: int, categories: list[str] | None = None,
               procs: int = 1, split: str | None = None, device: str | None = None,
               progress: bool = False) -> Iterator[tuple]:
    """`World.swap_items` through the cache: (Drawn, [2 pictures], fields) of every item in file
    order, the kept ones read and only the others drawn (over `procs` processes, under a progress
    bar when `progress`) and kept."""
    jobs = w.swap_jobs(seed, per_category, px, categories, split, device)
    where = folder(w, seed, px, device)
    if where is None:
        yield from track(map(_fresh, w.draw(jobs, procs)), total=len(jobs), description=f"drawing ctrl at {px} px",
                         disable=not progress)
        return
    path = {job: where / f"{item_id(*job[1:4])}.npz" for job in jobs}
    kept = {job for job in jobs if path[job].is_file()}
    drawing = w.draw([j for j in jobs if j not in kept], procs)
    bar = f"drawing ctrl at {px} px ({len(kept)} of {len(jobs)} kept in {where.parent.parent.parent})"
    writable, bad = True, 0
    for job in track(jobs, description=bar, disable=not progress or len(kept) == len(jobs)):
        got = _load(path[job], item_id(*job[1:4]), px) if job in kept else None
        if got is None and job in kept:
            bad += 1
            if bad == 1:
                warn(f"{path[job]}: a kept ctrl item that cannot be read or whose pictures changed since they were "
                     "drawn; drawing it (and any other such) again")
        if got is None:  # not kept, or kept but unreadable: drawn (here, for the rare unreadable one)
            got = _fresh(next(drawing) if job not in kept else w.part("item")(job))
            if writable:
                try:
                    _save(path[job], *got)
                except OSError as e:
                    writable = False
                    warn(f"{where}: cannot keep drawn ctrl items there ({e.strerror or e}); drawing them without "
                         "keeping them (set UNBAG_CACHE to a writable folder, or to off)")
        yield got
